"""Reading CommonCrawl WET (and WARC) files, and writing WET. Pure Python (warcio), no Beam.

``read_segment`` turns one file (a *segment*) into numbered items: a ``Document`` for every
good record — a WET ``conversion`` record, or with ``fmt="warc"`` the main text of an HTML
``response`` — and a ``BadRecord`` for everything it cannot trust, so that one bad record never
costs the rest of the file. CommonCrawl writes each record as its own gzip member;
a corrupt member is skipped by resynchronizing on the next member that starts a WARC record.
The numbering is deterministic, which the two dedup passes rely on.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import zlib
from dataclasses import dataclass, field
from enum import Enum
from typing import BinaryIO, Iterator, Optional, Tuple, Union

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from ccnet_pipeline.html import html_to_text
from filters.document import Document, make_document, segment_name
from toolkit.cli import flag

GZIP_MAGIC = b"\x1f\x8b\x08"
_FEED_BYTES = 32 * 1024  # small feeds keep zlib's copy of unused input small
_READ_BYTES = 1024 * 1024
QUARANTINE_PAYLOAD_BYTES = 64 * 1024  # how much of a bad record's bytes the quarantine keeps

FORMATS = ("wet", "warc")


class BadKind(str, Enum):
    """Every kind of bad input, counted as ``read/bad/<kind>`` and quarantined."""

    UNREADABLE_FILE = "unreadable_file"  # a file that cannot be opened or read: removed, a broken link, no permission
    EMPTY_FILE = "empty_file"  # a zero-length file
    CORRUPT_GZIP = "corrupt_gzip"  # a gzip member that does not decompress (garbage bytes included)
    TRUNCATED_GZIP = "truncated_gzip"  # the file ends inside a gzip member
    MALFORMED_RECORD = (
        "malformed_record"  # bytes that do not parse as a WARC record (import-ccnet: a record without its text or url)
    )
    UNSUPPORTED_VERSION = "unsupported_version"  # a WET record whose version is not WARC/1.0 or 1.1 (e.g. WARC/0.18)
    MISSING_HEADER = "missing_header"  # a record without WARC-Target-URI or WARC-Date
    NON_CONVERSION = "non_conversion"  # a record other than warcinfo/conversion inside a WET file (a WARC given as WET)
    RECORD_TOO_LARGE = "record_too_large"  # content longer than the configured cap; not read into memory
    TRUNCATED_RECORD = "truncated_record"  # fewer content bytes than Content-Length announces
    WRONG_CONTENT_LENGTH = "wrong_content_length"  # a Content-Length that ends the record before its gzip member does
    INVALID_UTF8 = "invalid_utf8"  # WET content that is not UTF-8
    HTML_IN_WET = "html_in_wet"  # a WET record holding HTML markup instead of extracted text
    EMPTY_RECORD = "empty_record"  # no text at all
    DUPLICATE_RECORD_ID = "duplicate_record_id"  # a WARC-Record-ID seen before in the same file
    INVALID_JSON = "invalid_json"  # import-ccnet: a line that is not a JSON object


DEFAULT_MAX_RECORD_BYTES = 32 * 1024 * 1024
_HTML = re.compile(rb"<(?:!doctype\s+html|html|head|body|div|script)\b", re.IGNORECASE)


def block_digest(data: bytes) -> str:
    """A WARC-Block-Digest: ``sha1:`` and the base32 SHA-1 of ``data``, as CommonCrawl writes it."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


@dataclass(frozen=True)
class BadRecord:
    kind: str  # a BadKind's value
    cc_segment: str
    offset: int  # byte offset in the (compressed) file where the bad part starts
    record_id: str  # WARC-Record-ID when known, else ""
    detail: str  # a human-readable reason
    payload: bytes  # the first QUARANTINE_PAYLOAD_BYTES of the record (or member) bytes

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "cc_segment": self.cc_segment,
            "offset": self.offset,
            "record_id": self.record_id,
            "detail": self.detail,
            "payload_base64": base64.b64encode(self.payload).decode("ascii"),
        }


Item = Union[Document, BadRecord]


def _gzip_members(stream: BinaryIO, start: int) -> Iterator[Tuple[int, Optional[bytes], str]]:
    """(offset, decompressed bytes, "") per gzip member from ``start`` on, or (offset, None,
    error) for a member that fails; after a failure, reading resumes at the next member that
    holds a WARC record."""
    stream.seek(start)
    buffer = b""
    base = start  # file offset of buffer[0]
    exhausted = False

    def fill() -> bool:
        nonlocal buffer, exhausted
        if exhausted:
            return False
        chunk = stream.read(_READ_BYTES)
        if not chunk:
            exhausted = True
            return False
        buffer += chunk
        return True

    def resync(start: int) -> Optional[int]:
        """The offset of the next gzip member from ``start`` on that begins a WARC record."""
        nonlocal buffer, base
        while True:
            found = buffer.find(GZIP_MAGIC, start - base)
            if found < 0:
                keep = len(GZIP_MAGIC) - 1  # a magic may straddle the refill
                start = max(start, base + len(buffer) - keep)
                buffer, base = buffer[start - base :], start
                if not fill():
                    return None
                continue
            candidate = base + found
            while len(buffer) - found < 4096 and fill():
                pass
            try:
                head = zlib.decompressobj(31).decompress(buffer[found : found + 4096], 16)
            except zlib.error:
                head = b""
            if head.startswith(b"WARC/"):
                return candidate
            start = candidate + 1

    offset = start
    while True:
        if offset - base >= len(buffer) and not fill():
            return
        decompressor = zlib.decompressobj(31)
        parts = []
        cursor = offset
        try:
            while not decompressor.eof:
                if cursor - base >= len(buffer) and not fill():
                    break
                view = memoryview(buffer)[cursor - base : cursor - base + _FEED_BYTES]
                parts.append(decompressor.decompress(view))
                cursor += len(view) - len(decompressor.unused_data)
        except zlib.error as error:
            yield offset, None, f"corrupt gzip member: {error}"
            next_offset = resync(offset + 1)
            if next_offset is None:
                return
            offset = next_offset
            continue
        if not decompressor.eof:
            yield offset, None, "file ends inside a gzip member"
            return
        yield offset, b"".join(parts), ""
        offset = cursor
        if offset - base > _READ_BYTES:
            buffer, base = buffer[offset - base :], offset


def _member_complete(stream: BinaryIO, start: int) -> bool:
    """Whether the gzip member at ``start`` ends before the file does (warcio does not check)."""
    stream.seek(start)
    decompressor = zlib.decompressobj(31)
    try:
        while not decompressor.eof:
            chunk = stream.read(_FEED_BYTES)
            if not chunk:
                return False
            decompressor.decompress(chunk)
    except zlib.error:
        return False
    return True


class _ArchiveIterator(ArchiveIterator):
    """warcio's iterator without its stderr warning for a record not followed by a blank line:
    the reader counts that case (``err_count``) as a wrong Content-Length instead."""

    INC_RECORD = ""


# Internally a record travels as (WARC-Record-ID, offset, item); the id check needs both.
Entry = Tuple[str, int, Optional[Item]]


class SegmentReader:
    """Reads one file; holds the format, the record-size cap and the ids seen so far."""

    def __init__(self, cc_segment: str, fmt: str = "wet", max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        check_format(fmt)
        self.cc_segment = cc_segment
        self.fmt = fmt
        self.max_record_bytes = max_record_bytes

    def bad(self, kind: BadKind, offset: int, detail: str, payload: bytes = b"", record_id: str = "") -> BadRecord:
        return BadRecord(kind.value, self.cc_segment, offset, record_id, detail, payload[:QUARANTINE_PAYLOAD_BYTES])

    def parse(self, record, iterator: _ArchiveIterator, base_offset: int) -> Entry:
        """One warcio record as an entry; its item is None for a record the format skips
        (warcinfo; in WARC input requests, metadata and non-HTML responses)."""
        errors_before = iterator.err_count

        def offset() -> int:  # only once the content is read: warcio's offset consumes the record
            return base_offset + iterator.get_record_offset()

        headers = record.rec_headers
        record_id = headers.get_header("WARC-Record-ID") or ""
        declared = headers.get_header("Content-Length") or ""
        if declared.isdigit() and int(declared) > self.max_record_bytes:
            stream = record.content_stream()
            while stream.read(1 << 20):  # drained, never held whole
                pass
            detail = f"Content-Length {declared} over the cap of {self.max_record_bytes} bytes"
            return (
                record_id,
                offset(),
                self.bad(BadKind.RECORD_TOO_LARGE, offset(), detail, headers.to_bytes(), record_id),
            )
        content = record.content_stream().read()
        where = offset()
        overran = iterator.err_count > errors_before  # warcio found no blank line where the record should end
        if not overran and (
            record.rec_type == "warcinfo" or (self.fmt == "warc" and not self.is_html_response(record))
        ):
            return record_id, where, None
        problem = self.header_problem(record, content, declared, overran)
        if problem is None:
            title, body, digest = (
                self.warc_body(record, content) if self.fmt == "warc" else self.wet_body(headers, content)
            )
            if isinstance(title, BadKind):
                problem = (title, body)
            elif not body.strip() and not title.strip():
                problem = (BadKind.EMPTY_RECORD, "no text")
        if problem is not None:
            kind, detail = problem
            return record_id, where, self.bad(kind, where, detail, headers.to_bytes() + content, record_id)
        doc = make_document(
            url=headers.get_header("WARC-Target-URI"),
            date_download=headers.get_header("WARC-Date"),
            digest=digest,
            title=title,
            raw_content=body,
            cc_segment=self.cc_segment,
        )
        return record_id, where, doc

    def header_problem(self, record, content: bytes, declared: str, overran: bool) -> Optional[Tuple[BadKind, str]]:
        """What is wrong with a record's headers for this format (WET and WARC alike), or None."""
        headers = record.rec_headers
        if overran:
            return BadKind.WRONG_CONTENT_LENGTH, f"Content-Length {declared} ends the record before its data does"
        if self.fmt == "wet" and headers.protocol not in ("WARC/1.0", "WARC/1.1"):
            return BadKind.UNSUPPORTED_VERSION, f"{headers.protocol} record in a WET file"
        wanted = "conversion" if self.fmt == "wet" else "response"
        if record.rec_type != wanted:  # WARC input skips such records before
            return BadKind.NON_CONVERSION, f"WARC-Type {record.rec_type!r} in a WET file"
        if not headers.get_header("WARC-Target-URI") or not headers.get_header("WARC-Date"):
            return BadKind.MISSING_HEADER, f"{wanted} record without WARC-Target-URI or WARC-Date"
        if self.fmt == "wet" and declared.isdigit() and len(content) < int(declared):
            return BadKind.TRUNCATED_RECORD, f"{len(content)} content bytes, Content-Length {declared}"
        return None

    @staticmethod
    def is_html_response(record) -> bool:
        """A WARC response whose HTTP Content-Type is HTML (other records are skipped)."""
        content_type = record.http_headers.get_header("Content-Type", "") if record.http_headers else ""
        return record.rec_type == "response" and "html" in content_type.lower()

    @staticmethod
    def warc_body(record, content: bytes) -> Tuple[str, str, str]:
        """(title, main text, digest of the text) of an HTML response, its charset honoured."""
        title, body = html_to_text(content, record.http_headers.get_header("Content-Type", ""))
        return title, body, block_digest(body.encode("utf-8"))

    @staticmethod
    def wet_body(headers, content: bytes) -> Tuple[Union[str, BadKind], str, str]:
        """(title, text, digest) of a WET conversion record, or (bad kind, detail, "")."""
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as error:
            return BadKind.INVALID_UTF8, str(error), ""
        if _HTML.search(content, 0, 2048):
            return BadKind.HTML_IN_WET, "HTML markup in a conversion record", ""
        # CCNet: the first line of a WET record is the page title, the rest is the text.
        title, _, body = text.strip("\n").partition("\n")
        return title, body, headers.get_header("WARC-Block-Digest") or block_digest(content)

    def records(self, data: BinaryIO, base_offset: int) -> Iterator[Entry]:
        """warcio over ``data`` (a plain file or one decompressed member); unparsable bytes
        become one malformed_record."""
        try:
            iterator = _ArchiveIterator(data, check_digests=False)
            for record in iterator:
                yield self.parse(record, iterator, base_offset)
        except (ArchiveLoadFailed, ValueError, EOFError, zlib.error) as error:
            data.seek(0)
            payload = data.read(QUARANTINE_PAYLOAD_BYTES)
            yield "", base_offset, self.bad(BadKind.MALFORMED_RECORD, base_offset, str(error)[:500], payload)

    def members_from(self, stream: BinaryIO, start: int) -> Iterator[Entry]:
        """The robust path: gzip member by member from ``start``, quarantining broken members."""
        for offset, data, error in _gzip_members(stream, start):
            if data is None:
                kind = BadKind.TRUNCATED_GZIP if error.startswith("file ends") else BadKind.CORRUPT_GZIP
                yield "", offset, self.bad(kind, offset, error)
            else:
                yield from self.records(io.BytesIO(data), offset)

    def gzip_entries(self, stream: BinaryIO) -> Iterator[Entry]:
        """warcio over the whole file (fast). Each record is held back until warcio has moved
        past its gzip member, and the last member is checked whole; at the first error the
        member-by-member path takes over from the start of the record not yet given out."""
        resume_at = 0
        pending: Optional[Entry] = None
        iterator = _ArchiveIterator(stream, check_digests=False)
        try:
            for record in iterator:
                entry = self.parse(record, iterator, 0)
                if pending is not None:
                    yield pending
                pending, resume_at = entry, entry[1]
            if _member_complete(stream, resume_at):
                if pending is not None:
                    yield pending
                return
        except (ArchiveLoadFailed, ValueError, EOFError, zlib.error):
            pass
        yield from self.members_from(stream, resume_at)

    def read(self, stream: BinaryIO) -> Iterator[Tuple[int, Item]]:
        start = stream.read(len(GZIP_MAGIC))
        stream.seek(0)
        if not start:
            yield 0, self.bad(BadKind.EMPTY_FILE, 0, "zero-length file")
            return
        entries = self.gzip_entries(stream) if start == GZIP_MAGIC else self.records(stream, 0)
        seen = set()
        index = 0
        for record_id, offset, item in entries:
            if item is None:
                continue
            if record_id and record_id in seen and not isinstance(item, BadRecord):
                payload = item["raw_content"].encode("utf-8")
                item = self.bad(
                    BadKind.DUPLICATE_RECORD_ID, offset, f"{record_id} seen before in this file", payload, record_id
                )
            seen.add(record_id)
            yield index, item
            index += 1


@dataclass(frozen=True)
class ReadConfig:
    format: str = field(
        default="wet", metadata=flag("--format", choices=FORMATS)
    )  # wet, or warc: the main text of HTML responses, charset honoured
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES  # larger records are quarantined unread

    def __post_init__(self):
        check_format(self.format)
        if self.max_record_bytes < 1:
            raise ValueError("max_record_bytes must be >= 1")

    def segment(self, stream: BinaryIO, path: str) -> Iterator[Tuple[int, Item]]:
        """``read_segment`` of the file at ``path`` (open as ``stream``)."""
        return read_segment(stream, segment_name(path), self.format, self.max_record_bytes)


def read_segment(
    stream: BinaryIO, cc_segment: str, fmt: str = "wet", max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
) -> Iterator[Tuple[int, Item]]:
    """(record index, Document or BadRecord) for every record of a WET file except warcinfo,
    or with ``fmt="warc"`` for every HTML response of a WARC file.

    ``stream`` must be a seekable binary file; gzip (multi-member, as CommonCrawl writes it)
    or plain WARC. Indices count from 0 in file order and are the same on every read.
    """
    return SegmentReader(cc_segment, fmt, max_record_bytes).read(stream)
