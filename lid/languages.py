"""Label mapping for fastText LID models onto XLM-R's 100 languages (``toolkit.languages``).

Five romanized variants (``*_rom``), Burmese in the
Zawgyi encoding (``my_zaw``) and Traditional Chinese (``zh_Hant``) are separate languages in
XLM-R; lid.176 has no label for them (it says ``hi``, ``my``, ``zh`` or guesses another Latin
language), while script-aware models such as GlotLID and OpenLID (``__label__hin_Latn``,
``__label__zho_Hant``) have some. The spaced mode tells ``zh_Hant`` by its characters and
``my_zaw`` with Myanmar Tools (``lid.cld3_zawgyi``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from lid.cld3_zawgyi import COVERED as SECOND_COVERED
from toolkit.languages import XLMR_CODES, XLMR_LANGUAGES


def _label_tables() -> Tuple[Dict[Tuple[str, str], str], Dict[str, str]]:
    """(ISO 639-1 or 639-3, script) -> XLM-R code, and ISO 639-1 or 639-3 -> XLM-R code (its
    first row)."""
    by_iso_and_script: Dict[Tuple[str, str], str] = {}
    by_iso: Dict[str, str] = {}
    for lang in XLMR_LANGUAGES:
        for iso in [lang.code.split("_")[0], *lang.iso639_3.split("|"), *filter(None, lang.varieties.split("|"))]:
            for script in lang.script.split("|"):
                # The first row wins, so my_zaw never shadows my, nor zh_Hant zh for a bare "zho".
                by_iso_and_script.setdefault((iso, script), lang.code)
            by_iso.setdefault(iso, lang.code)
    return by_iso_and_script, by_iso


_BY_ISO_AND_SCRIPT, _BY_ISO = _label_tables()
_SCRIPT_SUBTAG = re.compile(r"^[A-Za-z]{4}$")  # ISO 15924, as in zho_Hant or sr-Latn


def map_label(label: str) -> str:
    """An XLM-R code for a fastText label, or the bare label when XLM-R has no such language.

    ``__label__fr`` (lid.176, ISO 639-1) -> ``fr``; ``__label__ceb`` -> ``ceb`` (lid.176's
    three-letter labels stay: its ``als`` is Alemannic, not ISO 639-3's Tosk Albanian);
    ``__label__hin_Latn`` (GlotLID/OpenLID, ISO 639-3 + script) -> ``hi_rom``;
    ``__label__zho_Hant`` -> ``zh_Hant``; ``__label__arb_Arab`` -> ``ar``; ``__label__arb_Latn``
    -> ``arb_Latn`` (romanized Arabic is not XLM-R's ``ar``).
    """
    return _map(label.removeprefix("__label__"), by_iso_alone=False)


def map_code(code: str) -> str:
    """An XLM-R code for a dataset's language code, or the code itself: ISO 639-1 or 639-3,
    alone or with a script or region as BCP-47 tags and FLORES codes have them (``hin``,
    ``eng_Latn``, ``sr-Latn`` -> ``sr``, ``zh-Hant`` -> ``zh_Hant``, ``pt-BR`` -> ``pt``,
    ``uz-Cyrl`` -> itself: XLM-R's Uzbek is written in Latin script)."""
    return _map(code, by_iso_alone=True)


def _map(label: str, by_iso_alone: bool) -> str:
    if label in XLMR_CODES:
        return label
    iso, *subtags = label.replace("-", "_").split("_")
    scripts = [tag.title() for tag in subtags if _SCRIPT_SUBTAG.match(tag)]
    if not scripts:  # no subtag, or a region only
        return _BY_ISO.get(iso, label) if subtags or by_iso_alone else label
    script = "Hans" if scripts[0] == "Hani" else scripts[0]  # Han without saying which: Simplified's row
    return _BY_ISO_AND_SCRIPT.get((iso, script), label)


# Languages lid.176 confuses, and the rule the pipeline applies to each (``--lid-mode spaced``;
# the ccnet mode applies none, as CCNet). Measured with lid.176.ftz on documents of 5 FLORES-200
# sentences (SIB-200 train+dev, 160 per language; the README's "Language ID" has the table):
#  - ms/id: 73% of Malay documents come out ``id``, with ``ms`` second at 0.24-0.98 of id's
#    probability; Indonesian documents have ``ms`` second at 0.03-0.53 of it. Rule: TWINS,
#    ms when it has at least 0.4 of id's probability (101 Malay documents gained, 4 Indonesian lost;
#    on the held-out SIB-200 test 27 gained, none lost).
#  - af/nl: 20% of Afrikaans documents come out ``nl``, ``af`` second at 0.25-0.98 of nl's;
#    Dutch documents have ``af`` under 0.05 of it. Rule: TWINS at 0.2 (32 gained, none lost; test: 7, none).
#  - bs/hr/sr and lid.176's ``sh`` (Serbo-Croatian): 81% of Bosnian documents come out ``hr``,
#    12% ``sh``, 7% ``sr``, with ``bs`` never second, and Croatian documents look the same. No
#    rule tells them apart from the text, so none is applied: ``hr``'s calibrated threshold stays
#    at the default because of the Bosnian documents above it, ``sh`` is not an XLM-R language.
#  - no/da (and lid.176's ``nn``): 1 of 160 Norwegian Bokmål documents comes out ``da``. No rule.
#  - zh/zh_Hant: lid.176 has one ``zh`` for both scripts. Rule: ``zh`` is ``zh_Hant`` when its
#    Traditional-only characters outnumber its Simplified-only ones (``is_traditional_chinese``:
#    all 701 Traditional and 701 Simplified SIB-200 sentences told apart), and ``yue`` (written
#    Cantonese, outside the 100) when Cantonese's own characters are 1% of it (``han_language``).
#  - my/my_zaw: lid.176 says ``my`` of Burmese in either encoding; Myanmar Tools tells Zawgyi
#    (``lid.cld3_zawgyi``).
#  - the romanized variants (``hi_rom``...): lid.176 has no label for them and no labelled data
#    here has them, so no rule: use a script-aware model (GlotLID's ``hin_Latn``).
class Twin(NamedTuple):
    label: str  # the language a LID model says
    twin: str  # the XLM-R language it says it for
    ratio: float  # the document is the twin's when the twin is the second label with at least this share of the first's probability


TWINS: Tuple[Twin, ...] = (Twin("id", "ms", 0.4), Twin("nl", "af", 0.2))
_TWIN_OF = {twin.label: twin for twin in TWINS}


def _han_variants() -> Tuple[frozenset, frozenset]:
    """CJK ideographs only Simplified (in GB2312, not Big5) and only Traditional (in Big5, not
    GB2312) Chinese writes: the two national character sets tell the scripts apart."""

    def encodes(char: str, codec: str) -> bool:
        try:
            char.encode(codec)
        except UnicodeEncodeError:
            return False
        return True

    simplified, traditional = set(), set()
    for code_point in range(0x4E00, 0xA000):
        char = chr(code_point)
        in_gb, in_big5 = encodes(char, "gb2312"), encodes(char, "big5")
        if in_gb and not in_big5:
            simplified.add(char)
        elif in_big5 and not in_gb:
            traditional.add(char)
    return frozenset(simplified), frozenset(traditional)


_HAN_VARIANTS: List[Tuple[frozenset, frozenset]] = []


def is_traditional_chinese(text: str, characters: Optional[Counter] = None) -> bool:
    """Whether Traditional-only characters outnumber Simplified-only ones in ``text`` (whose
    ``characters`` a caller may have counted already)."""
    if not _HAN_VARIANTS:
        _HAN_VARIANTS.append(_han_variants())
    simplified, traditional = _HAN_VARIANTS[0]
    characters = characters if characters is not None else Counter(text)
    count = lambda chosen: sum(n for char, n in characters.items() if char in chosen)
    return count(traditional) > count(simplified)


# Characters of written colloquial Cantonese that Mandarin text does not use (咪 and 嘞 are left
# out: Mandarin writes 猫咪 and 好嘞). None is in SIB-200's 2,008 Mandarin and 1,004 Cantonese
# sentences (FLORES-200's yue_Hant is Standard Written Chinese, as Hong Kong writes it formally),
# in the reference text's 19,358 Mandarin Tatoeba sentences, or in the CommonCrawl pages of
# ../shared but for the Cantonese lines of a translation template; 57 of UDHR's 60 Cantonese
# paragraphs have them.
CANTONESE = frozenset("嘅咗啲嘢喺哋冇嗰噉乜嚟咩囉佢")
CANTONESE_SHARE = 0.01  # of a text's Han characters from which it is written Cantonese (and 2 at least)


def han_language(text: str) -> str:
    """The language of a text lid.176 calls ``zh``: ``yue`` (lid.176's label of Cantonese) where
    written Cantonese's own characters make ``CANTONESE_SHARE`` of it, else ``zh_Hant`` or ``zh``
    by ``is_traditional_chinese``."""
    characters = Counter(text)  # a page's distinct characters are far fewer than its characters
    cantonese = sum(n for char, n in characters.items() if char in CANTONESE)
    if cantonese >= 2 and cantonese >= CANTONESE_SHARE * sum(
        n for char, n in characters.items() if "\u3400" <= char <= "\u9fff"
    ):
        return "yue"
    return "zh_Hant" if is_traditional_chinese(text, characters) else "zh"


def apply_rules(languages: Sequence[str], probabilities: Sequence[float], text: str) -> Tuple[str, float]:
    """The language and its probability a document gets from a model's top two (XLM-R codes,
    most probable first) under the confusable rules above."""
    language, probability = languages[0], probabilities[0]
    twin = _TWIN_OF.get(language)
    if twin and len(languages) > 1 and languages[1] == twin.twin and probabilities[1] >= twin.ratio * probability:
        return twin.twin, probabilities[1]
    if language == "zh":
        return han_language(text), probability
    return language, probability


def languages_without_label(model_languages: Iterable[str], languages: Iterable[str], rules: bool) -> Tuple[str, ...]:
    """Of ``languages``, those a model whose labels map to ``model_languages`` never gives
    (with the spaced mode's rules, ``zh`` also gives ``zh_Hant``, ``my`` also ``my_zaw``, and
    CLD3 its languages, ``lid.cld3_zawgyi``)."""
    given = set(model_languages)
    if rules:  # zh_Hant by is_traditional_chinese, my_zaw by Myanmar Tools, CLD3's languages
        given.update(variant for language, variant in (("zh", "zh_Hant"), ("my", "my_zaw")) if language in given)
        given.update(SECOND_COVERED)
    return tuple(code for code in languages if code not in given)
