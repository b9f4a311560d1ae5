"""MinHash LSH as configured (14 bands of 8 rows by default): the S-curve measured against the
theory, and the signature throughput on one core.

S-curve: for each target Jaccard similarity, pairs of documents built to have it exactly (the
first ``m`` of ``n`` distinct words shared, then words of each document's own: (m - 4) shared
5-word shingles of 2n - m - 4), and the share of pairs with at least one band key in common,
against ``1 - (1 - s^rows)^bands`` at each pair's exact similarity (a binomial share: its
standard error is given), with the mean error of the estimated Jaccard similarity.

Throughput: ``signatures`` and ``band_keys`` over about 5,000 pages of the near-duplicate test
set (``ccnet_pipeline/samples/near_duplicates.py``: 7 languages, Chinese and Japanese shingled by characters),
in batches of one segment's size, best of three rounds.

With ``--figure PATH`` the S-curve is also drawn (measured points with two standard errors, the
theoretical curve as the baseline, the 0.8 threshold marked): make bench-minhash writes
out/bench-minhash/scurve.png.

    .venv/bin/python -m bench.minhash_scurve [--pairs 1600] [--documents 5000] [--figure PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as a worker's share
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ccnet_pipeline.samples.embedded import letters  # noqa: E402
from ccnet_pipeline.samples.near_duplicates import generate  # noqa: E402
from filters.minhash import (  # noqa: E402
    MinHashConfig,
    band_keys,
    collision_probability,
    estimated_jaccard,
    jaccard,
    signatures,
)
from toolkit import storage  # noqa: E402

WORDS = [letters(i) for i in range(26**3)]  # letters only: dedup's digit folding merges no two
SIMILARITIES = (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)


def pair_at(similarity: float, rng: random.Random, words: int = 200, ngram: int = 5):
    """Two texts of ``words`` distinct words whose ``ngram``-word shingle sets have a Jaccard
    similarity as close to ``similarity`` as whole words allow."""
    shared = round((similarity * (2 * words - ngram + 1) + ngram - 1) / (1 + similarity))
    drawn = rng.sample(WORDS, 2 * words - shared)
    first = drawn[:words]
    second = drawn[:shared] + drawn[words:]
    return " ".join(first), " ".join(second)


def s_curve(config: MinHashConfig, pairs: int, seed: int) -> list:
    """Prints the table; returns its rows (exact similarity, measured share, standard error)."""
    rng = random.Random(seed)
    rows = []
    print(f"S-curve of {config.bands} bands x {config.rows} rows, {pairs} pairs per similarity")
    print(f"{'target':>6} {'exact':>6} {'measured':>9} {'theory':>7} {'std err':>8} {'estimate err':>13}")
    for target in SIMILARITIES:
        texts = [text for _ in range(pairs) for text in pair_at(target, rng, ngram=config.ngram)]
        exact = np.array([jaccard(a, b, "en", config.ngram) for a, b in zip(texts[0::2], texts[1::2])])
        sigs = signatures(texts, ["en"] * len(texts), config)
        keys = band_keys(sigs, ["en"] * len(texts), config)
        measured = np.mean((keys[0::2] == keys[1::2]).any(axis=1))
        theory = np.mean(collision_probability(exact, config.bands, config.rows))
        error = np.sqrt(theory * (1 - theory) / pairs)
        bias = np.mean(estimated_jaccard(sigs[0::2], sigs[1::2]) - exact)
        print(f"{target:6.2f} {exact.mean():6.3f} {measured:9.3f} {theory:7.3f} {error:8.3f} {bias:+13.4f}")
        rows.append((exact.mean(), measured, error))
    return rows


def draw(config: MinHashConfig, rows: list, pairs: int, path: str) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9.0, 6.0), layout="constrained")
    axes = figure.add_subplot()
    grid = np.linspace(0.0, 1.0, 201)
    axes.plot(
        grid,
        collision_probability(grid, config.bands, config.rows),
        color="black",
        linewidth=1.5,
        label=f"theory: 1 - (1 - s^{config.rows})^{config.bands}",
    )
    exact, measured, error = (np.array(column) for column in zip(*rows))
    axes.errorbar(
        exact,
        measured,
        yerr=2 * error,
        fmt="o",
        color="tab:red",
        capsize=3,
        label=f"measured: share of {pairs} pairs with a band key in common (±2 std err)",
    )
    axes.axvline(0.8, color="gray", linestyle=":", linewidth=1.2, label="Jaccard 0.8 (near-duplicate threshold)")
    axes.set_xlim(0.0, 1.0)
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("exact Jaccard similarity of the pair's 5-word shingles", fontsize=12)
    axes.set_ylabel("probability of becoming a candidate pair", fontsize=12)
    axes.set_title(
        f"MinHash LSH S-curve, {config.bands} bands x {config.rows} rows: measured against theory", fontsize=13
    )
    axes.tick_params(labelsize=11)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=10, loc="upper left")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with storage.atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=100, format="png")
    print(f"figure: {path}")


def throughput(config: MinHashConfig, documents: int, seed: int, batch: int = 1000) -> None:
    docs = generate(seed, groups_per_kind=max(1, round(documents / len(generate(seed, groups_per_kind=1)))))
    print(f"\nSignature throughput, one core, batches of {batch} documents, best of 3")
    print(f"{'documents':>22} {'count':>6} {'MB':>6} {'docs/s':>8} {'MB/s':>6}")
    signatures([docs[0]["text"]], [docs[0]["language"]], config)  # lookup tables built once per process
    for name, chosen in (
        ("all", docs),
        ("zh and ja (characters)", [doc for doc in docs if doc["language"] in ("zh", "ja")]),
        ("others (words)", [doc for doc in docs if doc["language"] not in ("zh", "ja")]),
    ):
        texts, languages = [doc["text"] for doc in chosen], [doc["language"] for doc in chosen]
        megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for low in range(0, len(texts), batch):
                sigs = signatures(texts[low : low + batch], languages[low : low + batch], config)
                band_keys(sigs, languages[low : low + batch], config)
            best = min(best, time.perf_counter() - start)
        print(f"{name:>22} {len(texts):6d} {megabytes:6.1f} {len(texts) / best:8.0f} {megabytes / best:6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1600, help="pairs per similarity of the S-curve")
    parser.add_argument("--documents", type=int, default=5000, help="documents of the throughput measure")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", help="also draw the S-curve as a PNG here")
    args = parser.parse_args()
    config = MinHashConfig()
    rows = s_curve(config, args.pairs, args.seed)
    if args.figure:
        draw(config, rows, args.pairs, args.figure)
    throughput(config, args.documents, args.seed)


if __name__ == "__main__":
    main()
