"""What language ID makes of real web pages: ``../shared``'s 697 CommonCrawl pages (CC-MAIN-2019-30,
text extracted by Dolma) written as a WET file, mined, and two corpora of them compared page by page.

    python -m bench.lid_pages wet --out out/lid-pages/pages.warc.wet.gz
    python -m ccnet_pipeline mine --input out/lid-pages/pages.warc.wet.gz --output out/lid-pages/after \\
        --langs 100 --lid-mode spaced --lang-thresholds lid/thresholds/lid.176.csv --mixed-pages split --keep-dropped
    python -m bench.lid_pages compare out/lid-pages/before out/lid-pages/after

``compare`` reads each corpus's rows (kept: the shards; dropped: ``quarantine/dropped/``, so mine
with ``--keep-dropped``) and prints how many pages keep other labels, are dropped or kept anew,
with the pages and their rows."""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import sys
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

PAGES = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "commoncrawl-text")
PAGES_FILE = "CC-MAIN-2019-30-00140.dolma.jsonl.gz"
Row = Tuple[str, str, int]  # (language, outcome: kept or the drop reason, characters)


def write_pages(out: str, source: str) -> int:
    """The pages as one WET file, each page's first line its title (as the README of ``../shared`` says)."""
    from ccnet_pipeline.samples.wet_writer import WetPage, write_wet

    pages = []
    with gzip.open(source, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            title, _, text = record["text"].partition("\n")
            date = record["metadata"].get("warc_date") or "2019-07-16T00:00:00Z"
            pages.append(WetPage("http://" + record["metadata"]["url"], date, title.strip(), text))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "wb") as stream:
        write_wet(stream, pages, os.path.basename(out))
    return len(pages)


def corpus_rows(root: str) -> Dict[str, List[Row]]:
    """Per page url, its rows in a mined corpus: kept ones and those dropped by language ID or later."""
    import pyarrow.parquet as pq

    rows: Dict[str, List[Row]] = defaultdict(list)
    kept = glob.glob(os.path.join(root, "*", "*", "*.parquet"))
    dropped = glob.glob(os.path.join(root, "quarantine", "dropped", "*", "*.parquet"))
    for path in kept + dropped:
        outcome = "kept" if path in kept else path.split(os.sep)[-2]
        table = pq.read_table(path, columns=["url", "language", "raw_content"]).to_pylist()
        for row in table:
            rows[row["url"]].append((row["language"] or "-", outcome, len(row["raw_content"])))
    return {url: sorted(page) for url, page in rows.items()}


def kept_labels(rows: List[Row]) -> Tuple[str, ...]:
    return tuple(sorted(language for language, outcome, _ in rows if outcome == "kept"))


def compare(before: Dict[str, List[Row]], after: Dict[str, List[Row]]) -> Dict[str, List[str]]:
    """The pages whose kept labels differ, grouped: another label, dropped (none kept now), kept anew."""
    groups: Dict[str, List[str]] = {"other labels": [], "dropped": [], "kept anew": []}
    for url in sorted(set(before) | set(after)):
        old, new = kept_labels(before.get(url, [])), kept_labels(after.get(url, []))
        if old == new:
            continue
        group = "dropped" if old and not new else "kept anew" if new and not old else "other labels"
        groups[group].append(url)
    return groups


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lid_pages", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    wet = sub.add_parser("wet", help="write the pages as a WET file")
    wet.add_argument("--out", required=True)
    wet.add_argument("--pages", default=os.path.join(PAGES, PAGES_FILE))
    comparison = sub.add_parser("compare", help="two corpora of the pages, page by page")
    comparison.add_argument("before")
    comparison.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "wet":
        print(f"wrote {write_pages(args.out, args.pages)} pages to {args.out}")
        return 0
    before, after = corpus_rows(args.before), corpus_rows(args.after)
    pages = len(set(before) | set(after))
    kept = lambda rows: sum(1 for page in rows.values() if kept_labels(page))
    print(f"{pages} pages; with a kept row: {kept(before)} before, {kept(after)} after")
    for group, urls in compare(before, after).items():
        print(f"\n{group}: {len(urls)} pages")
        for url in urls:
            show = lambda rows: " ".join(f"{lang}:{outcome}:{size}" for lang, outcome, size in rows)
            print(f"  {url}\n    before {show(before.get(url, []))}\n    after  {show(after.get(url, []))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
