"""Committing each segment under ``OUT/_work/`` (``toolkit.corpus.Layout``), so that a crashed
job resumes: its line hashes (CCNet's hash values, one file per segment as CCNet has one per
shard, written by the dedup step), then its documents with perplexity, its quarantine and last
its marker, which holds its counters (the source of stats.json). A rerun reads what was
committed and mines only the other segments; bucketing and the final shards are always rebuilt
from the committed documents, so they come out the same."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import apache_beam as beam
import pyarrow as pa

from ccnet_pipeline.shards import write_parquet
from ccnet_pipeline.stats import document_counters, segment_counters
from ccnet_pipeline.steps.batches import (
    BAD,
    COUNTERS,
    DROPPED,
    KEPT,
    PERPLEXITIES,
    SEEN,
    Batch,
    DroppedBatch,
    raise_counters,
)
from ccnet_pipeline.wet import BadRecord
from filters.document import ARROW_SCHEMA
from filters.stage import Counted
from toolkit import storage
from toolkit.cli import from_dict
from toolkit.corpus import Layout, read_parquet


@dataclass(frozen=True)
class SegmentMarker:
    """``_work/segments/NNNNN.json``, written last of a segment's files: the segment is committed,
    and its counters are its part of stats.json."""

    index: int
    path: str  # the input file as listed: a rerun trusts the marker for this file at this index only
    counters: Dict[str, int]

    def write(self, layout: Layout) -> None:
        storage.write_text(layout.marker(self.index), json.dumps(asdict(self), sort_keys=True))

    @classmethod
    def read(cls, path: str) -> SegmentMarker:
        return from_dict(cls, storage.read_json(path))


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
    index, (``counters``, their counters as ``steps`` count them)) and, on ``perplexities``, their
    (language, perplexity)."""

    def __init__(self, layout: Layout, steps: Sequence[Counted]):
        self.layout = layout
        self.steps = steps

    def process(self, batch: Batch):
        index, kept = batch
        write_committed(self.layout, index, kept)
        yield index, (COUNTERS, document_counters(self.steps, kept=[doc for _, doc in kept]))
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
    (segment index, (``counters``, their counters as ``steps`` count them))."""

    def __init__(self, layout: Layout, keep_dropped: bool, steps: Sequence[Counted]):
        self.layout = layout
        self.keep_dropped = keep_dropped
        self.steps = steps

    def process(self, batch: DroppedBatch):
        index, dropped = batch
        if self.keep_dropped:
            for reason in sorted({reason for _, reason, _ in dropped}):
                docs = [doc for _, r, doc in dropped if r == reason]
                write_parquet(self.layout.dropped(reason, index), docs, DROPPED_SCHEMAS.get(reason, ARROW_SCHEMA))
        entries = [(reason, doc) for _, reason, doc in dropped]
        yield index, (COUNTERS, document_counters(self.steps, dropped=entries))


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
        counters = segment_counters([*counted, document_counters((), bad=bad)])
        SegmentMarker(index, path, counters).write(self.layout)
        raise_counters(counters)
        yield index
        yield beam.pvalue.TaggedOutput(COUNTERS, counters)


class CommitSegments(beam.PTransform):
    """{seen, kept, dropped, bad} batches -> each segment committed: its kept documents
    (``CommitDocuments``) and dropped ones (``CommitDropped``) where they were made, then one
    marker per segment (``MarkSegment``) once all its parts are in, the shuffle carrying only
    paths, bad records and counters. Outputs: the committed segment indexes (main), counters,
    perplexities. ``steps`` are the job's steps that count (``filters.stage.Counted``), in order."""

    def __init__(self, layout: Layout, keep_dropped: bool, steps: Sequence[Counted]):
        super().__init__()
        self.layout = layout
        self.keep_dropped = keep_dropped
        self.steps = steps

    def expand(self, results):
        documents = results[KEPT] | "CommitDocuments" >> beam.ParDo(
            CommitDocuments(self.layout, self.steps)
        ).with_outputs(PERPLEXITIES, main=COUNTERS)
        parts = (
            results[SEEN] | "TagSeen" >> beam.MapTuple(lambda index, path: (index, (SEEN, path))),
            results[BAD] | "TagBad" >> beam.MapTuple(lambda index, bad: (index, (BAD, bad))),
            documents[COUNTERS],
            results[DROPPED] | "CommitDropped" >> beam.ParDo(CommitDropped(self.layout, self.keep_dropped, self.steps)),
        )
        marked = (
            parts
            | "AllParts" >> beam.Flatten()
            | "GroupBySegment" >> beam.GroupByKey()
            | "Mark" >> beam.ParDo(MarkSegment(self.layout)).with_outputs(COUNTERS, main=KEPT)
        )
        return {KEPT: marked[KEPT], COUNTERS: marked[COUNTERS], PERPLEXITIES: documents[PERPLEXITIES]}
