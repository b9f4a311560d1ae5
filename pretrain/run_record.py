"""A run on the packed blocks as its run folder's config.json records it (``PretrainingRun``):
how it trains (``TrainConfig`` and its presets), the model, the data, and where a train-adapter or
distill run started (``AdapterStart``, ``DistillStart``). Read back typed, so that a resumed or
plotted run sees what it ran with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from pretrain.adapters import AdapterConfig
from pretrain.distill import DistillConfig
from pretrain.model import MODEL_PRESETS, ModelConfig
from pretrain.optim import OptimConfig
from sampling import MixtureConfig
from toolkit.cli import build_config, flag


@dataclass(frozen=True)
class TrainConfig(OptimConfig):
    model: str = field(
        default="tiny", metadata=flag(choices=tuple(MODEL_PRESETS))
    )  # model preset (model.MODEL_PRESETS): tiny | base | large, or a student shape (mini, small)
    batch_size: int = 8  # blocks per micro-batch per process
    grad_accum: int = 1  # micro-batches per optimizer step
    warmup_steps: int = 30  # linear warm-up from 0 over this many steps
    total_steps: int = 300  # length of the schedule: polynomial decay to end_lr at this step
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
        super().__post_init__()
        if self.model not in MODEL_PRESETS:
            raise ValueError(f"model must be one of {', '.join(MODEL_PRESETS)}, got {self.model!r}")
        for name in ("batch_size", "grad_accum", "total_steps", "log_interval"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("eval_interval", "eval_blocks", "save_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.warmup(self.total_steps) > self.total_steps:
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
        return self.stop_step(self.total_steps)


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


@dataclass(frozen=True)
class AdapterStart:
    """Where a train-adapter run started: the frozen encoder, the language, the adapter."""

    init: str
    language: str
    name: str
    config: AdapterConfig


@dataclass(frozen=True)
class DistillStart:
    """Where a distill run started: the teacher and the losses."""

    teacher: str
    config: DistillConfig


@dataclass(frozen=True)
class PretrainingRun:
    """The record (config.json) of a run on the packed blocks: pretraining, a MAD-X language
    adapter (``adapter``) or general distillation (``distill``)."""

    train: TrainConfig
    model: ModelConfig
    data: str  # the packed DATA folder
    init_from_hf: Optional[str] = None  # pretraining continued from a Hugging Face folder
    adapter: Optional[AdapterStart] = None
    distill: Optional[DistillStart] = None
