"""A run folder, the one object every command that trains and every reader of a run goes through.

```
RUN/config.json                  the run's record: its configs and inputs (typed, ``record``)
RUN/checkpoints/step_XXXXXXXX/   checkpoints (``checkpoint.py``), the newest few kept
RUN/metrics.csv  RUN/tensorboard/  the metrics log
RUN/tokenizer/sentencepiece.model (dict.txt) or tokenizer.json   the tokenizer: the folder stands alone
RUN/best/  RUN/hf/  RUN/results.json  a fine-tuning run's best model, its export, its scores
```

One resume rule for every command: a run starts from its latest checkpoint with ``--resume``, a
folder that already holds checkpoints is never overwritten without it, and a resumed run takes its
saved configs but their ``max_steps``, which cut only the run before (``resumed_fields``).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import os
import re
import shutil
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Type, TypeVar

from pretrain.dist import Dist, setup, teardown
from tokenizer.hf import SENTENCEPIECE_NAMES, TOKENIZER_JSON, tokenizer_file
from toolkit import storage
from toolkit.cli import from_dict

CONFIG_FILE, METRICS_FILE = "config.json", "metrics.csv"
TOKENIZER_DIR = "tokenizer"
BEST_DIR, HF_DIR, RESULTS_FILE = "best", "hf", "results.json"
_CHECKPOINT = re.compile(r"^step_(\d{8})$")
Record = TypeVar("Record")


class RunDir:
    """The folder of one run (``path``)."""

    def __init__(self, path: str):
        self.path = path

    def join(self, *names: str) -> str:
        return os.path.join(self.path, *names)

    @property
    def config_file(self) -> str:
        return self.join(CONFIG_FILE)

    @property
    def tokenizer(self) -> str:
        """The run's tokenizer file: its SentencePiece model, or the ``tokenizer.json`` it came with."""
        return tokenizer_file(self.join(TOKENIZER_DIR))

    @property
    def best(self) -> str:
        return self.join(BEST_DIR)

    @property
    def hf(self) -> str:
        return self.join(HF_DIR)

    @property
    def results_file(self) -> str:
        return self.join(RESULTS_FILE)

    # --- the record ---

    def has_record(self) -> bool:
        return os.path.exists(self.config_file)

    def write_record(self, record: Any) -> None:
        """The run's typed record (a dataclass of its configs and inputs) as config.json."""
        os.makedirs(self.path, exist_ok=True)
        storage.write_json(self.config_file, dataclasses.asdict(record))

    def read_record(self, cls: Type[Record]) -> Record:
        """The record, rebuilt as ``cls`` (a record written before, with fewer fields, too)."""
        return from_dict(cls, storage.read_json(self.config_file))

    def resumed(self, cls: Type[Record], resume: bool) -> Optional[Record]:
        """With ``resume``, the record of the run to continue (None before its first save)."""
        return self.read_record(cls) if resume and self.has_record() else None

    def copy_tokenizer(self, tokenizer: str, dictionary: Optional[str] = None) -> None:
        """The tokenizer file (a SentencePiece model, or a ``tokenizer.json``) and fairseq's dict.txt."""
        name = TOKENIZER_JSON if tokenizer.endswith(".json") else SENTENCEPIECE_NAMES[1]
        storage.copy_file(tokenizer, self.join(TOKENIZER_DIR, name))
        if dictionary and os.path.exists(dictionary):
            storage.copy_file(dictionary, self.join(TOKENIZER_DIR, "dict.txt"))

    # --- checkpoints ---

    def checkpoint(self, step: int) -> str:
        return self.join("checkpoints", f"step_{step:08d}")

    def latest(self) -> Optional[str]:
        """The newest complete checkpoint, or None."""
        root = self.join("checkpoints")
        names = os.listdir(root) if os.path.isdir(root) else []
        steps = sorted(int(m.group(1)) for m in map(_CHECKPOINT.match, names) if m)
        return self.checkpoint(steps[-1]) if steps else None

    def resume_point(self, resume: bool) -> Optional[str]:
        """The checkpoint the run starts from: the latest with ``resume``, else none, and then a
        folder that already holds checkpoints is an error (never overwritten)."""
        found = self.latest()
        if found and not resume:
            raise FileExistsError(
                f"{self.path} already holds checkpoints: pass --resume to continue it, or choose another --out"
            )
        return found if resume else None

    def prune(self, keep: int) -> None:
        """Delete all checkpoints but the newest ``keep`` (all with ``keep`` 0)."""
        root = self.join("checkpoints")
        names = sorted(name for name in os.listdir(root) if _CHECKPOINT.match(name))
        for name in names[:-keep] if keep > 0 else []:
            shutil.rmtree(os.path.join(root, name))


@contextlib.contextmanager
def run_session(out: str, resume: bool, device: str) -> Iterator[Tuple[RunDir, Optional[str], Dist]]:
    """What every command that trains starts with: its run folder ``out``, the checkpoint it
    resumes from (``RunDir.resume_point``) and its process group (``dist.setup``), which it
    leaves when the block ends, however it ends."""
    run = RunDir(out)
    resume_from = run.resume_point(resume)
    dist = setup(device)
    try:
        yield run, resume_from, dist
    finally:
        teardown()


def resumed_fields(saved_config: Any) -> Dict:
    """A resumed run's saved config as a layer under the flags given, but its ``max_steps``:
    that cut only the run before."""
    fields = dataclasses.asdict(saved_config) if saved_config is not None else {}
    fields.pop("max_steps", None)
    return fields


class MetricsLog:
    """``metrics.csv`` and TensorBoard events of a run (main process only). A resumed run drops
    what an interrupted run logged after its checkpoint, so the files read as one run."""

    def __init__(self, run: RunDir, start_step: int, enabled: bool, fields: Sequence[str]):
        self.enabled, self.fields = enabled, list(fields)
        if not enabled:
            return
        self.path = run.join(METRICS_FILE)
        rows = []
        if start_step and os.path.exists(self.path):
            with open(self.path, newline="") as handle:
                rows = [row for row in csv.DictReader(handle) if int(row["step"]) <= start_step]
        with storage.atomic_write(self.path, "w") as handle:
            writer = csv.DictWriter(handle, self.fields)
            writer.writeheader()
            writer.writerows(rows)
        from torch.utils.tensorboard import SummaryWriter  # only the main process needs TensorBoard

        self.tensorboard = SummaryWriter(run.join("tensorboard"), purge_step=start_step + 1 if start_step else None)

    def write(self, step: int, split: str, language: str = "", **values: float) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", newline="") as handle:
            csv.DictWriter(handle, self.fields).writerow({"step": step, "split": split, "language": language, **values})
        tag = f"{split}/{language}" if language else split
        for name, value in values.items():
            self.tensorboard.add_scalar(f"{tag}/{name}", value, step)

    def close(self) -> None:
        if self.enabled:
            self.tensorboard.close()
