"""The scripts a text is written in, and whether a language's label fits them.

A fastText model reads character n-grams and words, not scripts: lid.176 has stored Tamazight in
Tifinagh as en, Santali in Ol Chiki as ru and a Chinese paragraph without one kana as ja. Each of
XLM-R's languages is written in the scripts of its row of ``toolkit.languages`` (ISO 15924), and
a text fits a language when those scripts hold at least ``FIT_SHARE`` of its letters' UTF-8 bytes
(bytes, so that a Chinese sentence weighs what its translation does); Japanese also needs kana:
``KANA_SHARE`` of its Han and kana letters. Letters are counted by Unicode block (``BLOCKS``):
digits, punctuation, symbols and marks count for no script.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Optional, Tuple

import numpy as np

from toolkit.languages import XLMR_LANGUAGES

# ISO 15924 code -> the Unicode blocks of its letters (inclusive ranges). Latin's ranges skip
# ASCII's and Latin-1's punctuation, digits and symbols (× and ÷ too).
BLOCKS: Dict[str, Tuple[Tuple[int, int], ...]] = {
    "Latn": ((0x41, 0x5A), (0x61, 0x7A), (0xAA, 0xAA), (0xBA, 0xBA), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x2AF),
             (0x1D00, 0x1DBF), (0x1E00, 0x1EFF), (0x2C60, 0x2C7F), (0xA720, 0xA7FF), (0xAB30, 0xAB6F),
             (0xFF21, 0xFF3A), (0xFF41, 0xFF5A)),
    "Grek": ((0x370, 0x3FF), (0x1F00, 0x1FFF)),
    "Cyrl": ((0x400, 0x52F), (0x1C80, 0x1C8F), (0x2DE0, 0x2DFF), (0xA640, 0xA69F)),
    "Armn": ((0x531, 0x58F), (0xFB13, 0xFB17)),
    "Hebr": ((0x591, 0x5FF), (0xFB1D, 0xFB4F)),
    "Arab": ((0x600, 0x6FF), (0x750, 0x77F), (0x870, 0x8FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)),
    "Syrc": ((0x700, 0x74F),),
    "Thaa": ((0x780, 0x7BF),),
    "Nkoo": ((0x7C0, 0x7FF),),
    "Deva": ((0x900, 0x97F), (0xA8E0, 0xA8FF)),
    "Beng": ((0x980, 0x9FF),),
    "Guru": ((0xA00, 0xA7F),),
    "Gujr": ((0xA80, 0xAFF),),
    "Orya": ((0xB00, 0xB7F),),
    "Taml": ((0xB80, 0xBFF),),
    "Telu": ((0xC00, 0xC7F),),
    "Knda": ((0xC80, 0xCFF),),
    "Mlym": ((0xD00, 0xD7F),),
    "Sinh": ((0xD80, 0xDFF),),
    "Thai": ((0xE00, 0xE7F),),
    "Laoo": ((0xE80, 0xEFF),),
    "Tibt": ((0xF00, 0xFFF),),
    "Mymr": ((0x1000, 0x109F), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F)),
    "Geor": ((0x10A0, 0x10FF), (0x1C90, 0x1CBF), (0x2D00, 0x2D2F)),
    "Hang": ((0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xFFA0, 0xFFDC)),
    "Ethi": ((0x1200, 0x139F), (0x2D80, 0x2DDF), (0xAB00, 0xAB2F)),
    "Cher": ((0x13A0, 0x13FF),),
    "Cans": ((0x1400, 0x167F), (0x18B0, 0x18FF)),
    "Khmr": ((0x1780, 0x17FF), (0x19E0, 0x19FF)),
    "Mong": ((0x1800, 0x18AF),),
    "Bali": ((0x1B00, 0x1B7F),),
    "Sund": ((0x1B80, 0x1BBF),),
    "Olck": ((0x1C50, 0x1C7F),),
    "Tfng": ((0x2D30, 0x2D7F),),
    "Hira": ((0x3041, 0x309F),),
    "Kana": ((0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9D)),
    "Bopo": ((0x3100, 0x312F), (0x31A0, 0x31BF)),
    "Hani": ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F)),
    "Yiii": ((0xA000, 0xA4CF),),
    "Vaii": ((0xA500, 0xA63F),),
    "Java": ((0xA980, 0xA9DF),),
    "Mtei": ((0xAAE0, 0xAAFF), (0xABC0, 0xABFF)),
}  # fmt: skip
SCRIPTS: Tuple[str, ...] = tuple(BLOCKS)
# The scripts a text of a composite ISO 15924 code is made of (the language table's codes).
COMPOSITE: Dict[str, Tuple[str, ...]] = {
    "Jpan": ("Hani", "Hira", "Kana"),
    "Hans": ("Hani",),
    "Hant": ("Hani", "Bopo"),
}
UNKNOWN_PREFIX = "und_"  # the label of text in a script no identifying model names a language of
FIT_SHARE = 0.5  # of a text's letter bytes its language's scripts must hold
KANA_SHARE = 0.05  # of a Japanese text's Han and kana letters that are kana (Japanese prose: 30-70%)

_INDEX = {script: i for i, script in enumerate(SCRIPTS)}
_SCRIPT_OF_POINT = np.zeros(0x110000, dtype=np.uint8)  # code point -> 1 + its script's index, 0: no script
for _script, _blocks in BLOCKS.items():
    for _start, _end in _blocks:
        _SCRIPT_OF_POINT[_start : _end + 1] = _INDEX[_script] + 1
_LATIN = _INDEX["Latn"]
_ASCII_LETTERS = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1))
_LATIN1_LETTERS = bytes([0xAA, 0xBA, *range(0xC0, 0xD7), *range(0xD8, 0xF7), *range(0xF8, 0x100)])  # 2 UTF-8 bytes each
_KANA = [_INDEX["Hira"], _INDEX["Kana"]]
_HAN = _INDEX["Hani"]


def letter_bytes(text: str) -> np.ndarray:
    """UTF-8 bytes of the text's letters per script of ``SCRIPTS`` (vectorized; text in Latin-1,
    much of the web's, counted without numpy)."""
    try:
        encoded = text.encode("latin-1")
    except UnicodeEncodeError:
        encoded = None
    if encoded is not None:
        counts = np.zeros(len(SCRIPTS), dtype=np.float64)
        ascii_letters = len(encoded) - len(encoded.translate(None, _ASCII_LETTERS))
        counts[_LATIN] = ascii_letters + 2 * (len(encoded) - len(encoded.translate(None, _LATIN1_LETTERS)))
        return counts
    points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    size = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
    return np.bincount(_SCRIPT_OF_POINT[points], weights=size, minlength=len(SCRIPTS) + 1)[1:]


def written_with(iso15924: str) -> Tuple[str, ...]:
    """The scripts of ``SCRIPTS`` text written in ``iso15924`` is made of."""
    return COMPOSITE.get(iso15924, (iso15924,))


def _language_scripts() -> Dict[str, FrozenSet[int]]:
    return {
        language.code: frozenset(_INDEX[s] for code in language.script.split("|") for s in written_with(code))
        for language in XLMR_LANGUAGES
    }


LANGUAGE_SCRIPTS = _language_scripts()  # XLM-R code -> indices into SCRIPTS


def fits(language: str, counts: np.ndarray) -> bool:
    """Whether a text of ``letter_bytes`` ``counts`` is written as ``language`` is (an XLM-R code;
    any other label fits whatever the text)."""
    scripts = LANGUAGE_SCRIPTS.get(language)
    if scripts is None:
        return True
    total = counts.sum()
    if total == 0 or counts[sorted(scripts)].sum() < FIT_SHARE * total:
        return False
    if language == "ja":  # Han without kana is Chinese (kana are 3 bytes, as Han is)
        kana = counts[_KANA].sum()
        return bool(kana >= KANA_SHARE * (kana + counts[_HAN]))
    return True


def other_script_bytes(counts: np.ndarray) -> int:
    """Letter bytes of a text (``letter_bytes``) outside its main script, Han and kana counted
    as one script, as Japanese writes them."""
    merged = counts.copy()
    merged[_HAN] = counts[[_HAN, *_KANA]].sum()
    merged[_KANA] = 0
    return int(merged.sum() - merged.max())


def main_script(counts: np.ndarray) -> Optional[str]:
    """The script holding most of a text's letter bytes; None for a text without letters."""
    return SCRIPTS[int(np.argmax(counts))] if counts.sum() else None


def unknown_language(counts: np.ndarray) -> str:
    """The label of a text in a script none of the identifying models knows: BCP-47's
    undetermined language with the script (``und_Tfng``), as GlotLID labels such text."""
    return f"{UNKNOWN_PREFIX}{main_script(counts) or 'Zyyy'}"
