"""One TestPipeline per composite transform, on WET files written by the test."""

import gzip
import json
import os

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from ccnet_pipeline.samples.wet_writer import raw_record
from ccnet_pipeline.steps.batches import BAD, DROPPED, KEPT, PERPLEXITIES, SEEN
from ccnet_pipeline.steps.commit import COMMITTED_SCHEMA, CommitSegments, write_committed
from ccnet_pipeline.steps.cutoffs import ComputeCutoffs
from ccnet_pipeline.steps.dedup import Deduplicate
from ccnet_pipeline.steps.read import Reading
from ccnet_pipeline.steps.stage import ApplyStage
from ccnet_pipeline.steps.write import WriteShards, pack_segments
from ccnet_pipeline.wet import BadRecord, ReadConfig
from filters.dedup import DedupConfig
from filters.document import ARROW_SCHEMA, make_document
from filters.perplexity import PERCENTILES, BucketConfig, PerplexityScorer
from filters.quality import QualityConfig, QualityFilter
from lid.model import LanguageFilter, LidConfig
from tests.support.helpers import TEXT, page, write_wet_file
from toolkit import storage
from toolkit.corpus import Layout, ShardEntry, read_parquet_where


def pipeline():
    return TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"]))


def each_document(batches, label):
    """Batches -> ((segment, record), document) per document."""
    return batches | f"Each{label}" >> beam.FlatMap(lambda b: [((b[0], record), d) for record, d in b[1]])


def each_dropped(batches, label):
    """Dropped batches -> ((segment, record), (reason, document)) per document."""
    return batches | f"Each{label}" >> beam.FlatMap(lambda b: [((b[0], r), (why, d)) for r, why, d in b[1]])


def as_batches(pairs):
    """((segment, record), document) pairs -> one batch per segment, in record order."""
    segments = {}
    for (index, record), d in sorted(pairs, key=lambda pair: pair[0]):
        segments.setdefault(index, []).append((record, d))
    return sorted(segments.items())


def doc(text, language=None, url="https://a.org/x"):
    d = make_document(
        url=url, date_download="2019-02-16T04:15:08Z", digest="sha1:X", title="t", raw_content=text, cc_segment="s"
    )
    return {**d, "language": language, "language_score": 0.9 if language else None}


@pytest.fixture
def segments(tmp_path):
    boiler = "Home | News | Contact"
    first = write_wet_file(
        tmp_path / "a.warc.wet.gz",
        [
            page(0, f"{boiler}\nunique line zero\nrepeated in doc\nrepeated in doc"),
            page(1, f"{boiler}\nunique line one"),
            raw_record(
                {"WARC-Type": "conversion", "WARC-Target-URI": "https://x", "WARC-Date": "d", "Content-Length": "4"},
                b"\xff\xfe\xfd\xfc",
            ),
        ],
    )
    second = write_wet_file(tmp_path / "b.warc.wet.gz", [page(2, f"{boiler}\nunique line two"), page(3, "short")])
    return [(0, (str(first), first.name)), (1, (str(second), second.name))]


def dedup(p, segments, config, work, to_mine=None):
    every = p | "Every" >> beam.Create(segments)
    mine = p | "ToMine" >> beam.Create(segments if to_mine is None else to_mine)
    return (every, mine) | Deduplicate(config, ReadConfig(), Layout(str(work)))


def test_deduplicate(segments, tmp_path):
    with pipeline() as p:
        out = dedup(p, segments, DedupConfig(mode="ccnet", hash_partitions=3, min_len=10), tmp_path)
        assert_that(out[KEPT] | "Batches" >> beam.Map(lambda b: b[0]), equal_to([0, 1]), label="one batch per segment")
        assert_that(
            each_document(out[KEPT], "Kept") | beam.Map(lambda e: (e[0], e[1]["raw_content"])),
            # a line repeated inside one page keeps its first copy, as CCNet
            equal_to(
                [
                    ((0, 0), "unique line zero\nrepeated in doc"),
                    ((0, 1), "unique line one"),
                    ((1, 0), "unique line two"),
                ]
            ),
            label="kept",
        )
        assert_that(
            each_dropped(out[DROPPED], "Dropped") | beam.Map(lambda e: (e[0], e[1][0])),
            equal_to([((1, 1), "too_short")]),
            label="dropped",
        )
        assert_that(
            out[BAD] | beam.MapTuple(lambda index, bad: (index, [r.kind for r in bad])),
            equal_to([(0, ["invalid_utf8"])]),
            label="bad",
        )
        assert_that(out[SEEN] | beam.Map(lambda e: e[0]), equal_to([0, 1]), label="seen")
    assert sorted(p.name for p in (tmp_path / "_work" / "hashes").iterdir()) == ["00000.npy", "00001.npy"]


def test_deduplicate_reads_committed_hashes_and_skips_committed_segments(segments, tmp_path):
    with pipeline() as p:
        dedup(p, segments, DedupConfig(mode="ccnet", hash_partitions=3, min_len=10), tmp_path)
    # Segment 0 committed: its hashes, read back (its WET file is gone), still remove the shared
    # boilerplate from segment 1.
    os.remove(segments[0][1][0])
    with pipeline() as p:
        out = dedup(
            p, segments, DedupConfig(mode="ccnet", hash_partitions=3, min_len=10), tmp_path, to_mine=segments[1:]
        )
        assert_that(
            each_document(out[KEPT], "Kept") | beam.Map(lambda e: (e[0], e[1]["raw_content"])),
            equal_to([((1, 0), "unique line two")]),
        )


def test_deduplicate_keep_first(segments, tmp_path):
    with pipeline() as p:
        out = dedup(p, segments, DedupConfig(mode="keep-first", hash_partitions=2, min_len=0), tmp_path)
        assert_that(
            each_document(out[KEPT], "Kept") | beam.Map(lambda e: (e[0], e[1]["raw_content"])),
            equal_to(
                [
                    ((0, 0), "Home | News | Contact\nunique line zero\nrepeated in doc"),
                    ((0, 1), "unique line one"),
                    ((1, 0), "unique line two"),
                    ((1, 1), "short"),
                ]
            ),
        )


def test_language_id(lid_model):
    docs = [((0, 0), doc(TEXT["fr"])), ((0, 1), doc(TEXT["de"])), ((0, 2), doc("1234 5678 ###"))]
    with pipeline() as p:
        out = (
            p
            | beam.Create(as_batches(docs))
            | ApplyStage(LanguageFilter(LidConfig(model_path=lid_model, threshold=0.5, languages=("fr", "en"))))
        )
        assert_that(
            each_document(out[KEPT], "Kept") | beam.Map(lambda e: (e[0], e[1]["language"])),
            equal_to([((0, 0), "fr")]),
            label="kept",
        )
        dropped = each_dropped(out[DROPPED], "Dropped")
        assert_that(
            dropped | beam.Map(lambda e: (e[0], e[1][0])),
            equal_to([((0, 1), "not_selected"), ((0, 2), "below_threshold")]),
            label="dropped",
        )
        assert_that(
            dropped | beam.Filter(lambda e: e[0] == (0, 1)) | beam.Map(lambda e: e[1][1]["language"]),
            equal_to(["de"]),
            label="dropped keeps the language",
        )


def test_cutoffs_from_the_data():
    pairs = [("en", float(v)) for v in range(1, 102)]
    with pipeline() as p:
        cutoffs = p | beam.Create(pairs) | ComputeCutoffs()
        # the 0th..99th percentiles of 1..101 (CCNet's cutoff.csv has no row 100)
        assert_that(cutoffs, equal_to([{"en": [float(v) for v in range(1, 101)]}]))


def test_given_cutoffs():
    given = {"en": [float(10 * p) for p in PERCENTILES]}
    with pipeline() as p:
        assert_that(p | beam.Create([("en", 1.0)]) | ComputeCutoffs(given), equal_to([given]))


def commit(tmp_path, index, docs):
    """Commit ``docs``, (record index, document) pairs, as segment ``index``."""
    write_committed(Layout(str(tmp_path)), index, docs)


def with_ppl(text, lang, ppl):
    return {**doc(text, lang), "perplexity": ppl}


def test_committed_segments_are_read_back_one_language_at_a_time(tmp_path):
    docs = [(r, with_ppl("x" * r, lang, 1.0)) for r, lang in enumerate(["fr", "en", "fr", "de", "en"])]
    commit(tmp_path, 0, docs)
    path = Layout(str(tmp_path)).segment_documents(0)
    groups, column = pq.ParquetFile(path).metadata, COMMITTED_SCHEMA.get_field_index("language")
    languages = [groups.row_group(g).column(column).statistics.min for g in range(groups.num_row_groups)]
    assert languages == ["de", "en", "fr"]  # a row group per language, records in order inside
    read = lambda lang: [row["record"] for t in read_parquet_where(path, "language", lang) for row in t.to_pylist()]
    assert (read("en"), read("fr"), read("de"), read("ja")) == ([1, 4], [0, 2], [3], [])


def test_pack_segments_into_shards_of_the_target_size():
    sizes = [(3, 40), (0, 60), (1, 50), (2, 10), (5, 500), (7, 1)]
    shards = list(pack_segments((("en", "head"), sizes), 100))
    assert shards == [
        (("en", "head", 0), [0]),  # 60 + 50 > 100
        (("en", "head", 1), [1, 2, 3]),  # 50 + 10 + 40
        (("en", "head", 2), [5]),  # alone above the target
        (("en", "head", 3), [7]),
    ]


def test_write_shards_in_input_order_with_buckets(tmp_path):
    commit(tmp_path, 0, [(1, with_ppl("dd", "fr", 5.0)), (3, with_ppl("aaaa", "fr", 50.0)), (4, doc("c" * 3, "en"))])
    commit(tmp_path, 1, [(0, with_ppl("b" * 5, "fr", 99.0)), (2, with_ppl("é" * 3, "fr", 55.0))])
    commit(tmp_path, 2, [(0, with_ppl("f" * 7, "fr", 58.0))])
    cutoffs = {"fr": [float(p) for p in PERCENTILES]}
    with pipeline() as p:
        given = p | "Cutoffs" >> beam.Create([cutoffs])
        # fr/middle: 4 bytes in segment 0, 6 (3 x é) in 1, 7 in 2: a 10-byte target packs [0, 1], [2]
        summaries = p | beam.Create([0, 1, 2]) | WriteShards(Layout(str(tmp_path)), 10, BucketConfig(), given)
        entry = lambda path, documents, characters: ShardEntry(
            path=path,
            language=path.split("/")[0],
            bucket=path.split("/")[1],
            documents=documents,
            characters=characters,
        )
        assert_that(
            summaries,
            equal_to(
                [
                    entry("fr/head/part-00000.parquet", 1, 2),
                    entry("fr/middle/part-00000.parquet", 2, 7),
                    entry("fr/middle/part-00001.parquet", 1, 7),
                    entry("en/all/part-00000.parquet", 1, 3),
                    entry("fr/tail/part-00000.parquet", 1, 5),
                ]
            ),
        )
    middle = pq.read_table(tmp_path / "fr/middle/part-00000.parquet")
    assert middle.column("raw_content").to_pylist() == ["aaaa", "ééé"]  # input order across segments
    assert middle.schema == ARROW_SCHEMA
    assert pq.ParquetFile(tmp_path / "fr/head/part-00000.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    assert not list(tmp_path.rglob("*.tmp*"))


def test_write_shards_in_ccnets_layout(tmp_path):
    commit(tmp_path, 0, [(1, with_ppl("dd", "fr", 5.0)), (3, with_ppl("aaaa", "fr", 5.5)), (4, doc("c" * 3, "en"))])
    cutoffs = {"fr": [float(p) for p in PERCENTILES]}
    with pipeline() as p:
        given = p | "Cutoffs" >> beam.Create([cutoffs])
        p | beam.Create([0]) | WriteShards(Layout(str(tmp_path)), 1, BucketConfig(), given, "ccnet")
    assert sorted(f.name for f in tmp_path.glob("*.json.gz")) == ["en_all_0000.json.gz", "fr_head_0000.json.gz"]
    data = (tmp_path / "fr_head_0000.json.gz").read_bytes()
    assert data[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # no file name, no time: reproducible
    first, second = (json.loads(line) for line in gzip.decompress(data).splitlines())
    assert list(first) == [
        "url",
        "date_download",
        "digest",
        "length",
        "nlines",
        "source_domain",
        "title",
        "raw_content",
        "cc_segment",
        "original_nlines",
        "original_length",
        "line_ids",
        "language",
        "language_score",
        "perplexity",
        "bucket",
    ]
    assert (first["raw_content"], first["language_score"], first["perplexity"], first["bucket"]) == (
        "dd",
        0.9,
        5.0,
        "head",
    )
    assert second["raw_content"] == "aaaa"
    (english,) = (
        json.loads(line) for line in gzip.decompress((tmp_path / "en_all_0000.json.gz").read_bytes()).splitlines()
    )
    assert "perplexity" not in english and english["bucket"] == "all"  # as CCNet, for a language without a model


def test_write_shards_groups_segments_in_order(tmp_path):
    for s in range(5):
        commit(tmp_path, s, [(0, doc(f"segment {s}", "en"))])
    with pipeline() as p:
        cutoffs = p | "Cutoffs" >> beam.Create([{}])
        # "segment N" is 9 bytes: an 18-byte target packs two segments per shard
        p | beam.Create(range(5)) | WriteShards(Layout(str(tmp_path)), 18, None, cutoffs)
    folder = tmp_path / "en" / "all"
    assert sorted(f.name for f in folder.iterdir()) == [
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    assert pq.read_table(folder / "part-00001.parquet").column("raw_content").to_pylist() == ["segment 2", "segment 3"]


def test_commit_segments(tmp_path):
    bad = BadRecord("invalid_utf8", "seg/a.wet.gz", 10, "<id>", "why", b"\xff")
    kept = [
        ((3, 2), {**doc("second"), "language": "en", "language_score": 0.9}),
        ((3, 0), {**doc("first"), "language": "en"}),
    ]
    results = {
        SEEN: [(3, "seg/a.wet.gz")],
        KEPT: as_batches(kept),
        DROPPED: [(3, [(1, "not_selected", doc("hallo", "de"))])],
        BAD: [(3, [bad])],
    }
    with pipeline() as p:
        out = {tag: p | f"Create{tag}" >> beam.Create(values) for tag, values in results.items()} | CommitSegments(
            Layout(str(tmp_path)), keep_dropped=True, steps=[Reading, LanguageFilter]
        )
        assert_that(out[KEPT], equal_to([3]), label="committed")
        assert_that(out[PERPLEXITIES], equal_to([]), label="perplexities")
        assert_that(
            out["counters"]
            | beam.Map(lambda c: (c["read/documents"], c["read/bad/invalid_utf8"], c["lid/dropped/not_selected"])),
            equal_to([(3, 1, 1)]),
            label="counters",
        )
    marker = json.loads((tmp_path / "_work/segments/00003.json").read_text())
    assert marker["path"] == "seg/a.wet.gz" and marker["counters"]["read/segments"] == 1
    lines = (tmp_path / "quarantine/bad-input/seg/a.wet.gz.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["payload_base64"] == "/w=="
    assert pq.read_table(tmp_path / "quarantine/dropped/not_selected/part-00003.parquet").column(
        "language"
    ).to_pylist() == ["de"]
    assert pq.read_table(tmp_path / "_work/segments/00003.parquet").column("record").to_pylist() == [0, 2]


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path):
    target = str(tmp_path / "sub" / "file.json")
    storage.write_bytes(target, b"old")
    storage.write_bytes(target, b"new")
    assert (tmp_path / "sub" / "file.json").read_bytes() == b"new"
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["file.json"]


def test_quality_signals():
    docs = [((0, 0), doc("A full sentence here.\nAnother one!")), ((0, 1), doc("menu\nhome\nlogin"))]
    with pipeline() as p:
        out = p | beam.Create(as_batches(docs)) | ApplyStage(QualityFilter(QualityConfig(min_terminal_punct_frac=0.5)))
        assert_that(
            each_document(out[KEPT], "Kept")
            | beam.Map(lambda e: (e[0], e[1]["terminal_punct_frac"], e[1]["short_line_frac"])),
            equal_to([((0, 0), 1.0, 1.0)]),
            label="kept",
        )
        assert_that(
            each_dropped(out[DROPPED], "Dropped") | beam.Map(lambda e: (e[0], e[1][0])),
            equal_to([((0, 1), "quality_terminal_punct_frac")]),
            label="dropped",
        )


def test_perplexity(lm_dir):
    text = "the house is big and we are going home today"
    docs = [((0, 0), doc(text, "en")), ((0, 1), doc(text, "sw"))]
    with pipeline() as p:
        out = p | beam.Create(as_batches(docs)) | ApplyStage(PerplexityScorer(str(lm_dir)))
        assert_that(
            each_document(out[KEPT], "Kept") | beam.Map(lambda e: (e[0], e[1]["perplexity"] is None)),
            equal_to([((0, 0), False), ((0, 1), True)]),
        )
