"""MAD-X language adapters: masked-LM training on one language's packed blocks with the encoder
frozen, only the adapter's parameters in the optimizer and in the checkpoints.

The loop is pretraining's (``train.mlm_loop``: schedule, precision, DDP, held-out loss, exact
resume); the encoder comes from a pretraining run, a checkpoint or a Hugging Face folder. RUN holds
config.json, metrics.csv, tensorboard/, checkpoints/ (the adapter's weights) and ``adapter/``:
the trained adapter as an AdapterHub folder (``pretrain.adapter_files``).
"""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Dict, Optional

import torch

from pretrain import checkpoint
from pretrain.adapter_files import RUN_ADAPTER_DIR, save_adapter
from pretrain.adapters import AdapterConfig
from pretrain.data import read_manifest
from pretrain.dist import setup, teardown
from pretrain.hub import load_model
from pretrain.model import XLMRModel
from pretrain.train import TrainConfig, check_data_fits, run_on_blocks


def base_with_adapter(init: str, name: str, config: AdapterConfig) -> XLMRModel:
    """The encoder of ``init`` with a new adapter ``name``, the only part left to train, active."""
    model, _ = load_model(init)
    model.add_adapter(name, config)
    model.train_only_adapter(name)
    model.set_active_adapters(name)
    return model


def train_adapter(
    config: TrainConfig,
    adapter: AdapterConfig,
    init: str,
    data_dir: str,
    language: str,
    run_dir: str,
    name: Optional[str] = None,
    resume: bool = False,
    device: str = "auto",
) -> Dict:
    """Train (or resume) adapter ``name`` (default: the language code) on ``language``'s blocks;
    returns the last training and evaluation figures."""
    manifest = read_manifest(data_dir)
    resume_from = checkpoint.resume_point(run_dir, resume)
    name = name or language
    dist = setup(device)
    try:
        torch.manual_seed(config.seed)
        model = base_with_adapter(init, name, adapter)
        check_data_fits(manifest, model.config)
        model.to(dist.device)
        about = {"adapter": {"init": init, "language": language, "name": name, "config": asdict(adapter)}}
        last = run_on_blocks(model, config, dist, data_dir, run_dir, manifest, resume_from, about, [language], True)
        if dist.is_main:
            save_adapter(model, name, os.path.join(run_dir, RUN_ADAPTER_DIR), {"language": language})
            print(f"wrote {os.path.join(run_dir, RUN_ADAPTER_DIR)} (adapter {name!r}, {language})", flush=True)
        return last
    finally:
        teardown()
