"""Shared fixtures: the real LID model, reference language models trained here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lid.model import default_model_path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def lid_model() -> str:
    return default_model_path()


@pytest.fixture(autouse=True)
def _hf_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.getbasetemp() / "hf"))


@pytest.fixture(scope="session")
def lm_dir(tmp_path_factory) -> Path:
    """Reference models for en, fr and de trained here (SentencePiece + lmplz + build_binary)
    on generated clean text (the embedded sample's reference text)."""
    from ccnet_pipeline.samples.embedded import generate_reference_text
    from filters.train_lm import TrainLmConfig, train_language_model

    root = tmp_path_factory.mktemp("lm")
    generate_reference_text(str(root / "text"), lines=1500, seed=5)
    for language in ("en", "fr", "de"):
        train_language_model(TrainLmConfig(language, (str(root / "text" / f"{language}.txt"),), str(root / "models")))
    return root / "models"


def pytest_collection_modifyitems(items):
    """Everything under tests/integration/ runs whole jobs: marked slow (``make test-fast`` skips it)."""
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.slow)
