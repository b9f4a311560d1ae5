"""Pretraining: masked-LM training on the packed blocks, and the loop that train-adapter and
distill share (``run_on_blocks``): the one ``optim.train_step`` over an objective (``MaskedLM``,
``distill.Distiller``), gradient accumulation, DDP, periodic held-out evaluation, the metrics log
and checkpoints in a ``RunDir``.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from pretrain import checkpoint
from pretrain.data import BlockStream, collate, heldout_blocks, mask_tokens, masking_generator
from pretrain.dist import Dist
from pretrain.export import load_hf
from pretrain.model import PAD, ModelConfig, XLMRModel, model_config
from pretrain.optim import Optimization, Training, autocast, train_step
from pretrain.run_dir import MetricsLog, RunDir, run_session
from pretrain.run_record import PretrainingRun, TrainConfig
from tokenizer.pack import PackedData, PackedManifest, sentencepiece_file

EVAL_KEY = 2**31 - 1  # masking-generator key of evaluation batches, apart from any step number
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


class MaskedLM(torch.nn.Module):
    """Pretraining's objective (``optim``): the cross-entropy at the masked positions, summed."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor, masked: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.model(inputs, masked).float(), targets, reduction="sum")

    def units(self, inputs: torch.Tensor, masked: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return masked.sum()


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


def train(
    config: TrainConfig,
    data_dir: str,
    out: str,
    resume: bool = False,
    init_from_hf: Optional[str] = None,
    device: str = "auto",
) -> Dict:
    """Train (or resume) a run; returns the last training and evaluation figures."""
    data = PackedData.open(data_dir)
    with run_session(out, resume, device) as (run, resume_from, dist):
        model = pretraining_model(config, data.manifest, resume_from, init_from_hf)
        record = PretrainingRun(config, model.config, os.path.abspath(data_dir), init_from_hf)
        return run_on_blocks(MaskedLM(model.to(dist.device)), record, data, run, dist, resume_from)


def pretraining_model(
    config: TrainConfig, manifest: PackedManifest, resume_from: Optional[str], init_from_hf: Optional[str]
) -> XLMRModel:
    """The model a pretraining run trains, seeded: the checkpoint's architecture when it resumes
    (whatever preset or HF model it started from), an HF model's weights, or a fresh preset."""
    hf_state = None
    if resume_from:
        model_cfg = checkpoint.read_state(resume_from).model
    elif init_from_hf:
        model_cfg, hf_state = load_hf(init_from_hf)
    else:
        model_cfg = model_config(
            config.model, manifest.vocab_size, dropout=config.dropout, attention_dropout=config.dropout
        )
    check_data_fits(manifest, model_cfg)
    torch.manual_seed(config.seed)
    model = XLMRModel(model_cfg)
    if hf_state is not None:
        model.load_state_dict(hf_state)
    return model


def check_data_fits(manifest: PackedManifest, model_cfg: ModelConfig) -> None:
    """The blocks fit the model: its embedding holds every id of DATA's tokenizer (the one
    vocabulary rule: more rows are padding), it pads as the blocks do, and a block fits."""
    if model_cfg.vocab_size < manifest.vocab_size:
        raise ValueError(
            f"the model's embedding has {model_cfg.vocab_size} rows, DATA_DIR's tokenizer {manifest.tokenizer}"
            f" {manifest.vocab_size} ids: pack the data with the model's tokenizer"
        )
    if model_cfg.pad_id != PAD:
        raise ValueError(f"the model pads with id {model_cfg.pad_id}, the packed blocks with {PAD} (XLM-R's)")
    if manifest.tokens_per_sample > model_cfg.max_tokens:
        raise ValueError(f"blocks of {manifest.tokens_per_sample} tokens, the model holds {model_cfg.max_tokens}")


@dataclass
class Blocks:
    """What a run on the packed blocks reads: this rank's training stream, the held-out blocks,
    and the id of ``<mask>`` (the last of the blocks' tokenizer)."""

    stream: BlockStream
    heldout: Dict[str, List]
    mask_id: int


def run_on_blocks(
    objective: torch.nn.Module,
    record: PretrainingRun,
    data: PackedData,
    run: RunDir,
    dist: Dist,
    resume_from: Optional[str],
) -> Dict:
    """What pretraining, train-adapter and distill do once their objective (holding the model)
    is built and on the device: the optimizer (of the adapter's weights only, for an adapter),
    the blocks (of the adapter's language only), the checkpoint restored, the run folder written
    (``record``, the tokenizer) and ``mlm_loop``."""
    config, adapter = record.train, record.adapter
    training = Training(objective, Optimization.of(objective, config, dist.device), trainable_only=adapter is not None)
    blocks = training_blocks(data, config, dist, [adapter.language] if adapter else None)
    start = (0, 0)
    if resume_from:
        state, data_state = checkpoint.load(resume_from, dist, training)
        blocks.stream.load_state_dict(data_state)
        start = (state.step, state.skipped_steps)
    if dist.is_main:
        run.write_record(record)
        tokenizer = data.manifest.tokenizer
        if os.path.isdir(tokenizer):
            run.copy_tokenizer(sentencepiece_file(tokenizer), os.path.join(tokenizer, "dict.txt"))
    return mlm_loop(training, blocks, config, dist, run, start)


def training_blocks(data: PackedData, config: TrainConfig, dist: Dist, languages: Optional[Sequence[str]]) -> Blocks:
    stream = BlockStream(data, config.sampling, config.seed, dist.rank, dist.world_size, config.eval_blocks, languages)
    heldout = heldout_blocks(data, config.eval_blocks, languages) if config.eval_blocks else {}
    torch.manual_seed(config.seed + dist.rank)  # dropout differs across ranks
    return Blocks(stream, heldout, data.manifest.vocab_size - 1)


def mlm_loop(
    training: Training, blocks: Blocks, config: TrainConfig, dist: Dist, run: RunDir, start: Tuple[int, int]
) -> Dict:
    """Training on masked blocks from ``start`` (step, skipped steps) to the config's last step:
    logs, held-out MLM evaluations and checkpoints. Returns the last figures."""
    model, objective, optimization = training.model, training.objective, training.optimization
    model_cfg, mask_id = model.config, blocks.mask_id
    stream, (step, skipped) = blocks.stream, start
    cross_entropy = isinstance(objective, MaskedLM)  # a training loss that has a perplexity
    log = MetricsLog(run, step, dist.is_main, METRIC_FIELDS)
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
        lr = optimization.set_learning_rate(step + 1, config.total_steps)
        micro_batches = []
        for micro in range(config.grad_accum):
            tokens = stream.next_batch(config.batch_size)[0]
            window_tokens += int(tokens.ne(PAD).sum())
            batch = masked_batch(
                tokens, mask_id, masking_generator(config.seed, step, dist.rank, micro), config.mask_prob
            )
            micro_batches.append(tuple(t.to(dist.device, non_blocking=True) for t in batch))
        result = train_step(ddp, micro_batches, optimization, dist)
        step += 1
        skipped += result.skipped
        window_loss, window_count = window_loss + result.loss_sum, window_count + result.units
        if step % config.log_interval == 0 or step == config.last_step:
            total_loss, total_tokens = dist.sum([window_loss, window_tokens])
            elapsed = time.perf_counter() - window_start
            loss = total_loss / max(window_count, 1.0)
            train_perplexity = {"perplexity": math.exp(min(loss, 50.0))} if cross_entropy else {}
            last["train"] = dict(
                loss=loss,
                **train_perplexity,
                lr=lr,
                grad_norm=result.grad_norm,
                loss_scale=optimization.loss_scale,
                skipped_steps=skipped,
                tokens_per_s=total_tokens / elapsed,
            )
            log.write(step, "train", **last["train"])
            if dist.is_main:
                print(
                    f"step {step:>7}/{config.last_step} | loss {loss:7.4f} | "
                    + (f"ppl {train_perplexity['perplexity']:10.2f} | " if cross_entropy else "")
                    + f"lr {lr:.2e} "
                    f"| grad norm {result.grad_norm:7.3f} | {total_tokens / elapsed:9,.0f} tok/s"
                    + (f" | skipped {skipped}" if skipped else ""),
                    flush=True,
                )
            window_loss = window_count = window_tokens = 0.0
            window_start = time.perf_counter()
        if blocks.heldout and ((config.eval_interval and step % config.eval_interval == 0) or step == config.last_step):
            last["eval"] = evaluate(model, blocks.heldout, config, dist, mask_id)
            for language, (loss, perplexity) in last["eval"].items():
                log.write(step, "eval", language, loss=loss, perplexity=perplexity)
            if dist.is_main:
                print(
                    f"step {step:>7} | held-out loss "
                    + ", ".join(f"{lang} {loss:.3f}" for lang, (loss, _) in last["eval"].items()),
                    flush=True,
                )
        if (config.save_interval and step % config.save_interval == 0) or step == config.last_step:
            state = {
                "skipped_steps": skipped,
                "config": asdict(config),
                "model": model_cfg.to_dict(),
                "epochs": stream.epochs,
            }
            checkpoint.save(run, step, dist, training, state, stream.state_dict(), config.keep_checkpoints)
    log.close()
    return last
