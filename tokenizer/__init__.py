"""SentencePiece tokenizer with fairseq's XLM-R ids (``XLMRTokenizer``) and its training on text
drawn by the language sampler (``train_tokenizer``). No Beam. Packing into training blocks is
not built yet."""
from tokenizer.train import TokenizerConfig, train_tokenizer
from tokenizer.xlmr import XLMRTokenizer

__all__ = ["TokenizerConfig", "XLMRTokenizer", "train_tokenizer"]
