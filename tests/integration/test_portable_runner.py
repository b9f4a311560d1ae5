"""The mine job through Beam's portable runner, the path Flink, Spark and Dataflow Runner v2 take:
a job service, the pipeline as a proto, staged artifacts, and SDK harness workers in processes of
their own, booted by ``worker/boot.py`` from an EXTERNAL worker pool in another folder. The
workers' Python has Beam and the dependencies but not the project, which they install from what
the job stages (``--setup_file`` with ``--requirements_file``, or ``--extra_package`` with the
wheel of ``make worker-package``). The output equals the in-process FnApiRunner's."""

import hashlib
import importlib.metadata
import json
import os
import signal
import site
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.sample import SampleConfig, generate_sample

LANGS = "en,de,fr,es,ru"
ROOT = Path(__file__).resolve().parents[2]


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


def worker_python(folder: Path) -> Path:
    """A Python environment like a worker image without the project: a venv whose only
    packages are links to this venv's, the project's own install left out."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    packages = folder / "dependencies"
    packages.mkdir()
    for entry in Path(site.getsitepackages()[0]).iterdir():
        if not entry.name.startswith(("xlmr_corpus", "__editable__")):
            (packages / entry.name).symlink_to(entry)
    (site_packages,) = folder.glob("lib/python*/site-packages")
    (site_packages / "dependencies.pth").write_text(f"{packages}\n")
    python = folder / "bin" / "python"
    found = subprocess.run([python, "-c", "import ccnet_pipeline"], cwd=folder, capture_output=True)
    assert found.returncode != 0, "the worker environment must not see the project"
    return python


@pytest.fixture
def services(tmp_path_factory):
    """Beam's Python job service and a worker pool of separate processes booted by
    worker/boot.py, on 127.0.0.1, each in a folder of its own (so a path relative to the
    launcher's folder would break), pip kept off the network."""
    folder = tmp_path_factory.mktemp("services")
    python = worker_python(folder / "worker-env")
    (folder / "tmp").mkdir()  # the workers' staged files and install marks
    env = {
        **os.environ,
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        "PIP_NO_INDEX": "1",
        "TMPDIR": str(folder / "tmp"),
    }
    env.pop("PYTHONPATH", None)
    job_port, pool_port = free_port(), free_port()
    commands = [
        [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", "--port", str(job_port)],
        [
            python,
            "-m",
            "apache_beam.runners.worker.worker_pool_main",
            "--service_port",
            str(pool_port),
            "--container_executable",
            str(ROOT / "worker" / "boot.py"),
        ],
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
        yield (
            folder,
            [
                f"--job_endpoint=127.0.0.1:{job_port}",
                "--environment_type=EXTERNAL",
                f"--environment_config=127.0.0.1:{pool_port}",
            ],
        )
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


def staging(kind: str, folder: Path):
    """The staging options of ``kind``: the sdist of the project's pyproject.toml with a
    requirements file (its dependencies, already in the workers' environment), or the wheel
    ``make worker-package`` builds."""
    if kind == "setup_file":
        dependencies = [r for r in importlib.metadata.requires("xlmr-corpus") if "extra ==" not in r]
        requirements = folder / "requirements.txt"
        requirements.write_text("\n".join(dependencies) + "\n")
        # skip: no pip download of sdists on the launcher; workers install from their index
        return [
            f"--setup_file={ROOT / 'pyproject.toml'}",
            f"--requirements_file={requirements}",
            "--requirements_cache=skip",
        ]
    subprocess.run(["make", "--no-print-directory", "worker-package", f"DIST={folder}"], cwd=ROOT, check=True)
    (wheel,) = folder.glob("xlmr_corpus-*.whl")
    return [f"--extra_package={wheel}"]


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
    (installed,) = (folder / "worker-env").glob("lib/python*/site-packages/ccnet_pipeline/transforms.py")
    assert installed.read_bytes() == (ROOT / "ccnet_pipeline" / "transforms.py").read_bytes()
    pool_log = (folder / "1.log").read_text()
    assert "boot: " in pool_log and ("workflow.tar.gz" if kind == "setup_file" else ".whl") in pool_log


def test_near_dedup_on_the_portable_runner_gives_the_fnapirunner_output(services, tmp_path, monkeypatch):
    from tests.near_duplicates import LANGUAGES, generate, write_wet

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
