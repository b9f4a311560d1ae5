"""A generator of bad input for the mine job: many kinds of broken records and files, each
mixed with good documents that can be counted, and what the job must report for them.

``write_inputs(folder)`` writes the files (WET gzip as CommonCrawl writes it, one member for a
whole file, plain WET, and files that are not WET at all) and returns the ``Expected``: every
good document's URL (none may be lost), the bad records by kind (each counted exactly once),
and the documents kept with an invalid WARC-Date. The kinds are the ones a fuzzing campaign
found (issue 27) and the ones the reader names in ``BadKind``; ``KINDS`` lists them.
"""

from __future__ import annotations

import gzip
import os
import random
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List

from ccnet_pipeline.samples.wet_writer import raw_record
from tests.support.helpers import letters, paragraphs

MAX_RECORD_BYTES = 200_000  # the job's --max-record-bytes: records over it are skipped
DATE = "2019-02-16T04:15:08Z"


@dataclass
class Expected:
    good: List[str] = field(default_factory=list)  # URLs of the documents the corpus must hold
    bad: Counter = field(default_factory=Counter)  # bad-record kind -> how many
    invalid_dates: int = 0  # good documents kept with a null date


class Inputs:
    """Builds records and files, and counts what the job must find in them."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.expected = Expected()
        self.numbers = iter(range(10**6))
        self.random = random.Random(27)

    # --- records (uncompressed bytes) ---

    def record(self, payload: bytes, version: str = "WARC/1.0", **headers) -> bytes:
        number = next(self.numbers)
        values = {
            "WARC-Type": "conversion",
            "WARC-Target-URI": f"https://bad.example/{number}",
            "WARC-Date": DATE,
            "WARC-Record-ID": f"<urn:uuid:record-{number}>",
            "Content-Type": "text/plain",
            "Content-Length": str(len(payload)),
        }
        values.update({name.replace("_", "-"): value for name, value in headers.items()})
        return gzip.decompress(raw_record({k: v for k, v in values.items() if v is not None}, payload, version))

    def good(self, date: str = DATE, lines: int = 3) -> bytes:
        """A document the job keeps (English, long enough, unique lines; one long line when
        ``lines`` is 1)."""
        number = next(self.numbers)
        url = f"https://good.example/{number}"
        self.expected.good.append(url)
        body = paragraphs("en", max(lines, 500 if lines == 1 else 0), f"good{letters(number)}")
        text = f"Good page {letters(number)}\n{body.replace(chr(10), ' ') if lines == 1 else body}".encode()
        record = self.record(text, WARC_Target_URI=url, WARC_Date=date)
        if date != DATE:
            self.expected.invalid_dates += 1
        return record

    def bad(self, kind: str, record: bytes, count: int = 1) -> bytes:
        self.expected.bad[kind] += count
        return record

    # --- files ---

    def write(self, name: str, data: bytes) -> Path:
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def member_per_record(self, records: List[bytes]) -> bytes:
        return b"".join(gzip.compress(r, mtime=0) for r in records)


def _corrupt(member: bytes) -> bytes:
    broken = bytearray(member)
    broken[15:40] = b"\x00" * 25
    return bytes(broken)


# Record kinds: each returns the bad bytes (counted by ``inputs.bad``) to put between good records.
RECORD_KINDS: Dict[str, Callable[[Inputs], bytes]] = {
    "invalid UTF-8": lambda i: i.bad("invalid_utf8", i.record(b"Caf\xe9\nlatin-1 text\xff")),
    "no text at all": lambda i: i.bad("empty_record", i.record(b"")),
    "only blank lines": lambda i: i.bad("empty_record", i.record(b"\n\n \n")),
    "no WARC-Target-URI": lambda i: i.bad("missing_header", i.record(b"T\ntext", WARC_Target_URI=None)),
    "no WARC-Date": lambda i: i.bad("missing_header", i.record(b"T\ntext", WARC_Date=None)),
    "a response record in WET": lambda i: i.bad("non_conversion", i.record(b"T\ntext", WARC_Type="response")),
    "a metadata record in WET": lambda i: i.bad("non_conversion", i.record(b"a: b\r\n", WARC_Type="metadata")),
    "no WARC-Type": lambda i: i.bad("non_conversion", i.record(b"T\ntext", WARC_Type=None)),
    "HTML in a conversion record": lambda i: i.bad(
        "html_in_wet", i.record(b"Title\n<!DOCTYPE html><html><body>hi</body></html>")
    ),
    "WARC/0.18": lambda i: i.bad("unsupported_version", i.record(b"T\ntext", version="WARC/0.18")),
    "WARC/2.0": lambda i: i.bad("unsupported_version", i.record(b"T\ntext", version="WARC/2.0")),
    "no Content-Length": lambda i: i.bad("malformed_record", i.record(b"T\ntext", Content_Length=None)),
    "a Content-Length that is not a number": lambda i: i.bad(
        "malformed_record", i.record(b"T\ntext", Content_Length="12abc")
    ),
    "a negative Content-Length": lambda i: i.bad("malformed_record", i.record(b"T\ntext", Content_Length="-5")),
    "headers that never end": lambda i: i.bad(
        "malformed_record", b"WARC/1.0\r\nWARC-Type: conversion\r\n" + b"X-Junk: y" * 9000 + b"\r\n"
    ),
    "stray text between records": lambda i: i.bad("malformed_record", b"not a WARC record\r\n" * 20),
    "stray binary between records": lambda i: i.bad(
        "malformed_record", b"\n" + bytes(i.random.randrange(256) for _ in range(3000)).replace(b"\nWARC/", b"")
    ),
    "a Content-Length too short": lambda i: i.bad(
        "wrong_content_length", i.record(b"Title\nfirst line\nsecond line\nthird line", Content_Length="10")
    ),
    "a record over the cap": lambda i: i.bad("record_too_large", i.record(b"T\n" + b"word " * (MAX_RECORD_BYTES // 4))),
    "a Content-Length over the cap that is a lie": lambda i: i.bad(
        "record_too_large", i.record(b"T\ntext", Content_Length=str(10**12))
    ),
    "a repeated WARC-Record-ID": lambda i: (lambda first: first + i.bad("duplicate_record_id", first))(i.good()),
}

# Good records that look odd but are fine: not one of them may be lost.
GOOD_KINDS: Dict[str, Callable[[Inputs], bytes]] = {
    "LF-only line endings": lambda i: i.good().replace(b"\r\n", b"\n"),
    "extra blank lines after a record": lambda i: i.good() + b"\r\n" * 50,
    "a header line without a colon": lambda i: i.good().replace(b"\r\nWARC-Date", b"\r\nno colon here\r\nWARC-Date", 1),
    "a 100 kB line (under the cap)": lambda i: i.good(lines=1),
    "an invalid WARC-Date": lambda i: i.good(date="not-a-date"),
    "a WARC-Date in month 13": lambda i: i.good(date="2019-13-01T00:00:00Z"),
}


def _mixed(inputs: Inputs, kinds) -> List[bytes]:
    records = [inputs.good()]
    for make in kinds:
        records += [make(inputs), inputs.good()]
    return records


def write_inputs(folder: Path) -> Expected:
    """Every kind of bad input, with good documents around each; returns what the job must report."""
    i = Inputs(folder)
    kinds = list(RECORD_KINDS.values())
    # The same bad records in the three containers a WET file comes in.
    i.write("wet/a-commoncrawl.warc.wet.gz", i.member_per_record(_mixed(i, kinds)))
    i.write("wet/b-one-member.warc.wet.gz", gzip.compress(b"".join(_mixed(i, kinds)), mtime=0))
    i.write("wet/c-plain.warc.wet", b"".join(_mixed(i, kinds)))
    i.write("wet/d-odd-but-good.warc.wet.gz", i.member_per_record(_mixed(i, GOOD_KINDS.values())))
    # Container damage.
    members = [gzip.compress(i.good(), mtime=0) for _ in range(2)]
    corrupt = _corrupt(gzip.compress(i.record(b"T\nlost to a corrupt member")))
    i.expected.bad["corrupt_gzip"] += 1
    i.write("wet/e-corrupt-member.warc.wet.gz", members[0] + corrupt + members[1])
    crc = bytearray(gzip.compress(i.record(b"T\nwrong CRC")))
    crc[-8:-4] = bytes(4)
    i.expected.bad["corrupt_gzip"] += 1
    i.write("wet/f-bad-crc.warc.wet.gz", i.member_per_record([i.good()]) + bytes(crc) + i.member_per_record([i.good()]))
    i.expected.bad["corrupt_gzip"] += 1  # garbage between members
    i.write(
        "wet/g-garbage-between.warc.wet.gz",
        i.member_per_record([i.good()]) + b"\x1f\x8b\x08junk" * 50 + i.member_per_record([i.good()]),
    )
    i.expected.bad["corrupt_gzip"] += 1  # bytes before the first member
    i.write(
        "wet/h-junk-before.warc.wet.gz", b"junk before the first member" + i.member_per_record([i.good(), i.good()])
    )
    i.expected.bad["corrupt_gzip"] += 1  # bytes after the last member
    i.write("wet/i-junk-after.warc.wet.gz", i.member_per_record([i.good()]) + b"trailing junk")
    whole = i.member_per_record([i.good(), i.good(), i.record(b"T\ncut short")])
    i.expected.bad["truncated_gzip"] += 1
    i.write("wet/j-truncated.warc.wet.gz", whole[:-30])
    # The hang of issue 27: a corrupt member, then a member whose record has a wrong
    # Content-Length and 16 MiB without a newline.
    i.expected.bad["corrupt_gzip"] += 1
    i.expected.bad["wrong_content_length"] += 1
    hang = gzip.compress(i.record(b"T\n" + b"x" * (16 << 20), Content_Length="10"), compresslevel=1)
    i.write("wet/k-hang.warc.wet.gz", corrupt + hang + i.member_per_record([i.good()]))
    # A decompression bomb: 64 MiB of zeros in one record, over the cap.
    i.expected.bad["record_too_large"] += 1
    bomb = gzip.compress(i.record(b"\x00" * (64 << 20)), compresslevel=9)
    i.write("wet/l-bomb.warc.wet.gz", i.member_per_record([i.good()]) + bomb + i.member_per_record([i.good()]))
    # A record that claims more than the plain file holds, at its end.
    i.expected.bad["truncated_record"] += 1
    i.write("wet/m-short-end.warc.wet", b"".join([i.good(), i.record(b"T\ntext", Content_Length="5000")]))
    # Files that are not WET.
    i.expected.bad["empty_file"] += 1
    i.write("wet/n-empty.warc.wet.gz", b"")
    i.expected.bad["malformed_record"] += 1
    i.write(
        "wet/o-random.warc.wet.gz",
        bytes(random.Random(1).randrange(256) for _ in range(20_000)).replace(b"\x1f\x8b", b""),
    )
    i.expected.bad["malformed_record"] += 1  # gzip of a gzip: the outer member holds no WARC record
    i.write("wet/p-double-gzip.warc.wet.gz", gzip.compress(gzip.compress(i.record(b"T\ntext"))))
    i.expected.bad["malformed_record"] += 1
    i.write("wet/q-zlib-not-gzip.warc.wet.gz", zlib.compress(i.record(b"T\ntext")))
    warc = [
        i.record(b"GET / HTTP/1.1\r\n\r\n", WARC_Type="request"),
        i.record(b"HTTP/1.1 200 OK\r\n\r\nhi", WARC_Type="response"),
    ]
    i.expected.bad["non_conversion"] += 2
    i.write("wet/r-warc-as-wet.warc.wet.gz", i.member_per_record(warc))
    # Entries the glob matches that cannot be read.
    i.expected.bad["unreadable_file"] += 2
    os.symlink(folder / "nowhere", folder / "wet" / "s-broken-link.warc.wet.gz")
    os.mkfifo(folder / "wet" / "t-fifo.warc.wet.gz")
    # Same-named files in two folders, each with a bad record: two quarantine files.
    for year in ("2019", "2020"):
        records = [i.good(), i.bad("invalid_utf8", i.record(b"\xff\xfe")), i.good()]
        i.write(f"wet/same/{year}/x.warc.wet.gz", i.member_per_record(records))
    return i.expected


# Every kind the generator makes, for the count the issue asks for (at least 40).
KINDS = [*RECORD_KINDS, *GOOD_KINDS] + [
    "a corrupt gzip member",
    "a member with a wrong CRC",
    "garbage between members",
    "junk before the first member",
    "junk after the last member",
    "a file cut inside its last member",
    "a corrupt member then a 16 MiB line with a wrong Content-Length (the hang)",
    "a decompression bomb",
    "a record claiming more than the file holds",
    "an empty file",
    "random bytes",
    "gzip of a gzip",
    "zlib, not gzip",
    "a WARC given as WET",
    "a broken link",
    "a FIFO",
    "same-named files in two folders",
    "the bad records in a plain file",
    "the bad records in a file gzipped as one member",
]
