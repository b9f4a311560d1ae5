"""Helpers shared by the benchmarks."""
from filters import normalize, quality


def drop_lookup_tables() -> None:
    """Forget the lookup tables the stages build once per process, so that a measurement pays
    for them as a fresh worker process would."""
    for table in (normalize._dedup_table, normalize._strict_dedup_table, normalize._lm_table, normalize._lm_lookup, normalize._lm_expanding, quality._char_classes):
        table.cache_clear()
