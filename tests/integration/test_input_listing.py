"""Input globs that match more than files: directories are skipped before the job starts; broken
links, link loops, FIFOs and files that vanish after listing are counted as ``unreadable_file``
and quarantined, and every document of the good segments is kept."""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apache_beam.io.filesystems import FileSystems

from ccnet_pipeline import pipeline
from ccnet_pipeline.cli import main
from ccnet_pipeline.pipeline import list_segments, match_local
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from tests.integration.test_resume import committed, contents

GOOD = "CC-SAMPLE-00000.warc.wet.gz"  # sorts before the bad entries: segment 0, as when mined alone
UNREADABLE = ("dangling", "fifo", "loop")


@pytest.fixture(scope="module")
def segments(tmp_path_factory):
    """Three good generated segments."""
    folder = tmp_path_factory.mktemp("listing") / "wet"
    generate_sample(str(folder), SampleConfig(segments=3, docs_per_segment=150, sites=30, seed=7))
    return sorted(folder.glob("*.warc.wet.gz"))


def messy_folder(root: Path, good: Path) -> Path:
    """A good segment beside a sub-directory (holding a segment), a link to it, an empty
    directory, a dangling link, a link loop and a FIFO."""
    folder = root / "data"
    (folder / "sub1").mkdir(parents=True)
    (folder / "empty").mkdir()
    shutil.copy(good, folder / GOOD)
    shutil.copy(good, folder / "sub1" / "inner.warc.wet.gz")
    (folder / "dirlink").symlink_to("sub1")
    (folder / "dangling").symlink_to("nowhere.warc.wet.gz")
    (folder / "loop").symlink_to("loop")
    os.mkfifo(folder / "fifo")
    return folder


def command(pattern: str, output: Path, lm_dir: Path):
    return ["mine", "--input", pattern, "--output", str(output), "--langs", "100", "--lm-dir", str(lm_dir)]


def shards(output: Path):
    return {k: v for k, v in contents(output).items() if k.endswith(".parquet") and not k.startswith("_work")}


@pytest.fixture(scope="module")
def alone(segments, lm_dir, tmp_path_factory):
    """The good segment mined on its own."""
    root = tmp_path_factory.mktemp("alone")
    shutil.copy(segments[0], root / GOOD)
    output = root / "corpus"
    assert main(command(str(root / GOOD), output, lm_dir)) == 0
    return output


@pytest.fixture(scope="module")
def messy(segments, lm_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("messy")
    folder = messy_folder(root, segments[0])
    output = root / "corpus"
    assert main(command(f"{folder}/*", output, lm_dir)) == 0
    return folder, output


def test_listing_skips_directories_and_keeps_broken_entries(segments, tmp_path, caplog):
    folder = messy_folder(tmp_path, segments[0])
    with caplog.at_level(logging.WARNING):
        listed = list_segments([f"{folder}/*"])
    assert listed == [f"{folder}/{name}" for name in (GOOD, *UNREADABLE)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert (
        warnings[0] == f"skipping 3 directories the input glob matches: {folder}/dirlink, {folder}/empty, {folder}/sub1"
    )
    assert warnings[1].endswith(", ".join(f"{folder}/{name}" for name in UNREADABLE))
    assert list_segments([f"{folder}/**"]) == sorted(
        [f"{folder}/{name}" for name in (GOOD, *UNREADABLE)] + [f"{folder}/sub1/inner.warc.wet.gz"]
    )


def test_local_match_finds_the_files_beam_finds(segments, tmp_path):
    folder = messy_folder(tmp_path, segments[0])
    for pattern in ("*", "**", "*.gz", "sub*/*", "**/*.warc.wet.gz", "CC-SAMPLE-0000?.warc.wet.gz", "[Cd]*", ""):
        full = f"{folder}/{pattern}"
        # Beam's match keeps only what has a size: files and FIFOs, not directories or broken links.
        ours = sorted(p for p in match_local(full) if os.path.exists(p) and not os.path.isdir(p))
        beams = sorted(m.path for m in FileSystems.match([full])[0].metadata_list)
        assert ours == beams, pattern


def test_a_pattern_without_folder_matches_in_the_current_directory(segments, tmp_path, monkeypatch):
    messy_folder(tmp_path, segments[0])
    monkeypatch.chdir(tmp_path / "data")
    assert list_segments(["*.warc.wet.gz"]) == [GOOD]
    assert list_segments(["sub1/*"]) == ["sub1/inner.warc.wet.gz"]


@pytest.mark.parametrize("pattern", ["sub1", "empty", "d*", "loop"])
def test_a_glob_of_only_directories_or_broken_links_is_one_line_error(segments, tmp_path, capsys, pattern):
    folder = messy_folder(tmp_path, segments[0])
    assert main(["mine", "--input", f"{folder}/{pattern}", "--output", str(tmp_path / "out"), "--langs", "en"]) == 2
    error = capsys.readouterr().err
    assert error.startswith(
        f"error: the input glob matches no file: {folder}/{pattern} (only directories or broken links: "
    )
    assert error.count("\n") == 1 and "Traceback" not in error
    assert not (tmp_path / "out").exists()


def test_the_good_segment_is_mined_whole(messy, alone):
    _, output = messy
    assert shards(output) == shards(alone)
    stats = json.loads((output / "stats.json").read_text())
    alone_stats = json.loads((alone / "stats.json").read_text())
    assert stats["bad_records"] == {"unreadable_file": len(UNREADABLE)}
    assert stats["segments"] == 1 + len(UNREADABLE)
    assert stats["documents_read"] == alone_stats["documents_read"] > 100
    assert stats["output"] == alone_stats["output"]
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["documents"] == json.loads((alone / "manifest.json").read_text())["documents"]


def test_unreadable_entries_are_quarantined(messy):
    folder, output = messy
    quarantined = {f.name: json.loads(f.read_text()) for f in (output / "quarantine" / "bad-input").iterdir()}
    assert sorted(quarantined) == [f"{name}.jsonl" for name in UNREADABLE]
    details = {q["cc_segment"]: q["detail"] for q in quarantined.values()}
    assert {q["kind"] for q in quarantined.values()} == {"unreadable_file"}
    assert details == {
        "dangling": f"cannot read {folder}/dangling: No such file or directory",
        "fifo": f"cannot read {folder}/fifo: not a regular file",
        "loop": f"cannot read {folder}/loop: Too many levels of symbolic links",
    }


@pytest.mark.parametrize("change", ["removed", "replaced by a directory", "replaced by a dangling link"])
def test_a_file_that_becomes_unreadable_after_listing(segments, lm_dir, tmp_path, monkeypatch, change):
    folder = tmp_path / "wet"
    folder.mkdir()
    for segment in segments:
        shutil.copy(segment, folder / segment.name)
    victim = folder / segments[1].name
    listing = pipeline.list_segments

    def list_then_break(patterns):  # the real listing, then the file changes before any read
        listed = listing(patterns)
        victim.unlink()
        if change == "replaced by a directory":
            victim.mkdir()
        elif change == "replaced by a dangling link":
            victim.symlink_to("gone")
        return listed

    monkeypatch.setattr(pipeline, "list_segments", list_then_break)
    output = tmp_path / "corpus"
    assert main(command(f"{folder}/*.warc.wet.gz", output, lm_dir)) == 0
    stats = json.loads((output / "stats.json").read_text())
    assert stats["bad_records"]["unreadable_file"] == 1
    quarantined = json.loads((output / "quarantine" / "bad-input" / f"{victim.name}.jsonl").read_text())
    assert quarantined["kind"] == "unreadable_file" and quarantined["detail"].startswith(f"cannot read {victim}: ")
    monkeypatch.undo()

    # Every other document is kept: the same as mining the two other segments alone, with the
    # vanished one's place (segment 1) left empty.
    alone = tmp_path / "alone"
    alone.mkdir()
    for segment in (segments[0], segments[2]):
        shutil.copy(segment, alone / segment.name)
    reference = tmp_path / "reference"
    assert main(command(f"{alone}/*.warc.wet.gz", reference, lm_dir)) == 0
    reference_stats = json.loads((reference / "stats.json").read_text())
    assert stats["documents_read"] == reference_stats["documents_read"] > 200
    assert stats["bad_records"] == {**reference_stats["bad_records"], "unreadable_file": 1}
    assert stats["output"] == reference_stats["output"]


def test_kill_and_rerun_gives_the_uninterrupted_output(messy, lm_dir, tmp_path):
    folder, uninterrupted = messy
    output = tmp_path / "corpus"
    argv = [sys.executable, "-m", "ccnet_pipeline", *command(f"{folder}/*", output, lm_dir)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while process.poll() is None and committed(output)[1] < 1 + len(UNREADABLE) and time.time() < deadline:
        time.sleep(0.001)
    assert process.poll() is None, "the job finished before every segment was committed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (output / "_work" / "complete").exists()
    assert main(command(f"{folder}/*", output, lm_dir)) == 0
    assert contents(output) == contents(uninterrupted)
