"""A test set of planted near-duplicates at known Jaccard similarity, the brute-force truth
about it, and WET files of it for the mine job.

``generate`` writes web pages in several languages and scripts (Latin, Cyrillic, Chinese and
Japanese, shingled by characters) from ``wordfreq``'s word lists, drawn by word frequency much as
the embedded sample does (so that lid.176 names their language). The mine job runs CCNet's
exact line dedup before near-dedup, which removes every copy of a line found in two documents;
each kind of copy is therefore made so that it shares no whole line with its original, and
stays a near-duplicate after line dedup (``after_line_dedup`` simulates it):

- ``reflow``: the same text wrapped at other line breaks;
- ``edit``: a small edit (a word replaced, dropped or added) in every line but one;
- ``boilerplate``: a header and a footer of its own around the text, wrapped at other breaks;
- ``reorder``: the paragraphs in another order, wrapped at other breaks;
- ``template``: pages of one template, each line with a slot that every page fills with its own
  name (a group of several pages, all near-duplicates of each other);
- ``partial``: below the threshold, to be kept: a page sharing part of another's paragraphs
  (wrapped at other breaks) with new ones, at a Jaccard similarity drawn in ``PARTIAL_RANGES``;
- ``unrelated``: a page of its own.

Each document is a dict: ``url``, ``title``, ``text``, ``language``, ``kind``, ``group`` (the
documents of a group are planted near-duplicates of each other; a partial copy has a group of its
own) and ``source`` (the url of the page it was made from, or None).
"""

from __future__ import annotations

import random
import textwrap
from functools import cache
from itertools import accumulate, combinations
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import numpy as np

from ccnet_pipeline.samples import wet_writer
from ccnet_pipeline.samples.wet_writer import WetPage
from filters.dedup import (
    find_duplicated_hashes,
    removed_lines_by_record,
    removed_positions,
    segment_line_hashes,
    summarize_segment,
)
from filters.minhash import by_characters, jaccard, shingles
from toolkit import storage

LANGUAGES = ("en", "fr", "de", "es", "ru", "zh", "ja")
NEAR_KINDS = ("reflow", "edit", "boilerplate", "reorder", "template")
PARTIAL_RANGES = ((0.4, 0.5), (0.6, 0.68))  # Jaccard similarity of the partial copies: well and just below 0.8
PARAGRAPHS = 6  # lines of a page
TEMPLATE_PAGES = 3  # pages of one template
Sentence = List[str]
Paragraph = List[Sentence]
Page = List[Paragraph]


@cache
def _vocabulary(language: str) -> Tuple[Tuple[str, ...], Tuple[float, ...]]:
    """The 5,000 most frequent words of ``language`` made of letters only (digits would fold to
    0 in both dedup keys), and cumulative weights by Zipf's law of their rank (reading the
    lists' frequencies too would take a second per language)."""
    import wordfreq

    words = tuple(word for word in wordfreq.top_n_list(language, 5000) if word.isalpha())
    return words, tuple(accumulate(1.0 / rank for rank in range(1, len(words) + 1)))


class _Writer:
    """Sentences, paragraphs and pages of one language, from one seeded random stream."""

    def __init__(self, language: str, rng: random.Random):
        self.language = language
        self.rng = rng
        self.words, self.cumulative = _vocabulary(language)
        self.no_space = by_characters(language)

    def sentence(self, low: int = 8, high: int = 20) -> Sentence:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=self.rng.randint(low, high))

    def paragraph(self) -> Paragraph:
        """60 to 100 words (characters: about 90 to 150): long enough that one edit leaves a
        line above 0.8 Jaccard similarity, longer than any reflowed line."""
        paragraph, size = [], self.rng.randint(60, 100)
        while sum(map(len, paragraph)) < size:
            paragraph.append(self.sentence())
        return paragraph

    def page(self, paragraphs: int = PARAGRAPHS) -> Page:
        return [self.paragraph() for _ in range(paragraphs)]

    def rare_word(self) -> str:
        """A name-like word: drawn uniformly from the less frequent half of the list."""
        return self.rng.choice(self.words[len(self.words) // 2 :])

    def render_sentence(self, sentence: Sentence) -> str:
        if self.no_space:
            return "".join(sentence) + "。"
        text = " ".join(sentence)
        return text[0].upper() + text[1:] + "."

    def render_paragraph(self, paragraph: Paragraph) -> str:
        return ("" if self.no_space else " ").join(map(self.render_sentence, paragraph))

    def render(self, page: Page) -> str:
        """One line per paragraph."""
        return "\n".join(map(self.render_paragraph, page))

    def reflow(self, page: Page) -> str:
        """The page's text as one run, wrapped at another width than its paragraphs: 40 to 70
        characters (20 to 35 for a language without spaces), breaking at spaces when it has
        them. Every paragraph is longer, so no line equals one of the page's."""
        run = ("" if self.no_space else " ").join(map(self.render_paragraph, page))
        if self.no_space:
            width = self.rng.randint(20, 35)
            return "\n".join(run[i : i + width] for i in range(0, len(run), width))
        return "\n".join(textwrap.wrap(run, self.rng.randint(40, 70), break_long_words=False, break_on_hyphens=False))

    def edit(self, paragraph: Paragraph) -> Paragraph:
        """The paragraph with one word replaced, dropped or added."""
        edited = [list(sentence) for sentence in paragraph]
        sentence = self.rng.choice(edited)
        where = self.rng.randrange(len(sentence))
        action = self.rng.choice(("replace", "drop", "add"))
        if action == "replace":
            sentence[where] = self.rng.choice([word for word in self.words[:500] if word != sentence[where]])
        elif action == "drop":
            del sentence[where]
        else:
            sentence.insert(where, self.rng.choice(self.words[:500]))
        return edited

    def boilerplate(self) -> Tuple[str, str]:
        """A site's header (its name, a menu) and footer (a notice), about 35 words."""
        join = "" if self.no_space else " "
        name = join.join(self.rare_word().title() for _ in range(2))
        menu = " | ".join(self.rare_word().title() for _ in range(6))
        notice = self.render_sentence(self.sentence(20, 25))
        return f"{name}\n{menu}", f"© {name}. {notice}"


def generate(seed: int = 0, languages: Sequence[str] = LANGUAGES, groups_per_kind: int = 2) -> List[Dict]:
    """The test set, in a seeded shuffled order: per language, ``groups_per_kind`` groups of
    each near-duplicate kind, as many partial copies at each of ``PARTIAL_RANGES`` and as many
    unrelated pages."""
    rng = random.Random(seed)
    docs: List[Dict] = []
    for language in languages:
        writer = _Writer(language, random.Random(rng.random()))
        for kind in (*NEAR_KINDS, "partial", "unrelated"):
            for number in range(groups_per_kind):
                docs.extend(_make(kind, writer, f"{language}-{kind}-{number}"))
    rng.shuffle(docs)
    return docs


def _make(kind: str, writer: _Writer, group: str) -> List[Dict]:
    """The documents of one planted group of ``kind``."""
    page = writer.page()
    if kind == "template":
        return _template_pages(writer, page, group)
    url = f"https://{group}.example.org/"
    original = _doc(writer, f"{url}original", writer.render(page), "original", group, page)
    if kind == "unrelated":
        return [{**original, "kind": "unrelated"}]
    if kind == "partial":
        return [original, *(_partial(writer, page, original, group, number) for number in range(len(PARTIAL_RANGES)))]
    if kind == "reflow":
        text = writer.reflow(page)
    elif kind == "edit":
        kept = writer.rng.randrange(len(page))  # one line left as it is (line dedup removes it from both)
        text = writer.render([paragraph if i == kept else writer.edit(paragraph) for i, paragraph in enumerate(page)])
    elif kind == "boilerplate":
        header, footer = writer.boilerplate()
        text = f"{header}\n{writer.reflow(page)}\n{footer}"
    else:  # reorder
        order = list(range(len(page)))
        while order == sorted(order):
            writer.rng.shuffle(order)
        text = writer.reflow([page[i] for i in order])
    return [original, _doc(writer, f"{url}{kind}", text, kind, group, page, source=original["url"])]


def _doc(writer: _Writer, url: str, text: str, kind: str, group: str, page: Page, source: Optional[str] = None) -> Dict:
    title = writer.render_sentence(page[0][0][:6])
    return {
        "url": url,
        "title": title,
        "text": text,
        "language": writer.language,
        "kind": kind,
        "group": group,
        "source": source,
    }


def _template_pages(writer: _Writer, template: Page, group: str) -> List[Dict]:
    """``TEMPLATE_PAGES`` pages of a template: each paragraph has a slot at one place of its
    first sentence, which every page fills with a name of its own (so that no line is the same
    on two pages)."""
    slots = [writer.rng.randrange(len(paragraph[0]) + 1) for paragraph in template]
    pages = []
    for name in writer.rng.sample(writer.words[len(writer.words) // 2 :], TEMPLATE_PAGES):
        page = [[[*p[0][:slot], name, *p[0][slot:]], *p[1:]] for p, slot in zip(template, slots)]
        pages.append(_doc(writer, f"https://{group}.example.org/{name}", writer.render(page), "template", group, page))
    return pages


def _partial(writer: _Writer, page: Page, original: Dict, group: str, number: int) -> Dict:
    """A page with the first ``shared`` of ``page``'s paragraphs and new sentences (after them,
    or before for an odd ``number``), wrapped at other breaks, its Jaccard similarity to ``page``
    in ``PARTIAL_RANGES[number]``. Each new sentence lowers the similarity by a few hundredths,
    less than either range is wide, so adding them one at a time lands in the range; one shared
    paragraph fewer is tried when a single new sentence already falls below it."""
    low, high = PARTIAL_RANGES[number]
    for shared in range(len(page) - 1, 0, -1):
        new: Paragraph = []
        while True:
            new.append(writer.sentence())
            mixed = [new, *page[:shared]] if number % 2 else [*page[:shared], new]
            text = writer.reflow(mixed)  # two copies never wrap alike: one starts with new text
            similarity = jaccard(original["text"], text, writer.language, 5)
            if similarity < low:
                break
            if similarity < high:
                url = f"https://{group}-{number}.example.org/partial"
                return _doc(writer, url, text, "partial", f"{group}-{number}", mixed, original["url"])
    raise RuntimeError(f"no partial copy of {group} in {PARTIAL_RANGES[number]}")  # a page of one paragraph


def true_pairs(docs: Sequence[Dict], threshold: float = 0.8, ngram: int = 5) -> Set[Tuple[str, str]]:
    """Every pair of urls (the smaller first) of documents of one language whose exact Jaccard
    similarity of shingles (``filters.minhash.shingles``) is ``threshold`` or more, by brute force."""
    pairs = set()
    for language in sorted({doc["language"] for doc in docs}):
        sets = [(doc["url"], shingles(doc["text"], language, ngram)) for doc in docs if doc["language"] == language]
        for (first, a), (second, b) in combinations(sets, 2):
            union = len(a | b)
            if union and len(a & b) / union >= threshold:
                pairs.add((min(first, second), max(first, second)))
    return pairs


def after_line_dedup(docs: Sequence[Dict], min_len: int = 300) -> List[Dict]:
    """The documents as the mine job hands them to near-dedup: CCNet's line dedup (a line in two
    or more documents loses every copy, a repeat inside one keeps its first), with
    ``filters.dedup``'s pieces on one segment, then those shorter than ``min_len`` dropped."""
    hashes, positions = segment_line_hashes(enumerate(doc["text"] for doc in docs))
    duplicated = find_duplicated_hashes([(0, *summarize_segment(hashes, positions, "ccnet"))], "ccnet")
    removed = removed_lines_by_record(removed_positions(hashes, positions, duplicated.get(0, np.empty(0, np.uint64))))
    kept = []
    for record, doc in enumerate(docs):
        lines = [line for i, line in enumerate(doc["text"].split("\n")) if i not in removed.get(record, ())]
        text = "\n".join(lines)
        if len(text) >= min_len:
            kept.append({**doc, "text": text})
    return kept


def write_wet(folder: Union[str, Path], docs: Sequence[Dict], segments: int = 3) -> List[Path]:
    """The documents as CommonCrawl WET files ``seg-N.warc.wet.gz``, document i in segment
    i mod ``segments`` (so that a group spreads over segments)."""
    pages = [WetPage(doc["url"], "2019-02-16T04:15:08Z", doc["title"], doc["text"]) for doc in docs]
    paths = []
    for segment in range(segments):
        path = Path(folder) / f"seg-{segment}.warc.wet.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with storage.atomic_write(str(path)) as stream:
            wet_writer.write_wet(stream, pages[segment::segments], path.name)
        paths.append(path)
    return paths
