"""Models on shared storage: a Beam filesystem of the test's own (scheme ``sharedtest://``) that
maps to a local folder, standing in for gs:// or s3://."""

import json
import os

import pytest

from ccnet_pipeline.cli import main
from tests.support.helpers import SHARED_PREFIX as PREFIX
from tests.support.helpers import page, paragraphs, write_wet_file
from toolkit.storage import localize


def test_localize_copies_once(tmp_path):
    source = tmp_path / "model.bin"
    source.write_bytes(b"weights")
    local = localize(PREFIX + str(source))
    assert open(local, "rb").read() == b"weights" and local != str(source)
    assert localize(PREFIX + str(source)) == local
    assert localize(str(source)) == str(source)


@pytest.mark.slow
def test_mine_with_models_on_shared_storage(lid_model, lm_dir, tmp_path):
    write_wet_file(
        tmp_path / "wet" / "a.warc.wet.gz", [page(i, paragraphs("en", 4, f"doc{'x' * i}")) for i in range(3)]
    )
    out = tmp_path / "corpus"
    code = main(
        [
            "mine",
            "--input",
            str(tmp_path / "wet" / "*.gz"),
            "--output",
            str(out),
            "--langs",
            "en",
            "--lid-model",
            PREFIX + lid_model,
            "--lm-dir",
            PREFIX + str(lm_dir),
        ]
    )
    assert code == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["counters"]["perplexity/scored"] == 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["cutoffs"]) == {"en"}


@pytest.mark.slow
def test_a_corpus_on_shared_storage_is_written_and_read_back(lid_model, tmp_path):
    """mine writes its output to a Beam file system; the sampler and the packer read it there."""
    from sampling import MultilingualSampler
    from tests.tokenizer.conftest import train_sentencepiece
    from tokenizer.pack import PackConfig, pack_corpus

    write_wet_file(
        tmp_path / "wet" / "a.warc.wet.gz",
        [page(i, paragraphs(lang, 4, f"doc{'x' * i}")) for i, lang in enumerate(["en", "fr", "de", "en", "fr", "de"])],
    )
    remote = PREFIX + str(tmp_path / "corpus")
    assert (
        main(
            [
                "mine",
                "--input",
                str(tmp_path / "wet" / "*.gz"),
                "--output",
                remote,
                "--langs",
                "en,fr,de",
                "--min-len",
                "50",
            ]
        )
        == 0
    )
    assert (tmp_path / "corpus" / "_work" / "complete").exists()
    assert sorted(
        p.relative_to(tmp_path / "corpus").as_posix() for p in (tmp_path / "corpus").glob("*/*/*.parquet")
    ) == ["de/all/part-00000.parquet", "en/all/part-00000.parquet", "fr/all/part-00000.parquet"]
    sampler = MultilingualSampler(remote, seed=1)
    assert sampler.documents == 6 and {next(sampler)["language"] for _ in range(60)} == {"en", "fr", "de"}
    tokenizer = tmp_path / "tok"
    tokenizer.mkdir()
    os.rename(train_sentencepiece(tokenizer), tokenizer / "sentencepiece.model")
    manifest = pack_corpus(remote, str(tokenizer), str(tmp_path / "data"), PackConfig(tokens_per_sample=32))
    assert set(manifest.languages) == {"en", "fr", "de"} and manifest.corpus == remote
