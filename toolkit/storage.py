"""Files on the local disk or on any Beam file system (gs://, s3://, hdfs://, ...), and the one
way this project writes a file: under a temporary name beside it, renamed into place once whole.

A reader never sees a partial file, a retried worker never clobbers a finished file with half of
its own, and a crash leaves at most a hidden ``.<name>.<random>.tmp`` behind. Local paths use
the operating system directly; remote paths go through ``apache_beam.io.filesystems``, imported
only when a remote path is used, so that the pure packages stay free of Beam.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import uuid
from typing import BinaryIO, Iterator, List, Sequence

REMOTE_MARK = "://"
# The names _temporary gives: a crash can leave one behind, half written.
_TEMPORARY_NAME = re.compile(r"\.[^/]*\.[0-9a-f]{32}\.tmp(\.[^/.]*)?$")


def is_remote(path: str) -> bool:
    return REMOTE_MARK in path


def _filesystems():
    from apache_beam.io.filesystems import FileSystems

    return FileSystems


def _uncompressed():
    from apache_beam.io.filesystem import CompressionTypes

    return CompressionTypes.UNCOMPRESSED


def join(folder: str, *names: str) -> str:
    """``folder/name/...``, with "/" on every file system."""
    return "/".join([folder.rstrip("/"), *names])


def absolute(path: str) -> str:
    """A local path made absolute (workers of a cluster run elsewhere, in other folders), without a
    trailing "/"; a remote path as it is."""
    return path.rstrip("/") if is_remote(path) else os.path.abspath(path)


def exists(path: str) -> bool:
    return _filesystems().exists(path) if is_remote(path) else os.path.exists(path)


def open_read(path: str) -> BinaryIO:
    """A binary, seekable stream of the bytes of ``path`` as stored (a .gz is not decompressed)."""
    if is_remote(path):
        return _filesystems().open(path, compression_type=_uncompressed())
    return open(path, "rb")


def read_bytes(path: str) -> bytes:
    with open_read(path) as stream:
        return stream.read()


def read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8")


def read_json(path: str):
    return json.loads(read_bytes(path))


def match(pattern: str, temporaries: bool = False) -> List[str]:
    """The files ``pattern`` matches, in Beam's glob syntax (``*`` within a folder, ``**``
    across), sorted; without the temporaries of unfinished writes (a killed worker leaves
    them) unless ``temporaries``."""
    paths = sorted(m.path for m in _filesystems().match([pattern])[0].metadata_list)
    return paths if temporaries else [p for p in paths if not is_temporary(p)]


def is_temporary(path: str) -> bool:
    """Whether ``path`` is named as this module names a file it has not finished writing."""
    return bool(_TEMPORARY_NAME.match(path.rsplit("/", 1)[-1]))


def delete(paths: Sequence[str]) -> None:
    local = [p for p in paths if not is_remote(p)]
    remote = [p for p in paths if is_remote(p)]
    for path in local:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    if remote:
        _filesystems().delete(remote)


def _temporary(path: str) -> str:
    """A hidden name beside ``path`` that keeps its extension (np.save and matplotlib look at it)."""
    folder, name = os.path.split(path)
    stem, extension = os.path.splitext(name)
    return os.path.join(folder, f".{stem}.{uuid.uuid4().hex}.tmp{extension}")


def publish(temporary: str, path: str) -> None:
    """Rename the finished ``temporary`` (a file or a folder) to ``path``, replacing what is
    there; on a Beam file system, ``temporary`` must be a file of the same file system."""
    if is_remote(path):
        _filesystems().rename([temporary], [path])
        return
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)  # os.replace cannot replace a folder
    os.replace(temporary, path)


@contextlib.contextmanager
def _replaced_on_success(temporary: str, path: str) -> Iterator[str]:
    """``temporary`` published as ``path`` when the block ends without an error, removed when it raises."""
    try:
        yield temporary
    except BaseException:
        if exists(temporary):
            delete([temporary])
        raise
    publish(temporary, path)


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """A local temporary path to write ``path`` at (a file or a folder, by any library), moved
    into place when the block ends without an error and removed when it raises. For a remote
    ``path`` the file is written locally, then copied up and renamed."""
    if is_remote(path):
        with tempfile.TemporaryDirectory(prefix="upload-") as folder:
            local = os.path.join(folder, os.path.basename(path))
            yield local
            with atomic_write(path) as stream, open(local, "rb") as source:
                shutil.copyfileobj(source, stream, 1 << 22)
        return
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with _replaced_on_success(_temporary(path), path) as temporary:
        yield temporary


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "wb") -> Iterator[BinaryIO]:
    """An open stream to ``path`` ("wb", or "w" for UTF-8 text on the local disk), written
    under a temporary name and renamed into place when the block ends without an error."""
    if mode not in ("wb", "w") or (mode == "w" and is_remote(path)):
        raise ValueError(f"mode must be 'wb', or 'w' for a local file; got {mode!r} for {path}")
    if not is_remote(path):
        text = {"encoding": "utf-8", "newline": ""} if mode == "w" else {}  # "\n" written as it is
        with atomic_path(path) as temporary, open(temporary, mode, **text) as stream:
            yield stream
        return
    with (
        _replaced_on_success(_temporary(path), path) as temporary,
        _filesystems().create(temporary, compression_type=_uncompressed()) as stream,
    ):
        yield stream


def write_bytes(path: str, data: bytes) -> None:
    with atomic_write(path) as stream:
        stream.write(data)


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str, data) -> None:
    """``data`` as indented JSON with sorted keys (so reruns write the same bytes)."""
    write_text(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def copy_file(source: str, path: str) -> None:
    """A copy of the local file ``source`` at ``path``, written atomically."""
    with atomic_path(path) as temporary:
        shutil.copyfile(source, temporary)


def localize(path: str) -> str:
    """A local copy of a file on a Beam file system, fetched once per process into the
    temporary folder (fastText, SentencePiece and KenLM read local files only); a local path
    as it is."""
    if not is_remote(path):
        return path
    folder = os.path.join(tempfile.gettempdir(), "xlmr-corpus-models")
    local = os.path.join(folder, hashlib.sha1(path.encode()).hexdigest()[:16] + "-" + path.rsplit("/", 1)[-1])
    if not os.path.exists(local):
        fetch(path, local)
    return local


def fetch(path: str, local: str) -> None:
    """Copy ``path`` from any file system to the local file ``local``, atomically."""
    with open_read(path) as source, atomic_write(local) as out:
        shutil.copyfileobj(source, out, 1 << 22)
