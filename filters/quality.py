"""Heuristic quality signals on a document, and optional filters on them (off by default).

Signals (columns of every output row):
  duplicate_line_frac  share of the page's original lines that dedup removed (boilerplate)
  mean_line_length     characters per line after dedup
  terminal_punct_frac  share of lines ending in terminal punctuation (. ! ? and their CJK,
                       Arabic, Devanagari, Armenian, ... forms, or a closing quote after one)
  non_alpha_frac       share of non-space characters that are not letters (digits, symbols, punctuation)
  short_line_frac      share of lines shorter than SHORT_LINE characters
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Dict, Optional, Tuple

import numpy as np

from filters.document import Document
from filters.normalize import every_code_point
from filters.stage import Stage

SHORT_LINE = 30  # characters; a line below this is "very short" (as datatrove's FineWeb filter)
TERMINAL_PUNCTUATION = frozenset(".!?。！？｡۔؟।॥։።፧…")
CLOSING_QUOTES = frozenset("\"'”’»」』)")


OTHER, LETTER, SPACE = 0, 1, 2


@lru_cache(maxsize=1)
def _char_classes() -> np.ndarray:
    """Per code point: LETTER (str.isalpha), SPACE (str.isspace) or OTHER."""
    count = sys.maxunicode + 1
    letter = np.fromiter(map(str.isalpha, every_code_point()), dtype=bool, count=count)
    space = np.fromiter(map(str.isspace, every_code_point()), dtype=bool, count=count)
    return np.where(letter, LETTER, np.where(space, SPACE, OTHER)).astype(np.uint8)


def _count_classes(text: str) -> np.ndarray:
    """How many characters of ``text`` are OTHER, LETTER and SPACE, in one vectorized pass."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return np.bincount(_char_classes()[codes], minlength=3)


def _ends_sentence(line: str) -> bool:
    line = line.rstrip()
    while line and line[-1] in CLOSING_QUOTES:
        line = line[:-1]
    return bool(line) and line[-1] in TERMINAL_PUNCTUATION


def quality_signals(doc: Document) -> Dict[str, float]:
    """The five signals of a document (0.0 for an empty one)."""
    text = doc["raw_content"]
    lines = text.split("\n") if text else []
    n = len(lines)
    other, letters, _ = _count_classes(text).tolist()
    non_space = other + letters
    original = doc["original_nlines"]
    return {
        "duplicate_line_frac": (original - doc["nlines"]) / original if original else 0.0,
        "mean_line_length": (len(text) - (n - 1)) / n if n else 0.0,  # lines are joined by one "\n"
        "terminal_punct_frac": sum(_ends_sentence(line) for line in lines) / n if n else 0.0,
        "non_alpha_frac": (non_space - letters) / non_space if non_space else 0.0,
        "short_line_frac": sum(len(line.strip()) < SHORT_LINE for line in lines) / n if n else 0.0,
    }


@dataclass(frozen=True)
class QualityConfig:
    """Thresholds of the optional filters; None leaves a filter off (the default)."""

    max_duplicate_line_frac: Optional[float] = None  # drop pages that were mostly boilerplate
    min_mean_line_length: Optional[float] = None  # drop menus and lists of short items
    min_terminal_punct_frac: Optional[float] = None  # drop pages with few sentence endings
    max_non_alpha_frac: Optional[float] = None  # drop tables of numbers and symbol soup
    max_short_line_frac: Optional[float] = None  # drop pages made of very short lines

    def __post_init__(self):
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None:
                continue
            if value < 0 or (field.name != "min_mean_line_length" and value > 1):
                raise ValueError(f"{field.name} must be a fraction in [0, 1], got {value}")


def quality_drop_reason(signals: Dict[str, float], config: QualityConfig) -> Optional[str]:
    """The first filter the signals fail, as a drop reason, or None to keep the document."""
    for signal, threshold, fails in _checks(config):
        if threshold is not None and fails(signals[signal], threshold):
            return f"quality_{signal}"
    return None


def _checks(config: QualityConfig):
    return (
        ("duplicate_line_frac", config.max_duplicate_line_frac, lambda v, t: v > t),
        ("mean_line_length", config.min_mean_line_length, lambda v, t: v < t),
        ("terminal_punct_frac", config.min_terminal_punct_frac, lambda v, t: v < t),
        ("non_alpha_frac", config.max_non_alpha_frac, lambda v, t: v > t),
        ("short_line_frac", config.max_short_line_frac, lambda v, t: v > t),
    )


class QualityFilter(Stage):
    """Stage: the five signal columns set on every document; with thresholds in ``config``,
    the first signal a document fails drops it as ``quality_<signal>``."""

    name = "quality"

    def __init__(self, config: QualityConfig):
        self.config = config
        self.reasons = tuple(f"quality_{signal}" for signal, _, _ in _checks(config))

    def apply(self, doc: Document) -> Tuple[Document, Optional[str]]:
        signals = quality_signals(doc)
        return {**doc, **signals}, quality_drop_reason(signals, self.config)
