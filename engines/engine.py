"""Spark and Flink for the mine job, from the project's own files: Beam's Java runner libraries
from Maven Central (into Maven's cache), Spark's jars from the pyspark sdist, each job server's
classpath assembled here, and the engines started on 127.0.0.1 with their pids, ports and logs
under ``out/engines/`` (``python -m engines up spark``; docs/cluster.md).

An engine that is up serves jobs through Beam's ``PortableRunner``: ``Engine.beam_args()`` are the
flags that point the mine job at its job server and at its SDK workers: on this machine Beam's
PROCESS environment, each worker a process the engine's JVMs start through ``worker/boot.py``; on
a cluster of the user's, the worker pool each node runs."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from engines import flink, spark
from engines.errors import EngineError
from engines.maven import BEAM_JAVA_VERSION
from engines.services import Services
from toolkit import storage
from toolkit.cli import flag, from_dict

ENGINES = ("spark", "flink")
ROOT = Path("out/engines")
NODE_POOL = "localhost:50000"  # the SDK worker pool every node of a user's cluster runs (docs/cluster.md)
BOOT = Path(__file__).resolve().parents[1] / "worker" / "boot.py"
# SDK workers kept for a minute after a stage: on a Flink cluster a stage that ended released the
# workers the next one was using ("SDK harness closed connection"); on Spark each stage started
# workers of its own (a small job took 3x as long).
ENVIRONMENT_CACHE_MILLIS = 60_000


@dataclass(frozen=True)
class EngineConfig:
    engine: str = field(metadata=flag(cli=False))  # spark or flink
    master: str = ""  # empty: a standalone cluster started here; spark://HOST:PORT or local[N]; Flink: [local] (embedded) or HOST:REST_PORT
    workers: int = 2  # workers (Spark) or TaskManagers (Flink) of the cluster started here, one core each
    worker_pool: str = ""  # HOST:PORT of a Beam worker pool for the SDK workers; empty: processes the engine starts (a master on this machine), localhost:50000 on each node (another master)
    beam_version: str = BEAM_JAVA_VERSION  # the Beam release of the Java runner assembled

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {self.engine!r}")
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.engine == "spark" and self.master and not self.master.startswith(("spark://", "local")):
            raise ValueError(f"a Spark master is spark://HOST:PORT or local[N], not {self.master!r}")
        if self.engine == "flink" and self.master and self.master != "[local]" and ":" not in self.master:
            raise ValueError(f"a Flink master is [local] or HOST:REST_PORT, not {self.master!r}")

    @property
    def on_this_machine(self) -> bool:
        """The master and its workers run here: local mode, or the cluster this starts."""
        return not self.master or self.master.startswith("local") or self.master == "[local]"


@dataclass(frozen=True)
class EngineState:
    """What ``Engine.up`` started, saved as ``<root>/<engine>.json`` while it runs."""

    config: EngineConfig
    master: str  # the master the job server submits to
    job_endpoint: str  # HOST:PORT of the job server's job service
    environment: Tuple[str, ...]  # the Beam flags that say where the SDK workers run
    services: Tuple[str, ...]  # the services started (Services names)

    def beam_args(self) -> List[str]:
        """The mine job's flags for this engine."""
        args = [
            "--runner=PortableRunner",
            f"--job_endpoint={self.job_endpoint}",
            *self.environment,
            f"--environment_cache_millis={ENVIRONMENT_CACHE_MILLIS}",
        ]
        if self.config.engine == "flink" and self.config.on_this_machine:
            args.append(f"--parallelism={self.config.workers}")
        if self.config.engine == "spark":  # what the job stages to executors: engines/spark.py
            args.append(f"--pipeline_resources_detector_factory_class={spark.STAGED_JARS}")
        return args


class Engine:
    """One engine's services, recorded in ``root/<engine>.json`` while it is up; what it runs
    on (classpath lists, Spark's jars) is assembled in ``assembled`` (default: ``root``)."""

    def __init__(self, config: EngineConfig, root: Path = ROOT, assembled: Optional[Path] = None):
        self.config = config
        self.root = Path(root).resolve()  # services start in other folders
        self.assembled = Path(assembled).resolve() if assembled else self.root
        self.services = Services(self.root)

    @property
    def state_file(self) -> Path:
        return self.root / f"{self.config.engine}.json"

    def fetch(self) -> List[str]:
        """Resolve (download once) what the engine runs on; the job server's classpath."""
        if self.config.engine == "spark":
            return spark.job_server_classpath(self.assembled, self.config.beam_version)
        return flink.classpath(self.assembled, self.config.beam_version)

    def state(self) -> Optional[EngineState]:
        """What ``up`` recorded, if every service it started still runs."""
        try:
            state = from_dict(EngineState, json.loads(self.state_file.read_text()))
        except (OSError, ValueError):
            return None
        return state if all(self.services.get(name) for name in state.services) else None

    def up(self) -> EngineState:
        """Start what is not running (the cluster unless a master is given, the job server, the
        worker pool). A no-op when it is up with the same settings; an error when it is up with
        others."""
        state = self.state()
        if state and state.config == self.config:
            return state
        if state:
            raise EngineError(
                f"{self.config.engine} is up with other settings ({state.config}): stop it first"
                f" (make {self.config.engine}-down)"
            )
        self.down()  # what a crashed earlier start left
        classpath = self.fetch()
        try:
            state = self._start(classpath)
        except BaseException:
            self.down()
            raise
        storage.write_json(str(self.state_file), asdict(state))
        return state

    def _start(self, classpath: List[str]) -> EngineState:
        config, before = self.config, set(self.services.names())
        if config.engine == "spark":
            home = spark.spark_home(self.assembled)
            master = config.master or spark.start_cluster(self.services, home, config.workers)
            endpoint = spark.start_job_server(self.services, classpath, home, master)
        else:
            master = config.master or flink.start_cluster(self.services, classpath, config.workers)
            endpoint = flink.start_job_server(self.services, classpath, master)
        if config.worker_pool or not config.on_this_machine:
            environment = external_environment(config.worker_pool or NODE_POOL)
        else:
            environment = process_environment(worker_command(self.root / "sdk-worker", sys.executable))
        return EngineState(config, master, endpoint, environment, tuple(sorted(set(self.services.names()) - before)))

    def down(self) -> List[str]:
        """Stop every service of this engine (recorded or left by a crashed start); their names."""
        prefix = f"{self.config.engine}-"
        stopped = [name for name in self.services.names() if name.startswith(prefix) and self.services.stop(name)]
        self.state_file.unlink(missing_ok=True)
        return stopped

    def beam_args(self) -> List[str]:
        """The mine job's flags for the engine that is up."""
        state = self.state()
        if not state:
            raise EngineError(f"{self.config.engine} is not up: make {self.config.engine}-up")
        return state.beam_args()


def worker_command(path: Path, python: str, env: Optional[Dict[str, str]] = None) -> Path:
    """Write ``path``: the command that starts one SDK worker, ``worker/boot.py`` in ``python``
    (which installs what the job stages, then runs the SDK harness), with ``env`` set."""
    exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in (env or {}).items())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\n{exports}exec {shlex.quote(python)} {shlex.quote(str(BOOT))} "$@"\n')
    path.chmod(0o755)
    return path


def process_environment(command: Path) -> Tuple[str, ...]:
    """Beam's PROCESS environment: the runner's own JVM (an executor, a TaskManager) starts each
    SDK worker as ``command``. (An EXTERNAL pool shared by two executors stops one's workers
    when the other's are released: Beam's pool keys them by ids each JVM counts from 1.)"""
    return (
        "--environment_type=PROCESS",
        "--environment_config=" + json.dumps({"command": str(command)}, separators=(",", ":")),
    )


def external_environment(pool: str) -> Tuple[str, ...]:
    """A Beam worker pool at ``pool`` (HOST:PORT) starts the SDK workers."""
    return ("--environment_type=EXTERNAL", f"--environment_config={pool}")


def jobs(endpoint: str) -> Dict[str, str]:
    """The jobs a Beam job service (``HOST:PORT``) knows, by id: their state (``RUNNING``,
    ``DONE``, ``FAILED``...)."""
    import grpc
    from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

    with grpc.insecure_channel(endpoint) as channel:
        stub = beam_job_api_pb2_grpc.JobServiceStub(channel)
        infos = stub.GetJobs(beam_job_api_pb2.GetJobsRequest(), timeout=10).job_info
    return {info.job_id: beam_job_api_pb2.JobState.Enum.Name(info.state) for info in infos}
