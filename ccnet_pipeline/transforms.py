"""The Beam layer: labelled composite PTransforms around the pure stages of ``filters`` and
``lid`` (``filters.stage``), the shuffles of dedup and the per-segment commits.

Documents travel a segment at a time, as batches ``(segment index, [(record index, Document)])``
in record order: the stages see all of a segment's documents in one call (one fastText call for
all, one language model at a time), Beam's per-element costs are paid per segment, and the
commit needs no shuffle of documents, so that writers restore input order and reruns write
identical files. Each stage yields one batch of kept documents per segment (empty when it
keeps none); the documents it drops leave on the tagged output ``dropped`` as
``(segment index, [(record index, reason, Document)])``, bad input on ``bad`` as
``(segment index, [BadRecord])``.

Counters are counted in one place: each segment's commit computes its counters from what it
commits (``stats.document_counters``), writes them into its marker (the source of stats.json)
and raises the same numbers as Beam metrics in the namespace ``ccnet``, as the shard writer
does for the files it writes. The stages raise live ``<stage>/kept`` and
``<stage>/dropped/<reason>`` counters in the namespace ``progress``, named after the stage, to
watch a running job.

Crash safety: every segment's results are committed under ``OUT/_work/`` (``toolkit.corpus.Layout``)
— its line hashes (CCNet's hash values, one file per segment as CCNet has one per shard), then
its documents with perplexity, its quarantine and last its marker. A rerun reads what was
committed and mines only the other segments; bucketing and the final shards are always rebuilt
from the committed documents, so they come out the same.
"""

from __future__ import annotations

import io
import json
import os
import stat
from functools import cache
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.metrics import Metrics

from ccnet_pipeline.ccnet_json import CcnetReader
from ccnet_pipeline.progress import SegmentProgress
from ccnet_pipeline.shards import ShardWriter, write_parquet
from ccnet_pipeline.stats import SegmentCounts, document_counters, file_counters, segment_counters
from ccnet_pipeline.wet import BadKind, BadRecord, Item, ReadConfig
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
from filters.document import ARROW_SCHEMA, Document
from filters.perplexity import PERCENTILES, BucketConfig, Cutoffs, bucket
from filters.stage import Result, Stage, apply_stages
from toolkit import storage
from toolkit.corpus import Layout, read_parquet, read_parquet_where

NAMESPACE = "ccnet"  # the job's counters, those of stats.json
PROGRESS = "progress"  # live counters of the stages
KEPT, DROPPED, BAD, SEEN, COUNTERS, PERPLEXITIES = "kept", "dropped", "bad", "seen", "counters", "perplexities"
PARTITIONS = "partitions"
HASH_PASS, FILTER_PASS, IMPORT_PASS = "hash", "filter", "import"  # the passes over the input (progress files)


@cache
def counter(name: str, namespace: str = NAMESPACE):
    """The Beam counter ``<namespace>:<name>``, made once per name and process."""
    return Metrics.counter(namespace, name)


def raise_counters(counts: Mapping[str, int]) -> None:
    for name, value in counts.items():
        counter(name).inc(value)


def read_segment_items(
    read, path: str, name: str, progress: Optional[SegmentProgress] = None
) -> Iterator[Tuple[int, Item]]:
    """``read.segment`` of the file at ``path``, named ``name`` (its cc_segment: ``segment_names``;
    ``read``: a ReadConfig, or import-ccnet's CcnetReader), how far it got reported to
    ``progress``. A file that cannot be opened or read (removed since it was listed, a
    directory, a broken link or link loop, no permission, an I/O error) ends the segment with
    one ``unreadable_file`` BadRecord; the records read before it stay."""
    next_record = documents = 0
    try:
        if not storage.is_remote(path):  # opening a FIFO or a device would block or read forever
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                raise OSError("is a directory" if stat.S_ISDIR(mode) else "not a regular file")
        with storage.open_read(path) as stream:
            for record, item in read.segment(stream, name):
                yield record, item
                next_record = record + 1
                if progress is not None:
                    documents += not isinstance(item, BadRecord)
                    progress.update(stream.tell(), documents)
    except OSError as error:
        detail = f"cannot read {path}: {error.strerror or error}" + (
            f" (after {next_record} records)" if next_record else ""
        )
        yield next_record, BadRecord(BadKind.UNREADABLE_FILE.value, name, 0, "", detail, b"")
    if progress is not None:
        progress.finish()


Segment = Tuple[str, str]  # an input file: (path, cc_segment)
Batch = Tuple[int, List[Tuple[int, Document]]]  # (segment index, [(record index, document)])
DroppedBatch = Tuple[int, List[Tuple[int, str, Document]]]  # (segment index, [(record, reason, doc)])


def split_results(index: int, records: Sequence[int], results: Sequence[Result], stage: str):
    """A segment's stage results -> its kept batch (always, maybe empty) and, when the stage
    dropped any, its dropped batch on ``dropped``; live counters raised."""
    kept, dropped = [], []
    for record, (doc, reason) in zip(records, results):
        if reason is None:
            kept.append((record, doc))
        else:
            dropped.append((record, reason, doc))
            counter(f"{stage}/dropped/{reason}", PROGRESS).inc()
    counter(f"{stage}/kept", PROGRESS).inc(len(kept))
    yield index, kept
    if dropped:
        yield beam.pvalue.TaggedOutput(DROPPED, (index, dropped))


class RunStage(beam.DoFn):
    """Any ``filters.stage.Stage`` over batches (``Stage.apply_batch``)."""

    def __init__(self, stage: Stage):
        self.stage = stage

    def setup(self):
        self.stage.setup()

    def process(self, batch: Batch):
        index, docs = batch
        results = self.stage.apply_batch([doc for _, doc in docs])
        yield from split_results(index, [record for record, _ in docs], results, self.stage.name)


class ApplyStage(beam.PTransform):
    """Batches -> the batches of documents ``stage`` keeps (main, one per input batch) and of
    those it drops (``dropped``)."""

    def __init__(self, stage: Stage):
        super().__init__()
        self.stage = stage

    def expand(self, batches):
        return batches | "Apply" >> beam.ParDo(RunStage(self.stage)).with_outputs(DROPPED, main=KEPT)


# --- Deduplicate -------------------------------------------------------------------------


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


def choose_partitions(entries: int, config: DedupConfig) -> int:
    """The hash partitions for ``entries`` entries in all (``DedupConfig.partitions``), counted
    as ``dedup/hash_partitions`` as stats.json reports it."""
    partitions = config.partitions(entries)
    counter("dedup/hash_partitions").inc(partitions)
    return partitions


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
    batches of ``RemoveLines`` and, on ``partitions``, the number of hash partitions used (a
    one-element PCollection)."""

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
            return {**{tag: filtered[tag] for tag in (KEPT, *outputs)}, PARTITIONS: partitions}
        summaries = segments | "HashLines" >> beam.ParDo(HashSegment(self.config, self.read, self.layout))
        partitions = (
            summaries
            | "EntryCounts" >> beam.MapTuple(lambda _, summary: len(summary[0]))
            | "CountEntries" >> beam.CombineGlobally(sum)
            | "ChoosePartitions" >> beam.Map(choose_partitions, self.config)
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
        return {**{tag: filtered[tag] for tag in (KEPT, *outputs)}, PARTITIONS: partitions}


# --- Perplexity cutoffs ------------------------------------------------------------------


class ComputeCutoffs(beam.PTransform):
    """(language, perplexity) pairs -> the cutoffs as a one-element PCollection: the given ones
    (a CCNet cutoff.csv), or per-language quantiles at every percentile of the pairs."""

    def __init__(self, given: Optional[Cutoffs] = None):
        super().__init__()
        self.given = given

    def expand(self, perplexities):
        if self.given is not None:
            return perplexities.pipeline | "GivenCutoffs" >> beam.Create([self.given])
        return (
            perplexities
            # 101 quantiles are the 0th, 1st, ..., 100th percentile; cutoff.csv keeps 0..99
            | "Percentiles" >> beam.ApproximateQuantiles.PerKey(num_quantiles=len(PERCENTILES) + 1)
            | "DropMaximum" >> beam.MapTuple(lambda language, values: (language, values[: len(PERCENTILES)]))
            | "CutoffsToDict" >> beam.combiners.ToDict()
        )


# --- Commit ------------------------------------------------------------------------------

# A committed segment's documents, by language then input order, in row groups of one language
# (read back one language at a time): the output schema plus the record index.
COMMITTED_SCHEMA = ARROW_SCHEMA.append(pa.field("record", pa.int64(), nullable=False))


def write_committed(layout: Layout, index: int, kept: Iterable[Tuple[int, Dict]]) -> None:
    """Segment ``index``'s kept (record index, document) pairs, as ``COMMITTED_SCHEMA`` says."""
    rows = sorted(({**doc, "record": record} for record, doc in kept), key=lambda r: (r["language"] or "", r["record"]))
    write_parquet(
        layout.segment_documents(index),
        rows,
        COMMITTED_SCHEMA,
        compression="lz4",  # read once more and deleted: speed over size
        group_by="language",
    )


def read_committed(layout: Layout, index: int, columns: Optional[List[str]] = None) -> pa.Table:
    return read_parquet(layout.segment_documents(index), columns)


def write_bad_input(layout: Layout, bad: List[BadRecord]) -> None:
    """One segment's bad records, one JSON line each, to ``quarantine/bad-input/<segment>.jsonl``."""
    if bad:
        lines = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in bad)
        storage.write_text(layout.bad_input(bad[0].cc_segment), lines)


class CommitDocuments(beam.DoFn):
    """A segment's final kept batch -> its documents in ``_work/segments/``; yields (segment
    index, (``counters``, their counters)) and, on ``perplexities``, their (language,
    perplexity)."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def process(self, batch: Batch):
        index, kept = batch
        write_committed(self.layout, index, kept)
        yield index, (COUNTERS, document_counters(kept=[doc for _, doc in kept]))
        for _, doc in kept:
            if doc["perplexity"] is not None:
                yield beam.pvalue.TaggedOutput(PERPLEXITIES, (doc["language"], doc["perplexity"]))


# The quarantine of near-duplicates says which document stands for each: the schema plus its
# cluster's id (the kept document's segment index << 32 | record) and the kept document's url,
# and with --minhash-verify the estimated Jaccard against it.
DROPPED_SCHEMAS = {
    "near_duplicate": ARROW_SCHEMA.append(pa.field("cluster", pa.int64()))
    .append(pa.field("kept", pa.string()))
    .append(pa.field("similarity", pa.float32()))
}


class CommitDropped(beam.DoFn):
    """A dropped batch -> with ``keep_dropped``, its documents in ``quarantine/dropped/<reason>/``
    (a batch holds all of its segment's documents of the reasons its stage gives); yields
    (segment index, (``counters``, their counters)). ``stages`` names the stage of each reason."""

    def __init__(self, layout: Layout, keep_dropped: bool, stages: Mapping[str, str]):
        self.layout = layout
        self.keep_dropped = keep_dropped
        self.stages = dict(stages)

    def process(self, batch: DroppedBatch):
        index, dropped = batch
        if self.keep_dropped:
            for reason in sorted({reason for _, reason, _ in dropped}):
                docs = [doc for _, r, doc in dropped if r == reason]
                write_parquet(self.layout.dropped(reason, index), docs, DROPPED_SCHEMAS.get(reason, ARROW_SCHEMA))
        entries = [(reason, doc) for _, reason, doc in dropped]
        yield index, (COUNTERS, document_counters(dropped=entries, stages=self.stages))


class MarkSegment(beam.DoFn):
    """All of one segment's commits (its path, bad records and the counters of its committed
    parts) -> its bad records in the bad-input quarantine, then its marker with its counters,
    which are raised as Beam metrics too. Yields the segment index and, on ``counters``, its
    counters."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def process(self, element):
        index, parts = element
        path, bad, counted = "", [], []
        for kind, value in parts:
            if kind == SEEN:
                path = value
            elif kind == BAD:
                bad.extend(value)
            else:
                counted.append(value)
        bad.sort(key=lambda record: (record.offset, record.offset_in_member))
        write_bad_input(self.layout, bad)
        counters = segment_counters([*counted, document_counters(bad=bad)])
        storage.write_text(
            self.layout.marker(index), json.dumps({"index": index, "path": path, "counters": counters}, sort_keys=True)
        )
        raise_counters(counters)
        yield index
        yield beam.pvalue.TaggedOutput(COUNTERS, counters)


class CommitSegments(beam.PTransform):
    """{seen, kept, dropped, bad} batches -> each segment committed: its kept documents
    (``CommitDocuments``) and dropped ones (``CommitDropped``) where they were made, then one
    marker per segment (``MarkSegment``) once all its parts are in, the shuffle carrying only
    paths, bad records and counters. Outputs: the committed segment indexes (main), counters,
    perplexities."""

    def __init__(self, layout: Layout, keep_dropped: bool, stages: Mapping[str, str]):
        super().__init__()
        self.layout = layout
        self.keep_dropped = keep_dropped
        self.stages = stages

    def expand(self, results):
        documents = results[KEPT] | "CommitDocuments" >> beam.ParDo(CommitDocuments(self.layout)).with_outputs(
            PERPLEXITIES, main=COUNTERS
        )
        parts = (
            results[SEEN] | "TagSeen" >> beam.MapTuple(lambda index, path: (index, (SEEN, path))),
            results[BAD] | "TagBad" >> beam.MapTuple(lambda index, bad: (index, (BAD, bad))),
            documents[COUNTERS],
            results[DROPPED]
            | "CommitDropped" >> beam.ParDo(CommitDropped(self.layout, self.keep_dropped, self.stages)),
        )
        marked = (
            parts
            | "AllParts" >> beam.Flatten()
            | "GroupBySegment" >> beam.GroupByKey()
            | "Mark" >> beam.ParDo(MarkSegment(self.layout)).with_outputs(COUNTERS, main=KEPT)
        )
        return {KEPT: marked[KEPT], COUNTERS: marked[COUNTERS], PERPLEXITIES: documents[PERPLEXITIES]}


class ReadPerplexities(beam.DoFn):
    """A segment committed by an earlier run -> its documents' (language, perplexity)."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def process(self, index: int):
        table = read_committed(self.layout, index, ["language", "perplexity"])
        for language, perplexity in zip(*(table.column(c).to_pylist() for c in ("language", "perplexity"))):
            if perplexity is not None:
                yield language, perplexity


# --- WriteShards -------------------------------------------------------------------------


def write_summaries(summaries: List[Dict]) -> List[Dict]:
    """The file summaries a writer yields, their counters raised."""
    for summary in summaries:
        raise_counters(file_counters(summary))
    return summaries


def output_bucket(
    buckets: Optional[BucketConfig], language: str, perplexity: Optional[float], committed: str, cutoffs: Cutoffs
) -> str:
    """The output bucket of a committed document: from its perplexity and the cutoffs, or the
    bucket it was committed with when the job has no perplexity (``buckets`` None)."""
    return committed if buckets is None else bucket(perplexity, language, cutoffs, buckets)


class MeasureSegment(beam.DoFn):
    """A committed segment -> ((language, bucket), (segment index, text bytes)) for each
    language and bucket it has documents in, the bytes being UTF-8 ``raw_content``."""

    def __init__(self, layout: Layout, buckets: Optional[BucketConfig]):
        self.layout = layout
        self.buckets = buckets

    def process(self, index: int, cutoffs: Cutoffs):
        table = read_committed(self.layout, index, ["language", "perplexity", "bucket", "raw_content"])
        sizes = pc.binary_length(table.column("raw_content").cast(pa.binary())).to_pylist()
        columns = (table.column(name).to_pylist() for name in ("language", "perplexity", "bucket"))
        totals: Dict[Tuple[str, str], int] = {}
        for size, (language, perplexity, committed) in zip(sizes, zip(*columns)):
            key = (language, output_bucket(self.buckets, language, perplexity, committed, cutoffs))
            totals[key] = totals.get(key, 0) + size
        for key, size in sorted(totals.items()):
            yield key, (index, size)


def pack_segments(keyed: Tuple[Tuple[str, str], Iterable[Tuple[int, int]]], target_size: int):
    """One language and bucket's (segment index, bytes) -> ((language, bucket, shard number),
    segment indexes): runs of consecutive segments of about ``target_size`` bytes, a shard
    ending before the segment that would take it over (a segment larger alone is one shard)."""
    (language, bucket_name), sizes = keyed
    shard, current, total = 0, [], 0
    for index, size in sorted(sizes):
        if current and total + size > target_size:
            yield (language, bucket_name, shard), current
            shard, current, total = shard + 1, [], 0
        current.append(index)
        total += size
    if current:
        yield (language, bucket_name, shard), current


class WriteShard(beam.DoFn):
    """((language, bucket, shard number), segment indexes) -> one shard file (``ShardWriter``)
    of that language and bucket's documents of those segments, in input order, read back one
    row group at a time; yields its summary."""

    def __init__(self, layout: Layout, buckets: Optional[BucketConfig], output_format: str):
        self.layout = layout
        self.buckets = buckets
        self.output_format = output_format

    def process(self, shard_segments, cutoffs: Cutoffs):
        (language, bucket_name, shard), indexes = shard_segments
        with ShardWriter(self.layout.root, shard, self.output_format) as writer:
            for index in indexes:
                # one language's rows, committed in record order
                for table in read_parquet_where(self.layout.segment_documents(index), "language", language):
                    columns = (table.column(name).to_pylist() for name in ("perplexity", "bucket"))
                    mine = [
                        output_bucket(self.buckets, language, *values, cutoffs) == bucket_name
                        for values in zip(*columns)
                    ]
                    for row in table.filter(pa.array(mine)).drop_columns(["record"]).to_pylist():
                        row["bucket"] = bucket_name
                        writer.add(row)
        yield from write_summaries(writer.summaries)


class WriteShards(beam.PTransform):
    """Committed segment indexes -> the corpus shards (``Layout.shard``), once every segment is
    in: per language and bucket, files of about ``target_size`` bytes of text, each holding the
    documents of a run of consecutive segments, read back from the commits (no shuffle of
    documents, one row group in memory at a time). Returns the file summaries."""

    def __init__(
        self,
        layout: Layout,
        target_size: int,
        buckets: Optional[BucketConfig],
        cutoffs,
        output_format: str = "parquet",
    ):
        super().__init__()
        self.layout = layout
        self.target_size = target_size
        self.buckets = buckets
        self.cutoffs = cutoffs
        self.output_format = output_format

    def expand(self, indexes):
        cutoffs = beam.pvalue.AsSingleton(self.cutoffs)
        return (
            indexes
            | "Measure" >> beam.ParDo(MeasureSegment(self.layout, self.buckets), cutoffs)
            | "GroupByLanguageBucket" >> beam.GroupByKey()
            | "Pack" >> beam.FlatMap(pack_segments, self.target_size)
            | "Spread" >> beam.Reshuffle()  # one language's shards over many workers
            | "Write" >> beam.ParDo(WriteShard(self.layout, self.buckets, self.output_format), cutoffs)
        )


# --- ImportCcnet -------------------------------------------------------------------------


class ConvertCcnetFile(beam.DoFn):
    """(index, (path, name) of a CCNet output file) -> its documents as Parquet shards
    ``<lang>/<bucket>/part-<index>.parquet`` (streamed, never held whole), its bad lines in
    the bad-input quarantine; yields the file summaries and, on ``counters``, its counters."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def process(self, element):
        index, (path, name) = element
        counts, bad = SegmentCounts(), []
        with ShardWriter(self.layout.root, index) as writer:
            for _, item in read_segment_items(
                CcnetReader(), path, name, SegmentProgress(self.layout, IMPORT_PASS, index)
            ):
                if isinstance(item, BadRecord):
                    counts.bad(item)
                    bad.append(item)
                else:
                    counts.kept(item)
                    writer.add(item)
        write_bad_input(self.layout, bad)
        counters = segment_counters([counts.counts])
        raise_counters(counters)
        yield beam.pvalue.TaggedOutput(COUNTERS, counters)
        yield from write_summaries(writer.summaries)


class ImportCcnet(beam.PTransform):
    """(index, (path, name)) of CCNet output files (CCNet's JSON lines or Dolma's wrapping of them) ->
    this project's Parquet corpus files: the file summaries (main) and per-file counters."""

    def __init__(self, layout: Layout):
        super().__init__()
        self.layout = layout

    def expand(self, files):
        return files | "Convert" >> beam.ParDo(ConvertCcnetFile(self.layout)).with_outputs(COUNTERS, main=KEPT)
