"""Perplexity cutoffs: the given ones, or per-language percentiles of every committed
document's perplexity (this run's and those committed by earlier runs)."""

from __future__ import annotations

from typing import Optional

import apache_beam as beam

from ccnet_pipeline.steps.commit import read_committed
from filters.perplexity import PERCENTILES, Cutoffs
from toolkit.corpus import Layout


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


class ReadPerplexities(beam.DoFn):
    """A segment committed by an earlier run -> its documents' (language, perplexity)."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def process(self, index: int):
        table = read_committed(self.layout, index, ["language", "perplexity"])
        for language, perplexity in zip(*(table.column(c).to_pylist() for c in ("language", "perplexity"))):
            if perplexity is not None:
                yield language, perplexity
