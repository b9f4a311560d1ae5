"""The mine job's step plan: the document steps after line dedup, in the order documents go
through them, in one list (as cc_net's ``pipeline``); ``pipeline.build`` makes the graph of it."""

from __future__ import annotations

from typing import List, Type, Union

from ccnet_pipeline.config import MineConfig
from ccnet_pipeline.steps.near_dedup import NearDuplicates
from filters.perplexity import PerplexityScorer
from filters.quality import QualityFilter
from filters.stage import Counted, Stage
from lid.mixed import MixedPages
from lid.model import LanguageFilter

Step = Union[Stage, Type[Counted]]  # a document stage, or NearDuplicates: near-dedup, a step over the whole corpus


def step_plan(config: MineConfig) -> List[Step]:
    """The document steps ``config`` turns on after line dedup, in order: each a ``Stage``
    (``filters.stage``), but near-dedup, ``NearDuplicates``, which the graph builds over the whole
    corpus (``steps.near_dedup``). Language ID comes before near-dedup so that it works per
    language, perplexity after it so that the cutoffs are computed on what stays. A new filter is
    a class in filters/, its config field, and one line here."""
    steps = [
        QualityFilter(config.quality),
        MixedPages(config.lid) if config.lid.mixed != "keep" else None,
        LanguageFilter(config.lid),
        NearDuplicates if config.near_dedup == "minhash" else None,
        PerplexityScorer(config.lm_dir, config.perplexity) if config.lm_dir else None,
    ]
    return [step for step in steps if step is not None]
