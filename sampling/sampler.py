"""MultilingualSampler: documents from a corpus folder's Parquet shards, language by language
with XLM-R's smoothed probabilities; deterministic, resumable, split across DDP ranks."""

from __future__ import annotations

import random
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from sampling.mixture import LanguageMixture, MixtureConfig
from sampling.stream import EpochStream, rank_share
from toolkit.corpus import CorpusManifest, parquet_row_groups, read_parquet

COLUMNS = ("url", "language", "bucket", "raw_content", "length")


class _DocumentStream:
    """One language's documents for one rank, epoch after epoch: an ``EpochStream`` over the row
    groups of all the language's files, in an order shuffled per (seed, language, epoch) and the
    same on every rank, then inside each row group (the shuffle buffer: up to 4,096 documents)
    this rank's ``rank_share`` of the rows, shuffled per (seed, language, epoch, group position).
    Two levels because a rank can shuffle only what it holds: taking its share inside each group,
    it never reads another rank's document. The position (epoch, row group, offset) is the whole state."""

    def __init__(self, files: Sequence[str], language: str, seed: int, rank: int, world_size: int):
        self.language, self.seed, self.rank, self.world_size = language, seed, rank, world_size
        self.row_groups: List[Tuple[str, int]] = [
            (path, group) for path in files for group in range(parquet_row_groups(path))
        ]
        if not self.row_groups:
            raise ValueError(f"no documents for language {language}")
        self._groups = EpochStream(self._shuffled_row_groups)
        self.offset = 0  # documents read from the current row group
        self._rows: Optional[List[Dict]] = None

    def _shuffled_row_groups(self, epoch: int) -> List[Tuple[str, int]]:
        order = list(self.row_groups)
        random.Random(f"{self.seed}:{self.language}:{epoch}").shuffle(order)
        return order

    def _load(self) -> List[Dict]:
        path, group = self._groups.current()
        rows = rank_share(read_parquet(path, COLUMNS, row_group=group).to_pylist(), self.rank, self.world_size)
        random.Random(f"{self.seed}:{self.language}:{self._groups.epoch}:{self._groups.index}").shuffle(rows)
        return rows

    def next(self) -> Dict:
        empty_groups = 0
        while True:
            if self._rows is None:
                self._rows = self._load()
            if self.offset < len(self._rows):
                self.offset += 1
                return self._rows[self.offset - 1]
            empty_groups = empty_groups + 1 if not self._rows else 0
            if empty_groups > len(self.row_groups):
                raise ValueError(f"rank {self.rank} of {self.world_size} has no {self.language} documents")
            self._groups.advance()
            self._rows, self.offset = None, 0

    @property
    def epoch(self) -> int:
        return self._groups.epoch

    def state(self) -> Dict[str, int]:
        return {"epoch": self._groups.epoch, "unit": self._groups.index, "offset": self.offset}

    def restore(self, state: Dict[str, int]) -> None:
        self._groups.epoch, self._groups.index, self.offset = state["epoch"], state["unit"], state["offset"]
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
        files = manifest.shard_paths(buckets)
        if not sizes:
            raise ValueError(f"no shards in {corpus_dir} for buckets {sorted(buckets or [])}")
        self.mixture = LanguageMixture(sizes, mixture, seed, rank)
        self.probs, self.languages = self.mixture.probs, self.mixture.languages
        self._streams = {
            lang: _DocumentStream(sorted(files[lang]), lang, seed, rank, world_size) for lang in self.languages
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
