"""Java libraries from Maven Central, resolved by Maven into its own cache (``~/.m2``), never into
the clone: a generated pom per engine and ``mvn dependency:build-classpath``. The classpath is
listed once in the engine's folder and listed again only when the pom changes or a jar is gone."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Sequence

from engines.errors import EngineError

# The newest Beam whose runner libraries resolve with every dependency from the Maven Central
# these machines reach (2026-12-06: 2.62.0; 2.70.0 lacks beam-runners-java-job-service, the
# other releases after 2.62.0 lack the runners themselves). Its job-server jars are not served.
BEAM_JAVA_VERSION = "2.62.0"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"


@dataclass(frozen=True)
class Artifact:
    group: str
    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.group}:{self.name}:{self.version}"


def require(program: str, purpose: str) -> str:
    """The path of ``program`` on PATH, or an ``EngineError`` that says what it is needed for."""
    path = shutil.which(program)
    if not path:
        raise EngineError(f"{program} is not on PATH: it is needed {purpose} (docs/cluster.md, what a machine needs)")
    return path


def pom_text(artifacts: Sequence[Artifact]) -> str:
    dependencies = "".join(
        f"    <dependency><groupId>{a.group}</groupId><artifactId>{a.name}</artifactId>"
        f"<version>{a.version}</version></dependency>\n"
        for a in artifacts
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>xlmr-corpus.engines</groupId><artifactId>classpath</artifactId><version>1</version>\n"
        f"  <dependencies>\n{dependencies}  </dependencies>\n"
        "</project>\n"
    )


def resolve(artifacts: Sequence[Artifact], folder: Path) -> List[str]:
    """The jars of ``artifacts`` and all their dependencies, as paths in Maven's cache."""
    folder = folder.resolve()  # Maven resolves relative paths against the pom's folder
    folder.mkdir(parents=True, exist_ok=True)
    pom, listing = folder / "pom.xml", folder / "classpath.txt"
    text = pom_text(artifacts)
    if pom.is_file() and pom.read_text() == text and listing.is_file():
        jars = listing.read_text().strip().split(os.pathsep)
        if all(os.path.isfile(jar) for jar in jars):
            return jars
    mvn = require("mvn", "to fetch the runner libraries from Maven Central")
    require("java", "to run Maven and the engines")
    pom.write_text(text)
    partial = folder / "classpath.txt.partial"
    done = subprocess.run(
        [mvn, "-B", "-q", "-f", str(pom), f"{DEPENDENCY_PLUGIN}:build-classpath", f"-Dmdep.outputFile={partial}"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        errors = [line for line in done.stdout.splitlines() if "ERROR" in line][:3]
        raise EngineError(
            f"Maven could not resolve {', '.join(map(str, artifacts))}: " + (" / ".join(errors) or done.stderr[-500:])
        )
    partial.replace(listing)
    return listing.read_text().strip().split(os.pathsep)


_JAR = re.compile(r"(?P<name>.+?)-(?P<version>\d[\w.\-]*)\.jar$")


def library(jar: str):
    """(library name, version) of a jar's file name: ``guava-33.3.1-android.jar`` ->
    (``guava``, ``33.3.1-android``)."""
    match = _JAR.match(os.path.basename(jar))
    return (match["name"], match["version"]) if match else (os.path.basename(jar), "")


def _version_key(version: str):
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"[.\-]", version)]


def newest_of_each(*classpaths: Iterable[str]) -> List[str]:
    """One jar per library across ``classpaths``, the newest version, in the order first met.
    Two classpaths put together (Beam's runner and the jars of a Spark release) disagree on
    versions of the libraries both use; the older ones lose (Spark's guava 14 breaks Beam's
    gRPC, Beam's slf4j-api 1.7 finds no binding in Spark's log4j 2)."""
    jars = [jar for classpath in classpaths for jar in classpath]
    newest = {}
    for jar in jars:
        name, version = library(jar)
        if name not in newest or _version_key(version) > _version_key(library(newest[name])[1]):
            newest[name] = jar
    return [jar for jar in jars if newest[library(jar)[0]] == jar]
