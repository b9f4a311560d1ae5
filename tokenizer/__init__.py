"""SentencePiece tokenizer with fairseq-compatible ids and packed token shards. Not built yet: see the issues."""
