"""Near-duplicate removal in the mine job (``--near-dedup minhash``) on planted near-duplicates
(``ccnet_pipeline/samples/near_duplicates.py``): the drops against the brute-force truth of every pair's exact
Jaccard similarity, the earliest document of each cluster kept, reruns identical."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.samples.near_duplicates import LANGUAGES, generate, true_pairs, write_wet
from filters.minhash import jaccard

THRESHOLD = 0.8


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    docs = generate(seed=0, groups_per_kind=2)
    write_wet(root / "wet", docs)
    return root, docs


def mine(root: Path, out: Path, *extra: str) -> dict:
    argv = ["mine", "--input", f"{root}/wet/*", "--output", str(out), "--langs", ",".join(LANGUAGES), "--keep-dropped"]
    assert main([*argv, "--near-dedup", "minhash", *extra]) == 0
    return json.loads((out / "stats.json").read_text())


def rows(paths):
    return [row for path in sorted(paths) for row in pq.read_table(path).to_pylist()]


def reached(out: Path):
    """(every document near-dedup saw, as the truth reads it, and the drops: (url, kept url))."""
    kept = rows(p for p in out.glob("*/*/part-*.parquet"))
    dropped = rows((out / "quarantine" / "dropped" / "near_duplicate").glob("*.parquet"))
    seen = [{"url": r["url"], "text": r["raw_content"], "language": r["language"]} for r in kept + dropped]
    return seen, [(r["url"], r["kept"]) for r in dropped], dropped


def scores(seen, drops):
    """(precision, recall) of the dropped pairs against the true pairs at ``THRESHOLD``."""
    text = {doc["url"]: (doc["text"], doc["language"]) for doc in seen}
    correct = sum(jaccard(text[url][0], text[kept][0], text[url][1], 5) >= THRESHOLD for url, kept in drops)
    truth = true_pairs(seen, THRESHOLD, 5)
    dropped = {url for url, _ in drops}
    found = sum(a in dropped or b in dropped for a, b in truth)
    return correct / max(len(drops), 1), found / max(len(truth), 1), len(truth)


def test_planted_near_duplicates_are_found_against_the_brute_force_truth(planted, tmp_path, capsys):
    root, docs = planted
    figures = {}
    for verify in ((), ("--minhash-verify",)):
        out = tmp_path / ("verified" if verify else "plain")
        stats = mine(root, out, *verify)
        seen, drops, dropped = reached(out)
        precision, recall, pairs = scores(seen, drops)
        figures[bool(verify)] = (precision, recall)
        print(
            f"verify={bool(verify)}: {len(drops)} dropped, {pairs} true pairs: precision {precision:.3f} recall {recall:.3f}"
        )
        assert stats["dropped"]["near_duplicate"] == len(drops) and stats["counters"]["near_dedup/unconverged"] == 0
        # Each cluster keeps its earliest document (by segment and record: write_wet puts
        # document i in segment i mod 3) and names it.
        kept_urls = {row["url"] for row in rows(out.glob("*/*/part-*.parquet"))}
        position = {doc["url"]: (i % 3, i // 3) for i, doc in enumerate(docs)}
        assert all(kept in kept_urls and position[kept] < position[url] for url, kept in drops)
        assert all(row["cluster"] >> 32 == position[row["kept"]][0] for row in dropped)
        if verify:
            assert all(row["similarity"] >= THRESHOLD for row in dropped)
    precision, recall = figures[True]
    assert recall >= 0.95 and precision >= 0.98, figures
    # The planted copies that must stay (partial copies, unrelated pages) stay.
    kept_urls = {row["url"] for row in rows((tmp_path / "verified").glob("*/*/part-*.parquet"))}
    assert {doc["url"] for doc in docs if doc["kind"] in ("partial", "unrelated")} <= kept_urls


def test_a_second_run_finds_the_same_clusters(planted, tmp_path):
    root, _ = planted
    first, second = tmp_path / "first", tmp_path / "second"
    mine(root, first, "--minhash-verify")
    mine(root, second, "--minhash-verify")
    files = lambda out: {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.parquet")}
    assert files(first) == files(second) and files(first)
    # The band keys and the documents that waited for the clusters are gone once the job is done.
    assert (first / "_work" / "complete").exists() and not list((first / "_work").rglob("minhash/*"))


def test_line_dedup_off_for_a_fineweb_style_job(planted, tmp_path):
    root, _ = planted
    stats = mine(root, tmp_path / "fineweb", "--dedup", "none")
    assert stats["lines_removed_by_dedup"] == 0 and stats["dropped"]["near_duplicate"] > 0
