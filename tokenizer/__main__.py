"""python -m tokenizer train --corpus CORPUS_DIR --out TOK_DIR [--vocab-size N] [--sampling alpha|pooled|unimax] ...
python -m tokenizer pack --corpus CORPUS_DIR --tokenizer TOK_DIR --out DATA_DIR [--tokens-per-sample 512]"""

import argparse
import sys

from tokenizer.pack import PackConfig, pack_corpus
from tokenizer.train import TokenizerConfig, train_tokenizer
from toolkit.cli import add_config_arguments, build_config, given, run_cli


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokenizer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train the SentencePiece vocabulary on sampled corpus text")
    train.add_argument("--corpus", required=True, help="corpus folder (manifest.json and shards)")
    train.add_argument("--out", required=True, help="folder for sentencepiece.model, dict.txt, tokenizer.json")
    add_config_arguments(train, TokenizerConfig)
    pack = sub.add_parser("pack", help="token ids in blocks of --tokens-per-sample, per language, memory-mappable")
    pack.add_argument("--corpus", required=True)
    pack.add_argument("--tokenizer", required=True, help="folder with sentencepiece.model")
    pack.add_argument("--out", required=True)
    add_config_arguments(pack, PackConfig)
    return run_cli(_run, parser, argv)


def _run(args) -> int:
    if args.command == "pack":
        manifest = pack_corpus(args.corpus, args.tokenizer, args.out, build_config(PackConfig, given(args)))
        blocks = sum(counts.blocks for counts in manifest.languages.values())
        tokens = sum(counts.tokens for counts in manifest.languages.values())
        print(f"{blocks} blocks, {tokens} tokens in {len(manifest.languages)} languages -> {args.out}")
        if manifest.languages_without_blocks:
            print(
                f"warning: no block for {', '.join(manifest.languages_without_blocks)}: their corpus documents"
                " yield no token; left out",
                file=sys.stderr,
            )
        return 0
    summary = train_tokenizer(args.corpus, args.out, build_config(TokenizerConfig, given(args)))
    print(
        f"{summary['pieces']} pieces from {sum(summary['documents_per_language'].values())} sampled documents -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
