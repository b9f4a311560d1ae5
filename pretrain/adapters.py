"""MAD-X adapters (Pfeiffer et al. 2020) as AdapterHub's ``adapters`` library builds them. No I/O.

A bottleneck adapter sits after each layer's feed-forward block where AdapterHub's ``seq_bn``
config puts it: with h the block's output and x its input, the adapter reads LN(h + x) (the
layer's own, frozen LayerNorm), adds up(act(down(.))) to h, and the layer ends with LN(h' + x). A
stack (language adapter, then task adapter) repeats that step per adapter, in order. The
invertible NICE coupling block of ``seq_bn_inv`` transforms the embedding output and is inverted
before the vocabulary projection; only the first adapter of the active stack uses its own, as in
AdapterHub. Module names follow AdapterHub's so that the weights map one to one
(``adapter_down.0``, ``adapter_up``, ``F.0``, ``F.2``, ``G.0``, ``G.2``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Mapping, Tuple

import torch
from torch import nn

from toolkit.cli import build_config, flag

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "swish": nn.SiLU, "silu": nn.SiLU}


@dataclass(frozen=True)
class AdapterConfig:
    reduction_factor: float = 16.0  # hidden size / bottleneck size: MAD-X uses 2 for language, 16 for task adapters
    non_linearity: str = field(
        default="relu", metadata=flag(choices=tuple(ACTIVATIONS))
    )  # the bottleneck's activation (and the invertible block's)
    invertible: bool = False  # a NICE block on the embeddings, inverted before the LM head (language adapters)
    invertible_reduction_factor: float = 2.0  # inside the NICE block's two subnetworks
    dropout: float = field(
        default=0.0, metadata=flag("--adapter-dropout")
    )  # on the adapter's output, before the residual
    leave_out: Tuple[int, ...] = ()  # layers (from 0) without an adapter

    def __post_init__(self):
        if self.non_linearity not in ACTIVATIONS:
            raise ValueError(f"non_linearity must be one of {', '.join(ACTIVATIONS)}, got {self.non_linearity!r}")
        if self.reduction_factor <= 0 or self.invertible_reduction_factor <= 0:
            raise ValueError("reduction factors must be > 0")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        object.__setattr__(self, "leave_out", tuple(sorted(set(self.leave_out))))

    def bottleneck(self, hidden: int) -> int:
        return max(1, int(hidden // self.reduction_factor))  # AdapterHub's down_sample

    def to_dict(self) -> dict:
        return asdict(self)


ADAPTER_PRESETS = {
    "language": dict(reduction_factor=2.0, invertible=True),  # MAD-X language adapter: seq_bn_inv, factor 2
    "task": dict(reduction_factor=16.0),  # MAD-X task adapter: seq_bn, factor 16
}


def adapter_config(preset: str, *layers: Mapping) -> AdapterConfig:
    """The preset, then ``layers`` (a saved config, the flags given)."""
    if preset not in ADAPTER_PRESETS:
        raise ValueError(f"unknown adapter preset {preset!r}; choose from {', '.join(ADAPTER_PRESETS)}")
    return build_config(AdapterConfig, ADAPTER_PRESETS[preset], *layers)


def init_bert(module: nn.Module) -> None:
    """AdapterHub's ``init_weights="bert"``: N(0, 0.02) weights, zero biases."""
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)
        nn.init.zeros_(module.bias)


class BottleneckAdapter(nn.Module):
    def __init__(self, hidden: int, config: AdapterConfig):
        super().__init__()
        bottleneck = config.bottleneck(hidden)
        self.adapter_down = nn.Sequential(nn.Linear(hidden, bottleneck), ACTIVATIONS[config.non_linearity]())
        self.adapter_up = nn.Linear(bottleneck, hidden)
        self.dropout = nn.Dropout(config.dropout)
        self.apply(init_bert)

    def forward(self, normed: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.adapter_up(self.adapter_down(normed))) + residual


def _subnet(inputs: int, outputs: int, config: AdapterConfig) -> nn.Sequential:
    inner = int(inputs // config.invertible_reduction_factor)
    return nn.Sequential(nn.Linear(inputs, inner), ACTIVATIONS[config.non_linearity](), nn.Linear(inner, outputs))


class NICECoupling(nn.Module):
    """x = [x1, x2] -> y1 = x1 + F(x2), y2 = x2 + G(y1); exactly invertible."""

    def __init__(self, hidden: int, config: AdapterConfig):
        super().__init__()
        self.split = hidden // 2
        self.F = _subnet(hidden - self.split, self.split, config)
        self.G = _subnet(self.split, hidden - self.split, config)
        self.apply(init_bert)

    def forward(self, x: torch.Tensor, inverse: bool = False) -> torch.Tensor:
        x1, x2 = x[..., : self.split], x[..., self.split :]
        if not inverse:
            y1 = x1 + self.F(x2)
            return torch.cat((y1, x2 + self.G(y1)), -1)
        y2 = x2 - self.G(x1)
        return torch.cat((x1 - self.F(y2), y2), -1)
