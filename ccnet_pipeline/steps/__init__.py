"""The mine job's steps, one module each, as ``pipeline.build`` joins them: ``read`` (a segment
into numbered items, for every pass over the input), ``dedup`` (exact line dedup: hash, shuffle,
reread and remove), ``stage`` (any pure stage of ``filters`` or ``lid`` over batches),
``near_dedup`` (MinHash LSH and connected components), ``commit`` (each segment's documents,
quarantine and marker under ``OUT/_work/``), ``cutoffs`` (perplexity percentiles), ``write`` (what
goes into OUT: the shards, cutoffs.csv, stats.json and manifest.json) and ``import_ccnet``; ``batches`` is what travels between them and how they count.
"""
