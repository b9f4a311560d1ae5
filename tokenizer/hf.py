"""Hugging Face tokenizer files: written for a SentencePiece model with fairseq's XLM-R ids, and
read (``HFTokenizer``) where a model comes with a ``tokenizer.json`` of its own.

``tokenizer.json`` is built with the ``tokenizers`` library the way transformers converts XLM-R's
``sentencepiece.bpe.model`` (specials first, pieces at SentencePiece id + 1, ``<mask>`` last,
SentencePiece's own normalization table), so that transformers never has to parse the model
with protobuf (whose runtime Beam pins below the version transformers' generated code needs).
"""

from __future__ import annotations

import os
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import sentencepiece
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import Unigram

from tokenizer.xlmr import SP_EOS, SPECIALS, XLMRTokenizer
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


# The names the specials of Hugging Face's tokenizers go by: XLM-R / RoBERTa's, then BERT's.
_SPECIAL_NAMES = {
    "bos": ("<s>", "[CLS]"),
    "eos": ("</s>", "[SEP]"),
    "pad": ("<pad>", "[PAD]"),
    "unk": ("<unk>", "[UNK]"),
    "mask": ("<mask>", "[MASK]"),
}


class HFTokenizer:
    """A Hugging Face ``tokenizer.json`` (WordPiece as mBERT's, BPE, Unigram) behind
    ``XLMRTokenizer``'s interface, through the ``tokenizers`` library: its own specials (``bos``
    is BERT's ``[CLS]``, ``eos`` its ``[SEP]``), its own way of joining a pair and of typing the
    second sentence, its own truncation (longest first)."""

    def __init__(self, path: str):
        self.model_path = path
        self.tokenizer = Tokenizer.from_file(path)
        self.tokenizer.no_padding()
        for role, names in _SPECIAL_NAMES.items():
            found = next((i for i in map(self.tokenizer.token_to_id, names) if i is not None), None)
            if found is None and role != "mask":
                raise ValueError(f"{path}: no {role} token ({' or '.join(names)}): not a BERT or XLM-R tokenizer")
            setattr(self, role, found)
        self.vocab_size = self.tokenizer.get_vocab_size(with_added_tokens=True)

    def _ids(self, text: str) -> List[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def encode(self, text: str, pair: Optional[str] = None) -> List[int]:
        return self.tokenizer.encode(text, pair).ids

    def encode_example(self, texts: Sequence[str], max_length: int) -> Tuple[List[int], List[int]]:
        """(ids, token types) of one text or a pair, as the tokenizer joins them, cut to ``max_length``."""
        self.tokenizer.enable_truncation(max_length, strategy="longest_first")
        try:
            encoding = self.tokenizer.encode(*texts)
        finally:
            self.tokenizer.no_truncation()
        return encoding.ids, encoding.type_ids

    def encode_words(self, words: Sequence[str]) -> List[List[int]]:
        """The ids of each word of a pre-tokenized sentence (no specials); a word the tokenizer
        makes nothing of is ``unk``, so that every word has a first piece to be labelled."""
        encoding = self.tokenizer.encode(list(words), is_pretokenized=True, add_special_tokens=False)
        pieces: List[List[int]] = [[] for _ in words]
        for token, word in zip(encoding.ids, encoding.word_ids):
            if word is not None:
                pieces[word].append(token)
        return [ids or [self.unk] for ids in pieces]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def piece(self, token_id: int) -> str:
        return self.tokenizer.id_to_token(token_id)


SENTENCEPIECE_NAMES = ("sentencepiece.bpe.model", "sentencepiece.model")  # XLM-R's name, then ours
TOKENIZER_JSON = "tokenizer.json"


def tokenizer_file(folder: str) -> str:
    """The tokenizer of a model or tokenizer folder: its SentencePiece model (read with XLM-R's
    ids), else its ``tokenizer.json``."""
    for name in (*SENTENCEPIECE_NAMES, TOKENIZER_JSON):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise FileNotFoundError(
        f"{folder} has no tokenizer: expected {' or '.join(SENTENCEPIECE_NAMES)} (SentencePiece) or {TOKENIZER_JSON}"
        " (Hugging Face's): copy the tokenizer files of the model beside its weights"
    )


def open_tokenizer(path: str):
    """``HFTokenizer`` of a ``tokenizer.json``, else ``XLMRTokenizer`` of a SentencePiece model."""
    return HFTokenizer(path) if path.endswith(".json") else XLMRTokenizer(path)
