"""Models on shared storage: a Beam filesystem of the test's own (scheme ``sharedtest://``) that
maps to a local folder, standing in for gs:// or s3://."""
import json

from apache_beam.io.filesystem import FileMetadata, MatchResult
from apache_beam.io.localfilesystem import LocalFileSystem

from ccnet_pipeline.cli import main
from ccnet_pipeline.transforms import localize
from tests.conftest import page, paragraphs, write_wet_file

PREFIX = "sharedtest://"


def local(path: str) -> str:
    return path[len(PREFIX):] if path.startswith(PREFIX) else path


class SharedTestFileSystem(LocalFileSystem):
    """Beam finds FileSystem subclasses by their scheme; this one serves local files."""

    @classmethod
    def scheme(cls):
        return "sharedtest"

    def match(self, patterns, limits=None):
        results = super().match([local(p) for p in patterns], limits)
        return [
            MatchResult(PREFIX + r.pattern, [FileMetadata(PREFIX + m.path, m.size_in_bytes) for m in r.metadata_list])
            for r in results
        ]

    def open(self, path, *args, **kwargs):
        return super().open(local(path), *args, **kwargs)

    def exists(self, path):
        return super().exists(local(path))


def test_localize_copies_once(tmp_path):
    source = tmp_path / "model.bin"
    source.write_bytes(b"weights")
    local = localize(PREFIX + str(source))
    assert open(local, "rb").read() == b"weights" and local != str(source)
    assert localize(PREFIX + str(source)) == local
    assert localize(str(source)) == str(source)


def test_mine_with_models_on_shared_storage(lid_model, lm_dir, tmp_path):
    write_wet_file(tmp_path / "wet" / "a.warc.wet.gz", [page(i, paragraphs("en", 4, f"doc{'x' * i}")) for i in range(3)])
    out = tmp_path / "corpus"
    code = main(["mine", "--input", str(tmp_path / "wet" / "*.gz"), "--output", str(out), "--langs", "en",
                 "--lid-model", PREFIX + lid_model, "--lm-dir", PREFIX + str(lm_dir)])
    assert code == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["counters"]["perplexity/scored"] == 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["cutoffs"]) == {"en"}
