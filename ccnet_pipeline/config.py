"""The mine job's configuration: one typed dataclass, saved into every output's manifest."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from ccnet_pipeline.wet import ReadConfig
from filters.dedup import DedupConfig
from filters.minhash import MinHashConfig
from filters.perplexity import PERPLEXITY_MODES, BucketConfig, check_perplexity_mode
from filters.quality import QualityConfig
from lid.model import LidConfig
from toolkit import storage
from toolkit.cli import flag, parse_size
from toolkit.corpus import OUTPUT_FORMATS, Layout

NEAR_DEDUP_MODES = ("off", "minhash")


class CorpusJob:
    """A job that writes a corpus folder at its config's ``output``."""

    output: str  # a field of each job's config (annotated here only: no dataclass field of its own)

    @property
    def layout(self) -> Layout:
        """What the job writes where, under ``output``: the job's one ``Layout``."""
        return Layout(self.output)

    def to_json(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class MineConfig(CorpusJob):
    input: Tuple[str, ...] = field(
        metadata=flag(cli=False)
    )  # WET files or globs (local or any Beam filesystem: gs://, s3://, hdfs://)
    output: str = field(
        metadata=flag("--output")
    )  # corpus folder: <lang>/<bucket>/part-XXXXX.parquet, manifest.json, stats.json
    lid: LidConfig  # language ID model, threshold and selection
    dedup: DedupConfig  # line dedup mode, shuffle partitions and minimum document length
    quality: QualityConfig = QualityConfig()  # heuristic filters (all off by default)
    near_dedup: str = field(
        default="off", metadata=flag(choices=NEAR_DEDUP_MODES)
    )  # off: line dedup only, as CCNet; minhash: also near-duplicates by MinHash LSH, per language, as FineWeb-2
    minhash: MinHashConfig = MinHashConfig()  # shingles, bands and rows of --near-dedup minhash
    lm_dir: Optional[str] = None  # <lang>.sp.model + <lang>.arpa.bin; None: no perplexity, bucket "all"
    perplexity: str = field(
        default="ccnet", metadata=flag(choices=PERPLEXITY_MODES)
    )  # ccnet: the whole document normalized and scored as one sentence; lines: each line scored, sums over lines
    buckets: BucketConfig = BucketConfig()  # head/tail percentiles
    cutoffs_file: Optional[str] = field(
        default=None, metadata=flag("--cutoffs")
    )  # a CCNet cutoff.csv; none: cutoffs computed from the data
    read: ReadConfig = ReadConfig()  # input format and record-size cap
    target_shard_size: int = field(
        default=512 * 1024**2, metadata=flag(parse=parse_size)
    )  # text per shard file (UTF-8 bytes, or 512MiB, 1GB...): consecutive segments' documents of one language and bucket, regrouped
    keep_dropped: bool = False  # also write dropped documents to quarantine/dropped/<reason>/
    output_format: str = field(
        default="parquet", metadata=flag(choices=tuple(OUTPUT_FORMATS))
    )  # parquet: <lang>/<bucket>/part-XXXXX.parquet; ccnet: CCNet's <lang>_<bucket>_XXXX.json.gz

    def __post_init__(self):
        if not self.input or not all(self.input):
            raise ValueError("input is required: a glob of WET files")
        if self.cutoffs_file and not self.lm_dir:
            raise ValueError("cutoffs_file needs lm_dir: cutoffs bucket perplexities")
        check_perplexity_mode(self.perplexity)
        if self.near_dedup not in NEAR_DEDUP_MODES:
            raise ValueError(f"near_dedup must be one of {', '.join(NEAR_DEDUP_MODES)}, got {self.near_dedup!r}")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output format must be one of {', '.join(OUTPUT_FORMATS)}, got {self.output_format!r}")
        if self.target_shard_size < 1:
            raise ValueError(f"target_shard_size must be >= 1 byte, got {self.target_shard_size}")

    def with_absolute_paths(self) -> MineConfig:
        """This config with every local path absolute, as workers in other folders need them."""
        optional = lambda path: storage.absolute(path) if path else path
        return dataclasses.replace(
            self,
            input=tuple(storage.absolute(pattern) for pattern in self.input),
            output=storage.absolute(self.output),
            lid=dataclasses.replace(
                self.lid,
                model_path=storage.absolute(self.lid.model_path),
                neighbour_model=optional(self.lid.neighbour_model),
            ),
            lm_dir=optional(self.lm_dir),
            cutoffs_file=optional(self.cutoffs_file),
        )


@dataclass(frozen=True)
class ImportConfig(CorpusJob):
    input: Tuple[str, ...] = field(
        metadata=flag("--input", parse=lambda glob: (glob,))
    )  # a glob of CCNet output files (<lang>_<bucket>_NNNN.json.gz) or Dolma-wrapped CCNet
    output: str = field(metadata=flag("--output"))  # corpus folder, the mine job's Parquet layout

    def __post_init__(self):
        if not self.input or not all(self.input):
            raise ValueError("input is required: a glob of CCNet output files")

    def with_absolute_paths(self) -> ImportConfig:
        """This config with every local path absolute, as workers in other folders need them."""
        return dataclasses.replace(
            self, input=tuple(storage.absolute(pattern) for pattern in self.input), output=storage.absolute(self.output)
        )
