"""Checkpoints: ``RUN/checkpoints/step_XXXXXXXX/`` (``RunDir.checkpoint``) holding the model
(safetensors), the optimizer (tensors only, loaded with ``weights_only=True``), the objective's
own weights when it has any (``objective.safetensors``: distillation's projection), ``state.json``
(step, loss scaler, counters, the run's config) and per rank the data stream's position
(``rank<r>.json``) and RNG states (``rank<r>.rng.pt``). A checkpoint is written under a temporary
name and renamed when complete, so a crash mid-save leaves the previous one as the latest.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from typing import Dict, Optional, Tuple

import torch
from safetensors.torch import load_file, save_file

from pretrain.dist import Dist
from pretrain.model import ModelConfig
from pretrain.optim import Training
from pretrain.run_dir import RunDir
from toolkit import storage
from toolkit.cli import from_dict

MODEL_FILE, OPTIMIZER_FILE, STATE_FILE = "model.safetensors", "optimizer.pt", "state.json"
OBJECTIVE_FILE = "objective.safetensors"


@dataclass(frozen=True)
class CheckpointState:
    """A checkpoint's ``state.json``: where its run stood. Pretraining (and train-adapter,
    distill) keeps ``skipped_steps`` and the data stream's ``epochs``, fine-tuning its ``best``
    dev result so far; what a kind of run does not keep stays None and out of the file."""

    step: int
    world_size: int  # the processes that wrote it: a run resumes with as many
    model: ModelConfig
    config: Dict  # the run's config, as its record saves it
    scaler: Dict  # the loss scaler's state (fp16)
    partial: bool = False  # the trainable weights only (adapters)
    skipped_steps: Optional[int] = None  # steps skipped on a non-finite loss
    epochs: Optional[Dict[str, int]] = None  # per language: epochs of the data stream begun
    best: Optional[Dict[str, float]] = None  # the best dev score, its epoch, epochs since it

    def to_json(self) -> Dict:
        return {name: value for name, value in asdict(self).items() if value is not None}

    @classmethod
    def from_dict(cls, data: Dict) -> CheckpointState:
        return from_dict(cls, data)


def rng_state(device: torch.device) -> Dict[str, torch.Tensor]:
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: Dict[str, torch.Tensor], device: torch.device) -> None:
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def save(
    run: RunDir,
    step: int,
    dist: Dist,
    training: Training,
    state: Dict,
    data_state: Dict,
    keep: int,
    with_optimizer: bool = True,
) -> str:
    """Write the checkpoint of ``step`` (every rank calls this) with ``state``, the fields of
    ``CheckpointState`` its kind of run keeps, and this rank's ``data_state``; keep the newest
    ``keep``. Without ``with_optimizer`` (a finished run
    that nothing resumes), the optimizer state, twice the model's size, is left out."""
    final = run.checkpoint(step)
    tmp = os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.tmp")
    if dist.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    dist.barrier()
    storage.write_json(os.path.join(tmp, f"rank{dist.rank}.json"), data_state)
    torch.save(rng_state(dist.device), os.path.join(tmp, f"rank{dist.rank}.rng.pt"))
    dist.barrier()
    if dist.is_main:
        model, optimization = training.model, training.optimization
        save_model(model, tmp, metadata={"step": str(step)}, trainable_only=training.trainable_only)
        own = objective_weights(training.objective)
        if own:
            save_file(own, os.path.join(tmp, OBJECTIVE_FILE))
        if with_optimizer:
            torch.save(optimization.optimizer.state_dict(), os.path.join(tmp, OPTIMIZER_FILE))
        run_state = CheckpointState.from_dict(
            {
                **state,
                "scaler": optimization.scaler.state_dict(),
                "step": step,
                "world_size": dist.world_size,
                "partial": training.trainable_only,
            }
        )
        storage.write_json(os.path.join(tmp, STATE_FILE), run_state.to_json())
        storage.publish(tmp, final)  # the same step saved again (a rerun) is replaced
        run.prune(keep)
    dist.barrier()
    return final


def save_model(
    model: torch.nn.Module,
    folder: str,
    metadata: Optional[Dict[str, str]] = None,
    trainable_only: bool = False,
) -> None:
    """The model's weights (those that train, with ``trainable_only``) as ``folder/model.safetensors``."""
    weights = model.state_dict()
    kept = trainable_names(model) if trainable_only else weights
    tensors = {name: tensor.detach().cpu().contiguous() for name, tensor in weights.items() if name in kept}
    save_file(tensors, os.path.join(folder, MODEL_FILE), metadata=metadata)


def objective_weights(objective: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """The weights of ``objective`` that are not its model's (objectives hold their model as
    ``.model``)."""
    return {
        name: tensor.detach().cpu().contiguous()
        for name, tensor in objective.state_dict().items()
        if not name.startswith("model.")
    }


def trainable_names(model: torch.nn.Module) -> set:
    return {name for name, parameter in model.named_parameters() if parameter.requires_grad}


def read_state(path: str) -> CheckpointState:
    return CheckpointState.from_dict(storage.read_json(os.path.join(path, STATE_FILE)))


def load_model(path: str) -> Dict[str, torch.Tensor]:
    return load_file(os.path.join(path, MODEL_FILE))


def load(path: str, dist: Dist, training: Training) -> Tuple[CheckpointState, Dict]:
    """Restore the model, the objective's own weights, the optimizer (when the checkpoint kept
    it), the loss scaler and this rank's RNG; returns the checkpoint's state and this rank's
    data-stream state."""
    state = read_state(path)
    if state.world_size != dist.world_size:
        raise ValueError(
            f"{path} was written by {state.world_size} processes; resume with as many (got {dist.world_size})"
        )
    model, objective, optimization = training.model, training.objective, training.optimization
    if state.partial:  # the trained weights only: every trainable one, nothing unknown
        missing, unexpected = model.load_state_dict(load_model(path), strict=False)
        trainable = trainable_names(model)
        if unexpected or trainable & set(missing):
            raise ValueError(
                f"{path} does not fit the model: missing {sorted(trainable & set(missing))[:3]}, unexpected {unexpected[:3]}"
            )
    else:
        model.load_state_dict(load_model(path))
    if objective_weights(objective):
        if not os.path.exists(os.path.join(path, OBJECTIVE_FILE)):
            raise ValueError(f"{path} holds no {OBJECTIVE_FILE}: it was not written by this kind of run")
        objective.load_state_dict({**objective.state_dict(), **load_file(os.path.join(path, OBJECTIVE_FILE))})
    if os.path.exists(os.path.join(path, OPTIMIZER_FILE)):  # a finished run's last checkpoint has none
        optimization.optimizer.load_state_dict(
            torch.load(os.path.join(path, OPTIMIZER_FILE), map_location=dist.device, weights_only=True)
        )
    if optimization.scaler.is_enabled():
        optimization.scaler.load_state_dict(state.scaler)
    set_rng_state(torch.load(os.path.join(path, f"rank{dist.rank}.rng.pt"), weights_only=True), dist.device)
    with open(os.path.join(path, f"rank{dist.rank}.json")) as handle:
        return state, json.load(handle)
