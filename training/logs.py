"""What the trainer writes while it runs: train.log, metrics.csv, TensorBoard events, progress.

metrics.csv has one row per logged optimizer step with the columns in :data:`COLUMNS`; loss, lr,
grad_norm and loss_scale are the logged step's, tokens_per_s, step_time and mfu_estimate the mean
over the steps since the previous row (not counting the first step, which compiles the graph, unless
it is the only one), so one slow or fast step does not swing the figures. On
resume the rows past the checkpoint's step (written after it, then lost with the crash) are
dropped, so the file always describes one trajectory. TensorBoard events are written when
tensorboardX is importable; a rich progress bar shows loss and tokens/s when stdout is a
terminal and rich is importable, plain lines otherwise (logs, CI, msrun worker files).
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Optional

from .safeopen import open_append, open_new

#: the redaction ``msdoctor train`` applies (home paths, user and host names, secrets in env vars and URLs),
#: as JSON [[regex, replacement], ...] in order (msdoctor/redact.py Redactor.rules): the trainer cannot
#: import msdoctor, so it gets the substitutions themselves. Unset (or --no-redact): nothing is masked.
REDACT_ENV = "MSDOCTOR_REDACT"


def _rules() -> list:
    try:
        return [(re.compile(rx), repl) for rx, repl in json.loads(os.environ.get(REDACT_ENV) or "[]")]
    except (ValueError, TypeError, re.error):
        return []


_RULES = _rules()


def redact(text: str) -> str:
    """The text as msdoctor's redaction shows it (unchanged without MSDOCTOR_REDACT)."""
    for rx, repl in _RULES:
        text = rx.sub(repl, text)
    return text


class _Redacting(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if _RULES:
            record.msg, record.args = redact(record.getMessage()), None
        return True


COLUMNS = ("step", "loss", "lr", "grad_norm", "loss_scale", "tokens_per_s", "step_time", "mfu_estimate")


class _Stdout(logging.StreamHandler):
    """Writes to whatever sys.stdout is now: under a rich progress bar, its proxy prints above the bar."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


class _NoFollowFileHandler(logging.FileHandler):
    """A FileHandler whose file is opened without following a symbolic link (training/safeopen.py)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, delay=True)
        self.stream = self._open()

    def _open(self) -> Any:
        return open_append(self.baseFilename, encoding="utf-8", errors="backslashreplace")


def setup_logging(run_dir: Path, rank: int) -> logging.Logger:
    """Rank 0 logs to the console and run_dir/train.log; other ranks to run_dir/train_rank<N>.log only."""
    log = logging.getLogger("msdoctor.training")
    log.setLevel(logging.INFO)
    log.handlers.clear()
    log.propagate = False
    fmt = logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S")
    name = "train.log" if rank == 0 else f"train_rank{rank}.log"
    to_file = _NoFollowFileHandler(run_dir / name)
    to_file.setFormatter(fmt)
    to_file.addFilter(_Redacting())
    log.addHandler(to_file)
    if rank == 0:
        to_console = _Stdout()
        to_console.setFormatter(logging.Formatter("%(message)s"))
        to_console.addFilter(_Redacting())
        log.addHandler(to_console)
    return log


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.9g}"  # round-trips float32 exactly (losses, grad norms)
    return str(value)


class Metrics:
    """metrics.csv (+ TensorBoard) of one run; rank 0 only."""

    def __init__(self, run_dir: Path, resume_step: Optional[int], tensorboard: bool) -> None:
        self.path = run_dir / "metrics.csv"
        rows: list[list[str]] = []
        if resume_step is not None and self.path.exists():
            with open(self.path, newline="") as f:
                rows = [r for r in csv.reader(f)][1:]
            rows = [r for r in rows if r and r[0].isdigit() and int(r[0]) <= resume_step]
        tmp = self.path.with_suffix(".csv.tmp")
        with open_new(tmp, newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS)
            w.writerows(rows)
        os.replace(tmp, self.path)
        self.file = open_append(self.path, newline="")
        self.csv = csv.writer(self.file)
        self.tb = None
        if tensorboard:
            try:
                from tensorboardX import SummaryWriter

                self.tb = SummaryWriter(str(run_dir / "tb"))
            except ImportError:
                pass

    def write(self, row: dict) -> None:
        self.csv.writerow([_fmt(row.get(c)) for c in COLUMNS])
        self.file.flush()
        if self.tb is not None:
            for key in COLUMNS[1:]:
                value = row.get(key)
                if isinstance(value, (int, float)) and not math.isnan(value):
                    self.tb.add_scalar(f"train/{key}", value, row["step"])

    def close(self) -> None:
        self.file.close()
        if self.tb is not None:
            self.tb.close()


class Progress:
    """A rich progress bar on a terminal; nothing (the log lines suffice) elsewhere."""

    def __init__(self, total: int, start: int, enabled: bool) -> None:
        self.bar = None
        if not (enabled and sys.stdout.isatty()):
            return
        try:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeRemainingColumn
        except ImportError:
            return
        self.bar = Bar(
            TextColumn("train"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            transient=True,
        )
        self.task = self.bar.add_task("train", total=total, completed=start, info="")
        self.bar.start()

    @property
    def active(self) -> bool:
        return self.bar is not None

    def update(self, step: int, loss: float, tokens_per_s: float) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=step, info=f"loss {loss:.4f}  {tokens_per_s:,.0f} tok/s")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
