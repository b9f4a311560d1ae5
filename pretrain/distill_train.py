"""General distillation (TinyBERT's first stage): a student learns a pretrained teacher on the
packed blocks, masked as pretraining masks them.

The student has a model preset's shape (``TrainConfig.model``: ``--student-config``) with the
teacher's vocabulary, heads (attention scores are compared per head) and positions. The loop is
pretraining's (``train.run_on_blocks`` with ``distill.Distiller`` as the objective: schedule,
precision, DDP, the student's held-out MLM loss, exact resume); checkpoints hold the student as
``model.safetensors`` and the projection in ``objective.safetensors``. RUN is a pretraining run
folder, so export-hf, finetune, evaluate and train-adapter read the student as any other model.
Task distillation, the second stage, is ``finetune`` with a teacher (``python -m pretrain
distill-task``).
"""

from __future__ import annotations

import os
from typing import Dict

import torch

from pretrain import checkpoint
from pretrain.distill import DistillConfig, Distiller
from pretrain.hub import load_model
from pretrain.model import ModelConfig, XLMRModel, model_config
from pretrain.run_dir import run_session
from pretrain.run_record import DistillStart, PretrainingRun, TrainConfig
from pretrain.train import check_data_fits, run_on_blocks
from tokenizer.pack import PackedData


def student_config(preset: str, teacher: ModelConfig, dropout: float) -> ModelConfig:
    """``preset``'s layers, width and feed-forward size with the teacher's vocabulary, heads,
    positions and family (BERT's token types and positions)."""
    try:
        return model_config(
            preset,
            teacher.vocab_size,
            heads=teacher.heads,
            max_positions=teacher.max_positions,
            family=teacher.family,
            pad_id=teacher.pad_id,
            type_vocab_size=teacher.type_vocab_size,
            dropout=dropout,
            attention_dropout=dropout,
        )
    except ValueError as error:
        raise ValueError(f"student {preset!r} with the teacher's {teacher.heads} heads: {error}") from None


def distill(
    config: TrainConfig,
    losses: DistillConfig,
    teacher: str,
    data_dir: str,
    out: str,
    resume: bool = False,
    device: str = "auto",
) -> Dict:
    """Distill (or resume distilling) ``teacher`` (a run, a checkpoint or an HF folder) into a
    ``config.model`` student in ``out``; returns the last training and evaluation figures."""
    data = PackedData.open(data_dir)
    with run_session(out, resume, device) as (run, resume_from, dist):
        teacher_model, _ = load_model(teacher, masked_lm=True)
        check_data_fits(data.manifest, teacher_model.config)
        if resume_from:  # the checkpoint's student, whatever the flags say
            student_cfg = checkpoint.read_state(resume_from).model
        else:
            student_cfg = student_config(config.model, teacher_model.config, config.dropout)
        torch.manual_seed(config.seed)
        distiller = Distiller(teacher_model, XLMRModel(student_cfg), losses).to(dist.device)
        if dist.is_main:
            print(
                f"distilling {teacher} ({teacher_model.config.layers} layers x {teacher_model.config.hidden}, "
                f"{teacher_model.num_parameters():,} parameters): student layer m learns teacher layer {distiller.step}m",
                flush=True,
            )
        start = DistillStart(teacher, losses)
        record = PretrainingRun(config, student_cfg, os.path.abspath(data_dir), distill=start)
        return run_on_blocks(distiller, record, data, run, dist, resume_from)
