#!/usr/bin/env python3
"""Boot an SDK harness worker the way Beam's container ``boot`` does, for machines that run
workers as plain processes (no Docker): a worker pool
(``python -m apache_beam.runners.worker.worker_pool_main --container_executable worker/boot.py``)
or a runner's PROCESS environment (``--environment_type=PROCESS
--environment_config='{"command": "/path/to/worker/boot.py"}'``).

Beam's container contract: the runner starts this with ``--id`` and ``--provision_endpoint``
(a worker pool adds ``--artifact_endpoint``, ``--logging_endpoint`` and ``--control_endpoint``;
the provision service names them too). The provision
service gives the pipeline options and the job's staged artifacts; each is fetched from the
artifact service into ``<semi-persistent dir>/staged`` and installed with pip into the Python
that runs this script (``requirements.txt`` of ``--requirements_file``, the packages of
``--extra_package``, the sdist of ``--setup_file``), once per set of artifacts even when several
workers start at the same time; then the SDK harness runs in this process's place. The Python
running this needs Beam and the project's dependencies (as Beam's SDK image has Beam), not the
project itself: that comes staged with the job.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from typing import Dict, List

import grpc
from apache_beam.portability import common_urns
from apache_beam.portability.api import (
    beam_artifact_api_pb2,
    beam_artifact_api_pb2_grpc,
    beam_provision_api_pb2,
    beam_provision_api_pb2_grpc,
    beam_runner_api_pb2,
    endpoints_pb2,
)
from google.protobuf import json_format, text_format

REQUIREMENTS_FILE = "requirements.txt"  # the names Beam's stager gives what it stages
EXTRA_PACKAGES_FILE = "extra_packages.txt"
SETUP_PACKAGE = "workflow.tar.gz"
PIP = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-build-isolation"]


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--id", required=True, help="the worker id")
    parser.add_argument("--provision_endpoint", required=True)
    # a worker pool passes these too; a PROCESS environment passes only the provision endpoint,
    # whose answer names them
    for endpoint in ("artifact", "logging", "control"):
        parser.add_argument(f"--{endpoint}_endpoint", default="")
    parser.add_argument("--semi_persist_dir", default=None, help="default: a new folder in the temp dir")
    return parser.parse_known_args(argv)[0]


def provision_info(endpoint: str, worker_id: str) -> beam_provision_api_pb2.ProvisionInfo:
    with grpc.insecure_channel(endpoint) as channel:
        stub = beam_provision_api_pb2_grpc.ProvisionServiceStub(channel)
        request = beam_provision_api_pb2.GetProvisionInfoRequest()
        return stub.GetProvisionInfo(request, metadata=[("worker_id", worker_id)]).info


def fetch_artifacts(endpoint: str, artifacts, folder: str) -> Dict[str, str]:
    """Each artifact into ``folder`` under its staged name; {staged name: sha256}."""
    os.makedirs(folder, exist_ok=True)
    digests = {}
    with grpc.insecure_channel(endpoint, options=[("grpc.max_receive_message_length", -1)]) as channel:
        stub = beam_artifact_api_pb2_grpc.ArtifactRetrievalServiceStub(channel)
        resolved = stub.ResolveArtifacts(beam_artifact_api_pb2.ResolveArtifactsRequest(artifacts=artifacts))
        for artifact in resolved.replacements:
            if artifact.role_urn != common_urns.artifact_roles.STAGING_TO.urn:
                raise ValueError(f"an artifact with role {artifact.role_urn}: only staged files are supported")
            name = beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(artifact.role_payload).staged_name
            digest, partial = hashlib.sha256(), os.path.join(folder, f".{name}.part")
            with open(partial, "wb") as out:
                for chunk in stub.GetArtifact(beam_artifact_api_pb2.GetArtifactRequest(artifact=artifact)):
                    digest.update(chunk.data)
                    out.write(chunk.data)
            os.replace(partial, os.path.join(folder, name))
            digests[name] = digest.hexdigest()
    return digests


def pip_commands(folder: str, names) -> List[List[str]]:
    """The pip installs for these staged files, in the order Beam's boot runs them:
    requirements, the extra packages in the order given, the setup package."""
    find_links = ["--find-links", folder]
    commands = []
    if REQUIREMENTS_FILE in names:
        commands.append([*PIP, *find_links, "-r", os.path.join(folder, REQUIREMENTS_FILE)])
    packages = []
    if EXTRA_PACKAGES_FILE in names:
        with open(os.path.join(folder, EXTRA_PACKAGES_FILE)) as listing:
            packages = [line.strip() for line in listing if line.strip()]
    if SETUP_PACKAGE in names:
        packages.append(SETUP_PACKAGE)
    for package in packages:
        path = os.path.join(folder, package)
        # a reused environment may hold an older build of the same version: replace it, then
        # install whatever dependencies it lacks
        commands += [[*PIP, "--force-reinstall", "--no-deps", path], [*PIP, *find_links, path]]
    return commands


def install_once(folder: str, digests: Dict[str, str]) -> None:
    """Install the staged files, unless this Python already installed the same ones: workers
    starting together take turns on a lock, the later ones find the mark of the first."""
    key = hashlib.sha256(json.dumps([sys.prefix, sorted(digests.items())]).encode()).hexdigest()[:16]
    marks = os.path.join(tempfile.gettempdir(), f"beam-boot-{os.getuid()}")
    os.makedirs(marks, exist_ok=True)
    with open(os.path.join(marks, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        mark = os.path.join(marks, f"installed-{key}")
        if os.path.exists(mark):
            return
        for command in pip_commands(folder, digests):
            logging.info("boot: %s", " ".join(command))
            # stdout is the pool's pipe, which nobody reads: pip's output goes to stderr
            subprocess.run(command, check=True, stdout=sys.stderr)
        open(mark, "w").close()


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", force=True)  # Beam set one up on import
    args = parse_args(sys.argv[1:] if argv is None else argv)
    info = provision_info(args.provision_endpoint, args.id)
    semi_persistent = args.semi_persist_dir or tempfile.mkdtemp(prefix=f"beam-worker-{args.id}-")
    staged = os.path.join(semi_persistent, "staged")  # where the SDK harness looks for a main session
    digests = fetch_artifacts(info.artifact_endpoint.url or args.artifact_endpoint, info.dependencies, staged)
    install_once(staged, digests)
    descriptor = lambda url: text_format.MessageToString(endpoints_pb2.ApiServiceDescriptor(url=url))
    environment = {
        **os.environ,
        "WORKER_ID": args.id,
        "PIPELINE_OPTIONS": json_format.MessageToJson(info.pipeline_options),
        "SEMI_PERSISTENT_DIRECTORY": semi_persistent,
        "CONTROL_API_SERVICE_DESCRIPTOR": descriptor(info.control_endpoint.url or args.control_endpoint),
        "LOGGING_API_SERVICE_DESCRIPTOR": descriptor(info.logging_endpoint.url or args.logging_endpoint),
        "RUNNER_CAPABILITIES": " ".join(info.runner_capabilities),
    }
    if info.status_endpoint.url:
        environment["STATUS_API_SERVICE_DESCRIPTOR"] = descriptor(info.status_endpoint.url)
    command = [sys.executable, "-m", "apache_beam.runners.worker.sdk_worker_main"]
    os.execve(sys.executable, command, environment)


if __name__ == "__main__":
    main()
