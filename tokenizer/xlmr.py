"""XLM-R's tokenizer conventions over any SentencePiece model (pure Python, no torch).

fairseq's XLM-R dictionary puts four specials first — ``<s>``=0, ``<pad>``=1, ``</s>``=2,
``<unk>``=3 — then every ordinary SentencePiece piece at its SentencePiece id + 1 (SentencePiece
itself holds ``<unk>``=0, ``<s>``=1, ``</s>``=2), and ``<mask>`` last. The same class reads
XLM-R's released ``sentencepiece.bpe.model`` and a model trained here.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import sentencepiece

from toolkit import storage

BOS, PAD, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
FAIRSEQ_OFFSET = 1  # fairseq id = SentencePiece id + 1 for ordinary pieces
SP_UNK, SP_BOS, SP_EOS = 0, 1, 2


class XLMRTokenizer:
    """XLM-R's ids over a SentencePiece model. Its interface (the specials' ids, ``encode``,
    ``encode_example``, ``encode_words``, ``decode``, ``piece``) is every tokenizer's here:
    ``tokenizer.hf.HFTokenizer`` has it over a Hugging Face ``tokenizer.json``."""

    bos, pad, eos, unk = BOS, PAD, EOS, UNK

    def __init__(self, model_path: str):
        self.model_path = model_path
        self.sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
        if (self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id()) != (SP_UNK, SP_BOS, SP_EOS):
            raise ValueError(f"{model_path}: expected <unk>=0, <s>=1, </s>=2 as XLM-R's SentencePiece model has")
        self.mask = self.sp.get_piece_size() + FAIRSEQ_OFFSET
        self.vocab_size = self.mask + 1

    def _ids(self, text: str) -> List[int]:
        return [i + FAIRSEQ_OFFSET if i != SP_UNK else UNK for i in self.sp.encode(text)]

    def encode(self, text: str, pair: Optional[str] = None) -> List[int]:
        """``<s> text </s>``, or for a pair ``<s> a </s></s> b </s>`` (fairseq's XLM-R)."""
        ids = [BOS, *self._ids(text), EOS]
        if pair is not None:
            ids += [EOS, *self._ids(pair), EOS]
        return ids

    def encode_example(self, texts: Sequence[str], max_length: int) -> Tuple[List[int], List[int]]:
        """(ids, token types) of one text ``<s> a </s>`` or a pair ``<s> a </s></s> b </s>``,
        the longer text cut first to fit ``max_length`` (transformers' longest_first); XLM-R has
        one token type."""
        pieces = [self._ids(text) for text in texts]
        budget = max_length - (2 if len(pieces) == 1 else 4)
        while sum(map(len, pieces)) > budget:
            longest = max(range(len(pieces)), key=lambda i: len(pieces[i]))
            pieces[longest] = pieces[longest][:-1]
        ids = [BOS, *pieces[0], EOS]
        for piece in pieces[1:]:
            ids += [EOS, *piece, EOS]
        return ids, [0] * len(ids)

    def encode_words(self, words: Sequence[str]) -> List[List[int]]:
        """The ids of each word of a pre-tokenized sentence (no specials), each encoded as if
        a space came before it; a word SentencePiece makes nothing of is ``<unk>``, so that
        every word has a first piece to be labelled."""
        return [
            [i + FAIRSEQ_OFFSET if i != SP_UNK else UNK for i in ids] or [UNK] for ids in self.sp.encode(list(words))
        ]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``, specials and ``<mask>`` left out; sentence boundaries become spaces."""
        pieces, parts = [], []
        for i in ids:
            if i in (BOS, PAD, EOS) or i == self.mask:
                if i == EOS and pieces:
                    parts.append(self.sp.decode(pieces))
                    pieces = []
                continue
            pieces.append(SP_UNK if i == UNK else i - FAIRSEQ_OFFSET)
        if pieces:
            parts.append(self.sp.decode(pieces))
        return " ".join(parts)

    def piece(self, token_id: int) -> str:
        if token_id < len(SPECIALS):
            return SPECIALS[token_id]
        if token_id == self.mask:
            return "<mask>"
        return self.sp.id_to_piece(token_id - FAIRSEQ_OFFSET)


def write_fairseq_dict(model_path: str, path: str, counts: Optional[Dict[int, int]] = None) -> None:
    """fairseq's dict.txt for the model: ``piece count`` per ordinary piece in id order (the
    specials and ``<mask>`` are implicit in fairseq). ``counts`` by SentencePiece id, else 1."""
    sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
    lines = (
        f"{sp.id_to_piece(i)} {(counts or {}).get(i, 1)}\n"
        for i in range(sp.get_piece_size())
        if i not in (SP_UNK, SP_BOS, SP_EOS)
    )
    with storage.atomic_write(path, "w") as handle:
        handle.writelines(lines)


def piece_counts(model_path: str, texts: Iterable[str]) -> Dict[int, int]:
    """How often each SentencePiece id occurs when ``texts`` are encoded."""
    sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
    counts: Dict[int, int] = {}
    for text in texts:
        for i in sp.encode(text):
            counts[i] = counts.get(i, 0) + 1
    return counts
