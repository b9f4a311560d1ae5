"""What the job writes into OUT: the shards (the committed documents of consecutive segments
regrouped per language and bucket into files of about the target size, as CCNet's regroup step
does), cutoffs.csv, and last stats.json and manifest.json."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from ccnet_pipeline.shards import ShardWriter
from ccnet_pipeline.stats import JobStats, file_counters, sum_counters
from ccnet_pipeline.steps.batches import (
    raise_counters,
)
from ccnet_pipeline.steps.commit import read_committed
from filters.perplexity import BucketConfig, Cutoffs, bucket, format_cutoffs
from toolkit import storage
from toolkit.corpus import CorpusManifest, Layout, ShardEntry, read_parquet_where


def write_summaries(summaries: List[ShardEntry]) -> List[ShardEntry]:
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
        with ShardWriter(self.layout, shard, self.output_format) as writer:
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


def write_cutoffs(cutoffs: Cutoffs, layout: Layout) -> None:
    """OUT/cutoffs.csv: the perplexity percentiles per language the buckets are cut at."""
    storage.write_text(layout.cutoffs, format_cutoffs(cutoffs))


def write_manifest_and_stats(
    files: List[ShardEntry],
    layout: Layout,
    output_format: str,
    config: Dict,
    options: Dict,
    cutoffs: Dict[str, Dict[str, float]],
    counters: Dict[str, int],
) -> None:
    storage.write_json(layout.stats, JobStats.from_counters(counters, files).to_json())
    CorpusManifest(output_format, files, cutoffs, config, options).write(layout)


class WriteManifestAndStats(beam.PTransform):
    """(written files, counters, cutoffs used) -> OUT/stats.json (``JobStats``: every counter,
    from the committed segments and the written files) and OUT/manifest.json
    (``CorpusManifest``: every file, the perplexity cutoffs used, and the exact config and Beam
    options that produced them), once every file is written."""

    def __init__(self, layout: Layout, output_format: str, config: Dict, options: Dict):
        super().__init__()
        self.layout = layout
        self.output_format = output_format
        self.config = config
        self.options = options

    def expand(self, inputs):
        files, counters, cutoffs = inputs
        return (
            files
            | "CollectSummaries" >> beam.combiners.ToList()  # one per output file: bounded by target_shard_size
            | "Write"
            >> beam.Map(
                write_manifest_and_stats,
                self.layout,
                self.output_format,
                self.config,
                self.options,
                beam.pvalue.AsSingleton(cutoffs),
                beam.pvalue.AsSingleton(counters | "SumCounters" >> beam.CombineGlobally(sum_counters)),
            )
        )
