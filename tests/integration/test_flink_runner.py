"""The mine job on Flink 1.19 through Beam's Flink job server, assembled by ``engines`` from what
Maven Central serves (``make engines``): an embedded Flink (``[local]``) with parallelism 2, and
a standalone cluster of a JobManager and two one-slot TaskManagers started from the same jars
(Maven Central has no flink-dist). SDK workers are processes of a Beam worker pool. Every output
file equals the FnApiRunner's; the committed counters equal stats.json. The job runs with `make
corpus`'s default LID: spaced, the shipped thresholds (neighbours model, CLD3), mixed pages split."""

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from apache_beam.metrics.metric import MetricsFilter

from ccnet_pipeline.config import MineConfig
from ccnet_pipeline.pipeline import execute, job_counters, list_segments
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from engines.engine import Engine, EngineConfig
from filters.dedup import DedupConfig
from lid.model import LidConfig, read_thresholds
from tests.support.runners import ROOT, contents
from toolkit.languages import parse_languages

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="Java is absent: Flink runs on a JVM")

ASSEMBLED = ROOT / "out" / "engines"  # what `make engines` fetched


@pytest.fixture(scope="module")
def job(lm_dir, tmp_path_factory):
    """The job on a generated sample, and the FnApiRunner's output of it."""
    wet = tmp_path_factory.mktemp("wet")
    generate_sample(str(wet), SampleConfig(segments=4, docs_per_segment=300, sites=60, seed=5))
    job = MineConfig(
        input=(str(wet / "*.warc.wet.gz"),),
        output=str(tmp_path_factory.mktemp("reference") / "corpus"),
        lid=LidConfig(  # make corpus's default LID: spaced, the shipped thresholds, mixed pages split
            languages=parse_languages("en,de,fr,es,ru"),
            mode="spaced",
            thresholds=read_thresholds(str(ROOT / "lid" / "thresholds" / "lid.176.csv")),
            mixed="split",
        ),
        dedup=DedupConfig(),
        lm_dir=str(lm_dir),
        keep_dropped=True,
    )
    execute(job, list_segments(job.input), [])
    return job


@pytest.mark.parametrize("master", ["[local]", ""], ids=["embedded", "standalone-cluster"])
def test_flink_gives_the_fnapirunner_output_and_commits_the_counters(master, job, tmp_path):
    engine = Engine(EngineConfig("flink", master=master), root=tmp_path / "engines", assembled=ASSEMBLED)
    try:
        state = engine.up()
        assert ("flink-taskmanager-2" in state.services) == (master == "")
        args = engine.beam_args()
        assert "--parallelism=2" in args
        output = tmp_path / "corpus"
        result = execute(replace(job, output=str(output)), list_segments(job.input), args)
        counters = job_counters(result)  # read from the job service: while it runs
        metrics = result.metrics().query(MetricsFilter().with_namespace("ccnet"))["counters"]
    finally:
        engine.down()
    reference = Path(job.output)
    assert contents(output) == contents(reference)
    stats = json.loads((output / "stats.json").read_text())
    assert stats["mixed_pages"]["split"] > 0 and stats["dropped"]["not_selected"] > 0  # make corpus's LID ran
    assert stats == json.loads((reference / "stats.json").read_text())
    assert counters == stats["counters"]
    assert metrics and all(metric.committed == metric.attempted for metric in metrics)  # Flink commits them


def test_make_corpus_runner_flink_runs_the_job_there(job, tmp_path):
    """The one entry: `make corpus RUNNER=flink FLINK_MASTER=...` starts the engine and points
    the job at it; `make engines-down` stops it."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()  # newer than pyproject.toml: make installs nothing
    make = ["make", "--no-print-directory", "-C", str(ROOT), f"VENV={venv}", f"PY={sys.executable}"]
    make += [f"ENGINES_ROOT={tmp_path / 'engines'}"]
    args = [f"INPUT={job.input[0]}", f"OUT={tmp_path / 'corpus'}", "LANGS=en,de,fr,es,ru", f"LM_DIR={job.lm_dir}"]
    try:
        done = subprocess.run(
            [*make, "corpus", "RUNNER=flink", "FLINK_MASTER=[local]", *args], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "flink started (python -m engines down flink stops it)" in done.stderr
    finally:
        stopped = subprocess.run([*make, "engines-down"], capture_output=True, text=True)
    assert "flink: stopped flink-job-server\n" in stopped.stdout
    manifest = json.loads((tmp_path / "corpus" / "manifest.json").read_text())
    assert manifest["pipeline_options"]["runner"] == "PortableRunner"
    assert manifest["pipeline_options"]["parallelism"] == 2
    read = lambda output: json.loads((output / "stats.json").read_text())["documents_read"]
    assert (
        read(tmp_path / "corpus") == read(Path(job.output)) == 1224
    )  # 4 x (300 + 6 feed copies); the Makefile's LID settings differ
