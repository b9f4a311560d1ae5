"""import-ccnet: CCNet's output files (JSON lines, or Dolma's wrapping of them) into this
project's Parquet corpus."""

from __future__ import annotations

import apache_beam as beam

from ccnet_pipeline.ccnet_json import CcnetReader
from ccnet_pipeline.progress import SegmentProgress
from ccnet_pipeline.shards import ShardWriter
from ccnet_pipeline.stats import SegmentCounts, segment_counters
from ccnet_pipeline.steps.batches import (
    COUNTERS,
    IMPORT_PASS,
    KEPT,
    raise_counters,
)
from ccnet_pipeline.steps.commit import write_bad_input
from ccnet_pipeline.steps.read import Reading, read_segment_items
from ccnet_pipeline.steps.write import write_summaries
from ccnet_pipeline.wet import BadRecord
from filters.dedup import DuplicateLineRemoval
from filters.perplexity import PerplexityScorer
from lid.model import LanguageFilter
from toolkit.corpus import Layout

# CCNet ran these steps on what it wrote: its documents are counted as the mine job counts its own
CCNET_STEPS = (Reading, DuplicateLineRemoval, LanguageFilter, PerplexityScorer)


class ConvertCcnetFile(beam.DoFn):
    """(index, (path, name) of a CCNet output file) -> its documents as Parquet shards
    ``<lang>/<bucket>/part-<index>.parquet`` (streamed, never held whole), its bad lines in
    the bad-input quarantine; yields the file summaries and, on ``counters``, its counters."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def process(self, element):
        index, (path, name) = element
        counts, bad = SegmentCounts(CCNET_STEPS), []
        with ShardWriter(self.layout, index) as writer:
            for _, item in read_segment_items(
                CcnetReader(), path, name, SegmentProgress(self.layout, IMPORT_PASS, index)
            ):
                if isinstance(item, BadRecord):
                    counts.bad(item)
                    bad.append(item)
                else:
                    counts.done(item)
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
