"""Flink 1.19 and Beam's portable Flink runner, assembled from Maven Central.

``beam-runners-flink-1.19`` depends on Flink itself (flink-runtime, flink-clients,
flink-streaming-java 1.19.0), so one classpath serves the job server
(``FlinkJobServerDriver``: ``[local]`` runs an embedded Flink inside it) and a standalone
cluster of a JobManager and TaskManagers started as plain JVMs (Maven Central has no
``flink-dist``, whose scripts would start them). As Beam's Flink guide asks, the cluster has
the runner's classes on its own classpath and loads them parent-first: classes that a finished
task's classloader took along broke the next task (``NoClassDefFoundError`` of Beam's gRPC)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Dict, List, Tuple

from engines.errors import EngineError
from engines.maven import BEAM_JAVA_VERSION, Artifact, require, resolve
from engines.services import SMALL_JVM_OPTIONS, Services, free_port

FLINK_VERSION = "1.19"  # the newest Flink whose Beam runner resolves at BEAM_JAVA_VERSION here
LOGGING = Artifact("org.slf4j", "slf4j-simple", "1.7.30")  # a binding for Beam's slf4j-api 1.7.30
LOG_TIMES = [
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yy/MM/dd HH:mm:ss.SSS",
]


def runner(beam_version: str = BEAM_JAVA_VERSION) -> Artifact:
    return Artifact("org.apache.beam", f"beam-runners-flink-{FLINK_VERSION}", beam_version)


def classpath(root: Path, beam_version: str = BEAM_JAVA_VERSION) -> List[str]:
    return resolve([runner(beam_version), LOGGING], root / f"flink-runner-{beam_version}")


def write_config(folder: Path, ports: Dict[str, int], parallelism: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tmp").mkdir(exist_ok=True)
    settings = {
        "jobmanager.rpc.address": "127.0.0.1",
        "jobmanager.bind-host": "127.0.0.1",
        "jobmanager.rpc.port": ports["rpc"],
        "rest.address": "127.0.0.1",
        "rest.bind-address": "127.0.0.1",
        "rest.port": ports["rest"],
        "blob.server.port": ports["blob"],
        "taskmanager.host": "127.0.0.1",
        "taskmanager.bind-host": "127.0.0.1",
        "taskmanager.numberOfTaskSlots": 1,
        "jobmanager.memory.process.size": "1024m",
        "taskmanager.memory.process.size": "1536m",
        "parallelism.default": parallelism,
        "classloader.resolve-order": "parent-first",
        "io.tmp.dirs": str(folder / "tmp"),
    }
    (folder / "flink-conf.yaml").write_text("".join(f"{key}: {value}\n" for key, value in settings.items()))
    return folder


def resource_options(java: str, classpath_: str, conf: Path, process: str) -> Tuple[List[str], List[str]]:
    """The JVM options and the dynamic properties Flink's own scripts compute for a JobManager
    (``process="JM"``) or TaskManager (``"TM"``) from the config (``BashJavaUtils``); a
    TaskManager refuses to start without them."""
    done = subprocess.run(
        [java, "-cp", classpath_, "org.apache.flink.runtime.util.bash.BashJavaUtils", f"GET_{process}_RESOURCE_PARAMS"]
        + ["--configDir", str(conf)],
        capture_output=True,
        text=True,
    )
    results = [
        line.split(":", 1)[1] for line in done.stdout.splitlines() if line.startswith("BASH_JAVA_UTILS_EXEC_RESULT:")
    ]
    if done.returncode != 0 or len(results) != 2:
        raise EngineError(f"Flink could not size its {process} processes: {done.stdout[-500:]}{done.stderr[-500:]}")
    return results[0].split(), results[1].split()


def start_cluster(services: Services, jars: List[str], taskmanagers: int = 2) -> str:
    """A JobManager and ``taskmanagers`` TaskManagers of one slot each on 127.0.0.1 (``jars``:
    ``classpath``), every port free; the REST address (``127.0.0.1:PORT``) once all
    TaskManagers are registered."""
    java, classpath_ = require("java", "to run Flink"), os.pathsep.join(jars)
    ports = {"rpc": free_port(), "rest": free_port(), "blob": free_port()}
    conf = write_config(services.root / "flink-conf", ports, taskmanagers)
    jvm, dynamic = resource_options(java, classpath_, conf, "JM")
    jobmanager = services.start(
        "flink-jobmanager",
        [
            java,
            *jvm,
            *SMALL_JVM_OPTIONS,
            *LOG_TIMES,
            "-cp",
            classpath_,
            "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
        ]
        + ["--configDir", str(conf), *dynamic],
        ports=ports,
    )
    services.wait_for_port(jobmanager, ports["rest"])
    jvm, dynamic = resource_options(java, classpath_, conf, "TM")
    for number in range(1, taskmanagers + 1):
        services.start(
            f"flink-taskmanager-{number}",
            [
                java,
                *jvm,
                *SMALL_JVM_OPTIONS,
                *LOG_TIMES,
                "-cp",
                classpath_,
                "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
            ]
            + ["--configDir", str(conf), *dynamic],
        )
    services.wait_until(
        jobmanager, lambda: len(registered_taskmanagers(ports["rest"])) >= taskmanagers, f"{taskmanagers} TaskManagers"
    )
    return f"127.0.0.1:{ports['rest']}"


def registered_taskmanagers(rest_port: int) -> List[Dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{rest_port}/taskmanagers", timeout=5) as response:
            return json.load(response).get("taskmanagers", [])
    except (OSError, ValueError):
        return []


def start_job_server(services: Services, jars: List[str], master: str) -> str:
    """Beam's Flink job server (``jars``: ``classpath``) for ``master`` (``[local]``: an embedded
    Flink; or a cluster's REST address ``host:port``); its job endpoint."""
    java, classpath_ = require("java", "to run Beam's Flink job server"), os.pathsep.join(jars)
    artifacts = services.root / "artifacts" / "flink"
    artifacts.mkdir(parents=True, exist_ok=True)
    ports = {"job": free_port(), "artifact": free_port(), "expansion": free_port()}
    server = services.start(
        "flink-job-server",
        [
            java,
            "-Xmx1g",
            *SMALL_JVM_OPTIONS,
            *LOG_TIMES,
            "-cp",
            classpath_,
            "org.apache.beam.runners.flink.FlinkJobServerDriver",
        ]
        + ["--flink-master", master, "--job-host", "127.0.0.1", "--artifacts-dir", str(artifacts)]
        + ["--job-port", str(ports["job"]), "--artifact-port", str(ports["artifact"])]
        + ["--expansion-port", str(ports["expansion"])],
        ports=ports,
    )
    services.wait_for_port(server, ports["job"])
    return f"127.0.0.1:{ports['job']}"
