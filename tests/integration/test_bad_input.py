"""Bad input at scale: every kind of broken input in one job; the job finishes, each bad record is
counted by kind and quarantined, and every good document is kept."""

import gzip
import json

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.wet_writer import raw_record
from tests.helpers import SHARED_DATA, letters, page, paragraphs, write_wet_file

GOOD_PER_FILE = 3


def headers(name, length, **extra):
    values = {
        "WARC-Type": "conversion",
        "WARC-Target-URI": f"https://bad.example/{name}",
        "WARC-Date": "2019-02-16T04:15:08Z",
        "WARC-Record-ID": f"<urn:uuid:{name}>",
        "Content-Type": "text/plain",
        "Content-Length": str(length),
    }
    values.update(extra)
    return {k: v for k, v in values.items() if v is not None}


def good(file_number, i):
    return page(100 * file_number + i, paragraphs("en", 4, f"file{letters(file_number)}doc{letters(i)}"))


def bad_records():
    text = b"A title\nSome text that is fine on its own."
    corrupt = bytearray(raw_record(headers("corrupt", len(text)), text))
    corrupt[12:40] = b"\x00" * 28
    longer = raw_record(headers("longer", 10), text)  # declares fewer bytes than it holds
    return {
        "corrupt_gzip": bytes(corrupt),
        "truncated_record": raw_record(headers("short", 5000), text),
        "wrong_content_length": longer,
        "invalid_utf8": raw_record(headers("latin1", 12), b"Caf\xe9\nlatin-1"),
        "empty_record": raw_record(headers("empty", 0), b""),
        "missing_header": raw_record(headers("nourl", len(text), **{"WARC-Target-URI": None}), text),
        "non_conversion": raw_record(headers("resp", len(text), **{"WARC-Type": "response"}), text),
        "record_too_large": raw_record(headers("big", 300_000), b"Title\n" + b"x" * 299_994),
        "html_in_wet": raw_record(headers("html", 48), b"Title\n<!DOCTYPE html><html><body>hi</body></html>"[:48]),
        "unsupported_version": raw_record(headers("old", len(text)), text, version="WARC/0.18"),
        "duplicate_record_id": None,  # the second copy of a good record's id, below
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    wet = root / "wet"
    bad = bad_records()
    members = []
    for i, member in enumerate(bad.values()):
        members.append(good(0, i))
        if member is not None:
            members.append(member)
    text = ("Title\n" + paragraphs("en", 2, "duplicated")).encode()
    duplicated = raw_record(headers("dup", len(text), **{"WARC-Record-ID": "<urn:uuid:same>"}), text)
    members += [duplicated, duplicated]
    write_wet_file(wet / "a-mixed.warc.wet.gz", members)
    write_wet_file(wet / "b-clean.warc.wet.gz", [good(1, i) for i in range(GOOD_PER_FILE)])
    (wet / "c-empty.warc.wet.gz").write_bytes(b"")
    (wet / "d-garbage.warc.wet.gz").write_bytes(bytes(range(256)) * 40)
    write_wet_file(root / "e.warc.wet.gz", [good(2, i) for i in range(GOOD_PER_FILE)])
    truncated = (root / "e.warc.wet.gz").read_bytes()
    (wet / "e-truncated.warc.wet.gz").write_bytes(truncated[: len(truncated) - 40])  # cut inside its last record
    warc = gzip.compress(
        b"WARC/1.0\r\nWARC-Type: request\r\nWARC-Target-URI: https://x/\r\nWARC-Date: 2019-02-16T04:15:08Z\r\nContent-Length: 4\r\n\r\nGET \r\n\r\n"
    )
    (wet / "f-warc-as-wet.warc.wet.gz").write_bytes(warc)
    out = root / "corpus"
    code = main(
        [
            "mine",
            "--input",
            str(wet / "*.warc.wet.gz"),
            "--output",
            str(out),
            "--langs",
            "en",
            "--min-len",
            "50",
            "--max-record-bytes",
            "100000",
            "--dedup",
            "keep-first",
        ]
    )
    assert code == 0
    return out, len(bad)


def test_every_kind_is_counted_and_quarantined(corpus):
    out, _ = corpus
    stats = json.loads((out / "stats.json").read_text())
    expected = set(bad_records()) | {"empty_file", "truncated_gzip"}
    assert set(stats["bad_records"]) >= expected, set(stats["bad_records"]) ^ expected
    assert len(expected) >= 12
    quarantined = [
        json.loads(line) for f in (out / "quarantine" / "bad-input").iterdir() for line in f.read_text().splitlines()
    ]
    assert sum(stats["bad_records"].values()) == len(quarantined)
    assert {q["kind"] for q in quarantined} == set(stats["bad_records"])


def test_every_good_document_is_kept(corpus):
    out, bad_kinds = corpus
    manifest = json.loads((out / "manifest.json").read_text())
    stats = json.loads((out / "stats.json").read_text())
    # One good page before each bad record of the mixed file, the clean file, and every page of
    # the truncated file but the cut last one.
    # The first record of the duplicated id is a good page too.
    assert manifest["documents"] == stats["documents_read"] == bad_kinds + 1 + GOOD_PER_FILE + (GOOD_PER_FILE - 1)
    assert stats["dropped"] == {}


@pytest.mark.skipif(not (SHARED_DATA / "commoncrawl").is_dir(), reason="../shared/data/commoncrawl absent")
def test_real_malformed_files_as_bad_input(tmp_path):
    out = tmp_path / "corpus"
    pattern = str(SHARED_DATA / "commoncrawl" / "bad-*.warc.gz")
    assert main(["mine", "--input", pattern, "--output", str(out)]) == 0
    stats = json.loads((out / "stats.json").read_text())
    # bad-truncated: one response record cut short; ClueWeb09: 29 WARC/0.18 records.
    assert stats["bad_records"] == {"truncated_gzip": 1, "unsupported_version": 29}
