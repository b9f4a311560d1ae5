"""make bench-datatrove: the mine job against datatrove 0.10.1, side by side in one run.

On the same generated WET input (>= 20,000 pages of 2-5 KB in 16 languages, zh, hi and ar among
them, with boilerplate and duplicates) and the same models (lid.176.ftz, and per language a
SentencePiece + KenLM pair trained once from generated reference text):
  - datatrove: WarcReader -> LanguageFilter -> CCNet perplexity -> Parquet, no dedup
    (bench/datatrove_job.py, in its own venv .venv-bench);
  - datatrove + MinHash: the same, then datatrove's own four MinHash steps (5-grams, 14 x 8);
  - this project's mine job (global line dedup, quality signals, language ID, perplexity, buckets);
  - mine + near-dedup: the same with ``--near-dedup minhash`` (5-grams, 14 x 8, per language);
each with 1 and 2 workers, the four taking turns, ``--rounds`` times (``--no-minhash``: the first
and third only); every time is the wall clock of a fresh process, imports included. Then the raw
libraries alone on the same pages, in this process: warcio read, fastText predict, SentencePiece
encode + KenLM score of the normalized page. Prints documents/s per core and MB/s of every run and
the documents each wrote, the ratios per worker count (best runs), near-dedup's slowdown of the
mine job, and mine's time over the raw libraries'.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import time

import fasttext
import kenlm
import pyarrow.parquet as pq
import sentencepiece

from bench.common import bench_wet, input_arguments, reference_models
from bench.pipeline import read_with_warcio
from ccnet_pipeline.samples.embedded import LANGUAGE_MIX
from filters.normalize import normalize_for_lm
from filters.perplexity import model_paths
from lid.model import default_model_path
from toolkit.corpus import CorpusManifest

LANGUAGES = tuple(code for code, *_ in LANGUAGE_MIX)  # the generated sample's 16
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_PYTHON = os.path.join(ROOT, ".venv-bench", "bin", "python")


def timed_process(command, output: str) -> float:
    shutil.rmtree(output, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def written(output: str) -> int:
    """Documents a run wrote: the mine job's manifest, or the rows of datatrove's Parquet files."""
    if os.path.exists(os.path.join(output, "manifest.json")):
        return sum(entry.documents for entry in CorpusManifest.read(output).files)
    return sum(pq.ParquetFile(path).metadata.num_rows for path in glob.glob(os.path.join(output, "data", "*")))


def raw_libraries(paths, lm_dir: str, languages) -> dict:
    """Seconds of each raw library alone on the pages: read, predict, encode + score."""
    start = time.perf_counter()
    pages = read_with_warcio(paths)
    seconds = {"warcio read": time.perf_counter() - start}
    start = time.perf_counter()
    model = fasttext.load_model(default_model_path())
    labels = [model.predict(text.replace("\n", ""), k=1)[0][0][len("__label__") :] for _, text in pages]
    seconds["fastText predict"] = time.perf_counter() - start
    models = {}
    for lang in languages:
        sp_path, lm_path = model_paths(lm_dir, lang)
        models[lang] = (sentencepiece.SentencePieceProcessor(model_file=sp_path), kenlm.Model(lm_path))
    normalized = [(label, normalize_for_lm(text)) for label, (_, text) in zip(labels, pages) if label in models]
    start = time.perf_counter()
    for label, text in normalized:
        sp, lm = models[label]
        lm.score(" ".join(sp.encode(text, out_type=str)))
    seconds["SentencePiece + KenLM"] = time.perf_counter() - start
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    input_arguments(parser, "out/bench-datatrove")
    parser.add_argument("--no-minhash", dest="minhash", action="store_false", help="no near-dedup runs")
    args = parser.parse_args(argv)
    if not os.path.exists(BENCH_PYTHON):
        raise SystemExit(f"{BENCH_PYTHON} is missing: make bench-datatrove installs datatrove there")
    workdir = os.path.abspath(args.workdir)
    wet = os.path.join(workdir, "wet")
    paths = bench_wet(wet, args.documents, args.segments)
    lm_dir = os.path.join(workdir, "lm")
    reference_models(lm_dir, LANGUAGES, os.path.join(workdir, "reference"))
    langs = ",".join(LANGUAGES)
    pages = read_with_warcio(paths)
    documents, megabytes = len(pages), sum(len(text.encode("utf-8")) for _, text in pages) / 1e6
    print(f"input: {len(paths)} WET files, {documents} pages, {megabytes:.1f} MB of text, languages {langs}")

    def datatrove(workers, near_dedup):
        output = os.path.join(workdir, f"datatrove-{workers}{'-minhash' if near_dedup else ''}")
        command = [BENCH_PYTHON, os.path.join(ROOT, "bench", "datatrove_job.py"), "--input", wet, "--output", output]
        command += ["--lid-model", default_model_path(), "--lm-dir", lm_dir, "--langs", langs]
        command += ["--workers", str(workers)] + (["--minhash"] if near_dedup else [])
        return timed_process(command, output), output

    def mine(workers, near_dedup):
        output = os.path.join(workdir, f"mine-{workers}{'-minhash' if near_dedup else ''}")
        command = [sys.executable, "-m", "ccnet_pipeline", "mine", "--input", os.path.join(wet, "*.warc.wet.gz")]
        command += ["--output", output, "--langs", langs, "--lm-dir", lm_dir, f"--direct_num_workers={workers}"]
        command += ["--near-dedup", "minhash" if near_dedup else "off"]
        if workers > 1:
            command.append("--direct_running_mode=multi_processing")
        return timed_process(command, output), output

    runs = [("datatrove", datatrove, False), ("datatrove + MinHash", datatrove, True)]
    runs += [("mine", mine, False), ("mine + near-dedup", mine, True)]
    runs = [run for run in runs if args.minhash or not run[2]]
    best = {}
    print(f"\n{'run':40s} {'seconds':>8s} {'docs/s/core':>12s} {'MB/s':>7s} {'written':>8s}")
    for round_number in range(1, args.rounds + 1):
        for workers in (1, 2):
            for name, run, near_dedup in runs:
                seconds, output = run(workers, near_dedup)
                best[name, workers] = min(best.get((name, workers), float("inf")), seconds)
                label = f"{name}, {workers} worker{'s' if workers > 1 else ''}, round {round_number}"
                rate = documents / seconds / workers
                print(f"{label:40s} {seconds:8.2f} {rate:12.0f} {megabytes / seconds:7.2f} {written(output):8d}")
    print()
    pairs = [("mine", "datatrove", "no near-dedup")]
    if args.minhash:
        pairs.append(("mine + near-dedup", "datatrove + MinHash", "both with MinHash"))
    for workers in (1, 2):
        for ours, theirs, what in pairs:
            ratio = best[theirs, workers] / best[ours, workers]
            print(f"mine / datatrove documents/s per core, {what}, {workers} worker(s), best runs: {ratio:.2f}x")
        if args.minhash:
            slowdown = best["mine + near-dedup", workers] / best["mine", workers]
            print(f"mine's slowdown from near-dedup, {workers} worker(s), best runs: {slowdown:.2f}x (target <= 1.25)")
    print("(targets: mine / datatrove >= 2.0 per core)")
    raw = raw_libraries(paths, lm_dir, LANGUAGES)
    for name, seconds in raw.items():
        print(f"{name + ' (alone)':28s} {seconds:8.2f} {documents / seconds:12.0f}")
    total = sum(raw.values())
    print(f"mine (1 worker, best) / raw libraries ({total:.2f} s): {best['mine', 1] / total:.2f} (target <= 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
