"""Bad input at scale (issue 27's fuzzing campaign, kept): every kind of broken record and file
that ``tests/support/bad_inputs.py`` generates, mixed with good documents, in one job run as a user runs
it. The job ends (no hang), counts each bad record once by its kind and quarantines it, and keeps
every good document."""

import json
import subprocess
import sys
from collections import Counter

import pyarrow.parquet as pq
import pytest

from ccnet_pipeline.cli import main
from tests.support.bad_inputs import KINDS, MAX_RECORD_BYTES, write_inputs
from tests.support.helpers import SHARED_DATA


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    expected = write_inputs(root)
    out = root / "corpus"
    command = [sys.executable, "-m", "ccnet_pipeline", "mine", "--input", f"{root}/wet/**", "--output", str(out)]
    command += ["--langs", "en", "--max-record-bytes", f"{MAX_RECORD_BYTES // 1000}kB"]
    # A hang fails here instead of stalling the suite.
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, expected


def test_the_generator_makes_at_least_40_kinds():
    assert len(KINDS) == len(set(KINDS)) >= 40


def test_every_bad_input_is_counted_once_by_its_kind_and_quarantined(mined):
    out, expected = mined
    stats = json.loads((out / "stats.json").read_text())
    assert stats["bad_records"] == dict(expected.bad)
    quarantine = out / "quarantine" / "bad-input"
    quarantined = [json.loads(line) for f in quarantine.rglob("*.jsonl") for line in f.read_text().splitlines()]
    assert Counter(q["kind"] for q in quarantined) == expected.bad
    for year in ("2019", "2020"):  # same-named inputs in two folders keep two quarantines
        (line,) = (quarantine / "same" / year / "x.warc.wet.gz.jsonl").read_text().splitlines()
        assert json.loads(line)["cc_segment"] == f"same/{year}/x.warc.wet.gz"


def test_no_good_document_is_lost(mined):
    out, expected = mined
    rows = [row for f in sorted(out.rglob("part-*.parquet")) for row in pq.read_table(f).to_pylist()]
    assert sorted(row["url"] for row in rows) == sorted(expected.good)
    stats = json.loads((out / "stats.json").read_text())
    assert stats["dropped"] == {} and stats["documents_read"] == len(expected.good)
    assert sum(row["date_download"] is None for row in rows) == expected.invalid_dates == 2
    assert stats["counters"]["read/invalid_date"] == expected.invalid_dates


@pytest.mark.skipif(not (SHARED_DATA / "commoncrawl").is_dir(), reason="../shared/data/commoncrawl absent")
def test_real_malformed_files_as_bad_input(tmp_path):
    out = tmp_path / "corpus"
    pattern = str(SHARED_DATA / "commoncrawl" / "bad-*.warc.gz")
    assert main(["mine", "--input", pattern, "--output", str(out)]) == 0
    stats = json.loads((out / "stats.json").read_text())
    # bad-truncated: one response record cut short; ClueWeb09: 29 WARC/0.18 records.
    assert stats["bad_records"] == {"truncated_gzip": 1, "unsupported_version": 29}
