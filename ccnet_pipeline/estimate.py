"""``python -m ccnet_pipeline estimate``: what mining a whole input (a dump) will cost, before it
runs, from a few of its WET files mined here with the job's own config.

Two local runs on the FnApiRunner with one worker, each a fresh process: half the sample, then all
of it. The line through their CPU seconds separates a job's fixed cost (imports, models
loaded, the graph) from its cost per file, which scales to the whole input; sizes (download,
output, dedup entries) scale with the files' count. The sample's files are spread evenly over the
input's sorted list, and their spread in size gives the error."""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import resource
import shutil
import statistics
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import pyarrow.compute as pc
import pyarrow.parquet as pq

from ccnet_pipeline.config import MineConfig
from ccnet_pipeline.progress import file_sizes, size
from ccnet_pipeline.stats import JobStats
from ccnet_pipeline.steps.dedup import segment_hashes
from filters.dedup import summarize_segment
from filters.document import segment_names
from toolkit import storage
from toolkit.corpus import CorpusManifest

# The dedup shuffle carries 16 B per entry (a hash and its value) to the partitions, and back the
# removed lines' positions: at most half as much (docs/cluster.md, "Sizing one snapshot").
SHUFFLE_BYTES_PER_ENTRY = 16 * 1.5
RSS_UNIT = 1024  # ru_maxrss is in KiB on Linux


@dataclass(frozen=True)
class EstimateConfig:
    sample_segments: int = 8  # WET files mined here, spread evenly over the input's sorted list (at least 2)
    workers: int = 100  # machines of the cluster the wall-clock is given for
    cores_per_worker: int = 8  # an SDK worker per core
    fixed_seconds: float = 45.0  # an engine's start-up per job (make bench-runners, Spark standalone: ~45 s)
    workdir: str = "out/estimate"  # where the sample's runs write

    def __post_init__(self):
        if self.sample_segments < 2:
            raise ValueError(
                f"sample_segments must be >= 2 (one run of half the files, one of all), got {self.sample_segments}"
            )
        if self.workers < 1 or self.cores_per_worker < 1:
            raise ValueError("workers and cores_per_worker must be >= 1")
        if self.fixed_seconds < 0:
            raise ValueError(f"fixed_seconds must be >= 0, got {self.fixed_seconds}")


def spread(paths: Sequence[str], count: int) -> List[str]:
    """``count`` of the sorted ``paths``, evenly spread over the list (the middle of each of
    ``count`` equal stretches): a dump's files are in crawl order, which may differ along it."""
    count = min(count, len(paths))
    return [paths[int((i + 0.5) * len(paths) / count)] for i in range(count)]


@dataclass(frozen=True)
class SampleRun:
    """What one local run of the job on some files measured."""

    files: int
    cpu_seconds: float  # the run's process and its children, user + system
    peak_bytes: int  # the largest resident memory of the run's processes
    stats: JobStats
    text_bytes: Dict[Tuple[str, str], int]  # UTF-8 bytes of text per (language, bucket)
    output_bytes: int  # the shard files as written


def _run_job(config: MineConfig, segments: Sequence[str]) -> None:
    from ccnet_pipeline.pipeline import run

    run(config, segments, [])


def mine_sample(config: MineConfig, segments: Sequence[str]) -> SampleRun:
    """The job on ``segments`` into ``config.output``, in a fresh process (as a worker pays its
    imports and models), measured."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = multiprocessing.get_context("spawn").Process(target=_run_job, args=(config, list(segments)))
    process.start()
    process.join()
    if process.exitcode != 0:
        raise RuntimeError(f"the sample's job failed (exit code {process.exitcode})")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    manifest = CorpusManifest.read(config.output)
    text_bytes: Dict[Tuple[str, str], int] = {}
    output_bytes = 0
    for entry in manifest.files:
        path = manifest.folder.path(entry.path)
        output_bytes += os.path.getsize(path)
        lengths = pc.binary_length(pq.read_table(path, columns=["raw_content"])["raw_content"])
        key = (entry.language, entry.bucket)
        text_bytes[key] = text_bytes.get(key, 0) + pc.sum(lengths).as_py()
    return SampleRun(
        files=len(segments),
        cpu_seconds=(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        peak_bytes=after.ru_maxrss * RSS_UNIT,
        stats=JobStats.read(config.layout.stats),
        text_bytes=text_bytes,
        output_bytes=output_bytes,
    )


def dedup_entries(config: MineConfig, segments: Sequence[str]) -> int:
    """The dedup shuffle's entries of ``segments``: each one's distinct line hashes, summed, as
    the job's ChoosePartitions counts them."""
    if config.dedup.mode == "none":
        return 0
    total = 0
    for path, name in zip(segments, segment_names(segments)):
        hashes, positions = segment_hashes(config.read, path, name, config.dedup.line_keys)
        total += len(summarize_segment(hashes, positions, config.dedup.mode)[0])
    return total


@dataclass(frozen=True)
class Estimate:
    """The whole input's cost, scaled from the sample."""

    segments: int
    sample: List[str]
    fixed_cpu_seconds: float
    cpu_seconds_per_segment: float
    core_hours: float
    wall_hours: float
    core_memory_bytes: int  # one SDK worker: the smaller run's peak, plus a dedup partition
    partition_bytes: int
    hash_partitions: int
    shuffle_bytes: float
    output_bytes: float
    output_files: int
    download_bytes: float
    documents: float
    relative_error: float  # two standard errors of the mean file size, over the sample
    options: EstimateConfig

    def lines(self) -> List[str]:
        error, options = f"±{self.relative_error:.0%}", self.options
        return [
            f"estimated from {len(self.sample)} of {self.segments} WET files, mined here (FnApiRunner, 1 worker):",
            f"  CPU                {_figure(self.core_hours)} core-hours {error}"
            f" ({self.cpu_seconds_per_segment:.1f} CPU-s per file; {self.fixed_cpu_seconds:.1f} s fixed per job)",
            f"  wall-clock         {_figure(self.wall_hours)} h on {options.workers} workers x"
            f" {options.cores_per_worker} cores (an SDK worker per core, + {options.fixed_seconds:.0f} s start-up)",
            f"  memory per worker  {size(self.core_memory_bytes * options.cores_per_worker)}:"
            f" {size(self.core_memory_bytes)} per core (the smaller run's peak, and a dedup partition of"
            f" {size(self.partition_bytes)})",
            f"  dedup partitions   {self.hash_partitions:,}",
            f"  shuffle            {size(self.shuffle_bytes)} {error}",
            f"  download           {size(self.download_bytes)} {error}",
            f"  output             {size(self.output_bytes)} in {self.output_files:,} files {error}"
            f" ({_figure(self.documents)} documents read)",
            "assumptions: an engine's cost per file is the FnApiRunner's (make bench-runners, 2026-12-07: Spark's"
            " and Flink's marginal CPU per page with PROCESS workers, 0.86-1.06x of it); files cost in proportion"
            " to their number (the error is the sample's spread in file size); text unlike the sample's costs"
            " differently",
        ]


def _figure(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def estimate(config: MineConfig, sample: Sequence[str], segments: int, options: EstimateConfig) -> Estimate:
    """Mine the ``sample`` (local files, ``spread`` over an input of ``segments`` files) here,
    twice (its first file, then all of it), and scale to the whole input."""
    if len(sample) < 2:
        raise ValueError("an estimate needs a sample of at least 2 WET files")
    runs = []
    for name, files in (("half", sample[: len(sample) // 2]), ("sample", sample)):
        output = storage.join(storage.absolute(options.workdir), name)
        shutil.rmtree(output, ignore_errors=True)
        runs.append(mine_sample(dataclasses.replace(config, output=output), files))
    half, whole = runs
    per_segment = max(0.0, (whole.cpu_seconds - half.cpu_seconds) / (whole.files - half.files))
    fixed = max(0.0, half.cpu_seconds - per_segment * half.files)
    scale = segments / len(sample)
    sizes = file_sizes(sample)
    error = 2 * statistics.stdev(sizes) / statistics.mean(sizes) / math.sqrt(len(sample))
    error *= math.sqrt(max(0.0, 1 - len(sample) / segments))  # none when the sample is the whole input
    entries = dedup_entries(config, sample) * scale
    cores = options.workers * options.cores_per_worker
    return Estimate(
        segments=segments,
        sample=list(sample),
        fixed_cpu_seconds=fixed,
        cpu_seconds_per_segment=per_segment,
        core_hours=(per_segment * segments + fixed) / 3600,
        wall_hours=(per_segment * math.ceil(segments / cores) + fixed + options.fixed_seconds) / 3600,
        core_memory_bytes=half.peak_bytes + config.dedup.memory_per_worker,
        partition_bytes=config.dedup.memory_per_worker,
        hash_partitions=config.dedup.partitions(int(entries)),
        shuffle_bytes=entries * SHUFFLE_BYTES_PER_ENTRY,
        output_bytes=whole.output_bytes * scale,
        output_files=sum(
            max(1, math.ceil(text * scale / config.target_shard_size)) for text in whole.text_bytes.values() if text
        ),
        download_bytes=sum(sizes) * scale,
        documents=whole.stats.documents_read * scale,
        relative_error=error,
        options=options,
    )
