import json
from dataclasses import asdict

import numpy as np
import pytest

from tests.support.helpers import write_corpus
from tests.tokenizer.conftest import SCRIPTS
from tokenizer.pack import PackConfig, PackedManifest, document_ids, pack_blocks, pack_corpus
from tokenizer.xlmr import BOS, EOS, XLMRTokenizer


def test_blocks_start_with_bos_and_keep_the_stream():
    documents = [list(range(10, 25)), list(range(30, 33)), list(range(40, 52))]
    blocks = list(pack_blocks(documents, tokens_per_sample=8))
    assert all(block[0] == BOS for block in blocks)
    assert [len(b) for b in blocks] == [8, 8, 8, 8, 3]  # 30 ids, 7 after each <s>, the last block short
    assert np.concatenate([b[1:] for b in blocks]).tolist() == [i for d in documents for i in d]
    assert all(b.dtype == np.uint32 for b in blocks)


def test_paragraphs_and_documents_end_with_eos(model):
    tok = XLMRTokenizer(model)
    ids = document_ids(tok, f"{SCRIPTS['Latin']}\n\n{SCRIPTS['Greek']}")
    assert ids.count(EOS) == 2 and ids[-1] == EOS and BOS not in ids
    assert tok.decode([BOS, *ids]) == f"{SCRIPTS['Latin']} {SCRIPTS['Greek']}"


def test_pack_corpus_writes_memory_mappable_shards(model, tmp_path):
    import shutil

    from filters.document import make_document

    corpus, tok_dir = tmp_path / "corpus", tmp_path / "tok"
    tok_dir.mkdir()
    shutil.copy(model, tok_dir / "sentencepiece.model")
    write_corpus(
        corpus,
        {
            f"{language}/all/part-00000.parquet": [
                {
                    **make_document(
                        url=f"u{i}",
                        date_download="d",
                        digest="x",
                        title="t",
                        raw_content=f"{text}\n{text}",
                        cc_segment="s",
                    ),
                    "language": language,
                }
                for i in range(30)
            ]
            for language, text in (("en", SCRIPTS["Latin"]), ("el", SCRIPTS["Greek"]))
        },
    )
    manifest = pack_corpus(str(corpus), str(tok_dir), str(tmp_path / "data"), PackConfig(tokens_per_sample=64))
    saved = json.loads((tmp_path / "data" / "manifest.json").read_text())
    assert saved == json.loads(json.dumps(asdict(manifest))) and saved["tokens_per_sample"] == 64
    assert PackedManifest.read(str(tmp_path / "data")) == manifest
    tokens, index = manifest.load_blocks(str(tmp_path / "data"), "el")
    assert isinstance(tokens, np.memmap) and len(index) == saved["languages"]["el"]["blocks"]
    assert index["length"][:-1].tolist() == [64] * (len(index) - 1) and 0 < index["length"][-1] <= 64
    assert (tokens[index["offset"]] == BOS).all() and tokens.size == saved["languages"]["el"]["tokens"]
    tok = XLMRTokenizer(model)
    first = tokens[index["offset"][0] : index["offset"][0] + index["length"][0]]
    assert tok.decode(first.tolist()).startswith(SCRIPTS["Greek"])


def test_an_hf_tokenizer_folder_is_accepted(model, tmp_path):
    import shutil

    from tokenizer.pack import sentencepiece_file

    shutil.copy(model, tmp_path / "sentencepiece.bpe.model")
    assert sentencepiece_file(str(tmp_path)) == str(tmp_path / "sentencepiece.bpe.model")
    with pytest.raises(FileNotFoundError):
        sentencepiece_file(str(tmp_path / "missing"))


def _documents(text, count=3):
    from filters.document import make_document

    return [
        make_document(url=f"u{i}", date_download="d", digest="x", title="t", raw_content=text, cc_segment="s")
        for i in range(count)
    ]


def _tokenizer_dir(model, root):
    import shutil

    root.mkdir()
    shutil.copy(model, root / "sentencepiece.model")
    return root


def test_nothing_to_pack_is_an_error(model, tmp_path, capsys):
    from tokenizer.__main__ import main

    tok = _tokenizer_dir(model, tmp_path / "tok")
    write_corpus(tmp_path / "empty", {})  # what the mine job writes when it keeps no document
    assert (
        main(["pack", "--corpus", str(tmp_path / "empty"), "--tokenizer", str(tok), "--out", str(tmp_path / "d")]) == 2
    )
    err = capsys.readouterr().err
    assert err == f"error: nothing to pack: {tmp_path / 'empty'} holds no document (did the mine job keep any?)\n"
    blank = {"en/all/part-00000.parquet": [{**d, "language": "en"} for d in _documents(" \n\n ")]}
    write_corpus(tmp_path / "blank", blank)
    assert (
        main(["pack", "--corpus", str(tmp_path / "blank"), "--tokenizer", str(tok), "--out", str(tmp_path / "d")]) == 2
    )
    assert "nothing to pack: the documents of" in capsys.readouterr().err
    write_corpus(tmp_path / "all", {"en/all/part-00000.parquet": [{**d, "language": "en"} for d in _documents("a b")]})
    argv = ["pack", "--corpus", str(tmp_path / "all"), "--tokenizer", str(tok), "--out", str(tmp_path / "d")]
    assert main([*argv, "--buckets", "head"]) == 2
    assert f"nothing to pack: {tmp_path / 'all'} (buckets head) holds no document" in capsys.readouterr().err


def test_a_language_without_blocks_is_left_out_and_named(model, tmp_path, capsys):
    from tokenizer.__main__ import main

    tok = _tokenizer_dir(model, tmp_path / "tok")
    shards = {
        "en/all/part-00000.parquet": [{**d, "language": "en"} for d in _documents(SCRIPTS["Latin"])],
        "el/all/part-00000.parquet": [{**d, "language": "el"} for d in _documents("\n \n")],
    }
    write_corpus(tmp_path / "corpus", shards)
    argv = ["pack", "--corpus", str(tmp_path / "corpus"), "--tokenizer", str(tok), "--out", str(tmp_path / "data")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "in 1 languages" in captured.out
    assert captured.err == "warning: no block for el: their corpus documents yield no token; left out\n"
    manifest = json.loads((tmp_path / "data" / "manifest.json").read_text())
    assert set(manifest["languages"]) == {"en"} and manifest["languages_without_blocks"] == ["el"]
    assert not (tmp_path / "data" / "el.bin").exists()


def test_a_corrupt_tokenizer_model_names_the_file(tmp_path, capsys):
    from tokenizer.__main__ import main

    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "sentencepiece.model").write_bytes(b"\x0a\xff not a model" * 20)
    write_corpus(tmp_path / "corpus", {"en/all/part-00000.parquet": [{**d, "language": "en"} for d in _documents("a")]})
    argv = ["pack", "--corpus", str(tmp_path / "corpus"), "--tokenizer", str(tmp_path / "tok"), "--out", str(tmp_path)]
    assert main(argv) == 2
    model = tmp_path / "tok" / "sentencepiece.model"
    assert capsys.readouterr().err == (
        f"error: cannot load SentencePiece model {model}: not a SentencePiece model (corrupt, cut short, or another"
        " kind of file)\n"
    )


def test_tokens_per_sample_is_validated():
    with pytest.raises(ValueError):
        list(pack_blocks([[5, 6]], tokens_per_sample=1))
