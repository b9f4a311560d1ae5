"""SentencePiece tokenizer with fairseq's XLM-R ids (``XLMRTokenizer``), its training on text
drawn by the language sampler (``train_tokenizer``), and packing into training blocks
(``tokenizer.pack``). No Beam, no torch."""

from tokenizer.train import TokenizerConfig, train_tokenizer
from tokenizer.xlmr import XLMRTokenizer

__all__ = ["TokenizerConfig", "XLMRTokenizer", "train_tokenizer"]
