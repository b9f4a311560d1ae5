"""The training loop: AdamW, warm-up then polynomial decay, gradient accumulation and clipping,
fp32 / fp16 (dynamic loss scaling) / bf16, DDP, periodic evaluation and checkpoints.

The loss of a step is the summed cross-entropy over every masked token of every micro-batch on
every rank, divided by their total count (as fairseq normalizes by sample size): N ranks with
batch B then take exactly the step one process takes with batch N·B.
"""

from __future__ import annotations

import csv
import math
import os
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from pretrain import checkpoint
from pretrain.data import BlockStream, collate, heldout_blocks, mask_tokens, masking_generator, read_manifest
from pretrain.dist import Dist, setup, teardown
from pretrain.export import load_hf
from pretrain.model import MODEL_PRESETS, PAD, ModelConfig, XLMRModel, model_config
from sampling import MixtureConfig
from tokenizer.pack import sentencepiece_file
from toolkit import storage
from toolkit.cli import build_config, flag

PRECISIONS = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}
EVAL_KEY = 2**31 - 1  # masking-generator key of evaluation batches, apart from any step number
CONFIG_FILE, METRICS_FILE = "config.json", "metrics.csv"
METRIC_FIELDS = [
    "step",
    "split",
    "language",
    "loss",
    "perplexity",
    "lr",
    "grad_norm",
    "loss_scale",
    "skipped_steps",
    "tokens_per_s",
]


@dataclass(frozen=True)
class TrainConfig:
    model: str = field(
        default="tiny", metadata=flag(choices=tuple(MODEL_PRESETS))
    )  # model preset (model.MODEL_PRESETS): tiny | base | large, or a student shape (mini, small)
    batch_size: int = 8  # blocks per micro-batch per process
    grad_accum: int = 1  # micro-batches per optimizer step
    lr: float = 1e-3  # peak learning rate, reached after warm-up
    warmup_steps: int = 30  # linear warm-up from 0
    total_steps: int = 300  # length of the schedule: polynomial decay to end_lr at this step
    max_steps: int = 0  # stop after this step; 0 = total_steps (a smaller value cuts a run to resume later)
    end_lr: float = 0.0
    power: float = 1.0  # polynomial decay power (1 = linear, fairseq's default)
    weight_decay: float = 0.01  # AdamW, on matrices and embeddings only
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-6
    clip_norm: float = 1.0  # max global gradient norm; 0 = no clipping
    precision: str = field(
        default="fp32", metadata=flag(choices=tuple(PRECISIONS))
    )  # fp32 | fp16 (GradScaler) | bf16 (autocast)
    mask_prob: float = 0.15
    dropout: float = 0.1  # model dropout and attention dropout
    sampling: MixtureConfig = field(default_factory=MixtureConfig)  # how languages are mixed, over token counts
    seed: int = 0
    log_interval: int = 20  # steps between training-loss log lines
    eval_interval: int = 100  # steps between held-out evaluations (and always at the end); 0 = end only
    eval_blocks: int = 16  # held-out blocks per language (at most a tenth of its blocks)
    save_interval: int = 100  # steps between checkpoints (and always at the end)
    keep_checkpoints: int = 2

    def __post_init__(self):
        if self.model not in MODEL_PRESETS:
            raise ValueError(f"model must be one of {', '.join(MODEL_PRESETS)}, got {self.model!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        for name in ("batch_size", "grad_accum", "total_steps", "log_interval"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in (
            "warmup_steps",
            "max_steps",
            "eval_interval",
            "eval_blocks",
            "save_interval",
            "clip_norm",
            "lr",
            "end_lr",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.warmup_steps > self.total_steps:
            raise ValueError(
                f"warmup_steps ({self.warmup_steps}) must not exceed total_steps ({self.total_steps}): lower --warmup-steps"
            )
        if self.max_steps > self.total_steps:
            raise ValueError(
                f"max_steps ({self.max_steps}) is past the schedule's end (total_steps {self.total_steps}): raise --total-steps"
            )
        if not 0 < self.mask_prob < 1 or not 0 <= self.dropout < 1:
            raise ValueError("mask_prob must be in (0, 1) and dropout in [0, 1)")

    @property
    def last_step(self) -> int:
        return self.max_steps or self.total_steps


_LONG_RUN = dict(  # the schedule and logging of a real pretraining run
    warmup_steps=10_000,
    total_steps=500_000,
    precision="bf16",
    log_interval=100,
    eval_interval=5_000,
    save_interval=5_000,
    eval_blocks=64,
)
TRAIN_PRESETS = {
    "tiny": dict(model="tiny"),  # the defaults above: a CPU smoke run of a few hundred steps
    "base": dict(model="base", batch_size=32, lr=6e-4, **_LONG_RUN),
    "large": dict(model="large", batch_size=16, lr=4e-4, **_LONG_RUN),
}


def train_config(preset: str, *layers: Mapping, **overrides) -> TrainConfig:
    """The preset, then ``layers`` (a saved config, the flags given), then ``overrides``."""
    if preset not in TRAIN_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(TRAIN_PRESETS)}")
    return build_config(TrainConfig, TRAIN_PRESETS[preset], *layers, overrides)


def learning_rate(step: int, config: TrainConfig) -> float:
    """fairseq's polynomial_decay: linear warm-up to lr, then (lr - end) · (1 - progress)^power + end."""
    if config.warmup_steps and step <= config.warmup_steps:
        return config.lr * step / config.warmup_steps
    if step >= config.total_steps:
        return config.end_lr
    progress = (step - config.warmup_steps) / (config.total_steps - config.warmup_steps)
    return (config.lr - config.end_lr) * (1 - progress) ** config.power + config.end_lr


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    trainable = [p for p in model.parameters() if p.requires_grad]  # an adapter's only, when the rest is frozen
    decay = [p for p in trainable if p.dim() >= 2]
    no_decay = [p for p in trainable if p.dim() < 2]  # biases and LayerNorm
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # The fused kernel, on CPU too: ~5x faster there than the default at a 250k vocabulary.
    return torch.optim.AdamW(groups, lr=0.0, betas=(config.beta1, config.beta2), eps=config.eps, fused=True)


def autocast(device: torch.device, precision: str):
    dtype = PRECISIONS[precision]
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else nullcontext()


class MaskedLM(torch.nn.Module):
    """Pretraining's objective: the summed cross-entropy at the masked positions. An objective
    holds the model it trains as ``model``; any weights of its own (distillation's projection)
    train and are checkpointed beside the model's."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor, masked: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.model(inputs, masked).float(), targets, reduction="sum")


def train_step(
    objective: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    micro_batches: Sequence[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    dist: Dist,
    precision: str,
    clip_norm: float,
) -> Tuple[float, float, float, bool]:
    """One optimizer step of ``objective`` (``MaskedLM``, possibly DDP-wrapped: the summed loss
    of a micro-batch) over (inputs, masked positions, targets) micro-batches. Returns this
    rank's summed loss, the masked-token count over all ranks, the gradient norm and whether the
    loss scaler skipped the step."""
    count = dist.sum([float(sum(int(masked.sum()) for _, masked, _ in micro_batches))])[0]
    loss_sum = torch.zeros((), dtype=torch.float64, device=micro_batches[0][0].device)
    for i, (inputs, masked, targets) in enumerate(micro_batches):
        last = i == len(micro_batches) - 1
        with objective.no_sync() if dist.enabled and not last else nullcontext():
            with autocast(inputs.device, precision):
                loss = objective(inputs, masked, targets)
            # DDP averages gradients over ranks, hence the world size.
            scaler.scale(loss * (dist.world_size / max(count, 1.0))).backward()
        loss_sum += loss.detach()  # read once after the loop: no device sync per micro-batch
    scaler.unscale_(optimizer)
    grad_norm = torch.nn.utils.clip_grad_norm_(objective.parameters(), clip_norm if clip_norm > 0 else math.inf)
    scale = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return float(loss_sum), count, float(grad_norm), scaler.is_enabled() and scaler.get_scale() < scale


def masked_batch(tokens: torch.Tensor, mask_id: int, generator: torch.Generator, mask_prob: float):
    inputs, masked = mask_tokens(tokens, mask_id, generator, mask_prob)
    return inputs, masked, tokens[masked]


@torch.no_grad()
def evaluate(
    model: torch.nn.Module, heldout: Dict[str, List], config: TrainConfig, dist: Dist, mask_id: int
) -> Dict[str, Tuple[float, float]]:
    """Held-out MLM loss and perplexity per language (masks fixed by the seed), over all ranks."""
    model.eval()
    sums = []
    for index, (_, blocks) in enumerate(sorted(heldout.items())):
        loss_sum = count = 0.0
        for start in range(dist.rank * config.batch_size, len(blocks), config.batch_size * dist.world_size):
            tokens = collate(blocks[start : start + config.batch_size])
            batch = masked_batch(
                tokens, mask_id, masking_generator(config.seed, EVAL_KEY, index, start), config.mask_prob
            )
            inputs, masked, targets = (t.to(dist.device) for t in batch)
            with autocast(dist.device, config.precision):
                logits = model(inputs, masked)
            loss_sum += F.cross_entropy(logits.float(), targets, reduction="sum").item()
            count += len(targets)
        sums += [loss_sum, count]
    sums = dist.sum(sums) if sums else []
    model.train()
    out = {}
    for i, language in enumerate(sorted(heldout)):
        loss = sums[2 * i] / max(sums[2 * i + 1], 1.0)
        out[language] = (loss, math.exp(min(loss, 50.0)))
    return out


class MetricsLog:
    """``metrics.csv`` and TensorBoard events of a run (main process only). A resumed run drops
    what an interrupted run logged after its checkpoint, so the files read as one run."""

    def __init__(self, run_dir: str, start_step: int, enabled: bool, fields: Sequence[str] = METRIC_FIELDS):
        self.enabled, self.fields = enabled, list(fields)
        if not enabled:
            return
        self.path = os.path.join(run_dir, METRICS_FILE)
        rows = []
        if start_step and os.path.exists(self.path):
            with open(self.path, newline="") as handle:
                rows = [row for row in csv.DictReader(handle) if int(row["step"]) <= start_step]
        with storage.atomic_write(self.path, "w") as handle:
            writer = csv.DictWriter(handle, self.fields)
            writer.writeheader()
            writer.writerows(rows)
        from torch.utils.tensorboard import SummaryWriter  # only the main process needs TensorBoard

        self.tensorboard = SummaryWriter(
            os.path.join(run_dir, "tensorboard"), purge_step=start_step + 1 if start_step else None
        )

    def write(self, step: int, split: str, language: str = "", **values: float) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", newline="") as handle:
            csv.DictWriter(handle, self.fields).writerow({"step": step, "split": split, "language": language, **values})
        tag = f"{split}/{language}" if language else split
        for name, value in values.items():
            self.tensorboard.add_scalar(f"{tag}/{name}", value, step)

    def close(self) -> None:
        if self.enabled:
            self.tensorboard.close()


def prepare_run_dir(
    run_dir: str,
    config: TrainConfig,
    model_cfg: ModelConfig,
    data_dir: str,
    manifest: Dict,
    extra: Mapping,
) -> None:
    """The run's config.json (with ``extra``: where it started) and a copy of the tokenizer, so
    the run folder stands alone."""
    os.makedirs(run_dir, exist_ok=True)
    content = {"train": asdict(config), "model": model_cfg.to_dict(), "data": os.path.abspath(data_dir), **extra}
    storage.write_json(os.path.join(run_dir, CONFIG_FILE), content)
    source = manifest.get("tokenizer")
    if source and os.path.isdir(source):
        storage.copy_file(sentencepiece_file(source), os.path.join(run_dir, "tokenizer", "sentencepiece.model"))
        if os.path.exists(os.path.join(source, "dict.txt")):
            storage.copy_file(os.path.join(source, "dict.txt"), os.path.join(run_dir, "tokenizer", "dict.txt"))


def train(
    config: TrainConfig,
    data_dir: str,
    run_dir: str,
    resume: bool = False,
    init_from_hf: Optional[str] = None,
    device: str = "auto",
) -> Dict:
    """Train (or resume) a run; returns the last training and evaluation figures."""
    manifest = read_manifest(data_dir)
    resume_from = checkpoint.resume_point(run_dir, resume)
    dist = setup(device)
    try:
        return _train(config, data_dir, run_dir, manifest, resume_from, init_from_hf, dist)
    finally:
        teardown()


def _train(config, data_dir, run_dir, manifest, resume_from, init_from_hf, dist: Dist) -> Dict:
    hf_state = None
    if resume_from:  # the checkpoint's architecture, whatever preset or HF model it started from
        model_cfg = ModelConfig(**checkpoint.read_state(resume_from)["model"])
    elif init_from_hf:
        model_cfg, hf_state = load_hf(init_from_hf)
    else:
        model_cfg = model_config(
            config.model, manifest["vocab_size"], dropout=config.dropout, attention_dropout=config.dropout
        )
    check_data_fits(manifest, model_cfg)
    torch.manual_seed(config.seed)
    model = XLMRModel(model_cfg)
    if hf_state is not None:
        model.load_state_dict(hf_state)
    model.to(dist.device)
    return run_on_blocks(model, config, dist, data_dir, run_dir, manifest, resume_from, {"init_from_hf": init_from_hf})


def run_on_blocks(
    model: XLMRModel,
    config: TrainConfig,
    dist: Dist,
    data_dir: str,
    run_dir: str,
    manifest: Dict,
    resume_from: Optional[str],
    about: Mapping,
    languages: Optional[Sequence[str]] = None,
    trainable_only: bool = False,
    objective: Optional[torch.nn.Module] = None,
) -> Dict:
    """What pretraining, train-adapter and distill do once their model is built and on the
    device: the optimizer (of the ``objective``'s parameters, when given), the blocks of
    ``languages``, the checkpoint restored, the run folder's config (with ``about``) and
    ``mlm_loop``."""
    optimizer = make_optimizer(objective if objective is not None else model, config)
    stream, heldout = training_data(data_dir, config, dist, languages)
    scaler, step, skipped = restore(resume_from, config, dist, model, optimizer, stream, objective)
    if dist.is_main:
        prepare_run_dir(run_dir, config, model.config, data_dir, manifest, about)
    return mlm_loop(
        model, optimizer, scaler, stream, heldout, config, dist, run_dir, step, skipped, trainable_only, objective
    )


def check_data_fits(manifest: Dict, model_cfg: ModelConfig) -> None:
    if model_cfg.vocab_size != manifest["vocab_size"]:
        raise ValueError(
            f"the model's vocabulary has {model_cfg.vocab_size} ids, DATA_DIR's tokenizer {manifest['vocab_size']}: pack the data with the model's tokenizer"
        )
    if manifest["tokens_per_sample"] > model_cfg.max_tokens:
        raise ValueError(f"blocks of {manifest['tokens_per_sample']} tokens, the model holds {model_cfg.max_tokens}")


def training_data(data_dir: str, config: TrainConfig, dist: Dist, languages: Optional[Sequence[str]] = None):
    """(this rank's block stream, the held-out blocks) of ``languages`` (default all)."""
    stream = BlockStream(
        data_dir, config.sampling, config.seed, dist.rank, dist.world_size, config.eval_blocks, languages
    )
    heldout = heldout_blocks(data_dir, config.eval_blocks, languages) if config.eval_blocks else {}
    torch.manual_seed(config.seed + dist.rank)  # dropout differs across ranks
    return stream, heldout


def restore(resume_from: Optional[str], config: TrainConfig, dist: Dist, model, optimizer, stream, objective=None):
    """(loss scaler, step, skipped steps): restored from ``resume_from`` (the ``objective``'s
    own weights too), or fresh."""
    scaler = torch.amp.GradScaler(dist.device.type, enabled=config.precision == "fp16")
    if not resume_from:
        return scaler, 0, 0
    state = checkpoint.load(resume_from, dist, model, optimizer, objective)
    stream.load_state_dict(state["data"])
    if scaler.is_enabled():
        scaler.load_state_dict(state["scaler"])
    return scaler, state["step"], state["skipped_steps"]


def mlm_loop(
    model: XLMRModel,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    stream: BlockStream,
    heldout: Dict[str, List],
    config: TrainConfig,
    dist: Dist,
    run_dir: str,
    step: int,
    skipped: int,
    trainable_only: bool = False,
    objective: Optional[torch.nn.Module] = None,
) -> Dict:
    """Training on masked blocks from ``step`` to the config's last step: logs, held-out MLM
    evaluations and checkpoints (of the weights that train alone with ``trainable_only``, an
    adapter's). ``objective`` holds ``model`` and gives the loss (default ``MaskedLM``; a
    ``distill.Distiller``). Returns the last figures."""
    model_cfg, mask_id = model.config, model.config.vocab_size - 1
    objective = objective if objective is not None else MaskedLM(model)
    cross_entropy = isinstance(objective, MaskedLM)  # a training loss that has a perplexity
    log = MetricsLog(run_dir, step, dist.is_main)
    ddp = (
        DistributedDataParallel(objective, device_ids=[dist.local_rank] if dist.device.type == "cuda" else None)
        if dist.enabled
        else objective
    )
    if dist.is_main:
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        print(
            f"model {model_cfg.layers} layers x {model_cfg.hidden}: {model.num_parameters():,} parameters ({model.num_parameters(True):,} without embeddings"
            + (f", {trainable:,} trained" if trainable < model.num_parameters() else "")
            + f"), {dist.world_size} process(es) on {dist.device.type}, {config.precision}; languages {', '.join(stream.languages)}"
            + (f"; resuming at step {step}" if step else ""),
            flush=True,
        )

    last = {}
    window_loss = window_count = window_tokens = 0.0
    window_start = time.perf_counter()
    while step < config.last_step:
        lr = learning_rate(step + 1, config)
        for group in optimizer.param_groups:
            group["lr"] = lr
        micro_batches = []
        for micro in range(config.grad_accum):
            tokens = stream.next_batch(config.batch_size)[0]
            window_tokens += int(tokens.ne(PAD).sum())
            batch = masked_batch(
                tokens, mask_id, masking_generator(config.seed, step, dist.rank, micro), config.mask_prob
            )
            micro_batches.append(tuple(t.to(dist.device, non_blocking=True) for t in batch))
        loss_sum, count, grad_norm, was_skipped = train_step(
            ddp, optimizer, scaler, micro_batches, dist, config.precision, config.clip_norm
        )
        step += 1
        skipped += was_skipped
        window_loss, window_count = window_loss + loss_sum, window_count + count
        if step % config.log_interval == 0 or step == config.last_step:
            total_loss, total_tokens = dist.sum([window_loss, window_tokens])
            elapsed = time.perf_counter() - window_start
            loss = total_loss / max(window_count, 1.0)
            train_perplexity = {"perplexity": math.exp(min(loss, 50.0))} if cross_entropy else {}
            last["train"] = dict(
                loss=loss,
                **train_perplexity,
                lr=lr,
                grad_norm=grad_norm,
                loss_scale=scaler.get_scale() if scaler.is_enabled() else 1.0,
                skipped_steps=skipped,
                tokens_per_s=total_tokens / elapsed,
            )
            log.write(step, "train", **last["train"])
            if dist.is_main:
                print(
                    f"step {step:>7}/{config.last_step} | loss {loss:7.4f} | "
                    + (f"ppl {train_perplexity['perplexity']:10.2f} | " if cross_entropy else "")
                    + f"lr {lr:.2e} "
                    f"| grad norm {grad_norm:7.3f} | {total_tokens / elapsed:9,.0f} tok/s"
                    + (f" | skipped {skipped}" if skipped else ""),
                    flush=True,
                )
            window_loss = window_count = window_tokens = 0.0
            window_start = time.perf_counter()
        if heldout and ((config.eval_interval and step % config.eval_interval == 0) or step == config.last_step):
            last["eval"] = evaluate(model, heldout, config, dist, mask_id)
            for language, (loss, perplexity) in last["eval"].items():
                log.write(step, "eval", language, loss=loss, perplexity=perplexity)
            if dist.is_main:
                print(
                    f"step {step:>7} | held-out loss "
                    + ", ".join(f"{lang} {loss:.3f}" for lang, (loss, _) in last["eval"].items()),
                    flush=True,
                )
        if (config.save_interval and step % config.save_interval == 0) or step == config.last_step:
            run_state = {
                "skipped_steps": skipped,
                "scaler": scaler.state_dict(),
                "config": asdict(config),
                "model": model_cfg.to_dict(),
                "epochs": stream.epochs,
            }
            checkpoint.save(
                run_dir, step, dist, model, optimizer, run_state, stream.state_dict(), config.keep_checkpoints,
                trainable_only, objective,
            )  # fmt: skip
    log.close()
    return last
