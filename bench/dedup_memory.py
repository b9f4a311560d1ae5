"""Memory of one dedup worker as the input grows, for line dedup and near-dedup, and the mine
job's file count (make bench-memory).

For 4, 16 and 64 generated segments: every line is hashed as the job's pass 1 does, each
segment's summary (a distinct hash once) is split into the job's hash partitions, and for every
partition the peak memory of ``find_duplicated_hashes`` (the FindDuplicates step: the
partition's entries plus its working copies) is measured with tracemalloc, which numpy reports
its arrays to. Two ways of choosing the
partitions side by side: automatic (``--dedup-memory-per-worker``, scaled down here so that
these small inputs need several partitions) and a fixed count (the old default of 16). Then the
whole job runs on the 64 segments and the files it writes are counted, against the one file per
segment, language and bucket of the old layout.

Near-dedup: the same pages' MinHash band keys go through the clustering's steps as the mine job
runs them (``filters.minhash_clusters.run_in_memory``: candidates, the default large-star / small-star rounds,
labels), each call of each phase measured the same way; the largest is printed, once on the
pages as generated and once with a tenth of them replaced by one template whose pages differ in
a name per line (one giant cluster: a hub node linked to every one of its pages). The reference,
measured in the same run: the same steps given one partition, as one worker holding the graph.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import string
import sys
import tempfile
import time
import tracemalloc

import numpy as np
import pyarrow.parquet as pq

from bench.common import mine_quietly  # noqa: E402
from ccnet_pipeline.samples.embedded import SampleConfig, generate_pages, generate_sample  # noqa: E402
from ccnet_pipeline.steps.dedup import segment_hashes  # noqa: E402
from ccnet_pipeline.steps.near_dedup import ROUNDS_CHANGED, STAGE, round_counters  # noqa: E402
from ccnet_pipeline.wet import ReadConfig  # noqa: E402
from filters import minhash_clusters  # noqa: E402
from filters.dedup import (  # noqa: E402
    BYTES_PER_ENTRY,
    DedupConfig,
    find_duplicated_hashes,
    split_by_partition,
    summarize_segment,
)
from filters.minhash import MinHashConfig, band_keys, signatures  # noqa: E402
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


def templated(pages_by_segment, share: float, seed: int = 0):
    """The pages with every page at a multiple of 1 / ``share`` replaced by one template: the
    longest page of the first segment, each of its lines with a name of its own in front (so that
    no line repeats exactly and line dedup leaves them)."""
    rng = random.Random(seed)
    template = max(pages_by_segment[0], key=lambda page: len(page.text))
    step, number, result = round(1 / share), 0, []
    for pages in pages_by_segment:
        result.append([])
        for page in pages:
            if number % step == 0:
                lines = [
                    f"{''.join(rng.choices(string.ascii_lowercase, k=9))} {line}" for line in template.text.split("\n")
                ]
                page = dataclasses.replace(page, text="\n".join(lines), language=template.language)
            result[-1].append(page)
            number += 1
    return result


def near_dedup_peaks(pages_by_segment, memory_per_worker: int):
    """(sizes and partitions, documents clustered, the rounds that changed the graph (of the
    default cap), {phase: (largest call's peak bytes, its entries)}) of the clustering as the
    job runs it."""
    config = MinHashConfig()
    keys = {}
    for index, pages in enumerate(pages_by_segment):
        languages = [page.language or "en" for page in pages]
        sigs = signatures([page.text for page in pages], languages, config)
        keys[index] = (minhash_clusters.document_id(index, np.arange(len(pages))), band_keys(sigs, languages, config))
    largest = {}

    def measured(function, *args):
        arrays = list(minhash_clusters.arrays_given(args))
        tracemalloc.start()
        result = function(*args)
        peak = tracemalloc.get_traced_memory()[1] + sum(a.nbytes for a in arrays)
        tracemalloc.stop()
        largest[function.__name__] = max(largest.get(function.__name__, (0, 0)), (peak, sum(a.size for a in arrays)))
        return result

    labels, changes, sizes = minhash_clusters.run_in_memory(keys, memory_per_worker, config.rounds, measured)
    clustered = sum(len(records) for parts in labels.values() for records, _ in parts)
    names = [f"{STAGE}/changes_{step // 2:02d}" for step in range(len(changes))]  # as the job names each round's
    return sizes, clustered, round_counters(zip(names, changes), config.rounds)[ROUNDS_CHANGED], largest


def mib(value: float) -> str:
    return f"{value / 2**20:.2f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs-per-segment", type=int, default=300)
    parser.add_argument("--memory-per-worker", default="2MiB", help="the automatic partitioning's target")
    parser.add_argument("--fixed-partitions", type=int, default=16)
    parser.add_argument("--near-memory-per-worker", default="256KiB", help="near-dedup's target (scaled down)")
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
    pages = generate_pages(SampleConfig(segments=64, docs_per_segment=args.docs_per_segment, seed=3))
    budget = parse_size(args.near_memory_per_worker)
    print(
        f"\nnear-dedup clustering: the largest call of each phase (peak MiB, inputs included; entries given),"
        f" --dedup-memory-per-worker {args.near_memory_per_worker};\nreference: the same steps in one partition"
        f" (one worker holding the graph, as datatrove's union-find does)"
    )
    print(
        f"{'segments':>8} {'input':>9} {'keys':>8} {'edges':>7} {'parts':>6} {'clustered':>9} {'rounds':>6} |"
        f" {'contribute':>15} {'answer':>15} {'finish':>15} | {'one worker':>10}"
    )
    for name, variant in (("as made", pages), ("template", templated(pages, 0.1))):
        for count in (4, 16, 64):
            sizes, clustered, rounds, largest = near_dedup_peaks(variant[:count], budget)
            reference = max(peak for peak, _ in near_dedup_peaks(variant[:count], 2**62)[3].values())
            cells = " ".join(f"{mib(largest[p][0]):>6} {largest[p][1]:>8,}" for p in ("contribute", "answer", "finish"))
            parts = f"{sizes['key_partitions']}/{sizes['edge_partitions']}"
            print(
                f"{count:>8} {name:>9} {sizes['key_entries']:>8,} {sizes['edges']:>7,} {parts:>6}"
                f" {clustered:>9,} {rounds:>6} | {cells} | {mib(reference):>10}"
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
