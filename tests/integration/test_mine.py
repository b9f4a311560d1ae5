"""End to end: `python -m ccnet_pipeline mine` on WET files the tests write."""

import hashlib
import json
import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from ccnet_pipeline.samples.wet_writer import raw_record
from tests.support.helpers import SHARED_DATA, page, paragraphs, write_fasttext_model, write_wet_file

BOILERPLATE = ["Home | News | Sport | Contact", "Cookies help us deliver our services. Accept"]


@pytest.fixture(scope="module")
def handmade(tmp_path_factory):
    """Three segments with known content: languages, shared boilerplate, a duplicate page,
    junk, bad records."""
    root = tmp_path_factory.mktemp("wet")
    bad_text = b"Title\nCaf\xe9"
    write_wet_file(
        root / "seg-0.warc.wet.gz",
        [
            page(0, "\n".join(BOILERPLATE + [paragraphs("en", 3, "enfirst")])),
            page(1, "\n".join(BOILERPLATE + [paragraphs("fr", 3, "frfirst")])),
            page(2, "404 Not Found"),
            raw_record(
                {
                    "WARC-Type": "conversion",
                    "WARC-Target-URI": "https://bad/1",
                    "WARC-Date": "2019-02-16T04:15:08Z",
                    "Content-Length": str(len(bad_text)),
                },
                bad_text,
            ),
        ],
    )
    write_wet_file(
        root / "seg-1.warc.wet.gz",
        [
            page(3, "\n".join(BOILERPLATE + [paragraphs("de", 3, "defirst")])),
            page(4, "\n".join([paragraphs("en", 3, "ensecond")] + BOILERPLATE)),
            page(5, paragraphs("ru", 3, "rufirst")),  # outside the selection below
            raw_record(
                {
                    "WARC-Type": "conversion",
                    "WARC-Target-URI": "https://bad/2",
                    "WARC-Date": "2019-02-16T04:15:08Z",
                    "Content-Length": "0",
                },
                b"",
            ),
        ],
    )
    write_wet_file(
        root / "seg-2.warc.wet.gz",
        [
            page(6, paragraphs("is", 3, "isfirst")),
            page(7, "\n".join(BOILERPLATE + [paragraphs("en", 3, "enfirst")])),  # copy of page 0
            page(8, paragraphs("es", 3, "esfirst")),
        ],
    )
    return root


def mine(inputs: Path, output: Path, *extra: str) -> dict:
    code = main(["mine", "--input", str(inputs / "*.warc.wet.gz"), "--output", str(output), *extra])
    assert code == 0
    return json.loads((output / "stats.json").read_text())


def rows(path: Path):
    return pq.read_table(path).to_pylist()


def test_end_to_end_on_known_input(handmade, tmp_path):
    out = tmp_path / "corpus"
    stats = mine(handmade, out, "--langs", "en,fr,de,es,is", "--min-len", "200")
    assert stats["documents_read"] == 9
    assert stats["bad_records"] == {"invalid_utf8": 1, "empty_record": 1}
    # Page 7 copies page 0: in ccnet mode both lose every line, like the shared boilerplate.
    assert stats["dropped"] == {"too_short": 3, "not_selected": 1}
    assert stats["lines_removed_by_dedup"] == 5 * 2 + 2 * 3  # boilerplate on 5 pages, the copied page twice
    english = rows(out / "en/all/part-00000.parquet")
    assert [d["url"] for d in english] == ["https://example1.org/page/4"]
    assert english[0]["raw_content"] == paragraphs("en", 3, "ensecond")
    assert english[0]["original_nlines"] == 5 and english[0]["nlines"] == 3
    assert english[0]["language"] == "en" and english[0]["language_score"] > 0.5
    assert english[0]["bucket"] == "all" and english[0]["perplexity"] is None
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == [
        f"{language}/all/part-00000.parquet" for language in ("de", "en", "es", "fr", "is")
    ]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["documents"] == 5
    assert manifest["languages"]["en"]["all"] == {
        "documents": 1,
        "characters": len(english[0]["raw_content"]),
        "files": 1,
    }
    assert manifest["config"]["lid"]["languages"] == ["en", "fr", "de", "es", "is"]
    assert manifest["config"]["dedup"] == {
        "mode": "ccnet",
        "hash_partitions": None,  # chosen from the input: 1 for these few lines
        "memory_per_worker": 2 * 1024**3,
        "min_len": 200,
    }
    assert stats["hash_partitions"] == 1 and manifest["config"]["target_shard_size"] == 512 * 1024**2
    assert stats["output"]["is"]["all"]["documents"] == 1
    quarantined = [
        json.loads(line)
        for f in sorted((out / "quarantine/bad-input").iterdir())
        for line in f.read_text().splitlines()
    ]
    assert sorted(q["kind"] for q in quarantined) == ["empty_record", "invalid_utf8"]


def test_a_line_repeated_only_inside_one_page_keeps_its_first_copy(tmp_path):
    repeated = "Subscribe to our newsletter for the weekly village library programme."
    lines = paragraphs("en", 4, "pagerepeat").split("\n")
    text = "\n".join([lines[0], repeated, lines[1], repeated, lines[2], repeated, lines[3]])
    write_wet_file(tmp_path / "wet" / "a.warc.wet.gz", [page(0, text), page(1, paragraphs("en", 4, "otherpage"))])
    out = tmp_path / "corpus"
    stats = mine(tmp_path / "wet", out, "--langs", "en", "--min-len", "50")
    (first, _) = rows(out / "en/all/part-00000.parquet")
    assert first["raw_content"] == "\n".join([lines[0], repeated, lines[1], lines[2], lines[3]])
    assert first["line_ids"] == [0, 1, 2, 4, 6] and first["original_nlines"] == 7
    assert stats["lines_removed_by_dedup"] == 2


def decimals(score: float) -> int:
    """Decimals of a stored float32 score, written shortest."""
    return len(str(np.float32(score)).partition(".")[2])


def test_lid_scores_are_rounded_to_two_decimals_as_ccnet(handmade, tmp_path):
    out = tmp_path / "corpus"
    mine(handmade, out, "--langs", "en,fr,de,es,is", "--min-len", "200")
    scores = duckdb.sql(f"select language_score from '{out}/*/*/*.parquet'").fetchall()
    assert scores and all(decimals(score) <= 2 for (score,) in scores)


def test_the_projects_own_modes_run_and_are_recorded(handmade, lm_dir, tmp_path):
    out = tmp_path / "corpus"
    stats = mine(
        handmade,
        out,
        "--langs",
        "en,fr,de,es,is",
        "--min-len",
        "200",
        "--dedup",
        "strict",
        "--lid-mode",
        "spaced",
        "--perplexity",
        "lines",
        "--lm-dir",
        str(lm_dir),
    )
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert (config["dedup"]["mode"], config["lid"]["mode"], config["perplexity"]) == ("strict", "spaced", "lines")
    scores = duckdb.sql(f"select language_score from '{out}/*/*/*.parquet'").fetchall()
    assert any(decimals(score) > 2 for (score,) in scores)  # not rounded, unlike --lid-mode ccnet
    assert stats["lines_removed_by_dedup"] >= 5 * 2 + 2 * 3


def test_keep_first_keeps_one_copy(handmade, tmp_path):
    out = tmp_path / "corpus"
    stats = mine(
        handmade, out, "--langs", "en,fr,de,es,is", "--min-len", "200", "--dedup", "keep-first", "--keep-dropped"
    )
    english = [d["url"] for f in sorted((out / "en/all").iterdir()) for d in rows(f)]
    assert english == ["https://example0.org/page/0", "https://example1.org/page/4"]
    assert rows(out / "en/all/part-00000.parquet")[0]["nlines"] == 5  # first copy keeps its boilerplate
    assert stats["dropped"]["not_selected"] == 1
    dropped = rows(out / "quarantine/dropped/not_selected/part-00001.parquet")
    assert [d["language"] for d in dropped] == ["ru"]


def test_lid_model_with_script_labels(tmp_path):
    model = write_fasttext_model(
        tmp_path / "glot.bin",
        {
            "__label__hin_Latn": ["main", "ghar", "ja", "raha", "hoon", "aaj"],
            "__label__hin_Deva": ["मैं", "आज", "घर", "जा", "रहा", "हूँ"],
        },
    )
    write_wet_file(
        tmp_path / "wet" / "a.warc.wet.gz",
        [
            page(0, "\n".join(f"aaj ghar {'main ' * i}ja raha hoon" for i in range(1, 4))),
            page(1, "\n".join(f"मैं आज {'घर ' * i}जा रहा हूँ" for i in range(1, 4))),
        ],
    )
    out = tmp_path / "corpus"
    stats = mine(tmp_path / "wet", out, "--lid-model", str(model), "--langs", "hi_rom,hi", "--min-len", "10")
    assert stats["identified_languages"] == {"hi": 1, "hi_rom": 1}
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == [
        "hi/all/part-00000.parquet",
        "hi_rom/all/part-00000.parquet",
    ]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    generate_sample(str(root), SampleConfig(segments=2, docs_per_segment=200, sites=60, seed=3))
    return root


def _digests(root: Path):
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def test_generated_sample_runs_and_loads_in_datasets_and_duckdb(sample, tmp_path):
    out = tmp_path / "corpus"
    stats = mine(sample, out, "--langs", "en,de,fr,es,ru,zh,ar,hi,ja,vi,ur,is")
    manifest = json.loads((out / "manifest.json").read_text())
    assert stats["documents_read"] == 408  # 2 files of 200 pages and 4 feed copies each
    assert stats["bad_records"] == {"corrupt_gzip": 1, "empty_record": 1, "invalid_utf8": 1}
    assert stats["lines_removed_by_dedup"] > 0 and stats["dropped"]["too_short"] > 0
    assert stats["dropped"]["not_selected"] > 0  # it, pl, tr, nl pages
    assert len(manifest["languages"]) >= 10
    total = duckdb.sql(f"select count(*), sum(length) from '{out}/*/*/*.parquet'").fetchall()[0]
    assert total == (manifest["documents"], manifest["characters"])

    from datasets import load_dataset

    dataset = load_dataset(
        "parquet", data_files=str(out / "en/all/*.parquet"), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert len(dataset) == manifest["languages"]["en"]["all"]["documents"]
    assert set(dataset.column_names) >= {"url", "raw_content", "language", "perplexity", "bucket", "cc_segment"}


def test_reruns_are_byte_identical_across_runners(sample, lm_dir, tmp_path, capfd):
    mine(sample, tmp_path / "a", "--langs", "100", "--lm-dir", str(lm_dir))
    capfd.readouterr()
    mine(
        sample,
        tmp_path / "b",
        "--langs",
        "100",
        "--lm-dir",
        str(lm_dir),
        "--direct_num_workers=2",
        "--direct_running_mode=multi_processing",
    )
    worker_log = [line for line in capfd.readouterr().err.splitlines() if not line.startswith("mine: ")]
    # the worker processes get the job's options, its log level (ERROR) among them: no INFO flood
    assert not [line for line in worker_log if line.startswith("INFO:apache_beam")] and len(worker_log) <= 6
    a, b = _digests(tmp_path / "a"), _digests(tmp_path / "b")
    for digests in (a, b):  # these hold the pipeline options and output folder, which differ
        del digests["manifest.json"], digests["_work/run.json"]
    assert a == b and len(a) > 10 and "cutoffs.csv" in a


def test_sample_generator_is_deterministic(tmp_path):
    config = SampleConfig(segments=1, docs_per_segment=50, sites=5, seed=11)
    generate_sample(str(tmp_path / "a"), config)
    generate_sample(str(tmp_path / "b"), config)
    assert _digests(tmp_path / "a") == _digests(tmp_path / "b")


def test_sample_generator_does_not_depend_on_the_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    for seed in ("1", "2"):
        argv = [
            sys.executable,
            "-m",
            "ccnet_pipeline",
            "sample",
            "--output",
            str(tmp_path / seed),
            "--segments",
            "1",
            "--docs-per-segment",
            "300",
            "--reference-lines",
            "10",
        ]
        subprocess.run(argv, check=True, env={**os.environ, "PYTHONHASHSEED": seed}, stdout=subprocess.DEVNULL)
    assert _digests(tmp_path / "1") == _digests(tmp_path / "2")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--lid-model", "/nonexistent/lid.bin"], "LID model file not found"),
        (["--langs", "en,xx"], "unknown language code(s) xx"),
        (["--input", "/nonexistent/*.warc.wet.gz"], "the input glob matches no file"),
        (["--output", "/etc/hostname/corpus"], "cannot write to output folder"),
    ],
)
def test_clear_errors(handmade, tmp_path, capsys, args, message):
    argv = ["mine", "--input", str(handmade / "*.warc.wet.gz"), "--output", str(tmp_path / "out")]
    for flag, value in zip(args[::2], args[1::2]):
        argv[argv.index(flag) + 1] = value if flag in argv else argv.extend([flag, value]) or value
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_corrupt_lid_model_is_a_clear_error(handmade, tmp_path, capsys):
    model = tmp_path / "lid.bin"
    model.write_bytes(b"garbage")
    assert (
        main(["mine", "--input", str(handmade / "*.gz"), "--output", str(tmp_path / "o"), "--lid-model", str(model)])
        == 2
    )
    assert "cannot load fastText LID model" in capsys.readouterr().err


def test_refuses_to_overwrite_without_flag(handmade, tmp_path, capsys):
    out = tmp_path / "corpus"
    mine(handmade, out, "--langs", "en")
    assert main(["mine", "--input", str(handmade / "*.gz"), "--output", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    mine(handmade, out, "--langs", "en", "--overwrite")


@pytest.mark.skipif(not (SHARED_DATA / "commoncrawl").is_dir(), reason="../shared/data/commoncrawl absent")
def test_real_commoncrawl_wet_end_to_end(tmp_path):
    out = tmp_path / "corpus"
    assert (
        main(
            [
                "mine",
                "--input",
                str(SHARED_DATA / "commoncrawl" / "CC-MAIN-2024-22-sample.warc.wet.gz"),
                "--output",
                str(out),
                "--langs",
                "100",
            ]
        )
        == 0
    )
    stats = json.loads((out / "stats.json").read_text())
    assert stats["documents_read"] == 1 and stats["bad_records"] == {}
    # An Aragonese Wikipedia page, which lid.176 (like CommonCrawl's own "spa") calls Spanish.
    assert stats["identified_languages"] == {"es": 1} and stats["dropped"] == {}
    # Its menu lines repeat inside the one page: dedup removes them there too.
    assert stats["lines_removed_by_dedup"] > 10
    (doc,) = rows(out / "es/all/part-00000.parquet")
    assert doc["url"] == "https://an.wikipedia.org/wiki/Escopete"
    assert doc["original_nlines"] - doc["nlines"] == stats["lines_removed_by_dedup"]


def test_perplexity_buckets_end_to_end(sample, lm_dir, tmp_path):
    out = tmp_path / "corpus"
    stats = mine(sample, out, "--langs", "en,de,fr,es,ru", "--lm-dir", str(lm_dir))
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["cutoffs"]) == {"en", "de", "fr"}  # the languages with a model and documents
    assert set(manifest["languages"]["en"]) == {"head", "middle", "tail"}
    assert set(manifest["languages"]["es"]) == {"all"}  # no model: perplexity null, bucket all
    cutoffs_csv = (out / "cutoffs.csv").read_text().splitlines()
    assert cutoffs_csv[0] == ",de,en,fr" and len(cutoffs_csv) == 101  # percentiles 0..99, as CCNet's
    docs = duckdb.sql(f"select url, language, bucket, perplexity from '{out}/*/*/*.parquet'").fetchall()
    for _, language, bucket, perplexity in docs:
        if language in ("en", "de", "fr"):
            head, tail = manifest["cutoffs"][language]["head"], manifest["cutoffs"][language]["tail"]
            assert bucket == ("head" if perplexity < head else "middle" if perplexity < tail else "tail")
        else:
            assert (bucket, perplexity) == ("all", None)
    spam = [bucket for url, language, bucket, _ in docs if "/shop/" in url and language in ("en", "de", "fr")]
    assert len(spam) >= 5 and spam.count("tail") / len(spam) >= 0.9  # junk lands in tail
    assert stats["counters"]["perplexity/scored"] == sum(1 for d in docs if d[1] in ("en", "de", "fr"))


def test_given_cutoffs_file(sample, lm_dir, tmp_path):
    cutoffs = tmp_path / "cutoff.csv"
    cutoffs.write_text(",en,xx\n" + "".join(f"{p},{1000 + p},{p}\n" for p in range(100)))  # CCNet's rows 0..99
    out = tmp_path / "corpus"
    mine(sample, out, "--langs", "en", "--lm-dir", str(lm_dir), "--cutoffs", str(cutoffs), "--keep-dropped")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cutoffs"] == {"en": {"head": 1030.0, "tail": 1060.0}}  # xx has no model
    assert (out / "cutoffs.csv").read_text().splitlines()[0] == ",en"
    perplexities = duckdb.sql(f"select bucket, max(perplexity) from '{out}/en/*/*.parquet' group by 1").fetchall()
    assert dict(perplexities)["head"] < 1030.0


def test_perplexity_errors_are_clear(handmade, lm_dir, tmp_path, capsys):
    def run(*extra):
        code = main(["mine", "--input", str(handmade / "*.gz"), "--output", str(tmp_path / "o"), *extra])
        return code, capsys.readouterr().err

    assert run("--lm-dir", str(tmp_path / "absent")) == (
        2,
        f"error: language model folder not found: {tmp_path / 'absent'}\n",
    )
    half = tmp_path / "half"
    half.mkdir()
    (half / "en.sp.model").write_bytes((lm_dir / "en.sp.model").read_bytes())
    assert "en lack(s) a .sp.model or .arpa.bin" in run("--lm-dir", str(half))[1]
    (half / "en.arpa.bin").write_bytes(b"corrupt")
    assert "cannot load KenLM model" in run("--lm-dir", str(half))[1]
    assert "cutoffs_file needs lm_dir" in run("--cutoffs", str(half / "x.csv"))[1]  # the field, not the flag
    bad = tmp_path / "bad.csv"
    bad.write_text("nonsense\n")
    code, err = run("--lm-dir", str(lm_dir), "--cutoffs", str(bad))
    assert code == 2 and "not a CCNet cutoff CSV" in err and "Traceback" not in err


@pytest.mark.skipif(not (SHARED_DATA / "reference-text").is_dir(), reason="../shared/data/reference-text absent")
def test_reference_models_from_real_text(tmp_path):
    """Train on real sentences (Tatoeba) in three languages; held-out lines must score lower
    than their own words shuffled in at least 95% of pairs."""
    import random

    from filters.perplexity import LanguageModel
    from filters.train_lm import TrainLmConfig, train_language_model

    rng = random.Random(0)
    for language in ("en", "de", "ru"):
        lines = (SHARED_DATA / "reference-text" / f"{language}.txt").read_text(encoding="utf-8").splitlines()
        rng.shuffle(lines)  # the file is not shuffled: hold out a random 500
        train, held_out = lines[500:], lines[:500]
        (tmp_path / f"{language}.txt").write_text("\n".join(train), encoding="utf-8")
        train_language_model(TrainLmConfig(language, (str(tmp_path / f"{language}.txt"),), str(tmp_path / "lm")))
        model = LanguageModel(str(tmp_path / "lm"), language)
        wins = pairs = 0
        for line in held_out:
            words = line.split()
            shuffled = words[:]
            rng.shuffle(shuffled)
            if len(words) < 4 or shuffled == words:
                continue
            pairs += 1
            wins += model.perplexity(line) < model.perplexity(" ".join(shuffled))
        assert pairs > 300 and wins / pairs >= 0.95, (language, wins, pairs)


def test_beam_metrics_equal_stats_json_and_the_launcher_reports_progress(sample, lm_dir, tmp_path, capsys):
    """Counted in one place: the job's Beam counters are exactly the counters of stats.json."""
    from ccnet_pipeline.config import MineConfig
    from ccnet_pipeline.pipeline import execute, job_counters, list_segments
    from filters.dedup import DedupConfig
    from lid.model import LidConfig
    from toolkit.languages import parse_languages

    out = tmp_path / "corpus"
    config = MineConfig(
        input=(str(sample / "*.warc.wet.gz"),),
        output=str(out),
        lid=LidConfig(languages=parse_languages("en,de,fr,es,ru")),
        dedup=DedupConfig(),
        lm_dir=str(lm_dir),
        keep_dropped=True,
    )
    segments = list_segments(config.input)
    result = execute(config, segments, [], progress_seconds=3600)  # no report on the way: only the last
    reports = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mine: ")]
    n = len(segments)
    assert len(reports) == 1 and re.fullmatch(
        rf"mine: hashing {n}/{n} files, [\d.]+ [kM]?B of [\d.]+ [kM]?B \([\d.]+ [kM]B/s\), [\d,]+ documents \([\d,]+/s\); "
        rf"filtering {n}/{n} files, .*; {n}/{n} segments committed \(\d+s\)",
        reports[0],
    ), reports
    stats = json.loads((out / "stats.json").read_text())
    counters = job_counters(result)
    assert counters == stats["counters"]
    assert (
        counters["lid/dropped/not_selected"] > 0
        and counters["dedup/dropped/too_short"] > 0
        and counters["output/files"] > 3
    )
    progress = job_counters(result, "progress")  # the stages' live counters, named after them
    assert progress["lid/dropped/not_selected"] == counters["lid/dropped/not_selected"]
    assert progress["lid/kept"] == sum(v for k, v in counters.items() if k.startswith("output/documents/"))


def test_more_hash_partitions_change_nothing_but_their_count(handmade, tmp_path):
    one = mine(handmade, tmp_path / "one", "--langs", "en,fr,de,es,is", "--min-len", "200")
    # 80 bytes per line: a partition per 10 of the input's lines
    many = mine(
        handmade, tmp_path / "many", "--langs", "en,fr,de,es,is", "--min-len", "200", "--dedup-memory-per-worker", "800"
    )
    assert (one["hash_partitions"], many["hash_partitions"]) == (1, 4)  # 35 lines
    for stats in (one, many):
        del stats["hash_partitions"], stats["counters"]["dedup/hash_partitions"]
    assert many == one
    files = lambda out: {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.parquet")}
    assert files(tmp_path / "many") == files(tmp_path / "one")
