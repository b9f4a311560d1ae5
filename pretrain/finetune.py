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

import filecmp
import math
import os
import sys
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from pretrain import checkpoint
from pretrain.adapter_files import adapter_folder, load_adapter, save_adapter
from pretrain.adapters import adapter_config
from pretrain.dist import Dist
from pretrain.distill import DistillConfig, Distiller
from pretrain.export import export_hf, load_hf
from pretrain.hub import XLMRHub, check_vocabulary, from_pretrained, load_model, load_run
from pretrain.metrics import entity_scores
from pretrain.model import ModelConfig, XLMRModel, head_kind, load_weights
from pretrain.optim import OptimConfig, Optimization, Training, autocast, train_step
from pretrain.run_dir import CONFIG_FILE, MetricsLog, RunDir, run_session
from pretrain.tasks import (
    HEAD,
    IGNORED,
    Example,
    ExamplesConfig,
    Row,
    TaskLoss,
    collate_rows,
    encode_rows,
    head_kind_of,
    label_set,
    metric_of,
    read_examples,
    task_loss,
)
from tokenizer.hf import open_tokenizer
from toolkit import storage
from toolkit.cli import build_config

FIELDS = ["step", "split", "language", "epoch", "loss", "accuracy", "f1", "lr"]  # metrics.csv; language: the test file
TASK_ADAPTER_DIR = "task_adapter"


@dataclass(frozen=True)
class FinetuneConfig(ExamplesConfig, OptimConfig):
    lr: float = 2e-5  # peak learning rate, after warm-up
    warmup_ratio: float = 0.1  # share of the steps spent warming up linearly from 0
    batch_size: int = 16
    epochs: int = 3
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
        for name in ("freeze_layers", "patience"):
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
    with run_session(out, resume, device) as (run, resume_from, dist):
        if dist.enabled:
            raise ValueError("fine-tuning runs in one process")
        return _finetune(config, job, run, resume_from, dist)


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
    encode = lambda examples: encode_rows(tokenizer, examples, labels, config.task, min(config.max_length, max_tokens))
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
    last_step = config.stop_step(total)
    step, best = 0, {metric: -1.0, "epoch": 0, "stale": 0}
    if resume_from:
        saved, _ = checkpoint.load(resume_from, dist, training)
        step, best = saved.step, saved.best
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
