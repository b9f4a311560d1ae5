"""Fine-tuning an encoder with a classification head: sentence (``classify``) or sentence-pair
(``pair``, encoded ``<s> a </s></s> b </s>``) classification from TSV or JSONL files.

AdamW with linear warm-up and linear decay, dropout as the model's, optional frozen embeddings
and lowest layers, fp32 / fp16 / bf16 as in pretraining, dev accuracy after every epoch with early
stopping, and the pretraining checkpoints (``checkpoint.py``): the batch of every step is a
function of the seed and the step alone, so ``--resume`` continues a run exactly. The best dev
model is exported as ``XLMRobertaForSequenceClassification`` (``OUT/hf``).
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from pretrain import checkpoint
from pretrain.dist import Dist, setup, teardown
from pretrain.export import HF_HEAD_NAME, export_hf
from pretrain.hub import load_run
from pretrain.model import PAD, XLMRModel, load_weights
from pretrain.train import CONFIG_FILE, PRECISIONS, MetricsLog, autocast, make_optimizer
from tokenizer.xlmr import EOS, XLMRTokenizer
from toolkit import storage
from toolkit.cli import build_config, flag

TASKS = ("classify", "pair")
HEAD = HF_HEAD_NAME  # the head's name here and in an exported or imported HF classifier
FIELDS = ["step", "split", "language", "epoch", "loss", "accuracy", "lr"]  # metrics.csv; language: the test file
BEST_DIR, HF_DIR, RESULTS_FILE = "best", "hf", "results.json"


@dataclass(frozen=True)
class FinetuneConfig:
    task: str = field(
        default="classify", metadata=flag(choices=TASKS)
    )  # classify: a text column; pair: text_a and text_b
    text_column: str = "text"  # the text of a classify row (SIB-200: text)
    label_column: str = "label"  # the label of a row (SIB-200: category)
    batch_size: int = 16
    lr: float = 2e-5  # peak learning rate, after warm-up
    warmup_ratio: float = 0.1  # share of the steps spent warming up linearly from 0
    epochs: int = 3
    max_steps: int = 0  # stop after this step (to resume later); 0 = every epoch
    weight_decay: float = 0.01  # AdamW, on matrices and embeddings only
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-6
    clip_norm: float = 1.0  # max global gradient norm; 0 = no clipping
    precision: str = field(default="fp32", metadata=flag(choices=tuple(PRECISIONS)))  # fp32 | fp16 | bf16
    freeze_embeddings: bool = False  # token and position embeddings stay as they are
    freeze_layers: int = 0  # the lowest N transformer layers stay as they are
    patience: int = 0  # stop after this many epochs without a better dev accuracy; 0 = run every epoch
    max_length: int = 256  # tokens of an example, <s> and </s> included (longer ones are cut)
    seed: int = 0
    keep_checkpoints: int = 2

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {self.task!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        for name in ("batch_size", "epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("max_steps", "freeze_layers", "patience", "lr", "clip_norm", "weight_decay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.max_length < 8:
            raise ValueError(f"max_length must be >= 8, got {self.max_length}")


FINETUNE_PRESETS = {
    "tiny": dict(lr=1e-3, batch_size=16, epochs=10),  # the tiny encoder on the CPU
    "base": dict(lr=2e-5, batch_size=32, epochs=3),  # XLM-R base, as its paper fine-tunes
    "large": dict(lr=1e-5, batch_size=16, epochs=3),
}


def finetune_config(preset: str, *layers: Mapping) -> FinetuneConfig:
    if preset not in FINETUNE_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(FINETUNE_PRESETS)}")
    return build_config(FinetuneConfig, FINETUNE_PRESETS[preset], *layers)


class Example(NamedTuple):
    texts: Tuple[str, ...]  # one text, or the pair
    label: str


def read_examples(path: str, config: FinetuneConfig) -> List[Example]:
    """The rows of a TSV (with a header) or JSONL file (``.jsonl``/``.json``): the text column(s)
    and the label. A malformed row or an empty file is an error naming the file and line."""
    columns = (config.text_column,) if config.task == "classify" else ("text_a", "text_b")
    wanted = (*columns, config.label_column)
    examples = []
    for number, row in _rows(path):
        missing = [column for column in wanted if not isinstance(row.get(column), str) or not row[column].strip()]
        if missing:
            raise ValueError(
                f"{path}, line {number}: no {', '.join(missing)} (a {config.task} row needs {', '.join(wanted)})"
            )
        examples.append(Example(tuple(row[column] for column in columns), row[config.label_column].strip()))
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples


def _rows(path: str):
    with open(path, encoding="utf-8", newline="") as handle:
        if path.endswith((".jsonl", ".json")):
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}, line {number}: not JSON ({error.msg})") from None
                if not isinstance(row, dict):
                    raise ValueError(f"{path}, line {number}: a JSON object per line, got {type(row).__name__}")
                yield (
                    number,
                    {key: str(value) if isinstance(value, (int, float)) else value for key, value in row.items()},
                )
            return
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        for row in reader:
            if None in row or None in row.values():  # more or fewer cells than the header
                cells = sum(value is not None for key, value in row.items() if key is not None) + len(
                    row.get(None) or ()
                )
                raise ValueError(
                    f"{path}, line {reader.line_num}: {cells} columns, the header has {len(reader.fieldnames or ())}"
                )
            yield reader.line_num, row


def label_set(train: Sequence[Example], others: Mapping[str, Sequence[Example]]) -> List[str]:
    """The training labels, sorted; another file's label that training never saw is an error."""
    labels = sorted({example.label for example in train})
    for path, examples in others.items():
        check_labels(path, examples, labels, "labels not in the training set")
    return labels


def check_labels(path: str, examples: Sequence[Example], labels: Sequence[str], problem: str) -> None:
    """An error naming ``path``'s labels outside ``labels``."""
    unknown = sorted({example.label for example in examples} - set(labels))
    if unknown:
        raise ValueError(f"{path}: {problem}: {', '.join(unknown)} (known: {', '.join(labels)})")


def encode(tokenizer: XLMRTokenizer, example: Example, max_length: int) -> List[int]:
    """``<s> a </s>`` or ``<s> a </s></s> b </s>``, the longer text cut first to ``max_length``."""
    pieces = [tokenizer.encode(text)[1:-1] for text in example.texts]
    budget = max_length - (2 if len(pieces) == 1 else 4)
    while sum(map(len, pieces)) > budget:
        longest = max(range(len(pieces)), key=lambda i: len(pieces[i]))
        pieces[longest] = pieces[longest][:-1]
    ids = [0, *pieces[0], EOS]
    for piece in pieces[1:]:
        ids += [EOS, *piece, EOS]
    return ids


def collate(rows: Sequence[List[int]]) -> torch.Tensor:
    return torch.nn.utils.rnn.pad_sequence([torch.tensor(r) for r in rows], batch_first=True, padding_value=PAD)


def learning_rate(step: int, total: int, config: FinetuneConfig) -> float:
    """Linear warm-up to ``lr`` over ``warmup_ratio`` of the steps, then linear decay to 0."""
    warmup = int(total * config.warmup_ratio)
    if warmup and step <= warmup:
        return config.lr * step / warmup
    return config.lr * max(0.0, (total - step) / max(total - warmup, 1))


def batch_indices(step: int, examples: int, config: FinetuneConfig) -> List[int]:
    """The examples of ``step`` (1-based): each epoch a permutation drawn from the seed and the epoch."""
    per_epoch = math.ceil(examples / config.batch_size)
    epoch, index = divmod(step - 1, per_epoch)
    order = torch.randperm(examples, generator=torch.Generator().manual_seed(config.seed * 100_003 + epoch))
    return order[index * config.batch_size : (index + 1) * config.batch_size].tolist()


def freeze(model: XLMRModel, config: FinetuneConfig) -> None:
    frozen = [model.embed_tokens, model.embed_positions, model.embed_norm] if config.freeze_embeddings else []
    frozen += list(model.layers[: config.freeze_layers])
    if config.freeze_layers > len(model.layers):
        raise ValueError(f"freeze_layers {config.freeze_layers}: the model has {len(model.layers)} layers")
    for module in frozen:
        module.requires_grad_(False)


@torch.no_grad()
def evaluate(
    model: XLMRModel, rows: Sequence[List[int]], targets: Sequence[int], config: FinetuneConfig, device
) -> Tuple[float, float]:
    """(mean loss, accuracy) of the head on ``rows`` against ``targets`` (class indices)."""
    was_training = model.training
    model.eval()
    loss_sum, predicted = 0.0, []
    for start in range(0, len(rows), config.batch_size):
        tokens = collate(rows[start : start + config.batch_size]).to(device)
        gold = torch.tensor(targets[start : start + config.batch_size], device=device)
        with autocast(device, config.precision):
            logits = model.classify(tokens, HEAD).float()
        loss_sum += F.cross_entropy(logits, gold, reduction="sum").item()
        predicted += logits.argmax(-1).tolist()
    model.train(was_training)
    correct = sum(p == t for p, t in zip(predicted, targets))
    return loss_sum / len(rows), correct / len(rows)


def finetune(
    config: FinetuneConfig,
    init: str,
    train_file: str,
    dev_file: str,
    test_files: Sequence[str],
    out: str,
    resume: bool = False,
    device: str = "auto",
) -> Dict:
    """Fine-tune (or resume) into ``out``; returns the results written to ``OUT/results.json``."""
    latest = checkpoint.latest(out)
    if latest and not resume:
        raise FileExistsError(f"{out} already holds checkpoints: pass --resume to continue it, or choose another --out")
    dist = setup(device)
    if dist.enabled:
        teardown()
        raise ValueError("fine-tuning runs in one process")
    try:
        return _finetune(config, init, train_file, dev_file, test_files, out, latest if resume else None, dist)
    finally:
        teardown()


def _finetune(config, init, train_file, dev_file, test_files, out, resume_from, dist: Dist) -> Dict:
    train_set, dev_set = read_examples(train_file, config), read_examples(dev_file, config)
    tests = {path: read_examples(path, config) for path in test_files}
    labels = label_set(train_set, {dev_file: dev_set, **tests})
    known = labels_of(init)
    if known is not None:  # continue a classifier: its label order, and no label it lacks
        if set(labels) - set(known):
            raise ValueError(
                f"{init} classifies {', '.join(known)}; the training set has {', '.join(sorted(set(labels) - set(known)))} besides"
            )
        labels = known
    model_cfg, state, sentencepiece_model = load_run(init)
    tokenizer = XLMRTokenizer(sentencepiece_model)
    encoded = lambda examples: [
        encode(tokenizer, example, min(config.max_length, model_cfg.max_tokens)) for example in examples
    ]
    targets = lambda examples: [labels.index(example.label) for example in examples]
    train_rows, dev_rows = encoded(train_set), encoded(dev_set)

    torch.manual_seed(config.seed)
    model = XLMRModel(model_cfg)
    load_weights(model, state)
    model.register_classification_head(HEAD, len(labels))  # an HF classifier's head must have as many classes
    freeze(model, config)
    model.to(dist.device).train()
    optimizer = make_optimizer(model, config)
    scaler = torch.amp.GradScaler(dist.device.type, enabled=config.precision == "fp16")
    per_epoch = math.ceil(len(train_rows) / config.batch_size)
    total = per_epoch * config.epochs
    last_step = min(config.max_steps or total, total)
    step, best = 0, {"accuracy": -1.0, "epoch": 0, "stale": 0}
    if resume_from:
        run_state = checkpoint.load(resume_from, dist, model, optimizer)
        step, best = run_state["step"], run_state["best"]
        if scaler.is_enabled():
            scaler.load_state_dict(run_state["scaler"])
    os.makedirs(out, exist_ok=True)
    storage.write_json(
        os.path.join(out, CONFIG_FILE),
        {
            "finetune": asdict(config),
            "init": init,
            "labels": labels,
            "model": model_cfg.to_dict(),
            "train": train_file,
            "dev": dev_file,
        },
    )
    storage.copy_file(sentencepiece_model, os.path.join(out, "tokenizer", "sentencepiece.model"))
    log = MetricsLog(out, step, True, FIELDS)
    print(
        f"fine-tuning {model.num_parameters():,} parameters on {len(train_rows)} examples, {len(labels)} labels, "
        f"{total} steps ({config.epochs} epochs of {per_epoch})"
        + (f"; resuming at step {step}" if resume_from else ""),
        flush=True,
    )
    train_targets = torch.tensor(targets(train_set))
    from tqdm import tqdm

    progress = tqdm(total=last_step, initial=step, disable=not sys.stderr.isatty(), unit="step")
    stopped = False
    while step < last_step and not stopped:
        lr = learning_rate(step + 1, total, config)
        for group in optimizer.param_groups:
            group["lr"] = lr
        indices = batch_indices(step + 1, len(train_rows), config)
        tokens = collate([train_rows[i] for i in indices]).to(dist.device)
        with autocast(dist.device, config.precision):
            logits = model.classify(tokens, HEAD)
        loss = F.cross_entropy(logits.float(), train_targets[indices].to(dist.device))
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm if config.clip_norm > 0 else math.inf)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        progress.update(1)
        epoch_done = step % per_epoch == 0
        log.write(step, "train", epoch=math.ceil(step / per_epoch), loss=loss.item(), lr=lr)
        if epoch_done:
            epoch = step // per_epoch
            dev_loss, accuracy = evaluate(model, dev_rows, targets(dev_set), config, dist.device)
            log.write(step, "dev", epoch=epoch, loss=dev_loss, accuracy=accuracy)
            print(f"epoch {epoch}: dev loss {dev_loss:.4f}, accuracy {accuracy:.4f}", flush=True)
            if accuracy > best["accuracy"]:
                best = {"accuracy": accuracy, "epoch": epoch, "stale": 0}
                _save_best(model, os.path.join(out, BEST_DIR))
            else:
                best = {**best, "stale": best["stale"] + 1}
                stopped = bool(config.patience) and best["stale"] >= config.patience
        if epoch_done or step == last_step or stopped:
            run_state = {
                "best": best,
                "scaler": scaler.state_dict(),
                "config": asdict(config),
                "model": model_cfg.to_dict(),
            }
            checkpoint.save(out, step, dist, model, optimizer, run_state, {}, config.keep_checkpoints)
    progress.close()
    log.close()
    if step < total and not stopped:
        print(f"stopped at step {step} of {total} (--max-steps): --resume continues", flush=True)
        return {"step": step, "best_dev": best}
    return _finish(
        out, model, model_cfg, sentencepiece_model, labels, tests, encoded, targets, config, dist, best, step
    )


def _save_best(model: XLMRModel, path: str) -> None:
    with storage.atomic_path(path) as tmp:
        os.makedirs(tmp)
        checkpoint.save_model(model, tmp)


def _finish(
    out, model, model_cfg, sentencepiece_model, labels, tests, encoded, targets, config, dist, best, step
) -> Dict:
    """The best dev model: exported to OUT/hf, scored on the test files, results.json written."""
    model.load_state_dict(checkpoint.load_model(os.path.join(out, BEST_DIR)))
    export_hf(model.state_dict(), model_cfg, sentencepiece_model, os.path.join(out, HF_DIR), (HEAD, "sentence"), labels)
    results = {"step": step, "best_dev": best, "labels": labels, "test": {}}
    for path, examples in tests.items():
        loss, accuracy = evaluate(model, encoded(examples), targets(examples), config, dist.device)
        results["test"][path] = {"loss": loss, "accuracy": accuracy, "examples": len(examples)}
        print(f"test {path}: accuracy {accuracy:.4f} ({len(examples)} examples)", flush=True)
    storage.write_json(os.path.join(out, RESULTS_FILE), results)
    print(
        f"best dev accuracy {best['accuracy']:.4f} (epoch {best['epoch']}); wrote {os.path.join(out, HF_DIR)}",
        flush=True,
    )
    return results


def labels_of(init: str) -> Optional[List[str]]:
    """The labels, in order, of a classifier ``init`` already is (an HF classifier's id2label,
    or a fine-tuning run's), else None."""
    path = os.path.join(init, CONFIG_FILE)
    if not os.path.exists(path):
        return None
    saved = storage.read_json(path)
    if "id2label" in saved and str(saved.get("architectures", [""])[0]).endswith("SequenceClassification"):
        return [saved["id2label"][str(i)] for i in range(len(saved["id2label"]))]
    return saved.get("labels")
