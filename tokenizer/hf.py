"""Hugging Face tokenizer files for a SentencePiece model with fairseq's XLM-R ids.

``tokenizer.json`` is built with the ``tokenizers`` library the way transformers converts XLM-R's
``sentencepiece.bpe.model`` (specials first, pieces at SentencePiece id + 1, ``<mask>`` last,
SentencePiece's own normalization table), so that transformers never has to parse the model
with protobuf (whose runtime Beam pins below the version transformers' generated code needs).
"""

from __future__ import annotations

import os
from typing import Dict, Iterator, Tuple

import sentencepiece
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import Unigram

from tokenizer.xlmr import SP_EOS, SPECIALS
from toolkit import storage

# Fields of sentencepiece_model.proto that are read here.
_MODEL_NORMALIZER_SPEC = 3
_SPEC_CHARSMAP, _SPEC_DUMMY_PREFIX, _SPEC_EXTRA_WHITESPACES = 2, 3, 4


def _varint(data: bytes, i: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if byte < 0x80:
            return value, i


def _fields(data: bytes) -> Iterator[Tuple[int, object]]:
    """(field number, value) of a serialized protobuf message, one level deep."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        wire = key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, i = data[i : i + size], i + size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield key >> 3, value


def normalizer_spec(model_path: str) -> Dict:
    """The model's normalization settings (charsmap, dummy prefix, whitespace folding)."""
    with open(model_path, "rb") as handle:
        data = handle.read()
    spec = {"charsmap": b"", "add_dummy_prefix": True, "remove_extra_whitespaces": True}
    for field, value in _fields(data):
        if field == _MODEL_NORMALIZER_SPEC:
            for inner, inner_value in _fields(value):
                if inner == _SPEC_CHARSMAP:
                    spec["charsmap"] = inner_value
                elif inner == _SPEC_DUMMY_PREFIX:
                    spec["add_dummy_prefix"] = bool(inner_value)
                elif inner == _SPEC_EXTRA_WHITESPACES:
                    spec["remove_extra_whitespaces"] = bool(inner_value)
    return spec


def hf_tokenizer(model_path: str) -> Tokenizer:
    """A ``tokenizers.Tokenizer`` giving the same ids as ``XLMRTokenizer(model_path).encode``."""
    sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
    vocab = [(piece, 0.0) for piece in SPECIALS]
    vocab += [(sp.id_to_piece(i), sp.get_score(i)) for i in range(SP_EOS + 1, sp.get_piece_size())]
    vocab.append(("<mask>", 0.0))
    tokenizer = Tokenizer(Unigram(vocab=vocab, unk_id=SPECIALS.index("<unk>"), byte_fallback=False))
    spec = normalizer_spec(model_path)
    steps = [normalizers.Precompiled(spec["charsmap"])] if spec["charsmap"] else []
    if spec["remove_extra_whitespaces"]:
        steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
    tokenizer.normalizer = normalizers.Sequence(steps)
    prepend = "always" if spec["add_dummy_prefix"] else "never"
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=prepend, split=False)
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme=prepend, split=False)
    tokenizer.add_special_tokens(
        [AddedToken(piece, special=True) for piece in SPECIALS] + [AddedToken("<mask>", lstrip=True, special=True)]
    )
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return tokenizer


def write_hf_tokenizer(model_path: str, out_dir: str, model_max_length: int = 512) -> None:
    """``tokenizer.json``, ``tokenizer_config.json``, ``special_tokens_map.json`` and the
    SentencePiece model under XLM-R's file name, into ``out_dir``."""
    with storage.atomic_path(os.path.join(out_dir, "tokenizer.json")) as path:
        hf_tokenizer(model_path).save(path)
    storage.copy_file(model_path, os.path.join(out_dir, "sentencepiece.bpe.model"))
    specials = {
        "bos_token": "<s>",
        "eos_token": "</s>",
        "sep_token": "</s>",
        "cls_token": "<s>",
        "unk_token": "<unk>",
        "pad_token": "<pad>",
        "mask_token": "<mask>",
    }
    config = {"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": model_max_length, **specials}
    for name, content in (("tokenizer_config.json", config), ("special_tokens_map.json", specials)):
        storage.write_json(os.path.join(out_dir, name), content)
