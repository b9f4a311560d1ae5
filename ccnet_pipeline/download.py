"""Fetch a CommonCrawl dump's WET files into a local cache, resiliently. Plain Python (requests).

    python -m ccnet_pipeline download --dump CC-MAIN-2019-09 --segments 4 --cache data/cc

The listing ``crawl-data/<dump>/wet.paths.gz`` names the files; they land in the cache under the
same relative paths. Each file streams to ``<path>.tmp``, resumes with an HTTP Range request
after a cut, is checked against Content-Length and decompressed whole (every gzip member)
before the rename; 5xx, 429 (honouring Retry-After), time-outs and connection resets are retried
with exponential backoff and jitter, other 4xx are not, nor is a host name that does not resolve
(no network, no DNS or a wrong ``--base-url``: the error names the host at once). A file already
in the cache is not fetched again.
"""

from __future__ import annotations

import gzip
import os
import random
import socket
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

import requests
from tqdm import tqdm
from urllib3.exceptions import NameResolutionError

from toolkit import storage
from toolkit.cli import ConfigError, flag

DEFAULT_BASE_URL = "https://data.commoncrawl.org/"
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
CHUNK_BYTES = 1 << 16


@dataclass(frozen=True)
class DownloadConfig:
    base_url: str = DEFAULT_BASE_URL  # where crawl-data/ is served (CommonCrawl's HTTPS endpoint)
    cache: str = "data/commoncrawl"  # local folder for downloaded files; they keep their crawl-data/... paths
    parallelism: int = field(default=4, metadata=flag("--download-parallelism"))  # files fetched at once
    retries: int = field(default=8, metadata=flag("--download-retries"))  # further attempts per file after the first
    backoff_seconds: float = 1.0  # first retry delay; doubles each time, with jitter
    max_backoff_seconds: float = 60.0  # cap on one delay (Retry-After included)
    connect_timeout: float = 10.0  # seconds to connect
    read_timeout: float = 60.0  # seconds without a byte before the connection counts as dead
    chunk_bytes: int = 1 << 16  # bytes read and written at a time; a cut loses at most one chunk
    progress: bool = field(default=True, metadata=flag(cli=False))  # a tqdm bar with bytes/s on stderr

    def __post_init__(self):
        if self.parallelism < 1 or self.retries < 0 or self.backoff_seconds < 0 or self.chunk_bytes < 1:
            raise ValueError("parallelism >= 1, retries >= 0, backoff_seconds >= 0 and chunk_bytes >= 1 are required")


@dataclass(frozen=True)
class DumpSelection:
    """Which WET files of a dump to fetch."""

    dump: str = field(metadata=flag(cli=False))  # a CommonCrawl dump, e.g. CC-MAIN-2019-09
    segments: Optional[int] = None  # the first N WET files of the dump (default: all)
    shard: Optional[str] = None  # i/n: every n-th WET file from the i-th, for n machines (i from 0 to n-1)

    def __post_init__(self):
        # Checked here, before any download: the error names the flag, not the dataclass.
        try:
            parse_shard(self.shard)
            check_segments(self.segments)
        except ValueError as error:
            raise ConfigError(str(error)) from None

    def select(self, paths: Sequence[str]) -> List[str]:
        return select_paths(paths, self.segments, self.shard)


def parse_shard(shard: Optional[str]) -> Optional[Tuple[int, int]]:
    """``"i/n"`` -> (i, n), with 0 <= i < n; None -> None."""
    if not shard:
        return None
    try:
        index, count = (int(part) for part in shard.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes i/n, e.g. 0/8, got {shard!r}") from None
    if count < 1:
        raise ValueError(f"--shard {shard}: n, the number of shards, must be >= 1")
    if not 0 <= index < count:
        raise ValueError(
            f"--shard {shard}: i must be in 0..{count - 1} (shards count from 0: 0/{count} to {count - 1}/{count})"
        )
    return index, count


def check_segments(segments: Optional[int]) -> None:
    if segments is not None and segments < 1:
        raise ValueError(f"--segments must be >= 1, got {segments}")


def select_paths(paths: Sequence[str], segments: Optional[int] = None, shard: Optional[str] = None) -> List[str]:
    """The first ``segments`` paths, or with ``shard="i/n"`` every n-th path from the i-th
    (a disjoint split of the dump over n machines), or all."""
    selected = list(paths)
    parsed = parse_shard(shard)
    if parsed:
        index, count = parsed
        selected = selected[index::count]
    check_segments(segments)
    if segments is not None:
        selected = selected[:segments]
    return selected


class _Retry(Exception):
    """A failure worth another attempt; ``delay`` overrides the backoff (Retry-After)."""

    def __init__(self, reason: str, delay: Optional[float] = None):
        super().__init__(reason)
        self.delay = delay


class _Fatal(Exception):
    """A failure no retry will fix (404, 403, a host name that does not resolve, ...)."""


def _name_resolution_failure(error: BaseException, url: str) -> Optional[str]:
    """What to say when ``error`` (requests wraps urllib3 wraps socket) is a host name that did not
    resolve; None for any other error."""
    seen, pending, host, reason = set(), [error], None, None
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, NameResolutionError):
            host = getattr(getattr(current, "conn", None), "host", None) or host
        elif isinstance(current, socket.gaierror):
            reason = current.strerror or str(current)
        pending += [current.__cause__, current.__context__, getattr(current, "reason", None)]
        pending += [arg for arg in current.args if isinstance(arg, BaseException)]
    if host is None and reason is None:
        return None
    return (
        f"cannot resolve the host name {host or urlsplit(url).hostname}{f' ({reason})' if reason else ''}:"
        " no network, no DNS, or a wrong --base-url"
    )


def _retry_after(response: requests.Response) -> Optional[float]:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.strip().isdigit() else None


def check_gzip(path: str) -> None:
    """Decompress every gzip member of ``path``; raise ValueError when one is cut or corrupt."""
    with open(path, "rb") as handle:
        data = handle.read(CHUNK_BYTES)
        if not data:
            raise ValueError("empty file")
        while data:
            decompressor = zlib.decompressobj(31)
            while True:
                try:
                    decompressor.decompress(data)
                except zlib.error as error:
                    raise ValueError(f"corrupt gzip data: {error}") from None
                if decompressor.eof:
                    data = decompressor.unused_data
                    if not data:
                        data = handle.read(CHUNK_BYTES)
                    break
                data = handle.read(CHUNK_BYTES)
                if not data:
                    raise ValueError("the file ends inside a gzip member")


@dataclass
class Downloader:
    config: DownloadConfig
    session: requests.Session = field(default_factory=requests.Session)

    def __post_init__(self):
        self._bar: Optional[tqdm] = None
        self._lock = threading.Lock()

    def url(self, relative: str) -> str:
        return self.config.base_url.rstrip("/") + "/" + relative.lstrip("/")

    def list_wet_paths(self, dump: str) -> List[str]:
        """The dump's WET files, from ``crawl-data/<dump>/wet.paths.gz`` (retried like any file)."""
        relative = f"crawl-data/{dump}/wet.paths.gz"
        failures = self.fetch_all([relative])
        if failures:
            raise RuntimeError(f"cannot fetch the listing {self.url(relative)}: {failures[0][1]}")
        with gzip.open(os.path.join(self.config.cache, relative), "rt") as handle:
            return [line.strip() for line in handle if line.strip()]

    def fetch_all(self, relatives: Sequence[str]) -> List[Tuple[str, str]]:
        """Fetch the files missing from the cache; returns (path, reason) for each that failed
        after every retry."""
        missing = [r for r in relatives if not os.path.exists(os.path.join(self.config.cache, r))]
        if not missing:
            return []
        self._bar = tqdm(
            total=0,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            desc="download",
            disable=not self.config.progress,
            smoothing=0.1,
        )
        try:
            with ThreadPoolExecutor(self.config.parallelism) as pool:
                results = list(pool.map(self._fetch_with_retries, missing))
        finally:
            self._bar.close()
        return [(relative, error) for relative, error in zip(missing, results) if error]

    def _fetch_with_retries(self, relative: str) -> Optional[str]:
        destination = os.path.join(self.config.cache, relative)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        last = ""
        for attempt in range(self.config.retries + 1):
            try:
                self._fetch_once(self.url(relative), destination)
                return None
            except _Fatal as error:
                return str(error)
            except (
                _Retry,
                requests.ConnectionError,
                requests.Timeout,
                requests.exceptions.ChunkedEncodingError,
            ) as error:
                unresolved = _name_resolution_failure(error, self.url(relative))
                if unresolved:  # not transient as a reset is: retries would only delay the error by minutes
                    return unresolved
                last = f"{type(error).__name__}: {error}"
                if attempt == self.config.retries:
                    break
                delay = getattr(error, "delay", None)
                if delay is None:
                    base = self.config.backoff_seconds * (2**attempt)
                    delay = random.uniform(base / 2, base * 1.5)  # jitter spreads the retries
                time.sleep(min(delay, self.config.max_backoff_seconds))
        return f"gave up after {self.config.retries + 1} attempts; last error: {last}"

    def _fetch_once(self, url: str, destination: str) -> None:
        temporary = destination + ".tmp"
        have = os.path.getsize(temporary) if os.path.exists(temporary) else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        timeout = (self.config.connect_timeout, self.config.read_timeout)
        with self.session.get(url, headers=headers, stream=True, timeout=timeout) as response:
            status = response.status_code
            if status == 416:  # the range starts at the end: the temporary file may be whole
                expected = None
            elif status in RETRYABLE_STATUS:
                raise _Retry(f"HTTP {status}", _retry_after(response))
            elif status >= 400:
                raise _Fatal(f"HTTP {status} for {url}")
            else:
                if status == 200 and have:
                    have = 0  # the server ignored the range: start over
                length = response.headers.get("Content-Length")
                expected = have + int(length) if length and length.isdigit() else None
                with open(temporary, "ab" if have else "wb") as out:
                    if self._bar is not None and expected is not None:
                        with self._lock:
                            self._bar.total += expected - have
                            self._bar.refresh()
                    for chunk in response.iter_content(self.config.chunk_bytes):
                        out.write(chunk)
                        if self._bar is not None:
                            self._bar.update(len(chunk))
        size = os.path.getsize(temporary) if os.path.exists(temporary) else 0
        if expected is not None and size != expected:
            raise _Retry(f"got {size} of {expected} bytes")
        if destination.endswith(".gz"):
            try:
                check_gzip(temporary)
            except ValueError as error:
                os.remove(temporary)  # corrupt, not merely short: fetch it whole again
                raise _Retry(f"{os.path.basename(destination)}: {error}") from None
        storage.publish(temporary, destination)
