"""CCNet's two text normalizations, as translate tables built once per process.

``normalize_for_dedup`` makes lines that differ only in case, digits, punctuation or spacing hash
alike; ``normalize_for_lm`` is what CCNet applies before its SentencePiece + KenLM models
(training and scoring must match it exactly, so that CCNet's published models drop in).
"""
from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache
from typing import Dict, List

import numpy as np

# CCNet's text_normalizer.UNICODE_PUNCT: CJK and typographic punctuation mapped to ASCII.
UNICODE_PUNCT = {
    "，": ",", "。": ".", "、": ",", "„": '"', "”": '"', "“": '"', "«": '"', "»": '"', "１": '"',
    "」": '"', "「": '"', "《": '"', "》": '"', "´": "'", "∶": ":", "：": ":", "？": "?", "！": "!",
    "（": "(", "）": ")", "；": ";", "–": "-", "—": " - ", "．": ". ", "～": "~", "’": "'",
    "…": "...", "━": "-", "〈": "<", "〉": ">", "【": "[", "】": "]", "％": "%", "►": "-",
}
# CCNet's NON_PRINTING_CHARS: C0 and C1 control characters (tab included).
NON_PRINTING = [*range(0, 32), *range(127, 160)]


@lru_cache(maxsize=1)
def _dedup_table() -> Dict[int, object]:
    """Decimal digits -> "0"; punctuation and non-printing characters (controls, formats,
    private use, surrogates, unassigned) -> removed; white space kept."""
    table: Dict[int, object] = {}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        category = unicodedata.category(char)
        if category == "Nd":
            table[code] = "0"
        elif (category[0] == "P" or category[0] == "C") and not char.isspace():
            table[code] = None
    return table


@lru_cache(maxsize=1)
def _lm_table() -> Dict[int, object]:
    """After NFD: combining marks (accents) removed, digits -> "0", CCNet's punctuation map,
    non-printing characters removed — CCNet applies these in that order, on disjoint sets."""
    table: Dict[int, object] = {}
    for code in range(sys.maxunicode + 1):
        category = unicodedata.category(chr(code))
        if category == "Mn":
            table[code] = None
        elif category == "Nd":
            table[code] = "0"
    table.update({ord(char): ascii for char, ascii in UNICODE_PUNCT.items() if ord(char) not in table})
    # "\n" is kept: a line has none, and texts are translated whole then split into lines.
    table.update({code: None for code in NON_PRINTING if code != ord("\n")})
    return table


_DELETE = np.uint32(0xFFFFFFFF)  # lookup-table mark: drop the character


@lru_cache(maxsize=1)
def _lm_expanding() -> tuple:
    """The characters ``_lm_table`` maps to several characters."""
    return tuple(chr(code) for code, value in _lm_table().items() if value is not None and len(value) > 1)


@lru_cache(maxsize=1)
def _lm_lookup() -> np.ndarray:
    """``_lm_table`` as an array over every code point, for vectorized translation (texts with
    one of the ``_lm_expanding`` characters go through str.translate instead)."""
    lookup = np.arange(sys.maxunicode + 1, dtype=np.uint32)
    for code, value in _lm_table().items():
        if value is None:
            lookup[code] = _DELETE
        elif len(value) == 1:
            lookup[code] = ord(value)
    return lookup


def normalize_for_dedup(line: str) -> str:
    """CCNet's dedup normalization: strip, lowercase, digits to 0, punctuation and control
    characters removed, runs of white space collapsed to one space."""
    return " ".join(line.lower().translate(_dedup_table()).split())


def normalize_for_lm(line: str) -> str:
    """CCNet's ``normalize(line)`` (accent, case, numbers, punct=1): strip, lowercase, strip
    accents (NFD without combining marks, left decomposed as CCNet leaves it), digits to 0,
    Unicode punctuation mapped to ASCII, non-printing characters removed."""
    line = line.strip()
    if not line:
        return line
    line = line.lower()
    if not line.isascii():
        line = unicodedata.normalize("NFD", line)
    return line.translate(_lm_table())


def normalize_lines_for_lm(text: str) -> List[str]:
    """``normalize_for_lm`` of every line of ``text``, in one vectorized pass over the text.

    Equal to ``[normalize_for_lm(line) for line in text.split("\n")]`` (a test holds it to
    that): each line is stripped first, as CCNet does, then the whole text is lowercased,
    decomposed and mapped through a code-point lookup table at once."""
    lines = [line.strip() for line in text.split("\n")]
    joined = "\n".join(lines).lower()
    if joined.isascii():
        return joined.translate(_lm_table()).split("\n")  # str.translate's fast ASCII path
    joined = unicodedata.normalize("NFD", joined)
    if any(char in joined for char in _lm_expanding()):
        return joined.translate(_lm_table()).split("\n")
    mapped = _lm_lookup()[np.frombuffer(joined.encode("utf-32-le"), dtype="<u4")]
    return mapped[mapped != _DELETE].tobytes().decode("utf-32-le").split("\n")
