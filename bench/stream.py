"""make bench-stream: tokens/s on one core from corpus to training blocks.

(a) reading pre-tokenized shards (`python -m tokenizer pack`) into blocks of 512 ids, batched as
    a [batch, 512] array, as the trainer does (target >= 5M tokens/s);
(b) sampling documents from the Parquet shards (MultilingualSampler, alpha 0.3) and encoding and
    packing them on the fly.
Runs on the corpus, tokenizer and packed data of `make tokenize`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from sampling import MixtureConfig, MultilingualSampler
from tokenizer import XLMRTokenizer
from tokenizer.pack import PackedManifest, document_ids, pack_blocks
from tokenizer.xlmr import PAD


def read_packed(data_dir: str, batch: int, repeats: int) -> tuple:
    """Tokens delivered by assembling [batch, tokens_per_sample] arrays from every block."""
    manifest = PackedManifest.read(data_dir)
    width = manifest.tokens_per_sample
    shards = [manifest.load_blocks(data_dir, language) for language in sorted(manifest.languages)]
    tokens = 0
    start = time.perf_counter()
    for _ in range(repeats):
        for ids, index in shards:
            for first in range(0, len(index), batch):
                rows = index[first : first + batch]
                out = np.full((len(rows), width), PAD, dtype=np.int64)
                for row, (offset, length) in enumerate(rows):
                    out[row, :length] = ids[offset : offset + length]
                tokens += int(rows["length"].sum())
    return tokens, time.perf_counter() - start


def encode_on_the_fly(corpus: str, tokenizer_dir: str, documents: int, width: int) -> tuple:
    sampler = MultilingualSampler(corpus, MixtureConfig(alpha=0.3), seed=0)
    tokenizer = XLMRTokenizer(os.path.join(tokenizer_dir, "sentencepiece.model"))
    start = time.perf_counter()
    stream = (document_ids(tokenizer, next(sampler)["raw_content"]) for _ in range(documents))
    tokens = sum(len(block) for block in pack_blocks(stream, width))
    return tokens, time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="out/corpus")
    parser.add_argument("--tokenizer", default="out/tokenizer")
    parser.add_argument("--data", default="out/data")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--documents", type=int, default=3000)
    args = parser.parse_args(argv)
    tokens, seconds = read_packed(args.data, args.batch, repeats=20)
    print(
        f"(a) pre-tokenized shards -> [{args.batch}, 512] batches: {tokens / seconds / 1e6:.1f} M tokens/s "
        f"({tokens} tokens in {seconds:.2f} s; target >= 5 M)"
    )
    tokens, seconds = encode_on_the_fly(args.corpus, args.tokenizer, args.documents, 512)
    print(
        f"(b) sample + encode + pack from Parquet: {tokens / seconds / 1e6:.2f} M tokens/s "
        f"({tokens} tokens from {args.documents} documents in {seconds:.2f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
