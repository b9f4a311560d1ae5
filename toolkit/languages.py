"""XLM-R's 100 languages (Conneau et al. 2020, table 6): the project's one table of language
codes, those of the CC-100 release, and the rule that reads a ``--langs`` value.

Five romanized variants (``*_rom``), Burmese in the Zawgyi encoding (``my_zaw``) and Traditional
Chinese (``zh_Hant``) are separate languages in XLM-R. How fastText LID labels map to these
codes is ``lid.languages``'s.
"""

from __future__ import annotations

from typing import List, NamedTuple, Tuple


class Language(NamedTuple):
    code: str  # XLM-R / CC-100 code
    name: str
    script: str  # ISO 15924 code(s) of its text in CC-100, "|"-separated
    iso639_3: str  # the ISO 639-3 code(s) script-aware LID models use, "|"-separated
    # Codes (ISO 639-1 or 639-3) of varieties counted as this language, as CC-100 counts what
    # lid.176 calls ar, fa or no: the Arabic dialects FLORES-200 has, Dari, Bokmål and Nynorsk.
    varieties: str = ""


# fmt: off
XLMR_LANGUAGES: Tuple[Language, ...] = tuple(Language(*row) for row in [
    ("af", "Afrikaans", "Latn", "afr"), ("am", "Amharic", "Ethi", "amh"),
    ("ar", "Arabic", "Arab", "ara|arb", "acm|acq|aeb|ajp|apc|ars|ary|arz"), ("as", "Assamese", "Beng", "asm"),
    ("az", "Azerbaijani", "Latn", "aze|azj"), ("be", "Belarusian", "Cyrl", "bel"),
    ("bg", "Bulgarian", "Cyrl", "bul"), ("bn", "Bengali", "Beng", "ben"),
    ("bn_rom", "Bengali (romanized)", "Latn", "ben"), ("br", "Breton", "Latn", "bre"),
    ("bs", "Bosnian", "Latn", "bos"), ("ca", "Catalan", "Latn", "cat"),
    ("cs", "Czech", "Latn", "ces"), ("cy", "Welsh", "Latn", "cym"),
    ("da", "Danish", "Latn", "dan"), ("de", "German", "Latn", "deu"),
    ("el", "Greek", "Grek", "ell"), ("en", "English", "Latn", "eng"),
    ("eo", "Esperanto", "Latn", "epo"), ("es", "Spanish", "Latn", "spa"),
    ("et", "Estonian", "Latn", "est|ekk"), ("eu", "Basque", "Latn", "eus"),
    ("fa", "Persian", "Arab", "fas|pes", "prs"), ("fi", "Finnish", "Latn", "fin"),
    ("fr", "French", "Latn", "fra"), ("fy", "Western Frisian", "Latn", "fry"),
    ("ga", "Irish", "Latn", "gle"), ("gd", "Scottish Gaelic", "Latn", "gla"),
    ("gl", "Galician", "Latn", "glg"), ("gu", "Gujarati", "Gujr", "guj"),
    ("ha", "Hausa", "Latn", "hau"), ("he", "Hebrew", "Hebr", "heb"),
    ("hi", "Hindi", "Deva", "hin"), ("hi_rom", "Hindi (romanized)", "Latn", "hin"),
    ("hr", "Croatian", "Latn", "hrv"), ("hu", "Hungarian", "Latn", "hun"),
    ("hy", "Armenian", "Armn", "hye"), ("id", "Indonesian", "Latn", "ind"),
    ("is", "Icelandic", "Latn", "isl"), ("it", "Italian", "Latn", "ita"),
    ("ja", "Japanese", "Jpan", "jpn"), ("jv", "Javanese", "Latn", "jav"),
    ("ka", "Georgian", "Geor", "kat"), ("kk", "Kazakh", "Cyrl", "kaz"),
    ("km", "Khmer", "Khmr", "khm"), ("kn", "Kannada", "Knda", "kan"),
    ("ko", "Korean", "Hang", "kor"), ("ku", "Kurdish (Kurmanji)", "Latn", "kur|kmr"),
    ("ky", "Kyrgyz", "Cyrl", "kir"), ("la", "Latin", "Latn", "lat"),
    ("lo", "Lao", "Laoo", "lao"), ("lt", "Lithuanian", "Latn", "lit"),
    ("lv", "Latvian", "Latn", "lav|lvs"), ("mg", "Malagasy", "Latn", "mlg|plt"),
    ("mk", "Macedonian", "Cyrl", "mkd"), ("ml", "Malayalam", "Mlym", "mal"),
    ("mn", "Mongolian", "Cyrl", "mon|khk"), ("mr", "Marathi", "Deva", "mar"),
    ("ms", "Malay", "Latn", "msa|zsm", "zlm"), ("my", "Burmese", "Mymr", "mya"),
    ("my_zaw", "Burmese (Zawgyi)", "Mymr", "mya"), ("ne", "Nepali", "Deva", "nep|npi"),
    ("nl", "Dutch", "Latn", "nld"), ("no", "Norwegian", "Latn", "nor|nob", "nb|nn|nno"),
    ("om", "Oromo", "Latn", "orm|gaz"), ("or", "Oriya", "Orya", "ori|ory"),
    ("pa", "Punjabi", "Guru", "pan"), ("pl", "Polish", "Latn", "pol"),
    ("ps", "Pashto", "Arab", "pus|pbt"), ("pt", "Portuguese", "Latn", "por"),
    ("ro", "Romanian", "Latn", "ron"), ("ru", "Russian", "Cyrl", "rus"),
    ("sa", "Sanskrit", "Deva", "san"), ("sd", "Sindhi", "Arab", "snd"),
    ("si", "Sinhala", "Sinh", "sin"), ("sk", "Slovak", "Latn", "slk"),
    ("sl", "Slovenian", "Latn", "slv"), ("so", "Somali", "Latn", "som"),
    ("sq", "Albanian", "Latn", "sqi|als"), ("sr", "Serbian", "Cyrl|Latn", "srp"),
    ("su", "Sundanese", "Latn", "sun"), ("sv", "Swedish", "Latn", "swe"),
    ("sw", "Swahili", "Latn", "swa|swh"), ("ta", "Tamil", "Taml", "tam"),
    ("ta_rom", "Tamil (romanized)", "Latn", "tam"), ("te", "Telugu", "Telu", "tel"),
    ("te_rom", "Telugu (romanized)", "Latn", "tel"), ("th", "Thai", "Thai", "tha"),
    ("tl", "Filipino", "Latn", "tgl|fil"), ("tr", "Turkish", "Latn", "tur"),
    ("ug", "Uyghur", "Arab", "uig"), ("uk", "Ukrainian", "Cyrl", "ukr"),
    ("ur", "Urdu", "Arab", "urd"), ("ur_rom", "Urdu (romanized)", "Latn", "urd"),
    ("uz", "Uzbek", "Latn", "uzb|uzn"), ("vi", "Vietnamese", "Latn", "vie"),
    ("xh", "Xhosa", "Latn", "xho"), ("yi", "Yiddish", "Hebr", "yid|ydd"),
    ("zh", "Chinese (Simplified)", "Hans", "zho|cmn"), ("zh_Hant", "Chinese (Traditional)", "Hant", "zho|cmn"),
])
# fmt: on
assert len(XLMR_LANGUAGES) == 100
XLMR_CODES: Tuple[str, ...] = tuple(lang.code for lang in XLMR_LANGUAGES)
VARIETY_CODES = frozenset(code for lang in XLMR_LANGUAGES for code in lang.varieties.split("|") if code)
ROMANIZED_CODES = tuple(code for code in XLMR_CODES if code.endswith("_rom"))


def parse_languages(spec: str) -> Tuple[str, ...]:
    """``"100"`` -> all of XLM-R's codes; ``"en,fr,sw"`` -> those codes, validated."""
    spec = spec.strip()
    if spec == "100":
        return XLMR_CODES
    codes: List[str] = [code.strip() for code in spec.split(",") if code.strip()]
    if not codes:
        raise ValueError("no language given: use 100 or a comma list such as en,fr,sw")
    unknown = [code for code in codes if code not in XLMR_CODES]
    if unknown:
        raise ValueError(f"unknown language code(s) {', '.join(unknown)}; valid XLM-R codes: {' '.join(XLMR_CODES)}")
    return tuple(dict.fromkeys(codes))
