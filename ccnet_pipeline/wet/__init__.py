"""Reading CommonCrawl WET (and WARC) files. Pure Python, no Beam.

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

from ccnet_pipeline.wet.records import QUARANTINE_PAYLOAD_BYTES, BadKind, BadRecord, Item, block_digest
from ccnet_pipeline.wet.segment import ReadConfig, SegmentReader, read_segment

__all__ = [
    "QUARANTINE_PAYLOAD_BYTES",
    "BadKind",
    "BadRecord",
    "Item",
    "ReadConfig",
    "SegmentReader",
    "block_digest",
    "read_segment",
]
