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
and each language's lines, in page order, make one part. Each part is then identified as a
whole, with the checks a page gets (script, neighbours model), and parts that end with the same
label are one part, identified again, until every part of the page has a label of its own (a
page whose parts all end with one label goes on whole). A part is then a document like any
other: quality signals are its page's and language ID's threshold keeps or drops it under the
label it got here (a page kept whole goes on with the identification it got here).

A part keeps its page's url, digest, title and ``original_*`` counts; ``line_ids`` says which
lines of the page it holds, and ``page`` (not written to the shards) its number and its page's
size, so that the page's read and dedup counts are counted once.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from filters.document import Document
from filters.stage import Result, Results, Stage
from lid import scripts
from lid.model import LanguageIdentifier, LidConfig

MIN_LINE_CHARS = 40  # shorter lines (menus, dates, names) are not identified: they follow their neighbours
SURE = 0.7  # a line whose language scores this much counts towards it
MIN_PART_BYTES = 150  # bytes of sure lines a language needs to be in the page (a sentence or two)
WHOLE = 0.95  # a page in one script whose whole text scores this much for one language is not read line by line
MAX_PARTS = 8  # a page in more languages than this is dropped as mixed (a list of translations)
MIXED = "mixed"  # the drop reason


def one_script(text: str) -> bool:
    """Whether the text has less than ``MIN_PART_BYTES`` of letters outside its main script: a
    page whose whole-text language ID is sure can still hold a paragraph in another script that
    fastText's words miss (a page of Ukrainian, Japanese and Chinese paragraphs reads as
    Ukrainian at 0.996)."""
    return scripts.other_script_bytes(scripts.letter_bytes(text)) < MIN_PART_BYTES


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
            self.identifier = self.config.identifier()  # the spaced mode's: split and drop need it

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
        results: List = []
        to_split: Dict[int, List[str]] = {}  # result index -> each line's language
        for doc, page, page_labels, (language, score) in zip(docs, lines, labels, whole):
            present = languages_in(page_labels, page)
            if len(present) < 2:  # identified already: language ID does not identify it again
                results.append(({**doc, "language": language, "language_score": score}, None))
            elif self.config.mixed == "drop" or len(present) > MAX_PARTS:
                results.append((doc, MIXED))
            else:
                to_split[len(results)] = assign_lines(page_labels, present)
                results.append(None)
        for index, parts in self._parts([docs[i] for i in to_split], list(to_split.values())).items():
            results[list(to_split)[index]] = parts
        return results

    def _parts(self, pages: Sequence[Document], assignments: List[List[str]]) -> Dict[int, Results]:
        """Each page's parts, identified, with those that end with the same label merged (and
        identified again) until every label is one part's; a page left in one part, whole."""
        identified: Dict[str, Tuple[Optional[str], float]] = {}  # a part's text -> its identification
        done: Dict[int, Results] = {}
        pending = dict(enumerate(assignments))
        while pending:
            parts = {p: split_page(pages[p], assigned) for p, assigned in pending.items()}
            new = list(dict.fromkeys(part["raw_content"] for page in parts.values() for part in page))
            new = [text for text in new if text not in identified]
            identified.update(zip(new, self.identifier.predict(new)))
            for p, page in parts.items():
                final = [identified[part["raw_content"]] for part in page]
                if len({language for language, _ in final}) == len(final):
                    done[p] = [
                        ({**part, "language": language, "language_score": score}, None)
                        for part, (language, score) in zip(page, final)
                    ]
                    del pending[p]
                else:  # each line goes to its part's label: parts with one label become one
                    label_of = {part["page"]["part"]: language for part, (language, _) in zip(page, final)}
                    order = list(dict.fromkeys(pending[p]))
                    pending[p] = [str(label_of[order.index(key)]) for key in pending[p]]
        for p, page in done.items():
            if len(page) == 1:  # every part ended with one label: the page goes on whole
                (part, _), page_doc = page[0], pages[p]
                done[p] = ({**page_doc, "language": part["language"], "language_score": part["language_score"]}, None)
        return done

    def __getstate__(self):  # the loaded models do not pickle: workers load their own
        return {**self.__dict__, "identifier": None}
