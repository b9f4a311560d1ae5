"""Test helpers: WET files written with warcio, literal multilingual text, a fastText model
written directly, corpus folders in the mine job's layout."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from ccnet_pipeline.samples.embedded import letters
from ccnet_pipeline.samples.wet_writer import WetPage, write_wet

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

# Real sentences (written for these tests), long enough for confident language ID.
TEXT = {
    "en": "The village library opens every morning at nine and closes late on Thursdays, "
    "when volunteers read stories to children and help older residents use the computers.",
    "fr": "La bibliothèque du village ouvre chaque matin à neuf heures et ferme tard le jeudi, "
    "quand des bénévoles lisent des histoires aux enfants et aident les anciens.",
    "de": "Die Dorfbibliothek öffnet jeden Morgen um neun Uhr und schließt donnerstags spät, "
    "wenn Freiwillige den Kindern Geschichten vorlesen und älteren Bewohnern helfen.",
    "ru": "Деревенская библиотека открывается каждое утро в девять часов и закрывается поздно "
    "по четвергам, когда волонтёры читают детям сказки и помогают пожилым жителям.",
    "es": "La biblioteca del pueblo abre cada mañana a las nueve y cierra tarde los jueves, "
    "cuando los voluntarios leen cuentos a los niños y ayudan a los mayores.",
    "is": "Bókasafnið í þorpinu opnar klukkan níu á hverjum morgni og lokar seint á fimmtudögum, "
    "þegar sjálfboðaliðar lesa sögur fyrir börnin og hjálpa eldri íbúum að nota tölvurnar.",
    "sw": "Maktaba ya kijiji hufunguliwa kila asubuhi saa tatu na hufungwa kwa kuchelewa siku ya "
    "Alhamisi, wakati watu wa kujitolea wanawasomea watoto hadithi na kuwasaidia wazee.",
}


def paragraphs(language: str, count: int, tag: str) -> str:
    """``count`` distinct lines of one language; ``tag`` (letters: dedup maps digits to 0)
    makes them unique to one document."""
    return "\n".join(f"{TEXT[language]} ({tag}, paragraph {letters(i)})" for i in range(count))


def page(number: int, text: str, title: str = "A title") -> WetPage:
    return WetPage(f"https://example{number % 3}.org/page/{number}", "2019-02-16T04:15:08Z", title, text)


def write_wet_file(path: Union[str, Path], pages: Sequence[Union[WetPage, bytes]]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as stream:
        write_wet(stream, pages, path.name)
    return path


def write_fasttext_model(path: Union[str, Path], vocabulary: Dict[str, List[str]]) -> Path:
    """A real fastText supervised model file (format version 12), written directly.

    Each label's words point along one axis of the embedding and the output layer is the identity,
    so a text made of one label's words gets that label with probability ~1. (Training a model here
    is not an option: fasttext-numpy2-wheel 0.9.2 stops with "Encountered NaN" in most runs.)
    """
    labels = list(vocabulary)
    words = [word for label in labels for word in vocabulary[label]]
    dim = len(labels)
    embedding = np.zeros((len(words), dim), dtype="<f4")
    embedding[np.arange(len(words)), [i for i, label in enumerate(labels) for _ in vocabulary[label]]] = 10.0
    entries = [(word, 0) for word in words] + [(label, 1) for label in labels]
    with open(path, "wb") as out:
        out.write(struct.pack("<ii", 793712314, 12))  # magic, version
        # dim ws epoch minCount neg wordNgrams loss=softmax model=supervised bucket minn maxn lrUpdateRate t
        out.write(struct.pack("<12id", dim, 5, 5, 1, 5, 1, 3, 3, 0, 0, 0, 100, 1e-4))
        out.write(struct.pack("<iiiqq", len(entries), len(words), len(labels), len(entries), -1))
        for text, kind in entries:
            out.write(text.encode("utf-8") + b"\0" + struct.pack("<qb", 1, kind))
        for matrix in (embedding, np.eye(dim, dtype="<f4")):
            out.write(struct.pack("<?qq", False, *matrix.shape) + matrix.tobytes())
    return Path(path)


def write_corpus(root: Union[str, Path], shards: Dict[str, List[dict]], row_group_size: Optional[int] = None) -> Path:
    """A corpus folder as the mine job writes it: each ``<language>/<bucket>/part-NNNNN.parquet``
    of ``shards`` with its documents, and the manifest listing them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from filters.document import ARROW_SCHEMA
    from toolkit.corpus import CorpusManifest, Layout, ShardEntry

    root = Path(root)
    entries = []
    for relative, docs in shards.items():
        language, bucket, _ = relative.split("/")
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(docs, schema=ARROW_SCHEMA), root / relative, row_group_size=row_group_size)
        entries.append(ShardEntry(relative, language, bucket, len(docs), sum(len(d["raw_content"]) for d in docs)))
    CorpusManifest(files=entries).write(Layout(str(root)))
    return root


# A Beam file system of the tests' own (scheme ``sharedtest://``) that maps to local paths,
# standing in for gs:// or s3://. Beam finds FileSystem subclasses by their scheme, so importing
# this module registers it.
SHARED_PREFIX = "sharedtest://"


def _local(path: str) -> str:
    return path[len(SHARED_PREFIX) :] if path.startswith(SHARED_PREFIX) else path


from apache_beam.io.filesystem import FileMetadata, MatchResult  # noqa: E402
from apache_beam.io.localfilesystem import LocalFileSystem  # noqa: E402


class SharedTestFileSystem(LocalFileSystem):
    @classmethod
    def scheme(cls):
        return "sharedtest"

    def match(self, patterns, limits=None):
        results = super().match([_local(p) for p in patterns], limits)
        return [
            MatchResult(
                SHARED_PREFIX + r.pattern,
                [FileMetadata(SHARED_PREFIX + m.path, m.size_in_bytes) for m in r.metadata_list],
            )
            for r in results
        ]

    def open(self, path, *args, **kwargs):
        return super().open(_local(path), *args, **kwargs)

    def create(self, path, *args, **kwargs):
        os.makedirs(os.path.dirname(_local(path)), exist_ok=True)
        return super().create(_local(path), *args, **kwargs)

    def exists(self, path):
        return super().exists(_local(path))

    def rename(self, sources, destinations):
        return super().rename([_local(p) for p in sources], [_local(p) for p in destinations])

    def delete(self, paths):
        for path in paths:
            os.remove(_local(path))
