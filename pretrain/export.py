"""Hugging Face interop: a run's model as an ``XLMRobertaForMaskedLM`` folder (or, with a
fine-tuning head, ``XLMRobertaForSequenceClassification`` / ``XLMRobertaForTokenClassification``),
and an XLM-R checkpoint in any of these formats as this trainer's model.

The two layouts differ only in names and in two details: q, k and v are one fused matrix here,
and HF adds a token-type embedding (one type, so a constant vector), folded here into every
position embedding, which is exact.
"""

from __future__ import annotations

import json
import os
from typing import Dict, Optional, Sequence, Tuple

import torch
from safetensors.torch import load_file, save_file

from pretrain.model import PAD, ModelConfig
from tokenizer.hf import write_hf_tokenizer
from toolkit import storage

HF_WEIGHTS = "model.safetensors"
HF_TORCH_WEIGHTS = "pytorch_model.bin"

# (ours, HF's) for everything but the attention's q/k/v and the per-layer prefix.
_EMBEDDINGS = [
    ("embed_tokens.weight", "roberta.embeddings.word_embeddings.weight"),
    ("embed_positions.weight", "roberta.embeddings.position_embeddings.weight"),
    ("embed_norm.weight", "roberta.embeddings.LayerNorm.weight"),
    ("embed_norm.bias", "roberta.embeddings.LayerNorm.bias"),
]
_LM_HEAD = [
    ("head_dense.weight", "lm_head.dense.weight"),
    ("head_dense.bias", "lm_head.dense.bias"),
    ("head_norm.weight", "lm_head.layer_norm.weight"),
    ("head_norm.bias", "lm_head.layer_norm.bias"),
    ("head_bias", "lm_head.bias"),
]
_LAYER = [
    ("attention.out.weight", "attention.output.dense.weight"),
    ("attention.out.bias", "attention.output.dense.bias"),
    ("attention_norm.weight", "attention.output.LayerNorm.weight"),
    ("attention_norm.bias", "attention.output.LayerNorm.bias"),
    ("fc1.weight", "intermediate.dense.weight"),
    ("fc1.bias", "intermediate.dense.bias"),
    ("fc2.weight", "output.dense.weight"),
    ("fc2.bias", "output.dense.bias"),
    ("ffn_norm.weight", "output.LayerNorm.weight"),
    ("ffn_norm.bias", "output.LayerNorm.bias"),
]
_QKV = ("query", "key", "value")


# HF's classifier of each head kind (model.HEAD_KINDS): (our name under the head, HF's name).
_HF_HEADS = {
    "sentence": (
        "XLMRobertaForSequenceClassification",
        [(f"{layer}.{p}", f"classifier.{layer}.{p}") for layer in ("dense", "out_proj") for p in ("weight", "bias")],
    ),
    "tokens": ("XLMRobertaForTokenClassification", [(f"out_proj.{p}", f"classifier.{p}") for p in ("weight", "bias")]),
}
HF_HEAD_NAME = "classifier"  # the name an imported HF classifier gets among the model's heads


def _pairs(layers: int, lm_head: bool = True):
    yield from _EMBEDDINGS
    if lm_head:
        yield from _LM_HEAD
    for i in range(layers):
        for ours, theirs in _LAYER:
            yield f"layers.{i}.{ours}", f"roberta.encoder.layer.{i}.{theirs}"


def hf_config(config: ModelConfig, head_kind: Optional[str] = None, labels: Sequence[str] = ()) -> Dict:
    """config.json of the masked LM, or of the classifier of ``head_kind`` with ``labels`` in order."""
    classifier = {}
    if head_kind:
        classifier = {
            "id2label": {str(i): label for i, label in enumerate(labels)},
            "label2id": {label: i for i, label in enumerate(labels)},
            "classifier_dropout": None,  # HF then uses hidden_dropout_prob, as this model's heads
        }
    return {
        **classifier,
        "architectures": [_HF_HEADS[head_kind][0] if head_kind else "XLMRobertaForMaskedLM"],
        "model_type": "xlm-roberta",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden,
        "num_hidden_layers": config.layers,
        "num_attention_heads": config.heads,
        "intermediate_size": config.ffn,
        "hidden_act": "gelu",
        "hidden_dropout_prob": config.dropout,
        "attention_probs_dropout_prob": config.attention_dropout,
        "max_position_embeddings": config.max_positions,
        "type_vocab_size": 1,
        "initializer_range": config.init_std,
        "layer_norm_eps": config.layer_norm_eps,
        "pad_token_id": PAD,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "tie_word_embeddings": True,
    }


def to_hf(
    state: Dict[str, torch.Tensor], config: ModelConfig, head: Optional[Tuple[str, str]] = None
) -> Dict[str, torch.Tensor]:
    """This model's state dict in ``XLMRobertaForMaskedLM``'s names (the decoder's weight and bias
    are tied to the embeddings and ``lm_head.bias``, so omitted as ``save_pretrained`` does); with
    ``head`` (name, kind), the encoder and that head in the classifier's names, no LM head."""
    out = {theirs: state[ours] for ours, theirs in _pairs(config.layers, lm_head=head is None)}
    out["roberta.embeddings.token_type_embeddings.weight"] = torch.zeros(
        1, config.hidden, dtype=state["head_bias"].dtype
    )
    for i in range(config.layers):
        weight, bias = state[f"layers.{i}.attention.qkv.weight"], state[f"layers.{i}.attention.qkv.bias"]
        for name, w, b in zip(_QKV, weight.chunk(3), bias.chunk(3)):
            out[f"roberta.encoder.layer.{i}.attention.self.{name}.weight"] = w
            out[f"roberta.encoder.layer.{i}.attention.self.{name}.bias"] = b
    if head is not None:
        name, kind = head
        for ours, theirs in _HF_HEADS[kind][1]:
            out[theirs] = state[f"classification_heads.{name}.{ours}"]
    return {name: tensor.detach().clone() for name, tensor in out.items()}  # safetensors wants unshared storage


def from_hf(state: Dict[str, torch.Tensor], config: ModelConfig) -> Dict[str, torch.Tensor]:
    """An ``XLMRobertaForMaskedLM`` (or ``XLMRobertaModel``-prefixed, or classifier) state dict in
    this model's names; a classifier comes as the head ``HF_HEAD_NAME``, without an LM head."""
    state = {
        name if not name.startswith(("embeddings.", "encoder.")) else f"roberta.{name}": t for name, t in state.items()
    }
    kind = next(
        (k for k, (_, pairs) in _HF_HEADS.items() if all(theirs in state for _, theirs in pairs)), None
    )  # sentence first
    lm_head = not kind or any(name.startswith("lm_head.") for name in state)  # a classifier has none
    missing = [theirs for _, theirs in _pairs(config.layers, lm_head) if theirs not in state]
    if missing:
        raise ValueError(f"not an XLM-R checkpoint: missing {', '.join(missing[:5])}")
    out = {ours: state[theirs] for ours, theirs in _pairs(config.layers, lm_head)}
    token_type = state.get("roberta.embeddings.token_type_embeddings.weight")
    if token_type is not None:  # constant with one token type: fold it into the positions
        out["embed_positions.weight"] = out["embed_positions.weight"] + token_type[0]
    for i in range(config.layers):
        prefix = f"roberta.encoder.layer.{i}.attention.self"
        out[f"layers.{i}.attention.qkv.weight"] = torch.cat([state[f"{prefix}.{n}.weight"] for n in _QKV])
        out[f"layers.{i}.attention.qkv.bias"] = torch.cat([state[f"{prefix}.{n}.bias"] for n in _QKV])
    if kind:
        for ours, theirs in _HF_HEADS[kind][1]:
            out[f"classification_heads.{HF_HEAD_NAME}.{ours}"] = state[theirs]
    return {name: tensor.float().contiguous() for name, tensor in out.items()}


def config_from_hf(hf: Dict) -> ModelConfig:
    if hf.get("model_type") not in ("xlm-roberta", "roberta"):
        raise ValueError(f"model_type {hf.get('model_type')!r} is not an XLM-R / RoBERTa encoder")
    if hf.get("hidden_act", "gelu") != "gelu" or hf.get("pad_token_id", PAD) != PAD:
        raise ValueError("only XLM-R's GELU activation and padding id 1 are supported")
    return ModelConfig(
        vocab_size=hf["vocab_size"],
        layers=hf["num_hidden_layers"],
        hidden=hf["hidden_size"],
        heads=hf["num_attention_heads"],
        ffn=hf["intermediate_size"],
        max_positions=hf["max_position_embeddings"],
        dropout=hf.get("hidden_dropout_prob", 0.1),
        attention_dropout=hf.get("attention_probs_dropout_prob", 0.1),
        layer_norm_eps=hf.get("layer_norm_eps", 1e-5),
        init_std=hf.get("initializer_range", 0.02),
    )


def load_hf(hf_dir: str) -> Tuple[ModelConfig, Dict[str, torch.Tensor]]:
    """(config, state dict in this model's names) of an HF XLM-R folder (safetensors or .bin)."""
    with open(os.path.join(hf_dir, "config.json")) as handle:
        config = config_from_hf(json.load(handle))
    return config, from_hf(read_weights(hf_dir, HF_WEIGHTS, HF_TORCH_WEIGHTS), config)


def read_weights(folder: str, safetensors_name: str, torch_name: str) -> Dict[str, torch.Tensor]:
    """The tensors of ``folder``'s safetensors file, else of its torch file (tensors only)."""
    if os.path.exists(os.path.join(folder, safetensors_name)):
        return load_file(os.path.join(folder, safetensors_name))
    if os.path.exists(os.path.join(folder, torch_name)):
        return torch.load(os.path.join(folder, torch_name), map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"{folder}: no {safetensors_name} or {torch_name}")


def export_hf(
    state: Dict[str, torch.Tensor],
    config: ModelConfig,
    sentencepiece_model: str,
    out_dir: str,
    head: Optional[Tuple[str, str]] = None,
    labels: Sequence[str] = (),
) -> None:
    """Write an ``XLMRobertaForMaskedLM`` folder (with ``head`` (name, kind) and its ``labels``,
    the classifier's): config.json, model.safetensors, tokenizer files. Written beside, then
    renamed into place."""
    if head is not None and len(labels) != state[f"classification_heads.{head[0]}.out_proj.weight"].shape[0]:
        raise ValueError(
            f"head {head[0]!r} has {state[f'classification_heads.{head[0]}.out_proj.weight'].shape[0]} classes, got {len(labels)} labels"
        )
    with storage.atomic_path(out_dir.rstrip("/")) as tmp:
        os.makedirs(tmp)
        storage.write_json(os.path.join(tmp, "config.json"), hf_config(config, head[1] if head else None, labels))
        save_file(to_hf(state, config, head), os.path.join(tmp, HF_WEIGHTS), metadata={"format": "pt"})
        write_hf_tokenizer(sentencepiece_model, tmp, model_max_length=config.max_tokens)
