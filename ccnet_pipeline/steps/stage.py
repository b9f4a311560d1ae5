"""Any pure stage of ``filters`` or ``lid`` (``filters.stage.Stage``) as a Beam step over batches."""

from __future__ import annotations

from typing import Sequence

import apache_beam as beam

from ccnet_pipeline.steps.batches import (
    DROPPED,
    KEPT,
    PROGRESS,
    Batch,
    counter,
    part_key,
)
from filters.stage import Results, Stage


def split_results(index: int, records: Sequence[int], results: Sequence[Results], stage: str):
    """A segment's stage results -> its kept batch (always, maybe empty) and, when the stage
    dropped any, its dropped batch on ``dropped``; live counters raised. The parts of a split
    document take keys of their own (``part_key``)."""
    kept, dropped = [], []
    keyed = []
    for record, result in zip(records, results):
        if isinstance(result, list):
            keyed.extend((part_key(record, part), each) for part, each in enumerate(result))
        else:
            keyed.append((record, result))
    for record, (doc, reason) in keyed:
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
