"""Language identification: fastText LID models, their labels mapped onto XLM-R's languages (``toolkit.languages``).
No Beam here; the pipeline wraps ``LanguageIdentifier``."""

from lid.languages import map_label
from lid.model import LanguageIdentifier, LidConfig, default_model_path
from toolkit.languages import XLMR_CODES, XLMR_LANGUAGES, parse_languages

__all__ = [
    "XLMR_CODES",
    "XLMR_LANGUAGES",
    "LanguageIdentifier",
    "LidConfig",
    "default_model_path",
    "map_label",
    "parse_languages",
]
