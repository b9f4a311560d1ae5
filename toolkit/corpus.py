"""A corpus folder: where every file of it lives (``Layout``) and its versioned manifest
(``CorpusManifest``), the hand-off between the mine job and the sampler, tokenizer and plots.

```
OUT/<language>/<bucket>/part-NNNNN.parquet   the shards (or CCNet's OUT/<language>_<bucket>_NNNN.json.gz)
OUT/manifest.json  OUT/stats.json  OUT/cutoffs.csv
OUT/quarantine/bad-input/<cc_segment>.jsonl  OUT/quarantine/dropped/<reason>/part-NNNNN.parquet
OUT/_work/run.json  OUT/_work/complete       OUT/_work/hashes/NNNNN.npy  OUT/_work/segments/NNNNN.{parquet,json}
OUT/_work/progress/<pass>-NNNNN.json  OUT/_work/minhash/NNNNN.{npz,pkl}
```
Paths work on the local disk and on any Beam file system (``toolkit.storage``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from toolkit import storage

MANIFEST_VERSION = 2  # 1: the files' language and bucket only in their path (read, never written)
# The output formats: the name the manifest gives each, and its layout.
OUTPUT_FORMATS = {
    "parquet": ("parquet", "<language>/<bucket>/part-XXXXX.parquet"),
    "ccnet": ("ccnet-json", "<language>_<bucket>_XXXX.json.gz"),  # CCNet's regrouped mine output
}


class Layout:
    """Every path of the corpus folder ``root``."""

    def __init__(self, root: str):
        self.root = root.rstrip("/")
        self.work = storage.join(self.root, "_work")

    def path(self, relative: str) -> str:
        return storage.join(self.root, relative)

    @property
    def manifest(self) -> str:
        return self.path("manifest.json")

    @property
    def stats(self) -> str:
        return self.path("stats.json")

    @property
    def cutoffs(self) -> str:
        return self.path("cutoffs.csv")

    @property
    def run_file(self) -> str:
        """The job that writes the folder: its config and input files."""
        return storage.join(self.work, "run.json")

    @property
    def complete(self) -> str:
        return storage.join(self.work, "complete")

    def hashes(self, segment: int) -> str:
        return storage.join(self.work, "hashes", f"{segment:05d}.npy")

    @property
    def hash_files(self) -> str:
        return storage.join(self.work, "hashes", "*.npy")

    def segment_documents(self, segment: int) -> str:
        return storage.join(self.work, "segments", f"{segment:05d}.parquet")

    def marker(self, segment: int) -> str:
        return storage.join(self.work, "segments", f"{segment:05d}.json")

    @property
    def markers(self) -> str:
        """The glob of every segment marker."""
        return storage.join(self.work, "segments", "*.json")

    def minhash(self, segment: int) -> str:
        """A segment's MinHash band keys (and signatures) for near-duplicate removal."""
        return storage.join(self.work, "minhash", f"{segment:05d}.npz")

    def waiting_documents(self, segment: int) -> str:
        """A segment's documents waiting for near-dedup's clusters (pickled: read once more and deleted)."""
        return storage.join(self.work, "minhash", f"{segment:05d}.pkl")

    def progress(self, pass_name: str, segment: int) -> str:
        """How far a worker has read a segment in a pass (``ccnet_pipeline.progress``)."""
        return storage.join(self.work, "progress", f"{pass_name}-{segment:05d}.json")

    @property
    def progress_files(self) -> str:
        return storage.join(self.work, "progress", "*.json")

    @staticmethod
    def segment_of(path: str) -> int:
        """The segment a per-segment file under ``_work/`` is named after (``…/00012.npy``: 12)."""
        return int(path.rsplit("/", 1)[-1].split(".")[0])

    @staticmethod
    def progress_of(path: str) -> Tuple[str, int]:
        """(pass name, segment) of a progress file (``…/hash-00012.json``)."""
        pass_name, segment = path.rsplit("/", 1)[-1][: -len(".json")].rsplit("-", 1)
        return pass_name, int(segment)

    @property
    def intermediates(self) -> List[str]:
        """Globs of what the finished job deletes."""
        return [storage.join(self.work, name, "*") for name in ("hashes", "segments", "minhash", "progress")]

    def bad_input(self, segment_name: str) -> str:
        """A segment's bad records, under its name (unique within the input, maybe a path)."""
        return self.path(f"quarantine/bad-input/{segment_name}.jsonl")

    def dropped(self, reason: str, segment: int) -> str:
        return self.path(f"quarantine/dropped/{reason}/part-{segment:05d}.parquet")

    @staticmethod
    def shard(language: str, bucket: str, shard: int, output_format: str = "parquet") -> str:
        """A shard's path relative to the root."""
        if output_format == "ccnet":
            return f"{language}_{bucket}_{shard:04d}.json.gz"
        return f"{language}/{bucket}/part-{shard:05d}.parquet"


@dataclass(frozen=True)
class ShardEntry:
    path: str  # relative to the corpus folder
    language: str
    bucket: str
    documents: int
    characters: int


@dataclass
class CorpusManifest:
    """OUT/manifest.json: what a corpus holds and the exact config that produced it."""

    format: str = "parquet"  # one of OUTPUT_FORMATS
    files: List[ShardEntry] = field(default_factory=list)  # every shard, sorted by path
    cutoffs: Dict[str, Dict[str, float]] = field(default_factory=dict)  # per language: head and tail perplexity
    config: Dict = field(default_factory=dict)  # the job's config
    pipeline_options: Dict = field(default_factory=dict)  # the Beam options it ran with
    version: int = MANIFEST_VERSION
    folder: Optional[Layout] = field(default=None, compare=False, repr=False)  # where it was read from

    def __post_init__(self):
        if self.format not in OUTPUT_FORMATS:
            raise ValueError(f"corpus format must be one of {', '.join(OUTPUT_FORMATS)}, got {self.format!r}")
        self.files = sorted(self.files, key=lambda entry: entry.path)

    @property
    def languages(self) -> Dict[str, Dict[str, Dict[str, int]]]:
        """Documents, characters and files per language and bucket."""
        languages: Dict[str, Dict[str, Dict[str, int]]] = {}
        for entry in self.files:
            counts = languages.setdefault(entry.language, {}).setdefault(
                entry.bucket, {"documents": 0, "characters": 0, "files": 0}
            )
            counts["documents"] += entry.documents
            counts["characters"] += entry.characters
            counts["files"] += 1
        return languages

    def shards(self, buckets: Optional[Sequence[str]] = None) -> List[ShardEntry]:
        """The shards, only those of ``buckets`` when given."""
        return [entry for entry in self.files if not buckets or entry.bucket in buckets]

    def shard_paths(self, buckets: Optional[Sequence[str]] = None) -> Dict[str, List[str]]:
        """Per language, the sorted full paths of its shards (of ``buckets`` when given), in the
        folder the manifest was read from."""
        if self.folder is None:
            raise ValueError("a manifest not read from a corpus folder has no shard paths")
        paths: Dict[str, List[str]] = {}
        for entry in self.shards(buckets):
            paths.setdefault(entry.language, []).append(self.folder.path(entry.path))
        return {language: sorted(files) for language, files in sorted(paths.items())}

    def to_json(self) -> Dict:
        return {
            "version": self.version,
            "format": OUTPUT_FORMATS[self.format][0],
            "layout": OUTPUT_FORMATS[self.format][1],
            "documents": sum(entry.documents for entry in self.files),
            "characters": sum(entry.characters for entry in self.files),
            "languages": self.languages,
            "files": [asdict(entry) for entry in self.files],
            "cutoffs": self.cutoffs,
            "config": self.config,
            "pipeline_options": self.pipeline_options,
        }

    def write(self, folder: Layout) -> None:
        storage.write_json(folder.manifest, self.to_json())

    @classmethod
    def read(cls, root: Union[str, Layout], require_format: Optional[str] = None) -> CorpusManifest:
        """The manifest of the corpus folder ``root`` (its path, or its ``Layout``); with
        ``require_format``, a corpus in another format is a clear error."""
        folder = root if isinstance(root, Layout) else Layout(root)
        path = folder.manifest
        if not storage.exists(path):
            raise FileNotFoundError(
                f"{path} is missing: not a corpus folder (write one with python -m ccnet_pipeline mine)"
            )
        data = storage.read_json(path)
        version = data.get("version", 1)
        if version not in (1, MANIFEST_VERSION):
            raise ValueError(
                f"{path}: manifest version {version} is not one this version of the toolkit reads (1, {MANIFEST_VERSION})"
            )
        formats = {name: output_format for output_format, (name, _) in OUTPUT_FORMATS.items()}
        if data.get("format", "parquet") not in formats:
            raise ValueError(f"{path}: unknown corpus format {data.get('format')!r}")
        manifest = cls(
            format=formats[data.get("format", "parquet")],
            files=[_entry(item, version) for item in data["files"]],
            cutoffs=data.get("cutoffs", {}),
            config=data.get("config", {}),
            pipeline_options=data.get("pipeline_options", {}),
            version=version,
            folder=folder,
        )
        if require_format and manifest.format != require_format:
            raise ValueError(
                f"{folder.root} holds a corpus in {OUTPUT_FORMATS[manifest.format][0]} format; "
                "convert it with python -m ccnet_pipeline import-ccnet"
            )
        return manifest


def _entry(item: Dict, version: int) -> ShardEntry:
    if version == 1:  # <language>/<bucket>/part-XXXXX.parquet
        language, bucket, _ = item["path"].split("/")
        item = {**item, "language": language, "bucket": bucket}
    return ShardEntry(item["path"], item["language"], item["bucket"], item["documents"], item["characters"])


def read_parquet(path: str, columns: Optional[Sequence[str]] = None, row_group: Optional[int] = None):
    """A Parquet file (or one of its row groups) on the local disk or a Beam file system, as a
    ``pyarrow.Table``; the file is closed again."""
    import pyarrow.parquet as pq

    columns = list(columns) if columns is not None else None
    with storage.open_read(path) as stream, pq.ParquetFile(stream) as parquet:
        return (
            parquet.read(columns=columns) if row_group is None else parquet.read_row_group(row_group, columns=columns)
        )


def read_parquet_where(path: str, column: str, value):
    """The rows of a Parquet file whose ``column`` equals ``value``, one ``pyarrow.Table`` per
    row group that may hold some: row groups whose statistics exclude ``value`` are not read,
    so a file written in row groups of one value each is read only where it matters."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with storage.open_read(path) as stream, pq.ParquetFile(stream) as parquet:
        index = parquet.schema_arrow.get_field_index(column)
        for group in range(parquet.metadata.num_row_groups):
            stats = parquet.metadata.row_group(group).column(index).statistics
            if stats is not None and stats.has_min_max and not stats.min <= value <= stats.max:
                continue
            table = parquet.read_row_group(group)
            matching = table.filter(pc.equal(table.column(column), value))
            if matching.num_rows:
                yield matching


def parquet_row_groups(path: str) -> int:
    """How many row groups a Parquet file on any file system has."""
    import pyarrow.parquet as pq

    with storage.open_read(path) as stream, pq.ParquetFile(stream) as parquet:
        return parquet.metadata.num_row_groups
