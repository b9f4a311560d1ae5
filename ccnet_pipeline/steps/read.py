"""Reading a segment (one input file) into numbered items, as every pass over the input does:
the two dedup passes and import-ccnet."""

from __future__ import annotations

import os
import stat
from typing import Dict, Iterator, Optional, Tuple

from ccnet_pipeline.progress import SegmentProgress
from ccnet_pipeline.stats import READ
from ccnet_pipeline.wet import BadKind, BadRecord, Item
from filters.document import Document, first_of_page
from filters.stage import Counted
from toolkit import storage


def read_segment_items(
    read, path: str, name: str, progress: Optional[SegmentProgress] = None
) -> Iterator[Tuple[int, Item]]:
    """``read.segment`` of the file at ``path``, named ``name`` (its cc_segment: ``segment_names``;
    ``read``: a ReadConfig, or import-ccnet's CcnetReader), how far it got reported to
    ``progress``. A file that cannot be opened or read (removed since it was listed, a
    directory, a broken link or link loop, no permission, an I/O error) ends the segment with
    one ``unreadable_file`` BadRecord; the records read before it stay."""
    next_record = documents = 0
    try:
        if not storage.is_remote(path):  # opening a FIFO or a device would block or read forever
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                raise OSError("is a directory" if stat.S_ISDIR(mode) else "not a regular file")
        with storage.open_read(path) as stream:
            for record, item in read.segment(stream, name):
                yield record, item
                next_record = record + 1
                if progress is not None:
                    documents += not isinstance(item, BadRecord)
                    progress.update(stream.tell(), documents)
    except OSError as error:
        detail = f"cannot read {path}: {error.strerror or error}" + (
            f" (after {next_record} records)" if next_record else ""
        )
        yield next_record, BadRecord(BadKind.UNREADABLE_FILE.value, name, 0, "", detail, b"")
    if progress is not None:
        progress.finish()


class Reading(Counted):
    """The reading step's own counts of each document: read, and read with an unparsable date."""

    name = READ

    @classmethod
    def counts(cls, doc: Document, outcome: str) -> Dict[str, int]:
        if not first_of_page(doc):  # a page split by language (lid.mixed) was read once
            return {}
        counts = {"documents": 1}
        if doc["date_download"] is None:
            counts["invalid_date"] = 1
        if doc.get("url_escaped"):  # a URL with bytes that are not UTF-8, percent-encoded
            counts["url_bytes_escaped"] = 1
        return counts
