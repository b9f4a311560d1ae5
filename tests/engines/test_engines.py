"""The engines' pure parts and their process handling, without Java: the classpath merge, the
configs, the saved state, and services stopped by pid with everything they started."""

import dataclasses
import json
import sys
import time
from pathlib import Path

import pytest

from engines.engine import (
    Engine,
    EngineConfig,
    EngineState,
    external_environment,
    process_environment,
    worker_command,
)
from engines.errors import EngineError
from engines.maven import Artifact, library, newest_of_each, pom_text
from engines.services import Services, free_port, listening
from engines.spark import executor_jars
from tests.support.runners import ROOT
from toolkit.cli import from_dict


def test_one_jar_per_library_the_newest_in_the_order_first_met():
    beam = ["/m2/guava-33.3.1-android.jar", "/m2/slf4j-api-1.7.30.jar", "/m2/beam-runners-spark-3-2.62.0.jar"]
    spark = ["/spark/guava-14.0.1.jar", "/spark/slf4j-api-2.0.7.jar", "/spark/spark-core_2.12-3.5.9.jar"]
    assert newest_of_each(beam, spark) == [
        "/m2/guava-33.3.1-android.jar",
        "/m2/beam-runners-spark-3-2.62.0.jar",
        "/spark/slf4j-api-2.0.7.jar",
        "/spark/spark-core_2.12-3.5.9.jar",
    ]
    assert library("/x/spark-core_2.12-3.5.9.jar") == ("spark-core_2.12", "3.5.9")
    assert newest_of_each(["/a/jackson-core-2.15.9.jar"], ["/b/jackson-core-2.15.10.jar"]) == [
        "/b/jackson-core-2.15.10.jar"
    ]


def test_the_pom_names_each_artifact():
    text = pom_text([Artifact("org.apache.beam", "beam-runners-spark-3", "2.62.0")])
    assert (
        "<groupId>org.apache.beam</groupId><artifactId>beam-runners-spark-3</artifactId><version>2.62.0</version>"
        in text
    )


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(engine="storm"), "engine must be one of spark, flink"),
        (dict(engine="spark", master="yarn"), "a Spark master is spark://HOST:PORT or local[N]"),
        (dict(engine="flink", master="localhost"), "a Flink master is [local] or HOST:REST_PORT"),
        (dict(engine="spark", workers=0), "workers must be at least 1"),
    ],
)
def test_configs_are_checked(settings, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        EngineConfig(**settings)


def test_the_state_reads_back_typed_and_gives_the_jobs_flags(tmp_path):
    command = worker_command(tmp_path / "sdk-worker", "/usr/bin/python3", {"TMPDIR": "/tmp/a b"})
    assert command.read_text() == (
        f"#!/bin/sh\nexport TMPDIR='/tmp/a b'\nexec /usr/bin/python3 {ROOT / 'worker' / 'boot.py'} \"$@\"\n"
    )
    config = EngineConfig("flink", master="[local]")
    state = EngineState(config, "[local]", "127.0.0.1:1", process_environment(command), ("a", "b"))
    assert from_dict(EngineState, json.loads(json.dumps(dataclasses.asdict(state)))) == state
    assert state.beam_args() == [
        "--runner=PortableRunner",
        "--job_endpoint=127.0.0.1:1",
        "--environment_type=PROCESS",
        f'--environment_config={{"command":"{command}"}}',
        "--environment_cache_millis=60000",
        "--parallelism=2",
    ]
    remote = EngineState(EngineConfig("spark", master="spark://h:7077"), "", "e", external_environment("n:5"), ())
    assert remote.beam_args()[2:4] == ["--environment_type=EXTERNAL", "--environment_config=n:5"]
    assert remote.beam_args()[-1] == "--pipeline_resources_detector_factory_class=xlmr.engines.StagedJars"


def test_executors_find_beams_jars_here_and_are_sent_them_elsewhere_never_sparks(tmp_path):
    home = tmp_path / "spark-3.5.9"
    spark_jars = [str(home / "jars" / name) for name in ("spark-core_2.12-3.5.9.jar", "slf4j-api-2.0.7.jar")]
    beam = ["/m2/guava-33.3.1-android.jar", "/m2/beam-runners-spark-3-2.62.0.jar", "/x/xlmr-engines.jar"]
    classpath = [beam[1], beam[0], *spark_jars, beam[2]]
    assert executor_jars(classpath, home, on_this_machine=True) == (beam, [])
    assert executor_jars(classpath, home, on_this_machine=False) == ([beam[0]], [beam[1], beam[0], beam[2]])


def test_a_service_stops_with_the_processes_it_started(tmp_path):
    """A shell that starts a child and waits: both are gone after stop, found by the record
    alone (as `make spark-down` finds them, in another process)."""
    services = Services(tmp_path)
    child = tmp_path / "child.pid"
    command = ["bash", "-c", f"sleep 300 & echo $! > {child}; wait"]
    service = services.start("shell", command)
    deadline = time.monotonic() + 10
    while not child.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child_pid = int(child.read_text())
    assert Services(tmp_path).get("shell").pid == service.pid
    assert Services(tmp_path).stop("shell")  # a fresh object: the record, not the Popen
    assert not Path(f"/proc/{child_pid}").exists() or "Z" in Path(f"/proc/{child_pid}/stat").read_text().split()[2]
    assert not Services(tmp_path).get("shell") and services.names() == []


def test_a_service_that_exits_is_reported_with_its_log(tmp_path):
    services = Services(tmp_path)
    service = services.start("fails", [sys.executable, "-c", "import sys; print('no config here'); sys.exit(3)"])
    with pytest.raises(EngineError, match="(?s)fails exited before listening on 127.0.0.1:.*no config here"):
        services.wait_for_port(service, free_port(), seconds=30)


def test_a_pid_reused_by_another_command_is_not_taken_for_the_service(tmp_path):
    services = Services(tmp_path)
    record = services.record("ghost")
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"name": "ghost", "pid": 1, "command": ["not-init"], "log": "x", "ports": {}}))
    assert services.get("ghost") is None and not services.stop("ghost")  # pid 1 runs something else


def test_an_engine_that_is_not_up_says_how_to_start_it(tmp_path):
    with pytest.raises(EngineError, match="spark is not up: make spark-up"):
        Engine(EngineConfig("spark"), root=tmp_path).beam_args()
    assert not listening(free_port())


def test_without_maven_or_java_the_error_says_what_for(tmp_path, monkeypatch):
    from engines.maven import require, resolve

    monkeypatch.setenv("PATH", str(tmp_path))  # neither mvn nor java here
    with pytest.raises(EngineError, match="mvn is not on PATH: it is needed to fetch the runner libraries"):
        resolve([Artifact("org.apache.beam", "beam-runners-spark-3", "2.62.0")], tmp_path / "spark")
    with pytest.raises(EngineError, match="java is not on PATH: it is needed to run Spark"):
        require("java", "to run Spark")
