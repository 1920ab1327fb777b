"""Checkpoints "often but few": atomic, checksummed, the newest K kept.

A checkpoint is a directory ``step_00000100/`` holding the files its writers produce (model and
optimizer state), ``state.json`` (step, data position, seeds, loss scale) and ``MANIFEST.json``
with the size and SHA-256 of every file. It is written under a temporary name, every file is
fsync'ed, the manifest is written last, and only then is the directory renamed into place: a
process killed at any moment leaves either a complete checkpoint or a ``.tmp-*`` directory that
is never picked and is cleaned up later. Loading verifies the checksums and falls back to the
next older checkpoint when one does not verify.

This module knows no framework: writers are callables ``fn(path)`` (the trainer passes
``mindspore.save_checkpoint``), so the atomicity is testable on its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional

MANIFEST = "MANIFEST.json"
STATE = "state.json"
_STEP_DIR = re.compile(r"^step_(\d{8})$")
_TMP_PREFIX = ".tmp-"


@dataclass
class Checkpoint:
    path: Path
    step: int
    state: dict


def step_dir(root: Path, step: int) -> Path:
    return root / f"step_{step:08d}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save(root: Path, step: int, writers: Mapping[str, Callable[[Path], None]], state: dict,
         keep_last: Optional[int] = None) -> Path:
    """Write a complete checkpoint for ``step`` atomically; prune to the newest keep_last.

    Returns the checkpoint directory. An existing complete checkpoint of the same step is kept.
    """
    root.mkdir(parents=True, exist_ok=True)
    final = step_dir(root, step)
    if final.exists() and verify(final) is None:
        return final
    tmp = root / f"{_TMP_PREFIX}{final.name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    for name, write in writers.items():
        write(tmp / name)
    (tmp / STATE).write_text(json.dumps({**state, "step": step}, indent=1, sort_keys=True))
    files = {}
    for f in sorted(p for p in tmp.iterdir() if p.is_file()):
        _fsync_path(f)
        files[f.name] = {"bytes": f.stat().st_size, "sha256": _sha256(f)}
    manifest = {"step": step, "files": files, "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    with open(tmp / MANIFEST, "w") as out:  # written last: it marks the files above as complete
        out.write(json.dumps(manifest, indent=1, sort_keys=True))
        out.flush()
        os.fsync(out.fileno())
    _fsync_path(tmp)
    if final.exists():  # an unverifiable leftover of the same step: move it aside first
        os.rename(final, root / f"{_TMP_PREFIX}stale-{final.name}-{os.getpid()}")
    os.rename(tmp, final)
    _fsync_path(root)
    if keep_last:
        prune(root, keep_last)
    return final


def verify(path: Path) -> Optional[str]:
    """None when the checkpoint at path is complete and intact, else why not."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"no readable {MANIFEST} ({type(exc).__name__})"
    if STATE not in files:
        return f"{STATE} is not listed in the manifest"
    for name, want in files.items():
        f = path / name
        if not f.is_file():
            return f"{name} is missing"
        if f.stat().st_size != want.get("bytes"):
            return f"{name} has {f.stat().st_size} bytes, the manifest says {want.get('bytes')}"
        if _sha256(f) != want.get("sha256"):
            return f"{name} does not match its SHA-256 in the manifest"
    return None


def _step_dirs(root: Path) -> Iterator[tuple[int, Path]]:
    if not root.is_dir():
        return iter(())
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name)) and p.is_dir()]
    return iter(sorted(found, reverse=True))


def find_latest(root: Path, log: Callable[[str], None] = lambda _: None) -> Optional[Checkpoint]:
    """The newest checkpoint that verifies; damaged ones are reported through log and skipped."""
    for step, path in _step_dirs(root):
        problem = verify(path)
        if problem is not None:
            log(f"skipping checkpoint {path}: {problem}")
            continue
        return Checkpoint(path, step, json.loads((path / STATE).read_text()))
    return None


def prune(root: Path, keep_last: int) -> list[Path]:
    """Delete all but the newest keep_last complete checkpoints; returns what was deleted."""
    complete = [p for _, p in _step_dirs(root) if (p / MANIFEST).exists()]
    doomed = complete[keep_last:]
    for path in doomed:
        # renamed first, so that a kill during the deletion never leaves a half-deleted step_* directory
        aside = root / f"{_TMP_PREFIX}pruned-{path.name}-{os.getpid()}"
        os.rename(path, aside)
        shutil.rmtree(aside, ignore_errors=True)
    return doomed


def clean_stale(root: Path) -> list[Path]:
    """Remove temporary directories left by writers that were killed (call before training starts)."""
    if not root.is_dir():
        return []
    stale = [p for p in root.iterdir() if p.name.startswith(_TMP_PREFIX)]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale
