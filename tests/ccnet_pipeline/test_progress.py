"""Progress of a running job: workers' progress files, summed and printed by the driver."""

import json
import time

from ccnet_pipeline import progress
from ccnet_pipeline.progress import Pass, SegmentProgress, describe, progress_lines, read_passes
from toolkit.corpus import Layout


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


def test_a_worker_rewrites_its_progress_every_few_seconds_and_at_the_end(tmp_path):
    layout, clock = Layout(str(tmp_path)), Clock()
    segment = SegmentProgress(layout, "hash", 3, clock)
    read = lambda: json.loads((tmp_path / "_work/progress/hash-00003.json").read_text())
    segment.update(100, 1)
    assert read() == {"bytes": 100, "documents": 1, "done": False, "started": 1000.0, "updated": 1000.0}
    clock.now += progress.WRITE_SECONDS / 2
    segment.update(200, 2)  # too soon: not written
    assert read()["bytes"] == 100
    clock.now += progress.WRITE_SECONDS
    segment.update(300, 3)
    assert read()["bytes"] == 300
    segment.finish()
    assert read()["done"] and read()["documents"] == 3


def test_the_driver_sums_passes_names_stalled_files_and_estimates_the_time_left(tmp_path):
    layout, clock = Layout(str(tmp_path)), Clock()
    for index, (size, docs) in enumerate([(4_000_000, 400), (1_000_000, 100)]):
        segment = SegmentProgress(layout, "hash", index, clock)
        segment.update(size, docs)
        if index == 0:
            segment.finish()
    SegmentProgress(layout, "filter", 0, clock).update(2_000_000, 200)
    cache = {}
    now = clock.now + 10
    states = read_passes(layout, cache, now, {"hash": {0, 1, 2}, "filter": {0, 1}})
    assert (states["hash"].files, states["hash"].bytes, states["hash"].documents) == (1, 5_000_000, 500)
    assert states["hash"].stalled == () and list(cache) == ["hash-00000.json"]  # the finished one, kept
    assert describe("hashing", states["hash"], 3, 10_000_000, now) == (
        "hashing 1/3 files, 5.0 MB of 10.0 MB (500 kB/s), 500 documents (50/s), ETA 10s"
    )
    segments = ["a.warc.wet.gz", "b.warc.wet.gz", "c.warc.wet.gz"]
    passes = [Pass("hash", "hashing", (0, 1, 2)), Pass("filter", "filtering", (0, 1))]
    later = clock.now + progress.STALL_SECONDS + 5
    counts, line, stalled = progress_lines(layout, segments, passes, [4_000_000, 1_000_000, 5_000_000], cache, later)
    assert counts == (("hash", 1, 5_000_000, 500), ("filter", 0, 2_000_000, 200))
    assert line.startswith("hashing 1/3 files, 5.0 MB of 10.0 MB") and "; filtering 0/2 files, 2.0 MB of 5.0 MB" in line
    assert stalled == {1: "no progress on b.warc.wet.gz for 2m05s", 0: "no progress on a.warc.wet.gz for 2m05s"}
    # resumed: an earlier run hashed file 0, this one hashes the two others (never "hashing 1/0 files")
    resumed = [Pass("hash", "hashing", (1, 2))]
    _, line, _ = progress_lines(layout, segments, resumed, [4_000_000, 1_000_000, 5_000_000], {}, later)
    assert line.startswith("hashing 0/2 files, 1.0 MB of 6.0 MB")


def test_reporting_prints_a_line_when_progress_changes(tmp_path, capsys):
    layout = Layout(str(tmp_path))
    segments = [str(tmp_path / "a.warc.wet.gz")]
    (tmp_path / "a.warc.wet.gz").write_bytes(b"x" * 1000)
    with progress.reporting(Layout(str(tmp_path)), segments, [Pass("hash", "hashing", (0,))], seconds=0.05):
        time.sleep(0.2)
        segment = SegmentProgress(layout, "hash", 0)
        segment.update(500, 5)
        time.sleep(0.2)
        segment.finish()
        time.sleep(0.2)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" files")[0] for line in lines] == [
        "mine: starting (0s)",
        "mine: hashing 0/1",
        "mine: hashing 1/1",
    ]
    assert "500 B of 1.0 kB" in lines[-1] and "5 documents" in lines[-1] and "ETA" not in lines[-1]
