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
