"""Train the shared SentencePiece vocabulary on text drawn by the language sampler, so that
low-resource languages get their share of the pieces (XLM-R: one 250k unigram vocabulary)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass, field
from typing import Optional, Tuple

import sentencepiece

from filters.train_lm import train_sentencepiece
from sampling import MixtureConfig, MultilingualSampler
from tokenizer.xlmr import SP_BOS, SP_EOS, SP_UNK, piece_counts, write_fairseq_dict
from toolkit import storage

MODEL_FILE, DICT_FILE, CONFIG_FILE = "sentencepiece.model", "dict.txt", "tokenizer.json"


@dataclass(frozen=True)
class TokenizerConfig:
    vocab_size: int = 250_000  # SentencePiece pieces (XLM-R's); a soft limit when the text is small
    character_coverage: float = 0.9995  # characters covered by pieces; the rarest go to <unk>
    sample_documents: int = 1_000_000  # documents the sampler draws (at most as many as the corpus holds)
    input_sentence_size: int = (
        2_000_000  # lines SentencePiece loads, shuffled: ~3.5 GB RAM per million lines of ~130 chars
    )
    sampling: MixtureConfig = field(default_factory=MixtureConfig)  # how the sampler mixes languages
    seed: int = 0  # sampler and SentencePiece seed
    buckets: Optional[Tuple[str, ...]] = None  # corpus buckets to draw from, a comma list (default: all)

    def __post_init__(self):
        if self.vocab_size < 16 or self.sample_documents < 1 or self.input_sentence_size < 1:
            raise ValueError("vocab_size >= 16, sample_documents >= 1 and input_sentence_size >= 1 are required")
        if not 0 < self.character_coverage <= 1:
            raise ValueError(f"character_coverage must be in (0, 1], got {self.character_coverage}")


def train_tokenizer(corpus_dir: str, out_dir: str, config: TokenizerConfig = TokenizerConfig()) -> dict:
    """Write ``out_dir/sentencepiece.model``, fairseq's ``dict.txt`` and ``tokenizer.json``."""
    sampler = MultilingualSampler(corpus_dir, config.sampling, seed=config.seed, buckets=config.buckets)
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".train-") as work:
        text = os.path.join(work, "text.txt")
        languages: dict = {}
        with open(text, "w", encoding="utf-8") as out:
            for _ in range(min(config.sample_documents, sampler.documents)):
                doc = next(sampler)
                languages[doc["language"]] = languages.get(doc["language"], 0) + 1
                out.write(doc["raw_content"] + "\n")
        sentencepiece.set_random_generator_seed(config.seed)
        with open(text, encoding="utf-8") as lines:
            trained = train_sentencepiece(
                lines,
                model_type="unigram",
                vocab_size=config.vocab_size,
                hard_vocab_limit=False,
                character_coverage=config.character_coverage,
                input_sentence_size=config.input_sentence_size,
                shuffle_input_sentence=True,
                unk_id=SP_UNK,
                bos_id=SP_BOS,
                eos_id=SP_EOS,
                pad_id=-1,
            )
        model = os.path.join(out_dir, MODEL_FILE)
        storage.write_bytes(model, trained)
        with open(text, encoding="utf-8") as handle:
            counts = piece_counts(model, (line.rstrip("\n") for line in handle))
    write_fairseq_dict(model, os.path.join(out_dir, DICT_FILE), counts)
    summary = {
        "config": dataclasses.asdict(config),
        "corpus": corpus_dir,
        "pieces": sentencepiece.SentencePieceProcessor(model_file=model).get_piece_size(),
        "documents_per_language": dict(sorted(languages.items())),
    }
    storage.write_json(os.path.join(out_dir, CONFIG_FILE), summary)
    return summary
