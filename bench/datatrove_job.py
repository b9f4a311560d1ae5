"""The reference pipeline of make bench-datatrove, in datatrove 0.10.1 (run by .venv-bench's Python,
never imported by the project): WarcReader -> LanguageFilter (fastText lid.176) -> CCNet
perplexity (datatrove's KenlmModel: CCNet's normalization, SentencePiece, KenLM) -> ParquetWriter
(zstd), on LocalPipelineExecutor. No dedup. datatrove downloads its models from fixed URLs; the
subclasses below load the same local files the mine job reads instead (datatrove's own files
unchanged). Prints one line: ``datatrove <documents written> <seconds>``.

With ``--minhash``, datatrove's own MinHash near-dedup as FineWeb runs it, 5-grams and 14 bands of
8 (its defaults, as the mine job's): the filtered documents are written as JSON lines, then its
four steps run, each a LocalPipelineExecutor of its own (signatures per file -> buckets, one task
per band -> clusters in one task -> the filter re-reading the files -> ParquetWriter). One run over
all languages with datatrove's default word tokenizer (spaCy's English one): the cheapest way to
run it; FineWeb-2's per-language tokenizers would take one four-step run per language.
"""

from __future__ import annotations

import argparse
import glob
import os
import time

import pyarrow.parquet as pq
from datatrove.executor.local import LocalPipelineExecutor
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.filters.language_filter import LanguageFilter
from datatrove.pipeline.readers.jsonl import JsonlReader
from datatrove.pipeline.readers.warc import WarcReader
from datatrove.pipeline.writers.jsonl import JsonlWriter
from datatrove.pipeline.writers.parquet import ParquetWriter
from datatrove.utils.lid import FT176LID
from datatrove.utils.perplexity import KenlmModel, SentencePiece


class LocalFT176(FT176LID):
    """datatrove's lid.176 model, from a local file."""

    def __init__(self, path: str, languages):
        super().__init__(languages)
        self.path = path

    @property
    def model(self):
        if self._model is None:
            from fasttext.FastText import _FastText

            self._model = _FastText(self.path)
        return self._model


class LocalLanguageFilter(LanguageFilter):
    def __init__(self, model_path: str, languages, language_threshold: float):
        super().__init__(languages=languages, language_threshold=language_threshold)
        self.model = LocalFT176(model_path, languages)


class LocalSentencePiece(SentencePiece):
    @property
    def model(self):
        import sentencepiece

        if self._model is None:
            self._model = sentencepiece.SentencePieceProcessor()
            self._model.load(os.path.join(self.model_dataset, f"{self.model_name}.sp.model"))
        return self._model


class LocalKenlmModel(KenlmModel):
    """datatrove's KenlmModel on ``<lm_dir>/<lang>.sp.model`` + ``<lm_dir>/<lang>.arpa.bin``."""

    @property
    def model(self):
        import kenlm

        if self._model is None:
            self._model = kenlm.Model(os.path.join(self.model_dataset, f"{self.language}.arpa.bin"))
        return self._model

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            self._tokenizer = LocalSentencePiece(self.model_dataset, self.language)
        return self._tokenizer


class CCNetPerplexity(PipelineStep):
    """Each document's perplexity under its language's model (datatrove's
    ``KenlmModel.get_perplexity``, as its CCNetPerplexityStats computes it), into its metadata."""

    name = "CCNet perplexity"
    type = "📊 - STATS"

    def __init__(self, lm_dir: str):
        super().__init__()
        self.lm_dir = lm_dir
        self.languages = {name.split(".")[0] for name in os.listdir(lm_dir) if name.endswith(".arpa.bin")}

    def run(self, data, rank: int = 0, world_size: int = 1):
        models = {}
        for doc in data:
            language = doc.metadata.get("language")
            if language in self.languages:
                if language not in models:
                    models[language] = LocalKenlmModel(self.lm_dir, language)
                doc.metadata["perplexity"] = models[language].get_perplexity(doc.text)
            yield doc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="folder of *.warc.wet.gz")
    parser.add_argument("--output", required=True)
    parser.add_argument("--lid-model", required=True)
    parser.add_argument("--lm-dir", required=True)
    parser.add_argument("--langs", required=True, help="comma list")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--minhash", action="store_true", help="also datatrove's MinHash near-dedup, 14 x 8")
    args = parser.parse_args(argv)
    tasks = len(glob.glob(os.path.join(args.input, "*.warc.wet.gz")))
    folder = args.output.rstrip("/") + "/"

    def run(pipeline, tasks, name):
        LocalPipelineExecutor(pipeline, tasks=tasks, workers=args.workers, logging_dir=folder + "logs/" + name).run()

    start = time.perf_counter()
    filtered = [
        WarcReader(args.input, glob_pattern="*.warc.wet.gz"),
        LocalLanguageFilter(args.lid_model, args.langs.split(","), args.threshold),
        CCNetPerplexity(args.lm_dir),
    ]
    if not args.minhash:
        run(filtered + [ParquetWriter(folder + "data", compression="zstd")], tasks, "filter")
    else:
        config = MinhashConfig()  # 5-grams, 14 buckets of 8 hashes, 64-bit xxhash
        run(filtered + [JsonlWriter(folder + "filtered", compression=None)], tasks, "filter")
        run(
            [JsonlReader(folder + "filtered"), MinhashDedupSignature(folder + "signatures", config)],
            tasks,
            "signatures",
        )
        run(
            [MinhashDedupBuckets(folder + "signatures", folder + "buckets", config=config)],
            config.num_buckets,
            "buckets",
        )
        run([MinhashDedupCluster(folder + "buckets", folder + "remove_ids", config=config)], 1, "clusters")
        near_dedup = [JsonlReader(folder + "filtered"), MinhashDedupFilter(folder + "remove_ids")]
        run(near_dedup + [ParquetWriter(folder + "data", compression="zstd")], tasks, "near-dedup")
    seconds = time.perf_counter() - start
    written = sum(pq.ParquetFile(p).metadata.num_rows for p in glob.glob(os.path.join(args.output, "data", "*")))
    print(f"datatrove {written} {seconds:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
