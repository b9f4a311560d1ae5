"""Running the mine job through Beam's portable runners: SDK worker pools whose workers boot from
the staged package (``worker/boot.py``) in a Python without the project, the staging options, and
the digest of an output folder to compare runners by."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import site
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List

from engines.services import Services, free_port

ROOT = Path(__file__).resolve().parents[2]


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


@contextlib.contextmanager
def booting_worker_pool(folder: Path) -> Iterator[str]:
    """Beam's worker pool in a Python without the project, each worker started by
    worker/boot.py, which installs what the job stages (pip kept off the network), in a folder
    of its own (so a path relative to the launcher's folder would break); its address. Stopped
    with its workers (its process group) on the way out."""
    python = worker_python(folder / "worker-env")
    (folder / "tmp").mkdir()  # the workers' staged files and install marks
    env = {
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        "PIP_NO_INDEX": "1",
        "TMPDIR": str(folder / "tmp"),
    }
    services, port = Services(folder), free_port()
    command = [str(python), "-m", "apache_beam.runners.worker.worker_pool_main", "--service_port", str(port)]
    command += ["--container_executable", str(ROOT / "worker" / "boot.py")]
    pool = services.start("worker-pool", command, env={**env, "PYTHONPATH": ""}, cwd=folder)
    try:
        services.wait_for_port(pool, port, seconds=60)
        yield f"127.0.0.1:{port}"
    finally:
        services.stop("worker-pool")


def pool_log(folder: Path) -> str:
    return (folder / "log" / "worker-pool.log").read_text()


def staging(kind: str, folder: Path) -> List[str]:
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


def contents(output: Path) -> Dict[str, str]:
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


def installed_copy(folder: Path, module: str = "ccnet_pipeline/steps/dedup.py") -> bytes:
    """The file of the project the workers' environment installed from the staged package."""
    (installed,) = (folder / "worker-env").glob(f"lib/python*/site-packages/{module}")
    return installed.read_bytes()
