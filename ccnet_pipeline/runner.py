"""Choosing, checking and configuring the Beam runner of the mine and import jobs: which runners
are tested, refused or untested, the Beam flags a command line may pass (each checked before any
work starts), and the pipeline and options a job runs with (the local FnApiRunner by default)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
from typing import Dict, List, Optional, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import (
    PipelineOptions,
    StandardOptions,
    TestOptions,
    _BeamArgumentParser,
)

from toolkit.cli import UsageError, nearest_flag

DEFAULT_RUNNER = "FnApiRunner"  # Beam 2.77's DirectRunner first downloads Prism, which fails offline

# The runners the job's tests run it on: Beam's in-process FnApiRunner (the default), its portable
# runner (Beam's job service, and the Spark and Flink job servers in tests/integration/) and the
# DataflowRunner (the job's translation, offline: tests/integration/test_dataflow_translation.py).
TESTED_RUNNERS = ("FnApiRunner", "PortableRunner", "DataflowRunner")
WRONG_RUNNERS = {
    "DaskRunner": "Beam's DaskRunner gives wrong answers silently (Beam 2.77): a step with several outputs sends "
    "every element to every output, only the last of several sinks runs, and its metrics raise NotImplementedError",
}
UNTESTED_WHY = {
    "DirectRunner": "Beam 2.77's DirectRunner runs jobs on Prism, a binary it downloads first; the default "
    "FnApiRunner runs the job in this process",
    "FlinkRunner": "Beam's FlinkRunner starts a job server from a jar Maven Central does not serve here; "
    "run `make flink-up` and the job with `python -m engines args flink` (docs/cluster.md)",
    "SparkRunner": "Beam's SparkRunner starts a job server from a jar Maven Central does not serve here; "
    "run `make spark-up` and the job with `python -m engines args spark` (docs/cluster.md)",
}


def runner_path(beam_args: List[str]) -> Optional[str]:
    """The module path of the runner ``--runner`` names, found as Beam finds it (a known runner's
    name in any case, with or without "Runner", or a dotted path); None when none is named."""
    name = None
    for arg, following in zip(beam_args, [*beam_args[1:], None]):
        if arg == "--runner":
            name = following
        elif arg.startswith("--runner="):
            name = arg.split("=", 1)[1]
    if not name:
        return None
    known = {path.rsplit(".", 1)[-1].lower(): path for path in StandardOptions.ALL_KNOWN_RUNNERS}
    return known.get(name.lower(), known.get(name.lower() + "runner", name))


def _import_runner(beam_args: List[str]) -> None:
    """Import the module of the runner ``--runner`` names, as Beam does when it builds the
    pipeline, so that the options it registers (a ``PipelineOptions`` subclass defined there)
    are known. One that fails to import is left for Beam to report."""
    path = runner_path(beam_args)
    if path and "." in path:
        with contextlib.suppress(Exception):
            importlib.import_module(path.rsplit(".", 1)[0])


def check_runner(beam_args: List[str], allow_untested: bool) -> None:
    """Refuse, before any work, a runner known to give wrong answers, and one the job's tests do
    not cover unless ``allow_untested``; ``--dry_run`` with a runner that would run the job."""
    path = runner_path(beam_args) or DEFAULT_RUNNER
    runner = path.rsplit(".", 1)[-1]
    if runner in WRONG_RUNNERS:
        raise UsageError(f"--runner={runner} is refused: {WRONG_RUNNERS[runner]}")
    if runner not in TESTED_RUNNERS and not allow_untested:
        why = UNTESTED_WHY.get(runner, "the job's tests do not run it there")
        raise UsageError(
            f"--runner={runner} is not one the job is tested on ({', '.join(TESTED_RUNNERS)}): {why}."
            " Pass --allow-untested-runner to run it anyway"
        )
    if runner != "DataflowRunner" and dry_run(pipeline_options(beam_args)):
        raise UsageError(f"--dry_run is the DataflowRunner's: --runner={runner} would run the job")


def beam_parser(beam_args: List[str] = ()) -> argparse.ArgumentParser:
    """A parser of every flag Beam knows, built as Beam builds its own when it reads the options
    (``PipelineOptions.get_all_options``): each registered ``PipelineOptions`` subclass (standard,
    Direct, GoogleCloud, Worker, Setup, Debug, Portable, Flink, Spark, Prism, ... and those of the
    runner ``--runner`` names) adds its flags, abbreviations off. A value it rejects is a
    ``UsageError``, not Beam's usage text."""
    _import_runner(list(beam_args))

    class Parser(_BeamArgumentParser):  # it adds Beam's ValueProvider flags
        def error(self, message):
            if message.startswith("ambiguous option: "):
                return  # as Beam's: no abbreviations are matched
            raise UsageError(f"Beam option {message}")

    parser = Parser(prog="beam", allow_abbrev=False)
    for cls in {str(cls): cls for cls in PipelineOptions.__subclasses__()}.values():
        cls._add_argparse_args(parser)
    return parser


def job_server_flags(endpoint: Optional[str]) -> List[str]:
    """The flags of the options a job server describes (its runner's own, as Spark's and
    Flink's), which Beam's portable runner adds to its own when it submits a job; none when
    the server does not answer (the job's submission then says why)."""
    if not endpoint:
        return []
    import grpc
    from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

    try:
        with grpc.insecure_channel(endpoint) as channel:
            stub = beam_job_api_pb2_grpc.JobServiceStub(channel)
            described = stub.DescribePipelineOptions(beam_job_api_pb2.DescribePipelineOptionsRequest(), timeout=30)
    except grpc.RpcError:
        return []
    return [f"--{option.name}" for option in described.options]


def _flags(parser: argparse.ArgumentParser) -> List[str]:
    return [name for action in parser._actions for name in action.option_strings if name.startswith("--")]


def check_beam_args(beam_args: List[str], job: argparse.ArgumentParser) -> None:
    """What the job's parser (``job``) left over goes to Beam: each must be a flag Beam knows
    (``--flag=value`` or ``--flag value``, repeated where Beam appends, as ``--experiments``).
    Otherwise a ``UsageError`` names each unknown flag and the nearest flag of the job or of
    Beam (``unknown option --min_len (did you mean --min-len?)``), or else the first value no
    flag takes. (Beam itself would log "Discarding unparseable args" and run without them.)"""
    if not beam_args:
        return
    beam = beam_parser(beam_args)
    known, rest = beam.parse_known_args(beam_args)
    unknown = [arg for arg in rest if arg != "--"]  # "--": no more options
    if unknown and (runner_path(beam_args) or "").endswith("PortableRunner"):
        described = job_server_flags(known.job_endpoint)
        unknown = [arg for arg in unknown if arg.split("=", 1)[0] not in described]
    if not unknown:
        return
    options = [arg for arg in unknown if arg.startswith("-")]
    if options:
        candidates = _flags(job) + _flags(beam)
        described = []
        for option in options:
            name = option.split("=", 1)[0]
            nearest = nearest_flag(name, candidates)
            described.append(f"{name} (did you mean {nearest}?)" if nearest else name)
        raise UsageError(f"unknown option{'s' if len(described) > 1 else ''} {', '.join(described)}")
    value = unknown[0]
    index = beam_args.index(value)
    before = beam_args[index - 1].split("=", 1)[0] if index else ""
    action = beam._option_string_actions.get(before)
    why = f"{before} takes no value" if action is not None and action.nargs == 0 else "no option takes it"
    raise UsageError(f"unexpected argument {value!r}: {why} (options are --flag=value or --flag value)")


def pipeline_options(beam_args: Sequence[str]) -> PipelineOptions:
    """The Beam options of ``beam_args``, with the local runner unless one is named."""
    args = list(beam_args)
    if not any(arg.startswith("--runner") for arg in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    if not any(arg.startswith("--default_sdk_harness_log_level") for arg in args):
        args.append("--default_sdk_harness_log_level=ERROR")  # local workers are chatty at INFO
    return PipelineOptions(args)


def new_pipeline(beam_args: Sequence[str]):
    """A Beam pipeline for ``beam_args`` and the options it runs with (for the manifest)."""
    options = pipeline_options(beam_args)
    given = options.get_all_options(drop_default=True)
    runner = local_runner(given) if options.view_as(StandardOptions).runner == DEFAULT_RUNNER else None
    return beam.Pipeline(runner=runner, options=options), given


def local_runner(options: Dict):
    """Beam's FnApiRunner, handing the job's options to its worker processes
    (``--direct_running_mode=multi_processing``), which it otherwise starts without them, at
    the INFO log level."""
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    encoded = JobServiceHandle.encode_pipeline_options(options)  # as a portable runner hands them over
    return FnApiRunner(
        provision_info=ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
    )


def dry_run(options: PipelineOptions) -> bool:
    """``--dry_run``, which only the DataflowRunner honours: it translates the job and submits
    nothing. (Beam reads the flag's value as given, so any value turns it on.)"""
    return bool(options.view_as(TestOptions).dry_run)
