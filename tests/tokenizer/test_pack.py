import json

import numpy as np
import pytest

from tests.helpers import write_corpus
from tests.tokenizer.conftest import SCRIPTS
from tokenizer.pack import PackConfig, document_ids, load_blocks, pack_blocks, pack_corpus
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
    assert saved == json.loads(json.dumps(manifest)) and saved["tokens_per_sample"] == 64
    tokens, index = load_blocks(str(tmp_path / "data"), "el")
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


def test_tokens_per_sample_is_validated():
    with pytest.raises(ValueError):
        list(pack_blocks([[5, 6]], tokens_per_sample=1))
