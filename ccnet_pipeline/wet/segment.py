"""One file (a *segment*) into numbered items: framed records (``framing``) of the file's
containers (``containers``) turned into documents (WET conversion records, or the main text of
WARC HTML responses) or ``BadRecord``s."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator, Tuple, Union

from warcio.archiveiterator import ArchiveIterator

from ccnet_pipeline.wet.containers import ContainerError, MemberSource, PlainSource, next_member
from ccnet_pipeline.wet.framing import HEADER_END, BadFrame, FramedRecord, Framer, Window
from ccnet_pipeline.wet.html import html_to_text
from ccnet_pipeline.wet.records import (
    DEFAULT_MAX_RECORD_BYTES,
    FORMATS,
    GZIP_MAGIC,
    MAX_HEADER_BYTES,
    QUARANTINE_PAYLOAD_BYTES,
    BadKind,
    BadRecord,
    Item,
    block_digest,
    check_format,
    valid_warc_date,
)
from filters.document import Document, make_document
from toolkit.cli import flag, parse_size

_HTML = re.compile(rb"<(?:!doctype\s+html|html|head|body|div|script)\b", re.IGNORECASE)

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
            first = next_member(stream, 0)  # a gzip file whose first bytes are damaged
            if first is not None:
                yield "", (0, 0), self.bad(BadKind.CORRUPT_GZIP, 0, f"{first} bytes before the first gzip member")
                yield from self.gzip_items(stream, first)
                return
        framer = Framer(Window(PlainSource(stream)), self.max_record_bytes)
        for frame in framer.frames():
            yield from self.entries(frame, frame.start, 0)

    def gzip_items(self, stream: BinaryIO, offset: int) -> Iterator[Entry]:
        """Member by member from ``offset``: records are framed within a member (CommonCrawl
        writes one a member, ``gzip`` one member for all); a broken member is one bad record,
        then reading resumes at the next member that starts a WARC record."""
        while True:
            source = MemberSource(stream, offset)
            framer = Framer(Window(source), self.max_record_bytes)
            try:
                for frame in framer.frames():
                    yield from self.entries(frame, offset, frame.start)
            except ContainerError as error:
                yield "", (offset, framer.current), self.bad(error.kind, offset, str(error), in_member=framer.current)
                following = None if error.kind is BadKind.TRUNCATED_GZIP else next_member(stream, offset + 1)
                if following is None:
                    return
                offset = following
                continue
            offset = source.end
            stream.seek(offset)
            if not stream.read(1):
                return

    def entries(self, frame: Union[FramedRecord, BadFrame], offset: int, in_member: int) -> Iterator[Entry]:
        """A frame as an entry, or nothing for a record the format skips."""
        where = (offset, in_member)
        if isinstance(frame, BadFrame):
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

    def wet_item(self, frame: FramedRecord) -> Union[None, Document, Tuple[BadKind, str]]:
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

    def warc_item(self, frame: FramedRecord) -> Union[None, Document, Tuple[BadKind, str]]:
        """An HTML response's document (its main text, charset honoured), its problem, or None
        for any other record."""
        if frame.header("WARC-Type") != "response" or not frame.header("WARC-Target-URI").startswith("http"):
            return None
        if HEADER_END.search(frame.content, 0, MAX_HEADER_BYTES) is None:
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

    def document(self, frame: FramedRecord, title: str, body: str, digest: str) -> Union[Document, Tuple[BadKind, str]]:
        if not body.strip() and not title.strip():
            return BadKind.EMPTY_RECORD, "no text"
        date = frame.header("WARC-Date")
        url, escaped = frame.target_uri()
        doc = make_document(
            url=url,
            date_download=date if valid_warc_date(date) else None,  # counted as read/invalid_date
            digest=digest,
            title=title,
            raw_content=body,
            cc_segment=self.cc_segment,
        )
        if escaped:
            doc["url_escaped"] = True  # not written: counted as read/url_bytes_escaped
        return doc


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
