"""Framing: WARC records out of a container's bytes, by Content-Length, in bounded memory (never
line by line: warcio's line reader grows quadratically on a long line). A record must be
followed by blank lines and the next ``WARC/`` header or the end; anything else is one bad
record, and framing resumes at the next line that starts a WARC header."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Tuple, Union

from ccnet_pipeline.wet.containers import CHUNK_BYTES
from ccnet_pipeline.wet.records import MAX_HEADER_BYTES, QUARANTINE_PAYLOAD_BYTES, BadKind

# Where reading resumes after bad bytes: a WARC version line, wherever it starts (junk before a
# record need not end with a newline).
_RECORD_START = re.compile(rb"WARC/\d{1,3}\.\d{1,3}\r?\n")
_NOT_BLANK = re.compile(rb"[^\r\n]")
HEADER_END = re.compile(rb"\n\r?\n")


class Window:
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
        if cut > max(len(self.data) // 2, CHUNK_BYTES):
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
class FramedRecord:
    """A framed WARC record: its offset in the container's bytes, header block and content."""

    start: int
    head: bytes
    version: str
    headers: Dict[str, str]  # lower-case names; the first of a repeated name
    content: bytes

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")

    def target_uri(self) -> Tuple[str, bool]:
        """The WARC-Target-URI with any bytes that are not UTF-8 percent-encoded (``caf%E9``, as
        browsers send them) rather than replaced, and whether it had such bytes."""
        url = self.header("WARC-Target-URI")
        if "\ufffd" not in url or (match := _RAW_TARGET_URI.search(self.head)) is None:
            return url, False
        decoded = match.group(1).decode("utf-8", errors="surrogateescape")
        escaped = "".join(f"%{ord(c) - 0xDC00:02X}" if "\udc80" <= c <= "\udcff" else c for c in decoded)
        return escaped, escaped != decoded


@dataclass
class BadFrame:
    start: int
    kind: BadKind
    detail: str
    payload: bytes
    record_id: str = ""


_HEADER_OVERLAP = len(b"\n\r\n") - 1
_START_OVERLAP = len(b"WARC/123.123\r\n") - 1


class Framer:
    """The records of one container's bytes, good (``FramedRecord``) or not (``BadFrame``); ``current``
    is where the record being framed starts (for an error of the container underneath)."""

    def __init__(self, window: Window, max_record_bytes: int):
        self.window = window
        self.max_record_bytes = max_record_bytes
        self.current = 0

    def frames(self) -> Iterator[Union[FramedRecord, BadFrame]]:
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
        found = window.search(HEADER_END, start, start + MAX_HEADER_BYTES, _HEADER_OVERLAP)
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
            following = self.resync(head_end)
            if following is not None and following < content_end:
                detail = f"Content-Length {length} runs {content_end - following} bytes into the next record"
            else:
                detail = f"Content-Length {length} ends the record before its data does"
            return self.skip_bad(start, BadKind.WRONG_CONTENT_LENGTH, detail, head_end, record_id)
        yield FramedRecord(start, head, version, headers, window.get(head_end, content_end))
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
        return BadFrame(start, kind, detail, payload, record_id), following

    def skip_large(self, start: int, head: bytes, head_end: int, length: int, record_id: str):
        """Pass over a record longer than the cap without holding it: returns it as bad, and
        where reading goes on. Should its Content-Length not end where the next record starts,
        reading goes back to the first WARC header inside it, so that a lying length costs no
        good record: the window is rewound to a copy of the source's state taken while the
        header was in view."""
        window, content_end = self.window, head_end + length
        bad = BadFrame(
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


_RAW_TARGET_URI = re.compile(rb"\nWARC-Target-URI:[ \t]*([^\r\n]*?)[ \t]*\r?\n", re.IGNORECASE)
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
