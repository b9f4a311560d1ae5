"""The mine job through Beam's portable runner, the path Flink, Spark and Dataflow Runner v2 take:
a job service, the pipeline as a proto, and SDK harness workers in processes of their own, started
by an EXTERNAL worker pool in another folder. The output equals the in-process FnApiRunner's."""

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.sample import SampleConfig, generate_sample

LANGS = "en,de,fr,es,ru"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        assert process.poll() is None, f"{process.args} exited with {process.returncode}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on port {port}")


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    """Beam's Python job service and a worker pool of separate processes, on 127.0.0.1, both
    started in a folder of their own (so a path relative to the launcher's folder would break)."""
    folder = tmp_path_factory.mktemp("services")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }  # the pool runs `python`
    job_port, pool_port = free_port(), free_port()
    commands = [
        [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", "--port", str(job_port)],
        [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", "--service_port", str(pool_port)],
    ]
    processes = []
    try:
        for command in commands:
            log = open(folder / f"{len(processes)}.log", "wb")
            processes.append(
                subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=log, start_new_session=True)
            )
        for process, port in zip(processes, (job_port, pool_port)):
            wait_for_port(port, process)
        yield [
            f"--job_endpoint=127.0.0.1:{job_port}",
            "--environment_type=EXTERNAL",
            f"--environment_config=127.0.0.1:{pool_port}",
        ]
    finally:
        for process in processes:  # the pool's workers are in its process group
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def contents(output: Path):
    """Every file's digest; the manifest without the options that name the runner."""
    files = {}
    for path in sorted(output.rglob("*")):
        if path.is_dir() or "_work" in path.parts:
            continue
        data = path.read_bytes()
        if path.name == "manifest.json":
            manifest = json.loads(data)
            manifest.pop("pipeline_options")
            manifest["config"].pop("output")
            data = json.dumps(manifest, sort_keys=True).encode()
        files[path.relative_to(output).as_posix()] = hashlib.sha256(data).hexdigest()
    return files


def test_portable_runner_with_external_workers_gives_the_fnapirunner_output(services, lm_dir, tmp_path, monkeypatch):
    generate_sample(str(tmp_path / "wet"), SampleConfig(segments=3, docs_per_segment=150, sites=30, seed=9))
    monkeypatch.chdir(tmp_path)  # relative paths on the command line, as a user types them
    lm = os.path.relpath(lm_dir, tmp_path)
    base = ["mine", "--input", "wet/*.warc.wet.gz", "--langs", LANGS, "--lm-dir", lm, "--keep-dropped"]
    assert main([*base, "--output", "local"]) == 0
    assert main([*base, "--output", "portable", "--runner=PortableRunner", *services]) == 0
    local, portable = contents(tmp_path / "local"), contents(tmp_path / "portable")
    assert portable == local
    assert len([name for name in local if name.endswith(".parquet")]) > 20 and "stats.json" in local
    manifest = json.loads((tmp_path / "portable" / "manifest.json").read_text())
    assert manifest["pipeline_options"]["runner"] == "PortableRunner"
