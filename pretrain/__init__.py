"""Compact MLM trainer for XLM-R encoders: ``python -m pretrain train | train-adapter | distill |
finetune | evaluate | export-hf | plot`` and ``from pretrain import from_pretrained`` (fairseq's
hub interface on a trained run)."""

from pretrain.hub import XLMRHub, from_pretrained

__all__ = ["XLMRHub", "from_pretrained"]
