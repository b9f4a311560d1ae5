"""python -m tokenizer train --corpus CORPUS_DIR --out TOK_DIR [--vocab-size N] [--alpha 0.3] ...
python -m tokenizer pack --corpus CORPUS_DIR --tokenizer TOK_DIR --out DATA_DIR [--tokens-per-sample 512]"""
import argparse
import sys

from tokenizer.pack import pack_corpus
from tokenizer.train import TokenizerConfig, train_tokenizer


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokenizer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train the SentencePiece vocabulary on sampled corpus text")
    train.add_argument("--corpus", required=True, help="corpus folder (manifest.json and shards)")
    train.add_argument("--out", required=True, help="folder for sentencepiece.model, dict.txt, tokenizer.json")
    train.add_argument("--vocab-size", type=int, default=250_000)
    train.add_argument("--alpha", type=float, default=0.3)
    train.add_argument("--sample-documents", type=int, default=1_000_000)
    train.add_argument("--input-sentence-size", type=int, default=2_000_000, help="lines SentencePiece loads: about 3.5 GB of RAM per million")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--buckets", default=None, help="comma list, e.g. head,middle (default: all)")
    pack = sub.add_parser("pack", help="token ids in blocks of --tokens-per-sample, per language, memory-mappable")
    pack.add_argument("--corpus", required=True)
    pack.add_argument("--tokenizer", required=True, help="folder with sentencepiece.model")
    pack.add_argument("--out", required=True)
    pack.add_argument("--tokens-per-sample", type=int, default=512)
    pack.add_argument("--buckets", default=None, help="comma list, e.g. head,middle (default: all)")
    args = parser.parse_args(argv)
    buckets = tuple(args.buckets.split(",")) if args.buckets else None
    try:
        print(_pack(args, buckets) if args.command == "pack" else _train(args, buckets))
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def _train(args, buckets) -> str:
    config = TokenizerConfig(
        vocab_size=args.vocab_size, alpha=args.alpha, sample_documents=args.sample_documents,
        input_sentence_size=args.input_sentence_size, seed=args.seed, buckets=buckets,
    )
    summary = train_tokenizer(args.corpus, args.out, config)
    return f"{summary['pieces']} pieces from {sum(summary['documents_per_language'].values())} sampled documents -> {args.out}"


def _pack(args, buckets) -> str:
    manifest = pack_corpus(args.corpus, args.tokenizer, args.out, args.tokens_per_sample, buckets)
    blocks = sum(v["blocks"] for v in manifest["languages"].values())
    tokens = sum(v["tokens"] for v in manifest["languages"].values())
    return f"{blocks} blocks, {tokens} tokens in {len(manifest['languages'])} languages -> {args.out}"


if __name__ == "__main__":
    sys.exit(main())
