"""Adapter folders in the layout of AdapterHub's ``adapters`` library (``save_adapter`` /
``load_adapter``, checked against adapters 1.3.0): ``adapter_config.json`` (the full ``BnConfig``
under ``config``, every field explicit, plus ``model_type``, ``hidden_size``, ``name`` and
``version``) and the weights under the library's key names in ``pytorch_adapter.bin`` (what
``load_adapter`` reads by default) and ``adapter.safetensors`` (``use_safetensors=True``):

    roberta.encoder.layer.{i}.output.adapters.{name}.adapter_down.0.weight / .bias
    roberta.encoder.layer.{i}.output.adapters.{name}.adapter_up.weight / .bias
    roberta.invertible_adapters.{name}.F.0.weight ... G.2.bias

An AdapterHub ``seq_bn`` / ``seq_bn_inv`` adapter loads here (older key names too); any other
architecture is refused, naming the field.
"""

from __future__ import annotations

import os
import re
from typing import Dict, Optional, Tuple

import torch
from safetensors.torch import save_file

from pretrain.adapters import ACTIVATIONS, AdapterConfig
from pretrain.export import read_weights
from pretrain.model import XLMRModel
from toolkit import storage

CONFIG_NAME, WEIGHTS_NAME, SAFE_WEIGHTS_NAME = "adapter_config.json", "pytorch_adapter.bin", "adapter.safetensors"
RUN_ADAPTER_DIR = "adapter"  # where a train-adapter run writes its adapter
LIBRARY_VERSION = "adapters.1.3.0"  # the version whose layout this writes
MODEL_TYPES = ("xlm-roberta", "roberta")  # the same encoder under either name

# BnConfig's fields as SeqBnConfig sets them: the architecture this model implements. An adapter
# with another value of one of these does something else and is refused.
SEQ_BN_FIXED = {
    "mh_adapter": False,
    "output_adapter": True,
    "original_ln_before": True,
    "original_ln_after": True,
    "ln_before": False,
    "ln_after": False,
    "is_parallel": False,
    "scaling": 1.0,
    "use_gating": False,
    "residual_before_ln": True,
    "adapter_residual_before_ln": False,
    "cross_adapter": False,
    "phm_layer": False,
    "stochastic_depth": 0.0,
}
# The remaining BnConfig fields at their defaults: weight initialization and PHM options, which
# do not change what a trained adapter computes.
BN_OTHER_DEFAULTS = {
    "init_weights": "bert",
    "init_weights_seed": None,
    "phm_dim": 4,
    "factorized_phm_W": True,
    "shared_W_phm": False,
    "shared_phm_rule": True,
    "factorized_phm_rule": False,
    "phm_c_init": "normal",
    "phm_init_range": 0.0001,
    "learn_phm": True,
    "hypercomplex_nonlinearity": "glorot-uniform",
    "phm_rank": 1,
    "phm_bias": True,
}
# BnConfig's own defaults, for older files that leave fields out.
BN_DEFAULTS = {
    **SEQ_BN_FIXED,
    "original_ln_before": False,
    "inv_adapter": None,
    "inv_adapter_reduction_factor": None,
    "leave_out": [],
    "dropout": 0.0,
}
ACTIVATION_RENAME = {"gelu": "gelu_new", "gelu_orig": "gelu"}  # files without a version used the old names
LEGACY_KEYS = {  # adapter-transformers' key names, renamed by the library when it loads them
    "attention_text_task_adapters": "adapters",
    "attention_text_lang_adapters": "adapters",
    "layer_text_task_adapters": "adapters",
    "layer_text_lang_adapters": "adapters",
    "invertible_lang_adapters": "invertible_adapters",
}


def adapterhub_config(config: AdapterConfig) -> Dict:
    """The ``BnConfig`` dict the library saves for ``config``: all 33 fields."""
    return {
        **SEQ_BN_FIXED,
        "reduction_factor": config.reduction_factor,
        "non_linearity": config.non_linearity,
        "inv_adapter": "nice" if config.invertible else None,
        "inv_adapter_reduction_factor": config.invertible_reduction_factor if config.invertible else None,
        "leave_out": list(config.leave_out),
        "dropout": config.dropout,
        **BN_OTHER_DEFAULTS,
    }


def from_adapterhub_config(saved: Dict, versioned: bool = True) -> AdapterConfig:
    """The ``AdapterConfig`` of a library ``BnConfig`` dict; a field this model does not
    implement is an error naming it."""
    fields = dict(saved)
    legacy_invertible = fields.pop("invertible_adapter", None)  # v1 files nest it
    if legacy_invertible:
        fields.setdefault("inv_adapter", legacy_invertible["block_type"])
        fields.setdefault("inv_adapter_reduction_factor", legacy_invertible["reduction_factor"])
    if fields.get("architecture") not in (None, "bottleneck"):
        raise ValueError(f"architecture {fields['architecture']!r}: only bottleneck adapters (seq_bn) load here")
    for name in ("reduction_factor", "non_linearity"):
        if name not in fields:
            raise ValueError(f"the adapter config has no {name}")
    values = {**BN_DEFAULTS, **fields}
    for name, expected in SEQ_BN_FIXED.items():
        if values[name] != expected:
            raise ValueError(
                f"unsupported adapter config: {name}={values[name]!r} (this model implements seq_bn: {name}={expected!r})"
            )
    if values["inv_adapter"] not in (None, "nice"):
        raise ValueError(f"unsupported adapter config: inv_adapter={values['inv_adapter']!r} (only 'nice')")
    activation = str(values["non_linearity"]).lower()
    activation = activation if versioned else ACTIVATION_RENAME.get(activation, activation)
    if activation not in ACTIVATIONS:
        raise ValueError(f"unsupported adapter config: non_linearity={activation!r} (one of {', '.join(ACTIVATIONS)})")
    factor = values["reduction_factor"]
    if isinstance(factor, dict):
        if len(set(factor.values())) != 1:
            raise ValueError(f"unsupported adapter config: reduction_factor per layer {factor}")
        factor = next(iter(factor.values()))
    return AdapterConfig(
        reduction_factor=float(factor),
        non_linearity=activation,
        invertible=values["inv_adapter"] == "nice",
        invertible_reduction_factor=float(values["inv_adapter_reduction_factor"] or 2.0),
        dropout=float(values["dropout"]),
        leave_out=tuple(values["leave_out"] or ()),
    )


_LAYER_KEY = re.compile(r"^layers\.(\d+)\.output_adapters\.([^.]+)\.(.+)$")
_HUB_LAYER_KEY = re.compile(r"^(?:roberta\.)?encoder\.layer\.(\d+)\.output\.adapters\.([^.]+)\.(.+)$")
_HUB_INVERTIBLE_KEY = re.compile(r"^(?:roberta\.)?invertible_adapters\.([^.]+)\.(.+)$")


def to_adapterhub_keys(weights: Dict[str, torch.Tensor], name: str) -> Dict[str, torch.Tensor]:
    """Adapter ``name``'s weights (``XLMRModel.adapter_weights``) under the library's keys."""
    out = {}
    for key, tensor in weights.items():
        layer = _LAYER_KEY.match(key)
        if layer:
            out[f"roberta.encoder.layer.{layer.group(1)}.output.adapters.{name}.{layer.group(3)}"] = tensor
        else:
            out[f"roberta.{key}"] = tensor  # invertible_adapters.{name}.F.0.weight ...
    return out


def from_adapterhub_keys(weights: Dict[str, torch.Tensor], saved_name: str, name: str) -> Dict[str, torch.Tensor]:
    """The library's weights of adapter ``saved_name`` under the model's keys for ``name``."""
    out = {}
    for key, tensor in weights.items():
        for old, new in LEGACY_KEYS.items():
            key = key.replace(old, new)
        layer, invertible = _HUB_LAYER_KEY.match(key), _HUB_INVERTIBLE_KEY.match(key)
        if layer and layer.group(2) == saved_name:
            out[f"layers.{layer.group(1)}.output_adapters.{name}.{layer.group(3)}"] = tensor
        elif invertible and invertible.group(1) == saved_name:
            out[f"invertible_adapters.{name}.{invertible.group(2)}"] = tensor
    return out


def save_adapter(model: XLMRModel, name: str, folder: str, extra: Optional[Dict] = None) -> None:
    """Adapter ``name`` of ``model`` as a library folder (written aside, then renamed)."""
    config = model.adapter_configs[name]
    weights = {
        key: tensor.detach().cpu().contiguous()
        for key, tensor in to_adapterhub_keys(model.adapter_weights(name), name).items()
    }
    content = {
        "config": adapterhub_config(config),
        "hidden_size": model.config.hidden,
        "model_class": "XLMRobertaAdapterModel",
        "model_name": None,
        "model_type": "xlm-roberta",
        "name": name,
        "version": LIBRARY_VERSION,
        # Beyond the library's keys (it ignores them): what the adapter was trained for.
        "num_hidden_layers": model.config.layers,
        "vocab_size": model.config.vocab_size,
        **(extra or {}),
    }
    with storage.atomic_path(folder) as tmp:
        os.makedirs(tmp)
        storage.write_json(os.path.join(tmp, CONFIG_NAME), content)
        torch.save(weights, os.path.join(tmp, WEIGHTS_NAME))
        save_file(weights, os.path.join(tmp, SAFE_WEIGHTS_NAME))


def adapter_folder(path: str) -> str:
    """An adapter folder, or the ``adapter/`` folder of a train-adapter run."""
    for folder in (path, os.path.join(path, RUN_ADAPTER_DIR)):
        if os.path.exists(os.path.join(folder, CONFIG_NAME)):
            return folder
    raise FileNotFoundError(f"{path}: no {CONFIG_NAME} (an AdapterHub adapter folder or a train-adapter run)")


def read_adapter(folder: str) -> Tuple[Dict, Dict[str, torch.Tensor]]:
    """(adapter_config.json, weights under the library's keys) of an adapter folder."""
    config_file = os.path.join(folder, CONFIG_NAME)
    if not os.path.exists(config_file):
        raise FileNotFoundError(f"{folder}: no {CONFIG_NAME} (an adapter folder as AdapterHub saves it)")
    return storage.read_json(config_file), read_weights(folder, SAFE_WEIGHTS_NAME, WEIGHTS_NAME)


def load_adapter(model: XLMRModel, folder: str, name: Optional[str] = None) -> str:
    """Add the adapter saved in ``folder`` to ``model`` (as ``name``, default its saved name);
    one made for another architecture or vocabulary is refused. Returns the name."""
    saved, hub_weights = read_adapter(folder)
    saved_name = saved.get("name")
    if not saved_name:
        raise ValueError(f"{folder}/{CONFIG_NAME} names no adapter")
    config = from_adapterhub_config(saved.get("config") or {}, versioned="version" in saved)
    problems = []
    if saved.get("model_type") not in (None, *MODEL_TYPES):
        problems.append(f"model type {saved['model_type']} (this model is xlm-roberta)")
    for key, ours in (
        ("hidden_size", model.config.hidden),
        ("num_hidden_layers", model.config.layers),
        ("vocab_size", model.config.vocab_size),
    ):
        if saved.get(key) is not None and saved[key] != ours:
            problems.append(f"{key} {saved[key]} (this model: {ours})")
    if problems:
        raise ValueError(f"{folder}: an adapter for another model: " + ", ".join(problems))
    name = name or saved_name
    weights = from_adapterhub_keys(hub_weights, saved_name, name)
    model.add_adapter(name, config)
    try:
        expected = model.adapter_weights(name)
        missing = sorted(set(expected) - set(weights))
        if missing or not weights:
            raise ValueError(f"{folder}: the weights lack {missing[:3] or 'every adapter key'}")
        for key, tensor in weights.items():
            if key not in expected:
                raise ValueError(f"{folder}: weight {key} has no place in this model (layers: {model.config.layers})")
            if tensor.shape != expected[key].shape:
                raise ValueError(
                    f"{folder}: weight {key} has shape {tuple(tensor.shape)}, this model {tuple(expected[key].shape)}"
                )
        model.load_state_dict(weights, strict=False)
    except ValueError:
        model.remove_adapter(name)
        raise
    return name
