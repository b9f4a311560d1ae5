"""Spark 3.5 and Beam's portable Spark runner, assembled from what the package indexes serve.

- Spark: the jars of the pyspark sdist (a whole Spark 3.5 release, Scala 2.12), unpacked into
  ``spark-<version>/jars`` of the engines folder; pyspark itself is not installed.
- The job server: ``org.apache.beam.runners.spark.SparkJobServerDriver`` from
  ``beam-runners-spark-3`` (Maven Central), on a classpath of Beam's jars and Spark's, one
  version of each library.
- A standalone cluster: a master and one-core workers started as plain JVMs (pyspark has no
  ``sbin/start-*.sh``), all on 127.0.0.1.
- What a job stages to its executors: not Beam's default (the job server's whole classpath,
  425 MB, copied by every executor of every job) but ``StagedJars.java`` (compiled here):
  nothing where the executors run on this machine (Beam's jars are on their classpath), Beam's
  jars alone for another cluster (each executor has Spark's own).
- Executors on this machine close Beam's SDK environments when they stop
  (``ClosingEnvironments.java``, a Spark plugin), so that their SDK workers end, not break.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path
from typing import Dict, List, Tuple

from engines.errors import EngineError
from engines.maven import BEAM_JAVA_VERSION, Artifact, library, newest_of_each, require, resolve
from engines.services import SMALL_JVM_OPTIONS, Service, Services, free_port

SPARK_VERSION = "3.5.9"  # Beam's portable Spark runner supports Spark 3 only; 3.5 is the last line
SCALA_VERSION = "2.12"  # the Scala of pyspark 3.5's jars and of beam-runners-spark-3

# What Spark's launcher (org.apache.spark.launcher.JavaModuleOptions, 3.5) gives every JVM it
# starts on Java 17; the master, workers and job server are started without the launcher.
JAVA_17_OPTIONS = [
    "-XX:+IgnoreUnrecognizedVMOptions",
    *(
        f"--add-opens=java.base/{package}=ALL-UNNAMED"
        for package in (
            "java.lang",
            "java.lang.invoke",
            "java.lang.reflect",
            "java.io",
            "java.net",
            "java.nio",
            "java.util",
            "java.util.concurrent",
            "java.util.concurrent.atomic",
            "jdk.internal.ref",
            "sun.nio.ch",
            "sun.nio.cs",
            "sun.security.action",
            "sun.util.calendar",
        )
    ),
    "--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "-Djdk.reflect.useDirectMethodHandle=false",
]
STAGED_JARS = "xlmr.engines.StagedJars"  # engines/StagedJars.java
CLOSING_ENVIRONMENTS = "xlmr.engines.ClosingEnvironments"  # engines/ClosingEnvironments.java
PLUGIN_SOURCES = [
    Path(__file__).with_name(f"{name.split('.')[-1]}.java") for name in (STAGED_JARS, CLOSING_ENVIRONMENTS)
]


def runner(beam_version: str = BEAM_JAVA_VERSION) -> Artifact:
    return Artifact("org.apache.beam", "beam-runners-spark-3", beam_version)


def spark_home(root: Path, version: str = SPARK_VERSION) -> Path:
    """A Spark home whose ``jars/`` are those of the pyspark ``version`` sdist (fetched by pip,
    from its cache after the first time); unpacked once."""
    home = root / f"spark-{version}"
    root.mkdir(parents=True, exist_ok=True)
    if (home / "jars" / f"spark-core_{SCALA_VERSION}-{version}.jar").is_file():
        return home
    with tempfile.TemporaryDirectory(dir=root) as download:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"pyspark=={version}", "-d", download],
            capture_output=True,
            text=True,
        )
        if fetched.returncode != 0:
            raise EngineError(f"pip could not download pyspark=={version}: {fetched.stderr.strip()[-500:]}")
        (sdist,) = Path(download).glob("pyspark-*.tar.gz")
        partial = root / f"spark-{version}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        prefix = f"pyspark-{version}/deps/jars/"
        with tarfile.open(sdist) as archive:
            members = [m for m in archive.getmembers() if m.name.startswith(prefix) and m.isfile()]
            for member in members:
                member.name = "jars/" + member.name[len(prefix) :]
            archive.extractall(partial, members=members, filter="data")
        shutil.rmtree(home, ignore_errors=True)
        partial.rename(home)
    return home


def spark_env(home: Path, local: bool = True) -> Dict[str, str]:
    """SPARK_SCALA_VERSION: without Spark's scripts, the launcher that builds executors' command
    lines looks for a source build's folders ("Cannot find any build directories").
    SPARK_LOCAL_IP, on one machine only: else the driver advertises the machine's address."""
    env = {"SPARK_HOME": str(home), "SPARK_SCALA_VERSION": SCALA_VERSION}
    return {**env, "SPARK_LOCAL_IP": "127.0.0.1"} if local else env


def job_server_classpath(root: Path, beam_version: str = BEAM_JAVA_VERSION) -> List[str]:
    """Beam's Spark runner and Spark's own jars (assembled in ``root``), one version of each
    library, and the project's plugins compiled against them."""
    folder = root / f"spark-runner-{beam_version}"
    beam = resolve([runner(beam_version)], folder)
    spark = sorted(str(jar) for jar in (spark_home(root) / "jars").glob("*.jar"))
    classpath = newest_of_each(beam, spark)
    return [*classpath, str(engine_plugins(folder, classpath))]


def engine_plugins(folder: Path, classpath: List[str]) -> Path:
    """``PLUGIN_SOURCES`` compiled against ``classpath`` into ``folder/xlmr-engines.jar`` (again
    when a source changes), with the service entry that registers StagedJars' options."""
    jar = folder / "xlmr-engines.jar"
    if jar.is_file() and all(jar.stat().st_mtime >= source.stat().st_mtime for source in PLUGIN_SOURCES):
        return jar
    javac = require("javac", "to compile the engines' Java plugins (a JDK, not a JRE)")
    with tempfile.TemporaryDirectory(dir=folder) as classes:
        done = subprocess.run(
            [javac, "-nowarn", "-d", classes, "-cp", os.pathsep.join(classpath), *map(str, PLUGIN_SOURCES)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            names = ", ".join(source.name for source in PLUGIN_SOURCES)
            raise EngineError(f"javac could not compile {names}: {done.stderr.strip()[-500:]}")
        partial = folder / "xlmr-engines.jar.partial"
        with zipfile.ZipFile(partial, "w") as archive:
            for path in sorted(Path(classes).rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
            archive.writestr(
                "META-INF/services/org.apache.beam.sdk.options.PipelineOptionsRegistrar", f"{STAGED_JARS}$Registrar\n"
            )
        partial.replace(jar)
    return jar


def executor_jars(classpath: List[str], home: Path, on_this_machine: bool) -> Tuple[List[str], List[str]]:
    """(the executors' extra classpath, the jars a job stages to them). Executors have Spark's
    own jars; Beam's (those of the job server's classpath outside Spark's) they find on this
    machine, or else are sent. Guava goes first on their classpath either way: Spark's guava 14
    lacks what Beam's gRPC calls (``NoSuchMethodError … Preconditions.checkState``)."""
    (guava,) = [jar for jar in classpath if library(jar)[0] == "guava"]
    spark_jars = str((home / "jars").resolve())
    beam = [jar for jar in classpath if not str(Path(jar).resolve()).startswith(spark_jars)]
    if on_this_machine:
        return [guava, *[jar for jar in beam if jar != guava]], []
    return [guava], beam


def _java(home: Path, main: str, args: List[str], heap: str = "512m") -> List[str]:
    java = require("java", "to run Spark")
    return [java, *JAVA_17_OPTIONS, *SMALL_JVM_OPTIONS, f"-Xmx{heap}", "-cp", str(home / "jars" / "*"), main, *args]


def start_cluster(services: Services, home: Path, workers: int = 2) -> str:
    """A standalone master and ``workers`` one-core workers (1 GiB each) of the Spark in
    ``home`` on 127.0.0.1, every port free; the master's URL once all workers are registered."""
    port, ui = free_port(), free_port()
    master = services.start(
        "spark-master",
        _java(
            home,
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
        ),
        env=spark_env(home),
        ports={"master": port, "ui": ui},
    )
    services.wait_for_port(master, ui)
    url = f"spark://127.0.0.1:{port}"
    for number in range(1, workers + 1):
        start_worker(services, home, url, number)
    services.wait_until(master, lambda: len(alive_workers(ui)) >= workers, f"{workers} registered workers")
    return url


def start_worker(services: Services, home: Path, master_url: str, number: int) -> Service:
    work = services.root / "spark-work" / str(number)
    work.mkdir(parents=True, exist_ok=True)
    args = [master_url, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--work-dir", str(work)]
    args += ["--webui-port", str(free_port())]
    return services.start(
        f"spark-worker-{number}", _java(home, "org.apache.spark.deploy.worker.Worker", args), env=spark_env(home)
    )


def master_state(ui_port: int) -> Dict:
    """What the master's web UI reports (workers, active and completed applications)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            return json.load(response)
    except (OSError, ValueError):
        return {}


def alive_workers(ui_port: int) -> List[Dict]:
    return [worker for worker in master_state(ui_port).get("workers", []) if worker.get("state") == "ALIVE"]


def log_config(root: Path) -> Path:
    """Log4j 2 settings for the job server: INFO to its log from the start (Spark's own default
    profile comes only with the first SparkContext)."""
    path = root / "log4j2-job-server.properties"
    path.write_text(
        "rootLogger.level = info\nrootLogger.appenderRef.stdout.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss.SSS} %p %c{1}: %m%n%ex\n"
    )
    return path


def start_job_server(services: Services, classpath: List[str], home: Path, master_url: str) -> str:
    """Beam's Spark job server (``classpath``: ``job_server_classpath``) for ``master_url``
    (``spark://host:port`` or ``local[N]``); its job endpoint. The executors' classpath and
    what jobs stage: ``executor_jars``. Kryo, because Beam caches PCollections as Java objects
    that Java serialization cannot send to another executor, which then recomputes the block
    silently (and its counters count it twice)."""
    java = require("java", "to run Beam's Spark job server")
    local = master_url.startswith(("local", "spark://127.0.0.1:", "spark://localhost:"))
    extra_classpath, staged = executor_jars(classpath, home, local)
    small_jvms = SMALL_JVM_OPTIONS if local else []
    artifacts = services.root / "artifacts" / "spark"
    artifacts.mkdir(parents=True, exist_ok=True)
    ports = {"job": free_port(), "artifact": free_port(), "expansion": free_port()}
    command = [
        java,
        *JAVA_17_OPTIONS,
        *small_jvms,
        "-Xmx1g",
        f"-Dspark.executor.extraClassPath={os.pathsep.join(extra_classpath)}",
        *([f"-Dspark.executor.extraJavaOptions={' '.join(small_jvms)}"] if small_jvms else []),
        *([f"-Dspark.plugins={CLOSING_ENVIRONMENTS}"] if local else []),  # on the executors' classpath here
        f"-Dxlmr.stagedJars={os.pathsep.join(staged)}",
        "-Dspark.serializer=org.apache.spark.serializer.KryoSerializer",
        f"-Dlog4j2.configurationFile={log_config(services.root)}",
        "-cp",
        os.pathsep.join(classpath),
        "org.apache.beam.runners.spark.SparkJobServerDriver",
        "--spark-master-url",
        master_url,
        "--job-host",
        "127.0.0.1",
        "--job-port",
        str(ports["job"]),
        "--artifact-port",
        str(ports["artifact"]),
        "--expansion-port",
        str(ports["expansion"]),
        "--artifacts-dir",
        str(artifacts),
    ]
    server = services.start("spark-job-server", command, env=spark_env(home, local), ports=ports)
    services.wait_for_port(server, ports["job"])
    return f"127.0.0.1:{ports['job']}"
