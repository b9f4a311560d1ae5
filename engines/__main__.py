"""python -m engines {fetch,up,args,down,status} ...

fetch spark|flink|all   resolve the runner libraries (Maven) and Spark's jars (pip) once
up spark|flink          start the engine on 127.0.0.1 (a standalone cluster unless --master)
args spark|flink        the mine job's Beam flags for the engine, starting it if it is not up
down [spark|flink|all]  stop the engine's processes
status                  what runs, with pids, ports and logs
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from engines.engine import ENGINES, ROOT, Engine, EngineConfig, jobs
from toolkit.cli import add_config_arguments, build_config, given, run_cli


def _engines(name: str) -> List[str]:
    return list(ENGINES) if name == "all" else [name]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engines", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", default=str(ROOT), help=f"folder of pids, logs and assembled files (default: {ROOT})")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("fetch", "up", "args"):
        each = sub.add_parser(command, allow_abbrev=False)
        each.add_argument("engine", choices=[*ENGINES, "all"] if command == "fetch" else ENGINES)
        add_config_arguments(each, EngineConfig)
    down = sub.add_parser("down")
    down.add_argument("engine", nargs="?", default="all", choices=[*ENGINES, "all"])
    sub.add_parser("status")

    def run(args) -> int:
        if args.command == "status":
            return _status(args.root)
        if args.command == "down":
            for name in _engines(args.engine):
                stopped = Engine(EngineConfig(name), args.root).down()
                print(f"{name}: stopped {', '.join(stopped)}" if stopped else f"{name}: nothing was running")
            return 0
        for name in _engines(args.engine):
            engine = Engine(build_config(EngineConfig, given(args), {"engine": name}), args.root)
            if args.command == "fetch":
                print(f"{name}: {len(engine.fetch())} jars on the job server's classpath")
            elif args.command == "up":
                state = engine.up()
                print(
                    f"{name} is up: master {state.master}, job endpoint {state.job_endpoint}, "
                    f"SDK workers: {' '.join(state.environment)}; logs in {args.root}/log"
                )
            else:
                was_up = engine.state() is not None
                state = engine.up()
                if not was_up:
                    print(f"{name} started (python -m engines down {name} stops it)", file=sys.stderr)
                print(" ".join(state.beam_args()))
        return 0

    return run_cli(run, parser, argv)


def _status(root: str) -> int:
    for name in ENGINES:
        engine = Engine(EngineConfig(name), root)
        services = [service for service in engine.services.names() if service.startswith(f"{name}-")]
        state = engine.state()
        if state:
            print(
                f"{name}: master {state.master}, job endpoint {state.job_endpoint}, SDK workers: {' '.join(state.environment)}"
            )
            for job, job_state in sorted(jobs(state.job_endpoint).items()):
                print(f"  job {job}: {job_state}")
        else:
            print(f"{name}: down" + (f" (python -m engines down {name} stops what is left)" if services else ""))
        for service in services:
            running = engine.services.get(service)
            print(
                f"  {service}: "
                + (f"pid {running.pid} ports {running.ports or '-'} log {running.log}" if running else "stopped")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
