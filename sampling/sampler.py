"""MultilingualSampler: documents from a corpus folder's Parquet shards, language by language
with XLM-R's smoothed probabilities; deterministic, resumable, split across DDP ranks."""

from __future__ import annotations

import random
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from sampling.mixture import LanguageMixture, MixtureConfig
from toolkit.corpus import CorpusManifest, parquet_row_groups, read_parquet

COLUMNS = ("url", "language", "bucket", "raw_content", "length")


class _LanguageStream:
    """One language's documents for one rank, epoch after epoch.

    The shuffle works in two levels, both seeded by (seed, language, epoch): the order of the
    row groups of all the language's files, and the documents inside each row group (the
    shuffle buffer: one row group, up to 4,096 documents). Rank r of w keeps the documents at
    positions r, r + w, ... of each row group, so ranks never share a document. The position
    (epoch, row group, offset) is the whole state: a resumed stream skips what was consumed."""

    def __init__(self, files: Sequence[str], language: str, seed: int, rank: int, world_size: int):
        self.language, self.seed, self.rank, self.world_size = language, seed, rank, world_size
        self.units: List[Tuple[str, int]] = [
            (path, group) for path in files for group in range(parquet_row_groups(path))
        ]
        if not self.units:
            raise ValueError(f"no documents for language {language}")
        self.epoch = self.unit = self.offset = 0
        self._rows: Optional[List[Dict]] = None

    def _order(self) -> List[int]:
        order = list(range(len(self.units)))
        random.Random(f"{self.seed}:{self.language}:{self.epoch}").shuffle(order)
        return order

    def _load(self) -> List[Dict]:
        path, group = self.units[self._order()[self.unit]]
        rows = read_parquet(path, COLUMNS, row_group=group).to_pylist()[self.rank :: self.world_size]
        random.Random(f"{self.seed}:{self.language}:{self.epoch}:{self.unit}").shuffle(rows)
        return rows

    def next(self) -> Dict:
        empty_units = 0
        while True:
            if self._rows is None:
                self._rows = self._load()
            if self.offset < len(self._rows):
                self.offset += 1
                return self._rows[self.offset - 1]
            empty_units = empty_units + 1 if not self._rows else 0
            if empty_units > len(self.units):
                raise ValueError(f"rank {self.rank} of {self.world_size} has no {self.language} documents")
            self._rows, self.offset, self.unit = None, 0, self.unit + 1
            if self.unit == len(self.units):
                self.epoch, self.unit = self.epoch + 1, 0

    def state(self) -> Dict[str, int]:
        return {"epoch": self.epoch, "unit": self.unit, "offset": self.offset}

    def restore(self, state: Dict[str, int]) -> None:
        self.epoch, self.unit, self.offset = state["epoch"], state["unit"], state["offset"]
        self._rows = None


class MultilingualSampler:
    """Iterate documents (dicts with ``url``, ``language``, ``bucket``, ``raw_content``,
    ``length``) drawn language by language through the ``mixture`` (default: p ∝ q^0.3), over
    each language's size in ``unit`` (characters or documents) in the selected ``buckets``.

    Deterministic for a seed; ``state_dict()`` / ``load_state_dict()`` resume exactly where it
    stopped; rank r of ``world_size`` reads documents no other rank reads; ``epochs`` counts the
    complete passes over each language (a language that runs out starts again)."""

    def __init__(
        self,
        corpus_dir: str,
        mixture: MixtureConfig = MixtureConfig(),
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        buckets: Optional[Sequence[str]] = None,
        unit: str = "characters",
    ):
        if not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got rank {rank} of {world_size}")
        manifest = CorpusManifest.read(corpus_dir, require_format="parquet")
        shards = manifest.shards(buckets)
        sizes: Dict[str, int] = {}
        for entry in shards:
            sizes[entry.language] = sizes.get(entry.language, 0) + getattr(entry, unit)
        self.documents = sum(entry.documents for entry in shards)  # in the selected shards
        files = manifest.shard_paths(corpus_dir, buckets)
        if not sizes:
            raise ValueError(f"no shards in {corpus_dir} for buckets {sorted(buckets or [])}")
        self.mixture = LanguageMixture(sizes, mixture, seed, rank)
        self.probs, self.languages = self.mixture.probs, self.mixture.languages
        self._streams = {
            lang: _LanguageStream(sorted(files[lang]), lang, seed, rank, world_size) for lang in self.languages
        }

    def __iter__(self) -> Iterator[Dict]:
        return self

    def __next__(self) -> Dict:
        (language,) = self.mixture.draw(1)
        return self._streams[language].next()

    @property
    def epochs(self) -> Dict[str, int]:
        return {lang: stream.epoch for lang, stream in self._streams.items()}

    def state_dict(self) -> Dict:
        """JSON-serializable state: the language-choice generator and each language's position."""
        return {"rng": self.mixture.state_dict(), "streams": {lang: s.state() for lang, s in self._streams.items()}}

    def load_state_dict(self, state: Dict) -> None:
        self.mixture.load_state_dict(state["rng"])
        for language, stream_state in state["streams"].items():
            self._streams[language].restore(stream_state)
