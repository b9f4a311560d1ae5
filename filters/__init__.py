"""Pure text filters on documents: the shared document record, CCNet's normalization and
exact line deduplication. No Beam here: the pipeline wraps these functions."""
