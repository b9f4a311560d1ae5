from tests.tokenizer.conftest import SCRIPTS
from tokenizer.hf import hf_tokenizer, normalizer_spec
from tokenizer.xlmr import XLMRTokenizer


def test_hf_tokenizer_gives_fairseq_xlmr_ids(model):
    ours, theirs = XLMRTokenizer(model), hf_tokenizer(model)
    assert theirs.get_vocab_size() == ours.vocab_size and theirs.token_to_id("<mask>") == ours.mask
    for text in list(SCRIPTS.values()) + ["  several   spaces  ", "ﬁ Ｆｕｌｌ ① ™", "unseen ⌘ chars"]:
        assert theirs.encode(text).ids == ours.encode(text), text
    assert theirs.encode("first", "second").ids == ours.encode("first", "second")


def test_normalizer_spec_is_read_from_the_model_file(model):
    spec = normalizer_spec(model)
    assert len(spec["charsmap"]) > 1000  # nmt_nfkc's precompiled table
    assert spec["add_dummy_prefix"] and spec["remove_extra_whitespaces"]
