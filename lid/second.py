"""A second identifier for XLM-R languages lid.176 has no label for: Google's CLD3 (PyPI
``cld3-py`` 3.1.0, Apache-2.0, its model inside the wheel, module ``gcld3``).

lid.176 names Hausa, Somali and Xhosa documents as other languages at low scores (SIB-200
train+dev, 5 sentences a document: Hausa as tl/it/en/eo, Somali and Xhosa mostly as en, every
one under 0.25), and Oromo as ``fi``. CLD3 names Hausa, Somali and Xhosa right (419 of 420), but
calls Oromo Somali; Oromo's Latin orthography (Qubee) writes the glottal stop with an apostrophe
where Somali writes ``x`` for the pharyngeal h, so a Somali answer with more apostrophes than
``x``s is Oromo (``is_oromo``: 134 of 140 Oromo and none of 140 Somali documents of SIB-200 train
and dev; on its test split 38 of 40 and none of 40). ``docs/language-id.md`` has the figures.

CLD3 is asked only where lid.176 is unsure (its score under ``CONSULTED_BELOW``), so that a
confident lid.176 answer never changes and most documents cost one model, and only its answers
in ``DECIDED`` are taken. No model on PyPI tells the romanized variants (``hi_rom``...) or Zawgyi
Burmese (``my_zaw``) apart: they stay without a label.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

DECIDED = ("ha", "so", "xh")  # CLD3's answers taken (and Oromo, told from Somali by is_oromo)
COVERED = (*DECIDED, "om")  # the XLM-R languages the second identifier adds
CONSULTED_BELOW = 0.5  # lid.176's score under which CLD3 is asked
MAX_BYTES = 1000  # of a document CLD3 reads (its own default is 512)
_APOSTROPHES = re.compile(r"['’ʼ]")


def is_oromo(text: str) -> bool:
    """A text CLD3 calls Somali is Oromo when it has at least as many apostrophes (Oromo's
    glottal stop) as ``x``s (Somali's pharyngeal h)."""
    return len(_APOSTROPHES.findall(text)) >= text.lower().count("x")


class SecondIdentifier:
    """CLD3, loaded on first use (each worker loads its own)."""

    def __init__(self):
        self._model = None

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

    def __getstate__(self):  # CLD3's model does not pickle: workers load their own
        return {"_model": None}
