"""The Beam layer: one labelled composite PTransform per stage, each a thin wrapper around the
pure functions of ``filters`` and ``lid``.

Documents travel as ``(order, Document)`` pairs, ``order`` being (segment index, record index),
so that writers can restore input order and reruns write identical files. Counters are Beam
metrics in the namespace ``ccnet`` named ``<stage>/<event>``; dropped documents leave on the
tagged output ``dropped`` as ``(order, (reason, Document))``, bad input on ``bad`` as BadRecord.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import uuid
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from ccnet_pipeline.wet import BadRecord, ReadConfig
from filters.dedup import (
    DedupConfig,
    find_removed_lines,
    remove_lines,
    removed_lines_by_record,
    segment_line_hashes,
)
from filters.document import ARROW_SCHEMA
from filters.perplexity import PERCENTILES, BucketConfig, Cutoffs, LanguageModels, bucket, model_paths
from filters.quality import QualityConfig, quality_drop_reason, quality_signals
from lid.model import LanguageIdentifier, LidConfig

NAMESPACE = "ccnet"
KEPT, DROPPED, BAD = "kept", "dropped", "bad"
ROWS_PER_ROW_GROUP = 4096


@lru_cache(maxsize=None)
def counter(name: str):
    """The Beam counter ``ccnet:<name>``, made once per name and process."""
    return Metrics.counter(NAMESPACE, name)


def open_segment(path: str):
    """A seekable binary stream of the raw (still compressed) file."""
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def write_atomically(path: str, write) -> None:
    """Call ``write(stream)`` on a temporary file beside ``path``, then rename it to ``path``.

    Readers never see a partial file, and a retried worker never clobbers a finished one with
    half of its own."""
    directory, name = path.rsplit("/", 1) if "/" in path else (".", path)
    if "://" not in path:
        os.makedirs(directory, exist_ok=True)
    temporary = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"
    with FileSystems.create(temporary, compression_type=CompressionTypes.UNCOMPRESSED) as stream:
        write(stream)
    FileSystems.rename([temporary], [path])  # replaces an older file of the same name


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


class HashSegment(beam.DoFn):
    """Pass 1: per segment, (bucket, (segment index, hashes, positions)) for every hash bucket."""

    def __init__(self, buckets: int, read: ReadConfig):
        self.buckets = buckets
        self.read = read

    def process(self, segment: Tuple[int, str]):
        index, path = segment
        with open_segment(path) as stream:
            records = (
                (record, item["raw_content"])
                for record, item in self.read.segment(stream, path)
                if not isinstance(item, BadRecord)
            )
            parts = segment_line_hashes(records, self.buckets)
        for bucket, (hashes, positions) in enumerate(parts):
            if len(hashes):
                yield bucket, (index, hashes, positions)


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
        (path,) = groups["path"]
        removed_parts = groups["removed"]
        removed = removed_lines_by_record(
            np.concatenate(removed_parts) if removed_parts else np.empty(0, dtype=np.uint64)
        )
        self.segments.inc()
        with open_segment(path) as stream:
            for record, item in self.read.segment(stream, path):
                if isinstance(item, BadRecord):
                    counter(f"read/bad/{item.kind}").inc()
                    yield beam.pvalue.TaggedOutput(BAD, item)
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
    segment (pass 2). No worker holds more than one bucket of hashes or one segment's removals."""

    def __init__(self, config: DedupConfig, read: ReadConfig = None):
        super().__init__()
        self.config = config
        self.read = read or ReadConfig()

    def expand(self, segments):
        removed = (
            segments
            | "HashLines" >> beam.ParDo(HashSegment(self.config.hash_buckets, self.read))
            | "GroupByBucket" >> beam.GroupByKey()
            | "FindDuplicates" >> beam.FlatMap(find_duplicates, self.config.mode)
        )
        return {"path": segments, "removed": removed} | "JoinBySegment" >> beam.CoGroupByKey() | (
            "RemoveLines"
            >> beam.ParDo(RemoveDuplicateLines(self.config.min_len, self.read)).with_outputs(DROPPED, BAD, main=KEPT)
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
        self.identifier = LanguageIdentifier(localize(self.config.model_path))
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
    def __init__(self, lm_dir: str):
        self.lm_dir = lm_dir
        self.scored = counter("perplexity/scored")
        self.no_model = counter("perplexity/no_model")

    def setup(self):
        if is_remote(self.lm_dir):  # fetched language by language, on first use
            self.models = LanguageModels(tempfile.mkdtemp(prefix="lm-"), remote_languages(self.lm_dir))
            self.fetched = set()
        else:
            self.models = LanguageModels(self.lm_dir)  # each language's pair loads on first use

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
    """Documents -> documents with CCNet's perplexity under their language's model (null when
    ``lm_dir`` has no model for the language)."""

    def __init__(self, lm_dir: str):
        super().__init__()
        self.lm_dir = lm_dir

    def expand(self, docs):
        return docs | "Score" >> beam.ParDo(ScorePerplexity(self.lm_dir))


def assign_bucket(element, cutoffs: Cutoffs, config: BucketConfig):
    order, doc = element
    return order, {**doc, "bucket": bucket(doc["perplexity"], doc["language"], cutoffs, config)}


def perplexity_by_language(element):
    _, doc = element
    if doc["perplexity"] is not None:
        yield doc["language"], doc["perplexity"]


class Bucket(beam.PTransform):
    """Documents -> (documents with ``bucket`` head/middle/tail, cutoffs as a one-element
    PCollection). Cutoffs are given (a CCNet cutoff.csv) or computed from the documents
    themselves: per-language quantiles at every percentile, then the bucketing pass."""

    def __init__(self, config: BucketConfig, cutoffs: Optional[Cutoffs] = None):
        super().__init__()
        self.config = config
        self.cutoffs = cutoffs

    def expand(self, docs):
        if self.cutoffs is not None:
            cutoffs = docs.pipeline | "GivenCutoffs" >> beam.Create([self.cutoffs])
        else:
            cutoffs = (
                docs
                | "PerplexityByLanguage" >> beam.FlatMap(perplexity_by_language)
                | "Percentiles" >> beam.ApproximateQuantiles.PerKey(num_quantiles=len(PERCENTILES))
                | "CutoffsToDict" >> beam.combiners.ToDict()
            )
        bucketed = docs | "Assign" >> beam.Map(assign_bucket, beam.pvalue.AsSingleton(cutoffs), self.config)
        return bucketed, cutoffs


# --- WriteShards -------------------------------------------------------------------------


class WriteParquet(beam.DoFn):
    """(relative path, [(order, Document)]) -> one zstd Parquet file in input order, written
    atomically; yields a summary of the file for the manifest."""

    def __init__(self, output: str):
        self.output = output

    def process(self, shard):
        relative, items = shard
        docs = [doc for _, doc in sorted(items, key=lambda item: item[0])]

        def write(stream):
            with pq.ParquetWriter(stream, ARROW_SCHEMA, compression="zstd") as writer:
                for start in range(0, len(docs), ROWS_PER_ROW_GROUP):
                    chunk = docs[start : start + ROWS_PER_ROW_GROUP]
                    writer.write_table(pa.Table.from_pylist(chunk, schema=ARROW_SCHEMA))

        write_atomically(f"{self.output}/{relative}", write)
        counter("output/files").inc()
        yield {
            "path": relative,
            "documents": len(docs),
            "characters": sum(doc["length"] for doc in docs),
        }


class CountOutput(beam.DoFn):
    def process(self, element):
        _, doc = element
        key = f"{doc['language']}/{doc['bucket']}"
        counter(f"output/documents/{key}").inc()
        counter(f"output/characters/{key}").inc(doc["length"])
        yield element


class WriteShards(beam.PTransform):
    """Kept documents -> OUT/<language>/<bucket>/part-XXXXX.parquet, one file per language,
    bucket and group of ``segments_per_shard`` input segments. Returns the file summaries."""

    def __init__(self, output: str, segments_per_shard: int):
        super().__init__()
        self.output = output
        self.segments_per_shard = segments_per_shard

    def shard_path(self, element) -> str:
        order, doc = element
        shard = order[0] // self.segments_per_shard
        return f"{doc['language']}/{doc['bucket']}/part-{shard:05d}.parquet"

    def expand(self, docs):
        return (
            docs
            | "Count" >> beam.ParDo(CountOutput())
            | "KeyByShard" >> beam.Map(lambda element: (self.shard_path(element), element))
            | "GroupByShard" >> beam.GroupByKey()
            | "Write" >> beam.ParDo(WriteParquet(self.output))
        )


# --- Quarantine --------------------------------------------------------------------------


def write_bad_records(segment_records: Tuple[str, Iterable[BadRecord]], output: str) -> Dict:
    """Write one segment's bad records as JSON lines, by offset; returns a file summary."""
    relative, records = segment_records
    lines = [json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in sorted(records, key=lambda r: r.offset)]
    write_atomically(f"{output}/{relative}", lambda stream: stream.write("".join(lines).encode("utf-8")))
    return {"path": relative, "records": len(lines)}


class Quarantine(beam.PTransform):
    """Bad input -> OUT/quarantine/bad-input/<segment>.jsonl (kind, offset, reason, bytes).
    Returns a summary per file written."""

    def __init__(self, output: str):
        super().__init__()
        self.output = output

    def expand(self, bad):
        return (
            bad
            | "KeyBySegment" >> beam.Map(lambda r: (f"quarantine/bad-input/{r.cc_segment.replace('/', '_')}.jsonl", r))
            | "GroupBySegment" >> beam.GroupByKey()
            | "Write" >> beam.Map(write_bad_records, self.output)
        )


class WriteDropped(beam.PTransform):
    """Dropped documents -> OUT/quarantine/dropped/<reason>/part-XXXXX.parquet (opt-in)."""

    def __init__(self, output: str, segments_per_shard: int):
        super().__init__()
        self.output = output
        self.segments_per_shard = segments_per_shard

    def expand(self, dropped):
        def keyed(element):
            order, (reason, doc) = element
            shard = order[0] // self.segments_per_shard
            return f"quarantine/dropped/{reason}/part-{shard:05d}.parquet", (order, doc)

        return (
            dropped
            | "KeyByReason" >> beam.Map(keyed)
            | "GroupByShard" >> beam.GroupByKey()
            | "Write" >> beam.ParDo(WriteParquet(self.output))
        )
