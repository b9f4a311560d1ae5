"""Downloads against a loopback server that serves a fake CommonCrawl layout and injects faults."""

import gzip
import io
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.download import DownloadConfig, Downloader, DumpSelection, check_gzip, select_paths
from ccnet_pipeline.samples.wet_writer import write_wet
from tests.support.helpers import page, paragraphs

DUMP = "CC-MAIN-2099-01"


def wet_file(number: int) -> bytes:
    stream = io.BytesIO()
    write_wet(stream, [page(10 * number + i, paragraphs("en", 40, f"seg{'x' * number}doc{'y' * i}")) for i in range(5)])
    return stream.getvalue()


class FaultyServer:
    """Serves ``files`` over HTTP/1.1 on 127.0.0.1 with Range support; ``faults[path]`` lists the
    fault for each successive request of that path: 503, 429 (Retry-After: 1), reset (connection
    reset mid-body), truncate (closed mid-body), slow (the body in slow pieces), corrupt (bytes
    flipped), 404."""

    def __init__(self, files, faults):
        self.files, self.faults, self.log = files, {k: list(v) for k, v in faults.items()}, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                path = self.path.lstrip("/")
                fault = server.faults.get(path, []).pop(0) if server.faults.get(path) else "ok"
                start = int(self.headers["Range"][6:].split("-")[0]) if self.headers.get("Range") else 0
                server.log.append((path, fault, start))
                if path not in server.files or fault == "404":
                    return self._status(404)
                if fault in ("503", "429"):
                    return self._status(int(fault), {"Retry-After": "1"} if fault == "429" else {})
                data = server.files[path]
                if start >= len(data):
                    return self._status(416)
                body = data[start:]
                self.send_response(206 if start else 200)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if fault == "corrupt":
                    body = body[:100] + bytes(b ^ 0xFF for b in body[100:200]) + body[200:]
                if fault in ("reset", "truncate"):
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    if fault == "reset":  # RST instead of FIN
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "slow":
                    for i in range(0, len(body), len(body) // 4 + 1):
                        self.wfile.write(body[i : i + len(body) // 4 + 1])
                        self.wfile.flush()
                        time.sleep(0.2)
                    return
                self.wfile.write(body)

            def _status(self, code, headers=None):
                self.send_response(code)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def layout(count=4):
    segments = {f"crawl-data/{DUMP}/segments/1/wet/CC-MAIN-{i:05d}.warc.wet.gz": wet_file(i) for i in range(count)}
    listing = gzip.compress("".join(f"{path}\n" for path in segments).encode(), mtime=0)
    return {f"crawl-data/{DUMP}/wet.paths.gz": listing, **segments}, list(segments)


def config(server, tmp_path, **overrides):
    values = dict(
        base_url=server.base_url,
        cache=str(tmp_path / "cache"),
        parallelism=3,
        retries=4,
        backoff_seconds=0.01,
        read_timeout=5,
        chunk_bytes=256,
        progress=False,
    )
    values.update(overrides)
    return DownloadConfig(**values)


def test_every_segment_arrives_byte_identical_despite_faults(tmp_path):
    files, segments = layout()
    faults = {
        f"crawl-data/{DUMP}/wet.paths.gz": ["503"],
        segments[0]: ["503", "503"],
        segments[1]: ["429"],
        segments[2]: ["reset", "truncate"],
        segments[3]: ["corrupt", "slow"],
    }
    with FaultyServer(files, faults) as server:
        downloader = Downloader(config(server, tmp_path))
        paths = downloader.list_wet_paths(DUMP)
        assert paths == segments
        assert downloader.fetch_all(paths) == []
    for path in segments:
        assert (tmp_path / "cache" / path).read_bytes() == files[path]
    assert not list((tmp_path / "cache").rglob("*.tmp"))
    resumed = [start for path, fault, start in server.log if path == segments[2]]
    # Range requests resume the cut file. A reset (RST) may discard the bytes still in flight, so
    # only the truncation (FIN after half the body) is sure to have left something to resume from.
    assert resumed[0] == 0 and resumed[1] >= 0 and resumed[2] > resumed[1]
    assert [fault for path, fault, _ in server.log if path == segments[3]] == ["corrupt", "slow"]


def test_cached_files_are_not_fetched_again(tmp_path):
    files, segments = layout(2)
    with FaultyServer(files, {}) as server:
        downloader = Downloader(config(server, tmp_path))
        assert downloader.fetch_all(segments) == []
        count = len(server.log)
        assert downloader.fetch_all(segments) == [] and len(server.log) == count


def test_4xx_is_not_retried_and_exhausted_retries_are_reported(tmp_path):
    files, segments = layout(2)
    with FaultyServer(files, {segments[1]: ["503"] * 10}) as server:
        failures = Downloader(config(server, tmp_path, retries=2)).fetch_all(
            [segments[0], segments[1], "crawl-data/missing.gz"]
        )
    reasons = dict(failures)
    assert set(reasons) == {segments[1], "crawl-data/missing.gz"}
    assert "HTTP 404" in reasons["crawl-data/missing.gz"]
    assert "gave up after 3 attempts" in reasons[segments[1]] and "HTTP 503" in reasons[segments[1]]
    assert sum(1 for path, _, _ in server.log if path == "crawl-data/missing.gz") == 1


def test_select_paths():
    paths = [f"p{i}" for i in range(10)]
    assert select_paths(paths, segments=3) == ["p0", "p1", "p2"]
    assert select_paths(paths, shard="1/4") == ["p1", "p5", "p9"]
    assert select_paths(paths, segments=1, shard="2/4") == ["p2"]
    with pytest.raises(ValueError, match="i/n"):
        select_paths(paths, shard="2")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--shard", "5/3"], "--shard 5/3: i must be in 0..2"),
        (["--shard", "3/3"], "--shard 3/3: i must be in 0..2"),
        (["--shard=-1/3"], "--shard -1/3: i must be in 0..2"),
        (["--shard", "0/0"], "--shard 0/0: n, the number of shards, must be >= 1"),
        (["--shard", "2"], "--shard takes i/n"),
        (["--segments", "0"], "--segments must be >= 1"),
    ],
)
def test_the_selection_is_checked_before_any_download(tmp_path, capsys, flags, message):
    with FaultyServer(*layout(2)[:1], {}) as server:
        for command in (["download"], ["mine", "--output", str(tmp_path / "corpus")]):
            argv = [*command, "--dump", DUMP, "--base-url", server.base_url, "--cache", str(tmp_path / "cache"), *flags]
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert server.log == []  # not even the listing was fetched
    with pytest.raises(ValueError, match="i must be in 0..2"):
        DumpSelection(DUMP, shard="3/3")
    assert DumpSelection(DUMP, shard="2/3").select([f"p{i}" for i in range(7)]) == ["p2", "p5"]


def test_a_host_name_that_does_not_resolve_fails_at_once_and_names_the_host(tmp_path, capsys):
    # A name resolution failure is not retried: with these settings, a retry would sleep >= 10 s first.
    unresolvable = "http://nonexistent.invalid/"  # .invalid never resolves (RFC 6761)
    config = DownloadConfig(unresolvable, str(tmp_path / "cache"), retries=1, backoff_seconds=20, progress=False)
    downloader = Downloader(config)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as error:
        downloader.list_wet_paths(DUMP)
    assert time.monotonic() - start < 10
    assert "cannot resolve the host name nonexistent.invalid" in str(error.value)
    assert "\n" not in str(error.value) and "gave up" not in str(error.value)
    argv = ["download", "--dump", DUMP, "--base-url", unresolvable, "--cache", str(tmp_path / "cache")]
    assert main([*argv, "--download-retries", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot fetch the listing http://nonexistent.invalid/crawl-data/")
    assert "cannot resolve the host name nonexistent.invalid" in err and err.count("\n") == 1


def test_check_gzip(tmp_path):
    good = tmp_path / "good.gz"
    good.write_bytes(gzip.compress(b"a" * 1000) + gzip.compress(b"b" * 1000))
    check_gzip(str(good))
    cut = tmp_path / "cut.gz"
    cut.write_bytes(good.read_bytes()[:-10])
    with pytest.raises(ValueError, match="ends inside"):
        check_gzip(str(cut))


@pytest.mark.slow
def test_mine_from_a_dump(tmp_path):
    files, segments = layout(2)
    with FaultyServer(files, {segments[0]: ["503"]}) as server:
        code = main(
            [
                "mine",
                "--dump",
                DUMP,
                "--segments",
                "2",
                "--base-url",
                server.base_url,
                "--cache",
                str(tmp_path / "cache"),
                "--output",
                str(tmp_path / "corpus"),
                "--langs",
                "en",
                "--min-len",
                "100",
            ]
        )
    assert code == 0
    stats = (tmp_path / "corpus" / "stats.json").read_text()
    assert '"segments": 2' in stats


@pytest.mark.slow
def test_estimate_from_a_dump_downloads_only_its_sample(tmp_path, capsys):
    files, segments = layout(6)
    with FaultyServer(files, {}) as server:
        argv = ["estimate", "--dump", DUMP, "--base-url", server.base_url, "--cache", str(tmp_path / "cache")]
        argv += ["--output", str(tmp_path / "corpus"), "--langs", "en", "--min-len", "100"]
        code = main([*argv, "--sample-segments", "2", "--workdir", str(tmp_path / "estimate")])
    assert code == 0
    assert "estimated from 2 of 6 WET files" in capsys.readouterr().out
    fetched = sorted(p.name for p in (tmp_path / "cache").rglob("*.warc.wet.gz"))
    assert fetched == sorted(Path(segments[i]).name for i in (1, 4))  # spread over the dump's list
