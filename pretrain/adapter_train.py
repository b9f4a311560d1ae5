"""MAD-X language adapters: masked-LM training on one language's packed blocks with the encoder
frozen, only the adapter's parameters in the optimizer and in the checkpoints.

The loop is pretraining's (``train.run_on_blocks``: schedule, precision, DDP, held-out loss, exact
resume); the encoder comes from a pretraining run, a checkpoint or a Hugging Face folder. RUN holds
config.json, metrics.csv, tensorboard/, checkpoints/ (the adapter's weights) and ``adapter/``:
the trained adapter as an AdapterHub folder (``pretrain.adapter_files``).
"""

from __future__ import annotations

import os
from typing import Dict

import torch

from pretrain.adapter_files import RUN_ADAPTER_DIR, save_adapter
from pretrain.adapters import AdapterConfig
from pretrain.hub import load_model
from pretrain.model import XLMRModel
from pretrain.run_dir import run_session
from pretrain.run_record import AdapterStart, PretrainingRun, TrainConfig
from pretrain.train import MaskedLM, check_data_fits, run_on_blocks
from tokenizer.pack import PackedData


def base_with_adapter(init: str, name: str, config: AdapterConfig) -> XLMRModel:
    """The encoder of ``init`` with a new adapter ``name``, the only part left to train, active."""
    model, _ = load_model(init, masked_lm=True)
    model.add_adapter(name, config)
    model.train_only_adapter(name)
    model.set_active_adapters(name)
    return model


def train_adapter(
    config: TrainConfig,
    start: AdapterStart,
    data_dir: str,
    out: str,
    resume: bool = False,
    device: str = "auto",
) -> Dict:
    """Train (or resume) the adapter ``start`` describes on its language's blocks; returns the
    last training and evaluation figures."""
    data = PackedData.open(data_dir)
    with run_session(out, resume, device) as (run, resume_from, dist):
        torch.manual_seed(config.seed)
        model = base_with_adapter(start.init, start.name, start.config)
        check_data_fits(data.manifest, model.config)
        record = PretrainingRun(config, model.config, os.path.abspath(data_dir), adapter=start)
        last = run_on_blocks(MaskedLM(model.to(dist.device)), record, data, run, dist, resume_from)
        if dist.is_main:
            save_adapter(model, start.name, run.join(RUN_ADAPTER_DIR), {"language": start.language})
            print(f"wrote {run.join(RUN_ADAPTER_DIR)} (adapter {start.name!r}, {start.language})", flush=True)
        return last
