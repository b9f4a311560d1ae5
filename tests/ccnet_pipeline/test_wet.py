import gzip
import io

import pytest

from ccnet_pipeline.wet import BadRecord, read_segment
from ccnet_pipeline.wet_writer import raw_record, write_wet
from tests.helpers import SHARED_DATA, page, paragraphs


def _wet_bytes(items, name="test.warc.wet.gz"):
    stream = io.BytesIO()
    write_wet(stream, items, name)
    return stream.getvalue()


def _read(data: bytes):
    return list(read_segment(io.BytesIO(data), "crawl-data/CC-MAIN-2019-09/segments/1/wet/test.warc.wet.gz"))


def _headers(length, kind="conversion", **extra):
    headers = {
        "WARC-Type": kind,
        "WARC-Target-URI": "https://bad.example/x",
        "WARC-Date": "2019-02-16T04:15:08Z",
        "WARC-Record-ID": "<urn:uuid:bad>",
        "Content-Type": "text/plain",
        "Content-Length": str(length),
    }
    headers.update(extra)
    return {k: v for k, v in headers.items() if v is not None}


def test_reads_commoncrawl_headers_from_multi_member_gzip():
    data = _wet_bytes([page(1, "first line\nsecond line", title="Café"), page(2, paragraphs("ru", 2, "x"))])
    assert data.count(b"\x1f\x8b\x08") == 3  # warcinfo + one gzip member per record
    items = _read(data)
    assert [index for index, _ in items] == [0, 1]
    doc = items[0][1]
    assert doc["url"] == "https://example1.org/page/1"
    assert doc["date_download"] == "2019-02-16T04:15:08Z"
    assert doc["digest"].startswith("sha1:") and len(doc["digest"]) == 37
    assert (doc["title"], doc["raw_content"], doc["nlines"]) == ("Café", "first line\nsecond line", 2)
    assert doc["source_domain"] == "example1.org"
    assert doc["cc_segment"] == "crawl-data/CC-MAIN-2019-09/segments/1/wet/test.warc.wet.gz"
    assert b"WARC-Refers-To: <urn:uuid:" in gzip.decompress(data)


def _with_bad_records():
    good = [page(i, f"good document {i}\nwith two lines") for i in range(4)]
    text = b"Title\nsome text"
    corrupt = bytearray(raw_record(_headers(len(text)), text))
    corrupt[15:25] = b"\x00" * 10
    members = [
        good[0],
        bytes(corrupt),  # corrupt gzip member
        good[1],
        raw_record(_headers(500), text),  # truncated record: Content-Length larger than the content
        raw_record(_headers(12), b"Caf\xe9\nlatin-1"),  # invalid UTF-8
        raw_record(_headers(0), b""),  # empty record
        raw_record(_headers(len(text), kind="response"), text),  # non-conversion record
        raw_record(_headers(len(text), **{"WARC-Target-URI": None}), text),  # missing header
        good[2],
        good[3],
    ]
    return _wet_bytes(members)


def test_bad_records_are_reported_and_every_good_document_kept():
    items = _read(_with_bad_records())
    kinds = [item.kind if isinstance(item, BadRecord) else item["url"] for _, item in items]
    assert kinds == [
        "https://example0.org/page/0",
        "corrupt_gzip",
        "https://example1.org/page/1",
        "truncated_record",
        "invalid_utf8",
        "empty_record",
        "non_conversion",
        "missing_header",
        "https://example2.org/page/2",
        "https://example0.org/page/3",
    ]
    truncated = items[3][1]
    assert truncated.record_id == "<urn:uuid:bad>" and b"Content-Length: 500" in truncated.payload
    assert truncated.to_json()["payload_base64"]


def test_numbering_is_stable_across_reads():
    data = _with_bad_records()
    assert [i for i, _ in _read(data)] == [i for i, _ in _read(data)] == list(range(10))


def test_file_ending_inside_a_member():
    data = _wet_bytes([page(i, f"document {i}") for i in range(3)])
    items = _read(data[:-30])
    assert [getattr(item, "kind", "doc") for _, item in items] == ["doc", "doc", "truncated_gzip"]


def test_garbage_between_members_is_skipped():
    data = _wet_bytes([page(0, "zero")])
    tail = _wet_bytes([page(1, "one")], name="other.warc.wet.gz")
    items = _read(data + b"\x1f\x8b\x08 not really gzip" + b"garbage" * 100 + tail)
    kinds = [getattr(item, "kind", item.get("url") if isinstance(item, dict) else None) for _, item in items]
    assert kinds[0] == "https://example0.org/page/0"
    assert kinds[-1] == "https://example1.org/page/1"
    assert "corrupt_gzip" in kinds


def test_uncompressed_wet_is_read_too():
    items = _read(gzip.decompress(_wet_bytes([page(0, "plain text file")])))
    assert items[0][1]["raw_content"] == "plain text file"


@pytest.mark.skipif(not (SHARED_DATA / "commoncrawl").is_dir(), reason="../shared/data/commoncrawl absent")
def test_real_commoncrawl_wet():
    with open(SHARED_DATA / "commoncrawl" / "CC-MAIN-2024-22-sample.warc.wet.gz", "rb") as stream:
        items = list(read_segment(stream, "CC-MAIN-2024-22-sample.warc.wet.gz"))
    assert len(items) == 1
    doc = items[0][1]
    assert doc["url"] == "https://an.wikipedia.org/wiki/Escopete"
    assert doc["digest"] == "sha1:RDTSR52RUHWDA7QK4BK7OUHU3EXTXYUL"
    assert doc["date_download"] == "2024-05-18T01:58:10Z"
    assert doc["title"] == "Escopete - Biquipedia, a enciclopedia libre"
    assert doc["source_domain"] == "an.wikipedia.org"
    assert doc["nlines"] > 100


@pytest.mark.skipif(not (SHARED_DATA / "commoncrawl").is_dir(), reason="../shared/data/commoncrawl absent")
def test_real_warc_given_as_wet_is_quarantined_not_fatal():
    with open(SHARED_DATA / "commoncrawl" / "CC-MAIN-2020-34-sample.warc.gz", "rb") as stream:
        items = list(read_segment(stream, "warc"))
    assert items and all(isinstance(item, BadRecord) and item.kind == "non_conversion" for _, item in items)


def test_fast_path_and_member_path_agree():
    from ccnet_pipeline.wet import SegmentReader

    data = _wet_bytes([page(i, paragraphs("fr", 2, f"doc{'x' * i}")) for i in range(20)])
    fast = [item for _, item in _read(data)]
    reader = SegmentReader("crawl-data/CC-MAIN-2019-09/segments/1/wet/test.warc.wet.gz")
    robust = [item for _, _, item in reader.members_from(io.BytesIO(data), 0) if item is not None]
    assert fast == robust and len(fast) == 20
