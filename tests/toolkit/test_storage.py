"""toolkit.storage: atomic writes on the local disk and on a Beam file system."""

import json
import os

import numpy as np
import pytest

from tests.support.helpers import SHARED_PREFIX
from toolkit import storage


@pytest.mark.parametrize("prefix", ["", SHARED_PREFIX])
def test_write_replaces_and_leaves_no_temporary(tmp_path, prefix):
    target = prefix + str(tmp_path / "sub" / "file.json")
    storage.write_bytes(target, b"old")
    storage.write_json(target, {"b": 1, "a": "é"})
    assert (tmp_path / "sub" / "file.json").read_text(encoding="utf-8") == '{\n  "a": "é",\n  "b": 1\n}\n'
    assert storage.read_json(target) == {"a": "é", "b": 1} and storage.exists(target)
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["file.json"]
    assert storage.match(prefix + str(tmp_path / "sub" / "*")) == [target]


@pytest.mark.parametrize("prefix", ["", SHARED_PREFIX])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, prefix):
    target = prefix + str(tmp_path / "file.bin")
    storage.write_bytes(target, b"old")
    with pytest.raises(RuntimeError), storage.atomic_write(target) as stream:
        stream.write(b"half of the new")
        raise RuntimeError("the worker died")
    assert (tmp_path / "file.bin").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.bin"]


@pytest.mark.parametrize("prefix", ["", SHARED_PREFIX])
def test_match_skips_what_a_killed_write_left_behind(tmp_path, prefix):
    target = prefix + str(tmp_path / "marker.json")
    storage.write_json(target, {"index": 0})
    leftover = storage._temporary(str(tmp_path / "next.json"))
    open(leftover, "wb").close()  # killed before a byte was written
    assert storage.match(prefix + str(tmp_path / "*.json")) == [target]
    assert storage.match(prefix + str(tmp_path / "*"), temporaries=True) == sorted([target, prefix + leftover])


def test_atomic_path_for_libraries_that_want_a_path(tmp_path):
    target = tmp_path / "index.npy"
    with storage.atomic_path(str(target)) as temporary:
        assert temporary.endswith(".npy") and os.path.basename(temporary).startswith(".index.")
        np.save(temporary, np.arange(3))  # np.save would append .npy to a name without it
    assert np.load(target).tolist() == [0, 1, 2]
    folder = tmp_path / "export"
    for content in ("first", "second"):  # a folder replaces the one before
        with storage.atomic_path(str(folder)) as temporary:
            os.makedirs(temporary)
            (open(os.path.join(temporary, "config.json"), "w")).write(json.dumps(content))
    assert json.loads((folder / "config.json").read_text()) == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "index.npy"]


def test_atomic_path_uploads_to_a_remote_file_system(tmp_path):
    with storage.atomic_path(SHARED_PREFIX + str(tmp_path / "model.bin")) as local:
        assert not local.startswith(SHARED_PREFIX)
        with open(local, "wb") as out:
            out.write(b"weights")
    assert (tmp_path / "model.bin").read_bytes() == b"weights"


def test_text_mode_is_for_local_files_only(tmp_path):
    with storage.atomic_write(str(tmp_path / "a.csv"), "w") as handle:
        handle.write("a,b\n")
    assert (tmp_path / "a.csv").read_bytes() == b"a,b\n"
    with (
        pytest.raises(ValueError, match="for a local file"),
        storage.atomic_write(SHARED_PREFIX + str(tmp_path / "b.csv"), "w"),
    ):
        pass
