"""MinHash signatures and LSH band keys for near-duplicate removal (as FineWeb's datatrove and
NeMo Curator do it), for a batch of documents at once: texts and languages in, arrays out.

Shingles. A document's text goes through the project's strict dedup key
(``filters.normalize.dedup_keys_strict``: lowercase, digits to 0, every punctuation and control
character removed, white space collapsed) rather than CCNet's line key, which keeps ASCII
punctuation: so "The cat, 12 dogs!" and "the cat 34 dogs" are the same words, and a copy that
differs in numbers, commas or spacing stays a near-duplicate. Accents stay, as in both dedup
keys: stripping them (CCNet's LM normalization) takes an NFD pass and drops the vowel signs of
Indic and Southeast Asian scripts, merging distinct words. The document's lines then make one
sequence of tokens, so that a copy wrapped at other line breaks has the same shingles:

- words, split at white space and at the punctuation the key removes, for every language
  written with spaces (a Devanagari word stays one word with its vowel signs, which a regex of
  word characters would split it at);
- characters, white space dropped, for the languages written without spaces between words
  (``CHARACTER_LANGUAGES``: Chinese, Japanese, Thai, Lao, Khmer, Burmese, Tibetan, Dzongkha,
  Cantonese, Wu). No word segmenter is among the mine job's dependencies (jieba, MeCab, PyThaiNLP
  are not installed), and character n-grams need none and treat all these scripts alike.
  ``ngram`` then counts characters: 5, about three Chinese words, so that an edited word
  changes about as few shingles as in a language of words.

A shingle is ``ngram`` consecutive tokens; a document with fewer tokens is one shingle of them all.

Hashing, deterministic across processes and runs (no ``hash()``), all of it numpy over a batch's
text at once, without a Python string per token (``token_hashes``): the batch's strict keys as one
array of code points, a token a run of them between white space (or one of them, for a language
of characters), its hash the SplitMix64 finalizer of its length and of its polynomial hash
``sum(code[k] * P^k) mod 2^64`` (odd ``P``), read from prefix sums. A shingle's hash is the
SplitMix64 finalizer of the sum of its tokens' hashes, each times an odd constant of its position.
The ``bands * rows`` permutations are ``a * x + b mod 2^64`` with odd ``a``: each a true
permutation of the 64-bit shingle hashes ``x``, which the finalizer has already made uniform, and
ranked by their top bits, which depend on every bit of ``x`` (Dietzfelbinger's multiply-shift).
datatrove's textbook ``(a * x + b) mod 2^61-1`` needs 122-bit products, which numpy has to build
from 32-bit halves: one multiply and one add cost 1 ns per shingle and permutation here, against
15 ns for the exact Mersenne-prime arithmetic (measured on one core). The estimates these give
are checked against exact Jaccard similarities and the S-curve against theory (tests, ``make
bench-minhash``). A min-hash is the minimum shifted right by one bit, below 2^63.

A document without any token (empty, or only punctuation and spaces) gets ``EMPTY`` in every
position, a value no min-hash takes: it shares no min-hash and no band key with any document that
has a shingle. (Two such documents of one language share theirs, as any two documents with equal
shingle sets do.)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, List, Sequence, Tuple

import numpy as np

from filters.normalize import dedup_keys_strict, strict_key_codes, white_space
from toolkit.cli import flag

# Languages written without spaces between words, shingled by characters: ISO 639-1 and -3 codes
# (an XLM-R code such as zh_Hant or my_zaw counts by the part before "_").
CHARACTER_LANGUAGES = frozenset(
    {"zh", "zho", "cmn", "ja", "jpn", "th", "tha", "lo", "lao", "km", "khm", "my", "mya"}
    | {"bo", "bod", "dz", "dzo", "yue", "wuu", "lzh"}
)
EMPTY = np.uint64(0xFFFF_FFFF_FFFF_FFFF)  # every min-hash of a document without tokens
DOCS_PER_CHUNK = 256  # documents whose tokens are held at once
SHINGLES_PER_BLOCK = 8192  # shingles permuted at once: [bands * rows, 8192] uint64, 7 MiB at 112
_GOLDEN = np.uint64(0x9E37_79B9_7F4A_7C15)  # an odd constant: mixes a token's length into its hash
_POLYNOMIAL = np.uint64(0x5851_F42D_4C95_7F2D)  # odd, so invertible mod 2^64: the token hash's base
_POLYNOMIAL_INVERSE = np.uint64(pow(int(_POLYNOMIAL), -1, 2**64))


@dataclass(frozen=True)
class MinHashConfig:
    ngram: int = field(
        default=5, metadata=flag("--minhash-ngram")
    )  # words per shingle; characters for zh, ja, th, lo, km, my and other languages written without spaces
    bands: int = field(
        default=14, metadata=flag("--minhash-bands")
    )  # LSH bands: two documents that agree on every min-hash of one band are candidates
    rows: int = field(
        default=8, metadata=flag("--minhash-rows")
    )  # min-hashes per band; bands x rows permutations (14 x 8 as FineWeb and datatrove)
    seed: int = field(default=1, metadata=flag("--minhash-seed"))  # seed of the permutations
    threshold: float = field(
        default=0.8, metadata=flag("--minhash-threshold")
    )  # with --minhash-verify, drop a candidate only at this estimated Jaccard similarity or above
    verify: bool = field(
        default=False, metadata=flag("--minhash-verify")
    )  # check each candidate's estimated Jaccard against its kept document before dropping it
    rounds: int = field(
        default=6, metadata=flag("--minhash-rounds")
    )  # large-star/small-star alternations built into the job: the cap of the clustering (stats say how many changed)

    def __post_init__(self):
        for name in ("ngram", "bands", "rows", "rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {self.threshold}")

    @property
    def permutations(self) -> int:
        return self.bands * self.rows


def by_characters(language: str) -> bool:
    """Whether documents of ``language`` are shingled by characters (``CHARACTER_LANGUAGES``)."""
    return language.split("_")[0].lower() in CHARACTER_LANGUAGES


def tokens(text: str, language: str) -> List[str]:
    """The words (or characters, ``by_characters``) of ``text`` after the strict dedup key."""
    key = " ".join(dedup_keys_strict(text))
    return list(key.replace(" ", "")) if by_characters(language) else key.split()


def shingles(text: str, language: str, ngram: int) -> set:
    """The exact shingle set: tuples of ``ngram`` consecutive tokens (all of them when fewer)."""
    words = tokens(text, language)
    if len(words) < ngram:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + ngram]) for i in range(len(words) - ngram + 1)}


def jaccard(a: str, b: str, language: str, ngram: int) -> float:
    """The exact Jaccard similarity of two documents' shingle sets (1.0 for two without any)."""
    first, second = shingles(a, language, ngram), shingles(b, language, ngram)
    union = len(first | second)
    return len(first & second) / union if union else 1.0


def collision_probability(similarity, bands: int, rows: int):
    """The LSH S-curve: the probability that two documents of Jaccard ``similarity`` agree on
    every row of at least one of ``bands`` bands (a float, or an array of them)."""
    return 1.0 - (1.0 - similarity**rows) ** bands


def signatures(texts: Sequence[str], languages: Sequence[str], config: MinHashConfig) -> np.ndarray:
    """[len(texts), bands * rows] uint64 min-hashes, one row per document. A document with
    fewer than ``ngram`` tokens is one shingle of all its tokens; one without any gets ``EMPTY``
    everywhere (module docstring)."""
    if len(texts) != len(languages):
        raise ValueError(f"{len(texts)} texts but {len(languages)} languages")
    result = np.full((len(texts), config.permutations), EMPTY, dtype=np.uint64)
    for start in range(0, len(texts), DOCS_PER_CHUNK):
        chunk = slice(start, start + DOCS_PER_CHUNK)
        hashes, counts = _shingle_hashes(*token_hashes(texts[chunk], languages[chunk]), config.ngram)
        result[chunk] = _min_hashes(hashes, counts, _permutations(config.seed, config.permutations))
    return result


def token_hashes(texts: Sequence[str], languages: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """(the 64-bit hash of every token of ``tokens``, the documents' tokens one after the other;
    the tokens of each document), without a Python string per token: the tokens are runs of the
    strict key's code points (``filters.normalize.strict_key_codes``) between white space, or
    each code point for ``CHARACTER_LANGUAGES``, and a token's hash is the SplitMix64 mix of
    its polynomial hash ``sum(code[k] * P^k) mod 2^64`` and its length, from prefix sums."""
    codes, offsets = strict_key_codes(texts)
    word = ~white_space()[codes]
    starts, ends = word & ~np.r_[False, word[:-1]], word & ~np.r_[word[1:], False]
    characters = np.array([by_characters(language) for language in languages], dtype=bool)
    if characters.any():  # every code point of these documents is a token
        by_character = np.repeat(characters, np.diff(offsets))
        starts, ends = starts | (word & by_character), ends | (word & by_character)
    starts, ends = np.flatnonzero(starts), np.flatnonzero(ends) + 1
    powers, inverses = _powers(1 << max(len(codes) - 1, 0).bit_length())
    prefix = np.r_[np.uint64(0), np.cumsum(codes * powers[: len(codes)], dtype=np.uint64)]
    polynomial = (prefix[ends] - prefix[starts]) * inverses[starts]
    lengths = (ends - starts).astype(np.uint64)
    counts = np.diff(np.searchsorted(starts, offsets)).astype(np.int64)
    return _mix(polynomial ^ (lengths * _GOLDEN)), counts


def band_keys(signatures: np.ndarray, languages: Sequence[str], config: MinHashConfig) -> np.ndarray:
    """[n, bands] uint64: one key per band, a hash of (language, band index, the band's rows),
    so that documents of different languages or in different bands share no key (but for a
    2^-64 chance per pair of 64-bit hashes)."""
    signatures = np.asarray(signatures, dtype=np.uint64)
    if signatures.shape != (len(languages), config.permutations):
        raise ValueError(f"need [{len(languages)}, {config.permutations}] signatures, got {list(signatures.shape)}")
    distinct, row_of = np.unique(np.asarray(languages, dtype=str), return_inverse=True)
    keys = np.stack(
        [_band_seeds(language, config.bands) for language in distinct.tolist()] or [np.empty(config.bands, np.uint64)]
    )
    keys = keys[row_of.reshape(-1)]  # [n, bands]
    for row in signatures.reshape(len(languages), config.bands, config.rows).transpose(2, 0, 1):
        keys = _mix(keys ^ row)
    return keys


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The share of equal min-hashes of two signatures, row by row (a, b: [n, perms] or
    [perms]): an unbiased estimate of their Jaccard similarity."""
    return np.mean(np.asarray(a) == np.asarray(b), axis=-1)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer: a bijection of uint64 whose every output bit depends on every
    input bit."""
    x = x ^ (x >> np.uint64(30))
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _digests(items: Iterable[str], size: int = 8) -> np.ndarray:
    """64-bit BLAKE2b of each string's UTF-8 bytes (``size`` bytes: several uint64 each)."""
    blake2b = hashlib.blake2b
    return np.frombuffer(b"".join(blake2b(item.encode("utf-8"), digest_size=size).digest() for item in items), "<u8")


@lru_cache(maxsize=64)
def _position_factors(ngram: int) -> np.ndarray:
    """An odd 64-bit constant per position in a shingle, so that token order counts."""
    return _digests(f"minhash shingle position {k}" for k in range(ngram)) | np.uint64(1)


@lru_cache(maxsize=8)
def _permutations(seed: int, count: int) -> Tuple[np.ndarray, np.ndarray]:
    """The (a, b) of each multiply-add hash ``a * x + b mod 2^64``: uniform 64-bit values from
    the seed, ``a`` odd (a bijection of uint64)."""
    values = _digests((f"minhash seed {seed} permutation {j}" for j in range(count)), size=16).reshape(count, 2)
    return values[:, 0] | np.uint64(1), values[:, 1].copy()


@lru_cache(maxsize=2)
def _powers(count: int) -> Tuple[np.ndarray, np.ndarray]:
    """``_POLYNOMIAL`` and its inverse to the powers 0 .. count - 1, mod 2^64."""
    return tuple(
        np.cumprod(np.r_[np.uint64(1), np.full(count - 1, base, dtype=np.uint64)])
        for base in (_POLYNOMIAL, _POLYNOMIAL_INVERSE)
    )


@lru_cache(maxsize=1024)
def _band_seeds(language: str, bands: int) -> np.ndarray:
    """Where each band's key starts, for documents of ``language``."""
    return _digests(f"minhash language {language} band {band}" for band in range(bands))


def _shingle_hashes(token_values: np.ndarray, counts: np.ndarray, ngram: int) -> Tuple[np.ndarray, np.ndarray]:
    """(64-bit hash of every shingle, the documents' shingles one after the other; shingles per
    document) from ``token_hashes``. A shingle's hash: the SplitMix64 mix of the sum of its
    tokens' hashes, each times its position's odd constant."""
    per_document = np.where(counts > 0, np.maximum(counts - ngram + 1, 1), 0)
    total = int(per_document.sum())
    padded = np.concatenate([token_values, np.zeros(ngram, dtype=np.uint64)])
    first_shingle = np.cumsum(per_document) - per_document
    start = np.arange(total) + np.repeat(np.cumsum(counts) - counts - first_shingle, per_document)
    width = np.repeat(np.minimum(counts, ngram), per_document)  # below ngram for a short document only
    hashes = np.zeros(total, dtype=np.uint64)
    for position, factor in enumerate(_position_factors(ngram)):
        term = padded[start + position] * factor
        hashes += term if position == 0 else np.where(position < width, term, np.uint64(0))
    return _mix(hashes), per_document


def _min_hashes(hashes: np.ndarray, per_document: np.ndarray, permutations) -> np.ndarray:
    """[documents, permutations]: each document's minimum of each permutation over its shingles
    (``EMPTY`` for one without shingles), in blocks of ``SHINGLES_PER_BLOCK`` shingles, each
    permutation's values of a block contiguous for ``minimum.reduceat``."""
    a, b = (values[:, None] for values in permutations)
    result = np.full((len(per_document), len(b)), EMPTY, dtype=np.uint64)
    owners = np.flatnonzero(per_document)
    starts = (np.cumsum(per_document) - per_document)[owners]
    for low in range(0, len(hashes), SHINGLES_PER_BLOCK):
        block = hashes[low : low + SHINGLES_PER_BLOCK]
        first = np.searchsorted(starts, low, side="right") - 1  # the document of the block's first shingle
        last = np.searchsorted(starts, low + len(block))  # and those that start in the block
        values = a * block
        values += b
        minima = np.minimum.reduceat(values, np.maximum(starts[first:last] - low, 0), axis=1).T >> np.uint64(1)
        documents = owners[first:last]
        result[documents] = np.minimum(result[documents], minima)
    return result
