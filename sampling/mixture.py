"""The language mixture every consumer of a multilingual corpus shares: the sampler of documents
(``MultilingualSampler``: tokenizer training) and the trainer's block stream draw languages
through it. Sizes -> probabilities by policy, then a generator seeded per (seed, rank) draws the
language of each next item; its state is a JSON-serializable dict. No Beam, no torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

import numpy as np

from sampling.probs import XLMR_ALPHA, grouped_probs, language_probs, unimax_probs
from toolkit.cli import flag

POLICIES = ("alpha", "pooled", "unimax")


@dataclass(frozen=True)
class MixtureConfig:
    policy: str = field(
        default="alpha", metadata=flag("--sampling", choices=POLICIES)
    )  # alpha: p ∝ q^alpha (XLM-R); pooled: small languages pooled; unimax: UniMax
    alpha: float = XLMR_ALPHA  # the smoothing exponent (alpha and pooled)
    pool_below: float = 0.0  # pooled: languages smaller than this (in the sizes' unit) are sampled as one group
    unimax_budget: Optional[float] = None  # unimax: the budget in the sizes' unit; None: the data's total size
    max_epochs: float = 4.0  # unimax: at most this many epochs of any language

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"sampling policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if self.pool_below < 0 or self.max_epochs <= 0 or (self.unimax_budget is not None and self.unimax_budget <= 0):
            raise ValueError("pool_below >= 0, max_epochs > 0 and unimax_budget > 0 are required")

    def probabilities(self, sizes: Mapping[str, float]) -> Dict[str, float]:
        """Each language's sampling probability for data of ``sizes`` (documents, characters or tokens)."""
        if self.policy == "unimax":
            return unimax_probs(sizes, self.unimax_budget or sum(sizes.values()), self.max_epochs)
        if self.policy == "pooled":
            return grouped_probs(sizes, self.alpha, self.pool_below)
        return language_probs(sizes, self.alpha)

    def describe(self) -> str:
        if self.policy == "unimax":
            return f"UniMax, {self.max_epochs:g} epochs"
        if self.policy == "pooled":
            return f"alpha = {self.alpha:g}, pooled below {self.pool_below:g}"
        return f"alpha = {self.alpha:g}"


class LanguageMixture:
    """Draws languages with the config's probabilities over ``sizes``, from a generator seeded
    by (seed, rank): every rank draws its own sequence, the same on every run."""

    def __init__(self, sizes: Mapping[str, float], config: MixtureConfig, seed: int, rank: int = 0):
        self.probs = config.probabilities(sizes)
        self.languages = sorted(self.probs)
        self._p = np.array([self.probs[language] for language in self.languages])
        self._rng = np.random.default_rng([seed, rank])

    def draw(self, count: int) -> List[str]:
        """The languages of the next ``count`` items."""
        return [self.languages[i] for i in self._rng.choice(len(self.languages), size=count, p=self._p)]

    def state_dict(self) -> Dict:
        return self._rng.bit_generator.state

    def load_state_dict(self, state: Dict) -> None:
        self._rng.bit_generator.state = state
