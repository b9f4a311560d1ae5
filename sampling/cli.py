"""python -m sampling plot --corpus DIR --out shares.png [--alpha 0.3 | --unimax-budget B] ..."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from sampling.plot import corpus_sizes, plot_shares
from sampling.probs import grouped_probs, language_probs, unimax_probs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sampling", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    plot = sub.add_parser("plot", help="PNG of raw vs smoothed language shares of a corpus")
    plot.add_argument("--corpus", required=True, help="corpus folder (its manifest.json)")
    plot.add_argument("--out", required=True, help="PNG file")
    plot.add_argument("--unit", choices=("documents", "characters"), default="characters")
    plot.add_argument("--alpha", type=float, default=0.3)
    plot.add_argument("--pool-below", type=float, default=0.0, help="pool languages smaller than this (same unit)")
    plot.add_argument("--unimax-budget", type=float, default=None, help="use UniMax with this budget (same unit)")
    plot.add_argument("--max-epochs", type=float, default=4.0, help="UniMax's cap on epochs per language")
    args = parser.parse_args(argv)
    try:
        sizes = corpus_sizes(args.corpus, args.unit)
        if args.unimax_budget is not None:
            probs, title = unimax_probs(sizes, args.unimax_budget, args.max_epochs), f"UniMax, {args.max_epochs:g} epochs"
        elif args.pool_below > 0:
            probs, title = grouped_probs(sizes, args.alpha, args.pool_below), f"alpha = {args.alpha:g}, pooled below {args.pool_below:g}"
        else:
            probs, title = language_probs(sizes, args.alpha), f"alpha = {args.alpha:g}"
    except (OSError, ValueError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    plot_shares(sizes, probs, args.out, title)
    for lang in sorted(sizes, key=lambda lang: -sizes[lang]):
        print(f"{lang:8s} raw {sizes[lang] / sum(sizes.values()):8.4f}  sampled {probs[lang]:8.4f}")
    return 0
