"""Fine-tuning heads: shapes, fairseq's hub API, and Hugging Face's classifiers with equal logits."""

import pytest
import torch

from pretrain.export import HF_HEAD_NAME, export_hf
from pretrain.hub import from_pretrained, load_run
from pretrain.model import XLMRModel, model_config
from tests.tokenizer.conftest import SCRIPTS

transformers = pytest.importorskip("transformers")

LABELS = ["science/technology", "travel", "politics", "sports", "health", "entertainment", "geography"]


def test_head_shapes_and_registration():
    model = XLMRModel(model_config("tiny", vocab_size=300)).eval()
    tokens = torch.tensor([[0, 5, 6, 7, 2], [0, 8, 2, 1, 1]])
    model.register_classification_head("topic", 7)
    model.register_classification_head("ner", 9, kind="tokens")
    assert model.classify(tokens, "topic").shape == (2, 7)
    assert model.classify(tokens, "ner").shape == (2, 5, 9)
    assert model.register_classification_head("topic", 7) is model.classification_heads["topic"]
    with pytest.raises(ValueError, match="exists with 7 classes"):
        model.register_classification_head("topic", 3)
    with pytest.raises(ValueError, match="head kind"):
        model.register_classification_head("x", 2, kind="spans")
    with pytest.raises(KeyError, match="no classification head 'nli'"):
        model.classify(tokens, "nli")
    # The sentence head reads <s> only: what follows it changes the features, not the head's input row.
    head = model.classification_heads["topic"]
    hidden = torch.randn(2, 5, 128)
    changed = hidden.clone()
    changed[:, 1:] = 0
    assert torch.equal(head(hidden), head(changed))


def randomized(hub, name, classes, kind):
    hub.register_classification_head(name, classes, kind)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in hub.model.classification_heads[name].parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))  # not the zero biases of init


def batch(hub):
    rows = [hub.encode(SCRIPTS["Latin"], SCRIPTS["Greek"]), hub.encode(SCRIPTS["Hebrew"])]
    return torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=1)


@pytest.mark.parametrize(
    "kind, hf_class",
    [("sentence", "XLMRobertaForSequenceClassification"), ("tokens", "XLMRobertaForTokenClassification")],
)
def test_a_head_exports_to_hf_with_the_same_logits_and_comes_back(trained_run, tmp_path, kind, hf_class):
    hub = from_pretrained(trained_run)
    randomized(hub, "topic", len(LABELS), kind)
    _, _, sentencepiece_model = load_run(trained_run)
    out = str(tmp_path / "hf")
    export_hf(hub.model.state_dict(), hub.model.config, sentencepiece_model, out, ("topic", kind), LABELS)

    hf, info = getattr(transformers, hf_class).from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert hf.config.id2label == dict(enumerate(LABELS)) and hf.config.label2id["travel"] == 1
    tokens = batch(hub)
    ours = hub.predict("topic", tokens, return_logits=True)
    with torch.no_grad():
        theirs = hf.eval()(input_ids=tokens, attention_mask=tokens.ne(1).long()).logits
    real = tokens.ne(1) if kind == "tokens" else slice(None)
    assert (ours[real] - theirs[real]).abs().max().item() < 1e-4
    assert ours.abs().max() > 1  # not trivially equal

    back = from_pretrained(out)  # an HF classifier folder: its head comes in as "classifier"
    assert torch.allclose(back.predict(HF_HEAD_NAME, tokens, return_logits=True)[real], ours[real], atol=1e-5)


def test_predict_gives_log_probabilities(trained_run):
    hub = from_pretrained(trained_run)
    randomized(hub, "pair", 3, "sentence")
    log_probs = hub.predict("pair", hub.encode("a question", "a standard question"))
    assert log_probs.shape == (1, 3)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(1))
    logits = hub.predict("pair", hub.encode("a question", "a standard question"), return_logits=True)
    assert torch.allclose(log_probs, torch.log_softmax(logits, -1))


def test_export_needs_one_label_per_class(trained_run, tmp_path):
    hub = from_pretrained(trained_run)
    hub.register_classification_head("topic", 3)
    _, _, sentencepiece_model = load_run(trained_run)
    with pytest.raises(ValueError, match="head 'topic' has 3 classes, got 2 labels"):
        export_hf(
            hub.model.state_dict(),
            hub.model.config,
            sentencepiece_model,
            str(tmp_path / "x"),
            ("topic", "sentence"),
            ["a", "b"],
        )
