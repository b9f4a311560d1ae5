import json

from filters import train_lm
from filters.perplexity import LanguageModel


def test_cli_writes_ccnet_layout_with_config(tmp_path, capsys):
    text = tmp_path / "sw.txt"
    text.write_text("\n".join(f"Habari ya asubuhi rafiki yangu namba {i}, leo ni siku nzuri." for i in range(300)))
    assert train_lm.main(["--lang", "sw", "--text", str(text), "--out", str(tmp_path / "lm")]) == 0
    names = {p.name for p in (tmp_path / "lm").iterdir()}
    assert names == {"sw.sp.model", "sw.arpa.bin", "sw.train.json"}  # no temporary left behind
    info = json.loads((tmp_path / "lm" / "sw.train.json").read_text())
    assert info["lines"] == 300 and info["config"]["vocab_size"] == 65536
    assert info["pieces"] < 65536  # shrunk to what the small text supports
    assert LanguageModel(str(tmp_path / "lm"), "sw").perplexity("habari ya asubuhi rafiki yangu") > 0
    assert "sw: 300 lines" in capsys.readouterr().out
    # A rerun into another folder writes the same models: no path of the run inside them.
    assert train_lm.main(["--lang", "sw", "--text", str(text), "--out", str(tmp_path / "again")]) == 0
    for name in ("sw.sp.model", "sw.arpa.bin"):
        assert (tmp_path / "lm" / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


def test_missing_tools_and_text_are_clear_errors(tmp_path, monkeypatch, capsys):
    text = tmp_path / "x.txt"
    text.write_text("some text\n")
    monkeypatch.setattr(train_lm, "PROJECT_KENLM_BIN", tmp_path / "none")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("KENLM_BIN", raising=False)
    assert train_lm.main(["--lang", "xx", "--text", str(text), "--out", str(tmp_path / "o")]) == 2
    assert "run `make kenlm`" in capsys.readouterr().err
    assert train_lm.main(["--lang", "xx", "--text", str(tmp_path / "absent.txt"), "--out", str(tmp_path / "o")]) == 2
    assert "text file not found" in capsys.readouterr().err


def _swahili(path, lines=300):
    path.write_text("\n".join(f"Habari ya asubuhi rafiki yangu namba {i}, leo ni siku nzuri." for i in range(lines)))


def test_langs_100_trains_each_language_with_text_and_names_the_others(tmp_path, capsys):
    (tmp_path / "text").mkdir()
    _swahili(tmp_path / "text" / "sw.txt")
    (tmp_path / "text" / "is.txt").write_text(
        "\n".join(f"Bókasafnið í þorpinu opnar klukkan {i} á hverjum morgni og lokar seint." for i in range(300))
    )
    (tmp_path / "text" / "xx.txt").write_text("not an XLM-R language: never trained\n")
    argv = [
        "--langs",
        "100",
        "--text-dir",
        str(tmp_path / "text"),
        "--out",
        str(tmp_path / "lm"),
        "--vocab-size",
        "200",
    ]
    assert train_lm.main(argv) == 0
    assert {p.name for p in (tmp_path / "lm").iterdir()} == {
        f"{lang}.{ext}" for lang in ("is", "sw") for ext in ("sp.model", "arpa.bin", "train.json")
    }
    assert json.loads((tmp_path / "lm" / "sw.train.json").read_text())["config"]["vocab_size"] == 200
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out[:2]] == ["is", "sw"]  # XLM-R's order
    others = out[2].split(": ")[1].split()
    assert out[2].startswith(f"no reference text in {tmp_path / 'text'} for 98 of the 100 languages, no model: ")
    assert len(others) == 98 and {"en", "zh_Hant", "ur_rom"} <= set(others) and "sw" not in others
    assert len(out) == 3


def test_langs_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "text").mkdir()
    _swahili(tmp_path / "text" / "sw.txt")
    out = ["--out", str(tmp_path / "lm")]
    assert train_lm.main(["--langs", "en,fr", "--text-dir", str(tmp_path / "text"), *out]) == 2
    assert capsys.readouterr().err == (
        f"error: no reference text in {tmp_path / 'text'} for any of the 2 languages of --langs en,fr"
        f" (expected files such as {tmp_path / 'text' / 'en.txt'})\n"
    )
    assert train_lm.main(["--langs", "en,xx", "--text-dir", str(tmp_path / "text"), *out]) == 2
    assert capsys.readouterr().err.startswith("error: unknown language code(s) xx; valid XLM-R codes: af am")
    assert train_lm.main(["--langs", "100", "--text-dir", str(tmp_path / "none"), *out]) == 2
    assert capsys.readouterr().err == f"error: reference text folder not found: {tmp_path / 'none'}\n"
    assert train_lm.main(["--langs", "100", *out]) == 2
    assert "--langs takes --text-dir DIR" in capsys.readouterr().err
    assert train_lm.main(["--lang", "sw", *out]) == 2
    assert "give --lang xx --text FILE, or --langs" in capsys.readouterr().err
    assert not (tmp_path / "lm").exists()
