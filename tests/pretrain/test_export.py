import json
import os

import pytest
import torch
from safetensors.torch import load_file

from pretrain.cli import main
from pretrain.export import load_hf
from pretrain.hub import from_pretrained
from pretrain.model import XLMRModel
from tests.pretrain.conftest import run_train
from tests.tokenizer.conftest import SCRIPTS

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("hf") / "model"
    assert main(["export-hf", trained_run, str(out)]) == 0
    return str(out)


def test_export_loads_in_transformers_with_the_same_logits(trained_run, exported):
    assert {"config.json", "model.safetensors", "tokenizer.json", "sentencepiece.bpe.model"} <= set(
        os.listdir(exported)
    )
    hf, info = transformers.XLMRobertaForMaskedLM.from_pretrained(exported, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    hub = from_pretrained(trained_run)
    rows = [hub.encode(SCRIPTS["Latin"]), hub.encode(SCRIPTS["Greek"], SCRIPTS["Hebrew"])]
    tokens = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=1)
    with torch.no_grad():
        ours = hub.model(tokens)
        theirs = hf.eval()(input_ids=tokens, attention_mask=tokens.ne(1).long()).logits
    real = tokens.ne(1)
    assert (ours[real] - theirs[real]).abs().max().item() < 1e-4
    assert ours.abs().max() > 1  # not trivially equal
    reloaded = from_pretrained(exported)  # the hub reads the exported folder too
    assert torch.allclose(reloaded.extract_features(rows[0]), hub.extract_features(rows[0]), atol=1e-5)


def test_exported_tokenizer_gives_the_same_ids(trained_run, exported):
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    hub = from_pretrained(trained_run)
    for text in list(SCRIPTS.values()) + ["  two  spaces  ", "ﬁ Ｆｕｌｌ ①"]:
        assert tokenizer(text)["input_ids"] == hub.encode(text).tolist()
    assert (
        tokenizer(SCRIPTS["Latin"], SCRIPTS["Greek"])["input_ids"]
        == hub.encode(SCRIPTS["Latin"], SCRIPTS["Greek"]).tolist()
    )
    assert tokenizer.mask_token_id == hub.tokenizer.mask and len(tokenizer) == hub.tokenizer.vocab_size


def hf_model_of(trained_run, tmp_path):
    """An XLM-R checkpoint written by transformers itself (random weights), with the run's tokenizer files."""
    config = json.load(open(os.path.join(trained_run, "config.json")))["model"]
    hf_config = transformers.XLMRobertaConfig(
        vocab_size=config["vocab_size"],
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=514,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=1,
    )
    torch.manual_seed(1)
    model = transformers.XLMRobertaForMaskedLM(hf_config)
    with torch.no_grad():  # make every weight matter, the token-type embedding included
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)
    out = tmp_path / "hf-xlmr"
    model.save_pretrained(out)
    return model.eval(), str(out)


def test_an_hf_checkpoint_loads_with_the_same_logits(trained_run, tmp_path):
    hf, path = hf_model_of(trained_run, tmp_path)
    config, state = load_hf(path)
    ours = XLMRModel(config)
    ours.load_state_dict(state)
    tokens = torch.tensor([[0, 50, 60, 70, 2, 1, 1], [0, 80, 90, 100, 110, 120, 2]])
    with torch.no_grad():
        diff = (ours.eval()(tokens) - hf(input_ids=tokens, attention_mask=tokens.ne(1).long()).logits)[tokens.ne(1)]
    assert diff.abs().max().item() < 1e-4


def test_training_can_start_from_an_hf_checkpoint(trained_run, data_dir, tmp_path):
    hf, path = hf_model_of(trained_run, tmp_path)
    run_dir = tmp_path / "continued"
    assert (
        run_train(data_dir, run_dir, "--init-from-hf", path, "--max-steps", "1", "--lr", "0", "--eval-blocks", "0") == 0
    )
    _, expected = load_hf(path)
    trained = load_file(run_dir / "checkpoints" / "step_00000001" / "model.safetensors")
    assert all(torch.equal(trained[name], expected[name]) for name in expected)  # lr 0: the HF weights, unchanged
    assert json.load(open(run_dir / "config.json"))["model"]["hidden"] == 64
    assert (
        run_train(data_dir, run_dir, "--resume", "--max-steps", "2", "--lr", "0", "--eval-blocks", "0") == 0
    )  # HF folder not needed again
    assert os.path.exists(run_dir / "checkpoints" / "step_00000002" / "model.safetensors")
    assert json.load(open(run_dir / "config.json"))["init_from_hf"] == path


def test_init_from_hf_with_another_vocabulary_is_refused(trained_run, data_dir, tmp_path, capsys):
    hf, path = hf_model_of(trained_run, tmp_path)
    config = json.load(open(os.path.join(path, "config.json")))
    json.dump({**config, "vocab_size": config["vocab_size"] + 1}, open(os.path.join(path, "config.json"), "w"))
    assert run_train(data_dir, tmp_path / "bad", "--init-from-hf", path, "--max-steps", "1") == 2
    assert "vocabulary" in capsys.readouterr().err
