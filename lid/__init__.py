"""Language identification: XLM-R's language table, fastText LID models and label mapping.
No Beam here; the pipeline wraps ``LanguageIdentifier``."""

from lid.languages import XLMR_CODES, XLMR_LANGUAGES, map_label, parse_languages
from lid.model import LanguageIdentifier, LidConfig, default_model_path

__all__ = [
    "XLMR_CODES",
    "XLMR_LANGUAGES",
    "LanguageIdentifier",
    "LidConfig",
    "default_model_path",
    "map_label",
    "parse_languages",
]
