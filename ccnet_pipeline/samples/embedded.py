"""The embedded sample: multilingual web pages generated offline, written as CommonCrawl WET.

Nothing here is real web text. Sentences are drawn from ``wordfreq``'s word lists by word
frequency, names, companies and domains come from ``faker``; the generator then adds what makes
web text hard: boilerplate lines shared by the pages of a site, exact duplicate pages, short
junk pages, pages mixing languages, spam pages (product lists and keyword stuffing of rare words,
under ``/shop/`` URLs), pages in languages a selection leaves out, and a few broken records (a
corrupt gzip member, invalid UTF-8, an empty record), all deterministic for a seed.

``generate_reference_text`` writes clean text per language, drawn apart from the pages (another
random stream, no boilerplate, no spam), for training the reference language models that bucket
the pages by perplexity.
"""

from __future__ import annotations

import os
import random
import textwrap
from dataclasses import dataclass
from itertools import accumulate
from typing import Dict, List, Tuple

from ccnet_pipeline.samples.wet_writer import WetPage, raw_record, write_wet
from toolkit import storage

# (XLM-R code, wordfreq code, faker locale, relative share). The first 12 are the default
# selection of `make corpus`; Urdu and Icelandic are the low-resource ones; the last four
# are there to be left out by that selection. These 16 are all the sample has: `make corpus
# LANGS=100` keeps them all and trains their 16 reference models, none for XLM-R's 84 others.
LANGUAGE_MIX: Tuple[Tuple[str, str, str, float], ...] = (
    ("en", "en", "en_US", 20.0),
    ("de", "de", "de_DE", 9.0),
    ("fr", "fr", "fr_FR", 8.0),
    ("es", "es", "es_ES", 8.0),
    ("ru", "ru", "ru_RU", 7.0),
    ("zh", "zh", "zh_CN", 6.0),
    ("ar", "ar", "ar_AA", 4.0),
    ("hi", "hi", "hi_IN", 3.0),
    ("ja", "ja", "ja_JP", 4.0),
    ("vi", "vi", "vi_VN", 3.0),
    ("ur", "ur", "en_US", 1.2),
    ("is", "is", "is_IS", 1.0),
    ("it", "it", "it_IT", 5.0),
    ("pl", "pl", "pl_PL", 4.0),
    ("tr", "tr", "tr_TR", 3.0),
    ("nl", "nl", "nl_NL", 3.0),
)
_NO_SPACE = {"zh", "ja"}
_FULL_STOP = {"zh": "。", "ja": "。", "hi": "।", "ur": "۔", "ar": "."}
JUNK_LINES = (
    "404 Not Found",
    "Page not found",
    "Loading...",
    "Please enable JavaScript to view this page.",
    "Access denied",
    "Redirecting...",
    "Log in",
    "Error 503 Service Unavailable",
)


@dataclass(frozen=True)
class SampleConfig:
    segments: int = 4  # WET files to write
    docs_per_segment: int = 1500  # pages per file, before bad records are added
    seed: int = 0  # same seed, byte-identical files
    paragraphs: Tuple[int, int] = (4, 14)  # body lines per page (min, max)
    sites: int = 120  # websites; pages of one site share boilerplate lines
    duplicate_rate: float = 0.05  # share of pages that copy an earlier page under another URL
    junk_rate: float = 0.05  # share of near-empty pages
    mixed_rate: float = 0.02  # share of pages mixing three languages line by line
    spam_rate: float = 0.06  # share of product-list / keyword-stuffing pages of rare words
    near_duplicate_rate: float = 0.02  # share of pages added as feed copies of articles (near-duplicates)
    bad_records: bool = True  # add one corrupt gzip member, invalid UTF-8 and an empty record

    def __post_init__(self):
        if self.segments < 1 or self.docs_per_segment < 1:
            raise ValueError("segments and docs_per_segment must be >= 1")
        if not 1 <= self.paragraphs[0] <= self.paragraphs[1]:
            raise ValueError(f"paragraphs must be (min, max) with 1 <= min <= max, got {self.paragraphs}")


class _Language:
    """Sentence generator for one language from its wordfreq list."""

    def __init__(self, code: str, wordfreq_code: str, locale: str, rng: random.Random):
        import wordfreq
        from faker import Faker

        self.code = code
        self.words = wordfreq.top_n_list(wordfreq_code, 4000)
        frequency = wordfreq.get_frequency_dict(wordfreq_code)
        frequencies = [frequency[w] for w in self.words]
        self.cumulative = list(accumulate(frequencies))
        self.rng = rng
        self.faker = Faker(locale)
        self.faker.seed_instance(rng.randrange(1 << 30))

    def sentence(self) -> str:
        words = self.rng.choices(self.words, cum_weights=self.cumulative, k=self.rng.randint(7, 20))
        if self.code in _NO_SPACE:
            return "".join(words) + _FULL_STOP[self.code]
        text = " ".join(words)
        return text[0].upper() + text[1:] + _FULL_STOP.get(self.code, ".")

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(1, 4)))

    def spam_line(self) -> str:
        """Rare words picked uniformly, a product code and a price: what a shop page lists."""
        words = self.rng.sample(self.words[1000:], self.rng.randint(4, 9))
        code = f"{self.rng.choice('ABCDEFGHKMNPRSTX')}{self.rng.randint(100, 9999)}-{self.rng.randint(10, 99)}"
        return f"{' '.join(words)} {code} {self.rng.randint(1, 999)},{self.rng.randint(0, 99):02d} {self.faker.currency_code()}"


def _sites(
    rng: random.Random, languages: Dict[str, _Language], count: int
) -> List[Tuple[str, str, List[str], List[str]]]:
    """(language, domain, header lines, footer lines) per site."""
    codes = list(languages)
    weights = [share for _, _, _, share in LANGUAGE_MIX]
    sites = []
    for _ in range(count):
        lang = languages[rng.choices(codes, weights=weights)[0]]
        company = lang.faker.company()
        header = [
            company,
            " | ".join(lang.faker.word().capitalize() for _ in range(5)),
            lang.sentence(),
        ]
        footer = [
            f"Copyright © {rng.randint(2005, 2019)} {company}. All rights reserved.",
            f"{lang.faker.street_address()}, {lang.faker.postcode()}",  # not city(): it_IT's changes with the hash seed
            "Facebook Twitter Instagram YouTube",
        ]
        sites.append((lang.code, lang.faker.domain_name(), header, footer))
    return sites


def generate_pages(config: SampleConfig) -> List[List[WetPage]]:
    """The pages of every segment."""
    rng = random.Random(config.seed)
    languages = {code: _Language(code, wf, locale, rng) for code, wf, locale, _ in LANGUAGE_MIX}
    sites = _sites(rng, languages, config.sites)
    published: List[WetPage] = []
    segments = []
    for segment in range(config.segments):
        pages = []
        for number in range(config.docs_per_segment):
            code, domain, header, footer = rng.choice(sites)
            lang = languages[code]
            url = f"https://{domain}/{lang.faker.slug() or 'page'}-{segment}-{number}.html"
            date = f"2019-02-{rng.randint(15, 24):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
            roll = rng.random()
            if roll < config.duplicate_rate and published:
                original = rng.choice(published)
                page = WetPage(url, date, original.title, original.text, original.language)
            elif roll < config.duplicate_rate + config.junk_rate:
                page = WetPage(url, date, rng.choice(JUNK_LINES), "\n".join(rng.sample(JUNK_LINES, 2)))
            elif roll < config.duplicate_rate + config.junk_rate + config.mixed_rate:
                mixed = rng.sample(list(languages.values()), 3)
                body = [mixed[i % 3].sentence() for i in range(rng.randint(6, 12))]
                page = WetPage(url, date, lang.sentence()[:60], "\n".join(body))
            elif roll < config.duplicate_rate + config.junk_rate + config.mixed_rate + config.spam_rate:
                url = f"https://{domain}/shop/{segment}-{number}.html"
                body = [lang.spam_line() for _ in range(rng.randint(8, 20))]
                page = WetPage(url, date, lang.sentence()[:60], "\n".join(header + body + footer), code)
            else:
                body = [lang.paragraph() for _ in range(rng.randint(*config.paragraphs))]
                byline = f"{lang.faker.name()} · {date[:10]}"
                text = "\n".join(header + [byline] + body + footer)
                page = WetPage(url, date, lang.sentence()[:80], text, code)
                published.append(page)
            pages.append(page)
        segments.append(pages)
    _add_near_duplicates(segments, published, languages, config)
    return segments


def _add_near_duplicates(
    segments: List[List[WetPage]], published: List[WetPage], languages: Dict[str, _Language], config: SampleConfig
) -> None:
    """Copies of published articles, as a feed republishes them: the byline and the body without
    the site's boilerplate, wrapped at other line breaks, under a tracking parameter. Hardly a line
    is another page's (line dedup keeps them), yet each copy is a near-duplicate of its original
    (``--near-dedup minhash`` drops it). Drawn from a random stream of their own, so that the
    other pages stay as they were."""
    rng = random.Random(config.seed + 2)
    count = round(config.near_duplicate_rate * config.docs_per_segment)
    for segment, pages in enumerate(segments):
        for number in range(min(count, len(published))):
            original = rng.choice(published)
            lines = original.text.split("\n")  # the site's header (3 lines), a byline, the body, the footer (3)
            lines = lines[3:4] + textwrap.wrap(" ".join(lines[4:-3]), width=rng.randint(60, 100))
            url = f"{original.url}?utm_source=feed&n={segment}-{number}"
            copy = WetPage(url, original.date, original.title, "\n".join(lines), original.language)
            pages.insert(rng.randrange(len(pages) + 1), copy)


def _bad_records(rng: random.Random, filename: str) -> List[bytes]:
    """Raw gzip members for three broken records, as they turn up in real crawls."""

    def headers(name: str, length: int) -> Dict[str, str]:
        return {
            "WARC-Type": "conversion",
            "WARC-Target-URI": f"https://broken.example/{name}",
            "WARC-Date": "2019-02-20T10:00:00Z",
            "WARC-Record-ID": f"<urn:uuid:{filename}-{name}>",
            "Content-Type": "text/plain",
            "Content-Length": str(length),
        }

    text = ("Lorem ipsum dolor sit amet " * 40).encode()
    corrupt = bytearray(raw_record(headers("corrupt", len(text)), text))
    for i in range(20, len(corrupt) - 12, 7):
        corrupt[i] = rng.randrange(256)
    latin1 = b"Title\nCaf\xe9 au lait \xff\xfe broken bytes " * 20
    return [
        bytes(corrupt),
        raw_record(headers("latin1", len(latin1)), latin1),
        raw_record(headers("empty", 0), b""),
    ]


def letters(number: int) -> str:
    """0 -> "a", 25 -> "z", 26 -> "ba": a counter that dedup's digit folding cannot merge."""
    word = ""
    while True:
        number, rest = divmod(number, 26)
        word = chr(ord("a") + rest) + word
        if number == 0:
            return word


def generate_sample(output: str, config: SampleConfig = SampleConfig()) -> List[str]:
    """Write the sample as ``output/CC-SAMPLE-<n>.warc.wet.gz``; returns the paths."""
    os.makedirs(output, exist_ok=True)
    rng = random.Random(config.seed + 1)
    paths = []
    for index, pages in enumerate(generate_pages(config)):
        filename = f"CC-SAMPLE-{index:05d}.warc.wet.gz"
        path = os.path.join(output, filename)
        if config.bad_records and index == config.segments - 1:
            middle = len(pages) // 2
            pages = pages[:middle] + _bad_records(rng, filename) + pages[middle:]
        with storage.atomic_write(path) as stream:
            write_wet(stream, pages, filename)
        paths.append(path)
    return paths


def generate_reference_text(output: str, lines: int = 3000, seed: int = 0) -> List[str]:
    """Write ``output/<lang>.txt``: clean generated paragraphs per language of the sample, from
    a random stream of their own. Returns the paths."""
    os.makedirs(output, exist_ok=True)
    rng = random.Random(seed + 1_000_003)
    paths = []
    for code, wordfreq_code, locale, _ in LANGUAGE_MIX:
        lang = _Language(code, wordfreq_code, locale, rng)
        path = os.path.join(output, f"{code}.txt")
        with storage.atomic_write(path, "w") as handle:
            handle.writelines(lang.paragraph() + "\n" for _ in range(lines))
        paths.append(path)
    return paths
