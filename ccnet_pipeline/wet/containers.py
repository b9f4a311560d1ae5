"""Containers: the decompressed bytes of a plain file or of one gzip member, a chunk at a time
(CommonCrawl's gzip member per record, a file gzipped whole, or a mix); a corrupt member is
skipped by resynchronising on the next member that starts a WARC record."""

from __future__ import annotations

import zlib
from typing import BinaryIO, Optional

from ccnet_pipeline.wet.records import GZIP_MAGIC, BadKind

CHUNK_BYTES = 1024 * 1024  # decompressed bytes per read: bounds memory against decompression bombs
_FEED_BYTES = 32 * 1024  # compressed bytes per feed
_PROBE_BYTES = 4096  # compressed bytes tried at a gzip magic to see whether a WARC record starts there


class ContainerError(Exception):
    """A gzip member that does not decompress or that the file cuts short."""

    def __init__(self, kind: BadKind, detail: str):
        super().__init__(detail)
        self.kind = kind


class PlainSource:
    """An uncompressed file's bytes, a chunk per read; ``state``/``restore`` go back to a chunk."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.position = 0

    def read(self) -> bytes:
        self.stream.seek(self.position)
        chunk = self.stream.read(CHUNK_BYTES)
        self.position += len(chunk)
        return chunk

    def state(self):
        return self.position

    def restore(self, state) -> None:
        self.position = state


class MemberSource:
    """The decompressed bytes of the gzip member at ``offset``, at most ``CHUNK_BYTES`` a read; raises
    ``ContainerError`` where it does not decompress or the file ends inside it. Once it has
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
                    raise ContainerError(BadKind.TRUNCATED_GZIP, "file ends inside a gzip member")
                self.fed += len(self.pending)
            try:
                chunk = decompressor.decompress(self.pending, CHUNK_BYTES)
            except zlib.error as error:
                raise ContainerError(BadKind.CORRUPT_GZIP, f"corrupt gzip member: {error}") from None
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


def next_member(stream: BinaryIO, start: int) -> Optional[int]:
    """The offset of the first gzip member from ``start`` on that begins a WARC record, or None."""
    position = start
    while True:
        stream.seek(position)
        chunk = stream.read(CHUNK_BYTES)
        if len(chunk) < len(GZIP_MAGIC):
            return None
        found = chunk.find(GZIP_MAGIC)
        while found >= 0:
            if _starts_member(stream, position + found):
                return position + found
            found = chunk.find(GZIP_MAGIC, found + 1)
        position += len(chunk) - (len(GZIP_MAGIC) - 1)  # a magic may straddle the chunks
