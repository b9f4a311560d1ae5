"""python -m sampling plot --corpus DIR --out shares.png [--sampling alpha|pooled|unimax] [--alpha 0.3] ..."""

from __future__ import annotations

import argparse
from typing import List, Optional

from sampling.mixture import MixtureConfig
from sampling.plot import corpus_sizes, plot_shares
from toolkit.cli import add_config_arguments, build_config, given, run_cli


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sampling", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    plot = sub.add_parser("plot", help="PNG of raw vs sampled language shares of a corpus")
    plot.add_argument("--corpus", required=True, help="corpus folder (its manifest.json)")
    plot.add_argument("--out", required=True, help="PNG file")
    plot.add_argument("--unit", choices=("documents", "characters"), default="characters")
    add_config_arguments(plot, MixtureConfig)
    return run_cli(_plot, parser, argv)


def _plot(args) -> int:
    mixture = build_config(MixtureConfig, given(args))
    sizes = corpus_sizes(args.corpus, args.unit)
    probs = mixture.probabilities(sizes)
    plot_shares(sizes, probs, args.out, mixture.describe())
    for lang in sorted(sizes, key=lambda lang: -sizes[lang]):
        print(f"{lang:8s} raw {sizes[lang] / sum(sizes.values()):8.4f}  sampled {probs[lang]:8.4f}")
    return 0
