"""Background services (JVMs, a Python worker pool) in process groups of their own, each with a
record ``run/<name>.json`` (pid, ports, command) and a log ``log/<name>.log`` in the engines
folder, so that another process (``make spark-down``) stops exactly what was started: the
whole group, by pid, after checking that the pid still runs the recorded command."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from engines.errors import EngineError

STOP_SECONDS = 20.0  # SIGTERM, then SIGKILL
# The JVMs of an engine on this machine: they schedule and shuffle, the job's work is Python's,
# so C2 compilation and G1's threads are a per-job cost with nothing to win back (they halve
# Spark's executors' CPU per job; docs/cluster.md, Measured).
SMALL_JVM_OPTIONS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


@dataclass
class Service:
    name: str
    pid: int
    command: List[str]
    log: str
    ports: Dict[str, int] = field(default_factory=dict)

    def alive(self) -> bool:
        """The recorded pid still runs the recorded command (not a process that reused the pid)."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        return state != "Z" and [part.decode() for part in cmdline if part] == self.command

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(Path(self.log).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Services:
    """The services recorded in ``root`` (the engines folder, ``out/engines``)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._children: Dict[str, subprocess.Popen] = {}  # started by this process: reaped on stop

    def record(self, name: str) -> Path:
        return self.root / "run" / f"{name}.json"

    def start(
        self,
        name: str,
        command: Sequence[str],
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[Path] = None,
        ports: Optional[Dict[str, int]] = None,
    ) -> Service:
        """Start ``command`` in a new session (its own process group), stdout and stderr to its log."""
        running = self.get(name)
        if running:
            raise EngineError(f"{name} runs already (pid {running.pid}); stop it first")
        log = self.root / "log" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        self.record(name).parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            process = subprocess.Popen(
                list(command),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        self._children[name] = process
        service = Service(name, process.pid, [str(part) for part in command], str(log), dict(ports or {}))
        self.record(name).write_text(json.dumps(asdict(service), indent=1))
        return service

    def get(self, name: str) -> Optional[Service]:
        """The service ``name`` if it is recorded and alive."""
        try:
            service = Service(**json.loads(self.record(name).read_text()))
        except (OSError, ValueError):
            return None
        return service if self.running(service) else None

    def names(self) -> List[str]:
        return sorted(path.stem for path in (self.root / "run").glob("*.json"))

    def stop(self, name: str) -> bool:
        """Stop ``name``'s process group (SIGTERM, SIGKILL after ``STOP_SECONDS``) and drop its
        record; whether it was running."""
        service = self.get(name)
        if service:
            _stop_group(service.pid, lambda: self.running(service))
        self.record(name).unlink(missing_ok=True)
        return service is not None

    def running(self, service: Service) -> bool:
        """Whether ``service`` runs; for a child of this process, its exit status says (between
        fork and exec a child's command line is still this process's)."""
        process = self._children.get(service.name)
        if process is not None and process.pid == service.pid:
            return process.poll() is None
        return service.alive()

    def wait_until(self, service: Service, ready: Callable[[], bool], what: str, seconds: float = 120) -> None:
        """Wait until ``ready()``; an ``EngineError`` with the end of the service's log when it
        exits first or the time is up."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.running(service):
                raise EngineError(
                    f"{service.name} exited before {what}; the end of {service.log}:\n{service.log_tail()}"
                )
            if ready():
                return
            time.sleep(0.25)
        raise EngineError(
            f"{service.name}: no {what} after {seconds:.0f} s; the end of {service.log}:\n{service.log_tail()}"
        )

    def wait_for_port(self, service: Service, port: int, seconds: float = 120) -> None:
        self.wait_until(service, lambda: listening(port), f"listening on 127.0.0.1:{port}", seconds)


def _stop_group(pid: int, alive: Callable[[], bool]) -> None:
    for sig, seconds in ((signal.SIGTERM, STOP_SECONDS), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + seconds
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        if not alive():
            break
    with contextlib.suppress(ProcessLookupError):  # what the leader left behind (a Spark worker's executors)
        os.killpg(pid, signal.SIGKILL)
