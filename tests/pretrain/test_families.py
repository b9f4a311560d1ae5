"""Real checkpoints in (issue 31): Hugging Face folders of the families people fine-tune, written by
transformers' own ``save_pretrained`` with random weights — XLM-R with and without its LM head,
BERT with XLM-R's SentencePiece vocabulary (as the multilingual MiniLM sentence encoders) or
with a WordPiece ``tokenizer.json`` of its own (as mBERT), a padded vocabulary — load with the
same hidden states as transformers', fine-tune, evaluate, export in their family and load back
in transformers, and teach a student."""

import json
import os
import shutil

import pytest
import torch

from pretrain.cli import main
from pretrain.hub import from_pretrained, load_run
from tests.pretrain.conftest import run_finetune
from tests.tokenizer.conftest import SCRIPTS
from tokenizer.hf import write_hf_tokenizer

transformers = pytest.importorskip("transformers")
PADDING_ROWS = 35  # as real checkpoints pad their embedding past the tokenizer's ids
SHAPE = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96)


def perturbed(model):
    """Every weight made to matter (token types and pooler included), then saved."""
    torch.manual_seed(3)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)
    return model.eval()


def sentencepiece_tokenizer(out, trained_run, json_only=False):
    """The trained run's SentencePiece model as XLM-R's tokenizer files (tokenizer.json only:
    its SentencePiece file left out, as some folders ship)."""
    write_hf_tokenizer(load_run(trained_run)[2], str(out))
    if json_only:
        os.remove(out / "sentencepiece.bpe.model")
    return out


def wordpiece_tokenizer(out):
    """A WordPiece tokenizer.json of BERT's kind (``[CLS]``/``[SEP]``/``[PAD]`` = 2/3/0, pairs typed)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=specials)
    tokenizer.train_from_iterator(list(SCRIPTS.values()) * 20, trainer)
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out / "tokenizer.json"))
    return out


def hf_folder(tmp_path, name, architecture, tokenizer_of, padding_rows=0):
    """``architecture`` (e.g. ``BertModel``) with random weights, saved by transformers, beside the
    tokenizer ``tokenizer_of(folder)`` writes; its vocabulary the tokenizer's plus ``padding_rows``."""
    out = tmp_path / name
    out.mkdir()
    tokenizer_of(out)
    from tokenizer.hf import open_tokenizer, tokenizer_file

    tokenizer = open_tokenizer(tokenizer_file(str(out)))
    bert = architecture.startswith("Bert")
    config_class = transformers.BertConfig if bert else transformers.XLMRobertaConfig
    config = config_class(
        vocab_size=tokenizer.vocab_size + padding_rows,
        max_position_embeddings=128 if bert else 130,
        pad_token_id=0 if bert else 1,  # BERT's config says 0 whatever its tokenizer pads with, as MiniLM's
        type_vocab_size=2 if bert else 1,
        layer_norm_eps=1e-12 if bert else 1e-5,
        **SHAPE,
    )
    if architecture.endswith("Classification"):
        config.num_labels = 3
    perturbed(getattr(transformers, architecture)(config)).save_pretrained(out)
    return str(out), tokenizer


def hidden_states(model, tokens, pad):
    with torch.no_grad():
        outputs = model(input_ids=tokens, attention_mask=tokens.ne(pad).long(), output_hidden_states=True)
    return outputs.hidden_states


FOLDERS = {
    # name: (architecture, tokenizer files, padding rows)
    "xlmr-mlm": ("XLMRobertaForMaskedLM", "sentencepiece", 0),
    "xlmr-encoder": ("XLMRobertaModel", "sentencepiece", 0),
    "xlmr-json-only-padded": ("XLMRobertaModel", "sentencepiece-json-only", PADDING_ROWS),
    "bert-minilm-like": ("BertModel", "sentencepiece", PADDING_ROWS),
    "bert-mlm-wordpiece": ("BertForMaskedLM", "wordpiece", 0),
    "bert-encoder-wordpiece": ("BertModel", "wordpiece", 0),
}


@pytest.fixture
def folder(request, trained_run, tmp_path):
    architecture, kind, padding = FOLDERS[request.param]
    tokenizer_of = {
        "sentencepiece": lambda out: sentencepiece_tokenizer(out, trained_run),
        "sentencepiece-json-only": lambda out: sentencepiece_tokenizer(out, trained_run, json_only=True),
        "wordpiece": wordpiece_tokenizer,
    }[kind]
    path, tokenizer = hf_folder(tmp_path, request.param, architecture, tokenizer_of, padding)
    return path, tokenizer, getattr(transformers, architecture)


@pytest.mark.parametrize("folder", list(FOLDERS), indirect=True)
def test_every_family_loads_with_transformers_hidden_states(folder):
    path, tokenizer, architecture = folder
    hub = from_pretrained(path)
    texts = [SCRIPTS["Latin"], SCRIPTS["Greek"] + " " + SCRIPTS["Cyrillic"]]
    rows = [tokenizer.encode(text) for text in texts]
    width = max(map(len, rows))
    tokens = torch.tensor([row + [tokenizer.pad] * (width - len(row)) for row in rows])
    theirs = hidden_states(architecture.from_pretrained(path).eval(), tokens, tokenizer.pad)
    with torch.no_grad():
        ours = hub.model.features(tokens, return_all_hiddens=True)
    real = tokens.ne(tokenizer.pad)
    assert len(ours) == len(theirs) == 3
    for layer, (a, b) in enumerate(zip(ours, theirs)):
        assert (a - b)[real].abs().max().item() < 1e-4, layer
    assert hub.model.config.lm_head == architecture.__name__.endswith("MaskedLM")


@pytest.mark.parametrize(
    "folder", ["bert-minilm-like", "bert-encoder-wordpiece", "xlmr-json-only-padded"], indirect=True
)
@pytest.mark.slow
def test_fine_tuning_an_hf_encoder_gives_a_run_every_command_reads_and_exports_in_its_family(
    folder, task, tmp_path, capsys
):
    path, tokenizer, architecture = folder
    out = tmp_path / "ft"
    assert run_finetune(path, task, out, "--epochs", "6", "--lr", "3e-3") == 0
    results = json.loads((out / "results.json").read_text())
    assert results["test"][task["test"]]["accuracy"] >= 0.8
    # The run's embedding keeps the checkpoint's padding rows, and every reader takes it.
    assert load_run(str(out))[0].vocab_size == tokenizer.vocab_size + FOLDERS[os.path.basename(path)][2]
    capsys.readouterr()
    assert (
        main(["evaluate", "classify", "--model", str(out), "--test", f"t={task['test']}", "--out", str(tmp_path / "e")])
        == 0
    )
    assert f"{results['test'][task['test']]['accuracy']:.4f}" in capsys.readouterr().out
    (tmp_path / "s.txt").write_text(f"{SCRIPTS['Latin']}\n{SCRIPTS['Greek']}\n")
    src = str(tmp_path / "s.txt")
    assert main(["evaluate", "retrieval", "--model", str(out), "--src", src, "--tgt", src, "--layer", "all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("(")[-1] for line in lines[-3:]] == ["layer 0)", "layer 1)", "layer 2)"]
    # The export is the family it came in, and transformers gives its logits.
    hf_dir = out / "hf"
    saved = json.loads((hf_dir / "config.json").read_text())
    family = "bert" if architecture.__name__.startswith("Bert") else "xlm-roberta"
    assert saved["model_type"] == family and saved["architectures"][0].endswith("ForSequenceClassification")
    reloaded = transformers.AutoModelForSequenceClassification.from_pretrained(str(hf_dir)).eval()
    assert type(reloaded).__name__.startswith("Bert" if family == "bert" else "XLMRoberta")
    hub = from_pretrained(str(hf_dir))
    ids = hub.encode(SCRIPTS["Greek"])
    with torch.no_grad():
        theirs = reloaded(input_ids=ids[None]).logits
    assert (hub.predict("classifier", ids, return_logits=True) - theirs).abs().max().item() < 1e-4


def test_a_bert_pair_is_typed_as_bert_types_it(tmp_path):
    from tokenizer.hf import HFTokenizer

    tokenizer = HFTokenizer(str(wordpiece_tokenizer(tmp_path / "wp") / "tokenizer.json"))
    ids, types = tokenizer.encode_example((SCRIPTS["Latin"], SCRIPTS["Greek"]), 512)
    assert ids[0] == tokenizer.bos == 2 and ids.count(tokenizer.eos) == 2 and set(types) == {0, 1}
    assert types.index(1) == ids.index(tokenizer.eos) + 1  # the second text and its [SEP] are type 1
    cut, cut_types = tokenizer.encode_example((SCRIPTS["Latin"] * 3, SCRIPTS["Greek"]), 12)
    assert len(cut) == len(cut_types) == 12 and cut[-1] == tokenizer.eos


def test_the_causes_are_named(trained_run, tmp_path, capsys):
    bare = tmp_path / "bare"
    perturbed(transformers.XLMRobertaModel(transformers.XLMRobertaConfig(vocab_size=500, **SHAPE))).save_pretrained(
        bare
    )
    assert main(["evaluate", "retrieval", "--model", str(bare), "--src", "x", "--tgt", "x"]) == 2
    assert "has no tokenizer: expected sentencepiece.bpe.model" in capsys.readouterr().err
    gpt = tmp_path / "gpt"
    shutil.copytree(bare, gpt)
    config = json.loads((gpt / "config.json").read_text())
    (gpt / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    sentencepiece_tokenizer(gpt, trained_run)
    assert main(["evaluate", "retrieval", "--model", str(gpt), "--src", "x", "--tgt", "x"]) == 2
    assert "model_type 'gpt2' is not supported: XLM-R, RoBERTa and BERT" in capsys.readouterr().err
    small = tmp_path / "small"
    sentencepiece_tokenizer(small, trained_run)
    perturbed(transformers.XLMRobertaModel(transformers.XLMRobertaConfig(vocab_size=50, **SHAPE))).save_pretrained(
        small
    )
    assert main(["evaluate", "retrieval", "--model", str(small), "--src", "x", "--tgt", "x"]) == 2
    err = capsys.readouterr().err
    assert "ids, the model's embedding matrix 50 rows" in err and "sentencepiece.bpe.model" in err


def test_the_retrieval_layer_follows_the_model_kind():
    from pretrain.evaluate import default_layer

    assert default_layer(12) == 8 and default_layer(12, sentence_encoder=True) == 12  # XTREME's, then the last


def test_an_hf_bert_teaches_a_student_of_its_family_and_takes_an_adapter(trained_run, data_dir, tmp_path, capsys):
    with_run_tokenizer = lambda out: sentencepiece_tokenizer(out, trained_run)
    teacher, _ = hf_folder(tmp_path, "teacher", "BertForMaskedLM", with_run_tokenizer)
    short = ["--max-steps", "3", "--total-steps", "3", "--warmup-steps", "1", "--eval-blocks", "0"]
    student = str(tmp_path / "student")
    argv = ["distill", "--teacher", teacher, "--student-config", "mini", "--data", data_dir, "--out", student]
    assert main([*argv, *short]) == 0
    assert load_run(student)[0].family == "bert"
    assert main(["export-hf", student, str(tmp_path / "student-hf")]) == 0
    reloaded = transformers.AutoModelForMaskedLM.from_pretrained(str(tmp_path / "student-hf"))
    assert type(reloaded).__name__ == "BertForMaskedLM" and reloaded.config.num_hidden_layers == 1

    encoder, _ = hf_folder(tmp_path, "encoder", "BertModel", with_run_tokenizer)
    capsys.readouterr()
    argv = ["train-adapter", "--init", encoder, "--data", data_dir, "--language", "en", "--out", str(tmp_path / "ad")]
    assert main([*argv, *short]) == 0
    assert capsys.readouterr().out.count("has no masked-LM head: a fresh one is added") == 1
    assert (tmp_path / "ad" / "adapter" / "adapter_config.json").exists()


@pytest.mark.parametrize("family", ["bert", "xlm-roberta"])
def test_a_sentence_head_drops_out_where_transformers_head_does(family):
    """Training mode, the same random state: the same logits as XLMRobertaClassificationHead
    (dropout -> dense -> tanh -> dropout -> out_proj), or as BertForSequenceClassification's
    pooler -> dropout -> classifier (no dropout before the pooler's dense layer)."""
    from pretrain.model import ModelConfig, XLMRModel

    model = XLMRModel(ModelConfig(vocab_size=50, layers=1, hidden=16, heads=2, ffn=32, dropout=0.5, family=family))
    head = model.register_classification_head("topic", 3).train()
    features = torch.randn(4, 6, 16)
    if family == "bert":
        from transformers.models.bert.modeling_bert import BertPooler

        config = transformers.BertConfig(hidden_size=16, hidden_dropout_prob=0.5)
        pooler, dropout, classifier = BertPooler(config), torch.nn.Dropout(0.5), torch.nn.Linear(16, 3)
        pooler.dense.load_state_dict(head.dense.state_dict())
        classifier.load_state_dict(head.out_proj.state_dict())
        theirs = lambda hidden: classifier(dropout(pooler(hidden)))
    else:
        from transformers.models.xlm_roberta.modeling_xlm_roberta import XLMRobertaClassificationHead

        config = transformers.XLMRobertaConfig(hidden_size=16, hidden_dropout_prob=0.5, num_labels=3)
        theirs = XLMRobertaClassificationHead(config).train()
        theirs.load_state_dict(head.state_dict())
    torch.manual_seed(0)
    ours = head(features)
    torch.manual_seed(0)
    assert torch.equal(ours, theirs(features))
