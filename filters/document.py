"""The one document record every stage reads and returns, and its Arrow schema.

Field names are CCNet's, so CCNet users and tools find what they expect. A document is a
plain dict (typed as ``Document``): dicts pass through Beam's fast coders and straight into
``pyarrow.Table.from_pylist``.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, TypedDict

import pyarrow as pa


class Document(TypedDict):
    url: str  # WARC-Target-URI
    date_download: Optional[str]  # WARC-Date, e.g. "2019-02-15T19:15:59Z"; null when it is not a valid date
    digest: str  # WARC-Block-Digest, e.g. "sha1:S3DTWCONT2L6ORTGCY2KXEZ37LNBO7KW"
    source_domain: str  # netloc of the URL, as CCNet
    title: str  # first line of a WET conversion record (the page title)
    raw_content: str  # the text, lines joined by "\n" (after dedup once that stage ran)
    length: int  # characters of raw_content
    nlines: int  # lines of raw_content
    original_length: int  # characters before dedup
    original_nlines: int  # lines before dedup
    line_ids: Optional[List[int]]  # CCNet's: the original index of each line kept; null if unknown (imported)
    language: Optional[str]  # XLM-R code, set by language ID
    language_score: Optional[float]  # probability of the top label
    perplexity: Optional[float]  # set by the perplexity stage; null before it
    bucket: str  # head / middle / tail once perplexity buckets exist; "all" before
    cc_segment: str  # the input file, from "crawl-data/" on when the path has it (segment_names)
    # Heuristic quality signals (filters/quality.py), null until that stage ran.
    duplicate_line_frac: Optional[float]
    mean_line_length: Optional[float]
    terminal_punct_frac: Optional[float]
    non_alpha_frac: Optional[float]
    short_line_frac: Optional[float]


ARROW_SCHEMA = pa.schema(
    [
        pa.field("url", pa.string(), nullable=False),
        pa.field("date_download", pa.string()),
        pa.field("digest", pa.string(), nullable=False),
        pa.field("source_domain", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("raw_content", pa.large_string(), nullable=False),
        pa.field("length", pa.int64(), nullable=False),
        pa.field("nlines", pa.int64(), nullable=False),
        pa.field("original_length", pa.int64(), nullable=False),
        pa.field("original_nlines", pa.int64(), nullable=False),
        pa.field("line_ids", pa.list_(pa.int32())),
        pa.field("language", pa.string()),
        pa.field("language_score", pa.float32()),
        pa.field("perplexity", pa.float64()),
        pa.field("bucket", pa.string(), nullable=False),
        pa.field("cc_segment", pa.string(), nullable=False),
        pa.field("duplicate_line_frac", pa.float32()),
        pa.field("mean_line_length", pa.float32()),
        pa.field("terminal_punct_frac", pa.float32()),
        pa.field("non_alpha_frac", pa.float32()),
        pa.field("short_line_frac", pa.float32()),
    ]
)
FIELDS = tuple(ARROW_SCHEMA.names)
assert tuple(Document.__annotations__) == FIELDS, "schema and record must list the same fields"


def first_of_page(doc: Document) -> bool:
    """True for a whole page and for the first part of a page split by language (``lid.mixed``:
    a part carries ``page``, outside the schema): where per-page counts are counted."""
    page = doc.get("page")
    return page is None or page["part"] == 0


def page_lines_and_length(doc: Document):
    """(nlines, length) of the document's page after dedup: its own unless it is a part."""
    page = doc.get("page")
    return (doc["nlines"], doc["length"]) if page is None else (page["nlines"], page["length"])


# The netloc of an absolute URL, as urllib.parse.urlsplit finds it (several times faster).
_NETLOC = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")


def segment_name(path: str) -> str:
    """CCNet's cc_segment: the path from ``crawl-data/`` on, else the file name."""
    marker = path.find("crawl-data/")
    return path[marker:] if marker >= 0 else path.rsplit("/", 1)[-1]


def segment_names(paths: Sequence[str]) -> List[str]:
    """Each input file's cc_segment, unique within the input: CCNet's ``segment_name`` when
    those are all different, else every path relative to the folder the inputs share (two
    ``x.warc.wet.gz`` in different folders must not pass for one file)."""
    names = [segment_name(path) for path in paths]
    if len(set(names)) == len(names):
        return names
    folders = [path.split("/")[:-1] for path in paths]
    shared = 0
    while all(len(f) > shared and f[shared] == folders[0][shared] for f in folders):
        shared += 1
    return ["/".join(path.split("/")[shared:]) for path in paths]


def make_document(
    *, url: str, date_download: Optional[str], digest: str, title: str, raw_content: str, cc_segment: str
) -> Document:
    """A freshly read document: counts filled in, later-stage fields at their defaults."""
    nlines = raw_content.count("\n") + 1 if raw_content else 0
    return Document(
        url=url,
        date_download=date_download,
        digest=digest,
        source_domain=match.group(1) if (match := _NETLOC.match(url)) else "",
        title=title,
        raw_content=raw_content,
        length=len(raw_content),
        nlines=nlines,
        original_length=len(raw_content),
        original_nlines=nlines,
        line_ids=list(range(nlines)),
        language=None,
        language_score=None,
        perplexity=None,
        bucket="all",
        cc_segment=cc_segment,
        duplicate_line_frac=None,
        mean_line_length=None,
        terminal_punct_frac=None,
        non_alpha_frac=None,
        short_line_frac=None,
    )
