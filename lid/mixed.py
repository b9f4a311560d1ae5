"""Pages in several languages, read line by line (a WET line is a paragraph): each language's
lines become a row of their own (``split``), or the page is dropped as ``mixed`` (``drop``).

CCNet identifies a page as a whole and keeps its top label (``keep``, the ccnet mode's only
choice): a page with a paragraph each in Hindi, Vietnamese and French can come out as Scottish
Gaelic at 0.3. Here a page is read line by line unless the spaced mode's identifier (CLD3
included) gives it one language with at least ``WHOLE`` and it is written in one script
(``one_script``): each line of at least ``MIN_LINE_CHARS`` characters is identified, and a
language is *in* the page when its lines scored at least ``SURE`` hold ``MIN_PART_BYTES`` bytes
of UTF-8 or more (bytes, so that a Chinese paragraph weighs what its translation does). A page
with one such language (or none) goes on whole, as before; a page with several is split: every
line goes to the language of the nearest sure line before it (after it, for the first lines),
and each language's lines, in page order, make one part. A part is then a document like any
other: quality signals are its page's, language ID identifies the part as a whole and its
threshold keeps or drops it (a page kept whole goes on with the identification it got here).

A part keeps its page's url, digest, title and ``original_*`` counts; ``line_ids`` says which
lines of the page it holds, and ``page`` (not written to the shards) its number and its page's
size, so that the page's read and dedup counts are counted once.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from filters.document import Document
from filters.stage import Result, Stage
from lid.model import LanguageIdentifier, LidConfig

MIN_LINE_CHARS = 40  # shorter lines (menus, dates, names) are not identified: they follow their neighbours
SURE = 0.7  # a line whose language scores this much counts towards it
MIN_PART_BYTES = 150  # bytes of sure lines a language needs to be in the page (a sentence or two)
WHOLE = 0.95  # a page in one script whose whole text scores this much for one language is not read line by line
MAX_PARTS = 8  # a page in more languages than this is dropped as mixed (a list of translations)
MIXED = "mixed"  # the drop reason


# Code points where scripts start and end (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic,
# Devanagari, Bengali, the other Indic scripts, Thai to Myanmar, Georgian, Ethiopic, Khmer, kana
# and Han together as Japanese writes them, Hangul); anything else counts as no script.
_SCRIPT_RANGES = (
    (0x41, 0x24F), (0x370, 0x3FF), (0x400, 0x52F), (0x530, 0x58F), (0x590, 0x5FF), (0x600, 0x8FF),
    (0x900, 0x97F), (0x980, 0x9FF), (0xA00, 0xDFF), (0xE00, 0x109F), (0x10A0, 0x10FF), (0x1100, 0x11FF),
    (0x1200, 0x137F), (0x1780, 0x17FF), (0x3040, 0x30FF), (0x3130, 0x318F), (0x3400, 0x9FFF),
    (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFB50, 0xFEFF),
)  # fmt: skip
_SCRIPT_OF = {  # range index -> script (Hangul's two ranges, Han's and Arabic's presentation forms merged)
    i: {11: 15, 16: 14, 17: 15, 18: 14, 19: 5}.get(i, i) for i in range(len(_SCRIPT_RANGES))
}
_STARTS = np.array([start for start, _ in _SCRIPT_RANGES])
_ENDS = np.array([end for _, end in _SCRIPT_RANGES])
_MERGE = np.array([_SCRIPT_OF[i] for i in range(len(_SCRIPT_RANGES))])


def other_script_bytes(text: str) -> int:
    """UTF-8 bytes of the text's letters in other scripts than its main one (by bytes, as
    ``languages_in`` weighs languages; Latin's punctuation and digits count as Latin, anything
    outside ``_SCRIPT_RANGES`` as no script)."""
    points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    where = np.searchsorted(_STARTS, points, side="right") - 1
    inside = (where >= 0) & (points <= _ENDS[np.maximum(where, 0)])
    size = 1 + (points >= 0x80) + (points >= 0x800)  # UTF-8 bytes, none of these ranges needs 4
    weights = np.bincount(_MERGE[where[inside]], weights=size[inside], minlength=len(_SCRIPT_RANGES))
    return int(weights.sum() - weights.max())


def one_script(text: str) -> bool:
    """Whether the text has less than ``MIN_PART_BYTES`` of letters outside its main script: a
    page whose whole-text language ID is sure can still hold a paragraph in another script that
    fastText's words miss (a page of Ukrainian, Japanese and Chinese paragraphs reads as
    Ukrainian at 0.996)."""
    return other_script_bytes(text) < MIN_PART_BYTES


def languages_in(labels: Sequence[Optional[tuple]], lines: Sequence[str]) -> List[str]:
    """The languages in a page, most bytes first: those whose sure lines (``labels``: (language,
    score) per line, None where not identified) hold ``MIN_PART_BYTES`` or more."""
    size: Dict[str, int] = {}
    for label, line in zip(labels, lines):
        if label is not None and label[0] is not None and label[1] >= SURE:
            size[label[0]] = size.get(label[0], 0) + len(line.encode())
    present = [language for language, count in size.items() if count >= MIN_PART_BYTES]
    return sorted(present, key=lambda language: (-size[language], language))


def assign_lines(labels: Sequence[Optional[tuple]], present: Sequence[str]) -> List[str]:
    """Each line's language: its own where it is a sure line of a present language, else that of
    the nearest such line before it (after it, for the lines before the first)."""
    own = [label[0] if label is not None and label[1] >= SURE and label[0] in present else None for label in labels]
    first = next(language for language in own if language is not None)
    assigned, current = [], first
    for language in own:
        current = language or current
        assigned.append(current)
    return assigned


def split_page(doc: Document, assigned: Sequence[str]) -> List[Document]:
    """The page's parts, one per language in order of first line; ``assigned``: each line's language."""
    lines = doc["raw_content"].split("\n")
    line_ids = doc["line_ids"] or list(range(len(lines)))
    order = list(dict.fromkeys(assigned))
    parts = []
    for number, language in enumerate(order):
        mine = [i for i, assigned_to in enumerate(assigned) if assigned_to == language]
        text = "\n".join(lines[i] for i in mine)
        page = {"part": number, "parts": len(order), "length": doc["length"], "nlines": doc["nlines"]}
        parts.append(
            {
                **doc,
                "raw_content": text,
                "length": len(text),
                "nlines": len(mine),
                "line_ids": [line_ids[i] for i in mine],
                "page": page,
            }
        )
    return parts


class MixedPages(Stage):
    """Stage (before language ID): a page in several languages split into one document per
    language (``config.mixed`` ``split``) or dropped as ``mixed`` (``drop``); lines identified
    with ``config``'s model in the spaced mode."""

    name = "mixed_pages"
    reasons = (MIXED,)

    def __init__(self, config: LidConfig):
        if config.mixed not in ("split", "drop"):
            raise ValueError(f"mixed pages are split or dropped by this stage, not {config.mixed!r}")
        self.config = config
        self.identifier: Optional[LanguageIdentifier] = None

    @classmethod
    def counts(cls, doc: Document, outcome: str) -> Dict[str, int]:
        page = doc.get("page")
        if page is None:
            return {}
        return {"split": 1, "parts": page["parts"]} if page["part"] == 0 else {}

    def setup(self) -> None:
        if self.identifier is None:
            from toolkit.storage import localize

            self.identifier = LanguageIdentifier(localize(self.config.model_path), "spaced")

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: Sequence[Document]):
        """Per page, the page (kept whole), its parts (a list of results), or the page dropped as mixed."""
        whole = self.identifier.predict([doc["raw_content"] for doc in docs])
        lines = [
            doc["raw_content"].split("\n") if score < WHOLE or not one_script(doc["raw_content"]) else []
            for doc, (_, score) in zip(docs, whole)
        ]
        wanted = [(d, i) for d, page in enumerate(lines) for i, line in enumerate(page) if len(line) >= MIN_LINE_CHARS]
        predicted = self.identifier.predict([lines[d][i] for d, i in wanted])
        labels: List[List[Optional[tuple]]] = [[None] * len(page) for page in lines]
        for (d, i), label in zip(wanted, predicted):
            labels[d][i] = label
        results = []
        for doc, page, page_labels, (language, score) in zip(docs, lines, labels, whole):
            present = languages_in(page_labels, page)
            if len(present) < 2:  # identified already: language ID does not identify it again
                results.append(({**doc, "language": language, "language_score": score}, None))
            elif self.config.mixed == "drop" or len(present) > MAX_PARTS:
                results.append((doc, MIXED))
            else:
                results.append([(part, None) for part in split_page(doc, assign_lines(page_labels, present))])
        return results

    def __getstate__(self):  # the loaded models do not pickle: workers load their own
        return {**self.__dict__, "identifier": None}
