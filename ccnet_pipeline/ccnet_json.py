"""CCNet's output format, both ways: JSON lines, gzip, ``<lang>_<bucket>_NNNN.json.gz`` (the
names of CCNet's regrouped mine output, ``toolkit.corpus.Layout.shard``). Pure Python, no Beam.

``to_ccnet`` writes a document as CCNet's mine pipeline does: CCNet's fields only, in the order
its steps add them, ``perplexity`` absent when the language has no model. ``read_ccnet_file``
reads CCNet's output, or CCNet's output as Dolma wraps it (the text in ``text``, CCNet's fields
under ``metadata``), back into this project's documents; every line it cannot use becomes a
``BadRecord`` and the others are kept.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from typing import BinaryIO, Dict, Iterator, Optional, Tuple, Union

import numpy as np

from ccnet_pipeline.wet import QUARANTINE_PAYLOAD_BYTES, BadKind, BadRecord
from filters.document import Document, make_document
from filters.quality import quality_signals
from lid.languages import map_label

# CCNet's output fields, in the order cc_net/mine.py's steps add them (parse, dedup, lid, lm, bucket).
CCNET_FIELDS = (
    "url",
    "date_download",
    "digest",
    "length",
    "nlines",
    "source_domain",
    "title",
    "raw_content",
    "cc_segment",
    "original_nlines",
    "original_length",
    "line_ids",
    "language",
    "language_score",
    "perplexity",
    "bucket",
)


_NAME = re.compile(r"[A-Za-z0-9_-]+")  # a language code or bucket name: safe as a folder name


def to_ccnet(doc: Document) -> Dict:
    """CCNet's record of ``doc``. The score is the shortest decimal of the stored float32
    (0.95, not 0.949999988); keys CCNet leaves out when unknown (perplexity, line_ids) are
    left out."""
    record = {name: doc[name] for name in CCNET_FIELDS}
    if record["language_score"] is not None:
        record["language_score"] = float(str(np.float32(record["language_score"])))
    for name in ("perplexity", "line_ids"):
        if record[name] is None:
            del record[name]
    return record


def from_ccnet(record: Dict) -> Document:
    """A document from CCNet's record (or Dolma's wrapping of one). Length and line counts
        describe the text as given; ``original_*`` come from the record; ``line_ids`` are kept only
        when they number the text's lines; the language is mapped to its XLM-R code; the quality
        signals are computed. Raises ValueError naming what is missing or malformed (a language
    code and a bucket are required to be plain names: they become folder names)."""
    if isinstance(record.get("metadata"), dict) and "text" in record:
        fields, text = record["metadata"], record["text"]
    else:
        fields, text = record, record.get("raw_content")
    if not isinstance(text, str):
        raise ValueError("no text: neither raw_content (CCNet) nor text (Dolma) is a string")
    url = fields.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError("no url")
    doc = make_document(
        url=url,
        date_download=str(fields.get("date_download") or record.get("created") or ""),
        digest=str(fields.get("digest", "")),
        title=str(fields.get("title", "")),
        raw_content=text,
        cc_segment=str(fields.get("cc_segment", "")),
    )
    if isinstance(fields.get("source_domain"), str):
        doc["source_domain"] = fields["source_domain"]
    doc["original_length"] = _integer(fields, "original_length", doc["length"])
    doc["original_nlines"] = _integer(fields, "original_nlines", doc["nlines"])
    line_ids = fields.get("line_ids")
    valid_ids = isinstance(line_ids, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in line_ids)
    doc["line_ids"] = line_ids if valid_ids and len(line_ids) == doc["nlines"] else None
    language = fields.get("language")
    if not isinstance(language, str) or not _NAME.fullmatch(language):
        raise ValueError(f"language is not a code: {language!r}")
    doc["language"] = map_label(language)
    doc["language_score"] = _number(fields, "language_score")
    perplexity = _number(fields, "perplexity")
    doc["perplexity"] = perplexity if perplexity is not None and perplexity >= 0 else None  # CCNet: -1 is none
    bucket = fields.get("bucket", "all")
    if not isinstance(bucket, str) or not _NAME.fullmatch(bucket):
        raise ValueError(f"bucket is not a name: {bucket!r}")
    doc["bucket"] = bucket
    return {**doc, **quality_signals(doc)}


def _integer(fields: Dict, name: str, default: int) -> int:
    value = fields.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} is not a count: {value!r}")
    return value


def _number(fields: Dict, name: str) -> Optional[float]:
    value = fields.get(name)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError(f"{name} is not a number: {value!r}")
    return float(value)


def read_ccnet_file(stream: BinaryIO, name: str) -> Iterator[Tuple[int, Union[Document, BadRecord]]]:
    """(line number, Document or BadRecord) for every non-empty line of a CCNet JSON-lines
    file, gzip or plain. A line that is not JSON is ``invalid_json``, a record that lacks or
    garbles a field is ``malformed_record``; a broken or cut gzip stream ends the file with
    ``corrupt_gzip`` / ``truncated_gzip``, keeping the lines before it."""
    head = stream.read(2)
    stream.seek(0)
    source = gzip.GzipFile(fileobj=stream, mode="rb") if head == b"\x1f\x8b" else stream
    number, offset = 0, 0
    try:
        for number, line in enumerate(source):
            where, offset = offset, offset + len(line)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError(f"a JSON {type(record).__name__}, not an object")
            except ValueError as error:  # JSONDecodeError and UnicodeDecodeError included
                yield (
                    number,
                    BadRecord(
                        BadKind.INVALID_JSON.value, name, where, "", str(error)[:500], line[:QUARANTINE_PAYLOAD_BYTES]
                    ),
                )
                continue
            try:
                yield number, from_ccnet(record)
            except ValueError as error:
                yield (
                    number,
                    BadRecord(
                        BadKind.MALFORMED_RECORD.value,
                        name,
                        where,
                        "",
                        str(error)[:500],
                        line[:QUARANTINE_PAYLOAD_BYTES],
                    ),
                )
    except EOFError as error:
        yield (
            number + 1,
            BadRecord(
                BadKind.TRUNCATED_GZIP.value, name, offset, "", f"file ends inside the gzip stream: {error}", b""
            ),
        )
    except (gzip.BadGzipFile, zlib.error) as error:
        yield number + 1, BadRecord(BadKind.CORRUPT_GZIP.value, name, offset, "", f"corrupt gzip stream: {error}", b"")


class CcnetReader:
    """Reads CCNet output files where the mine job reads WET segments (``read.segment``)."""

    def segment(self, stream: BinaryIO, name: str) -> Iterator[Tuple[int, Union[Document, BadRecord]]]:
        return read_ccnet_file(stream, name)
