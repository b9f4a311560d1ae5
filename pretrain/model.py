"""The XLM-R / RoBERTa encoder as fairseq defines it, with its masked-LM head, and the BERT
family's variant of it (``ModelConfig.family``). No I/O.

Token embeddings (padding index 1) plus learned positions numbered from padding_idx + 1 (so 514
positions hold 512 tokens), embedding LayerNorm, post-LN transformer layers (GELU, dropout 0.1,
attention through ``scaled_dot_product_attention``), and the LM head (dense -> GELU -> LayerNorm
-> the token embeddings transposed, plus a bias), computed only where asked: at the masked
positions during training, which at a 250k vocabulary saves most of the step. BERT differs in
four places only: positions numbered from 0 whatever the padding, token-type embeddings (a
second sentence of a pair is type 1), a pooler (dense -> tanh on the first token) that its
sentence classifiers start from, and no dropout before that dense layer in its sentence heads.

Fine-tuning heads, registered by name as fairseq's ``register_classification_head`` does: a
sentence (or sentence-pair) head on ``<s>`` (fairseq's ``RobertaClassificationHead``, HF's
``XLMRobertaClassificationHead``: dropout -> dense -> tanh -> dropout -> out_proj) and a token
head (HF's ``XLMRobertaForTokenClassification``: dropout -> linear at every position).

MAD-X adapters (``pretrain.adapters``): bottleneck adapters after each feed-forward block and
invertible blocks on the embeddings, added by name, used as the active stack.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from pretrain.adapters import AdapterConfig, BottleneckAdapter, NICECoupling

PAD = 1  # fairseq's <pad>; tokenizer.xlmr.PAD
FAMILIES = ("xlm-roberta", "roberta", "bert")  # Hugging Face model types this model is


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 250_002  # rows of the embedding matrix: the tokenizer's ids, or more (padding rows)
    layers: int = 12
    hidden: int = 768
    heads: int = 12
    ffn: int = 3072  # inner size of each layer's feed-forward block
    max_positions: int = 514  # 512 tokens; position ids start after padding_idx as in fairseq
    dropout: float = 0.1  # on embeddings, attention output and feed-forward output
    attention_dropout: float = 0.1  # on attention probabilities
    layer_norm_eps: float = 1e-5
    init_std: float = 0.02  # BERT initialization
    family: str = "xlm-roberta"  # xlm-roberta | roberta: fairseq's positions; bert: positions from 0, token types
    pad_id: int = PAD  # the tokenizer's <pad>: what attention skips (and RoBERTa's positions count from)
    type_vocab_size: int = 0  # token types (BERT: 2); 0: none (RoBERTa's single type is folded into positions)
    pooler: bool = False  # a pooler (dense -> tanh on the first token): BERT's sentence heads start from it
    lm_head: bool = True  # trained with a masked-LM head; False: a sentence encoder, whose head is fresh

    def __post_init__(self):
        for name in ("vocab_size", "layers", "hidden", "heads", "ffn", "max_positions"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        if not 0 <= self.pad_id < self.vocab_size or self.type_vocab_size < 0:
            raise ValueError(f"pad_id must be an id of the vocabulary, type_vocab_size >= 0; got {self.pad_id}")
        if self.max_tokens < 2:
            raise ValueError("max_positions must leave room for at least two tokens")
        for name in ("dropout", "attention_dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be in [0, 1)")

    @property
    def absolute_positions(self) -> bool:
        """BERT numbers positions 0, 1, ...; RoBERTa and XLM-R from padding_idx + 1 (fairseq)."""
        return self.family == "bert"

    @property
    def max_tokens(self) -> int:
        return self.max_positions if self.absolute_positions else self.max_positions - self.pad_id - 1

    def to_dict(self) -> dict:
        return asdict(self)


MODEL_PRESETS = {
    "mini": dict(layers=1, hidden=64, heads=2, ffn=256),  # a distilled student of tiny
    "tiny": dict(layers=2, hidden=128, heads=2, ffn=512),  # CPU tests and smoke runs
    "small": dict(layers=4, hidden=312, heads=12, ffn=1200),  # TinyBERT-4's shape: a distilled student of base
    "base": dict(layers=12, hidden=768, heads=12, ffn=3072),  # XLM-R base
    "large": dict(layers=24, hidden=1024, heads=16, ffn=4096),  # XLM-R large
}


def model_config(preset: str, vocab_size: int, **overrides) -> ModelConfig:
    if preset not in MODEL_PRESETS:
        raise ValueError(f"unknown model preset {preset!r}; choose from {', '.join(MODEL_PRESETS)}")
    return ModelConfig(vocab_size=vocab_size, **{**MODEL_PRESETS[preset], **overrides})


def position_ids(tokens: torch.Tensor, config: ModelConfig = ModelConfig()) -> torch.Tensor:
    """BERT's 0, 1, ...; or fairseq's make_positions: padding_idx + 1, + 2, ... for real tokens,
    padding_idx for pads."""
    if config.absolute_positions:
        return torch.arange(tokens.size(1), device=tokens.device).expand_as(tokens)
    real = tokens.ne(config.pad_id).int()
    return (torch.cumsum(real, dim=1) * real).long() + config.pad_id


class SelfAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.heads, self.dropout = config.heads, config.attention_dropout
        self.qkv = nn.Linear(config.hidden, 3 * config.hidden)  # one matmul for q, k and v
        self.out = nn.Linear(config.hidden, config.hidden)

    def forward(
        self, x: torch.Tensor, attend: Optional[torch.Tensor], scores: Optional[List[torch.Tensor]] = None
    ) -> torch.Tensor:
        """``scores``: a list to append this layer's attention scores to (before the softmax,
        [batch, heads, length, length], 0 at padded keys as TinyBERT compares them); computed
        then without the fused kernel."""
        batch, length, hidden = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, hidden // self.heads).permute(2, 0, 3, 1, 4)
        dropout = self.dropout if self.training else 0.0
        if scores is None:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attend, dropout_p=dropout)
        else:
            logits = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
            if attend is not None:
                scores.append(logits.masked_fill(~attend, 0.0))
                logits = logits.masked_fill(~attend, float("-inf"))
            else:
                scores.append(logits)
            y = F.dropout(logits.softmax(-1), dropout, self.training) @ v
        return self.out(y.transpose(1, 2).reshape(batch, length, hidden))


class Layer(nn.Module):
    """Post-LN: x = LN(x + attn(x)); x = LN(x + ffn(x)), as BERT, RoBERTa and XLM-R."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.attention = SelfAttention(config)
        self.attention_norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)
        self.fc1 = nn.Linear(config.hidden, config.ffn)
        self.fc2 = nn.Linear(config.ffn, config.hidden)
        self.ffn_norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

        self.output_adapters = nn.ModuleDict()  # bottleneck adapters by name (pretrain.adapters)

    def forward(
        self,
        x: torch.Tensor,
        attend: Optional[torch.Tensor],
        adapters: Sequence[str] = (),
        scores: Optional[List[torch.Tensor]] = None,
    ) -> torch.Tensor:
        x = self.attention_norm(x + self.dropout(self.attention(x, attend, scores)))
        h = self.dropout(self.fc2(F.gelu(self.fc1(x))))
        for name in adapters:  # AdapterHub's seq_bn, stacked: each reads LN(h + x) and adds to h
            if name in self.output_adapters:
                h = self.output_adapters[name](self.ffn_norm(h + x), h)
        return self.ffn_norm(h + x)


HEAD_KINDS = ("sentence", "tokens")


class ClassificationHead(nn.Module):
    """Logits [batch, classes] from the hidden state of each sequence's first token, ``<s>``:
    dense -> tanh -> out_proj, with dropout before each linear layer as XLM-R's head has it, or
    (``dropout_first`` off) only before out_proj, as BERT's pooler -> classifier has it."""

    def __init__(self, hidden: int, classes: int, dropout: float, dropout_first: bool = True):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.dropout_first = dropout_first
        self.dense = nn.Linear(hidden, hidden)
        self.out_proj = nn.Linear(hidden, classes)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        x = self.dropout(hidden[:, 0]) if self.dropout_first else hidden[:, 0]
        return self.out_proj(self.dropout(torch.tanh(self.dense(x))))


class TokenClassificationHead(nn.Module):
    """Logits [batch, length, classes] at every position."""

    def __init__(self, hidden: int, classes: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(hidden, classes)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.out_proj(self.dropout(hidden))


class XLMRModel(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden, padding_idx=config.pad_id)
        position_padding = None if config.absolute_positions else config.pad_id
        self.embed_positions = nn.Embedding(config.max_positions, config.hidden, padding_idx=position_padding)
        if config.type_vocab_size:
            self.embed_token_types = nn.Embedding(config.type_vocab_size, config.hidden)
        self.embed_norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.layers))
        self.head_dense = nn.Linear(config.hidden, config.hidden)
        self.head_norm = nn.LayerNorm(config.hidden, eps=config.layer_norm_eps)
        self.head_bias = nn.Parameter(torch.zeros(config.vocab_size))  # decoder weight = embed_tokens
        if config.pooler:
            self.pooler = nn.Linear(config.hidden, config.hidden)
        self.classification_heads = nn.ModuleDict()  # fine-tuning heads by name
        self.apply(self._init_bert)
        self.invertible_adapters = nn.ModuleDict()  # NICE blocks of language adapters, by adapter name
        self.adapter_configs: Dict[str, AdapterConfig] = {}
        self.active_adapters: Tuple[str, ...] = ()  # the stack in use, bottom first

    def add_adapter(self, name: str, config: AdapterConfig) -> None:
        """A new adapter ``name`` (AdapterHub-initialized, inactive until ``set_active_adapters``)."""
        if name in self.adapter_configs:
            raise ValueError(f"the model already has an adapter {name!r}")
        if "." in name or not name:
            raise ValueError(f"an adapter name is a non-empty word without dots, got {name!r}")
        outside = [index for index in config.leave_out if not 0 <= index < len(self.layers)]
        if outside:
            raise ValueError(f"leave_out {outside}: the model has layers 0..{len(self.layers) - 1}")
        device = self.head_bias.device
        for index, layer in enumerate(self.layers):
            if index not in config.leave_out:
                layer.output_adapters[name] = BottleneckAdapter(self.config.hidden, config).to(device)
        if config.invertible:
            self.invertible_adapters[name] = NICECoupling(self.config.hidden, config).to(device)
        self.adapter_configs[name] = config
        self.train(self.training)

    def remove_adapter(self, name: str) -> None:
        for modules in (*(layer.output_adapters for layer in self.layers), self.invertible_adapters):
            if name in modules:
                del modules[name]
        self.adapter_configs.pop(name, None)
        self.active_adapters = tuple(active for active in self.active_adapters if active != name)

    def set_active_adapters(self, *names: str) -> None:
        """Use the stack ``names`` (bottom first, e.g. language then task); none: the bare encoder."""
        unknown = [name for name in names if name not in self.adapter_configs]
        if unknown:
            raise KeyError(f"no adapter {unknown[0]!r} (the model has: {', '.join(self.adapter_configs) or 'none'})")
        self.active_adapters = tuple(names)

    def adapter_weights(self, name: str) -> Dict[str, torch.Tensor]:
        """Adapter ``name``'s entries of the state dict, under the model's own keys."""
        if name not in self.adapter_configs:
            raise KeyError(f"no adapter {name!r}")
        return {
            key: tensor
            for key, tensor in self.state_dict().items()
            if f".output_adapters.{name}." in key or key.startswith(f"invertible_adapters.{name}.")
        }

    def train_only_adapter(self, name: str) -> List[nn.Parameter]:
        """Freeze everything but adapter ``name``; returns its parameters."""
        self.requires_grad_(False)
        weights = self.adapter_weights(name)
        parameters = [parameter for key, parameter in self.named_parameters() if key in weights]
        for parameter in parameters:
            parameter.requires_grad_(True)
        return parameters

    def _invertible(self) -> Optional[NICECoupling]:
        """The NICE block of the active stack's first adapter, as AdapterHub uses, if it has one."""
        if self.active_adapters and self.active_adapters[0] in self.invertible_adapters:
            return self.invertible_adapters[self.active_adapters[0]]
        return None

    def register_classification_head(self, name: str, num_classes: int, kind: str = "sentence") -> nn.Module:
        """A new head ``name`` of ``kind`` (sentence: on ``<s>``; tokens: at every position),
        BERT-initialized; registering a name again with other classes or kind is an error."""
        if kind not in HEAD_KINDS:
            raise ValueError(f"head kind must be one of {', '.join(HEAD_KINDS)}, got {kind!r}")
        if num_classes < 1:
            raise ValueError(f"a head needs at least one class, got {num_classes}")
        head_class = ClassificationHead if kind == "sentence" else TokenClassificationHead
        bert = self.config.family == "bert"
        if name in self.classification_heads:
            head = self.classification_heads[name]
            if not isinstance(head, head_class) or head.out_proj.out_features != num_classes:
                raise ValueError(
                    f"head {name!r} exists with {head.out_proj.out_features} classes ({head_kind(head)}); "
                    f"asked for {num_classes} ({kind})"
                )
            return head
        placement = {"dropout_first": not bert} if kind == "sentence" else {}
        head = head_class(self.config.hidden, num_classes, self.config.dropout, **placement)
        head.apply(self._init_bert)
        if self.config.pooler and bert and kind == "sentence":  # as BERT's classifiers
            head.dense.load_state_dict(self.pooler.state_dict())
        self.classification_heads[name] = head.to(self.head_bias.device).train(self.training)
        return head

    def classify(self, tokens: torch.Tensor, head: str, token_types: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Logits of head ``head``: [batch, classes] (sentence) or [batch, length, classes] (tokens)."""
        if head not in self.classification_heads:
            raise KeyError(
                f"no classification head {head!r} (registered: {', '.join(self.classification_heads) or 'none'})"
            )
        return self.classification_heads[head](self.features(tokens, token_types=token_types)[-1])

    def _init_bert(self, module: nn.Module) -> None:
        """fairseq's init_bert_params: N(0, 0.02) weights, zero biases and padding rows."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()

    def features(
        self,
        tokens: torch.Tensor,
        return_all_hiddens: bool = False,
        attention_scores: Optional[List[torch.Tensor]] = None,
        token_types: Optional[torch.Tensor] = None,
    ) -> List[torch.Tensor]:
        """Hidden states [batch, length, hidden]: the last layer's, or the embeddings' and every
        layer's when ``return_all_hiddens``. ``attention_scores``: a list that gets every layer's
        attention scores (for distillation). ``token_types``: BERT's segment of each token (0 when
        None)."""
        config = self.config
        if tokens.size(1) > config.max_tokens:
            raise ValueError(f"sequence of {tokens.size(1)} tokens; the model holds {config.max_tokens}")
        padded = tokens.eq(config.pad_id)
        # Boolean mask, True = may attend; None when nothing is padded lets SDPA use its fastest kernel.
        attend = ~padded[:, None, None, :] if padded.any() else None
        x = self.embed_tokens(tokens) + self.embed_positions(position_ids(tokens, config))
        if config.type_vocab_size:
            x = x + self.embed_token_types(token_types if token_types is not None else torch.zeros_like(tokens))
        x = self.dropout(self.embed_norm(x))
        invertible = self._invertible()
        if invertible is not None:
            x = invertible(x)
        hiddens = [x]
        for layer in self.layers:
            x = layer(x, attend, self.active_adapters, attention_scores)
            hiddens.append(x)
        return hiddens if return_all_hiddens else [x]

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        x = self.head_norm(F.gelu(self.head_dense(hidden)))
        invertible = self._invertible()
        if invertible is not None:  # back to the embedding space the vocabulary projection shares
            x = invertible(x, inverse=True)
        return F.linear(x, self.embed_tokens.weight, self.head_bias)

    def forward(self, tokens: torch.Tensor, masked: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Vocabulary logits at the ``masked`` positions ([n_masked, vocab], row-major order), or
        at every position ([batch, length, vocab]) when ``masked`` is None."""
        hidden = self.features(tokens)[-1]
        return self.lm_logits(hidden[masked] if masked is not None else hidden)

    def num_parameters(self, exclude_embeddings: bool = False) -> int:  # heads included
        total = sum(p.numel() for p in self.parameters())
        if exclude_embeddings:
            embeddings = [self.embed_tokens, self.embed_positions, getattr(self, "embed_token_types", None)]
            total -= sum(module.weight.numel() for module in embeddings if module is not None)
        return total


def head_kind(head: nn.Module) -> str:
    return "sentence" if isinstance(head, ClassificationHead) else "tokens"


def heads_in_state(state: Dict[str, torch.Tensor]) -> Dict[str, Tuple[int, str]]:
    """The classification heads a state dict holds: name -> (classes, kind)."""
    heads = {}
    for key, tensor in state.items():
        if key.startswith("classification_heads.") and key.endswith(".out_proj.weight"):
            name = key[len("classification_heads.") : -len(".out_proj.weight")]
            kind = "sentence" if f"classification_heads.{name}.dense.weight" in state else "tokens"
            heads[name] = (tensor.shape[0], kind)
    return heads


LM_HEAD_PARAMETERS = ("head_dense.weight", "head_dense.bias", "head_norm.weight", "head_norm.bias", "head_bias")


def load_weights(model: XLMRModel, state: Dict[str, torch.Tensor]) -> None:
    """``state`` into ``model``, registering the heads it holds first; a state without the LM
    head (a sentence encoder's, an HF classifier's) leaves the model's own, initialized one."""
    for name, (classes, kind) in heads_in_state(state).items():
        model.register_classification_head(name, classes, kind)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or (missing and sorted(missing) != sorted(LM_HEAD_PARAMETERS)):
        raise ValueError(f"weights do not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
