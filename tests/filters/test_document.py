import pyarrow as pa

from filters.document import ARROW_SCHEMA, FIELDS, make_document, segment_name, segment_names

CCNET_FIELDS = (
    "url",
    "date_download",
    "digest",
    "source_domain",
    "title",
    "raw_content",
    "length",
    "nlines",
    "original_length",
    "original_nlines",
    "line_ids",
    "language",
    "language_score",
    "perplexity",
    "bucket",
    "cc_segment",
)


SIGNALS = ("duplicate_line_frac", "mean_line_length", "terminal_punct_frac", "non_alpha_frac", "short_line_frac")


def test_schema_has_ccnet_field_names_then_quality_signals():
    assert FIELDS == CCNET_FIELDS + SIGNALS


def test_make_document_fills_counts_and_defaults():
    doc = make_document(
        url="https://www.example.org:8080/a?b=1",
        date_download="2019-02-15T19:15:59Z",
        digest="sha1:ABC",
        title="Title",
        raw_content="héllo\nwörld",
        cc_segment="seg.warc.wet.gz",
    )
    assert doc["source_domain"] == "www.example.org:8080"
    assert (doc["length"], doc["nlines"], doc["original_length"], doc["original_nlines"]) == (11, 2, 11, 2)
    assert doc["line_ids"] == [0, 1]
    assert (doc["language"], doc["perplexity"], doc["bucket"]) == (None, None, "all")
    table = pa.Table.from_pylist([doc], schema=ARROW_SCHEMA)
    assert table.num_rows == 1 and table.schema == ARROW_SCHEMA


def test_segment_name_keeps_commoncrawl_path():
    path = "/data/cache/crawl-data/CC-MAIN-2019-09/segments/1550/wet/CC-MAIN-x.warc.wet.gz"
    assert segment_name(path) == "crawl-data/CC-MAIN-2019-09/segments/1550/wet/CC-MAIN-x.warc.wet.gz"
    assert segment_name("/tmp/local/file.warc.wet.gz") == "file.warc.wet.gz"


def test_segment_names_are_unique_within_the_input():
    commoncrawl = ["/data/crawl-data/CC-MAIN-2019-09/segments/1/wet/a.warc.wet.gz", "/data/b/x.warc.wet.gz"]
    assert segment_names(commoncrawl) == ["crawl-data/CC-MAIN-2019-09/segments/1/wet/a.warc.wet.gz", "x.warc.wet.gz"]
    same_name = ["/data/in/2019/x.warc.wet.gz", "/data/in/2020/x.warc.wet.gz", "/data/in/y.warc.wet.gz"]
    assert segment_names(same_name) == ["2019/x.warc.wet.gz", "2020/x.warc.wet.gz", "y.warc.wet.gz"]
    mirrors = ["gs://a/crawl-data/CC/x.gz", "gs://b/crawl-data/CC/x.gz"]
    assert segment_names(mirrors) == ["a/crawl-data/CC/x.gz", "b/crawl-data/CC/x.gz"]
    assert segment_names(["x.warc.wet.gz"]) == ["x.warc.wet.gz"]
