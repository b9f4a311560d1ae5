"""Writing CommonCrawl-style WET files (test fixtures, the generated sample), record by record
as CommonCrawl does: a warcinfo record, then one gzip member per conversion record."""

from __future__ import annotations

import gzip
import hashlib
import io
from dataclasses import dataclass
from typing import BinaryIO, Dict, Iterable, Union

from warcio.warcwriter import WARCWriter

from ccnet_pipeline.wet import block_digest


@dataclass(frozen=True)
class WetPage:
    """One page to write as a WET conversion record (fixtures, the generated sample)."""

    url: str
    date: str  # e.g. "2019-02-16T04:15:08Z"
    title: str
    text: str
    language: str = ""  # written as WARC-Identified-Content-Language when set, as CC does


def raw_record(headers: Dict[str, str], payload: bytes, version: str = "WARC/1.0") -> bytes:
    """One WARC record as a gzip member, written byte by byte: headers exactly as given (no
    Content-Length is added), so that tests and the sample can build broken records too."""
    head = version + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return gzip.compress(head.encode("utf-8") + payload + b"\r\n\r\n", mtime=0)


def write_wet(stream: BinaryIO, pages: Iterable[Union[WetPage, bytes]], filename: str = "sample.warc.wet.gz") -> None:
    """Write pages as a CommonCrawl-style WET file: a warcinfo record, then one gzip member per
    conversion record with WARC-Target-URI, WARC-Date, WARC-Refers-To and WARC-Block-Digest.
    A ``bytes`` item is written as it is (a raw gzip member, see ``raw_record``)."""
    writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.0")
    info = b"software: xlmr-corpus\r\nformat: WARC File Format 1.0\r\n"
    # A fixed date and id (warcio's own warcinfo takes the clock), so that files are reproducible.
    stream.write(
        raw_record(
            {
                "WARC-Type": "warcinfo",
                "WARC-Date": "2019-02-16T00:00:00Z",
                "WARC-Filename": filename,
                "WARC-Record-ID": f"<urn:uuid:{_uuid(filename, 0, 'warcinfo')}>",
                "Content-Type": "application/warc-fields",
                "Content-Length": str(len(info)),
            },
            info,
        )
    )
    for number, page in enumerate(pages):
        if isinstance(page, bytes):
            stream.write(page)
            continue
        payload = f"{page.title}\n{page.text}".encode()
        digest = block_digest(payload)
        headers = {
            "WARC-Type": "conversion",
            "WARC-Target-URI": page.url,
            "WARC-Date": page.date,
            "WARC-Record-ID": f"<urn:uuid:{_uuid(filename, number, 'conversion')}>",
            "WARC-Refers-To": f"<urn:uuid:{_uuid(filename, number, 'response')}>",
            "WARC-Block-Digest": digest,
        }
        if page.language:
            headers["WARC-Identified-Content-Language"] = page.language
        record = writer.create_warc_record(
            page.url,
            "conversion",
            payload=io.BytesIO(payload),
            length=len(payload),
            warc_content_type="text/plain",
            warc_headers_dict=headers,
        )
        writer.write_record(record)


def _uuid(filename: str, number: int, kind: str) -> str:
    """A deterministic UUID-shaped id, so regenerated files are byte-identical."""
    h = hashlib.sha1(f"{filename}:{number}:{kind}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
