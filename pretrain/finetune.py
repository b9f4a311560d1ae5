"""Fine-tuning an encoder with a classification head: sentence (``classify``) or sentence-pair
(``pair``, encoded ``<s> a </s></s> b </s>``) classification from TSV or JSONL files, and token
classification (``tokens``: NER from CoNLL or JSONL files, each word labelled on its first piece,
scored by entity F1).

AdamW with linear warm-up and linear decay, dropout as the model's, optional frozen embeddings
and lowest layers, fp32 / fp16 / bf16 as in pretraining, dev accuracy after every epoch with early
stopping, and the pretraining checkpoints (``checkpoint.py``): the batch of every step is a
function of the seed and the step alone, so ``--resume`` continues a run exactly. The best dev
model is exported as ``XLMRobertaForSequenceClassification`` or ``...ForTokenClassification``
(``OUT/hf``).

With a ``teacher`` (a fine-tuned classifier), task distillation (TinyBERT's second stage): the
model being fine-tuned is a student that learns the teacher's attention scores, hidden states and
soft predictions at a temperature (``pretrain.distill``) instead of the labels; everything else is
the same, down to the files written.
"""

from __future__ import annotations

import csv
import filecmp
import json
import math
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F

from pretrain import checkpoint
from pretrain.adapter_files import adapter_folder, load_adapter, save_adapter
from pretrain.adapters import adapter_config
from pretrain.dist import Dist, setup, teardown
from pretrain.distill import DistillConfig, Distiller
from pretrain.export import HF_HEAD_NAME, export_hf, load_hf
from pretrain.hub import XLMRHub, check_vocabulary, from_pretrained, load_model, load_run
from pretrain.metrics import entity_scores
from pretrain.model import ModelConfig, XLMRModel, head_kind, load_weights
from pretrain.optim import OptimConfig, Optimization, Training, autocast, train_step
from pretrain.run_dir import CONFIG_FILE, MetricsLog, RunDir
from tokenizer.hf import open_tokenizer
from toolkit import storage
from toolkit.cli import build_config, flag

TASKS = ("classify", "pair", "tokens")
HEAD = HF_HEAD_NAME  # the head's name here and in an exported or imported HF classifier
FIELDS = ["step", "split", "language", "epoch", "loss", "accuracy", "f1", "lr"]  # metrics.csv; language: the test file
IGNORED = -100  # the target of a piece that is not a word's first (and of padding): no loss, no prediction
TASK_ADAPTER_DIR = "task_adapter"


@dataclass(frozen=True)
class ExamplesConfig:
    """How a file of examples is read: the task and its columns (fine-tuning and evaluation)."""

    task: str = field(
        default="classify", metadata=flag(choices=TASKS)
    )  # classify: a text column; pair: text_a and text_b; tokens: words and their tags
    text_column: str = "text"  # the text of a classify row (SIB-200: text)
    label_column: str = "label"  # the label of a row (SIB-200: category)
    tokens_column: str = "tokens"  # a tokens task's JSONL: the list of words
    tags_column: str = "tags"  # a tokens task's JSONL: the list of their tags (BIO or BIOES)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {self.task!r}")


@dataclass(frozen=True)
class FinetuneConfig(ExamplesConfig, OptimConfig):
    lr: float = 2e-5  # peak learning rate, after warm-up
    warmup_ratio: float = 0.1  # share of the steps spent warming up linearly from 0
    batch_size: int = 16
    epochs: int = 3
    max_steps: int = 0  # stop after this step (to resume later); 0 = every epoch
    freeze_embeddings: bool = False  # token and position embeddings stay as they are
    freeze_layers: int = 0  # the lowest N transformer layers stay as they are
    patience: int = 0  # stop after this many epochs without a better dev accuracy; 0 = run every epoch
    max_length: int = 256  # tokens of an example, <s> and </s> included (longer ones are cut)
    seed: int = 0
    keep_checkpoints: int = 2

    def __post_init__(self):
        ExamplesConfig.__post_init__(self)
        OptimConfig.__post_init__(self)
        for name in ("batch_size", "epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("max_steps", "freeze_layers", "patience"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
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


def metric_of(task: str) -> str:
    """What the dev set picks the best model by, and what a test set reports."""
    return "f1" if task == "tokens" else "accuracy"


def head_kind_of(task: str) -> str:
    return "tokens" if task == "tokens" else "sentence"


class Example(NamedTuple):
    texts: Tuple[str, ...]  # one text, the pair, or a sentence's words (tokens task)
    label: Union[str, Tuple[str, ...]]  # the class, or each word's tag (tokens task)


def labels_in(example: Example) -> Tuple[str, ...]:
    return example.label if isinstance(example.label, tuple) else (example.label,)


def read_examples(path: str, config: ExamplesConfig) -> List[Example]:
    """The rows of a TSV (with a header) or JSONL file (``.jsonl``/``.json``): the text column(s)
    and the label; for the tokens task, CoNLL sentences or JSONL lists of words and tags. A
    malformed row or an empty file is an error naming the file and line."""
    if config.task == "tokens":
        examples = list(_tagged_sentences(path, config))
        if not examples:
            raise ValueError(f"{path}: no sentences")
        return examples
    columns = (config.text_column,) if config.task == "classify" else ("text_a", "text_b")
    wanted = (*columns, config.label_column)
    examples = []
    for number, row in read_rows(path):
        missing = [column for column in wanted if not isinstance(row.get(column), str) or not row[column].strip()]
        if missing:
            raise ValueError(
                f"{path}, line {number}: no {', '.join(missing)} (a {config.task} row needs {', '.join(wanted)})"
            )
        examples.append(Example(tuple(row[column] for column in columns), row[config.label_column].strip()))
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples


def _tagged_sentences(path: str, config: ExamplesConfig):
    if path.endswith((".jsonl", ".json")):
        for number, row in read_rows(path):
            words, tags = row.get(config.tokens_column), row.get(config.tags_column)
            if not isinstance(words, list) or not isinstance(tags, list) or not words:
                raise ValueError(
                    f"{path}, line {number}: no list {config.tokens_column} and {config.tags_column} (a tokens row needs both)"
                )
            if len(words) != len(tags):
                raise ValueError(f"{path}, line {number}: {len(words)} {config.tokens_column} but {len(tags)} tags")
            yield Example(tuple(map(str, words)), tuple(str(tag) for tag in tags))
        return
    yield from _conll_sentences(path)


def _conll_sentences(path: str):
    """CoNLL: a word a line, its tag in the last column (tab or space separated), a blank line
    after each sentence; ``-DOCSTART-`` lines are skipped."""
    words, tags = [], []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            cells = line.split()
            if cells and cells[0] == "-DOCSTART-":
                continue
            if not cells:
                if words:
                    yield Example(tuple(words), tuple(tags))
                words, tags = [], []
                continue
            if len(cells) < 2:
                raise ValueError(f"{path}, line {number}: a word and its tag, got {line.strip()!r}")
            words.append(cells[0])
            tags.append(cells[-1])
    if words:
        yield Example(tuple(words), tuple(tags))


def read_rows(path: str):
    """(line number, row) of a TSV file with a header or of a JSONL file; a malformed row is an
    error naming the file and line."""
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
    labels = sorted({label for example in train for label in labels_in(example)})
    for path, examples in others.items():
        check_labels(path, examples, labels, "labels not in the training set")
    return labels


def check_labels(path: str, examples: Sequence[Example], labels: Sequence[str], problem: str) -> None:
    """An error naming ``path``'s labels outside ``labels``."""
    unknown = sorted({label for example in examples for label in labels_in(example)} - set(labels))
    if unknown:
        raise ValueError(f"{path}: {problem}: {', '.join(unknown)} (known: {', '.join(labels)})")


def encode(tokenizer, example: Example, max_length: int) -> List[int]:
    """``<s> a </s>`` or ``<s> a </s></s> b </s>`` (in the tokenizer's own specials and joining,
    BERT's ``[CLS] a [SEP] b [SEP]``), the longer text cut first to ``max_length``."""
    return tokenizer.encode_example(example.texts, max_length)[0]


def encode_words(tokenizer, words: Sequence[str], max_length: int) -> Tuple[List[int], List[int]]:
    """``<s> pieces </s>`` of a sentence's words, cut to ``max_length``, and the position of each
    word's first piece (the words whose first piece was cut off have none)."""
    ids, firsts = [tokenizer.bos], []
    for pieces in tokenizer.encode_words(words):
        if len(ids) + 1 > max_length - 1:
            break
        firsts.append(len(ids))
        ids += pieces[: max_length - 1 - len(ids)]
    return [*ids, tokenizer.eos], firsts


class Row(NamedTuple):
    ids: List[int]
    target: Union[int, List[int]]  # the class, or per position a tag (IGNORED but at first pieces)
    types: Optional[List[int]] = None  # token types, where a pair's second text has its own (BERT)


def encode_rows(
    tokenizer,
    examples: Sequence[Example],
    labels: Sequence[str],
    config: FinetuneConfig,
    max_tokens: int,
) -> List[Row]:
    max_length, index = min(config.max_length, max_tokens), {label: i for i, label in enumerate(labels)}
    rows = []
    for example in examples:
        if config.task != "tokens":
            ids, types = tokenizer.encode_example(example.texts, max_length)
            rows.append(Row(ids, index[example.label], types if any(types) else None))
            continue
        ids, firsts = encode_words(tokenizer, example.texts, max_length)
        target = [IGNORED] * len(ids)
        for position, tag in zip(firsts, example.label):
            target[position] = index[tag]
        rows.append(Row(ids, target))
    return rows


def collate(rows: Sequence[List[int]], padding_value: int) -> torch.Tensor:
    return torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(r) for r in rows], batch_first=True, padding_value=padding_value
    )


def collate_rows(rows: Sequence[Row], device, pad: int) -> Tuple[torch.Tensor, ...]:
    """(tokens, targets) of a batch, and the token types when a row has some: targets [batch] of
    classes, or [batch, length] of tags; tokens padded with the tokenizer's ``pad``."""
    tokens = collate([row.ids for row in rows], pad).to(device)
    if isinstance(rows[0].target, int):
        gold = torch.tensor([row.target for row in rows], device=device)
    else:
        gold = collate([row.target for row in rows], IGNORED).to(device)
    if all(row.types is None for row in rows):
        return tokens, gold
    types = collate([row.types or [0] * len(row.ids) for row in rows], 0).to(device)
    return tokens, gold, types


def task_loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of sentence logits [batch, classes] or token logits [batch, length, classes]."""
    return F.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORED, reduction=reduction
    )


class TaskLoss(torch.nn.Module):
    """Fine-tuning's objective (``optim``): the cross-entropy of the head, summed over the
    examples (or the tagged words of the tokens task)."""

    def __init__(self, model: XLMRModel):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, gold: torch.Tensor, types: Optional[torch.Tensor] = None) -> torch.Tensor:
        return task_loss(self.model.classify(tokens, HEAD, types), gold, "sum")

    def units(self, tokens: torch.Tensor, gold: torch.Tensor, types: Optional[torch.Tensor] = None) -> torch.Tensor:
        return gold.ne(IGNORED).sum()


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
    model: XLMRModel,
    examples: Sequence[Example],
    rows: Sequence[Row],
    labels: Sequence[str],
    config: FinetuneConfig,
    device,
) -> Tuple[float, float]:
    """(mean loss, score) of the head on ``rows``, the encoded ``examples``: accuracy, or for
    the tokens task entity F1 over every word (a word cut off by ``max_length`` counts as ``O``)."""
    was_training = model.training
    model.eval()
    loss_sum, targets, predicted = 0.0, 0, []
    for start in range(0, len(rows), config.batch_size):
        tokens, gold, *types = collate_rows(rows[start : start + config.batch_size], device, model.config.pad_id)
        with autocast(device, config.precision):
            logits = model.classify(tokens, HEAD, *types).float()
        loss_sum += task_loss(logits, gold, "sum").item()
        targets += int(gold.ne(IGNORED).sum())
        best = logits.argmax(-1)
        predicted += best.tolist() if gold.dim() == 1 else [b[g.ne(IGNORED)].tolist() for b, g in zip(best, gold)]
    model.train(was_training)
    if config.task != "tokens":
        score = sum(p == row.target for p, row in zip(predicted, rows)) / len(rows)
    else:
        tags = [[labels[i] for i in p] + ["O"] * (len(e.label) - len(p)) for p, e in zip(predicted, examples)]
        score = entity_scores([e.label for e in examples], tags).f1
    return loss_sum / max(targets, 1), score


@dataclass(frozen=True)
class FinetuneJob:
    """What a fine-tuning run is asked to do: the encoder it starts from, its files, and for MAD-X
    a fixed language adapter, for task distillation a fine-tuned teacher and the losses."""

    init: str  # a pretraining run, a checkpoint, a fine-tuning run or an HF folder
    train: str
    dev: str
    tests: Tuple[str, ...] = ()
    language_adapter: Optional[str] = None
    teacher: Optional[str] = None
    distill: Optional[DistillConfig] = None  # with a teacher: the losses (default DistillConfig())

    def __post_init__(self):
        if self.teacher and self.language_adapter:
            raise ValueError("distill a student without adapters: give --teacher or --adapter, not both")


@dataclass(frozen=True)
class FinetuningRun:
    """The record (config.json) of a fine-tuning run: its config, inputs, labels and model."""

    finetune: FinetuneConfig
    init: str
    labels: Tuple[str, ...]
    model: ModelConfig
    train: str
    dev: str
    language_adapter: Optional[str] = None
    teacher: Optional[str] = None
    distill: Optional[DistillConfig] = None


def finetuning_run(path: str) -> Optional[FinetuningRun]:
    """The record of the fine-tuning run in ``path``, or None for any other folder."""
    run = RunDir(path)
    is_finetuning = run.has_record() and "finetune" in storage.read_json(run.config_file)
    return run.read_record(FinetuningRun) if is_finetuning else None


@dataclass
class TaskData:
    """A fine-tuning run's examples, their labels in the classifier's order, and how they encode."""

    train: List[Example]
    dev: List[Example]
    tests: Dict[str, List[Example]]
    labels: List[str]
    encode: Callable[[Sequence[Example]], List[Row]]


def finetune(config: FinetuneConfig, job: FinetuneJob, out: str, resume: bool = False, device: str = "auto") -> Dict:
    """Fine-tune (or resume) into ``out``; returns the results written to ``OUT/results.json``.
    With ``job.language_adapter`` (an adapter folder or train-adapter run), MAD-X: a task adapter
    and the head train on top of that fixed language adapter, everything else frozen. With
    ``job.teacher`` (a fine-tuned classifier of the same task), ``job.init`` is a student
    distilled from it with the ``job.distill`` losses."""
    run = RunDir(out)
    resume_from = run.resume_point(resume)
    dist = setup(device)
    try:
        if dist.enabled:
            raise ValueError("fine-tuning runs in one process")
        return _finetune(config, job, run, resume_from, dist)
    finally:
        teardown()


def task_data(config: FinetuneConfig, job: FinetuneJob, tokenizer, max_tokens: int) -> TaskData:
    """The job's files read, their labels checked against the training set's (and a classifier's
    own, in its order, when ``init`` or the teacher already is one)."""
    train, dev = read_examples(job.train, config), read_examples(job.dev, config)
    tests = {path: read_examples(path, config) for path in job.tests}
    labels = label_set(train, {job.dev: dev, **tests})
    classifier = job.teacher or job.init  # whose labels, in their order, a classifier to learn from has
    known = labels_of(classifier)
    if job.teacher and known is None:
        raise ValueError(
            f"the teacher {job.teacher} is no classifier: fine-tune it first (a fine-tuning run or an HF classifier)"
        )
    if known is not None:  # continue (or distill) a classifier: its label order, and no label it lacks
        if set(labels) - set(known):
            raise ValueError(
                f"{classifier} classifies {', '.join(known)}; the training set has {', '.join(sorted(set(labels) - set(known)))} besides"
            )
        labels = known
    encode = lambda examples: encode_rows(tokenizer, examples, labels, config, max_tokens)
    return TaskData(train, dev, tests, labels, encode)


def _finetune(config: FinetuneConfig, job: FinetuneJob, run: RunDir, resume_from: Optional[str], dist: Dist) -> Dict:
    model_cfg, state, tokenizer_path = load_run(job.init)
    tokenizer = open_tokenizer(tokenizer_path)
    check_vocabulary(model_cfg, tokenizer)
    data = task_data(config, job, tokenizer, model_cfg.max_tokens)
    train_rows, dev_rows = data.encode(data.train), data.encode(data.dev)
    metric = metric_of(config.task)

    torch.manual_seed(config.seed)
    model = XLMRModel(model_cfg)
    load_weights(model, state)
    model.register_classification_head(HEAD, len(data.labels), head_kind_of(config.task))  # as many classes as HF's
    if job.language_adapter:
        attach_task_adapter(model, job.language_adapter)
    else:
        freeze(model, config)
    distill = (job.distill or DistillConfig()) if job.teacher else None
    if job.teacher:  # the teacher's soft targets, not the labels
        objective = task_distiller(job.teacher, model, tokenizer_path, config, distill)
    else:
        objective = TaskLoss(model)
    objective.to(dist.device).train()
    training = Training(objective, Optimization.of(objective, config, dist.device), bool(job.language_adapter))
    per_epoch = math.ceil(len(train_rows) / config.batch_size)
    total = per_epoch * config.epochs
    last_step = min(config.max_steps or total, total)
    step, best = 0, {metric: -1.0, "epoch": 0, "stale": 0}
    if resume_from:
        saved = checkpoint.load(resume_from, dist, training)
        step, best = saved["step"], saved["best"]
        if step < last_step and not os.path.exists(os.path.join(resume_from, checkpoint.OPTIMIZER_FILE)):
            raise ValueError(
                f"{run.path} finished at step {step} and kept no optimizer state: fine-tune anew into another --out"
            )
    record = FinetuningRun(
        config, job.init, tuple(data.labels), model_cfg, job.train, job.dev, job.language_adapter, job.teacher, distill
    )
    run.write_record(record)
    run.copy_tokenizer(tokenizer_path)
    log = MetricsLog(run, step, True, FIELDS)
    print(
        f"fine-tuning {model.num_parameters():,} parameters on {len(train_rows)} examples, {len(data.labels)} labels, "
        f"{total} steps ({config.epochs} epochs of {per_epoch})"
        + (f"; resuming at step {step}" if resume_from else ""),
        flush=True,
    )
    from tqdm import tqdm

    progress = tqdm(total=last_step, initial=step, disable=not sys.stderr.isatty(), unit="step")
    stopped = False
    while step < last_step and not stopped:
        lr = training.optimization.set_learning_rate(step + 1, total)
        indices = batch_indices(step + 1, len(train_rows), config)
        batch = collate_rows([train_rows[i] for i in indices], dist.device, model_cfg.pad_id)
        result = train_step(objective, [batch], training.optimization, dist)
        step += 1
        progress.update(1)
        epoch_done = step % per_epoch == 0
        loss = result.loss_sum / max(result.units, 1.0)
        log.write(step, "train", epoch=math.ceil(step / per_epoch), loss=loss, lr=lr)
        if epoch_done:
            epoch = step // per_epoch
            dev_loss, score = evaluate(model, data.dev, dev_rows, data.labels, config, dist.device)
            log.write(step, "dev", epoch=epoch, loss=dev_loss, **{metric: score})
            print(f"epoch {epoch}: dev loss {dev_loss:.4f}, {metric} {score:.4f}", flush=True)
            if score > best[metric]:
                best = {metric: score, "epoch": epoch, "stale": 0}
                save_best(run, model, data.labels, config)
            else:
                best = {**best, "stale": best["stale"] + 1}
                stopped = bool(config.patience) and best["stale"] >= config.patience
        if epoch_done or step == last_step or stopped:
            state = {"best": best, "config": asdict(config), "model": model_cfg.to_dict()}
            finished = step == total or stopped  # nothing left to resume: no optimizer state kept
            checkpoint.save(run, step, dist, training, state, {}, config.keep_checkpoints, not finished)
    progress.close()
    log.close()
    if step < total and not stopped:
        print(f"stopped at step {step} of {total} (--max-steps): --resume continues", flush=True)
        return {"step": step, "best_dev": best}
    return _finish(run, model, data, config, dist, {"step": step, "best_dev": best})


def save_best(run: RunDir, model: XLMRModel, labels: Sequence[str], config: FinetuneConfig) -> None:
    """The best dev model, stored once: as the Hugging Face classifier (``RUN/hf``), or with a
    task adapter (which HF's classifiers cannot hold) its trained weights alone in ``RUN/best``."""
    if TASK_ADAPTER in model.adapter_configs:
        with storage.atomic_path(run.best) as tmp:
            os.makedirs(tmp)
            checkpoint.save_model(model, tmp, trainable_only=True)
    else:
        export_hf(model.state_dict(), model.config, run.tokenizer, run.hf, (HEAD, head_kind_of(config.task)), labels)


def best_weights(run: RunDir, model: XLMRModel) -> Dict[str, torch.Tensor]:
    """The best dev model's weights that ``save_best`` stored, in this model's names."""
    if TASK_ADAPTER in model.adapter_configs:
        return checkpoint.load_model(run.best)
    return load_hf(run.hf)[1]


def task_distiller(
    teacher: str, student: XLMRModel, student_tokenizer: str, config: FinetuneConfig, distill: DistillConfig
) -> Distiller:
    """The fine-tuned ``teacher``'s classifier as the target of ``student`` (its head registered)."""
    teacher_hub = load_classifier(teacher)
    if HEAD not in teacher_hub.model.classification_heads:
        raise ValueError(f"the teacher {teacher} has no classification head")
    kind = head_kind(teacher_hub.model.classification_heads[HEAD])
    if kind != head_kind_of(config.task):
        raise ValueError(
            f"the teacher {teacher} has a {kind} head; the {config.task} task needs a {head_kind_of(config.task)} head"
        )
    distiller = Distiller(teacher_hub.model, student, distill, head=HEAD)
    if not filecmp.cmp(teacher_hub.tokenizer.model_path, student_tokenizer, shallow=False):
        raise ValueError(
            f"the teacher {teacher} and the student tokenize differently: distill from the teacher's own encoder"
        )
    return distiller


TASK_ADAPTER = "task"  # the name of a MAD-X task adapter, here and in OUT/task_adapter


def attach_task_adapter(model: XLMRModel, language_adapter: str) -> str:
    """Load ``language_adapter`` (fixed) and add a task adapter (the ``task`` preset) above it;
    only the task adapter and the head train. Returns the language adapter's name."""
    language = load_adapter(model, adapter_folder(language_adapter))
    model.add_adapter(TASK_ADAPTER, adapter_config("task"))
    model.train_only_adapter(TASK_ADAPTER)
    model.classification_heads[HEAD].requires_grad_(True)
    model.set_active_adapters(language, TASK_ADAPTER)
    return language


def _finish(run: RunDir, model: XLMRModel, data: TaskData, config: FinetuneConfig, dist: Dist, outcome: Dict) -> Dict:
    """The best dev model (``save_best``: OUT/hf, or with a task adapter OUT/task_adapter too)
    scored on the test files, results.json written (``outcome``: the last step and the best
    dev score)."""
    model.load_state_dict(best_weights(run, model), strict=False)  # the LM head is not the classifier's
    written = run.hf
    if TASK_ADAPTER in model.adapter_configs:  # HF's classifiers hold no adapters: the AdapterHub folder
        written = run.join(TASK_ADAPTER_DIR)
        save_adapter(model, TASK_ADAPTER, written)
    metric, best = metric_of(config.task), outcome["best_dev"]
    results = {"step": outcome["step"], "metric": metric, "best_dev": best, "labels": data.labels, "test": {}}
    for path, examples in data.tests.items():
        loss, score = evaluate(model, examples, data.encode(examples), data.labels, config, dist.device)
        results["test"][path] = {"loss": loss, metric: score, "examples": len(examples)}
        print(f"test {path}: {metric} {score:.4f} ({len(examples)} examples)", flush=True)
    storage.write_json(run.results_file, results)
    print(f"best dev {metric} {best[metric]:.4f} (epoch {best['epoch']}); wrote {written}", flush=True)
    return results


def labels_of(init: str) -> Optional[List[str]]:
    """The labels, in order, of a classifier ``init`` already is (an HF classifier's id2label,
    or a fine-tuning run's), else None."""
    record = finetuning_run(init)
    if record is not None:
        return list(record.labels)
    hf_config = os.path.join(init, CONFIG_FILE)  # Hugging Face's own format, read as HF writes it
    if not os.path.exists(hf_config):
        return None
    saved = storage.read_json(hf_config)
    if "id2label" in saved and str(saved.get("architectures", [""])[0]).endswith(
        ("SequenceClassification", "TokenClassification")
    ):
        return [saved["id2label"][str(i)] for i in range(len(saved["id2label"]))]
    return None


def load_classifier(path: str, device: Optional[str] = None) -> XLMRHub:
    """A fine-tuned classifier for evaluation: a fine-tuning run or an HF classifier folder; a
    run with a task adapter is rebuilt from its encoder, its language adapter and its best weights."""
    record = finetuning_run(path)
    if record is None or not record.language_adapter:
        return from_pretrained(path, device)
    model, tokenizer = load_model(record.init)
    model.register_classification_head(HEAD, len(record.labels), head_kind_of(record.finetune.task))
    attach_task_adapter(model, record.language_adapter)
    model.load_state_dict(best_weights(RunDir(path), model), strict=False)
    return XLMRHub(model.to(device or "cpu"), open_tokenizer(tokenizer))
