"""Writing documents to files: Parquet row by row in row groups, and a shard's files per
language and bucket (Parquet, or CCNet's gzip JSON lines). No Beam; every file is written
under a temporary name and renamed (``toolkit.storage``)."""

from __future__ import annotations

import contextlib
import gzip
import json
from typing import Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from ccnet_pipeline.ccnet_json import to_ccnet
from filters.document import ARROW_SCHEMA, Document
from toolkit import storage
from toolkit.corpus import Layout, ShardEntry

ROWS_PER_ROW_GROUP = 4096


class ParquetRowWriter:
    """Rows into a Parquet stream, ``ROWS_PER_ROW_GROUP`` to a row group; with ``group_by``, a
    row group also ends where that column's value changes (so readers can skip by value)."""

    def __init__(
        self, stream, schema: pa.Schema = ARROW_SCHEMA, compression: str = "zstd", group_by: Optional[str] = None
    ):
        self.schema = schema
        self.writer = pq.ParquetWriter(stream, schema, compression=compression)
        self.group_by = group_by
        self.rows: List[Dict] = []

    def add(self, row: Dict) -> None:
        if self.group_by and self.rows and self.rows[-1][self.group_by] != row[self.group_by]:
            self.flush()
        self.rows.append(row)
        if len(self.rows) == ROWS_PER_ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.writer.write_table(pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []

    def close(self) -> None:
        self.flush()
        self.writer.close()


def write_parquet(
    path: str,
    rows: List[Dict],
    schema: pa.Schema = ARROW_SCHEMA,
    compression: str = "zstd",
    group_by: Optional[str] = None,
) -> None:
    """``rows`` as one Parquet file, in row groups (see ``ParquetRowWriter``), written atomically."""
    with storage.atomic_write(path) as stream:
        writer = ParquetRowWriter(stream, schema, compression, group_by)
        for row in rows:
            writer.add(row)
        writer.close()


class ShardWriter:
    """One shard's documents -> a file per language and bucket, written as they come (in
    Parquet row groups, or as CCNet's gzip JSON lines) under temporary names that are all
    renamed when the ``with`` block ends without an error. ``summaries`` lists the files."""

    def __init__(self, layout: Layout, shard: int, output_format: str = "parquet"):
        self.layout = layout
        self.shard = shard
        self.output_format = output_format
        self.files: Dict[Tuple[str, str], Dict] = {}
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *error) -> bool:
        return self.stack.__exit__(*error)

    def add(self, doc: Document) -> None:
        key = (doc["language"], doc["bucket"])
        file = self.files.get(key) or self._open(*key)
        file["add"](doc)
        file["documents"] += 1
        file["characters"] += doc["length"]

    def _open(self, language: str, bucket: str) -> Dict:
        relative = Layout.shard(language, bucket, self.shard, self.output_format)
        stream = self.stack.enter_context(storage.atomic_write(self.layout.path(relative)))
        if self.output_format == "ccnet":
            # no name and no time in the gzip header: reruns write identical bytes
            text = self.stack.enter_context(gzip.GzipFile(filename="", mode="wb", fileobj=stream, mtime=0))
            add = lambda doc: text.write((json.dumps(to_ccnet(doc), ensure_ascii=False) + "\n").encode("utf-8"))
        else:
            writer = ParquetRowWriter(stream)
            self.stack.callback(writer.close)
            add = writer.add
        file = self.files[(language, bucket)] = {
            "path": relative,
            "language": language,
            "bucket": bucket,
            "documents": 0,
            "characters": 0,
            "add": add,
        }
        return file

    @property
    def summaries(self) -> List[ShardEntry]:
        return [ShardEntry(**{k: v for k, v in f.items() if k != "add"}) for _, f in sorted(self.files.items())]
