"""make bench-stages: where the mine job's CPU per page goes, stage by stage, on the FnApiRunner.

On bench_wet's pages (20,000 by default) and bench-datatrove's 16 SentencePiece + KenLM pairs,
for each LID mode (ccnet, and `make corpus`'s default: spaced, the shipped thresholds with CLD3,
mixed pages split), one worker, ``--lm-dir`` set:
  - the job's CPU seconds, from a run of its own (user + sys of the process, imports included);
  - where they go, from another run under py-spy (``--nonblocking``, 100 samples/s, active
    threads only): each sample goes to the stage of its innermost frame that names one
    (``STAGES``), else to the Beam runner's work around the stages, or, outside bundle
    processing, to the job's start and end (imports, checks, graph, stats);
  - the raw libraries alone on the same pages, the mode's CPU over theirs: bench-datatrove's
    loop (warcio read, fastText on each page, SentencePiece + KenLM on each normalized page),
    its fastText calls made as the spaced mode makes them for that mode (``spaced_lid``).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from typing import Dict, Iterable, List, Tuple

import fasttext
import gcld3

from bench.common import bench_wet, reference_models
from bench.pipeline import read_with_warcio
from bench.vs_datatrove import LANGUAGES, raw_libraries
from lid.cld3_zawgyi import CONSULTED_BELOW, MAX_BYTES
from lid.mixed import MIN_LINE_CHARS, WHOLE
from lid.model import default_model_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THRESHOLDS = os.path.join(ROOT, "lid", "thresholds", "lid.176.csv")
MODES = {
    "ccnet": ["--lid-mode", "ccnet"],
    "spaced": ["--lid-mode", "spaced", "--lang-thresholds", THRESHOLDS, "--mixed-pages", "split"],
}
# (stage, pattern of a frame "function (path:line)"); a sample goes to the stage of its innermost
# frame that matches one. filters/normalize.py is in none: its callers say what it works for.
STAGES: List[Tuple[str, str]] = [
    ("read WET (both passes)", r"\(ccnet_pipeline/(wet/|steps/read\.py)"),
    ("line dedup: hash and filter", r"\(filters/dedup\.py|\(ccnet_pipeline/steps/dedup\.py"),
    ("LID: fastText", r"^predict \(fasttext/"),
    ("LID: CLD3, Zawgyi", r"\(lid/cld3_zawgyi\.py|gcld3"),
    ("LID: mixed pages split", r"\(lid/mixed\.py"),
    ("LID: rules, neighbours, glue", r"\(lid/"),
    ("perplexity: SentencePiece + KenLM", r"\(filters/perplexity\.py|\(sentencepiece/|kenlm"),
    ("quality signals", r"\(filters/quality\.py"),
    ("write Parquet, commit", r"\(ccnet_pipeline/(steps/write|steps/commit|shards)\.py|\(pyarrow/"),
]
RUNNER = "Beam runner and stage glue"
OUTSIDE = "start and end: imports, checks, graph, stats"
PROCESSING = re.compile(r"\(apache_beam/runners/worker/bundle_processor\.py")


def stage_of(frames: List[str]) -> str:
    """The stage a sampled stack (outermost frame first) spent its time in."""
    for frame in reversed(frames):
        for stage, pattern in STAGES:
            if re.search(pattern, frame):
                return stage
    return RUNNER if any(PROCESSING.search(frame) for frame in frames) else OUTSIDE


def stage_shares(collapsed: Iterable[str]) -> Dict[str, float]:
    """Each stage's share of the samples of py-spy's raw (collapsed) output."""
    counts: Dict[str, int] = collections.Counter()
    for line in collapsed:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack:
            counts[stage_of(stack.split(";"))] += int(count)
    total = sum(counts.values())
    return {stage: count / total for stage, count in counts.items()}


def spaced_lid(pages: List[Tuple[str, str]]) -> float:
    """Seconds of the library calls the spaced mode makes, in a plain loop over the pages: fastText's
    top two labels of each page (newlines as spaces), CLD3 where the top one scores under
    ``CONSULTED_BELOW``, and fastText on each line of ``MIN_LINE_CHARS`` or more where it scores
    under ``WHOLE`` (mixed pages, read line by line). Not the parts of split pages."""
    start = time.perf_counter()
    model = fasttext.load_model(default_model_path())
    cld3 = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=MAX_BYTES)
    for _, text in pages:
        spaced = text.replace("\n", " ").strip()
        _, scores = model.predict(spaced, k=2)
        if scores[0] < CONSULTED_BELOW:
            cld3.FindLanguage(text=spaced)
        if scores[0] < WHOLE:
            lines = [line for line in map(str.strip, text.split("\n")) if len(line) >= MIN_LINE_CHARS]
            if lines:
                model.predict(lines, k=2)
    return time.perf_counter() - start


def mine_command(wet: str, output: str, lm_dir: str, mode: str) -> List[str]:
    command = [sys.executable, "-m", "ccnet_pipeline", "mine", "--input", os.path.join(wet, "*.warc.wet.gz")]
    command += ["--output", output, "--langs", ",".join(LANGUAGES), "--lm-dir", lm_dir, *MODES[mode]]
    return [*command, "--direct_num_workers=1"]


def cpu_seconds(command: List[str], output: str) -> float:
    """User + sys seconds of ``command`` and its children, run to the end."""
    shutil.rmtree(output, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def profile(command: List[str], output: str, samples: str) -> Dict[str, float]:
    shutil.rmtree(output, ignore_errors=True)
    py_spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("py-spy is missing: make bench-stages installs it")
    record = [py_spy, "record", "--nonblocking", "--rate", "100", "--format", "raw", "--output", samples, "--"]
    subprocess.run([*record, *command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    with open(samples, encoding="utf-8") as lines:
        return stage_shares(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=20000)
    parser.add_argument("--segments", type=int, default=8)
    parser.add_argument("--workdir", default="out/bench-stages")
    args = parser.parse_args(argv)
    workdir = os.path.abspath(args.workdir)
    wet = os.path.join(workdir, "wet")
    paths = bench_wet(wet, args.documents, args.segments)
    lm_dir = os.path.join(workdir, "lm")
    reference_models(lm_dir, LANGUAGES, os.path.join(workdir, "reference"))
    pages = args.documents

    raw = raw_libraries(paths, lm_dir, LANGUAGES)
    raw_spaced = {**raw, "fastText predict": spaced_lid(read_with_warcio(paths))}
    raw_totals = {"ccnet": sum(raw.values()), "spaced": sum(raw_spaced.values())}
    print(f"{pages} pages; raw libraries: " + ", ".join(f"{name} {s:.2f} s" for name, s in raw.items()))
    print(f"the spaced mode's fastText and CLD3 calls, alone: {raw_spaced['fastText predict']:.2f} s")
    for mode in MODES:
        output = os.path.join(workdir, f"corpus-{mode}")
        command = mine_command(wet, output, lm_dir, mode)
        started = time.perf_counter()
        cpu = cpu_seconds(command, output)
        wall = time.perf_counter() - started
        shares = profile(command, output, os.path.join(workdir, f"samples-{mode}.txt"))
        print(f"\n{mode} mode: {cpu:.2f} CPU-s ({wall:.2f} s wall), {1e3 * cpu / pages:.2f} ms per page")
        print(f"{'stage':46s} {'CPU-s':>7s} {'ms/page':>8s} {'share':>6s}")
        for stage in [name for name, _ in STAGES] + [RUNNER, OUTSIDE]:
            share = shares.get(stage, 0.0)
            print(f"{stage:46s} {share * cpu:7.2f} {1e3 * share * cpu / pages:8.3f} {100 * share:5.1f}%")
        print(f"{mode} mode / raw libraries ({raw_totals[mode]:.2f} s): {cpu / raw_totals[mode]:.2f} (target <= 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
