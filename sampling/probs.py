"""Language sampling probabilities for multilingual pretraining. Pure Python, no Beam, no torch.

XLM-R samples language i with probability p_i ∝ q_i^α, q_i being its share of the data and
α = 0.3 (Conneau et al. 2020): α = 1 keeps the data's proportions, α = 0 is uniform. Two
policies go beyond the paper: pooling the languages below a size threshold into one group that
is sampled as one language and split proportionally inside, and UniMax (Chung et al. 2023), a
budget spread as evenly as possible with at most N epochs of any language.
"""

from __future__ import annotations

from typing import Dict, Mapping

XLMR_ALPHA = 0.3  # the smoothing exponent of XLM-R (Conneau et al. 2020)


def _check(sizes: Mapping[str, float]) -> None:
    if not sizes:
        raise ValueError("no languages")
    negative = [lang for lang, size in sizes.items() if size < 0]
    if negative:
        raise ValueError(f"negative sizes for {', '.join(negative)}")
    if sum(sizes.values()) <= 0:
        raise ValueError("all sizes are zero")


def language_probs(sizes: Mapping[str, float], alpha: float = XLMR_ALPHA) -> Dict[str, float]:
    """p_i ∝ q_i^α for sizes in documents, characters or tokens; a language of size 0 gets 0."""
    _check(sizes)
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    total = sum(sizes.values())
    weights = {lang: (size / total) ** alpha if size > 0 else 0.0 for lang, size in sizes.items()}
    norm = sum(weights.values())
    return {lang: weight / norm for lang, weight in weights.items()}


def grouped_probs(sizes: Mapping[str, float], alpha: float = XLMR_ALPHA, threshold: float = 0.0) -> Dict[str, float]:
    """``language_probs`` with every language smaller than ``threshold`` pooled into one group,
    sampled as one language of their summed size and split proportionally to size inside."""
    _check(sizes)
    small = {lang: size for lang, size in sizes.items() if size < threshold}
    if len(small) < 2:
        return language_probs(sizes, alpha)
    pool = "\0pool"
    grouped = {lang: size for lang, size in sizes.items() if lang not in small}
    grouped[pool] = sum(small.values())
    probs = language_probs(grouped, alpha)
    pooled = probs.pop(pool)
    pool_size = grouped[pool]
    for lang, size in small.items():
        probs[lang] = pooled * size / pool_size if pool_size > 0 else pooled / len(small)
    return {lang: probs[lang] for lang in sizes}


def unimax_probs(sizes: Mapping[str, float], budget: float, max_epochs: float = 4.0) -> Dict[str, float]:
    """UniMax: spread ``budget`` (same unit as sizes) uniformly over the languages, smallest
    first, none getting more than ``max_epochs`` times its size; the leftover of the capped ones
    goes to the rest. Probabilities are each language's share of what was allotted."""
    _check(sizes)
    if budget <= 0 or max_epochs <= 0:
        raise ValueError("budget and max_epochs must be > 0")
    remaining = float(budget)
    allotted: Dict[str, float] = {}
    ordered = sorted(sizes.items(), key=lambda item: (item[1], item[0]))
    for position, (lang, size) in enumerate(ordered):
        share = remaining / (len(ordered) - position)
        allotted[lang] = min(share, size * max_epochs)
        remaining -= allotted[lang]
    total = sum(allotted.values())
    return {lang: allotted[lang] / total for lang in sizes}
