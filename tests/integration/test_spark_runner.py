"""The mine job on Spark 3.5 through Beam's Spark job server, both assembled by ``engines`` from
what Maven Central and PyPI serve (``make engines``): a standalone master with two one-core
workers on 127.0.0.1. Every output file equals the FnApiRunner's with LOOPBACK workers (the
launcher runs the SDK harness) and with process workers that boot from the staged wheel
(worker/boot.py); the counters Spark reports (attempted ones only) equal stats.json; a worker
killed mid-job and a launcher killed mid-job change nothing. The job runs as `make corpus` runs it
by default: spaced LID with the shipped thresholds (neighbours model, CLD3), mixed pages split."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from apache_beam.metrics.metric import MetricsFilter

from ccnet_pipeline.cli import main
from ccnet_pipeline.config import MineConfig
from ccnet_pipeline.pipeline import committed_segments, execute, job_counters, list_segments
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from engines.engine import Engine, EngineConfig, process_environment, worker_command
from engines.spark import alive_workers, master_state, spark_home, start_worker
from filters.dedup import DedupConfig
from lid.model import LidConfig, read_thresholds
from tests.support.runners import ROOT, contents, staging, worker_python
from toolkit.languages import parse_languages

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="Java is absent: Spark runs on a JVM")

LANGS = "en,de,fr,es,ru"
THRESHOLDS = ROOT / "lid" / "thresholds" / "lid.176.csv"
# make corpus's default LID: spaced, the shipped thresholds (neighbours model, CLD3), mixed pages split
LID_FLAGS = ["--lid-mode", "spaced", "--lang-thresholds", str(THRESHOLDS), "--mixed-pages", "split"]
ASSEMBLED = ROOT / "out" / "engines"  # what `make engines` fetched and unpacked


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    engine = Engine(EngineConfig("spark"), root=tmp_path_factory.mktemp("engines"), assembled=ASSEMBLED)
    try:
        engine.up()
        yield engine
    finally:
        engine.down()


@pytest.fixture(scope="module")
def wet(tmp_path_factory):
    """Eight segments, so that some commit while others are still read."""
    folder = tmp_path_factory.mktemp("wet")
    generate_sample(str(folder), SampleConfig(segments=8, docs_per_segment=300, sites=60, seed=9))
    return folder


def config(wet: Path, output: Path, lm_dir: Path) -> MineConfig:
    return MineConfig(
        input=(str(wet / "*.warc.wet.gz"),),
        output=str(output),
        lid=LidConfig(
            languages=parse_languages(LANGS), mode="spaced", thresholds=read_thresholds(str(THRESHOLDS)), mixed="split"
        ),
        dedup=DedupConfig(),
        lm_dir=str(lm_dir),
        keep_dropped=True,
    )


@pytest.fixture(scope="module")
def reference(wet, lm_dir, tmp_path_factory):
    """The FnApiRunner's output of the same job: its files and stats."""
    output = tmp_path_factory.mktemp("reference") / "corpus"
    job = config(wet, output, lm_dir)
    execute(job, list_segments(job.input), [])
    return contents(output), json.loads((output / "stats.json").read_text())


def loopback(engine: Engine):
    return [*without_environment(engine.beam_args()), "--environment_type=LOOPBACK"]


def without_environment(beam_args):
    """The flags but those that say where the SDK workers run."""
    return [arg for arg in beam_args if not arg.startswith(("--environment_type=", "--environment_config="))]


def test_loopback_workers_give_the_fnapirunner_output_and_spark_counts_as_stats_json(
    spark, wet, lm_dir, reference, tmp_path
):
    job = config(wet, tmp_path / "corpus", lm_dir)
    result = execute(job, list_segments(job.input), loopback(spark))
    files, stats = reference
    assert contents(tmp_path / "corpus") == files
    assert stats["mixed_pages"]["split"] > 0 and stats["dropped"]["not_selected"] > 0  # make corpus's LID ran
    assert len([name for name in files if name.endswith(".parquet")]) >= 15
    # Spark commits no metric: the counters read back are the attempted ones, equal to stats.json
    metrics = result.metrics().query(MetricsFilter().with_namespace("ccnet"))["counters"]
    assert metrics and all(metric.committed is None for metric in metrics)
    assert job_counters(result) == stats["counters"]
    # the executors found Beam's jars on their classpath: the job staged none (engines/StagedJars.java)
    executors = list(spark.root.glob("spark-work/*/app-*/*"))
    assert executors and not [jar for executor in executors for jar in executor.glob("*.jar")]


def test_process_workers_booting_from_the_staged_wheel_give_the_fnapirunner_output(
    spark, wet, lm_dir, reference, tmp_path
):
    """Each executor starts its SDK workers (Beam's PROCESS environment) through worker/boot.py
    in a Python without the project, which installs the wheel the job stages."""
    python = worker_python(tmp_path / "worker-env")
    (tmp_path / "tmp").mkdir()  # the workers' staged files and install marks
    command = worker_command(tmp_path / "boot", str(python), {"PIP_NO_INDEX": "1", "TMPDIR": str(tmp_path / "tmp")})
    endpoint = without_environment(spark.beam_args())
    argv = ["mine", "--input", str(wet / "*.warc.wet.gz"), "--output", str(tmp_path / "corpus")]
    argv += ["--langs", LANGS, *LID_FLAGS, "--lm-dir", str(lm_dir), "--keep-dropped", *endpoint]
    argv += process_environment(command)
    assert main([*argv, *staging("extra_package", tmp_path)]) == 0
    assert contents(tmp_path / "corpus") == reference[0]
    installed = tmp_path.glob("worker-env/lib/python*/site-packages/ccnet_pipeline/steps/dedup.py")
    assert next(installed).read_bytes() == (ROOT / "ccnet_pipeline" / "steps" / "dedup.py").read_bytes()


def test_a_launcher_killed_mid_job_resumes_from_the_committed_segments(spark, wet, lm_dir, reference, tmp_path):
    output = tmp_path / "corpus"
    job = config(wet, output, lm_dir)
    command = [sys.executable, "-m", "ccnet_pipeline", "mine", "--input", job.input[0], "--output", str(output)]
    command += ["--langs", LANGS, *LID_FLAGS, "--lm-dir", str(lm_dir), "--keep-dropped", *loopback(spark)]
    with open(tmp_path / "launcher.log", "wb") as log:
        launcher = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True, cwd=ROOT)
    try:
        wait_for(lambda: list(output.glob("_work/segments/*.json")), launcher, "a committed segment", poll=0.02)
    finally:
        os.killpg(launcher.pid, signal.SIGKILL)  # the launcher and its LOOPBACK SDK workers
        launcher.wait()
    segments = list_segments(job.input)
    committed = committed_segments(job.layout, segments)
    assert committed and not (output / "stats.json").exists()  # killed mid-job
    # Spark runs one job at a time; the job service keeps listing the killed job as RUNNING
    ui = spark.services.get("spark-master").ports["ui"]
    wait_for(lambda: not master_state(ui)["activeapps"], None, "the killed job's end")

    result = execute(job, segments, loopback(spark))  # the same command, again
    assert contents(output) == reference[0]
    # this run read only the segments the killed one had not committed
    assert job_counters(result)["read/segments"] == len(segments) - len(committed)
    assert json.loads((output / "stats.json").read_text()) == reference[1]


def test_a_worker_killed_mid_job_changes_nothing(spark, wet, lm_dir, reference, tmp_path):
    output = tmp_path / "corpus"
    job = config(wet, output, lm_dir)
    worker = spark.services.get("spark-worker-1")
    killed = []

    def kill_when_reading():
        deadline = time.monotonic() + 300
        while not list(output.glob("_work/progress/*.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(worker.pid, signal.SIGKILL)  # the worker JVM; its executor follows it
        killed.append(time.monotonic())

    killer = threading.Thread(target=kill_when_reading)
    killer.start()
    try:
        execute(job, list_segments(job.input), spark.beam_args())
    finally:
        killer.join()
        restart_worker(spark, 1)  # a cluster of two workers again for whatever runs next
    assert killed
    assert contents(output) == reference[0]
    assert json.loads((output / "stats.json").read_text()) == reference[1]  # nothing counted twice


def restart_worker(spark: Engine, number: int) -> None:
    services, ports = spark.services, spark.services.get("spark-master").ports
    services.stop(f"spark-worker-{number}")
    worker = start_worker(services, spark_home(ASSEMBLED), f"spark://127.0.0.1:{ports['master']}", number)
    ui = ports["ui"]
    services.wait_until(worker, lambda: len(alive_workers(ui)) == spark.config.workers, "the worker's registration")


def wait_for(condition, process, what: str, seconds: float = 300, poll: float = 0.2) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert process is None or process.poll() is None, f"exited before {what}"
        assert time.monotonic() < deadline, f"no {what} after {seconds} s"
        time.sleep(poll)


def test_spark_engine_leaves_no_process_behind(tmp_path):
    """Up, then down: every process it started is gone, with those its services started (a
    worker's executors, their SDK workers: they share its process group)."""
    engine = Engine(EngineConfig("spark", master="local[2]"), root=tmp_path, assembled=ASSEMBLED)
    state = engine.up()
    try:
        assert state.services == ("spark-job-server",)
        groups = {engine.services.get(name).pid for name in state.services}
        assert members(groups)
    finally:
        engine.down()
    assert members(groups) == []
    assert engine.state() is None and engine.services.names() == []


def members(groups):
    """The processes in the process groups ``groups``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in groups and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found
