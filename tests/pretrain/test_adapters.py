"""MAD-X adapters: the bottleneck and invertible blocks as AdapterHub places them, stacks, adapter
training with everything else frozen, and the AdapterHub folder layout."""

import json
import os

import pytest
import torch
from safetensors.torch import load_file

from pretrain import adapter_files, checkpoint
from pretrain.adapter_files import load_adapter, read_adapter, save_adapter
from pretrain.adapters import AdapterConfig, NICECoupling, adapter_config
from pretrain.cli import main
from pretrain.model import XLMRModel, model_config
from pretrain.optim import make_optimizer
from pretrain.run_dir import RunDir
from pretrain.run_record import TrainConfig
from tests.pretrain.test_train import fixed_batch, step_on

VOCAB = 300
# adapters 1.3.0: SeqBnInvConfig(reduction_factor=2, leave_out=[1]).to_dict(), all 33 BnConfig fields.
SEQ_BN_INV_FROM_THE_LIBRARY = {
    "mh_adapter": False, "output_adapter": True, "reduction_factor": 2, "non_linearity": "relu",
    "original_ln_before": True, "original_ln_after": True, "ln_before": False, "ln_after": False,
    "init_weights": "bert", "init_weights_seed": None, "is_parallel": False, "scaling": 1.0, "use_gating": False,
    "residual_before_ln": True, "adapter_residual_before_ln": False, "inv_adapter": "nice",
    "inv_adapter_reduction_factor": 2, "cross_adapter": False, "leave_out": [1], "dropout": 0.0,
    "phm_layer": False, "phm_dim": 4, "factorized_phm_W": True, "shared_W_phm": False, "shared_phm_rule": True,
    "factorized_phm_rule": False, "phm_c_init": "normal", "phm_init_range": 0.0001, "learn_phm": True,
    "hypercomplex_nonlinearity": "glorot-uniform", "phm_rank": 1, "phm_bias": True, "stochastic_depth": 0.0,
}  # fmt: skip


def tiny_model(seed=0, **overrides):
    torch.manual_seed(seed)
    return XLMRModel(model_config("tiny", VOCAB, dropout=0.0, attention_dropout=0.0, **overrides)).eval()


def tokens(rows=3, length=12):
    ids = torch.randint(4, VOCAB - 1, (rows, length), generator=torch.Generator().manual_seed(3))
    ids[:, 0], ids[:, -1] = 0, 2
    ids[2, 8:] = 1  # padding
    return ids


def randomize(model, name, std=0.2):
    """Weights far from the zero-ish initialization, so that an adapter visibly acts."""
    with torch.no_grad():
        for tensor in model.adapter_weights(name).values():
            tensor.normal_(std=std)


def test_an_adapter_with_zero_up_projections_leaves_the_model_as_it_was():
    model, ids = tiny_model(), tokens()
    base_hidden, base_logits = model.features(ids)[-1], model(ids)
    model.add_adapter("sw", adapter_config("language"))
    randomize(model, "sw")
    model.set_active_adapters("sw")
    assert not torch.allclose(model.features(ids)[-1], base_hidden, atol=1e-3)
    with torch.no_grad():
        for layer in model.layers:
            layer.output_adapters["sw"].adapter_up.weight.zero_()
            layer.output_adapters["sw"].adapter_up.bias.zero_()
        invertible = model.invertible_adapters["sw"]
        for subnet in (invertible.F, invertible.G):
            subnet[2].weight.zero_()
            subnet[2].bias.zero_()
    torch.testing.assert_close(model.features(ids)[-1], base_hidden, rtol=0, atol=0)
    torch.testing.assert_close(model(ids), base_logits, rtol=0, atol=0)
    model.set_active_adapters()  # and no active adapter is the bare encoder, whatever it holds
    randomize(model, "sw")
    torch.testing.assert_close(model(ids), base_logits, rtol=0, atol=0)


def test_the_invertible_block_inverts_and_the_lm_head_undoes_it():
    block = NICECoupling(128, AdapterConfig(invertible=True))
    with torch.no_grad():
        for parameter in block.parameters():
            parameter.normal_(std=0.3)
    x = torch.randn(4, 9, 128)
    y = block(x)
    assert (y - x).abs().max() > 0.1
    assert (block(y, inverse=True) - x).abs().max() <= 1e-5
    # Shapes as AdapterHub builds them for hidden 128 and factor 2: F, G: 64 -> 32 -> 64.
    assert block.F[0].weight.shape == (32, 64) and block.F[2].weight.shape == (64, 32)
    model = tiny_model()
    model.add_adapter("sw", adapter_config("language"))
    randomize(model, "sw")
    model.set_active_adapters("sw")
    hidden, inverse = torch.randn(2, 5, 128), model.invertible_adapters["sw"]
    head = model.head_norm(torch.nn.functional.gelu(model.head_dense(hidden)))
    expected = torch.nn.functional.linear(inverse(head, inverse=True), model.embed_tokens.weight, model.head_bias)
    torch.testing.assert_close(model.lm_logits(hidden), expected)


def test_the_adapter_reads_the_layers_own_layer_norm_and_stacks_in_order():
    model = tiny_model()
    for name, factor in (("lang", 2.0), ("task", 16.0)):
        model.add_adapter(name, AdapterConfig(reduction_factor=factor))
        randomize(model, name)
    layer, x = model.layers[0], torch.randn(2, 5, 128)
    attended = layer.attention_norm(x + layer.attention(x, None))
    h = layer.fc2(torch.nn.functional.gelu(layer.fc1(attended)))
    lang, task = layer.output_adapters["lang"], layer.output_adapters["task"]
    assert lang.adapter_up.weight.shape == (128, 64) and task.adapter_up.weight.shape == (128, 8)
    after_lang = lang.adapter_up(torch.relu(lang.adapter_down[0](layer.ffn_norm(h + attended)))) + h
    after_task = task.adapter_up(torch.relu(task.adapter_down[0](layer.ffn_norm(after_lang + attended)))) + after_lang
    expected = layer.ffn_norm(after_task + attended)
    torch.testing.assert_close(layer(x, None, ("lang", "task")), expected)
    assert not torch.allclose(layer(x, None, ("task", "lang")), expected, atol=1e-3)
    # Only the stack's first adapter brings its invertible block, as in AdapterHub.
    model.add_adapter("inv", adapter_config("language"))
    randomize(model, "inv")
    ids = tokens()
    model.set_active_adapters("lang", "inv")
    with_second = model(ids)
    model.invertible_adapters.pop("inv")
    torch.testing.assert_close(model(ids), with_second)


def test_training_an_adapter_changes_its_parameters_only():
    model = tiny_model()
    model.add_adapter("sw", adapter_config("language"))
    trained = model.train_only_adapter("sw")
    model.set_active_adapters("sw")
    model.train()
    optimizer = make_optimizer(model, TrainConfig())
    assert sum(len(group["params"]) for group in optimizer.param_groups) == len(trained) == 2 * 4 + 8
    for group in optimizer.param_groups:
        group["lr"] = 1e-2
    before = {key: tensor.clone() for key, tensor in model.state_dict().items()}
    for _ in range(3):
        step_on(model, optimizer, [fixed_batch()])
    adapter_keys = set(model.adapter_weights("sw"))
    for key, tensor in model.state_dict().items():
        if key in adapter_keys:
            assert not torch.equal(tensor, before[key]), key
        else:
            assert torch.equal(tensor, before[key]), key


def test_the_adapterhub_folder_has_the_librarys_layout_and_round_trips(tmp_path):
    model, ids = tiny_model(), tokens()
    model.add_adapter("sw", adapter_config("language", {"leave_out": [1]}))
    randomize(model, "sw")
    model.set_active_adapters("sw")
    expected = model(ids)
    save_adapter(model, "sw", str(tmp_path / "sw"))
    assert sorted(os.listdir(tmp_path / "sw")) == ["adapter.safetensors", "adapter_config.json", "pytorch_adapter.bin"]
    saved = json.loads((tmp_path / "sw" / "adapter_config.json").read_text())
    assert saved["name"] == "sw" and saved["model_type"] == "xlm-roberta" and saved["hidden_size"] == 128
    assert saved["version"] == "adapters.1.3.0"
    assert saved["config"] == SEQ_BN_INV_FROM_THE_LIBRARY
    keys = sorted(load_file(tmp_path / "sw" / "adapter.safetensors"))
    assert keys == sorted(torch.load(tmp_path / "sw" / "pytorch_adapter.bin", weights_only=True))
    assert keys == [
        "roberta.encoder.layer.0.output.adapters.sw.adapter_down.0.bias",
        "roberta.encoder.layer.0.output.adapters.sw.adapter_down.0.weight",
        "roberta.encoder.layer.0.output.adapters.sw.adapter_up.bias",
        "roberta.encoder.layer.0.output.adapters.sw.adapter_up.weight",
        *(
            f"roberta.invertible_adapters.sw.{subnet}.{index}.{kind}"
            for subnet in "FG"
            for index in (0, 2)
            for kind in ("bias", "weight")
        ),
    ]
    fresh = tiny_model()
    assert load_adapter(fresh, str(tmp_path / "sw"), "swahili") == "swahili"
    fresh.set_active_adapters("swahili")
    torch.testing.assert_close(fresh(ids), expected, rtol=0, atol=0)


def test_an_adapter_for_another_model_or_architecture_is_refused(tmp_path):
    model = tiny_model()
    model.add_adapter("sw", adapter_config("task"))
    save_adapter(model, "sw", str(tmp_path / "sw"))
    with pytest.raises(ValueError, match="another model: vocab_size 300 .this model: 400"):
        load_adapter(XLMRModel(model_config("tiny", 400)), str(tmp_path / "sw"))
    with pytest.raises(ValueError, match="hidden_size 128 .this model: 64"):
        load_adapter(XLMRModel(model_config("tiny", VOCAB, hidden=64)), str(tmp_path / "sw"))
    with pytest.raises(ValueError, match="num_hidden_layers 2 .this model: 3"):
        load_adapter(XLMRModel(model_config("tiny", VOCAB, layers=3)), str(tmp_path / "sw"))
    config = json.loads((tmp_path / "sw" / "adapter_config.json").read_text())
    config["config"]["mh_adapter"] = True  # Houlsby's double adapter: not what this model computes
    (tmp_path / "sw" / "adapter_config.json").write_text(json.dumps(config))
    fresh = tiny_model()
    with pytest.raises(ValueError, match="unsupported adapter config: mh_adapter=True"):
        load_adapter(fresh, str(tmp_path / "sw"))
    assert fresh.adapter_configs == {}


def test_an_adapterhub_file_without_our_extra_keys_and_with_legacy_names_loads(tmp_path):
    model, ids = tiny_model(), tokens()
    model.add_adapter("de", adapter_config("language"))
    randomize(model, "de")
    model.set_active_adapters("de")
    expected = model(ids)
    save_adapter(model, "de", str(tmp_path / "de"))
    saved, weights = read_adapter(str(tmp_path / "de"))
    for key in ("num_hidden_layers", "vocab_size"):
        del saved[key]
    (tmp_path / "de" / "adapter_config.json").write_text(json.dumps(saved))
    legacy = {
        key.replace("roberta.", "")
        .replace("output.adapters", "output.layer_text_lang_adapters")
        .replace("invertible_adapters", "invertible_lang_adapters"): tensor
        for key, tensor in weights.items()
    }
    os.remove(tmp_path / "de" / adapter_files.SAFE_WEIGHTS_NAME)
    torch.save(legacy, tmp_path / "de" / adapter_files.WEIGHTS_NAME)
    fresh = tiny_model()
    load_adapter(fresh, str(tmp_path / "de"))
    fresh.set_active_adapters("de")
    torch.testing.assert_close(fresh(ids), expected, rtol=0, atol=0)


def run_train_adapter(trained_run, data_dir, out, *flags):
    argv = ["train-adapter", "--init", trained_run, "--data", data_dir, "--language", "el", "--out", str(out)]
    common = ["--batch-size", "8", "--log-interval", "5", "--eval-interval", "10", "--save-interval", "10"]
    return main(
        [*argv, *common, "--eval-blocks", "4", "--total-steps", "20", "--warmup-steps", "2", "--lr", "5e-3", *flags]
    )


def test_train_adapter_saves_only_the_adapter_and_resumes_exactly(trained_run, data_dir, tmp_path, capsys):
    assert run_train_adapter(trained_run, data_dir, tmp_path / "full") == 0
    printed = capsys.readouterr().out
    assert "languages el" in printed and "trained" in printed
    ckpt = RunDir(str(tmp_path / "full")).latest()
    weights = load_file(os.path.join(ckpt, checkpoint.MODEL_FILE))
    assert weights and all(
        ".output_adapters.el." in key or key.startswith("invertible_adapters.el.") for key in weights
    )
    optimizer = torch.load(os.path.join(ckpt, checkpoint.OPTIMIZER_FILE), weights_only=True)
    assert len(optimizer["state"]) == len(weights)
    losses = [
        float(line.split("loss")[1].split("|")[0])
        for line in printed.splitlines()
        if line.startswith("step") and "ppl" in line
    ]
    assert losses[-1] < losses[0]
    saved = json.loads((tmp_path / "full" / "adapter" / "adapter_config.json").read_text())
    assert saved["name"] == "el" and saved["language"] == "el"

    assert run_train_adapter(trained_run, data_dir, tmp_path / "cut", "--max-steps", "10") == 0
    assert run_train_adapter(trained_run, data_dir, tmp_path / "cut", "--resume") == 0
    full = load_file(tmp_path / "full" / "adapter" / "adapter.safetensors")
    resumed = load_file(tmp_path / "cut" / "adapter" / "adapter.safetensors")
    assert full.keys() == resumed.keys()
    for key in full:
        assert torch.equal(full[key], resumed[key]), key


def test_train_adapter_needs_a_language_the_data_has(trained_run, data_dir, tmp_path, capsys):
    argv = ["train-adapter", "--init", trained_run, "--data", data_dir, "--language", "sw", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "has no blocks of sw (it has el, en, ru)" in capsys.readouterr().err


@pytest.fixture(scope="module")
def language_adapters(trained_run, data_dir, tmp_path_factory):
    """Adapter runs for el and ru, 20 steps each, on the trained run."""
    root = tmp_path_factory.mktemp("language-adapters")
    for language in ("el", "ru"):
        argv = ["--language", language, "--out", str(root / language)]
        assert run_train_adapter(trained_run, data_dir, root / "unused", *argv) == 0
    return {language: str(root / language) for language in ("el", "ru")}


def finetune_with_adapter(trained_run, task, out, adapter, *flags):
    argv = ["finetune", "--init", trained_run, "--train", task["train"], "--dev", task["dev"], "--test", task["test"]]
    return main([*argv, "--out", str(out), "--adapter", adapter, "--epochs", "4", "--lr", "5e-3", *flags])


@pytest.mark.slow
def test_a_task_adapter_trains_on_a_fixed_language_adapter_and_learns(trained_run, task, language_adapters, tmp_path):
    assert finetune_with_adapter(trained_run, task, tmp_path / "ft", language_adapters["el"]) == 0
    results = json.loads((tmp_path / "ft" / "results.json").read_text())
    assert results["test"][task["test"]]["accuracy"] >= 0.6  # the majority class: 0.4
    best = load_file(tmp_path / "ft" / "best" / checkpoint.MODEL_FILE)
    assert best and all(".output_adapters.task." in key or key.startswith("classification_heads.") for key in best)
    assert (
        json.loads((tmp_path / "ft" / "task_adapter" / "adapter_config.json").read_text())["config"]["reduction_factor"]
        == 16.0
    )
    assert not (tmp_path / "ft" / "hf").exists()
    # Cut and resumed: the same best weights, bit for bit.
    assert finetune_with_adapter(trained_run, task, tmp_path / "cut", language_adapters["el"], "--max-steps", "20") == 0
    assert main(["finetune", "--init", trained_run, "--train", task["train"], "--dev", task["dev"], "--test", task["test"],
                 "--out", str(tmp_path / "cut"), "--epochs", "4", "--lr", "5e-3", "--resume"]) == 0  # fmt: skip
    resumed = load_file(tmp_path / "cut" / "best" / checkpoint.MODEL_FILE)
    assert best.keys() == resumed.keys() and all(torch.equal(best[key], resumed[key]) for key in best)


@pytest.mark.slow
def test_evaluate_swaps_the_language_adapter_per_test_set(trained_run, task, language_adapters, tmp_path, capsys):
    assert finetune_with_adapter(trained_run, task, tmp_path / "ft", language_adapters["el"]) == 0
    results = json.loads((tmp_path / "ft" / "results.json").read_text())
    capsys.readouterr()
    argv = ["evaluate", "classify", "--model", str(tmp_path / "ft"), "--out", str(tmp_path / "eval")]
    tests = ["--test", f"same={task['test']}", "--test", f"swapped={task['test']}"]
    assert main([*argv, *tests, "--language-adapter", f"swapped={language_adapters['ru']}"]) == 0
    scores = dict(line.split(",")[:2] for line in (tmp_path / "eval" / "scores.csv").read_text().splitlines()[1:])
    assert float(scores["same"]) == pytest.approx(results["test"][task["test"]]["accuracy"], abs=1e-4)
    from pretrain.finetune import FinetuneConfig, evaluate, load_classifier
    from pretrain.tasks import encode_rows, read_examples

    hub = load_classifier(str(tmp_path / "ft"))
    ids = hub.encode("αβγ δεζ")[None]
    trained = hub.model.classify(ids, "classifier")
    load_adapter(hub.model, os.path.join(language_adapters["ru"], "adapter"), "other")
    hub.model.set_active_adapters("other", "task")
    assert not torch.allclose(hub.model.classify(ids, "classifier"), trained)  # the swap changes what is computed
    config = FinetuneConfig()
    examples = read_examples(task["test"], config)
    rows = encode_rows(
        hub.tokenizer, examples, results["labels"], config.task, min(config.max_length, hub.model.config.max_tokens)
    )
    _, swapped = evaluate(hub.model, examples, rows, results["labels"], config, "cpu")
    assert float(scores["swapped"]) == pytest.approx(swapped, abs=1e-4)
    assert main([*argv, *tests, "--language-adapter", "nowhere=x"]) == 2
    assert "--language-adapter nowhere: no --test of that name" in capsys.readouterr().err
