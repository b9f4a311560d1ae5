"""CCNet's two text normalizations, as translate tables built once per process.

``normalize_for_dedup`` makes lines that differ only in case, digits, punctuation or spacing hash
alike; ``normalize_for_lm`` is what CCNet applies before its SentencePiece + KenLM models
(training and scoring must match it exactly, so that CCNet's published models drop in).
"""
from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache
from typing import Dict

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
    table.update({code: None for code in NON_PRINTING})
    return table


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
