"""The one training kit of every run: the optimizer config, AdamW, the learning-rate schedule,
autocast, and the one ``train_step``. Pretraining, adapters, general and task distillation and
fine-tuning all step through it; what differs between them is the objective alone.

An objective is a module holding the model it trains as ``model`` (its own weights, such as
distillation's projection, train and are checkpointed beside the model's). ``objective(*batch)``
is a micro-batch's loss summed over its units (masked tokens, tagged words, examples) and
``objective.units(*batch)`` their number: a step divides the summed loss by the units of all its
micro-batches on all ranks (as fairseq normalizes by sample size), so N ranks with batch B take
exactly the step one process takes with batch N·B.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import NamedTuple, Sequence, Tuple

import torch
from torch import nn

from pretrain.dist import Dist
from toolkit.cli import flag

PRECISIONS = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class OptimConfig:
    """How a run optimizes: the base of every config that trains (``TrainConfig``,
    ``FinetuneConfig``), so that their saved fields and flags stay where they were."""

    lr: float = 1e-3  # peak learning rate, reached after warm-up
    warmup_steps: int = 0  # linear warm-up from 0 over this many steps...
    warmup_ratio: float = 0.0  # ...or over this share of the run's steps
    end_lr: float = 0.0  # the learning rate at the schedule's end
    power: float = 1.0  # polynomial decay power (1 = linear, fairseq's default)
    weight_decay: float = 0.01  # AdamW, on matrices and embeddings only
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-6
    clip_norm: float = 1.0  # max global gradient norm; 0 = no clipping
    precision: str = field(
        default="fp32", metadata=flag(choices=tuple(PRECISIONS))
    )  # fp32 | fp16 (GradScaler) | bf16 (autocast)
    max_steps: int = 0  # stop after this step (to resume later); 0 = the schedule's end (pretraining: total_steps; fine-tuning: every epoch)

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        for name in ("warmup_steps", "clip_norm", "lr", "end_lr", "weight_decay", "max_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.warmup_steps and self.warmup_ratio:
            raise ValueError("give warmup_steps or warmup_ratio, not both")

    def stop_step(self, total: int) -> int:
        """The step a run of a ``total``-step schedule stops after: ``max_steps``, at most ``total``."""
        return min(self.max_steps or total, total)

    def warmup(self, total: int) -> int:
        """The warm-up steps of a schedule of ``total`` steps."""
        return self.warmup_steps or int(total * self.warmup_ratio)


def learning_rate(step: int, config: OptimConfig, total: int) -> float:
    """fairseq's polynomial_decay over ``total`` steps: linear warm-up to lr, then
    (lr - end) · (1 - progress)^power + end."""
    warmup = config.warmup(total)
    if warmup and step <= warmup:
        return config.lr * step / warmup
    if step >= total:
        return config.end_lr
    progress = (step - warmup) / (total - warmup)
    return (config.lr - config.end_lr) * (1 - progress) ** config.power + config.end_lr


def make_optimizer(trainee: nn.Module, config: OptimConfig) -> torch.optim.AdamW:
    """AdamW over the parameters that train (an adapter's only, when the rest is frozen); the
    learning rate is the schedule's to set."""
    trainable = [p for p in trainee.parameters() if p.requires_grad]
    decay = [p for p in trainable if p.dim() >= 2]
    no_decay = [p for p in trainable if p.dim() < 2]  # biases and LayerNorm
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # The fused kernel, on CPU too: ~5x faster there than the default at a 250k vocabulary.
    return torch.optim.AdamW(groups, lr=0.0, betas=(config.beta1, config.beta2), eps=config.eps, fused=True)


def autocast(device: torch.device, precision: str):
    dtype = PRECISIONS[precision]
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else nullcontext()


@dataclass
class Optimization:
    """What a step changes besides the weights: AdamW, the fp16 loss scaler, and their config."""

    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    config: OptimConfig

    @classmethod
    def of(cls, trainee: nn.Module, config: OptimConfig, device: torch.device) -> Optimization:
        scaler = torch.amp.GradScaler(device.type, enabled=config.precision == "fp16")
        return cls(make_optimizer(trainee, config), scaler, config)

    def set_learning_rate(self, step: int, total: int) -> float:
        """The schedule's learning rate of ``step`` (1-based) of ``total``, set for the next step."""
        lr = learning_rate(step, self.config, total)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    @property
    def loss_scale(self) -> float:
        return self.scaler.get_scale() if self.scaler.is_enabled() else 1.0


class StepResult(NamedTuple):
    loss_sum: float  # this rank's summed loss
    units: float  # over every rank
    grad_norm: float
    skipped: bool  # the loss scaler skipped the step (an overflow in fp16)


def train_step(
    objective: nn.Module, micro_batches: Sequence[Tuple[torch.Tensor, ...]], optimization: Optimization, dist: Dist
) -> StepResult:
    """One optimizer step of ``objective`` (possibly DDP-wrapped) over ``micro_batches``: scale,
    backward (DDP syncs on the last micro-batch only), unscale, clip, step, update, zero_grad."""
    units_of = objective.module.units if isinstance(objective, nn.parallel.DistributedDataParallel) else objective.units
    units = dist.sum([float(sum(int(units_of(*batch)) for batch in micro_batches))])[0]
    loss_sum = torch.zeros((), dtype=torch.float64, device=micro_batches[0][0].device)
    config, scaler, optimizer = optimization.config, optimization.scaler, optimization.optimizer
    for i, batch in enumerate(micro_batches):
        last = i == len(micro_batches) - 1
        with objective.no_sync() if dist.enabled and not last else nullcontext():
            with autocast(batch[0].device, config.precision):
                loss = objective(*batch)
            # DDP averages gradients over ranks, hence the world size.
            scaler.scale(loss * (dist.world_size / max(units, 1.0))).backward()
        loss_sum += loss.detach()  # read once after the loop: no device sync per micro-batch
    scaler.unscale_(optimizer)
    clip = config.clip_norm if config.clip_norm > 0 else math.inf
    grad_norm = torch.nn.utils.clip_grad_norm_(objective.parameters(), clip)
    scale = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return StepResult(float(loss_sum), units, float(grad_norm), scaler.is_enabled() and scaler.get_scale() < scale)


@dataclass
class Training:
    """What a run trains: the objective (holding the model), its optimization, and whether the
    checkpoints hold the trainable weights alone (an adapter's: the frozen rest comes from where
    the run started)."""

    objective: nn.Module
    optimization: Optimization
    trainable_only: bool = False

    @property
    def model(self) -> nn.Module:
        return self.objective.model
