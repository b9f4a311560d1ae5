"""The mine job's configuration: one typed dataclass, saved into every output's manifest."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from ccnet_pipeline.wet import ReadConfig
from filters.dedup import DedupConfig
from filters.perplexity import BucketConfig
from filters.quality import QualityConfig
from lid.model import LidConfig


@dataclass(frozen=True)
class MineConfig:
    input: Tuple[str, ...]  # WET files or globs (local or any Beam filesystem: gs://, s3://, hdfs://)
    output: str  # corpus folder: <lang>/<bucket>/part-XXXXX.parquet, manifest.json, stats.json
    lid: LidConfig  # language ID model, threshold and selection
    dedup: DedupConfig  # line dedup mode, shuffle partitions and minimum document length
    quality: QualityConfig = QualityConfig()  # heuristic filters (all off by default)
    lm_dir: Optional[str] = None  # <lang>.sp.model + <lang>.arpa.bin; None: no perplexity, bucket "all"
    buckets: BucketConfig = BucketConfig()  # head/tail percentiles
    cutoffs_file: Optional[str] = None  # a CCNet cutoff.csv; None: cutoffs computed from the data
    read: ReadConfig = ReadConfig()  # input format and record-size cap
    segments_per_shard: int = 1  # input segments whose documents share one Parquet file per language
    keep_dropped: bool = False  # also write dropped documents to quarantine/dropped/<reason>/

    def __post_init__(self):
        if not self.input or not all(self.input):
            raise ValueError("--input is required: a glob of WET files")
        if self.cutoffs_file and not self.lm_dir:
            raise ValueError("--cutoffs needs --lm-dir: cutoffs bucket perplexities")
        if self.segments_per_shard < 1:
            raise ValueError(f"segments_per_shard must be >= 1, got {self.segments_per_shard}")

    def to_json(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)
