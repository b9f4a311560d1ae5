"""What a read yields: a document or a ``BadRecord`` of one of the ``BadKind``s, and the checks
on WARC fields the reader and the writer share."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Union

from filters.document import Document

GZIP_MAGIC = b"\x1f\x8b\x08"
QUARANTINE_PAYLOAD_BYTES = 64 * 1024  # how much of a bad record's bytes the quarantine keeps
MAX_HEADER_BYTES = 64 * 1024  # a record's WARC headers (and a response's HTTP headers) end within this

FORMATS = ("wet", "warc")


class BadKind(str, Enum):
    """Every kind of bad input, counted as ``read/bad/<kind>`` and quarantined."""

    UNREADABLE_FILE = "unreadable_file"  # a file that cannot be opened or read: removed, a broken link, no permission
    EMPTY_FILE = "empty_file"  # a zero-length file
    CORRUPT_GZIP = "corrupt_gzip"  # a gzip member that does not decompress (garbage bytes included)
    TRUNCATED_GZIP = "truncated_gzip"  # the file ends inside a gzip member
    MALFORMED_RECORD = "malformed_record"  # bytes that are not a WARC record: no header end, no Content-Length, stray bytes (import-ccnet: a record without its text or url)
    UNSUPPORTED_VERSION = "unsupported_version"  # a WET record whose version is not WARC/1.0 or 1.1 (e.g. WARC/0.18)
    MISSING_HEADER = "missing_header"  # a record without WARC-Target-URI or WARC-Date
    NON_CONVERSION = "non_conversion"  # a record other than warcinfo/conversion inside a WET file (a WARC given as WET)
    RECORD_TOO_LARGE = "record_too_large"  # content longer than the configured cap; skipped, never read into memory
    TRUNCATED_RECORD = "truncated_record"  # fewer content bytes than Content-Length announces
    WRONG_CONTENT_LENGTH = "wrong_content_length"  # a Content-Length that does not end where the record's data does
    INVALID_UTF8 = "invalid_utf8"  # WET content that is not UTF-8
    HTML_IN_WET = "html_in_wet"  # a WET record holding HTML markup instead of extracted text
    EMPTY_RECORD = "empty_record"  # no text at all
    DUPLICATE_RECORD_ID = "duplicate_record_id"  # a WARC-Record-ID seen before in the same file
    INVALID_JSON = "invalid_json"  # import-ccnet: a line that is not a JSON object


DEFAULT_MAX_RECORD_BYTES = 32 * 1024 * 1024

# WARC-Date: W3C-DTF at second precision or finer, in UTC (WARC 1.0 and 1.1).
_WARC_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d{1,9})?Z")


def block_digest(data: bytes) -> str:
    """A WARC-Block-Digest: ``sha1:`` and the base32 SHA-1 of ``data``, as CommonCrawl writes it."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def valid_warc_date(value: str) -> bool:
    """Whether ``value`` is a WARC-Date: ``2019-02-16T04:15:08Z``, fractions of a second allowed."""
    match = _WARC_DATE.fullmatch(value)
    if not match:
        return False
    try:
        datetime(*map(int, match.groups()))
    except ValueError:  # month 13, February 30, hour 25...
        return False
    return True


@dataclass(frozen=True)
class BadRecord:
    kind: str  # a BadKind's value
    cc_segment: str
    offset: int  # byte offset in the file as stored where the bad part starts; in gzip, of the member holding it
    record_id: str  # WARC-Record-ID when known, else ""
    detail: str  # a human-readable reason
    payload: bytes  # the first QUARANTINE_PAYLOAD_BYTES of the record's bytes
    offset_in_member: int = (
        0  # in gzip, where it starts in the member's decompressed bytes (0: CommonCrawl's one record a member)
    )

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "cc_segment": self.cc_segment,
            "offset": self.offset,
            "offset_in_member": self.offset_in_member,
            "record_id": self.record_id,
            "detail": self.detail,
            "payload_base64": base64.b64encode(self.payload).decode("ascii"),
        }


Item = Union[Document, BadRecord]
