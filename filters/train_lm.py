"""Train CCNet-style reference language models: for one language, or for each of a set that has text.

    python -m filters.train_lm --lang xx --text FILE [--text FILE ...] --out DIR
    python -m filters.train_lm --langs 100 --text-dir DIR --out OUT   # DIR/<lang>.txt, for each that has one

``--langs`` takes what the mine job's does (``100`` for XLM-R's languages, or a comma list) and
trains a model for each language with ``DIR/<lang>.txt``; one line names those without.

Normalizes the text exactly as scoring does (``normalize_for_lm``), trains a SentencePiece
unigram model (65,536 pieces as CCNet, fewer when the text cannot fill that many), cuts the text
into pieces, estimates a 5-gram model with KenLM's ``lmplz`` and converts it with
``build_binary``. Writes CCNet's layout: ``DIR/xx.sp.model``, ``DIR/xx.arpa.bin``, plus
``DIR/xx.train.json`` with the config and counts. ``lmplz``/``build_binary`` come from
``make kenlm`` (``.kenlm/bin``), ``--kenlm-bin DIR``, ``$KENLM_BIN`` or the PATH.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from filters.normalize import normalize_for_lm
from filters.perplexity import model_paths
from toolkit import storage
from toolkit.cli import add_config_arguments, build_config, flag, given, run_cli
from toolkit.languages import parse_languages

PROJECT_KENLM_BIN = Path(__file__).resolve().parents[1] / ".kenlm" / "bin"


def train_sentencepiece(lines: Iterable[str], **options) -> bytes:
    """A SentencePiece model trained on ``lines`` (a text file's handle, or a list; a line's
    trailing newline is not part of it) with ``options``, as bytes. From lines and into memory:
    trained from and into files, a model records their (temporary) paths in its trainer spec,
    and a rerun in another folder would write other bytes."""
    import sentencepiece

    trained = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=(line.rstrip("\n") for line in lines),
        model_writer=trained,
        num_threads=os.cpu_count() or 1,
        minloglevel=2,
        **options,
    )
    return trained.getvalue()


@dataclass(frozen=True)
class TrainLmConfig:
    language: str = field(metadata=flag("--lang"))  # the code models are named by, e.g. "en"
    texts: Tuple[str, ...] = field(
        metadata=flag("--text", repeat=True)
    )  # plain-text files, one sentence or paragraph per line (repeat the flag)
    output: str = field(metadata=flag("--out"))  # folder for <lang>.sp.model, <lang>.arpa.bin, <lang>.train.json
    vocab_size: int = 65536  # SentencePiece pieces (CCNet's); a soft limit on small text
    order: int = 5  # n-gram order (CCNet's 5-gram)
    memory: str = "20%"  # lmplz -S: sorting memory, a share of RAM or a size such as 2G
    max_sentences: int = 2_000_000  # lines SentencePiece samples for training (bounds its RAM)
    kenlm_bin: Optional[str] = None  # folder with lmplz and build_binary

    def __post_init__(self):
        if not self.texts:
            raise ValueError("at least one --text file is needed")
        if self.vocab_size < 16 or self.order < 1 or self.max_sentences < 1:
            raise ValueError("vocab_size >= 16, order >= 1 and max_sentences >= 1 are required")


def find_kenlm_tool(name: str, kenlm_bin: Optional[str] = None) -> str:
    """The path of ``lmplz`` or ``build_binary``: --kenlm-bin, $KENLM_BIN, .kenlm/bin, PATH."""
    for folder in (kenlm_bin, os.environ.get("KENLM_BIN"), str(PROJECT_KENLM_BIN)):
        if folder and os.access(os.path.join(folder, name), os.X_OK):
            return os.path.join(folder, name)
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"KenLM's {name} not found: run `make kenlm` (builds .kenlm/bin) or pass --kenlm-bin")


def _run(command: List[str], stdin=None, stdout=None) -> None:
    result = subprocess.run(command, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise ChildProcessError(f"{os.path.basename(command[0])} failed: " + " | ".join(message))


def train_language_model(config: TrainLmConfig) -> dict:
    """Train and write the model pair; returns the counts written to ``<lang>.train.json``."""
    import sentencepiece

    for path in config.texts:  # checked here, not in the config: a saved config loads anywhere
        if not os.path.isfile(path):
            raise FileNotFoundError(f"text file not found: {path}")
    lmplz = find_kenlm_tool("lmplz", config.kenlm_bin)
    build_binary = find_kenlm_tool("build_binary", config.kenlm_bin)
    os.makedirs(config.output, exist_ok=True)
    sp_final, lm_final = model_paths(config.output, config.language)
    with tempfile.TemporaryDirectory(dir=config.output, prefix=f".{config.language}-") as work:
        normalized = os.path.join(work, "normalized.txt")
        lines = 0
        with open(normalized, "w", encoding="utf-8") as out:
            for path in config.texts:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    for line in handle:
                        line = normalize_for_lm(line)
                        if line:
                            out.write(line + "\n")
                            lines += 1
        if lines == 0:
            raise ValueError(f"no text in {', '.join(config.texts)}")
        with open(normalized, encoding="utf-8") as handle:
            pieces = train_sentencepiece(
                handle,
                vocab_size=config.vocab_size,
                model_type="unigram",
                hard_vocab_limit=False,  # small text: as many pieces as it supports
                input_sentence_size=config.max_sentences,
                shuffle_input_sentence=True,
                seed_sentencepiece_size=1_000_000,
            )
        sp = sentencepiece.SentencePieceProcessor(model_proto=pieces)
        tokens = os.path.join(work, "tokens.txt")
        with open(normalized, encoding="utf-8") as source, open(tokens, "w", encoding="utf-8") as out:
            for line in source:
                out.write(" ".join(sp.encode_as_pieces(line.rstrip("\n"))) + "\n")
        arpa = os.path.join(work, "lm.arpa")
        with open(tokens, "rb") as stdin, open(arpa, "wb") as stdout:
            _run(
                [lmplz, "-o", str(config.order), "-S", config.memory, "-T", work, "--discount_fallback"], stdin, stdout
            )
        binary = os.path.join(work, "lm.arpa.bin")
        _run([build_binary, arpa, binary], stdout=subprocess.DEVNULL)
        storage.write_bytes(sp_final, pieces)
        storage.publish(binary, lm_final)
    summary = {"config": dataclasses.asdict(config), "lines": lines, "pieces": sp.get_piece_size()}
    storage.write_json(os.path.join(config.output, f"{config.language}.train.json"), summary)
    return summary


def reference_texts(languages: Sequence[str], text_dir: str) -> Tuple[Dict[str, str], List[str]]:
    """({language: text_dir/<language>.txt} for the languages that have one, the languages that have none)."""
    if not os.path.isdir(text_dir):
        raise FileNotFoundError(f"reference text folder not found: {text_dir}")
    found = {lang: os.path.join(text_dir, f"{lang}.txt") for lang in languages}
    found = {lang: path for lang, path in found.items() if os.path.isfile(path)}
    return found, [lang for lang in languages if lang not in found]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m filters.train_lm",
        description="\n\n".join(__doc__.split("\n\n")[:3]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--langs", help="100 (XLM-R's languages) or a comma list: a model for each with --text-dir's <lang>.txt"
    )
    parser.add_argument("--text-dir", help="with --langs: the folder of <lang>.txt reference text")
    add_config_arguments(parser, TrainLmConfig)
    for action in parser._actions:  # --lang and --text, or --langs and --text-dir: _cli checks which
        if action.dest in ("config.language", "config.texts"):
            action.required = False
    return run_cli(_cli, parser, argv)


def _cli(args: argparse.Namespace) -> int:
    values = given(args)
    if args.langs is None:
        if args.text_dir is not None or "language" not in values or "texts" not in values:
            raise ValueError("give --lang xx --text FILE, or --langs 100|xx,yy --text-dir DIR")
        return _train(build_config(TrainLmConfig, values))
    if args.text_dir is None or "language" in values or "texts" in values:
        raise ValueError("--langs takes --text-dir DIR (its <lang>.txt files), not --lang or --text")
    languages = parse_languages(args.langs)
    texts, without = reference_texts(languages, args.text_dir)
    if not texts:
        raise FileNotFoundError(
            f"no reference text in {args.text_dir} for any of the {len(languages)} languages of --langs {args.langs}"
            f" (expected files such as {os.path.join(args.text_dir, languages[0] + '.txt')})"
        )
    configs = [
        build_config(TrainLmConfig, values, {"language": lang, "texts": (path,)}) for lang, path in texts.items()
    ]
    for config in configs:
        _train(config)
    if without:
        print(
            f"no reference text in {args.text_dir} for {len(without)} of the {len(languages)} languages, no model: {' '.join(without)}"
        )
    return 0


def _train(config: TrainLmConfig) -> int:
    summary = train_language_model(config)
    print(
        f"{config.language}: {summary['lines']} lines, {summary['pieces']} pieces -> "
        f"{config.output}/{config.language}.sp.model, {config.language}.arpa.bin",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
