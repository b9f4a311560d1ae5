"""Crash safety: kill -9 the mine job at different points, run the same command again, and get
exactly the files an uninterrupted run writes."""

import glob
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample

SEGMENTS = 8


@pytest.fixture(scope="module")
def wet(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    generate_sample(str(root / "wet"), SampleConfig(segments=SEGMENTS, docs_per_segment=150, sites=30, seed=4))
    return root / "wet"


def command(wet: Path, output: Path, lm_dir: Path, *extra: str):
    return [
        "mine",
        "--input",
        str(wet / "*.warc.wet.gz"),
        "--output",
        str(output),
        "--langs",
        "100",
        "--lm-dir",
        str(lm_dir),
        "--keep-dropped",
        *extra,
    ]


def contents(output: Path):
    """Every file's digest; the manifest without the fields that name the output folder."""
    files = {}
    for path in sorted(output.rglob("*")):
        relative = path.relative_to(output).as_posix()
        if path.is_dir() or relative == "_work/run.json":
            continue
        data = path.read_bytes()
        if relative == "manifest.json":
            manifest = json.loads(data)
            manifest["config"].pop("output")
            data = json.dumps(manifest, sort_keys=True).encode()
        files[relative] = hashlib.sha256(data).hexdigest()
    return files


@pytest.fixture(scope="module")
def uninterrupted(wet, lm_dir, tmp_path_factory):
    output = tmp_path_factory.mktemp("whole") / "corpus"
    assert main(command(wet, output, lm_dir)) == 0
    return contents(output)


def committed(output: Path):
    return (len(glob.glob(f"{output}/_work/hashes/*.npy")), len(glob.glob(f"{output}/_work/segments/*.json")))


@pytest.mark.parametrize(
    "point, reached",
    [
        ("while hashing", lambda hashes, markers: hashes >= 3),
        ("while committing segments", lambda hashes, markers: 1 <= markers < SEGMENTS),
        ("after every segment committed", lambda hashes, markers: markers == SEGMENTS),
    ],
)
def test_kill_and_rerun_gives_the_uninterrupted_output(wet, lm_dir, tmp_path, uninterrupted, point, reached):
    output = tmp_path / "corpus"
    argv = [sys.executable, "-m", "ccnet_pipeline", *command(wet, output, lm_dir)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while process.poll() is None and not reached(*committed(output)) and time.time() < deadline:
        time.sleep(0.001)
    assert process.poll() is None, f"the job finished before the kill point ({point})"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (output / "_work" / "complete").exists()
    hashes, markers = committed(output)
    assert main(command(wet, output, lm_dir)) == 0
    assert contents(output) == uninterrupted, (point, hashes, markers)


def test_rerun_of_a_finished_job_changes_nothing(wet, lm_dir, tmp_path, uninterrupted, capsys):
    output = tmp_path / "corpus"
    assert main(command(wet, output, lm_dir)) == 0
    before = {p: p.stat().st_mtime_ns for p in output.rglob("*.parquet")}
    assert main(command(wet, output, lm_dir)) == 0
    assert "already holds this job's finished output" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in output.rglob("*.parquet")} == before
    assert contents(output) == uninterrupted


NEAR_DEDUP = ("--near-dedup", "minhash", "--minhash-verify")


def test_kill_and_rerun_with_near_dedup_gives_the_uninterrupted_output(lm_dir, tmp_path):
    """The clusters span segments: a rerun reads the committed segments' band keys back and
    finds the same ones."""
    from ccnet_pipeline.samples.near_duplicates import generate, write_wet

    wet = tmp_path / "wet"
    write_wet(wet, generate(seed=0, groups_per_kind=2), segments=SEGMENTS)
    whole = tmp_path / "whole"
    assert main(command(wet, whole, lm_dir, *NEAR_DEDUP)) == 0
    assert json.loads((whole / "stats.json").read_text())["dropped"]["near_duplicate"] > 0
    output = tmp_path / "corpus"
    argv = [sys.executable, "-m", "ccnet_pipeline", *command(wet, output, lm_dir, *NEAR_DEDUP)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while process.poll() is None and committed(output)[1] < 1 and time.time() < deadline:
        time.sleep(0.001)
    assert process.poll() is None, "the job finished before the kill point"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert committed(output)[1] >= 1 and not (output / "_work" / "complete").exists()
    assert main(command(wet, output, lm_dir, *NEAR_DEDUP)) == 0
    assert contents(output) == contents(whole)
