"""The Makefile's languages: LANGS=100 (XLM-R's 100) or a comma list, on the sample and on real input.

make runs in the repository against folders in tmp_path: a venv stamp there (so that nothing is
installed; PY is this interpreter), a sample folder with reference text in two languages."""

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def make(tmp_path, *args):
    venv = tmp_path / "venv"
    venv.mkdir(exist_ok=True)
    (venv / ".installed").touch()  # newer than pyproject.toml: make installs nothing
    command = ["make", "--no-print-directory", "-C", str(REPO), f"VENV={venv}", f"PY={sys.executable}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def sample_with_reference_text(tmp_path) -> Path:
    """A sample folder as `make sample` leaves it, reference text in sw and is only."""
    sample = tmp_path / "sample"
    (sample / "reference").mkdir(parents=True)
    (sample / "reference" / "sw.txt").write_text(
        "\n".join(f"Habari ya asubuhi rafiki yangu namba {i}, leo ni siku nzuri." for i in range(200))
    )
    (sample / "reference" / "is.txt").write_text(
        "\n".join(f"Bókasafnið í þorpinu opnar klukkan {i} á hverjum morgni og lokar seint." for i in range(200))
    )
    (sample / ".done").touch()
    return sample


@pytest.mark.slow
def test_langs_100_trains_the_sample_models_it_has_text_for(tmp_path):
    # Before: the lm loop looked for reference/100.txt, trained nothing and the stamp's folder was missing.
    sample, lm = sample_with_reference_text(tmp_path), tmp_path / "lm"
    result = make(tmp_path, "LANGS=100", f"SAMPLE={sample}", f"LM_DIR={lm}", f"{lm}/.done-100")
    assert result.returncode == 0, result.stderr
    assert {p.name for p in lm.glob("*.arpa.bin")} == {"is.arpa.bin", "sw.arpa.bin"}
    assert (lm / ".done-100").exists()
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("no reference text")]
    assert line.startswith(f"no reference text in {sample}/reference for 98 of the 100 languages, no model: af am ")


def mine_arguments(tmp_path, *args):
    """The mine job's arguments in `make -n corpus ARGS` (shell-split, as the shell would run them)."""
    result = make(tmp_path, "-n", "corpus", *args)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if " -m ccnet_pipeline mine " in line]
    return shlex.split(line)


@pytest.mark.parametrize("langs", ["100", "en,fr,sw", "en, fr"])
@pytest.mark.parametrize("source", ["INPUT=data/*.warc.wet.gz", "DUMP=CC-MAIN-2019-09", "sample"])
def test_the_mine_job_gets_langs_as_one_argument(tmp_path, source, langs):
    sample = sample_with_reference_text(tmp_path)
    lm = tmp_path / "lm"
    lm.mkdir()
    (lm / f".done-{langs.replace(',', '_').replace(' ', '')}").touch()  # the sample's models: trained already
    args = [f"LANGS={langs}", f"SAMPLE={sample}", f"LM_DIR={lm}", *([source] if source != "sample" else [])]
    argv = mine_arguments(tmp_path, *args)
    assert argv[argv.index("--langs") + 1] == langs
    if source == "sample":
        assert argv[argv.index("--lm-dir") + 1] == str(lm)
