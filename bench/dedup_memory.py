"""Memory of one dedup worker as the input grows, and the mine job's file count (make bench-memory).

For 4, 16 and 64 generated segments: every line is hashed as the job's pass 1 does, each
segment's summary (a distinct hash once) is split into the job's hash partitions, and for every
partition the peak memory of ``find_duplicated_hashes`` (the FindDuplicates step: the
partition's entries plus its working copies) is measured with tracemalloc, which numpy reports
its arrays to. Two ways of choosing the
partitions side by side: automatic (``--dedup-memory-per-worker``, scaled down here so that
these small inputs need several partitions) and a fixed count (the old default of 16). Then the
whole job runs on the 64 segments and the files it writes are counted, against the one file per
segment, language and bucket of the old layout.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc

import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import mine_quietly  # noqa: E402
from ccnet_pipeline.sample import SampleConfig, generate_sample  # noqa: E402
from ccnet_pipeline.transforms import segment_hashes  # noqa: E402
from ccnet_pipeline.wet import ReadConfig  # noqa: E402
from filters.dedup import (  # noqa: E402
    BYTES_PER_ENTRY,
    DedupConfig,
    find_duplicated_hashes,
    split_by_partition,
    summarize_segment,
)
from toolkit.cli import parse_size  # noqa: E402


def partition_peaks(summaries, partitions: int):
    """Per partition: (entries, peak bytes of find_duplicated_hashes, its input included)."""
    split = [split_by_partition(hashes, values, partitions) for hashes, values in summaries]
    peaks = []
    for partition in range(partitions):
        parts = [(index, *segment[partition]) for index, segment in enumerate(split)]
        entries = sum(len(hashes) for _, hashes, _ in parts)
        given = sum(hashes.nbytes + values.nbytes for _, hashes, values in parts)
        tracemalloc.start()
        find_duplicated_hashes(parts, "ccnet")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        peaks.append((entries, given + peak))
    return peaks


def mib(value: float) -> str:
    return f"{value / 2**20:.2f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs-per-segment", type=int, default=300)
    parser.add_argument("--memory-per-worker", default="2MiB", help="the automatic partitioning's target")
    parser.add_argument("--fixed-partitions", type=int, default=16)
    parser.add_argument("--work", default=None, help="folder for the generated input (default: a temp dir)")
    args = parser.parse_args(argv)
    work = args.work or tempfile.mkdtemp(prefix="bench-memory-")
    sample = os.path.join(work, "wet")
    start = time.perf_counter()
    paths = generate_sample(sample, SampleConfig(segments=64, docs_per_segment=args.docs_per_segment, seed=3))
    print(f"generated 64 segments of {args.docs_per_segment} pages in {time.perf_counter() - start:.0f} s")
    hashed = [segment_hashes(ReadConfig(), path, path, DedupConfig().line_keys) for path in sorted(paths)]
    summaries = [summarize_segment(hashes, positions, "ccnet") for hashes, positions in hashed]
    automatic = DedupConfig(memory_per_worker=parse_size(args.memory_per_worker))
    print(
        f"\nper-worker memory of one hash partition (FindDuplicates), {BYTES_PER_ENTRY} B per entry budgeted;"
        f" automatic: --dedup-memory-per-worker {args.memory_per_worker}"
    )
    print(
        f"{'segments':>8} {'lines':>10} {'entries':>10} | {'auto parts':>10} {'max entries':>11} {'max MiB':>8}"
        f" {'B/entry':>7} | {'fixed':>5} {'max entries':>11} {'max MiB':>8}"
    )
    for count in (4, 16, 64):
        lines = sum(len(hashes) for hashes, _ in hashed[:count])
        entries = sum(len(hashes) for hashes, _ in summaries[:count])
        partitions = automatic.partitions(entries)
        auto_entries, auto_peak = max(partition_peaks(summaries[:count], partitions), key=lambda p: p[1])
        fixed_entries, fixed_peak = max(partition_peaks(summaries[:count], args.fixed_partitions), key=lambda p: p[1])
        print(
            f"{count:>8} {lines:>10,} {entries:>10,} | {partitions:>10} {auto_entries:>11,} {mib(auto_peak):>8}"
            f" {auto_peak / auto_entries:>7.1f} | {args.fixed_partitions:>5} {fixed_entries:>11,} {mib(fixed_peak):>8}"
        )
    output = os.path.join(work, "corpus")
    start = time.perf_counter()
    mine_quietly(sample, output, f"--dedup-memory-per-worker={args.memory_per_worker}")
    seconds = time.perf_counter() - start
    files = [os.path.join(d, f) for d, _, names in os.walk(output) for f in names if f.endswith(".parquet")]
    old_layout = set()  # one file per segment, language and bucket
    for path in files:
        table = pq.read_table(path, columns=["cc_segment", "language", "bucket"])
        old_layout.update(zip(*(table.column(c).to_pylist() for c in ("cc_segment", "language", "bucket"))))
    print(
        f"\nmine on the 64 segments ({seconds:.0f} s): {len(files)} Parquet files at the default"
        f" --target-shard-size; the old layout (a file per segment, language and bucket) wrote {len(old_layout)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
