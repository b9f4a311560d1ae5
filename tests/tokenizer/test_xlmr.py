import pytest
import sentencepiece

from tests.support.helpers import write_corpus
from tests.tokenizer.conftest import SCRIPTS
from tokenizer import XLMRTokenizer
from tokenizer.__main__ import main as tokenizer_main
from tokenizer.xlmr import BOS, EOS, PAD, UNK


def test_fairseq_conventions(model):
    tok = XLMRTokenizer(model)
    sp = sentencepiece.SentencePieceProcessor(model_file=model)
    assert (BOS, PAD, EOS, UNK) == (0, 1, 2, 3)
    assert [tok.piece(i) for i in range(4)] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert tok.mask == sp.get_piece_size() + 1 == tok.vocab_size - 1 and tok.piece(tok.mask) == "<mask>"
    text = SCRIPTS["Latin"]
    assert tok.encode(text) == [0, *(i + 1 for i in sp.encode(text)), 2]
    assert tok.encode("a b", "c") == [0, *tok.encode("a b")[1:-1], 2, 2, *tok.encode("c")[1:-1], 2]
    assert UNK in tok.encode("☃")  # an unseen character is <unk> (3), not SentencePiece's 0


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_decode_encode_round_trip(model, script):
    tok = XLMRTokenizer(model)
    assert tok.decode(tok.encode(SCRIPTS[script])) == SCRIPTS[script]


def test_rejects_a_model_with_other_special_ids(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("abc def ghi\n" * 50)
    sentencepiece.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(tmp_path / "m"),
        vocab_size=20,
        hard_vocab_limit=False,
        unk_id=3,
        bos_id=0,
        eos_id=1,
        pad_id=2,
        minloglevel=2,
    )
    with pytest.raises(ValueError, match="<unk>=0"):
        XLMRTokenizer(str(tmp_path / "m.model"))


def test_train_from_a_corpus_with_the_sampler(tmp_path, capsys):
    import json

    from filters.document import make_document

    corpus = tmp_path / "corpus"
    write_corpus(
        corpus,
        {
            f"{language}/all/part-00000.parquet": [
                {
                    **make_document(
                        url=f"u{i}", date_download="d", digest="x", title="t", raw_content=f"{text} {i}", cc_segment="s"
                    ),
                    "language": language,
                }
                for i in range(50)
            ]
            for language, text in (("en", SCRIPTS["Latin"]), ("ru", SCRIPTS["Cyrillic"]), ("hi", SCRIPTS["Devanagari"]))
        },
    )
    out, again = tmp_path / "tok", tmp_path / "again"
    for folder in (out, again):
        argv = [
            "train",
            "--corpus",
            str(corpus),
            "--out",
            str(folder),
            "--vocab-size",
            "300",
            "--sample-documents",
            "300",
        ]
        assert tokenizer_main(argv) == 0
    # A rerun into another folder writes the same files: no path of the run inside the model.
    for name in ("sentencepiece.model", "dict.txt"):
        assert (out / name).read_bytes() == (again / name).read_bytes(), name
    tok = XLMRTokenizer(str(out / "sentencepiece.model"))
    info = json.loads((out / "tokenizer.json").read_text())
    assert set(info["documents_per_language"]) == {"en", "ru", "hi"}
    dict_lines = (out / "dict.txt").read_text(encoding="utf-8").splitlines()
    assert len(dict_lines) == tok.vocab_size - 5  # all pieces but <unk>, <s>, </s>; <pad> and <mask> implicit
    piece, count = dict_lines[0].rsplit(" ", 1)
    assert piece == tok.piece(4) and int(count) >= 1
    assert tok.decode(tok.encode(SCRIPTS["Devanagari"])) == SCRIPTS["Devanagari"]


def _xlmr_model():
    """XLM-R's released sentencepiece.bpe.model, where one is supplied ($XLMR_SENTENCEPIECE or
    ../shared/data/xlmr/sentencepiece.bpe.model); it cannot be downloaded offline."""
    import os

    from tests.support.helpers import SHARED_DATA

    for path in (os.environ.get("XLMR_SENTENCEPIECE", ""), str(SHARED_DATA / "xlmr" / "sentencepiece.bpe.model")):
        if path and os.path.isfile(path):
            return path
    return None


@pytest.mark.skipif(_xlmr_model() is None, reason="XLM-R's sentencepiece.bpe.model not supplied")
def test_xlmr_released_model_gives_fairseq_ids():
    tok = XLMRTokenizer(_xlmr_model())
    assert tok.encode("Hello world!") == [0, 35378, 8999, 38, 2]
    assert tok.encode("Bonjour le monde") == [0, 84602, 95, 11146, 2]
    assert tok.vocab_size == 250002 and tok.mask == 250001
