"""The Beam layer: one labelled composite PTransform per stage, each a thin wrapper around the
pure functions of ``filters`` and ``lid``.

Documents travel as ``(order, Document)`` pairs, ``order`` being (segment index, record index),
so that writers can restore input order and reruns write identical files. Counters are Beam
metrics in the namespace ``ccnet`` named ``<stage>/<event>`` (for watching a job; stats.json is
computed from committed data); dropped documents leave on the tagged output ``dropped`` as
``(order, (reason, Document))``, bad input on ``bad`` as BadRecord.

Crash safety: every segment's results are committed under ``OUT/_work/`` — its line hashes
(``hashes/NNNNN.npy``: CCNet's hash values, one file per segment as CCNet has one per shard),
then its documents with perplexity (``segments/NNNNN.parquet``), its quarantine and last its
marker (``segments/NNNNN.json``). A rerun
reads what was committed and mines only the other segments; bucketing and the final shards are
always rebuilt from the committed documents, so they come out the same.
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import tempfile
import uuid
from functools import lru_cache
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from ccnet_pipeline.ccnet_json import CcnetReader, ccnet_file_name, to_ccnet
from ccnet_pipeline.stats import SegmentCounts, segment_counters
from ccnet_pipeline.wet import BadRecord, Item, ReadConfig
from filters.dedup import (
    DedupConfig,
    find_removed_lines,
    remove_lines,
    removed_lines_by_record,
    segment_line_hashes,
    split_by_bucket,
)
from filters.document import ARROW_SCHEMA, Document, segment_name
from filters.perplexity import PERCENTILES, BucketConfig, Cutoffs, LanguageModels, bucket, model_paths
from filters.quality import QualityConfig, quality_drop_reason, quality_signals
from lid.model import LanguageIdentifier, LidConfig

NAMESPACE = "ccnet"
KEPT, DROPPED, BAD, SEEN, COUNTERS = "kept", "dropped", "bad", "seen", "counters"
ROWS_PER_ROW_GROUP = 4096


@lru_cache(maxsize=None)
def counter(name: str):
    """The Beam counter ``ccnet:<name>``, made once per name and process."""
    return Metrics.counter(NAMESPACE, name)


def read_segment_items(read, path: str) -> Iterator[Tuple[int, Item]]:
    """``read.segment`` of the file at ``path`` (``read``: a ReadConfig, or import-ccnet's
    CcnetReader). A file that cannot be opened or read (removed
    since it was listed, a directory, a broken link or link loop, no permission, an I/O error)
    ends the segment with one ``unreadable_file`` BadRecord; the records read before it stay."""
    next_record = 0
    try:
        if not is_remote(path):  # opening a FIFO or a device would block or read forever
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                raise OSError("is a directory" if stat.S_ISDIR(mode) else "not a regular file")
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
            for record, item in read.segment(stream, path):
                yield record, item
                next_record = record + 1
    except OSError as error:
        detail = f"cannot read {path}: {error.strerror or error}" + (f" (after {next_record} records)" if next_record else "")
        yield next_record, BadRecord("unreadable_file", segment_name(path), 0, "", detail, b"")


@contextlib.contextmanager
def atomic_output(path: str):
    """A stream to a temporary file beside ``path``, renamed to ``path`` once the block ends
    without an error (and deleted if it raises).

    Readers never see a partial file, and a retried worker never clobbers a finished one with
    half of its own."""
    directory, name = path.rsplit("/", 1) if "/" in path else (".", path)
    if "://" not in path:
        os.makedirs(directory, exist_ok=True)
    temporary = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"
    try:
        with FileSystems.create(temporary, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
            yield stream
    except BaseException:
        if FileSystems.exists(temporary):
            FileSystems.delete([temporary])
        raise
    FileSystems.rename([temporary], [path])  # replaces an older file of the same name


def write_atomically(path: str, write) -> None:
    """Call ``write(stream)`` on a temporary file beside ``path``, then rename it to ``path``."""
    with atomic_output(path) as stream:
        write(stream)


def is_remote(path: str) -> bool:
    return "://" in path


def localize(path: str) -> str:
    """A local copy of a file on shared storage (gs://, s3://, hdfs://...), fetched once per
    worker into the temporary folder; a local path as it is. fastText, SentencePiece and KenLM
    read local files only."""
    if not is_remote(path):
        return path
    folder = os.path.join(tempfile.gettempdir(), "xlmr-corpus-models")
    os.makedirs(folder, exist_ok=True)
    local = os.path.join(folder, hashlib.sha1(path.encode()).hexdigest()[:16] + "-" + path.rsplit("/", 1)[-1])
    if not os.path.exists(local):
        fetch_file(path, local)
    return local


def fetch_file(path: str, local: str) -> None:
    """Copy ``path`` from any Beam filesystem to the local file ``local``, atomically."""
    temporary = f"{local}.{uuid.uuid4().hex}.tmp"
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as source, open(temporary, "wb") as out:
        shutil.copyfileobj(source, out, 1 << 22)
    os.replace(temporary, local)


def remote_languages(lm_dir: str) -> Tuple[str, ...]:
    """The languages with a .sp.model and a .arpa.bin under ``lm_dir`` on shared storage."""
    names = {m.path.rsplit("/", 1)[-1] for m in FileSystems.match([f"{lm_dir}/*"])[0].metadata_list}
    return tuple(sorted(n[: -len(".sp.model")] for n in names if n.endswith(".sp.model") and n.replace(".sp.model", ".arpa.bin") in names))


# --- Deduplicate -------------------------------------------------------------------------


def hashes_path(work: str, index: int) -> str:
    return f"{work}/hashes/{index:05d}.npy"


def segment_docs_path(work: str, index: int) -> str:
    return f"{work}/segments/{index:05d}.parquet"


def marker_path(work: str, index: int) -> str:
    return f"{work}/segments/{index:05d}.json"


def read_bytes(path: str) -> bytes:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
        return stream.read()


class HashSegment(beam.DoFn):
    """Pass 1: per segment, (bucket, (segment index, hashes, positions)) for every hash bucket.
    The segment's hashes are committed once (``hashes/NNNNN.npy``) and read back on reruns."""

    def __init__(self, config: DedupConfig, read: ReadConfig, work: str):
        self.config = config
        self.read = read
        self.work = work

    def process(self, segment: Tuple[int, str]):
        index, path = segment
        committed = hashes_path(self.work, index)
        if FileSystems.exists(committed):
            hashes, positions = np.load(io.BytesIO(read_bytes(committed)))
        else:
            records = (
                (record, item["raw_content"])
                for record, item in read_segment_items(self.read, path)
                if not isinstance(item, BadRecord)
            )
            hashes, positions = segment_line_hashes(records, self.config.normalize)
            write_atomically(committed, lambda out: np.save(out, np.stack([hashes, positions])))
        for hash_bucket, (bucket_hashes, bucket_positions) in enumerate(split_by_bucket(hashes, positions, self.config.hash_buckets)):
            if len(bucket_hashes):
                yield hash_bucket, (index, bucket_hashes, bucket_positions)


def find_duplicates(bucket_parts: Tuple[int, Iterable], mode: str):
    """Per hash bucket: (segment index, positions to remove)."""
    _, parts = bucket_parts
    yield from find_removed_lines(parts, mode).items()


class RemoveDuplicateLines(beam.DoFn):
    """Pass 2: reread a segment, drop the lines found duplicated, then too-short documents."""

    def __init__(self, min_len: int, read: ReadConfig):
        self.min_len = min_len
        self.read = read
        self.segments = counter("read/segments")
        self.documents = counter("read/documents")
        self.lines_in = counter("dedup/lines_in")
        self.lines_removed = counter("dedup/lines_removed")
        self.chars_in = counter("dedup/chars_in")
        self.chars_removed = counter("dedup/chars_removed")
        self.too_short = counter("dedup/dropped/too_short")

    def process(self, joined: Tuple[int, Dict[str, List]]):
        index, groups = joined
        if groups["path"]:  # else committed by an earlier run
            yield from self.filter_segment(index, groups)

    def filter_segment(self, index: int, groups: Dict[str, List]):
        (path,) = groups["path"]
        yield beam.pvalue.TaggedOutput(SEEN, (index, path))
        removed_parts = groups["removed"]
        removed = removed_lines_by_record(
            np.concatenate(removed_parts) if removed_parts else np.empty(0, dtype=np.uint64)
        )
        self.segments.inc()
        for record, item in read_segment_items(self.read, path):
            if isinstance(item, BadRecord):
                counter(f"read/bad/{item.kind}").inc()
                yield beam.pvalue.TaggedOutput(BAD, (index, item))
                continue
            self.documents.inc()
            doc = remove_lines(item, removed.get(record, frozenset()))
            self.lines_in.inc(item["nlines"])
            self.lines_removed.inc(item["nlines"] - doc["nlines"])
            self.chars_in.inc(item["length"])
            self.chars_removed.inc(item["length"] - doc["length"])
            order = (index, record)
            if doc["length"] < self.min_len:
                self.too_short.inc()
                yield beam.pvalue.TaggedOutput(DROPPED, (order, ("too_short", doc)))
            else:
                yield order, doc


class Deduplicate(beam.PTransform):
    """(segment index, path) -> documents without duplicated lines, as CCNet: hash every line
    (pass 1), shuffle the hashes by bucket to find the duplicated ones, reread and filter each
    segment (pass 2). No worker holds more than one bucket of hashes or one segment's removals.
    Input: (every segment, the segments still to mine), both as (index, path); every segment's
    hashes count, committed ones are read back from ``work``."""

    def __init__(self, config: DedupConfig, read: ReadConfig, work: str):
        super().__init__()
        self.config = config
        self.read = read
        self.work = work

    def expand(self, inputs):
        segments, to_mine = inputs
        removed = (
            segments
            | "HashLines" >> beam.ParDo(HashSegment(self.config, self.read, self.work))
            | "GroupByBucket" >> beam.GroupByKey()
            | "FindDuplicates" >> beam.FlatMap(find_duplicates, self.config.mode)
        )
        return {"path": to_mine, "removed": removed} | "JoinBySegment" >> beam.CoGroupByKey() | (
            "RemoveLines"
            >> beam.ParDo(RemoveDuplicateLines(self.config.min_len, self.read)).with_outputs(DROPPED, BAD, SEEN, main=KEPT)
        )


# --- QualitySignals ---------------------------------------------------------------------


class ScoreQuality(beam.DoFn):
    def __init__(self, config: QualityConfig):
        self.config = config

    def process(self, element):
        order, doc = element
        signals = quality_signals(doc)
        doc = {**doc, **signals}
        reason = quality_drop_reason(signals, self.config)
        if reason is None:
            yield order, doc
        else:
            counter(f"quality/dropped/{reason}").inc()
            yield beam.pvalue.TaggedOutput(DROPPED, (order, (reason, doc)))


class QualitySignals(beam.PTransform):
    """Documents -> documents with the heuristic signal columns; with thresholds set, those
    that fail one leave on ``dropped`` with the signal named."""

    def __init__(self, config: QualityConfig):
        super().__init__()
        self.config = config

    def expand(self, docs):
        return docs | "Score" >> beam.ParDo(ScoreQuality(self.config)).with_outputs(DROPPED, main=KEPT)


# --- LanguageId --------------------------------------------------------------------------


class PredictLanguage(beam.DoFn):
    def __init__(self, config: LidConfig):
        self.config = config
        self.selected = frozenset(config.languages)
        self.below_threshold = counter("lid/dropped/below_threshold")
        self.not_selected = counter("lid/dropped/not_selected")

    def setup(self):
        self.identifier = LanguageIdentifier(localize(self.config.model_path), self.config.mode)
        self.identifier.model  # load once per worker, now rather than on the first document

    def process(self, element):
        order, doc = element
        ((language, score),) = self.identifier.predict([doc["raw_content"]])
        doc = {**doc, "language": language, "language_score": score}
        counter(f"lid/language/{language}").inc()
        if score < self.config.threshold:
            self.below_threshold.inc()
            yield beam.pvalue.TaggedOutput(DROPPED, (order, ("below_threshold", doc)))
        elif language not in self.selected:
            self.not_selected.inc()
            yield beam.pvalue.TaggedOutput(DROPPED, (order, ("not_selected", doc)))
        else:
            yield order, doc


class LanguageId(beam.PTransform):
    """Documents -> documents with ``language``/``language_score``, kept when the score reaches
    the threshold and the language is selected; the others leave on ``dropped``."""

    def __init__(self, config: LidConfig):
        super().__init__()
        self.config = config

    def expand(self, docs):
        return docs | "Predict" >> beam.ParDo(PredictLanguage(self.config)).with_outputs(DROPPED, main=KEPT)


# --- Perplexity and buckets -------------------------------------------------------------


class ScorePerplexity(beam.DoFn):
    def __init__(self, lm_dir: str, mode: str):
        self.lm_dir = lm_dir
        self.mode = mode
        self.scored = counter("perplexity/scored")
        self.no_model = counter("perplexity/no_model")

    def setup(self):
        if is_remote(self.lm_dir):  # fetched language by language, on first use
            self.models = LanguageModels(tempfile.mkdtemp(prefix="lm-"), remote_languages(self.lm_dir), self.mode)
            self.fetched = set()
        else:
            self.models = LanguageModels(self.lm_dir, mode=self.mode)  # each language's pair loads on first use

    def fetch(self, language: str) -> None:
        """Copy a language's model pair from shared storage into the worker's model folder."""
        for local in model_paths(self.models.lm_dir, language):
            fetch_file(f"{self.lm_dir}/{os.path.basename(local)}", local)
        self.fetched.add(language)

    def process(self, element):
        order, doc = element
        if is_remote(self.lm_dir) and doc["language"] in self.models.languages and doc["language"] not in self.fetched:
            self.fetch(doc["language"])
        perplexity = self.models.perplexity(doc["raw_content"], doc["language"])
        (self.no_model if perplexity is None else self.scored).inc()
        yield order, {**doc, "perplexity": perplexity}


class Perplexity(beam.PTransform):
    """Documents -> documents with their perplexity in ``mode`` (``filters.perplexity``) under
    their language's model (null when ``lm_dir`` has no model for the language)."""

    def __init__(self, lm_dir: str, mode: str = "ccnet"):
        super().__init__()
        self.lm_dir = lm_dir
        self.mode = mode

    def expand(self, docs):
        return docs | "Score" >> beam.ParDo(ScorePerplexity(self.lm_dir, self.mode))


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

# A committed segment's documents: the output schema plus the record index, for input order.
COMMITTED_SCHEMA = ARROW_SCHEMA.append(pa.field("record", pa.int64(), nullable=False))
PERPLEXITIES = "perplexities"


class ParquetRowWriter:
    """Rows into a Parquet stream, ``ROWS_PER_ROW_GROUP`` to a row group."""

    def __init__(self, stream, schema: pa.Schema = ARROW_SCHEMA, compression: str = "zstd"):
        self.schema = schema
        self.writer = pq.ParquetWriter(stream, schema, compression=compression)
        self.rows: List[Dict] = []

    def add(self, row: Dict) -> None:
        self.rows.append(row)
        if len(self.rows) == ROWS_PER_ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.writer.write_table(pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []

    def close(self) -> None:
        self.flush()
        self.writer.close()


def write_parquet(path: str, rows: List[Dict], schema: pa.Schema = ARROW_SCHEMA, compression: str = "zstd") -> None:
    """``rows`` as one Parquet file, in row groups, written atomically."""
    with atomic_output(path) as stream:
        writer = ParquetRowWriter(stream, schema, compression)
        for row in rows:
            writer.add(row)
        writer.close()


def read_committed(work: str, index: int, columns: Optional[List[str]] = None) -> pa.Table:
    return pq.read_table(io.BytesIO(read_bytes(segment_docs_path(work, index))), columns=columns)


def write_bad_input(output: str, bad: List[BadRecord]) -> None:
    """One segment's bad records, one JSON line each, to ``quarantine/bad-input/<segment>.jsonl``."""
    if bad:
        name = bad[0].cc_segment.replace("/", "_")
        lines = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in bad)
        write_atomically(f"{output}/quarantine/bad-input/{name}.jsonl", lambda out: out.write(lines.encode("utf-8")))


class CommitSegment(beam.DoFn):
    """All of one segment's results -> its committed files: bad records to
    ``quarantine/bad-input/<segment>.jsonl``, dropped documents to
    ``quarantine/dropped/<reason>/part-NNNNN.parquet`` (with ``keep_dropped``), the kept
    documents to ``_work/segments/NNNNN.parquet``, and last the marker with its counters.
    Yields the segment index, its counters on ``counters`` and its documents' (language,
    perplexity) on ``perplexities``."""

    def __init__(self, output: str, work: str, keep_dropped: bool):
        self.output = output
        self.work = work
        self.keep_dropped = keep_dropped

    def process(self, element):
        index, items = element
        path, kept, dropped, bad = "", [], [], []
        for kind, value in items:
            if kind == SEEN:
                path = value
            elif kind == KEPT:
                kept.append(value)
            elif kind == DROPPED:
                dropped.append(value)
            else:
                bad.append(value)
        kept.sort(key=lambda item: item[0])
        dropped.sort(key=lambda item: item[0])
        bad.sort(key=lambda record: record.offset)
        write_bad_input(self.output, bad)
        if self.keep_dropped:
            for reason in sorted({reason for _, (reason, _) in dropped}):
                docs = [doc for _, (r, doc) in dropped if r == reason]
                write_parquet(f"{self.output}/quarantine/dropped/{reason}/part-{index:05d}.parquet", docs)
        write_parquet(
            segment_docs_path(self.work, index),
            [{**doc, "record": order[1]} for order, doc in kept],
            COMMITTED_SCHEMA,
            compression="lz4",  # read once more and deleted: speed over size
        )
        counters = segment_counters([doc for _, doc in kept], [entry for _, entry in dropped], bad)
        marker = json.dumps({"index": index, "path": path, "counters": counters}, sort_keys=True)
        write_atomically(marker_path(self.work, index), lambda out: out.write(marker.encode("utf-8")))
        yield index
        yield beam.pvalue.TaggedOutput(COUNTERS, counters)
        for _, doc in kept:
            if doc["perplexity"] is not None:
                yield beam.pvalue.TaggedOutput(PERPLEXITIES, (doc["language"], doc["perplexity"]))


class CommitSegments(beam.PTransform):
    """{seen, kept, dropped, bad} per-document results -> one commit per segment (see
    ``CommitSegment``): the committed segment indexes (main), counters, perplexities."""

    def __init__(self, output: str, work: str, keep_dropped: bool):
        super().__init__()
        self.output = output
        self.work = work
        self.keep_dropped = keep_dropped

    def expand(self, results):
        keep_text = self.keep_dropped

        def tag_dropped(element):
            order, (reason, doc) = element
            if not keep_text:  # only counted: no need to shuffle the text
                doc = {**doc, "raw_content": "", "title": "", "line_ids": None}
            return order[0], (DROPPED, (order, (reason, doc)))

        tagged = (
            results[SEEN] | "TagSeen" >> beam.Map(lambda e: (e[0], (SEEN, e[1]))),
            results[KEPT] | "TagKept" >> beam.Map(lambda e: (e[0][0], (KEPT, e))),
            results[DROPPED] | "TagDropped" >> beam.Map(tag_dropped),
            results[BAD] | "TagBad" >> beam.Map(lambda e: (e[0], (BAD, e[1]))),
        )
        return (
            tagged
            | "AllResults" >> beam.Flatten()
            | "GroupBySegment" >> beam.GroupByKey()
            | "Commit"
            >> beam.ParDo(CommitSegment(self.output, self.work, self.keep_dropped)).with_outputs(
                COUNTERS, PERPLEXITIES, main=KEPT
            )
        )


class ReadPerplexities(beam.DoFn):
    """A segment committed by an earlier run -> its documents' (language, perplexity)."""

    def __init__(self, work: str):
        self.work = work

    def process(self, index: int):
        table = read_committed(self.work, index, ["language", "perplexity"])
        for language, perplexity in zip(*(table.column(c).to_pylist() for c in ("language", "perplexity"))):
            if perplexity is not None:
                yield language, perplexity


# --- WriteShards -------------------------------------------------------------------------


def shard_path(language: str, bucket: str, shard: int, output_format: str) -> str:
    """A shard's path in the corpus folder: ``<lang>/<bucket>/part-NNNNN.parquet``, or in
    CCNet's layout ``<lang>_<bucket>_NNNN.json.gz``."""
    if output_format == "ccnet":
        return ccnet_file_name(language, bucket, shard)
    return f"{language}/{bucket}/part-{shard:05d}.parquet"


class ShardWriter:
    """One shard's documents -> a file per language and bucket, written as they come (in
    Parquet row groups, or as CCNet's gzip JSON lines) under temporary names that are all
    renamed when the ``with`` block ends without an error. ``summaries`` lists the files."""

    def __init__(self, output: str, shard: int, output_format: str = "parquet"):
        self.output = output
        self.shard = shard
        self.output_format = output_format
        self.files: Dict[Tuple[str, str], Dict] = {}
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, *error) -> bool:
        return self.stack.__exit__(*error)

    def add(self, doc: Document) -> None:
        key = (doc["language"], doc["bucket"])
        file = self.files.get(key) or self._open(*key)
        file["add"](doc)
        file["documents"] += 1
        file["characters"] += doc["length"]

    def _open(self, language: str, bucket: str) -> Dict:
        relative = shard_path(language, bucket, self.shard, self.output_format)
        stream = self.stack.enter_context(atomic_output(f"{self.output}/{relative}"))
        if self.output_format == "ccnet":
            # no name and no time in the gzip header: reruns write identical bytes
            text = self.stack.enter_context(gzip.GzipFile(filename="", mode="wb", fileobj=stream, mtime=0))
            add = lambda doc: text.write((json.dumps(to_ccnet(doc), ensure_ascii=False) + "\n").encode("utf-8"))
        else:
            writer = ParquetRowWriter(stream)
            self.stack.callback(writer.close)
            add = writer.add
        counter("output/files").inc()
        file = self.files[(language, bucket)] = {"path": relative, "language": language, "bucket": bucket,
                                                  "documents": 0, "characters": 0, "add": add}
        return file

    @property
    def summaries(self) -> List[Dict]:
        return [{k: v for k, v in f.items() if k != "add"} for _, f in sorted(self.files.items())]


class WriteShardGroup(beam.DoFn):
    """(shard number, its committed segment indexes) -> one file per language and bucket
    (``ShardWriter``), documents in input order, each bucketed with the cutoffs; yields file
    summaries."""

    def __init__(self, output: str, work: str, buckets: Optional[BucketConfig], output_format: str):
        self.output = output
        self.work = work
        self.buckets = buckets
        self.output_format = output_format

    def process(self, group, cutoffs: Cutoffs):
        shard, indexes = group
        with ShardWriter(self.output, shard, self.output_format) as writer:
            for index in sorted(indexes):
                for row in read_committed(self.work, index).to_pylist():
                    del row["record"]  # rows are committed in record order
                    if self.buckets is not None:
                        row["bucket"] = bucket(row["perplexity"], row["language"], cutoffs, self.buckets)
                    writer.add(row)
        yield from writer.summaries


class WriteShards(beam.PTransform):
    """Committed segment indexes -> OUT/<language>/<bucket>/part-XXXXX.parquet (or CCNet's
    layout, ``shard_path``), one file per
    language, bucket and group of ``segments_per_shard`` segments, read back from the commits
    (no shuffle of documents) once every segment is in. Returns the file summaries."""

    def __init__(
        self, output: str, work: str, segments_per_shard: int, buckets: Optional[BucketConfig], cutoffs, output_format: str = "parquet"
    ):
        super().__init__()
        self.output = output
        self.work = work
        self.segments_per_shard = segments_per_shard
        self.buckets = buckets
        self.cutoffs = cutoffs
        self.output_format = output_format

    def expand(self, indexes):
        return (
            indexes
            | "KeyByShard" >> beam.Map(lambda index: (index // self.segments_per_shard, index))
            | "GroupByShard" >> beam.GroupByKey()
            | "Write"
            >> beam.ParDo(
                WriteShardGroup(self.output, self.work, self.buckets, self.output_format), beam.pvalue.AsSingleton(self.cutoffs)
            )
        )


# --- ImportCcnet -------------------------------------------------------------------------


class ConvertCcnetFile(beam.DoFn):
    """(index, path of a CCNet output file) -> its documents as Parquet shards
    ``<lang>/<bucket>/part-<index>.parquet`` (streamed, never held whole), its bad lines in
    ``quarantine/bad-input/``; yields the file summaries and, on ``counters``, its counters."""

    def __init__(self, output: str):
        self.output = output

    def process(self, element):
        index, path = element
        counts, bad = SegmentCounts(), []
        with ShardWriter(self.output, index) as writer:
            for _, item in read_segment_items(CcnetReader(), path):
                if isinstance(item, BadRecord):
                    counts.bad(item)
                    bad.append(item)
                else:
                    counts.kept(item)
                    writer.add(item)
        write_bad_input(self.output, bad)
        for name, value in counts.counts.items():
            counter(name).inc(value)
        yield beam.pvalue.TaggedOutput(COUNTERS, dict(counts.counts))
        yield from writer.summaries


class ImportCcnet(beam.PTransform):
    """(index, path) of CCNet output files (CCNet's JSON lines or Dolma's wrapping of them) ->
    this project's Parquet corpus files: the file summaries (main) and per-file counters."""

    def __init__(self, output: str):
        super().__init__()
        self.output = output

    def expand(self, files):
        return files | "Convert" >> beam.ParDo(ConvertCcnetFile(self.output)).with_outputs(COUNTERS, main=KEPT)
