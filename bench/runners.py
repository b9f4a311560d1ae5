"""make bench-runners: the mine job on Spark and Flink against the FnApiRunner, taking turns, at
two input sizes, so that a job's fixed cost is told from its cost per page.

On the bench-datatrove input (generated WET pages in 16 languages, 2,500 to a file: 20,000 and
80,000 pages by default; the same reference models), each a fresh ``python -m ccnet_pipeline
mine`` process, 2 workers everywhere:
  - FnApiRunner: ``--direct_num_workers=2 --direct_running_mode=multi_processing``;
  - Spark: the standalone cluster of ``engines`` (2 one-core workers), process workers (each
    started by an executor through worker/boot.py) and LOOPBACK workers (the SDK harness inside
    the launcher);
  - Flink: the embedded Flink (``[local]``) and the standalone cluster (2 one-slot
    TaskManagers), parallelism 2, process workers.
The engines are started once, before the runs (a cluster is up before its jobs); each run's time
is the launcher's wall clock. Prints pages/s per core, the output's documents (all equal at one
size), and where a run's time went, from the engines' own logs: launcher (start to submission,
and after the job's end), job start (submission to the first task: the SparkContext or Flink job,
executors, jar shipping), tasks (first task to the job's end) and, on Spark, the executors' jar
fetching and the tasks' busy time. Ends with each run's fixed seconds per job and marginal
pages/s per core (the line through its best times at the sizes), and the core-hours of one
CommonCrawl snapshot at that marginal rate.
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

from bench.common import bench_wet, reference_models
from bench.vs_datatrove import LANGUAGES, written
from engines.engine import Engine, EngineConfig

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


PAGES_PER_SEGMENT = 2500  # every input size in WET files of the same size, as a dump grows in files


def fixed_and_marginal(seconds_by_size: Dict[int, float]) -> Tuple[float, float]:
    """The least-squares line through (pages, seconds): the seconds a job costs whatever its size,
    and its marginal pages/s on the machine's cores."""
    sizes = sorted(seconds_by_size)
    mean_n = sum(sizes) / len(sizes)
    mean_t = sum(seconds_by_size.values()) / len(sizes)
    slope = sum((n - mean_n) * (seconds_by_size[n] - mean_t) for n in sizes) / sum((n - mean_n) ** 2 for n in sizes)
    return mean_t - slope * mean_n, 1 / slope


RUNS = {  # key: the run's name and the engine it runs on
    "fnapi": ("FnApiRunner", None),
    "spark": ("Spark, process workers", "spark"),
    "spark-loopback": ("Spark, LOOPBACK workers", "spark"),
    "flink": ("Flink [local], process workers", "flink"),
    "flink-cluster": ("Flink cluster, process workers", "flink-cluster"),
}


def beam_args_of(key: str, engine: Optional[Engine]) -> List[str]:
    """The run's Beam flags (its engine up)."""
    if engine is None:
        return ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
    if key == "spark-loopback":
        return [*[a for a in engine.beam_args() if not a.startswith("--environment_")], "--environment_type=LOOPBACK"]
    return engine.beam_args()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,80000", help="pages per job, in WET files of 2,500 pages")
    parser.add_argument(
        "--runs",
        default="fnapi,spark,spark-loopback,flink,flink-cluster",
        help="which runs, comma-separated (default: all five)",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", default="out/bench-runners")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir).resolve()
    sizes = [int(size) for size in args.sizes.split(",")]
    inputs = {}
    for size in sizes:
        wet = workdir / f"wet-{size}"
        paths = bench_wet(str(wet), size, max(1, size // PAGES_PER_SEGMENT))
        inputs[size] = wet
        print(f"input: {len(paths)} WET files, {size} pages")
    lm_dir = workdir / "lm"
    reference_models(str(lm_dir), LANGUAGES, str(workdir / "reference"))
    langs = ",".join(LANGUAGES)
    print(f"languages {langs}")

    chosen = [key.strip() for key in args.runs.split(",")]
    unknown = set(chosen) - set(RUNS)
    if unknown:
        raise SystemExit(f"no run named {', '.join(sorted(unknown))}: choose among {', '.join(RUNS)}")
    assembled = ROOT / "out" / "engines"
    engines = {
        "spark": Engine(EngineConfig("spark"), root=workdir / "engines", assembled=assembled),
        "flink": Engine(EngineConfig("flink", master="[local]"), root=workdir / "engines", assembled=assembled),
        "flink-cluster": Engine(EngineConfig("flink"), root=workdir / "engines-flink-cluster", assembled=assembled),
    }
    engines = {name: engine for name, engine in engines.items() if name in {RUNS[key][1] for key in chosen}}
    started_engines = []
    try:
        for name, engine in engines.items():
            start = time.perf_counter()
            engine.up()
            started_engines.append(engine)
            print(f"{name} up in {time.perf_counter() - start:.1f} s")
        runs = {}
        for key in chosen:
            name, engine = RUNS[key][0], engines.get(RUNS[key][1])
            runs[name] = (beam_args_of(key, engine), engine)
        best: Dict[Tuple[str, int], float] = {}
        breakdowns: Dict[Tuple[str, int], str] = {}
        cpus: Dict[Tuple[str, int], Dict[str, float]] = {}
        print(f"\n{'run':44s} {'pages':>7s} {'seconds':>8s} {'pages/s/core':>12s} {'written':>8s}")
        for round_number in range(1, args.rounds + 1):
            for size in sizes:
                for name, (beam_args, engine) in runs.items():
                    output = workdir / "out" / re.sub(r"\W+", "-", name.lower())
                    subprocess.run(["rm", "-rf", str(output)], check=True)
                    logs = [LogTail(engine.services.get(s).log) for s in engine.state().services] if engine else []
                    command = [sys.executable, "-m", "ccnet_pipeline", "mine", "--input"]
                    command += [str(inputs[size] / "*.warc.wet.gz"), "--output", str(output), "--langs", langs]
                    command += ["--lm-dir", str(lm_dir), *beam_args]
                    cpu = CpuSampler(service_groups(engine))
                    started = time.time()
                    launcher = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
                    cpu.launcher = launcher.pid
                    if launcher.wait() != 0:
                        raise SystemExit(f"{name}: the mine job failed")
                    ended = time.time()
                    cpu_seconds = cpu.stop()
                    seconds, key = ended - started, (name, size)
                    if seconds < best.get(key, float("inf")):
                        best[key] = seconds
                        if engine:
                            lines = [line for log in logs for line in log.lines()]
                            events = (
                                spark_breakdown(engine, lines, started)
                                if engine.config.engine == "spark"
                                else flink_breakdown(lines)
                            )
                            breakdowns[key] = report(f"{name}, {size}", seconds, started, ended, events)
                        cpus[key] = cpu_seconds
                    label = f"{name}, round {round_number}"
                    rate = size / seconds / 2
                    print(f"{label:44s} {size:7d} {seconds:8.2f} {rate:12.0f} {written(str(output)):8d}", flush=True)
    finally:
        for engine in started_engines:
            engine.down()
    summarize(runs, sizes, best, breakdowns, cpus)
    return 0


def summarize(runs, sizes: List[int], best, breakdowns, cpus) -> None:
    print("\nbest runs, pages/s per core, and against the FnApiRunner's at the same size:")
    for name, size in best:
        rate = size / best[name, size] / 2
        against = f"  {best['FnApiRunner', size] / best[name, size]:5.2f}x" if ("FnApiRunner", size) in best else ""
        print(f"  {name:32s} {size:7d} {rate:8.0f}{against}")
    print("\nwhere the best runs' time went (the engines' logs):")
    for line in breakdowns.values():
        print(line)
    print("\nCPU seconds of the best runs, by process (SDK workers: the job's Python; JVMs: the engine):")
    for (name, size), seconds in cpus.items():
        parts = ", ".join(f"{kind} {value:5.1f}" for kind, value in sorted(seconds.items()))
        print(f"  {name:32s} {size:7d} {sum(seconds.values()):6.1f} in all: {parts}")
    if len(sizes) < 2:
        return
    print(
        "\nper job: fixed seconds and marginal pages/s per core (the line through the best runs' times), and the"
        " same for CPU seconds of all its processes; one snapshot's core-hours at the marginal rate:"
    )
    for name in runs:
        fixed, rate = fixed_and_marginal({size: best[name, size] for size in sizes})
        fixed_cpu, cpu_rate = fixed_and_marginal({size: sum(cpus[name, size].values()) for size in sizes})
        print(
            f"  {name:32s} wall: fixed {fixed:5.1f} s, {rate / 2:5.0f} pages/s per core;"
            f" CPU: fixed {fixed_cpu:5.1f} s, {1000 / cpu_rate:.2f} ms per page;"
            f" one snapshot ({SNAPSHOT_PAGES:.0e} pages) {SNAPSHOT_PAGES / (rate / 2) / 3600:,.0f} core-hours"
            f" ({SNAPSHOT_PAGES / cpu_rate / 3600:,.0f} CPU-hours)"
        )


if __name__ == "__main__":
    sys.exit(main())
