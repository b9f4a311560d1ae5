"""The contract every document stage of the mine job keeps (as datatrove's ``PipelineStep``):
a name, a lazy ``setup()`` and ``apply(doc) -> (doc, drop reason or None)``.

Stages are plain objects on plain documents, testable without Beam; ``ccnet_pipeline`` runs any
of them with one generic DoFn, on all of a segment's documents at once (``apply_batch``), which
a stage overrides where one call for many documents is faster (fastText predicts them in one
call; each language's models stay in the CPU caches while they score its documents).

A stage owns its counters (``Counted``): it names the drop reasons it can give, so that
``<stage>/dropped/<reason>`` and the quarantine follow from the stages, not from a list kept by
hand, and it adds its own ``<stage>/<event>`` counts for each document the job is done with
(``counts``). Steps of the job that are not document stages (reading, near-dedup) count the
same way.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

from filters.document import Document

Result = Tuple[Document, Optional[str]]  # the document with the stage's fields, its drop reason or None
# What a stage gives for one document: its Result, or a Result per part where it splits the
# document in several (lid.mixed splits a page per language; the parts go on as documents).
Results = Union[Result, List[Result]]
KEPT = "kept"  # the outcome of a document the job keeps (any other outcome is a drop reason)


class Counted:
    """A step of the job that counts: counters are named ``<name>/<event>``."""

    name: str
    reasons: Tuple[str, ...] = ()  # every drop reason the step can give

    @classmethod
    def counts(cls, doc: Document, outcome: str) -> Dict[str, int]:
        """This step's counts (``{event: amount}``) for ``doc``, which the job is done with:
        ``outcome`` is ``KEPT`` or the drop reason that ended it (any step's). They depend on the
        document only, so that import-ccnet counts CCNet's documents as the mine job counts its own."""
        return {}


class Stage(Counted):
    def setup(self) -> None:
        """Load what the stage needs (models), once per worker; calling it again is free."""

    def apply(self, doc: Document) -> Result:
        """The document with this stage's fields set, and the reason to drop it or None."""
        raise NotImplementedError

    def apply_batch(self, docs: Sequence[Document]) -> List[Results]:
        """``apply`` of each document, in order (a stage that splits documents gives a list of
        parts' results for each document it splits)."""
        return [self.apply(doc) for doc in docs]


def apply_stages(stages: Sequence[Stage], doc: Document) -> Tuple[Document, Optional[Stage], Optional[str]]:
    """Run ``stages`` in order until one drops the document: (document, that stage, reason), or
    (document, None, None) when every stage keeps it."""
    for stage in stages:
        doc, reason = stage.apply(doc)
        if reason is not None:
            return doc, stage, reason
    return doc, None, None


def reason_stages(stages: Sequence[Counted]) -> Dict[str, str]:
    """Which stage gives each drop reason."""
    return {reason: stage.name for stage in stages for reason in stage.reasons}
