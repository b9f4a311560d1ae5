"""A packed DATA_DIR for the trainer: documents in three languages written as corpus shards, a
SentencePiece model trained here, and the real ``tokenizer pack``."""

import os
import random
import shutil
import subprocess
import sys

import pytest

from filters.document import make_document
from tests.support.helpers import write_corpus
from tests.tokenizer.conftest import SCRIPTS, train_sentencepiece
from tokenizer.pack import PackConfig, pack_corpus

# Which lines each language's documents are made of.
LANGUAGE_LINES = {"en": ["Latin", "Georgian"], "ru": ["Cyrillic", "Armenian"], "el": ["Greek", "Hebrew"]}


def write_mixed_corpus(root, documents_per_language=(120, 60, 30), seed=0):
    """A corpus folder as ``python -m ccnet_pipeline mine`` writes it (shards + manifest)."""
    rng = random.Random(seed)
    shards = {}
    for (language, names), count in zip(LANGUAGE_LINES.items(), documents_per_language):
        docs = []
        for i in range(count):
            lines = [SCRIPTS[rng.choice(names)] for _ in range(rng.randint(1, 4))]
            docs.append(
                {
                    **make_document(
                        url=f"https://{language}.example/{i}",
                        date_download="2019-02-16T04:15:08Z",
                        digest=f"{language}{i}",
                        title="t",
                        raw_content="\n".join(lines),
                        cc_segment="s",
                    ),
                    "language": language,
                }
            )
        shards[f"{language}/head/part-00000.parquet"] = docs
    return write_corpus(root, shards)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrain-data")
    tok_dir = root / "tok"
    tok_dir.mkdir()
    shutil.copy(train_sentencepiece(root), tok_dir / "sentencepiece.model")
    corpus = write_mixed_corpus(root / "corpus")
    pack_corpus(str(corpus), str(tok_dir), str(root / "data"), PackConfig(tokens_per_sample=32))
    return str(root / "data")


def run_train(data_dir, run_dir, *flags):
    """``python -m pretrain train`` in-process (tiny preset, small batches), returns its exit code."""
    from pretrain.cli import main

    return main(
        [
            "train",
            "--config",
            "tiny",
            "--data",
            data_dir,
            "--out",
            str(run_dir),
            "--batch-size",
            "8",
            "--log-interval",
            "5",
            "--eval-interval",
            "20",
            "--save-interval",
            "20",
            "--eval-blocks",
            "8",
            *flags,
        ]
    )


@pytest.fixture(scope="session")
def trained_run(data_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run") / "run"
    assert run_train(data_dir, run_dir, "--max-steps", "40", "--total-steps", "40", "--warmup-steps", "5") == 0
    return str(run_dir)


WORDS = {script: SCRIPTS[script].rstrip(".").split() for script in ("Latin", "Cyrillic", "Greek")}


def write_task(path, count, seed, shares=(0.4, 0.3, 0.3)):
    """Which script a text is in: learnable from the pieces; the majority class has 40% of the rows."""
    rng = random.Random(seed)
    lines = ["text\tlabel"]
    for _ in range(count):
        script = rng.choices(list(WORDS), weights=shares)[0]
        lines.append(" ".join(rng.choices(WORDS[script], k=rng.randint(3, 7))) + f"\t{script.lower()}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="session")
def task(tmp_path_factory):
    root = tmp_path_factory.mktemp("task")
    return {
        split: write_task(root / f"{split}.tsv", n, seed)
        for split, n, seed in (("train", 192, 1), ("dev", 40, 2), ("test", 60, 3))
    }


def run_finetune(trained_run, task, out, *flags):
    """``python -m pretrain finetune`` in-process on ``task``'s files, 4 epochs; its exit code."""
    from pretrain.cli import main

    argv = ["finetune", "--init", trained_run, "--train", task["train"], "--dev", task["dev"], "--test", task["test"]]
    return main([*argv, "--out", str(out), "--epochs", "4", "--batch-size", "16", *flags])


ENTITY_OF = {"Latin": "O", "Cyrillic": "PER", "Greek": "LOC"}  # a tokens task's entities by script


def write_tagged_task(path, count, seed):
    """CoNLL sentences of 2 or 3 runs of one or two words (short: pretraining saw 32 positions), each run in another script than the last:
    Cyrillic runs are PER entities, Greek ones LOC, Latin words O (BIO tags)."""
    rng = random.Random(seed)
    lines, script = [], None
    for _ in range(count):
        for _ in range(rng.randint(2, 3)):
            script = rng.choice([s for s in ENTITY_OF if s != script])
            for position in range(rng.randint(1, 2)):
                entity = ENTITY_OF[script]
                tag = "O" if entity == "O" else ("B-" if position == 0 else "I-") + entity
                lines.append(f"{rng.choice(WORDS[script])} {tag}")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def tagged_task(tmp_path_factory):
    root = tmp_path_factory.mktemp("tagged")
    return {
        split: write_tagged_task(root / f"{split}.conll", n, seed)
        for split, n, seed in (("train", 600, 1), ("dev", 64, 2), ("test", 64, 3))
    }


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_torchrun(*argv):
    """``python -m pretrain ARGV`` as 2 DDP processes under torchrun (one thread each); its stdout."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    done = subprocess.run(
        [*command, "-m", "pretrain", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
