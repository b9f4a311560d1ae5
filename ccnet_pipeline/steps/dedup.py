"""Exact line deduplication, as CCNet: hash every line of every segment (pass 1), shuffle the
hashes by partition to find the duplicated ones, then reread each segment and remove them
(pass 2)."""

from __future__ import annotations

import io
from typing import Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np

from ccnet_pipeline.progress import SegmentProgress
from ccnet_pipeline.steps.batches import (
    BAD,
    COUNTERS,
    DROPPED,
    FILTER_PASS,
    HASH_PASS,
    KEPT,
    SEEN,
    Segment,
    raise_counters,
)
from ccnet_pipeline.steps.read import read_segment_items
from ccnet_pipeline.steps.stage import split_results
from ccnet_pipeline.wet import BadRecord, ReadConfig
from filters.dedup import (
    DedupConfig,
    DuplicateLineRemoval,
    MinLength,
    find_duplicated_hashes,
    removed_lines_by_record,
    removed_positions,
    segment_line_hashes,
    split_by_partition,
    summarize_segment,
)
from filters.stage import apply_stages
from toolkit import storage
from toolkit.corpus import Layout


def segment_hashes(
    read: ReadConfig, path: str, name: str, line_keys, progress: Optional[SegmentProgress] = None
) -> Tuple[np.ndarray, np.ndarray]:
    """The hashes and positions of every line of the segment at ``path`` (bad records skipped)."""
    records = (
        (record, item["raw_content"])
        for record, item in read_segment_items(read, path, name, progress)
        if not isinstance(item, BadRecord)
    )
    return segment_line_hashes(records, line_keys)


class HashSegment(beam.DoFn):
    """Pass 1: per segment, hash every line and commit the hashes (read back on reruns);
    yields (segment index, its summary: ``summarize_segment``, its entries in the shuffle)."""

    def __init__(self, config: DedupConfig, read: ReadConfig, layout: Layout):
        self.config = config
        self.read = read
        self.layout = layout

    def process(self, segment: Tuple[int, Segment]):
        index, (path, name) = segment
        if storage.exists(self.layout.hashes(index)):
            hashes, positions = load_hashes(self.layout, index)
        else:
            progress = SegmentProgress(self.layout, HASH_PASS, index)
            hashes, positions = segment_hashes(self.read, path, name, self.config.line_keys, progress)
            with storage.atomic_write(self.layout.hashes(index)) as out:
                np.save(out, np.stack([hashes, positions]))
        yield index, summarize_segment(hashes, positions, self.config.mode)


def load_hashes(layout: Layout, index: int) -> Tuple[np.ndarray, np.ndarray]:
    hashes, positions = np.load(io.BytesIO(storage.read_bytes(layout.hashes(index))))
    return hashes, positions


def split_summary(summarized: Tuple[int, Tuple[np.ndarray, np.ndarray]], partitions: int):
    """A segment's summary -> (partition, (segment index, hashes, values)) for every hash
    partition it has entries in, ``partitions`` being chosen from the whole input's entries."""
    index, summary = summarized
    for partition, (hashes, values) in enumerate(split_by_partition(*summary, partitions)):
        if len(hashes):
            yield partition, (index, hashes, values)


def find_duplicates(partition_parts: Tuple[int, Iterable], mode: str):
    """Per hash partition: (segment index, hashes it loses every copy of)."""
    _, parts = partition_parts
    yield from find_duplicated_hashes(parts, mode).items()


class RemoveDuplicateLines(beam.DoFn):
    """Pass 2: reread a segment and run each document through its duplicate-line removal,
    then CCNet's minimum length: the segment's path on ``seen``, its batches of kept, dropped
    and bad (``bad``) input."""

    def __init__(self, config: DedupConfig, read: ReadConfig, layout: Layout):
        self.min_length = MinLength(config.min_len)
        self.lines = config.mode != "none"
        self.read = read
        self.layout = layout

    def process(self, joined: Tuple[int, Dict[str, List]]):
        index, groups = joined
        if groups["path"]:  # else committed by an earlier run
            yield from self.filter_segment(index, groups)

    def filter_segment(self, index: int, groups: Dict[str, List]):
        ((path, name),) = groups["path"]
        yield beam.pvalue.TaggedOutput(SEEN, (index, path))
        removed = {}
        if self.lines:
            remove_all = groups["removed"]
            remove_all = np.concatenate(remove_all) if remove_all else np.empty(0, dtype=np.uint64)
            removed = removed_lines_by_record(removed_positions(*load_hashes(self.layout, index), remove_all))
        records, results, bad = [], [], []
        for record, item in read_segment_items(self.read, path, name, SegmentProgress(self.layout, FILTER_PASS, index)):
            if isinstance(item, BadRecord):
                bad.append(item)
            else:
                doc, _, reason = apply_stages(
                    (DuplicateLineRemoval(removed.get(record, frozenset())), self.min_length), item
                )
                records.append(record)
                results.append((doc, reason))
        if bad:
            yield beam.pvalue.TaggedOutput(BAD, (index, bad))
        yield from split_results(index, records, results, self.min_length.name)


class Deduplicate(beam.PTransform):
    """(segment index, (path, name)) -> documents without duplicated lines, as CCNet: hash every line
    (pass 1), shuffle each segment's distinct hashes by partition to find the duplicated ones,
    reread and filter each segment (pass 2). No worker holds more than one partition of segment
    summaries or one segment's hashes. Input: (every segment, the segments still to mine), both
    as (index, (path, name)); every segment's hashes count, committed ones are read back. Output: the
    batches of ``RemoveLines`` and, on ``counters``, one element: ``dedup/hash_partitions``, the
    number of hash partitions used, raised as the job's counter."""

    def __init__(self, config: DedupConfig, read: ReadConfig, layout: Layout):
        super().__init__()
        self.config = config
        self.read = read
        self.layout = layout

    def expand(self, inputs):
        segments, to_mine = inputs
        remove = RemoveDuplicateLines(self.config, self.read, self.layout)
        outputs = (DROPPED, BAD, SEEN)
        if self.config.mode == "none":  # no line dedup: read each segment once, the minimum length only
            filtered = (
                to_mine
                | "NoHashes" >> beam.MapTuple(lambda index, path: (index, {"path": [path], "removed": []}))
                | "RemoveLines" >> beam.ParDo(remove).with_outputs(*outputs, main=KEPT)
            )
            partitions = segments.pipeline | "NoPartitions" >> beam.Create([0])
            return self.outputs(filtered, partitions)
        summaries = segments | "HashLines" >> beam.ParDo(HashSegment(self.config, self.read, self.layout))
        partitions = (
            summaries
            | "EntryCounts" >> beam.MapTuple(lambda _, summary: len(summary[0]))
            | "CountEntries" >> beam.CombineGlobally(sum)
            | "ChoosePartitions" >> beam.Map(self.config.partitions)
        )
        removed = (
            summaries
            | "SplitByPartition" >> beam.FlatMap(split_summary, beam.pvalue.AsSingleton(partitions))
            | "GroupByPartition" >> beam.GroupByKey()
            | "FindDuplicates" >> beam.FlatMap(find_duplicates, self.config.mode)
        )
        filtered = (
            {"path": to_mine, "removed": removed}
            | "JoinBySegment" >> beam.CoGroupByKey()
            | "RemoveLines" >> beam.ParDo(remove).with_outputs(*outputs, main=KEPT)
        )
        return self.outputs(filtered, partitions)

    @staticmethod
    def outputs(filtered, partitions):
        counters = partitions | "PartitionsCounter" >> beam.Map(lambda n: raise_counters({"dedup/hash_partitions": n}))
        return {**{tag: filtered[tag] for tag in (KEPT, DROPPED, BAD, SEEN)}, COUNTERS: counters}
