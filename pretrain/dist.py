"""Distributed setup for ``torchrun``: nccl on CUDA, gloo on CPU; one process is a world of one."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List

import torch
import torch.distributed as torch_dist


@dataclass
class Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def sum(self, values: List[float]) -> List[float]:
        """Element-wise sum over ranks (float64, so counts and loss sums stay exact)."""
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        if self.enabled:
            torch_dist.all_reduce(tensor)
        return tensor.tolist()

    def barrier(self) -> None:
        if self.enabled:
            torch_dist.barrier()


def setup(device: str = "auto") -> Dist:
    """Join the process group ``torchrun`` describes (RANK, WORLD_SIZE, LOCAL_RANK), if any.
    ``device``: auto (CUDA when present), cpu or cuda."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda, but torch sees no CUDA device")
    rank, world_size = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if device == "cuda":
        torch.cuda.set_device(local_rank)
        target = torch.device("cuda", local_rank)
    else:
        target = torch.device("cpu")
    if world_size > 1 and not torch_dist.is_initialized():
        torch_dist.init_process_group("nccl" if device == "cuda" else "gloo", rank=rank, world_size=world_size)
    return Dist(rank, world_size, local_rank, target)


def teardown() -> None:
    if torch_dist.is_initialized():
        torch_dist.destroy_process_group()
