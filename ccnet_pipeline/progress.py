"""Progress of a running job, on every runner: workers write how far each input file is read,
the driver reads it back and prints one line at a time.

A worker reading a segment rewrites ``OUT/_work/progress/<pass>-NNNNN.json`` (bytes and documents
read so far, done or not) every few seconds and once at the end: a file on the output's own file
system reaches the driver from any runner (Beam's FnApiRunner, Flink, Spark, Dataflow), where
Beam's counters reach it only when the job ends. The driver sums them: files read, bytes and
documents per second, and the time left for the pass, from the input files' sizes; a file that
has not moved for ``STALL_SECONDS`` is named, so that a stuck worker does not pass for slow work.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from toolkit import storage
from toolkit.corpus import Layout

WRITE_SECONDS = 5.0  # how often a worker rewrites a segment's progress while reading it
REPORT_SECONDS = 15.0  # how often the driver prints a line, when something changed
STALL_SECONDS = 120.0  # a file read for longer without a byte more is named as stalled


class SegmentProgress:
    """One segment's progress through one pass, written for the driver (``update`` as records
    are read, ``finish`` at the end)."""

    def __init__(self, layout: Layout, pass_name: str, index: int, clock: Callable[[], float] = time.time):
        self.path = layout.progress(pass_name, index)
        self.clock = clock
        self.started = clock()
        self.written = float("-inf")
        self.bytes = self.documents = 0

    def update(self, bytes_read: int, documents: int) -> None:
        self.bytes, self.documents = bytes_read, documents
        if self.clock() - self.written >= WRITE_SECONDS:
            self.write(done=False)

    def finish(self) -> None:
        self.write(done=True)

    def write(self, done: bool) -> None:
        self.written = self.clock()
        record = {"bytes": self.bytes, "documents": self.documents, "done": done}
        storage.write_text(self.path, json.dumps({**record, "started": self.started, "updated": self.written}))


@dataclass
class PassState:
    """What the progress files of one pass add up to."""

    files: int = 0  # finished
    bytes: int = 0
    documents: int = 0
    started: Optional[float] = None  # the earliest start of a file of the pass
    updated: float = 0.0  # the latest progress of a file of the pass
    stalled: Tuple[Tuple[int, int], ...] = ()  # (segment index, seconds without progress)


def read_passes(layout: Layout, cache: Dict[str, Dict], now: float, wanted: Dict[str, set]) -> Dict[str, PassState]:
    """The state of each pass from the progress files of the files it reads this run (``wanted``:
    pass name -> file indexes; a file an earlier run finished is not this run's); ``cache`` keeps
    the finished ones, which no longer change, so that each poll reads only the files in flight."""
    passes: Dict[str, PassState] = {}
    for path in storage.match(layout.progress_files):
        pass_name, index = Layout.progress_of(path)
        if index not in wanted.get(pass_name, ()):
            continue
        name = path.rsplit("/", 1)[-1]  # the cache's key
        record = cache.get(name)
        if record is None:
            try:
                record = storage.read_json(path)
            except (OSError, ValueError):  # replaced while read: next time
                continue
            if record["done"]:
                cache[name] = record
        state = passes.setdefault(pass_name, PassState())
        state.files += record["done"]
        state.bytes += record["bytes"]
        state.documents += record["documents"]
        state.started = min(state.started or record["started"], record["started"])
        state.updated = max(state.updated, record["updated"])
        if not record["done"] and now - record["updated"] >= STALL_SECONDS:
            state.stalled += ((index, int(now - record["updated"])),)
    return passes


def file_sizes(paths: Sequence[str]) -> List[int]:
    """The size of each input file as stored (what the progress files count); 0 when unknown."""
    sizes = []
    for path in paths:
        try:
            if storage.is_remote(path):
                from apache_beam.io.filesystems import FileSystems

                sizes.append(sum(m.size_in_bytes for m in FileSystems.match([path])[0].metadata_list))
            else:
                sizes.append(os.path.getsize(path) if os.path.isfile(path) else 0)
        except OSError:
            sizes.append(0)
    return sizes


def describe(verb: str, state: PassState, files: int, total_bytes: int, now: float) -> str:
    """``hashing 12/56 files, 410 MB of 1.84 GB (30.2 MB/s), 140,120 documents (10,204/s), ETA 44s``:
    rates over the pass so far (until its last file finished, once all have)."""
    running = state.files < files
    seconds = max((now if running else state.updated) - (state.started or now), 1e-3)
    rate = state.bytes / seconds
    line = (
        f"{verb} {state.files}/{files} files, {size(state.bytes)} of {size(total_bytes)} ({size(rate)}/s),"
        f" {state.documents:,} documents ({state.documents / seconds:,.0f}/s)"
    )
    if running and rate > 0:
        line += f", ETA {clock_time(max(total_bytes - state.bytes, 0) / rate)}"
    return line


def size(count: float) -> str:
    """Bytes for people: 512 B, 8.3 MB, 1.84 GB (powers of 1000)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.{1 if count < 100 * scale else 0}f} {unit}"
    return f"{count:.0f} B"


def clock_time(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


@dataclass(frozen=True)
class Pass:
    """A pass of a job over some of its input files: its name in the progress files, the verb
    its line starts with, and the indexes of the files it reads."""

    name: str
    verb: str
    indexes: Tuple[int, ...]


def progress_lines(
    layout: Layout, segments: Sequence[str], passes: Sequence[Pass], sizes: Sequence[int], cache: Dict, now: float
) -> Tuple[Tuple, str, Dict[int, str]]:
    """What the progress files say: the counts (for telling whether anything moved), the line
    (each pass as far as it got) and, by segment index, a line for each stalled file."""
    states = read_passes(layout, cache, now, {p.name: set(p.indexes) for p in passes})
    ran = [(p, states[p.name]) for p in passes if p.name in states]
    counts = tuple((p.name, state.files, state.bytes, state.documents) for p, state in ran)
    line = "; ".join(describe(p.verb, state, len(p.indexes), sum(sizes[i] for i in p.indexes), now) for p, state in ran)
    stalled = {
        index: f"no progress on {segments[index]} for {clock_time(idle)}"
        for state in states.values()
        for index, idle in state.stalled
    }
    return counts, line, stalled


@contextlib.contextmanager
def reporting(
    layout: Layout,
    segments: Sequence[str],
    passes: Sequence[Pass],
    count_commits: bool = False,
    seconds: float = REPORT_SECONDS,
    prefix: str = "mine",
) -> Iterator[None]:
    """While the block runs, every ``seconds`` and once at its end, a line on stderr when the
    job moved: each of ``passes`` over the input files ``segments`` as far as it got and, with
    ``count_commits``, the segments committed (by this run or an earlier one); and once a line
    for each file that stalled. Only the driver reads; the job never waits for it."""
    stop, started = threading.Event(), time.monotonic()

    def say(message: str) -> None:
        print(f"{prefix}: {message}", file=sys.stderr, flush=True)

    def report() -> None:
        sizes, cache, last, warned = file_sizes(segments), {}, None, set()
        finished = False
        while not finished:  # a last line once the block is done
            finished = stop.wait(seconds)
            try:
                counts, line, stalled = progress_lines(layout, segments, passes, sizes, cache, time.time())
                if count_commits:
                    done = len(storage.match(layout.markers))
                    counts += (done,)
                    line = "; ".join(filter(None, [line, f"{done}/{len(segments)} segments committed"]))
            except OSError:  # a listing that failed: try again next time
                continue
            if counts != last:
                say(f"{line or 'starting'} ({clock_time(time.monotonic() - started)})")
                last = counts
            for index in stalled.keys() - warned:
                say(stalled[index])
            warned = set(stalled)

    reporter = threading.Thread(target=report, name="progress", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        stop.set()
        reporter.join()
