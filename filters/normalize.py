"""CCNet's text normalizations (``cc_net/text_normalizer.py``), as translate tables built once
per process, plus the project's stricter dedup variant.

``normalize_for_dedup`` is CCNet's key for line dedup, equal to CCNet's on every input (a test
holds it to CCNet's outputs over every code point and real text in many scripts);
``normalize_for_dedup_strict`` also merges lines that differ in any punctuation or spacing.
``dedup_keys`` and ``dedup_keys_strict`` give the same keys for every line of a document in one
vectorized pass over its text (what the mine job uses).
``normalize_for_lm`` is CCNet's ``normalize``, applied before its SentencePiece + KenLM models
(training and scoring must match it exactly, so that CCNet's published models drop in).
"""

from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache
from itertools import compress
from typing import Dict, List, Sequence, Tuple

import numpy as np

# CCNet's text_normalizer.UNICODE_PUNCT: CJK and typographic punctuation mapped to ASCII.
UNICODE_PUNCT = {
    "，": ",",
    "。": ".",
    "、": ",",
    "„": '"',
    "”": '"',
    "“": '"',
    "«": '"',
    "»": '"',
    "１": '"',
    "」": '"',
    "「": '"',
    "《": '"',
    "》": '"',
    "´": "'",
    "∶": ":",
    "：": ":",
    "？": "?",
    "！": "!",
    "（": "(",
    "）": ")",
    "；": ";",
    "–": "-",
    "—": " - ",
    "．": ". ",
    "～": "~",
    "’": "'",
    "…": "...",
    "━": "-",
    "〈": "<",
    "〉": ">",
    "【": "[",
    "】": "]",
    "％": "%",
    "►": "-",
}
# CCNet's NON_PRINTING_CHARS: C0 and C1 control characters (tab and newline included).
NON_PRINTING = [*range(0, 32), *range(127, 160)]


@lru_cache(maxsize=1)
def every_code_point() -> str:
    """One string of every code point, for building tables with C-speed ``map`` over it."""
    return np.arange(sys.maxunicode + 1, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=1)
def _categories() -> List[str]:
    """The Unicode category of every code point."""
    return list(map(unicodedata.category, every_code_point()))


@lru_cache(maxsize=1)
def _dedup_table() -> Dict[int, object]:
    """CCNet's dedup key after lowercasing: decimal digits -> "0" first (so the full-width
    "１" of its punctuation list is a digit), then its punctuation list and the non-printing
    characters removed. Everything else, ASCII punctuation and white space included, stays."""
    digits = compress(range(sys.maxunicode + 1), map(str.isdecimal, every_code_point()))
    table: Dict[int, object] = dict.fromkeys(digits, "0")
    for code in [*map(ord, UNICODE_PUNCT), *NON_PRINTING]:
        table.setdefault(code, None)
    return table


@lru_cache(maxsize=1)
def _strict_dedup_table() -> Dict[int, object]:
    """Decimal digits -> "0"; every punctuation (P*) and other (C*: controls, formats, private
    use, surrogates, unassigned) character removed; white space kept (collapsed after)."""
    table: Dict[int, object] = {}
    for code, (category, space) in enumerate(zip(_categories(), white_space().tolist())):
        if category == "Nd":
            table[code] = "0"
        elif (category[0] == "P" or category[0] == "C") and not space:
            table[code] = None
    return table


@lru_cache(maxsize=2)
def _lm_table(keep_newline: bool = False) -> Dict[int, object]:
    """After NFD: combining marks (accents) removed, digits -> "0", CCNet's punctuation map,
    non-printing characters removed — CCNet applies these in that order, on disjoint sets.
    ``keep_newline`` keeps "\n" (a non-printing character to CCNet) for line-by-line use."""
    table: Dict[int, object] = {}
    for code, category in enumerate(_categories()):
        if category == "Mn":
            table[code] = None
        elif category == "Nd":
            table[code] = "0"
    table.update({ord(char): ascii for char, ascii in UNICODE_PUNCT.items() if ord(char) not in table})
    table.update({code: None for code in NON_PRINTING if not (keep_newline and code == ord("\n"))})
    return table


_DELETE = np.uint32(0xFFFFFFFF)  # lookup-table mark: drop the character


def _lookup_array(table: Dict[int, object]) -> np.ndarray:
    """A translate ``table`` whose values are single characters or None, as an array over
    every code point, for vectorized translation (``_translate``)."""
    lookup = np.arange(sys.maxunicode + 1, dtype=np.uint32)
    for code, value in table.items():
        if value is None:
            lookup[code] = _DELETE
        elif len(value) == 1:
            lookup[code] = ord(value)
    return lookup


def _translate(text: str, lookup: np.ndarray) -> str:
    # surrogatepass: a lone surrogate (valid in a str, not in UTF-32) maps like any code point
    mapped = lookup[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")]
    return mapped[mapped != _DELETE].tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=1)
def _lm_expanding() -> tuple:
    """The characters ``_lm_table`` maps to several characters."""
    return tuple(chr(code) for code, value in _lm_table(False).items() if value is not None and len(value) > 1)


@lru_cache(maxsize=2)
def _lm_lookup(keep_newline: bool = False) -> np.ndarray:
    """``_lm_table`` as a lookup array (texts with one of the ``_lm_expanding`` characters go
    through str.translate instead)."""
    return _lookup_array(_lm_table(keep_newline))


@lru_cache(maxsize=2)
def _dedup_lookup(strict: bool) -> np.ndarray:
    """The dedup table of the mode as a lookup array, newlines kept (lines are split after).
    The strict one is ``_strict_dedup_table`` built with array operations (a test holds them
    equal): a tenth of the time of the dict, which every worker process builds once."""
    if strict:
        categories = np.array(_categories(), dtype="<U2")
        kind = categories.astype("<U1")
        lookup = np.arange(sys.maxunicode + 1, dtype=np.uint32)
        lookup[categories == "Nd"] = ord("0")
        lookup[((kind == "P") | (kind == "C")) & ~white_space()] = _DELETE
    else:
        lookup = _lookup_array(_dedup_table())
    lookup[ord("\n")] = ord("\n")
    return lookup


def normalize_for_dedup(line: str) -> str:
    """CCNet's ``normalize_for_dedup``: strip, lowercase, digits to 0, CCNet's list of Unicode
    punctuation and the control characters removed; ASCII punctuation and inner white space
    stay as they are."""
    return line.strip().lower().translate(_dedup_table())


def normalize_for_dedup_strict(line: str) -> str:
    """The stricter key of ``--dedup strict``: lowercase, digits to 0, every Unicode punctuation
    and non-printing character removed, runs of white space collapsed to one space."""
    return " ".join(line.lower().translate(_strict_dedup_table()).split())


def normalize_for_lm(text: str) -> str:
    """CCNet's ``normalize(text)`` (accent, case, numbers, punct=1): strip, lowercase, strip
    accents (NFD without combining marks, left decomposed as CCNet leaves it), digits to 0,
    Unicode punctuation mapped to ASCII, non-printing characters removed — newlines too, so a
    whole document comes out as one line, as CCNet's mine step scores it."""
    text = text.strip()
    if text.isascii():
        return text.lower().translate(_lm_table(False))  # str.translate's fast ASCII path
    return _translate_for_lm(unicodedata.normalize("NFD", text.lower()), keep_newline=False)


def normalize_lines_for_lm(text: str) -> List[str]:
    """CCNet's ``normalize`` of every line of ``text``, in one vectorized pass over the text.

    Equal to ``[normalize_for_lm(line) for line in text.split("\n")]`` (a test holds it to
    that): each line is stripped first, as CCNet does, then the whole text is lowercased,
    decomposed and mapped through a code-point lookup table at once."""
    joined = "\n".join(line.strip() for line in text.split("\n")).lower()
    if joined.isascii():
        return joined.translate(_lm_table(True)).split("\n")
    return _translate_for_lm(unicodedata.normalize("NFD", joined), keep_newline=True).split("\n")


def dedup_keys(text: str) -> List[str]:
    """``normalize_for_dedup`` of every line of ``text`` (a test holds it equal to
    ``[normalize_for_dedup(line) for line in text.split("\n")]``): the lines stripped first,
    then the whole text lowercased and translated at once."""
    joined = "\n".join(line.strip() for line in text.split("\n")).lower()
    return _translate(joined, _dedup_lookup(False)).split("\n")


def dedup_keys_strict(text: str) -> List[str]:
    """``normalize_for_dedup_strict`` of every line of ``text``, in one pass as ``dedup_keys``."""
    return [" ".join(line.split()) for line in _translate(text.lower(), _dedup_lookup(True)).split("\n")]


@lru_cache(maxsize=1)
def white_space() -> np.ndarray:
    """Whether each code point is white space to ``str.split`` (a bool array over all of them)."""
    return np.fromiter(map(str.isspace, every_code_point()), dtype=bool, count=sys.maxunicode + 1)


def strict_key_codes(texts: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """The texts' ``dedup_keys_strict`` as code points before white space is collapsed, all in one
    pass: (uint32 code points of every text one after the other, each followed by a newline;
    the offset where each text starts, and their end). Its runs without ``white_space`` are the words
    that ``" ".join(dedup_keys_strict(text)).split()`` gives."""
    lowered = [text.lower() for text in texts]  # lowercasing may change a text's length
    codes = _dedup_lookup(True)[
        np.frombuffer(("\n".join(lowered) + "\n").encode("utf-32-le", "surrogatepass"), dtype="<u4")
    ]
    kept = codes != _DELETE
    spans = np.array([len(text) + 1 for text in lowered], dtype=np.int64)  # each text and its separator: never empty
    per_text = np.add.reduceat(kept, np.cumsum(spans) - spans, dtype=np.int64) if len(texts) else spans
    return codes[kept], np.r_[0, np.cumsum(per_text)]


def _translate_for_lm(decomposed: str, keep_newline: bool) -> str:
    """``_lm_table`` applied to lowercased NFD text, through the code-point lookup array."""
    if any(char in decomposed for char in _lm_expanding()):
        return decomposed.translate(_lm_table(keep_newline))
    return _translate(decomposed, _lm_lookup(keep_newline))
