"""make bench-runners: the mine job on Spark and Flink against the FnApiRunner, taking turns.

On the bench-datatrove input (20,000 generated WET pages in 16 languages, 8 files; the same
reference models), each a fresh ``python -m ccnet_pipeline mine`` process, 2 workers everywhere:
  - FnApiRunner: ``--direct_num_workers=2 --direct_running_mode=multi_processing``;
  - Spark: the standalone cluster of ``engines`` (2 one-core workers), process workers (each
    started by an executor through worker/boot.py) and LOOPBACK workers (the SDK harness inside
    the launcher);
  - Flink: the embedded Flink (``[local]``) and the standalone cluster (2 one-slot
    TaskManagers), parallelism 2, process workers.
The engines are started once, before the runs (a cluster is up before its jobs); each run's time
is the launcher's wall clock. Prints documents/s per core, the output's documents (all equal),
and where a run's time went, from the engines' own logs: launcher (start to submission, and
after the job's end), job start (submission to the first task: the SparkContext or Flink job,
executors, jar shipping), tasks (first task to the job's end) and, on Spark, the executors'
jar fetching and the tasks' busy time. Ends with the core-hours of one CommonCrawl snapshot at
the best rate.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from bench.common import bench_wet, input_arguments, reference_models
from bench.vs_datatrove import LANGUAGES, written
from engines import Engine, EngineConfig

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT_PAGES = 3e9  # WET records of one CommonCrawl snapshot (2024)


def stamp(line: str) -> Optional[float]:
    match = re.search(r"(\d\d/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?)", line[:40])
    if not match:
        return None
    text = match.group(1)
    layout = "%y/%m/%d %H:%M:%S.%f" if "." in text else "%y/%m/%d %H:%M:%S"
    return datetime.datetime.strptime(text, layout).timestamp()


def times(lines: List[str], pattern: str) -> List[float]:
    """The timestamps of the lines that match ``pattern`` (logs of several processes mixed)."""
    compiled = re.compile(pattern)
    return [t for line in lines if compiled.search(line) for t in [stamp(line)] if t is not None]


def first(lines: List[str], pattern: str) -> Optional[float]:
    return min(times(lines, pattern), default=None)


def last(lines: List[str], pattern: str) -> Optional[float]:
    return max(times(lines, pattern), default=None)


class LogTail:
    """The lines a log gained since this was made."""

    def __init__(self, path: str):
        self.path = path
        self.offset = os.path.getsize(path) if os.path.exists(path) else 0

    def lines(self) -> List[str]:
        with open(self.path, errors="replace") as log:
            log.seek(self.offset)
            return log.read().splitlines()


class CpuSampler:
    """The CPU seconds each kind of process spent during a run, from /proc every 0.25 s: the
    launcher and its children, and in the engine's process groups the JVMs (the job server,
    Spark's master, workers and executors, Flink's JobManager and TaskManagers) and the SDK
    workers they start (Python). A process that ends between two samples loses at most its
    last 0.25 s."""

    def __init__(self, groups):
        self.groups = set(groups)  # the engine's process groups
        self.launcher: Optional[int] = None
        self.start = self.sample()
        self.latest: Dict[int, Tuple[str, float]] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    @staticmethod
    def sample() -> Dict[int, Tuple[str, int, int, float]]:
        """pid -> (command name, parent, process group, CPU seconds so far)."""
        ticks = os.sysconf("SC_CLK_TCK")
        found = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            name, fields = text[text.index("(") + 1 : text.rindex(")")], text.rsplit(")", 1)[1].split()
            found[int(stat.parent.name)] = (
                name,
                int(fields[1]),
                int(fields[2]),
                (int(fields[11]) + int(fields[12])) / ticks,
            )
        return found

    def kind(self, pid: int, processes) -> Optional[str]:
        name, _, group, _ = processes[pid]
        ancestor = pid
        while ancestor in processes and ancestor > 1:
            if ancestor == self.launcher:
                return "launcher"
            ancestor = processes[ancestor][1]
        if group in self.groups:
            return "JVMs" if name == "java" else "SDK workers"
        return None

    def run(self) -> None:
        while not self.stopped.wait(0.25):
            processes = self.sample()
            for pid, (*_, seconds) in processes.items():
                kind = self.kind(pid, processes)
                if kind:
                    self.latest[pid] = (kind, seconds - self.start.get(pid, (None, 0, 0, 0.0))[3])

    def stop(self) -> Dict[str, float]:
        self.stopped.set()
        self.thread.join()
        totals: Dict[str, float] = {}
        for kind, seconds in self.latest.values():
            totals[kind] = totals.get(kind, 0.0) + seconds
        return totals


def service_groups(engine: Optional[Engine]) -> List[int]:
    """The process groups of the engine's services (each leads its own)."""
    return [engine.services.get(name).pid for name in engine.state().services] if engine else []


def spark_breakdown(engine: Engine, server: List[str], since: float) -> Dict[str, float]:
    """Events of the run in the engine's logs (``server``: the lines they gained), the tasks'
    busy time, and the longest jar fetch of an executor started since ``since``."""
    events = {
        "submitted": first(server, r"Invoking job"),
        "first task": first(server, r"Starting task "),
        "job end": last(server, r"SparkPipelineRunner: Job .* finished"),
    }
    busy = sum(int(m.group(1)) for line in server for m in [re.search(r"Finished task .* in (\d+) ms", line)] if m)
    fetch = []
    for stderr in (engine.root / "spark-work").glob("*/app-*/*/stderr"):
        if stderr.stat().st_mtime < since:
            continue
        lines = stderr.read_text(errors="replace").splitlines()
        start, end = first(lines, r"Fetching spark://"), last(lines, r"Adding file:.* to class loader")
        if start and end:
            fetch.append(end - start)
    return {**events, "busy": busy / 1000, "jar fetch": max(fetch, default=0.0)}


def flink_breakdown(lines: List[str]) -> Dict[str, float]:
    return {
        "submitted": first(lines, r"Starting job invocation"),
        "first task": first(lines, r"switched from INITIALIZING to RUNNING"),
        "job end": last(lines, r"switched from state RUNNING to FINISHED"),
    }


def report(name: str, seconds: float, started: float, ended: float, events: Dict[str, float]) -> str:
    submitted, first_task, end = events.get("submitted"), events.get("first task"), events.get("job end")
    if not (submitted and first_task and end):
        return f"{name}: events not found in the logs"
    parts = [
        f"launcher {submitted - started + ended - end:5.1f} s",
        f"job start {first_task - submitted:5.1f} s",
        f"tasks {end - first_task:5.1f} s",
    ]
    if "busy" in events:
        parts.append(f"task busy {events['busy']:5.1f} s ({events['busy'] / 2 / (end - first_task):.0%} of 2 cores)")
        parts.append(f"jar fetch {events['jar fetch']:4.1f} s")
    return f"  {name:28s} " + ", ".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    input_arguments(parser, "out/bench-runners")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir).resolve()
    wet = workdir / "wet"
    paths = bench_wet(str(wet), args.documents, args.segments)
    lm_dir = workdir / "lm"
    reference_models(str(lm_dir), LANGUAGES, str(workdir / "reference"))
    langs = ",".join(LANGUAGES)
    print(f"input: {len(paths)} WET files, {args.documents} pages, languages {langs}")

    engines = {
        "spark": Engine(EngineConfig("spark"), root=workdir / "engines", assembled=ROOT / "out" / "engines"),
        "flink": Engine(
            EngineConfig("flink", master="[local]"), root=workdir / "engines", assembled=ROOT / "out" / "engines"
        ),
    }
    cluster = Engine(EngineConfig("flink"), root=workdir / "engines-flink-cluster", assembled=ROOT / "out" / "engines")
    started_engines = []
    try:
        for name, engine in [*engines.items(), ("flink cluster", cluster)]:
            start = time.perf_counter()
            engine.up()
            started_engines.append(engine)
            print(f"{name} up in {time.perf_counter() - start:.1f} s")
        loopback = [a for a in engines["spark"].beam_args() if not a.startswith("--environment_")]
        runs = {
            "FnApiRunner": (["--direct_num_workers=2", "--direct_running_mode=multi_processing"], None),
            "Spark, process workers": (engines["spark"].beam_args(), engines["spark"]),
            "Spark, LOOPBACK workers": ([*loopback, "--environment_type=LOOPBACK"], engines["spark"]),
            "Flink [local], process workers": (engines["flink"].beam_args(), engines["flink"]),
            "Flink cluster, process workers": (cluster.beam_args(), cluster),
        }
        best: Dict[str, float] = {}
        breakdowns: Dict[str, str] = {}
        cpus: Dict[str, Dict[str, float]] = {}
        print(f"\n{'run':44s} {'seconds':>8s} {'docs/s/core':>12s} {'written':>8s}")
        for round_number in range(1, args.rounds + 1):
            for name, (beam_args, engine) in runs.items():
                output = workdir / "out" / re.sub(r"\W+", "-", name.lower())
                subprocess.run(["rm", "-rf", str(output)], check=True)
                logs = [LogTail(engine.services.get(name).log) for name in engine.state().services] if engine else []
                command = [sys.executable, "-m", "ccnet_pipeline", "mine", "--input", str(wet / "*.warc.wet.gz")]
                command += ["--output", str(output), "--langs", langs, "--lm-dir", str(lm_dir), *beam_args]
                cpu = CpuSampler(service_groups(engine))
                started = time.time()
                launcher = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
                cpu.launcher = launcher.pid
                if launcher.wait() != 0:
                    raise SystemExit(f"{name}: the mine job failed")
                ended = time.time()
                cpu_seconds = cpu.stop()
                seconds = ended - started
                if seconds < best.get(name, float("inf")):
                    best[name] = seconds
                    if engine:
                        lines = [line for log in logs for line in log.lines()]
                        events = (
                            spark_breakdown(engine, lines, started)
                            if engine.config.engine == "spark"
                            else flink_breakdown(lines)
                        )
                        breakdowns[name] = report(name, seconds, started, ended, events)
                    cpus[name] = cpu_seconds
                label = f"{name}, round {round_number}"
                rate = args.documents / seconds / 2
                print(f"{label:44s} {seconds:8.2f} {rate:12.0f} {written(str(output)):8d}", flush=True)
    finally:
        for engine in started_engines:
            engine.down()
    print("\nbest runs, documents/s per core, and against the FnApiRunner's:")
    for name, seconds in best.items():
        rate = args.documents / seconds / 2
        print(f"  {name:32s} {rate:8.0f}  {best['FnApiRunner'] / seconds:5.2f}x")
    print("\nwhere the best runs' time went (the engines' logs):")
    for line in breakdowns.values():
        print(line)
    print("\nCPU seconds of the best runs, by process (SDK workers: the job's Python; JVMs: the engine):")
    for name, seconds in cpus.items():
        parts = ", ".join(f"{kind} {value:5.1f}" for kind, value in sorted(seconds.items()))
        print(f"  {name:32s} {sum(seconds.values()):6.1f} in all: {parts}")
    engine_rates = {name: args.documents / seconds / 2 for name, seconds in best.items() if name != "FnApiRunner"}
    name, rate = max(engine_rates.items(), key=lambda item: item[1])
    print(
        f"\none snapshot ({SNAPSHOT_PAGES:.0e} pages) at the best engine rate ({name}, {rate:.0f} pages/s per core): "
        f"{SNAPSHOT_PAGES / rate / 3600:,.0f} core-hours"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
