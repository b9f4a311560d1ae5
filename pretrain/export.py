"""Hugging Face interop, both ways, for the encoder families people fine-tune: XLM-R and RoBERTa
(``XLMRobertaForMaskedLM``, ``XLMRobertaModel``, their sequence and token classifiers) and BERT
(``BertForMaskedLM``, ``BertModel``, ``BertForSequenceClassification``,
``BertForTokenClassification``). A folder comes in as this trainer's model, with its LM head when
it has one; a run goes out in the family and form it came in.

The layouts differ only in names and in a few details: q, k and v are one fused matrix here;
RoBERTa's single token type is a constant vector, folded here into every position embedding
(exact), while BERT keeps its token-type embeddings; BERT's sentence classifier is its pooler
(dense -> tanh on the first token) and a linear layer, which is this model's sentence head.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Dict, Optional, Sequence, Tuple

import torch
from safetensors.torch import load_file, save_file

from pretrain.model import ModelConfig
from tokenizer.hf import TOKENIZER_JSON, open_tokenizer, tokenizer_file, write_hf_tokenizer
from toolkit import storage

HF_WEIGHTS = "model.safetensors"
HF_TORCH_WEIGHTS = "pytorch_model.bin"
HF_HEAD_NAME = "classifier"  # the name an imported HF classifier gets among the model's heads
_QKV = ("query", "key", "value")
# ModelConfig's fields under their names in a Hugging Face config.json: written (hf_config) and read
# (config_from_hf) by this one table. The shape is always there; a field HF leaves out takes its
# default (BERT's layer_norm_eps differs from ModelConfig's: config_from_hf says so).
HF_KEYS = {
    "vocab_size": "vocab_size",
    "hidden": "hidden_size",
    "layers": "num_hidden_layers",
    "heads": "num_attention_heads",
    "ffn": "intermediate_size",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
    "max_positions": "max_position_embeddings",
    "init_std": "initializer_range",
    "layer_norm_eps": "layer_norm_eps",
}
_HF_SHAPE = ("vocab_size", "hidden", "layers", "heads", "ffn", "max_positions")
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
# Each family's LM head, as (ours, HF's); the decoder's weight (and bias) are tied and omitted.
_LM_HEADS = {
    "roberta": [
        ("head_dense.weight", "lm_head.dense.weight"),
        ("head_dense.bias", "lm_head.dense.bias"),
        ("head_norm.weight", "lm_head.layer_norm.weight"),
        ("head_norm.bias", "lm_head.layer_norm.bias"),
        ("head_bias", "lm_head.bias"),
    ],
    "bert": [
        ("head_dense.weight", "cls.predictions.transform.dense.weight"),
        ("head_dense.bias", "cls.predictions.transform.dense.bias"),
        ("head_norm.weight", "cls.predictions.transform.LayerNorm.weight"),
        ("head_norm.bias", "cls.predictions.transform.LayerNorm.bias"),
        ("head_bias", "cls.predictions.bias"),
    ],
}
_WEIGHT_BIAS = ("weight", "bias")
# Each family's classifiers of each head kind (model.HEAD_KINDS): HF's class and (ours under the
# head, HF's) pairs; ``{base}`` is the encoder's prefix (roberta or bert).
_CLASSIFIERS = {
    ("roberta", "sentence"): [
        (f"{layer}.{p}", f"classifier.{layer}.{p}") for layer in ("dense", "out_proj") for p in _WEIGHT_BIAS
    ],
    ("roberta", "tokens"): [(f"out_proj.{p}", f"classifier.{p}") for p in _WEIGHT_BIAS],
    ("bert", "sentence"): [(f"dense.{p}", f"bert.pooler.dense.{p}") for p in _WEIGHT_BIAS]
    + [(f"out_proj.{p}", f"classifier.{p}") for p in _WEIGHT_BIAS],
    ("bert", "tokens"): [(f"out_proj.{p}", f"classifier.{p}") for p in _WEIGHT_BIAS],
}
_ARCHITECTURES = {  # (model_type, form) -> HF's class
    ("xlm-roberta", "mlm"): "XLMRobertaForMaskedLM",
    ("xlm-roberta", "encoder"): "XLMRobertaModel",
    ("xlm-roberta", "sentence"): "XLMRobertaForSequenceClassification",
    ("xlm-roberta", "tokens"): "XLMRobertaForTokenClassification",
    ("roberta", "mlm"): "RobertaForMaskedLM",
    ("roberta", "encoder"): "RobertaModel",
    ("roberta", "sentence"): "RobertaForSequenceClassification",
    ("roberta", "tokens"): "RobertaForTokenClassification",
    ("bert", "mlm"): "BertForMaskedLM",
    ("bert", "encoder"): "BertModel",
    ("bert", "sentence"): "BertForSequenceClassification",
    ("bert", "tokens"): "BertForTokenClassification",
}


def _base(config: ModelConfig) -> str:
    return "bert" if config.family == "bert" else "roberta"


def _encoder_pairs(config: ModelConfig):
    """(ours, HF's) of the embeddings, every layer but its q/k/v, and the pooler when there is one."""
    base = _base(config)
    yield "embed_tokens.weight", f"{base}.embeddings.word_embeddings.weight"
    yield "embed_positions.weight", f"{base}.embeddings.position_embeddings.weight"
    if config.type_vocab_size:
        yield "embed_token_types.weight", f"{base}.embeddings.token_type_embeddings.weight"
    yield "embed_norm.weight", f"{base}.embeddings.LayerNorm.weight"
    yield "embed_norm.bias", f"{base}.embeddings.LayerNorm.bias"
    for i in range(config.layers):
        for ours, theirs in _LAYER:
            yield f"layers.{i}.{ours}", f"{base}.encoder.layer.{i}.{theirs}"
    if config.pooler:
        for p in _WEIGHT_BIAS:
            yield f"pooler.{p}", f"{base}.pooler.dense.{p}"


def hf_config(config: ModelConfig, head_kind: Optional[str] = None, labels: Sequence[str] = ()) -> Dict:
    """config.json of the model in its family: the masked LM (or the bare encoder of a sentence
    encoder), or the classifier of ``head_kind`` with ``labels`` in order."""
    classifier = {}
    if head_kind:
        classifier = {
            "id2label": {str(i): label for i, label in enumerate(labels)},
            "label2id": {label: i for i, label in enumerate(labels)},
            "classifier_dropout": None,  # HF then uses hidden_dropout_prob, as this model's heads
        }
    form = head_kind or ("mlm" if config.lm_head else "encoder")
    return {
        **classifier,
        "architectures": [_ARCHITECTURES[config.family, form]],
        "model_type": config.family,
        **{key: getattr(config, name) for name, key in HF_KEYS.items()},
        "hidden_act": "gelu",
        "type_vocab_size": config.type_vocab_size or 1,
        "position_embedding_type": "absolute",
        "pad_token_id": config.pad_id,
        "tie_word_embeddings": True,
    }


def to_hf(
    state: Dict[str, torch.Tensor], config: ModelConfig, head: Optional[Tuple[str, str]] = None
) -> Dict[str, torch.Tensor]:
    """This model's state dict in its family's HF names: the masked LM's (the decoder tied to the
    embeddings and omitted, as ``save_pretrained`` does), the bare encoder's for a sentence
    encoder, or with ``head`` (name, kind) the encoder and that classifier's, no LM head."""
    base = _base(config)
    out = {theirs: state[ours] for ours, theirs in _encoder_pairs(config)}
    if not config.type_vocab_size:  # RoBERTa's one type is folded into the positions: zero here
        out[f"{base}.embeddings.token_type_embeddings.weight"] = torch.zeros(1, config.hidden)
    for i in range(config.layers):
        weight, bias = state[f"layers.{i}.attention.qkv.weight"], state[f"layers.{i}.attention.qkv.bias"]
        for name, w, b in zip(_QKV, weight.chunk(3), bias.chunk(3)):
            out[f"{base}.encoder.layer.{i}.attention.self.{name}.weight"] = w
            out[f"{base}.encoder.layer.{i}.attention.self.{name}.bias"] = b
    if head is not None:
        name, kind = head
        for ours, theirs in _CLASSIFIERS[base, kind]:
            out[theirs] = state[f"classification_heads.{name}.{ours}"]
    elif config.lm_head:
        out.update({theirs: state[ours] for ours, theirs in _LM_HEADS[base]})
    else:  # a bare encoder is saved without its prefix, as XLMRobertaModel / BertModel save it
        out = {name[len(base) + 1 :]: tensor for name, tensor in out.items()}
    return {name: tensor.detach().clone().contiguous() for name, tensor in out.items()}  # unshared storage


def from_hf(state: Dict[str, torch.Tensor], config: ModelConfig, head_kind: Optional[str]) -> Dict[str, torch.Tensor]:
    """An HF state dict of ``config``'s family in this model's names: the LM head when it has
    one, a classifier of ``head_kind`` as the head ``HF_HEAD_NAME``."""
    base = _base(config)
    bare = ("embeddings.", "encoder.", "pooler.")  # a bare encoder's names (XLMRobertaModel, BertModel)
    state = {f"{base}.{name}" if name.startswith(bare) else name: tensor for name, tensor in state.items()}
    pairs = list(_encoder_pairs(config))
    if config.lm_head and head_kind is None:
        pairs += _LM_HEADS[base]
    if head_kind is not None:
        pairs += [
            (f"classification_heads.{HF_HEAD_NAME}.{ours}", theirs) for ours, theirs in _CLASSIFIERS[base, head_kind]
        ]
    qkv = [
        f"{base}.encoder.layer.{i}.attention.self.{n}.{p}"
        for i in range(config.layers)
        for n in _QKV
        for p in _WEIGHT_BIAS
    ]
    missing = [theirs for _, theirs in pairs if theirs not in state] + [name for name in qkv if name not in state]
    if missing:
        raise ValueError(f"not a {config.family} checkpoint of this shape: missing {', '.join(missing[:5])}")
    out = {ours: state[theirs] for ours, theirs in pairs}
    token_type = state.get(f"{base}.embeddings.token_type_embeddings.weight")
    if not config.type_vocab_size and token_type is not None:  # RoBERTa's one type: fold it into the positions
        out["embed_positions.weight"] = out["embed_positions.weight"] + token_type[0]
    for i in range(config.layers):
        prefix = f"{base}.encoder.layer.{i}.attention.self"
        out[f"layers.{i}.attention.qkv.weight"] = torch.cat([state[f"{prefix}.{n}.weight"] for n in _QKV])
        out[f"layers.{i}.attention.qkv.bias"] = torch.cat([state[f"{prefix}.{n}.bias"] for n in _QKV])
    return {name: tensor.float().contiguous() for name, tensor in out.items()}


def head_kind_of(hf: Dict) -> Optional[str]:
    """The classifier kind of an HF config.json (sentence or tokens), or None for a bare encoder or
    a masked LM."""
    architecture = str((hf.get("architectures") or [""])[0])
    if architecture.endswith("SequenceClassification"):
        return "sentence"
    if architecture.endswith("TokenClassification"):
        return "tokens"
    return None


def config_from_hf(hf: Dict, state: Dict[str, torch.Tensor], pad_id: int) -> ModelConfig:
    """This model's config of an HF config.json and its weights (which tell whether an LM head
    and a pooler are there); ``pad_id``: the tokenizer's."""
    family = hf.get("model_type")
    if family not in ("xlm-roberta", "roberta", "bert"):
        raise ValueError(
            f"model_type {family!r} is not supported: XLM-R, RoBERTa and BERT encoders are (xlm-roberta, roberta, bert)"
        )
    if hf.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"hidden_act {hf['hidden_act']!r} is not supported: only GELU (XLM-R's, BERT's) is")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"position_embedding_type {hf['position_embedding_type']!r} is not supported: only absolute")
    if family != "bert" and hf.get("pad_token_id", pad_id) != pad_id:
        raise ValueError(f"pad_token_id {hf['pad_token_id']} in config.json, but the tokenizer pads with {pad_id}")
    names = {name.split(".", 1)[1] if name.startswith(("bert.", "roberta.")) else name for name in state}
    given = {name: hf[key] for name, key in HF_KEYS.items() if name in _HF_SHAPE or key in hf}
    given.setdefault("layer_norm_eps", 1e-12 if family == "bert" else 1e-5)  # HF's defaults by family
    return ModelConfig(
        **given,
        family=family,
        pad_id=pad_id,
        type_vocab_size=hf.get("type_vocab_size", 2) if family == "bert" else 0,
        pooler="pooler.dense.weight" in names,
        lm_head=any(name.startswith(("lm_head.", "cls.predictions.")) for name in state),
    )


def load_hf(hf_dir: str) -> Tuple[ModelConfig, Dict[str, torch.Tensor]]:
    """(config, state dict in this model's names) of an HF folder of a supported family
    (safetensors or .bin). Padding is the tokenizer's beside it (a BERT config.json may say
    otherwise), else config.json's."""
    config_file = os.path.join(hf_dir, "config.json")
    if not os.path.exists(config_file):
        raise FileNotFoundError(f"{hf_dir} has no config.json: not a Hugging Face model folder")
    with open(config_file) as handle:
        hf = json.load(handle)
    state = read_weights(hf_dir, HF_WEIGHTS, HF_TORCH_WEIGHTS)
    try:
        pad_id = open_tokenizer(tokenizer_file(hf_dir)).pad
    except FileNotFoundError:  # weights alone, e.g. to continue pretraining on packed blocks
        pad_id = hf.get("pad_token_id", 0 if hf.get("model_type") == "bert" else 1)
    config = config_from_hf(hf, state, pad_id)
    converted = from_hf(state, config, head_kind_of(hf))
    rows = converted["embed_tokens.weight"].shape[0]
    if rows != config.vocab_size:
        raise ValueError(
            f"{config_file} says vocab_size {config.vocab_size}, its word embeddings hold a vocabulary of {rows}"
        )
    return config, converted


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
    tokenizer: str,
    out_dir: str,
    head: Optional[Tuple[str, str]] = None,
    labels: Sequence[str] = (),
) -> None:
    """Write an HF folder of the model's family (with ``head`` (name, kind) and its ``labels``,
    the classifier): config.json, model.safetensors and the tokenizer's files (of a SentencePiece
    model, or the ``tokenizer.json`` a model came with). Written beside, then renamed into place."""
    if head is not None and len(labels) != state[f"classification_heads.{head[0]}.out_proj.weight"].shape[0]:
        raise ValueError(
            f"head {head[0]!r} has {state[f'classification_heads.{head[0]}.out_proj.weight'].shape[0]} classes, got {len(labels)} labels"
        )
    with storage.atomic_path(out_dir.rstrip("/")) as tmp:
        os.makedirs(tmp)
        storage.write_json(os.path.join(tmp, "config.json"), hf_config(config, head[1] if head else None, labels))
        save_file(to_hf(state, config, head), os.path.join(tmp, HF_WEIGHTS), metadata={"format": "pt"})
        if tokenizer.endswith(".json"):
            shutil.copyfile(tokenizer, os.path.join(tmp, TOKENIZER_JSON))
        else:
            write_hf_tokenizer(tokenizer, tmp, model_max_length=config.max_tokens)
