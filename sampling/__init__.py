"""Language sampling for multilingual pretraining: ``language_probs`` (XLM-R's alpha smoothing),
pooled small languages and UniMax (``sampling.probs``), the ``LanguageMixture`` every consumer
draws languages through, the ``EpochStream`` every consumer reads a language's items through,
``MultilingualSampler`` over a corpus folder, and a plot command. No Beam, no torch."""

from sampling.mixture import POLICIES, LanguageMixture, MixtureConfig
from sampling.probs import XLMR_ALPHA, grouped_probs, language_probs, unimax_probs
from sampling.sampler import MultilingualSampler
from sampling.stream import EpochStream

__all__ = [
    "POLICIES",
    "XLMR_ALPHA",
    "EpochStream",
    "LanguageMixture",
    "MixtureConfig",
    "MultilingualSampler",
    "grouped_probs",
    "language_probs",
    "unimax_probs",
]
