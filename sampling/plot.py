"""A PNG of each language's raw share of the data against its sampling probability."""

from __future__ import annotations

from typing import Dict, Mapping

from toolkit import storage
from toolkit.corpus import CorpusManifest


def corpus_sizes(corpus_dir: str, unit: str = "characters") -> Dict[str, int]:
    """Per-language size of a corpus folder (its manifest.json), summed over buckets."""
    languages = CorpusManifest.read(corpus_dir).languages
    return {lang: sum(b[unit] for b in buckets.values()) for lang, buckets in languages.items()}


def draw_shares(sizes: Mapping[str, float], probs: Mapping[str, float], title: str = ""):
    """Bars per language, largest first: its raw share and its sampling probability on a log axis,
    and a line at the uniform share 1/languages (where small alphas tend); ``title``: how the
    probabilities were made (``MixtureConfig.describe()``)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    languages = sorted(sizes, key=lambda lang: -sizes[lang])
    total = sum(sizes.values())
    positions = range(len(languages))
    figure = Figure(figsize=(max(12.0, 0.3 * len(languages) + 2), 6.0), layout="constrained")
    axes = figure.add_subplot()
    axes.bar([p - 0.2 for p in positions], [sizes[lang] / total for lang in languages], width=0.4, label="raw share")
    axes.bar([p + 0.2 for p in positions], [probs[lang] for lang in languages], width=0.4, label="sampling probability")
    if languages:
        uniform = 1 / len(languages)
        axes.axhline(uniform, color="black", linestyle=":", linewidth=1.5, label=f"uniform: 1/{len(languages)}")
    axes.set_xticks(list(positions), languages, rotation=90 if len(languages) > 15 else 0)
    axes.set_xlim(-0.6, len(languages) - 0.4)
    axes.set_yscale("log")
    axes.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{100 * value:g}%"))
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.tick_params(labelsize=10)
    axes.grid(axis="y", alpha=0.3)
    axes.set_xlabel("language, largest first", fontsize=11)
    axes.set_ylabel("share (log scale)", fontsize=11)
    axes.set_title(
        f"Each language's raw share of the corpus and its sampling probability ({title or 'as given'})", fontsize=13
    )
    axes.legend(fontsize=10)
    return figure


def plot_shares(sizes: Mapping[str, float], probs: Mapping[str, float], path: str, title: str = ""):
    """``draw_shares`` as a PNG at ``path``; returns the figure."""
    figure = draw_shares(sizes, probs, title)
    with storage.atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=100, format="png")
    return figure
