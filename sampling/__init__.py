"""Language sampling for multilingual pretraining: ``language_probs`` (XLM-R's alpha smoothing),
pooled small languages and UniMax (``sampling.probs``), ``MultilingualSampler`` over a corpus
folder, and a plot command. No Beam, no torch."""
from sampling.probs import grouped_probs, language_probs, unimax_probs
from sampling.sampler import MultilingualSampler

__all__ = ["MultilingualSampler", "grouped_probs", "language_probs", "unimax_probs"]
