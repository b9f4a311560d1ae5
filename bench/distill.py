"""make bench-distill: what a distilled student costs and is worth against its teacher.

On the teacher ``make pretrain`` trained (--teacher, default out/run) and its packed blocks
(--data, default out/data):
  general distillation into a ``mini`` student (``python -m pretrain distill``, as many steps as
      the teacher's pretraining had), then task distillation on SIB-200 English
      (``distill-task``) from the teacher fine-tuned there (``finetune``);
  two references for the student's shape: the distilled student fine-tuned on the labels
      (general distillation only), and the same shape pretrained with MLM on the same blocks for
      as many steps, then fine-tuned (no distillation).
All four are scored on the same evaluation: SIB-200 English test accuracy, and the mean zero-shot
accuracy over the corpus languages SIB-200 has. Inference speed is the encoder's forward pass,
tokens/s on this CPU at the same batch and length for every model (median of --rounds, the models
taking turns), also for XLM-R base's shape against TinyBERT-4's (``small``, random weights, the
vocabulary of XLM-R), the pair the TinyBERT paper measures.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import time
from contextlib import redirect_stdout

import torch

from bench.common import take_turns
from pretrain.cli import main as pretrain
from pretrain.evaluate import classification_scores
from pretrain.finetune import FinetuneConfig, load_classifier
from pretrain.hub import load_model
from pretrain.model import XLMRModel, model_config
from pretrain.sib200 import COLUMNS, SOURCE, language_folders
from toolkit import storage
from toolkit.corpus import CorpusManifest

XLMR_VOCAB = 250_002


def quietly(argv) -> None:
    """``python -m pretrain ARGV`` in this process, its log kept out of the bench's output."""
    log = io.StringIO()
    with redirect_stdout(log):
        code = pretrain(argv)
    if code:
        sys.stdout.write(log.getvalue())
        raise SystemExit(f"python -m pretrain {' '.join(argv)} failed ({code})")


def tokens_per_second(models, batch: int, length: int, rounds: int):
    """Encoder forward passes on the same random ids (no padding), the models taking turns."""
    ids = torch.randint(5, 1000, (batch, length), generator=torch.Generator().manual_seed(0))
    calls = []
    for model in models:
        model.eval()
        calls.append(lambda model=model: model.features(ids))
    with torch.no_grad():
        take_turns(calls, 1)  # warm-up
        times = take_turns(calls, rounds)
    return [batch * length / statistics.median(seconds) for seconds in times]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", default="out/run", help="a pretraining run (make pretrain)")
    parser.add_argument("--data", default="out/data", help="its packed blocks")
    parser.add_argument("--corpus", default="out/corpus", help="the corpus: its languages are the zero-shot ones")
    parser.add_argument("--sib-dir", default="../shared/data/eval/sib-200", help="SIB-200's data/annotated")
    parser.add_argument("--student", default="mini", help="the student's model preset")
    parser.add_argument("--out", default="out/bench-distill")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    for path, what in ((args.teacher, "make pretrain"), (args.corpus, "make corpus")):
        if not os.path.exists(path):
            raise SystemExit(f"no {path}: run {what} first")
    if not os.path.isfile(os.path.join(args.sib_dir, SOURCE, "train.tsv")):
        raise SystemExit(
            f"no SIB-200 in {args.sib_dir}: git clone https://github.com/dadelani/sib-200 and pass --sib-dir"
        )
    shutil.rmtree(args.out, ignore_errors=True)
    out = lambda name: os.path.join(args.out, name)
    steps = storage.read_json(os.path.join(args.teacher, "config.json"))["train"]["total_steps"]
    schedule = ["--max-steps", str(steps), "--total-steps", str(steps), "--eval-interval", "0"]
    source = os.path.join(args.sib_dir, SOURCE)
    task = ["--train", f"{source}/train.tsv", "--dev", f"{source}/dev.tsv", "--label-column", COLUMNS["label_column"]]

    started = time.perf_counter()
    timings = {}
    for name, argv in (
        ("distill", ["distill", "--teacher", args.teacher, "--student-config", args.student, "--data", args.data,
                     "--out", out("student"), *schedule]),
        ("teacher fine-tuning", ["finetune", "--init", args.teacher, *task, "--out", out("teacher-ft")]),
        ("distill-task", ["distill-task", "--teacher", out("teacher-ft"), "--student", out("student"), *task,
                          "--out", out("student-task")]),
        ("student fine-tuning", ["finetune", "--init", out("student"), *task, "--out", out("student-ft")]),
        ("MLM pretraining", ["train", "--model", args.student, "--data", args.data, "--out", out("mlm"), *schedule]),
        ("MLM fine-tuning", ["finetune", "--init", out("mlm"), *task, "--out", out("mlm-ft")]),
    ):  # fmt: skip
        begin = time.perf_counter()
        quietly(argv)
        timings[name] = time.perf_counter() - begin

    languages = list(CorpusManifest.read(args.corpus).languages)
    folders, _ = language_folders(args.sib_dir, languages)
    tests = {language: os.path.join(args.sib_dir, folder, "test.tsv") for language, folder in folders.items()}
    config = FinetuneConfig(**COLUMNS)
    rows = [
        ("teacher, fine-tuned", "teacher-ft"),
        ("student: general + task distillation", "student-task"),
        ("student: general distillation, fine-tuned", "student-ft"),
        ("student's shape, MLM-pretrained, fine-tuned", "mlm-ft"),
    ]
    scores = {}
    for _, folder in rows:
        scored = {
            name: score
            for name, score, _ in classification_scores(load_classifier(out(folder)), out(folder), tests, config)
        }
        zero_shot = [score for name, score in scored.items() if name != "en"]
        scores[folder] = (scored["en"], sum(zero_shot) / len(zero_shot))

    teacher, _ = load_model(args.teacher)
    student, _ = load_model(out("student"))
    fast = tokens_per_second([teacher, student], args.batch, args.length, args.rounds)
    torch.manual_seed(0)
    base = XLMRModel(model_config("base", XLMR_VOCAB))
    small = XLMRModel(model_config("small", XLMR_VOCAB))
    paper = tokens_per_second([base, small], args.batch, args.length, args.rounds)

    print(
        f"inference: encoder forward, batch {args.batch} x {args.length} tokens, {torch.get_num_threads()} threads, median of {args.rounds}"
    )
    print(
        "| model | layers x hidden (heads) | parameters | without embeddings | tokens/s | SIB-200 en | zero-shot mean |"
    )
    print("|---|---|---|---|---|---|---|")
    for (label, folder), model, speed in zip(rows, [teacher, student, student, student], [fast[0], *[fast[1]] * 3]):
        c = model.config
        en, zero_shot = scores[folder]
        print(f"| {label} | {c.layers} x {c.hidden} ({c.heads}) | {model.num_parameters():,} | {model.num_parameters(True):,} "
              f"| {speed:,.0f} | {en:.3f} | {zero_shot:.3f} |")  # fmt: skip
    for label, model, speed in (
        ("XLM-R base's shape, random", base, paper[0]),
        ("TinyBERT-4's shape (small), random", small, paper[1]),
    ):
        c = model.config
        print(f"| {label} | {c.layers} x {c.hidden} ({c.heads}) | {model.num_parameters():,} | {model.num_parameters(True):,} | {speed:,.0f} | | |")  # fmt: skip
    teacher_en, teacher_zero = scores["teacher-ft"]
    student_en, student_zero = scores["student-task"]
    print(
        f"student / teacher: {teacher.num_parameters() / student.num_parameters():.1f}x fewer parameters "
        f"({teacher.num_parameters(True) / student.num_parameters(True):.1f}x without embeddings), {fast[1] / fast[0]:.1f}x faster; "
        f"SIB-200 en {100 * (student_en - teacher_en):+.1f} points, zero-shot mean {100 * (student_zero - teacher_zero):+.1f} points"
    )
    print(
        f"TinyBERT-4's shape / XLM-R base's: {base.num_parameters() / small.num_parameters():.1f}x fewer parameters "
        f"({base.num_parameters(True) / small.num_parameters(True):.1f}x without embeddings), {paper[1] / paper[0]:.1f}x faster"
    )
    print(f"zero-shot languages: {', '.join(sorted(set(tests) - {'en'}))}")
    print(
        "seconds: "
        + ", ".join(f"{name} {seconds:.0f}" for name, seconds in timings.items())
        + f"; total {time.perf_counter() - started:.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
