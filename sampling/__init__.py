"""Language sampling for multilingual pretraining: ``language_probs`` (XLM-R's alpha smoothing),
pooled small languages and UniMax (``sampling.probs``), and a plot command. No Beam, no torch."""
from sampling.probs import grouped_probs, language_probs, unimax_probs

__all__ = ["grouped_probs", "language_probs", "unimax_probs"]
