"""toolkit.corpus: the corpus folder's layout and its versioned manifest."""

import json

import pytest

from toolkit.corpus import MANIFEST_VERSION, CorpusManifest, Layout, ShardEntry

FILES = [
    ShardEntry("fr/head/part-00001.parquet", "fr", "head", 3, 30),
    ShardEntry("en/all/part-00000.parquet", "en", "all", 2, 20),
    ShardEntry("en/all/part-00001.parquet", "en", "all", 1, 10),
]


def test_layout_paths():
    layout = Layout("gs://bucket/corpus/")
    assert layout.manifest == "gs://bucket/corpus/manifest.json"
    assert layout.hashes(3) == "gs://bucket/corpus/_work/hashes/00003.npy"
    assert layout.marker(3) == "gs://bucket/corpus/_work/segments/00003.json"
    assert (
        layout.bad_input("crawl-data/CC/x.warc.wet.gz")
        == "gs://bucket/corpus/quarantine/bad-input/crawl-data/CC/x.warc.wet.gz.jsonl"
    )
    assert layout.dropped("too_short", 7) == "gs://bucket/corpus/quarantine/dropped/too_short/part-00007.parquet"
    assert Layout.shard("en", "head", 7) == "en/head/part-00007.parquet"
    assert Layout.shard("en", "head", 7, "ccnet") == "en_head_0007.json.gz"


def test_manifest_round_trip_and_views(tmp_path):
    CorpusManifest(files=FILES, config={"x": 1}).write(Layout(str(tmp_path)))
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert data["version"] == MANIFEST_VERSION == 2 and data["format"] == "parquet" and data["documents"] == 6
    manifest = CorpusManifest.read(str(tmp_path))
    assert [f.path for f in manifest.files] == sorted(f.path for f in FILES)
    assert manifest.languages == {
        "en": {"all": {"documents": 3, "characters": 30, "files": 2}},
        "fr": {"head": {"documents": 3, "characters": 30, "files": 1}},
    }
    assert manifest.shard_paths(buckets=["all"]) == {
        "en": [f"{tmp_path}/en/all/part-00000.parquet", f"{tmp_path}/en/all/part-00001.parquet"]
    }
    with pytest.raises(ValueError, match="not read from a corpus folder"):
        CorpusManifest(files=FILES).shard_paths()


def test_version_1_manifests_still_read(tmp_path):
    files = [
        {"path": "en/all/part-00000.parquet", "documents": 2, "characters": 20}
    ]  # language and bucket in the path only
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "parquet", "files": files}))
    manifest = CorpusManifest.read(str(tmp_path))
    (entry,) = manifest.files
    assert (manifest.version, entry.language, entry.bucket) == (1, "en", "all")


def test_unknown_version_and_wrong_format_are_clear_errors(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"version": 9, "files": []}))
    with pytest.raises(ValueError, match="manifest version 9 is not one this version of the toolkit reads"):
        CorpusManifest.read(str(tmp_path))
    CorpusManifest(format="ccnet", files=[ShardEntry("en_all_0000.json.gz", "en", "all", 1, 1)]).write(
        Layout(str(tmp_path))
    )
    assert CorpusManifest.read(str(tmp_path)).format == "ccnet"
    with pytest.raises(ValueError, match="ccnet-json format; convert it with python -m ccnet_pipeline import-ccnet"):
        CorpusManifest.read(str(tmp_path), require_format="parquet")
    with pytest.raises(FileNotFoundError, match="not a corpus folder"):
        CorpusManifest.read(str(tmp_path / "nothing"))
