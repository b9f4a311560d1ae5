"""Reading CommonCrawl WET (and WARC) files, and writing WET. Pure Python, no Beam.

``read_segment`` turns one file (a *segment*) into numbered items: a ``Document`` for every
good record — a WET ``conversion`` record, or with ``fmt="warc"`` the main text of an HTML
``response`` — and a ``BadRecord`` for everything it cannot trust, so that one bad record never
costs the rest of the file. The numbering is deterministic, which the two dedup passes rely on.

Every read is linear in the file and holds at most one record in memory: the reader frames
records itself (``_Framer``), never line by line (warcio's line reader grows quadratically on a
long line). A record is framed by its Content-Length and must be followed by blank lines and
the next ``WARC/`` header or the end; anything else is one bad record, and reading resumes at the
next line that starts a WARC header, searched from the bad record's content on, so that good
records after it are found in every container: a plain file, CommonCrawl's gzip member per
record, a file gzipped as one member (``gzip file.wet``), or a mix. A corrupt gzip member is
skipped by resynchronising on the next member that starts a WARC record. A record larger than
the cap is skipped unread (and counted). The HTTP layer of WARC responses (chunked transfer,
content encodings) is decoded by warcio on the framed record's bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import BinaryIO, Dict, Iterator, Optional, Tuple, Union

from warcio.archiveiterator import ArchiveIterator

from ccnet_pipeline.html import html_to_text
from filters.document import Document, make_document
from toolkit.cli import flag, parse_size

GZIP_MAGIC = b"\x1f\x8b\x08"
QUARANTINE_PAYLOAD_BYTES = 64 * 1024  # how much of a bad record's bytes the quarantine keeps
MAX_HEADER_BYTES = 64 * 1024  # a record's WARC headers (and a response's HTTP headers) end within this
_CHUNK = 1024 * 1024  # decompressed bytes per read: bounds memory against decompression bombs
_FEED_BYTES = 32 * 1024  # compressed bytes per feed
_PROBE_BYTES = 4096  # compressed bytes tried at a gzip magic to see whether a WARC record starts there

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
    WRONG_CONTENT_LENGTH = "wrong_content_length"  # a Content-Length that ends the record before its data does
    INVALID_UTF8 = "invalid_utf8"  # WET content that is not UTF-8
    HTML_IN_WET = "html_in_wet"  # a WET record holding HTML markup instead of extracted text
    EMPTY_RECORD = "empty_record"  # no text at all
    DUPLICATE_RECORD_ID = "duplicate_record_id"  # a WARC-Record-ID seen before in the same file
    INVALID_JSON = "invalid_json"  # import-ccnet: a line that is not a JSON object


DEFAULT_MAX_RECORD_BYTES = 32 * 1024 * 1024
_HTML = re.compile(rb"<(?:!doctype\s+html|html|head|body|div|script)\b", re.IGNORECASE)
# Where reading resumes after bad bytes: a WARC version line, wherever it starts (junk before a
# record need not end with a newline).
_RECORD_START = re.compile(rb"WARC/\d{1,3}\.\d{1,3}\r?\n")
_NOT_BLANK = re.compile(rb"[^\r\n]")
_HEADER_END = re.compile(rb"\n\r?\n")
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


# --- Containers: the decompressed bytes of a plain file or of one gzip member ------------------


class _ContainerError(Exception):
    """A gzip member that does not decompress or that the file cuts short."""

    def __init__(self, kind: BadKind, detail: str):
        super().__init__(detail)
        self.kind = kind


class _PlainSource:
    """An uncompressed file's bytes, a chunk per read; ``state``/``restore`` go back to a chunk."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.position = 0

    def read(self) -> bytes:
        self.stream.seek(self.position)
        chunk = self.stream.read(_CHUNK)
        self.position += len(chunk)
        return chunk

    def state(self):
        return self.position

    def restore(self, state) -> None:
        self.position = state


class _MemberSource:
    """The decompressed bytes of the gzip member at ``offset``, at most ``_CHUNK`` a read; raises
    ``_ContainerError`` where it does not decompress or the file ends inside it. Once it has
    ended, ``end`` is the file offset after it."""

    def __init__(self, stream: BinaryIO, offset: int):
        self.stream = stream
        self.fed = offset  # file offset of the next compressed byte to read
        self.pending = b""  # compressed bytes read but not yet decompressed
        self.decompressor = zlib.decompressobj(31)

    def read(self) -> bytes:
        decompressor = self.decompressor
        while not decompressor.eof:
            if not self.pending:
                self.stream.seek(self.fed)
                self.pending = self.stream.read(_FEED_BYTES)
                if not self.pending:
                    raise _ContainerError(BadKind.TRUNCATED_GZIP, "file ends inside a gzip member")
                self.fed += len(self.pending)
            try:
                chunk = decompressor.decompress(self.pending, _CHUNK)
            except zlib.error as error:
                raise _ContainerError(BadKind.CORRUPT_GZIP, f"corrupt gzip member: {error}") from None
            self.pending = decompressor.unconsumed_tail
            if chunk:
                return chunk
        return b""

    @property
    def end(self) -> int:
        return self.fed - len(self.decompressor.unused_data)  # unused_data: the last feed's bytes past the member

    def state(self):
        return self.fed, self.pending, self.decompressor.copy()

    def restore(self, state) -> None:
        self.fed, self.pending, decompressor = state
        self.decompressor = decompressor.copy()


def _starts_member(stream: BinaryIO, offset: int) -> bool:
    """Whether a gzip member that begins a WARC record starts at ``offset``."""
    stream.seek(offset)
    try:
        head = zlib.decompressobj(31).decompress(stream.read(_PROBE_BYTES), 5)
    except zlib.error:
        return False
    return head == b"WARC/"


def _next_member(stream: BinaryIO, start: int) -> Optional[int]:
    """The offset of the first gzip member from ``start`` on that begins a WARC record, or None."""
    position = start
    while True:
        stream.seek(position)
        chunk = stream.read(_CHUNK)
        if len(chunk) < len(GZIP_MAGIC):
            return None
        found = chunk.find(GZIP_MAGIC)
        while found >= 0:
            if _starts_member(stream, position + found):
                return position + found
            found = chunk.find(GZIP_MAGIC, found + 1)
        position += len(chunk) - (len(GZIP_MAGIC) - 1)  # a magic may straddle the chunks


# --- Framing: records out of a container's bytes ---------------------------------------------


class _Window:
    """A container's bytes from ``base`` on, read a chunk at a time as the framer asks for
    positions; ``release`` forgets what lies before a position (compacted lazily, so that
    releasing record after record stays linear)."""

    def __init__(self, source):
        self.source = source
        self.data = bytearray()
        self.base = 0  # stream position of data[0]
        self.eof = False

    @property
    def end(self) -> int:
        return self.base + len(self.data)

    def fill(self) -> bool:
        if self.eof:
            return False
        chunk = self.source.read()
        if not chunk:
            self.eof = True
            return False
        self.data += chunk
        return True

    def has(self, position: int) -> bool:
        """Read on until the bytes before ``position`` are in; False when the stream ends first."""
        while self.end < position:
            if not self.fill():
                return False
        return True

    def get(self, start: int, stop: int) -> bytes:
        self.has(stop)
        return bytes(self.data[start - self.base : stop - self.base])

    def search(self, pattern: re.Pattern, start: int, stop: int, overlap: int) -> Optional[Tuple[int, int]]:
        """Where ``pattern`` first matches between ``start`` and ``stop`` (start, end), reading on
        only until it matches (a match may straddle two chunks by up to ``overlap`` bytes);
        nothing is released."""
        begin = start
        while True:
            match = pattern.search(self.data, begin - self.base, min(stop, self.end) - self.base)
            if match:
                return self.base + match.start(), self.base + match.end()
            if self.end >= stop:
                return None
            begin = max(start, self.end - overlap)
            if not self.fill():
                return None

    def release(self, position: int) -> None:
        cut = position - self.base
        if cut > max(len(self.data) // 2, _CHUNK):
            del self.data[:cut]
            self.base = position

    def find(self, pattern: re.Pattern, start: int, overlap: int) -> Optional[int]:
        """Where ``pattern`` first matches from ``start`` on, reading on and releasing what it
        passed (keeping ``overlap`` bytes, for a match across two chunks); None at the end."""
        while True:
            match = pattern.search(self.data, max(start - self.base, 0))
            if match:
                return self.base + match.start()
            start = max(start, self.end - overlap)
            self.release(start)
            if not self.fill():
                return None

    def rewind(self, position: int, state, held: bytes) -> None:
        """Go back to ``position``: ``held`` are the bytes from there to where the source stood
        in ``state``."""
        self.source.restore(state)
        self.data, self.base, self.eof = bytearray(held), position, False


@dataclass
class _Record:
    """A framed WARC record: its offset in the container's bytes, header block and content."""

    start: int
    head: bytes
    version: str
    headers: Dict[str, str]  # lower-case names; the first of a repeated name
    content: bytes

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")


@dataclass
class _Bad:
    start: int
    kind: BadKind
    detail: str
    payload: bytes
    record_id: str = ""


_HEADER_OVERLAP = len(b"\n\r\n") - 1
_START_OVERLAP = len(b"WARC/123.123\r\n") - 1


class _Framer:
    """The records of one container's bytes, good (``_Record``) or not (``_Bad``); ``current``
    is where the record being framed starts (for an error of the container underneath)."""

    def __init__(self, window: _Window, max_record_bytes: int):
        self.window = window
        self.max_record_bytes = max_record_bytes
        self.current = 0

    def frames(self) -> Iterator[Union[_Record, _Bad]]:
        window, position = self.window, 0
        while True:
            position = window.find(_NOT_BLANK, position, 0)
            if position is None:
                return
            self.current = position
            if window.get(position, position + 5) == b"WARC/":
                bad, position = yield from self.frame(position)
            else:
                detail = "bytes that do not start a WARC record"
                bad, position = self.skip_bad(position, BadKind.MALFORMED_RECORD, detail, position + 1)
            if bad is not None:
                yield bad
            if position is None:
                return

    def frame(self, start: int):
        """Frame the record at ``start``, yielding it when good; returns (the bad record or None,
        where reading goes on or None at the end)."""
        window = self.window
        found = window.search(_HEADER_END, start, start + MAX_HEADER_BYTES, _HEADER_OVERLAP)
        if found is None:
            detail = f"no end of the WARC headers within {MAX_HEADER_BYTES} bytes"
            return self.skip_bad(start, BadKind.MALFORMED_RECORD, detail, start + 1)
        head_end = found[1]
        head = window.get(start, head_end)
        version, headers = _parse_head(head)
        record_id = headers.get("warc-record-id", "")
        declared = headers.get("content-length", "")
        if not declared.isdigit():
            detail = f"no valid Content-Length: {declared[:40]!r}"
            return self.skip_bad(start, BadKind.MALFORMED_RECORD, detail, start + 1, record_id)
        length = int(declared)
        if length > self.max_record_bytes:
            return self.skip_large(start, head, head_end, length, record_id)
        content_end = head_end + length
        if not window.has(content_end):
            detail = f"{window.end - head_end} content bytes, Content-Length {length}"
            return self.skip_bad(start, BadKind.TRUNCATED_RECORD, detail, head_end, record_id)
        if not self.followed_by_record(content_end):
            detail = f"Content-Length {length} ends the record before its data does"
            return self.skip_bad(start, BadKind.WRONG_CONTENT_LENGTH, detail, head_end, record_id)
        yield _Record(start, head, version, headers, window.get(head_end, content_end))
        window.release(content_end)
        return None, content_end

    def followed_by_record(self, position: int) -> bool:
        """Whether the record's content may end at ``position``: WARC's end of record (a blank
        line, CRLF CRLF) follows, or blank lines then a WARC header or the end (blank lines running
        on past ``MAX_HEADER_BYTES`` end the record too)."""
        if self.window.get(position, position + 4) == b"\r\n\r\n":
            return True
        found = self.window.search(_NOT_BLANK, position, position + MAX_HEADER_BYTES, 0)
        return found is None or self.window.get(found[0], found[0] + 5) == b"WARC/"

    def resync(self, start: int) -> Optional[int]:
        """Where the first WARC version line at or after ``start`` starts, or None."""
        return self.window.find(_RECORD_START, start, _START_OVERLAP)

    def skip_bad(self, start: int, kind: BadKind, detail: str, resume: int, record_id: str = ""):
        """The bad record at ``start`` (its first bytes quarantined), and where reading goes on:
        the next WARC header from ``resume`` on, or None."""
        payload = self.window.get(start, start + QUARANTINE_PAYLOAD_BYTES)
        following = self.resync(resume)
        if following is not None:
            payload = payload[: following - start]
        return _Bad(start, kind, detail, payload, record_id), following

    def skip_large(self, start: int, head: bytes, head_end: int, length: int, record_id: str):
        """Pass over a record longer than the cap without holding it: returns it as bad, and
        where reading goes on. Should its Content-Length not end where the next record starts,
        reading goes back to the first WARC header inside it, so that a lying length costs no
        good record: the window is rewound to a copy of the source's state taken while the
        header was in view."""
        window, content_end = self.window, head_end + length
        bad = _Bad(
            start,
            BadKind.RECORD_TOO_LARGE,
            f"Content-Length {length} over the cap of {self.max_record_bytes} bytes",
            head,
            record_id,
        )
        inside, scanned = None, head_end  # (where the first header inside starts, the source state, bytes held)
        while True:
            if inside is None:
                found = _RECORD_START.search(window.data, scanned - window.base)
                if found and window.base + found.start() < content_end:
                    position = window.base + found.start()
                    inside = (position, window.source.state(), bytes(window.data[found.start() :]))
                scanned = max(scanned, window.end - _START_OVERLAP)
            if window.end >= content_end:
                if self.followed_by_record(content_end):
                    window.release(content_end)
                    return bad, content_end
                break
            window.release(scanned if inside is None else window.end)
            if not window.fill():
                break
        if inside is not None:
            position, state, held = inside
            window.rewind(position, state, held)
            return bad, position
        return bad, None if window.end < content_end else self.resync(content_end)


_HEADER_LINE = re.compile(r"^([^:\r\n]+):[ \t]*([^\r\n]*?)[ \t]*\r?$", re.MULTILINE)


def _parse_head(head: bytes) -> Tuple[str, Dict[str, str]]:
    """A WARC header block -> (version, headers by lower-case name, the first of a repeated
    one). A line without a colon is ignored, as warcio does."""
    text = head.decode("utf-8", errors="replace")
    version, _, rest = text.partition("\n")
    headers: Dict[str, str] = {}
    for name, value in _HEADER_LINE.findall(rest):
        headers.setdefault(name.strip().lower(), value)
    return version.strip(), headers


# --- Records -> documents --------------------------------------------------------------------

WET_VERSIONS = ("WARC/1.0", "WARC/1.1")
# A record as the reader hands it on: (WARC-Record-ID, (offset, offset in member), item).
Entry = Tuple[str, Tuple[int, int], Item]


class SegmentReader:
    """Reads one file; holds the format, the record-size cap and the segment's name."""

    def __init__(self, cc_segment: str, fmt: str = "wet", max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        check_format(fmt)
        self.cc_segment = cc_segment
        self.fmt = fmt
        self.max_record_bytes = max_record_bytes

    def bad(
        self, kind: BadKind, offset: int, detail: str, payload: bytes = b"", record_id: str = "", in_member: int = 0
    ) -> BadRecord:
        return BadRecord(
            kind.value, self.cc_segment, offset, record_id, detail, payload[:QUARANTINE_PAYLOAD_BYTES], in_member
        )

    def read(self, stream: BinaryIO) -> Iterator[Tuple[int, Item]]:
        start = stream.read(len(GZIP_MAGIC))
        if not start:
            yield 0, self.bad(BadKind.EMPTY_FILE, 0, "zero-length file")
            return
        seen = set()
        for index, (record_id, (offset, in_member), item) in enumerate(self.items(stream, start)):
            if record_id and record_id in seen and not isinstance(item, BadRecord):
                detail = f"{record_id} seen before in this file"
                payload = item["raw_content"].encode("utf-8")
                item = self.bad(BadKind.DUPLICATE_RECORD_ID, offset, detail, payload, record_id, in_member)
            seen.add(record_id)
            yield index, item

    def items(self, stream: BinaryIO, start: bytes) -> Iterator[Entry]:
        """An entry for every record the format does not skip, in file order."""
        if start == GZIP_MAGIC:
            yield from self.gzip_items(stream, 0)
            return
        stream.seek(0)
        if stream.read(5) != b"WARC/":
            first = _next_member(stream, 0)  # a gzip file whose first bytes are damaged
            if first is not None:
                yield "", (0, 0), self.bad(BadKind.CORRUPT_GZIP, 0, f"{first} bytes before the first gzip member")
                yield from self.gzip_items(stream, first)
                return
        framer = _Framer(_Window(_PlainSource(stream)), self.max_record_bytes)
        for frame in framer.frames():
            yield from self.entries(frame, frame.start, 0)

    def gzip_items(self, stream: BinaryIO, offset: int) -> Iterator[Entry]:
        """Member by member from ``offset``: records are framed within a member (CommonCrawl
        writes one a member, ``gzip`` one member for all); a broken member is one bad record,
        then reading resumes at the next member that starts a WARC record."""
        while True:
            source = _MemberSource(stream, offset)
            framer = _Framer(_Window(source), self.max_record_bytes)
            try:
                for frame in framer.frames():
                    yield from self.entries(frame, offset, frame.start)
            except _ContainerError as error:
                yield "", (offset, framer.current), self.bad(error.kind, offset, str(error), in_member=framer.current)
                following = None if error.kind is BadKind.TRUNCATED_GZIP else _next_member(stream, offset + 1)
                if following is None:
                    return
                offset = following
                continue
            offset = source.end
            stream.seek(offset)
            if not stream.read(1):
                return

    def entries(self, frame: Union[_Record, _Bad], offset: int, in_member: int) -> Iterator[Entry]:
        """A frame as an entry, or nothing for a record the format skips."""
        where = (offset, in_member)
        if isinstance(frame, _Bad):
            yield (
                frame.record_id,
                where,
                self.bad(frame.kind, offset, frame.detail, frame.payload, frame.record_id, in_member),
            )
            return
        record_id = frame.header("WARC-Record-ID")
        item = self.wet_item(frame) if self.fmt == "wet" else self.warc_item(frame)
        if isinstance(item, tuple):
            kind, detail = item
            yield record_id, where, self.bad(kind, offset, detail, frame.head + frame.content, record_id, in_member)
        elif item is not None:
            yield record_id, where, item

    def wet_item(self, frame: _Record) -> Union[None, Document, Tuple[BadKind, str]]:
        """A WET record's document, its problem, or None for warcinfo."""
        kind = frame.header("WARC-Type")
        if kind == "warcinfo":
            return None
        if frame.version not in WET_VERSIONS:
            return BadKind.UNSUPPORTED_VERSION, f"{frame.version} record in a WET file"
        if kind != "conversion":
            return BadKind.NON_CONVERSION, f"WARC-Type {kind!r} in a WET file"
        if not frame.header("WARC-Target-URI") or not frame.header("WARC-Date"):
            return BadKind.MISSING_HEADER, "conversion record without WARC-Target-URI or WARC-Date"
        try:
            text = frame.content.decode("utf-8")
        except UnicodeDecodeError as error:
            return BadKind.INVALID_UTF8, str(error)
        if _HTML.search(frame.content, 0, 2048):
            return BadKind.HTML_IN_WET, "HTML markup in a conversion record"
        # CCNet: the first line of a WET record is the page title, the rest is the text.
        title, _, body = text.strip("\n").partition("\n")
        digest = frame.header("WARC-Block-Digest") or block_digest(frame.content)
        return self.document(frame, title, body, digest)

    def warc_item(self, frame: _Record) -> Union[None, Document, Tuple[BadKind, str]]:
        """An HTML response's document (its main text, charset honoured), its problem, or None
        for any other record."""
        if frame.header("WARC-Type") != "response" or not frame.header("WARC-Target-URI").startswith("http"):
            return None
        if _HEADER_END.search(frame.content, 0, MAX_HEADER_BYTES) is None:
            return BadKind.MALFORMED_RECORD, f"no end of the HTTP headers within {MAX_HEADER_BYTES} bytes"
        try:
            # warcio decodes the HTTP layer; the record is framed and bounded already.
            record = next(ArchiveIterator(io.BytesIO(frame.head + frame.content + b"\r\n\r\n"), check_digests=False))
            content_type = record.http_headers.get_header("Content-Type", "") if record.http_headers else ""
            if "html" not in content_type.lower():
                return None
            body = record.content_stream().read(self.max_record_bytes + 1)
        except Exception as error:  # any failure of the HTTP layer is this record's, not the job's
            return BadKind.MALFORMED_RECORD, f"HTTP response that does not parse: {error}"[:500]
        if len(body) > self.max_record_bytes:
            return BadKind.RECORD_TOO_LARGE, f"decoded body over the cap of {self.max_record_bytes} bytes"
        if not frame.header("WARC-Target-URI") or not frame.header("WARC-Date"):
            return BadKind.MISSING_HEADER, "response record without WARC-Target-URI or WARC-Date"
        title, text = html_to_text(body, content_type)
        return self.document(frame, title, text, block_digest(text.encode("utf-8")))

    def document(self, frame: _Record, title: str, body: str, digest: str) -> Union[Document, Tuple[BadKind, str]]:
        if not body.strip() and not title.strip():
            return BadKind.EMPTY_RECORD, "no text"
        date = frame.header("WARC-Date")
        return make_document(
            url=frame.header("WARC-Target-URI"),
            date_download=date if valid_warc_date(date) else None,  # counted as read/invalid_date
            digest=digest,
            title=title,
            raw_content=body,
            cc_segment=self.cc_segment,
        )


@dataclass(frozen=True)
class ReadConfig:
    format: str = field(
        default="wet", metadata=flag("--format", choices=FORMATS)
    )  # wet, or warc: the main text of HTML responses, charset honoured
    max_record_bytes: int = field(
        default=DEFAULT_MAX_RECORD_BYTES, metadata=flag(parse=parse_size)
    )  # larger records are skipped unread and quarantined (bytes, or 64MiB, 1GB...)

    def __post_init__(self):
        check_format(self.format)
        if self.max_record_bytes < 1:
            raise ValueError("max_record_bytes must be >= 1")

    def segment(self, stream: BinaryIO, cc_segment: str) -> Iterator[Tuple[int, Item]]:
        """``read_segment`` of one input file (open as ``stream``), named ``cc_segment``."""
        return read_segment(stream, cc_segment, self.format, self.max_record_bytes)


def read_segment(
    stream: BinaryIO, cc_segment: str, fmt: str = "wet", max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
) -> Iterator[Tuple[int, Item]]:
    """(record index, Document or BadRecord) for every record of a WET file except warcinfo,
    or with ``fmt="warc"`` for every HTML response of a WARC file.

    ``stream`` must be a seekable binary file: plain, or gzip (CommonCrawl's member per record,
    one member for all, or a mix). Indices count from 0 in file order and are the same on
    every read.
    """
    return SegmentReader(cc_segment, fmt, max_record_bytes).read(stream)
