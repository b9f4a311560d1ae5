"""Second identifiers for XLM-R languages lid.176 has no label for: Google's CLD3 (PyPI
``cld3-py`` 3.1.0, Apache-2.0, its model inside the wheel, module ``gcld3``) for Hausa, Somali,
Xhosa and Oromo, and Google's Myanmar Tools (PyPI ``myanmartools`` 1.2.1, Apache-2.0) for Burmese
in the Zawgyi encoding.

lid.176 names Hausa, Somali and Xhosa documents as other languages at low scores (SIB-200
train+dev, 5 sentences a document: Hausa as tl/it/en/eo, Somali and Xhosa mostly as en, every
one under 0.25), and Oromo as ``fi``. CLD3 names Hausa, Somali and Xhosa right (419 of 420), but
calls Oromo Somali; Oromo's Latin orthography (Qubee) writes the glottal stop with an apostrophe
where Somali writes ``x`` for the pharyngeal h, so a Somali answer with more apostrophes than
``x``s is Oromo (``is_oromo``: 134 of 140 Oromo and none of 140 Somali documents of SIB-200 train
and dev; on its test split 38 of 40 and none of 40). ``docs/language-id.md`` has the figures.

CLD3 is asked only where lid.176 is unsure (its score under ``CONSULTED_BELOW``), so that a
confident lid.176 answer never changes and most documents cost one model, and only its answers
in ``DECIDED`` are taken.

Zawgyi is a font encoding of Burmese that reuses Unicode's Myanmar code points for other
glyphs, and lid.176 calls it ``my`` (every one of 201 SIB-200 documents converted to Zawgyi, at
0.985 or more). Myanmar Tools' detector, asked of every ``my`` document, gives the probability
that it is Zawgyi: at ``ZAWGYI_AT`` it tells all 1,062 SIB-200 and UDHR Burmese texts from
their Zawgyi conversions. No model on PyPI tells the romanized variants (``hi_rom``...) apart:
they stay without a label.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

DECIDED = ("ha", "so", "xh")  # CLD3's answers taken (and Oromo, told from Somali by is_oromo)
COVERED = (*DECIDED, "om")  # the XLM-R languages CLD3 adds (and Myanmar Tools my_zaw, to a model's my)
CONSULTED_BELOW = 0.5  # lid.176's score under which CLD3 is asked
MAX_BYTES = 1000  # of a document CLD3 reads (its own default is 512)
ZAWGYI_AT = 0.5  # Myanmar Tools' probability from which a Burmese document is Zawgyi
_APOSTROPHES = re.compile(r"['’ʼ]")


def is_oromo(text: str) -> bool:
    """A text CLD3 calls Somali is Oromo when it has at least as many apostrophes (Oromo's
    glottal stop) as ``x``s (Somali's pharyngeal h)."""
    return len(_APOSTROPHES.findall(text)) >= text.lower().count("x")


class SecondIdentifier:
    """CLD3 and Myanmar Tools' Zawgyi detector, each loaded on first use (each worker loads its own)."""

    def __init__(self):
        self._model = None
        self._zawgyi = None

    def identify(self, text: str) -> Optional[Tuple[str, float]]:
        """(language, probability) where CLD3 reliably says one of ``DECIDED`` (Somali checked
        for Oromo), else None."""
        if self._model is None:
            import gcld3

            self._model = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=MAX_BYTES)
        result = self._model.FindLanguage(text=text)
        if not result.is_reliable or result.language not in DECIDED:
            return None
        if result.language == "so" and is_oromo(text):
            return "om", float(result.probability)
        return result.language, float(result.probability)

    def is_zawgyi(self, text: str) -> bool:
        """Whether a Burmese text is in the Zawgyi encoding rather than Unicode."""
        if self._zawgyi is None:
            from myanmartools import ZawgyiDetector

            self._zawgyi = ZawgyiDetector()
        return self._zawgyi.get_zawgyi_probability(text) >= ZAWGYI_AT

    def __getstate__(self):  # CLD3's model does not pickle: workers load their own
        return {"_model": None, "_zawgyi": None}
