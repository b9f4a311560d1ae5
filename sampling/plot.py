"""A PNG of each language's raw share of the data against its sampling probability."""

from __future__ import annotations

from typing import Dict, Mapping

from toolkit import storage
from toolkit.corpus import CorpusManifest


def corpus_sizes(corpus_dir: str, unit: str = "characters") -> Dict[str, int]:
    """Per-language size of a corpus folder (its manifest.json), summed over buckets."""
    languages = CorpusManifest.read(corpus_dir).languages
    return {lang: sum(b[unit] for b in buckets.values()) for lang, buckets in languages.items()}


def plot_shares(sizes: Mapping[str, float], probs: Mapping[str, float], path: str, title: str = "") -> None:
    """Bars per language, largest first: raw share and sampling probability, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    languages = sorted(sizes, key=lambda lang: -sizes[lang])
    total = sum(sizes.values())
    positions = range(len(languages))
    figure, axes = plt.subplots(figsize=(max(6, 0.35 * len(languages)), 4))
    axes.bar([p - 0.2 for p in positions], [sizes[lang] / total for lang in languages], width=0.4, label="raw share")
    axes.bar([p + 0.2 for p in positions], [probs[lang] for lang in languages], width=0.4, label="sampling probability")
    axes.set_xticks(list(positions), languages, rotation=90)
    axes.set_yscale("log")
    axes.set_ylabel("share")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    with storage.atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=120, format="png")
    plt.close(figure)
