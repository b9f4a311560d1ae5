"""Documents -> token ids -> fixed-length training blocks in memory-mappable shards.

Each paragraph's ids end with ``</s>`` (so documents and paragraphs stay delimited, as fairseq's
``complete`` mode keeps them), the ids of a language's documents are concatenated in corpus order
and cut into blocks of ``tokens_per_sample``, each starting with ``<s>``: no padding, except that
the last block of a language may be shorter. Per language, ``DATA/<lang>.bin`` holds the uint32
ids of all its blocks back to back and ``DATA/<lang>.idx.npy`` each block's (offset, length);
``DATA/manifest.json`` the vocabulary size, ``tokens_per_sample`` and counts per language. A
language whose documents yield no token is left out (``languages_without_blocks`` names it); a
corpus that yields no block at all is an error.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from filters.perplexity import sentencepiece_error
from tokenizer.xlmr import BOS, XLMRTokenizer
from toolkit import storage
from toolkit.corpus import CorpusManifest, read_parquet

INDEX_DTYPE = np.dtype([("offset", "<i8"), ("length", "<i4")])


def sentencepiece_file(tokenizer_dir: str) -> str:
    """The SentencePiece model of a tokenizer folder: ours (``sentencepiece.model``) or a Hugging
    Face XLM-R folder's (``sentencepiece.bpe.model``, e.g. to continue pretraining XLM-R)."""
    for name in ("sentencepiece.model", "sentencepiece.bpe.model"):
        if os.path.exists(os.path.join(tokenizer_dir, name)):
            return os.path.join(tokenizer_dir, name)
    raise FileNotFoundError(f"{tokenizer_dir} has no sentencepiece.model or sentencepiece.bpe.model")


def load_tokenizer(tokenizer_dir: str) -> XLMRTokenizer:
    """The XLM-R tokenizer of a tokenizer folder; a ``ModelError`` naming the file when its
    SentencePiece model does not load."""
    path = sentencepiece_file(tokenizer_dir)
    try:
        return XLMRTokenizer(path)
    except (OSError, RuntimeError) as error:
        raise sentencepiece_error(path, error) from None


MANIFEST_FILE = "manifest.json"


@dataclass(frozen=True)
class PackedLanguage:
    blocks: int
    tokens: int


@dataclass(frozen=True)
class PackedManifest:
    """``DATA/manifest.json``: what a packed folder holds, the hand-off from ``pack`` to the
    trainer (which reads it through ``read`` and each language's blocks through ``load_blocks``)."""

    vocab_size: int  # of the tokenizer the blocks were encoded with
    tokens_per_sample: int
    tokenizer: str = ""  # the tokenizer folder
    corpus: str = ""
    buckets: Optional[Tuple[str, ...]] = None  # the corpus buckets packed (None: all)
    languages: Dict[str, PackedLanguage] = field(default_factory=dict)  # blocks and tokens per language
    languages_without_blocks: Tuple[str, ...] = ()  # corpus languages whose documents yield no token

    def write(self, data_dir: str) -> None:
        storage.write_json(os.path.join(data_dir, MANIFEST_FILE), asdict(self))

    @classmethod
    def read(cls, data_dir: str) -> PackedManifest:
        path = os.path.join(data_dir, MANIFEST_FILE)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing: write DATA_DIR with `python -m tokenizer pack`")
        data = storage.read_json(path)
        languages = {language: PackedLanguage(**counts) for language, counts in data.pop("languages").items()}
        buckets, without = data.pop("buckets", None), data.pop("languages_without_blocks", ())
        return cls(
            **data,
            languages=languages,
            buckets=tuple(buckets) if buckets else None,
            languages_without_blocks=tuple(without),
        )

    def load_blocks(self, data_dir: str, language: str) -> Tuple[np.ndarray, np.ndarray]:
        """(memory-mapped uint32 ids, block index) of one language of the packed folder."""
        if language not in self.languages:
            raise ValueError(f"{data_dir} has no blocks of {language} (it has {', '.join(sorted(self.languages))})")
        tokens = np.memmap(os.path.join(data_dir, f"{language}.bin"), dtype="<u4", mode="r")
        return tokens, np.load(os.path.join(data_dir, f"{language}.idx.npy"))


@dataclass(frozen=True)
class PackedData:
    """A packed folder with its manifest, read once: what a training run reads its blocks from."""

    folder: str
    manifest: PackedManifest

    @classmethod
    def open(cls, folder: str) -> PackedData:
        return cls(folder, PackedManifest.read(folder))

    def load_blocks(self, language: str) -> Tuple[np.ndarray, np.ndarray]:
        return self.manifest.load_blocks(self.folder, language)


class NothingToPack(ValueError):
    """The corpus (or the buckets asked for) yields no training block."""


def document_ids(tokenizer: XLMRTokenizer, text: str) -> List[int]:
    """A document's ids, ``</s>`` after each paragraph (line)."""
    ids: List[int] = []
    for paragraph in text.split("\n"):
        if paragraph.strip():
            ids += tokenizer.encode(paragraph)[1:]  # without <s>, with </s>
    return ids


def pack_blocks(documents: Iterable[Sequence[int]], tokens_per_sample: int) -> Iterator[np.ndarray]:
    """Blocks of ``tokens_per_sample`` ids, each ``<s>`` then the next ids of the stream."""
    if tokens_per_sample < 2:
        raise ValueError("tokens_per_sample must be >= 2")
    room = tokens_per_sample - 1
    pending: List[int] = []
    for ids in documents:
        pending.extend(ids)
        while len(pending) >= room:
            yield np.array([BOS, *pending[:room]], dtype=np.uint32)
            del pending[:room]
    if pending:
        yield np.array([BOS, *pending], dtype=np.uint32)


@dataclass(frozen=True)
class PackConfig:
    tokens_per_sample: int = 512  # ids per block, <s> included (fairseq's tokens_per_sample)
    buckets: Optional[Tuple[str, ...]] = None  # corpus buckets to pack, a comma list (default: all)

    def __post_init__(self):
        if self.tokens_per_sample < 2:
            raise ValueError("tokens_per_sample must be >= 2")


def pack_corpus(corpus_dir: str, tokenizer_dir: str, out_dir: str, config: PackConfig = PackConfig()) -> PackedManifest:
    """Pack every language of a corpus folder; returns (and writes) the manifest. Raises
    ``NothingToPack`` when no language yields a block."""
    tokenizer = load_tokenizer(tokenizer_dir)
    tokens_per_sample, buckets = config.tokens_per_sample, config.buckets
    files = CorpusManifest.read(corpus_dir, require_format="parquet").shard_paths(buckets)
    where = f"{corpus_dir} (buckets {','.join(buckets)})" if buckets else corpus_dir
    if not files:
        raise NothingToPack(f"nothing to pack: {where} holds no document (did the mine job keep any?)")
    os.makedirs(out_dir, exist_ok=True)
    languages, without_blocks = {}, []
    for language in sorted(files):
        texts = _texts(sorted(files[language]))
        blocks = pack_blocks((document_ids(tokenizer, text) for text in texts), tokens_per_sample)
        first = next(blocks, None)
        if first is None:  # no token at all: no empty files for the trainer to trip on
            without_blocks.append(language)
            continue
        languages[language] = _write_language(out_dir, language, itertools.chain([first], blocks))
    if not languages:
        raise NothingToPack(f"nothing to pack: the documents of {where} ({', '.join(without_blocks)}) yield no token")
    manifest = PackedManifest(
        vocab_size=tokenizer.vocab_size,
        tokens_per_sample=tokens_per_sample,
        tokenizer=os.path.abspath(tokenizer_dir),
        corpus=corpus_dir if storage.is_remote(corpus_dir) else os.path.abspath(corpus_dir),
        buckets=tuple(buckets) if buckets else None,
        languages=languages,
        languages_without_blocks=tuple(without_blocks),
    )
    manifest.write(out_dir)
    return manifest


def _texts(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        yield from read_parquet(path, ["raw_content"]).column("raw_content").to_pylist()


def _write_language(out_dir: str, language: str, blocks: Iterable[np.ndarray]) -> PackedLanguage:
    tokens_path, index_path = os.path.join(out_dir, f"{language}.bin"), os.path.join(out_dir, f"{language}.idx.npy")
    index, offset = [], 0
    with storage.atomic_write(tokens_path) as out:
        for block in blocks:
            out.write(block.astype("<u4").tobytes())
            index.append((offset, len(block)))
            offset += len(block)
    with storage.atomic_write(index_path) as out:
        np.save(out, np.array(index, dtype=INDEX_DTYPE))
    return PackedLanguage(blocks=len(index), tokens=offset)
