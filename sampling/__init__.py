"""Language sampling for multilingual pretraining: ``language_probs`` (XLM-R's alpha smoothing),
pooled small languages and UniMax (``sampling.probs``), the ``LanguageMixture`` every consumer
draws languages through, ``MultilingualSampler`` over a corpus folder, and a plot command. No Beam, no torch."""

from sampling.mixture import POLICIES, LanguageMixture, MixtureConfig
from sampling.probs import XLMR_ALPHA, grouped_probs, language_probs, unimax_probs
from sampling.sampler import MultilingualSampler

__all__ = [
    "POLICIES",
    "XLMR_ALPHA",
    "LanguageMixture",
    "MixtureConfig",
    "MultilingualSampler",
    "grouped_probs",
    "language_probs",
    "unimax_probs",
]
