"""make bench-train: one MLM training step of this trainer against Hugging Face's, on the CPU.

For the same model (preset, vocabulary), the same batch of random ids and the same 15% BERT mask,
times one full optimizer step (forward, backward, gradient clipping, AdamW, zero_grad) of
  (a) pretrain.model.XLMRModel with pretrain.optim.train_step: the LM head runs only at the
      masked positions;
  (b) transformers' XLMRobertaForMaskedLM (SDPA attention) with its own loss: the LM head runs at
      every position, labels -100 where not masked;
both in fp32 with the preset's dropout and the preset's AdamW settings, (b) holding (a)'s initial
weights. Checks first, without dropout, that the two give the same loss and gradient, then times
the two in turns (one step of each per round) and prints the median step time of each, their
ratio (target >= 1.5), tokens/s, model FLOPs per token and the FLOP/s achieved.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys

import torch
import torch.nn.functional as F
from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

from bench.common import take_turns
from pretrain.data import FIRST_PIECE, masking_generator
from pretrain.dist import Dist
from pretrain.export import hf_config, to_hf
from pretrain.model import MODEL_PRESETS, ModelConfig, XLMRModel, model_config
from pretrain.optim import Optimization, make_optimizer, train_step
from pretrain.run_record import train_config
from pretrain.train import MaskedLM, masked_batch
from tokenizer.xlmr import BOS

HF_TIED = {"lm_head.decoder.weight", "lm_head.decoder.bias"}  # tied to the embeddings and lm_head.bias


def encoder_weights(config: ModelConfig) -> int:
    """N: the weights of the encoder layers' matrices (q, k, v, out, fc1, fc2); no embeddings."""
    return config.layers * (4 * config.hidden**2 + 2 * config.hidden * config.ffn)


def flops_per_token(config: ModelConfig, length: int, head_fraction: float) -> float:
    """Training FLOPs per token, PaLM-style (backward = 2 x forward): 6·N, 12·L·H·T for attention
    scores and values over T tokens, and 6·(H² + H·V) for the LM head (dense + decoder) at the
    fraction of tokens where it runs."""
    h = config.hidden
    return (
        6 * encoder_weights(config)
        + 12 * config.layers * h * length
        + 6 * (h * h + h * config.vocab_size) * head_fraction
    )


def describe_flops(config: ModelConfig, length: int) -> str:
    return (
        f"flops/token = 6·N + 12·L·H·T + 6·(H² + H·V)·f with N = L·(4H² + 2H·F) = {encoder_weights(config) / 1e6:.1f}M "
        f"encoder weights (embeddings excluded), L={config.layers} H={config.hidden} F={config.ffn} T={length} "
        f"V={config.vocab_size}, f = fraction of tokens through the LM head"
    )


def random_batch(config: ModelConfig, batch: int, length: int, seed: int):
    """(inputs, masked, targets, labels): random ordinary pieces after <s>, masked as the
    trainer masks (<mask> = the last id); labels are HF's targets, -100 where not masked."""
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(FIRST_PIECE, config.vocab_size - 1, (batch, length), generator=generator)
    tokens[:, 0] = BOS
    inputs, masked, targets = masked_batch(tokens, config.vocab_size - 1, masking_generator(seed, 0), 0.15)
    labels = torch.full_like(tokens, -100).masked_scatter(masked, targets)
    return inputs, masked, targets, labels


def hf_model(ours: XLMRModel) -> XLMRobertaForMaskedLM:
    config = ours.config
    model = XLMRobertaForMaskedLM(XLMRobertaConfig(**hf_config(config), attn_implementation="sdpa"))
    result = model.load_state_dict(to_hf(ours.state_dict(), config), strict=False)
    if set(result.missing_keys) - HF_TIED or result.unexpected_keys:
        raise RuntimeError(f"weights did not map onto the HF model: {result}")
    if model.lm_head.decoder.weight is not model.roberta.embeddings.word_embeddings.weight:
        raise RuntimeError("the HF decoder is not tied to the embeddings")
    return model


def hf_step(model, optimizer, inputs, labels, clip_norm: float) -> float:
    """The step a plain HF training loop takes, with train_step's clipping and loss.item()."""
    loss = model(input_ids=inputs, labels=labels).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def check_same(ours: XLMRModel, hf: XLMRobertaForMaskedLM, inputs, masked, targets, labels) -> tuple:
    """Both models' loss, and the largest gradient difference on the (tied) token embeddings
    relative to its largest entry, without dropout."""
    ours.eval()
    hf.eval()
    ours_loss = F.cross_entropy(ours(inputs, masked), targets)
    hf_loss = hf(input_ids=inputs, labels=labels).loss
    ours_loss.backward()
    hf_loss.backward()
    ours_grad, hf_grad = ours.embed_tokens.weight.grad, hf.roberta.embeddings.word_embeddings.weight.grad
    grad_diff = float((ours_grad - hf_grad).abs().max() / ours_grad.abs().max())
    for model in (ours, hf):
        model.zero_grad(set_to_none=True)
        model.train()
    return ours_loss.item(), hf_loss.item(), grad_diff


def time_steps(steps_of, steps: int) -> list:
    """Median seconds per call of each function in ``steps_of``, over ``steps`` rounds after
    one warm-up call each (which also allocates the optimizer state). The functions take turns
    within a round, so that whatever else loads the machine weighs on all of them alike."""
    for step in steps_of:
        step()
    return [statistics.median(seconds) for seconds in take_turns(steps_of, steps)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=list(MODEL_PRESETS), default="base", help="model (and AdamW) preset")
    parser.add_argument("--vocab", type=int, default=250_002)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--length", type=int, default=256, help="tokens per sequence")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per model, after one warm-up step")
    parser.add_argument(
        "--threads", type=int, default=len(os.sched_getaffinity(0)), help="torch threads (default: all cores)"
    )
    parser.add_argument("--quick", action="store_true", help="sanity run: preset tiny, vocabulary 30,000")
    args = parser.parse_args(argv)
    if args.quick:
        args.config, args.vocab = "tiny", 30_000
    torch.set_num_threads(args.threads)
    config = model_config(args.config, args.vocab)
    train_cfg = train_config(args.config, precision="fp32")
    inputs, masked, targets, labels = random_batch(config, args.batch, args.length, seed=0)
    tokens, n_masked = inputs.numel(), int(masked.sum())

    torch.manual_seed(0)
    ours = XLMRModel(config)
    hf = hf_model(ours)
    ours_loss, hf_loss, grad_diff = check_same(ours, hf, inputs, masked, targets, labels)
    print(
        f"model {args.config}, vocabulary {args.vocab:,}: {ours.num_parameters():,} parameters; batch {args.batch} x {args.length} "
        f"tokens, {n_masked} masked; fp32, dropout {config.dropout}, {args.threads} threads"
    )
    print(
        f"initial loss without dropout: ours {ours_loss:.6f}, HF {hf_loss:.6f} (|diff| {abs(ours_loss - hf_loss):.1e}); "
        f"embedding gradient max diff {grad_diff:.1e} of its largest entry"
    )
    if abs(ours_loss - hf_loss) > 1e-4:
        raise RuntimeError("the two models disagree: the comparison would not be of the same model")

    # The same AdamW for both (make_optimizer takes any module); it leaves the lr to the schedule.
    ours_opt, hf_opt = make_optimizer(ours, train_cfg), make_optimizer(hf, train_cfg)
    for group in ours_opt.param_groups + hf_opt.param_groups:
        group["lr"] = train_cfg.lr
    optimization = Optimization(ours_opt, torch.amp.GradScaler("cpu", enabled=False), train_cfg)
    ours_s, hf_s = time_steps(
        [
            lambda: train_step(MaskedLM(ours), [(inputs, masked, targets)], optimization, Dist()),
            lambda: hf_step(hf, hf_opt, inputs, labels, train_cfg.clip_norm),
        ],
        args.steps,
    )

    print(describe_flops(config, args.length))
    for name, seconds, fraction in (("ours", ours_s, n_masked / tokens), ("HF", hf_s, 1.0)):
        flops = flops_per_token(config, args.length, fraction)
        print(
            f"{name:>4}: {seconds:7.3f} s/step (median of {args.steps}) | {tokens / seconds:8,.0f} tokens/s | "
            f"f = {fraction:.3f}: {flops / 1e9:.3f} GFLOP/token | {flops * tokens / seconds / 1e9:6.1f} GFLOP/s"
        )
    print(
        f"speed-up: HF step / ours = {hf_s / ours_s:.2f}x (target >= 1.5x); "
        f"peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
