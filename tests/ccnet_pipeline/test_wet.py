import gzip
import io
import time
import tracemalloc

import pytest

from ccnet_pipeline.samples.wet_writer import raw_record, write_wet
from ccnet_pipeline.wet import BadRecord, read_segment
from tests.support.helpers import SHARED_DATA, letters, page, paragraphs


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


def test_one_member_per_record_one_member_for_all_and_plain_agree():
    data = _wet_bytes([page(i, paragraphs("fr", 2, f"doc{'x' * i}")) for i in range(20)])
    plain = gzip.decompress(data)
    per_record = [item for _, item in _read(data)]
    assert len(per_record) == 20
    assert [item for _, item in _read(gzip.compress(plain))] == per_record
    assert [item for _, item in _read(plain)] == per_record


# --- Bad records in every container: only the bad record is lost, at its true offset ---------

GOOD = 20


def _plain_record(headers, payload: bytes, version="WARC/1.0") -> bytes:
    return gzip.decompress(raw_record(headers, payload, version))


def _good_records():
    members = []
    for i in range(GOOD):
        text = f"Title {i}\n{paragraphs('en', 2, f'good{letters(i)}')}".encode()
        members.append(_plain_record(_headers(len(text), **{"WARC-Record-ID": f"<urn:uuid:{i}>"}), text))
    return members


TEXT = b"Title\nSome text that is fine on its own."
MALFORMED = {
    # what the bad record is -> (its bytes, the kind it is counted as)
    "no Content-Length": (
        _plain_record(_headers(None, **{"Content-Length": None}), TEXT),
        "malformed_record",
    ),
    "a Content-Length that is not a number": (_plain_record(_headers("12abc"), TEXT), "malformed_record"),
    "stray bytes between records": (b"this is not a WARC record at all\r\n" * 3, "malformed_record"),
    "headers that never end": (
        b"WARC/1.0\r\nWARC-Type: conversion\r\n" + b"X-Junk: y" * 9000 + b"\r\n",
        "malformed_record",
    ),
    "a Content-Length too short": (_plain_record(_headers(10), TEXT), "wrong_content_length"),
    "a Content-Length too long": (  # in a member of its own, the member ends first
        _plain_record(_headers(len(TEXT) + 500), TEXT),
        {
            "plain": "wrong_content_length",
            "one member": "wrong_content_length",
            "member per record": "truncated_record",
        },
    ),
    "a Content-Length over the cap, not the real length": (
        _plain_record(_headers(10**12), TEXT),
        "record_too_large",
    ),
    "a record over the cap": (_plain_record(_headers(200_000), b"T\n" + b"x" * 199_998), "record_too_large"),
}


def _containers(records):
    """The same records as a plain file, gzipped as one member, and a member per record."""
    plain = b"".join(records)
    return {
        "plain": plain,
        "one member": gzip.compress(plain, mtime=0),
        "member per record": b"".join(gzip.compress(record, mtime=0) for record in records),
    }


@pytest.mark.parametrize("container", ["plain", "one member", "member per record"])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_bad_record_costs_only_itself_in_every_container(container, case):
    bad_bytes, kind = MALFORMED[case]
    kind = kind[container] if isinstance(kind, dict) else kind
    good = _good_records()
    records = good[:10] + [bad_bytes] + good[10:]
    data = _containers(records)[container]
    items = list(read_segment(io.BytesIO(data), "x.warc.wet", max_record_bytes=100_000))
    bad = [item for _, item in items if isinstance(item, BadRecord)]
    docs = [item for _, item in items if not isinstance(item, BadRecord)]
    assert [doc["url"] for doc in docs] == ["https://bad.example/x"] * GOOD
    assert [doc["title"] for doc in docs] == [f"Title {i}" for i in range(GOOD)]
    assert [(b.kind, b.offset, b.offset_in_member) for b in bad] == [(kind, *_true_offset(records, 10, container))]
    assert [i for i, _ in items] == list(range(GOOD + 1)) and isinstance(items[10][1], BadRecord)
    assert bad[0].payload == bad_bytes[: len(bad[0].payload)] and len(bad[0].payload) >= min(len(bad_bytes), 30)


def _true_offset(records, index, container):
    """(offset, offset in member) of ``records[index]`` in the container."""
    before = b"".join(records[:index])
    if container == "plain":
        return len(before), 0
    if container == "one member":
        return 0, len(before)
    return len(b"".join(gzip.compress(record, mtime=0) for record in records[:index])), 0


@pytest.mark.parametrize("container", ["plain", "one member", "member per record"])
def test_a_wrong_content_length_is_counted_once(container):
    text = b"A title\nSome text that is fine on its own.\nA second line\nand a third."
    good = _good_records()
    data = _containers([good[0], _plain_record(_headers(10), text), good[1]])[container]
    kinds = [getattr(item, "kind", "doc") for _, item in _read(data)]
    assert kinds == ["doc", "wrong_content_length", "doc"]


def test_the_wrong_content_length_says_which_way_it_is_wrong():
    text = b"A title\nSome text that is fine on its own."
    good = _good_records()
    for declared, detail in [
        (10, "Content-Length 10 ends the record before its data does"),
        (len(text) + 5000, f"Content-Length {len(text) + 5000} runs "),
    ]:
        items = list(
            read_segment(io.BytesIO(b"".join([good[0], _plain_record(_headers(declared), text), *good[1:]])), "x")
        )
        (bad,) = [item for _, item in items if isinstance(item, BadRecord)]
        assert bad.detail.startswith(detail), bad.detail
    assert bad.detail.endswith(" bytes into the next record")


def test_a_long_line_after_a_corrupt_member_is_read_in_linear_time():
    """The hang of issue 27: a corrupt member, then a member whose record has a wrong
    Content-Length and 32 MiB without a newline (warcio's line reader took 12-26 s on it)."""
    text = b"Title\nsome text"
    corrupt = bytearray(raw_record(_headers(len(text)), text))
    corrupt[15:25] = b"\x00" * 10
    line = b"T\n" + b"x" * (32 << 20)
    data = b"".join([bytes(corrupt), raw_record(_headers(10), line), _wet_bytes([page(0, "after the long line")])])
    started = time.perf_counter()
    items = list(read_segment(io.BytesIO(data), "x", max_record_bytes=64 << 20))
    assert time.perf_counter() - started < 5
    kinds = [getattr(item, "kind", "doc") for _, item in items]
    assert kinds == ["corrupt_gzip", "wrong_content_length", "doc"]


@pytest.mark.parametrize("container", ["plain", "one member", "member per record"])
def test_a_record_over_the_cap_is_never_held(tmp_path, container):
    big = _plain_record(_headers(24 << 20), b"T\n" + b"x" * ((24 << 20) - 2))
    records = [*_good_records()[:2], big, *_good_records()[2:4]]
    path = tmp_path / "big.warc.wet"
    path.write_bytes(_containers(records)[container])
    del records, big
    tracemalloc.start()
    with open(path, "rb") as stream:
        kinds = [getattr(item, "kind", "doc") for _, item in read_segment(stream, "x", max_record_bytes=1 << 20)]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert kinds == ["doc", "doc", "record_too_large", "doc", "doc"]
    assert peak < 12 << 20, f"peak {peak >> 20} MiB while reading past a 24 MiB record"


def test_an_invalid_warc_date_keeps_the_document_with_a_null_date():
    dates = ["2019-02-16T04:15:08Z", "not-a-date", "2019-13-01T00:00:00Z", "2019-02-16T04:15:08.123456Z", ""]
    members = [
        raw_record(_headers(len(TEXT), **{"WARC-Date": date, "WARC-Record-ID": f"<urn:uuid:{i}>"}), TEXT)
        for i, date in enumerate(dates)
    ]
    items = [item for _, item in _read(_wet_bytes(members))]
    assert [getattr(item, "kind", None) or item["date_download"] for item in items] == [
        dates[0],
        None,
        None,
        dates[3],
        "missing_header",
    ]


def test_url_bytes_that_are_not_utf8_are_percent_encoded_and_counted():
    from ccnet_pipeline.steps.read import Reading

    text = b"Title\nSome text that is fine on its own."
    latin1 = _plain_record(_headers(len(text), **{"WARC-Target-URI": "https://example.org/cafXX?q=1"}), text)
    utf8 = _plain_record(
        _headers(len(text), **{"WARC-Target-URI": "https://example.org/café", "WARC-Record-ID": "<urn:uuid:2>"}), text
    )
    docs = [doc for _, doc in read_segment(io.BytesIO(latin1.replace(b"cafXX", b"caf\xe9") + utf8), "x")]
    assert [doc["url"] for doc in docs] == ["https://example.org/caf%E9?q=1", "https://example.org/café"]
    assert [Reading.counts(doc, "kept").get("url_bytes_escaped", 0) for doc in docs] == [1, 0]
