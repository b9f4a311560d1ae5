"""CCNet interop both ways: `mine --output-format ccnet` writes CCNet's layout, `import-ccnet`
turns CCNet's output (or Dolma's wrapping of it) into this project's Parquet corpus."""

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ccnet_pipeline.ccnet_json import CCNET_FIELDS, from_ccnet
from ccnet_pipeline.cli import main
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from sampling import MultilingualSampler
from tests.support.helpers import SHARED_DATA

DOLMA_SAMPLE = SHARED_DATA / "ccnet-output" / "cc_en_head-0091.jsonl.gz"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("interop")
    generate_sample(str(root / "wet"), SampleConfig(segments=2, docs_per_segment=200, sites=60, seed=11))
    return root


def mine(sample: Path, output: Path, lm_dir: Path, *extra: str) -> dict:
    argv = [
        "mine",
        "--input",
        str(sample / "wet" / "*.warc.wet.gz"),
        "--output",
        str(output),
        "--langs",
        "en,de,fr,es,ru",
        "--lm-dir",
        str(lm_dir),
        *extra,
    ]
    assert main(argv) == 0
    return json.loads((output / "stats.json").read_text())


def all_rows(corpus: Path):
    rows = [row for path in sorted(corpus.glob("*/*/*.parquet")) for row in pq.read_table(path).to_pylist()]
    return sorted(rows, key=lambda row: (row["url"], row["digest"]))


@pytest.fixture(scope="module")
def both(sample, lm_dir):
    parquet, ccnet = sample / "parquet", sample / "ccnet"
    return (
        mine(sample, parquet, lm_dir),
        parquet,
        mine(sample, ccnet, lm_dir, "--output-format", "ccnet", "--target-shard-size", "30KB"),
        ccnet,
    )


def test_ccnet_layout_and_fields(both):
    parquet_stats, _, stats, ccnet = both
    names = sorted(p.name for p in ccnet.glob("*.json.gz"))
    # about 33 KB of English tail text per segment: one file per segment at a 30 KB target
    assert {"en_head_0000.json.gz", "en_tail_0001.json.gz", "es_all_0000.json.gz"} <= set(names)
    assert not list(ccnet.glob("*/*/*.parquet"))
    manifest = json.loads((ccnet / "manifest.json").read_text())
    assert (manifest["format"], manifest["layout"]) == ("ccnet-json", "<language>_<bucket>_XXXX.json.gz")
    assert sorted(f["path"] for f in manifest["files"]) == names
    assert stats["output"] == parquet_stats["output"]
    with gzip.open(ccnet / "en_head_0000.json.gz", "rt", encoding="utf-8") as handle:
        record = json.loads(handle.readline())
    assert list(record) == list(CCNET_FIELDS)
    assert (
        record["language"] == "en"
        and record["bucket"] == "head"
        and round(record["language_score"], 2) == record["language_score"]
    )
    with gzip.open(ccnet / "es_all_0000.json.gz", "rt", encoding="utf-8") as handle:
        assert "perplexity" not in json.loads(handle.readline())  # no model for es, as CCNet


def test_mine_then_import_gives_back_the_parquet_corpus(both, tmp_path):
    _, parquet, _, ccnet = both
    imported = tmp_path / "imported"
    assert main(["import-ccnet", "--input", str(ccnet / "*.json.gz"), "--output", str(imported)]) == 0
    assert all_rows(imported) == all_rows(parquet)
    stats = json.loads((imported / "stats.json").read_text())
    assert stats["bad_records"] == {} and stats["documents_read"] == len(all_rows(parquet))
    sampler = MultilingualSampler(str(imported), seed=0)
    assert {next(sampler)["language"] for _ in range(200)} == {"en", "de", "fr", "es", "ru"}


def test_a_ccnet_layout_corpus_is_refused_by_the_sampler_with_a_pointer(both):
    with pytest.raises(ValueError, match="ccnet-json format; convert it with python -m ccnet_pipeline import-ccnet"):
        MultilingualSampler(str(both[3]))


def test_plain_ccnet_record():
    record = {
        "url": "https://ex.org/a",
        "date_download": "2019-02-16T04:15:08Z",
        "digest": "sha1:ABC",
        "length": 20,
        "nlines": 2,
        "source_domain": "ex.org",
        "title": "T",
        "raw_content": "First line.\nSecond line.",
        "cc_segment": "crawl-data/CC-MAIN-2019-09/x.warc.wet.gz",
        "original_nlines": 5,
        "original_length": 80,
        "line_ids": [0, 3],
        "language": "zh",
        "language_score": 0.97,
        "perplexity": 210.3,
        "bucket": "head",
    }
    doc = from_ccnet(record)
    assert (doc["raw_content"], doc["length"], doc["nlines"], doc["line_ids"]) == (
        "First line.\nSecond line.",
        24,
        2,
        [0, 3],
    )
    assert (doc["original_nlines"], doc["original_length"], doc["language"], doc["perplexity"], doc["bucket"]) == (
        5,
        80,
        "zh",
        210.3,
        "head",
    )
    assert doc["duplicate_line_frac"] == 0.6 and doc["terminal_punct_frac"] == 1.0
    assert from_ccnet({**record, "perplexity": -1})["perplexity"] is None  # CCNet's "no perplexity"
    for broken, message in (
        ({"raw_content": None}, "no text"),
        ({"url": ""}, "no url"),
        ({"bucket": "a/b"}, "bucket"),
        ({"language": None}, "language"),
        ({"language": "../en"}, "language"),
        ({"original_nlines": "5"}, "original_nlines"),
        ({"language_score": "high"}, "language_score"),
    ):
        with pytest.raises(ValueError, match=message):
            from_ccnet({**record, **broken})


@pytest.mark.skipif(not DOLMA_SAMPLE.exists(), reason="../shared/data/ccnet-output absent")
def test_import_real_dolma_wrapped_ccnet_output(tmp_path):
    out = tmp_path / "corpus"
    assert main(["import-ccnet", "--input", str(DOLMA_SAMPLE), "--output", str(out)]) == 0
    rows = pq.read_table(out / "en" / "head" / "part-00000.parquet").to_pylist()
    assert len(rows) == 10
    first = rows[0]
    assert first["url"] == "http://100kinvesting.com/2016/11/28/first-teleconference-calls-invoice-factoring/"
    assert (first["perplexity"], round(first["language_score"], 2), first["original_nlines"]) == (304.6, 0.95, 105)
    # Dolma's text keeps 2 of the 5 lines CCNet's line_ids name: the ids no longer fit, so they go.
    assert first["nlines"] == 2 and first["line_ids"] is None
    kept = next(row for row in rows if row["url"] == "http://9crimes.org/charlesxavier/")
    assert kept["line_ids"] == [4, 6]
    with gzip.open(DOLMA_SAMPLE, "rt", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for line in handle]
    assert [row["raw_content"] for row in rows] == texts


def test_bad_lines_are_quarantined_and_the_rest_kept(tmp_path):
    good = {"url": "https://ex.org/{}", "raw_content": "A line of text.", "language": "en", "bucket": "all"}
    lines = [
        json.dumps({**good, "url": "https://ex.org/1"}),
        "{not json",
        "[1, 2]",
        json.dumps({**good, "url": None}),
        "",
        json.dumps({**good, "url": "https://ex.org/2"}),
    ]
    folder = tmp_path / "ccnet"
    folder.mkdir()
    (folder / "en_all_0000.json.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    pages = [
        json.dumps({**good, "url": f"https://ex.org/3/{i}", "raw_content": f"Page number {i} of fifty."})
        for i in range(50)
    ]
    whole = gzip.compress(("\n".join(pages) + "\n").encode(), mtime=0)
    (folder / "en_all_0001.json.gz").write_bytes(whole[: len(whole) - 30])  # cut inside the stream
    out = tmp_path / "corpus"
    assert main(["import-ccnet", "--input", str(folder / "*.json.gz"), "--output", str(out)]) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["bad_records"] == {"invalid_json": 2, "malformed_record": 1, "truncated_gzip": 1}
    kept = [row["url"] for path in sorted(out.glob("en/all/*.parquet")) for row in pq.read_table(path).to_pylist()]
    assert kept[:2] == ["https://ex.org/1", "https://ex.org/2"]
    assert 30 <= len(kept) - 2 < 50 and kept[2:] == [
        f"https://ex.org/3/{i}" for i in range(len(kept) - 2)
    ]  # before the cut
    quarantined = [
        json.loads(line)
        for f in sorted((out / "quarantine" / "bad-input").iterdir())
        for line in f.read_text().splitlines()
    ]
    assert sorted(q["kind"] for q in quarantined) == [
        "invalid_json",
        "invalid_json",
        "malformed_record",
        "truncated_gzip",
    ]
