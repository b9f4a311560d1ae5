"""The mine job through Beam's portable runner, the path Flink, Spark and Dataflow Runner v2 take:
a job service, the pipeline as a proto, staged artifacts, and SDK harness workers in processes of
their own, booted by ``worker/boot.py`` from an EXTERNAL worker pool in another folder. The
workers' Python has Beam and the dependencies but not the project, which they install from what
the job stages (``--setup_file`` with ``--requirements_file``, or ``--extra_package`` with the
wheel of ``make worker-package``). The output equals the in-process FnApiRunner's."""

import json
import os
import sys

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from engines.services import Services, free_port
from tests.support.runners import ROOT, booting_worker_pool, contents, installed_copy, pool_log, staging

LANGS = "en,de,fr,es,ru"


@pytest.fixture
def services(tmp_path_factory):
    """Beam's Python job service and a worker pool of separate processes booted by
    worker/boot.py, on 127.0.0.1."""
    folder = tmp_path_factory.mktemp("services")
    job_service, port = Services(folder), free_port()
    command = [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", "--port", str(port)]
    service = job_service.start("job-service", command, cwd=folder)
    try:
        job_service.wait_for_port(service, port, seconds=60)
        with booting_worker_pool(folder) as pool:
            yield (
                folder,
                [f"--job_endpoint=127.0.0.1:{port}", "--environment_type=EXTERNAL", f"--environment_config={pool}"],
            )
    finally:
        job_service.stop("job-service")


@pytest.mark.parametrize("kind", ["setup_file", "extra_package"])
def test_portable_runner_with_staged_workers_gives_the_fnapirunner_output(
    kind, services, lm_dir, tmp_path, monkeypatch
):
    folder, endpoints = services
    generate_sample(str(tmp_path / "wet"), SampleConfig(segments=3, docs_per_segment=150, sites=30, seed=9))
    monkeypatch.chdir(tmp_path)  # relative paths on the command line, as a user types them
    lm = os.path.relpath(lm_dir, tmp_path)
    base = ["mine", "--input", "wet/*.warc.wet.gz", "--langs", LANGS, "--lm-dir", lm, "--keep-dropped"]
    small = ["--target-shard-size", "20KB"]  # several files per language and bucket
    assert main([*base, *small, "--output", "local"]) == 0
    staged = staging(kind, tmp_path)
    assert main([*base, *small, "--output", "portable", "--runner=PortableRunner", *endpoints, *staged]) == 0
    local, portable = contents(tmp_path / "local"), contents(tmp_path / "portable")
    assert portable == local
    assert len([name for name in local if name.endswith(".parquet")]) >= 30 and "stats.json" in local
    assert "en/head/part-00001.parquet" in local
    manifest = json.loads((tmp_path / "portable" / "manifest.json").read_text())
    assert manifest["pipeline_options"]["runner"] == "PortableRunner"
    # the workers ran the project that the job staged, installed into their own environment
    assert installed_copy(folder) == (ROOT / "ccnet_pipeline" / "steps" / "dedup.py").read_bytes()
    log = pool_log(folder)
    assert "boot: " in log and ("workflow.tar.gz" if kind == "setup_file" else ".whl") in log


def test_near_dedup_on_the_portable_runner_gives_the_fnapirunner_output(services, tmp_path, monkeypatch):
    from ccnet_pipeline.samples.near_duplicates import LANGUAGES, generate, write_wet

    folder, endpoints = services
    write_wet(tmp_path / "wet", generate(seed=0, groups_per_kind=1))
    monkeypatch.chdir(tmp_path)
    base = ["mine", "--input", "wet/*.warc.wet.gz", "--langs", ",".join(LANGUAGES), "--keep-dropped"]
    base += ["--near-dedup", "minhash", "--minhash-verify"]
    assert main([*base, "--output", "local"]) == 0
    staged = staging("extra_package", tmp_path)
    assert main([*base, "--output", "portable", "--runner=PortableRunner", *endpoints, *staged]) == 0
    local = contents(tmp_path / "local")
    assert contents(tmp_path / "portable") == local
    assert any(name.startswith("quarantine/dropped/near_duplicate/") for name in local)
