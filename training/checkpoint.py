"""Checkpoints "often but few": atomic, checksummed, the newest K kept.

A checkpoint is a directory ``step_00000100/`` holding the files its writers produce (model and
optimizer state), ``state.json`` (step, data position, seeds, loss scale) and ``MANIFEST.json``
with the size and SHA-256 of every file. It is written under a temporary name, every file is
fsync'ed, the manifest is written last, and only then is the directory renamed into place: a
process killed at any moment leaves either a complete checkpoint or a ``.tmp-*`` directory that
is never picked and is cleaned up later. Loading verifies the checksums and falls back to the
next older checkpoint when one does not verify.

A checkpoint that fails verification is moved aside to ``corrupt-step_00000100-<UTC time>/``
(kept for inspection, with ``CORRUPT.txt`` saying why; no ``step_*`` glob and no resume picks it)
and is never counted: pruning keeps the newest K checkpoints that verify, and a step whose
checkpoint was moved aside is saved again when training reaches it. Pruning checks the manifest
and every file's size (cheap); resuming and re-saving also check every SHA-256.

This module knows no framework: writers are callables ``fn(path)`` (the trainer passes
``mindspore.save_checkpoint``), so the atomicity is testable on its own.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional

from .errors import TrainerError

MANIFEST = "MANIFEST.json"
STATE = "state.json"
_STEP_DIR = re.compile(r"^step_(\d{8})$")
_TMP_PREFIX = ".tmp-"
CORRUPT_PREFIX = "corrupt-"
CORRUPT_NOTE = "CORRUPT.txt"


class NoSpaceError(TrainerError):
    """The disk filled up while a checkpoint was written (ENOSPC); says how much it needs and how much is free."""

    def __init__(self, root: Path, step: int, needed: Optional[int], free: int, keep_last: Optional[int]) -> None:
        self.needed, self.free = needed, free
        need = f"about {_size(needed)}" if needed else "more than that"
        peak = (
            f"; with checkpoint.keep_last = {keep_last} the directory holds {keep_last} + 1 being written = "
            f"{_size(needed * (keep_last + 1))} at the peak"
            if needed and keep_last
            else ""
        )
        newest = find_latest(root)
        resume = f"continue from step {newest.step} with --resume" if newest else "start again"
        super().__init__(
            f"no space left on the device while writing the checkpoint of step {step} in {root}: a checkpoint needs "
            f"{need}, {_size(free)} are free there{peak}. Free space, lower checkpoint.keep_last, or move "
            f"runtime.output_dir to a larger filesystem; then {resume} (errno ENOSPC; the partial write was removed)"
        )


def _size(n: Optional[int]) -> str:
    if n is None:
        return "?"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


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


def save(
    root: Path,
    step: int,
    writers: Mapping[str, Callable[[Path], None]],
    state: dict,
    keep_last: Optional[int] = None,
    log: Callable[[str], None] = lambda _: None,
    expected_bytes: Optional[int] = None,
) -> Path:
    """Write a complete checkpoint for ``step`` atomically; prune to the newest keep_last.

    Returns the checkpoint directory. An existing complete checkpoint of the same step is kept.

    Raises:
        NoSpaceError: the filesystem filled up (ENOSPC); the partial write is removed first.
            ``expected_bytes`` (the writers' estimate) goes into its message, else the newest
            checkpoint's size.
    """
    try:
        return _save(root, step, writers, state, keep_last, log)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        for tmp in root.glob(f"{_TMP_PREFIX}{step_dir(root, step).name}-{os.getpid()}"):
            shutil.rmtree(tmp, ignore_errors=True)
        newest = find_latest(root)
        needed = expected_bytes or (size_of(newest.path) if newest else None)
        raise NoSpaceError(root, step, needed, shutil.disk_usage(root).free, keep_last) from None


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def _save(
    root: Path,
    step: int,
    writers: Mapping[str, Callable[[Path], None]],
    state: dict,
    keep_last: Optional[int],
    log: Callable[[str], None],
) -> Path:
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
    if final.exists():  # a leftover of the same step that does not verify: kept aside for inspection
        move_aside(final, verify(final) or "replaced")
    os.rename(tmp, final)
    _fsync_path(root)
    if keep_last:
        prune(root, keep_last, log)
    return final


def verify(path: Path, *, checksums: bool = True) -> Optional[str]:
    """None when the checkpoint at path is complete and intact, else why not.

    ``checksums=False`` checks the manifest, the files and their sizes only (no reading of the data).
    """
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"no readable {MANIFEST} ({type(exc).__name__})"
    problem = _manifest_problem(files)
    if problem is not None:  # a hand-edited or foreign manifest: the checkpoint is not trusted, nothing crashes
        return f"{MANIFEST}: {problem}"
    if STATE not in files:
        return f"{STATE} is not listed in the manifest"
    for name, want in files.items():
        f = path / name
        if not f.is_file():
            return f"{name} is missing"
        if f.stat().st_size != want.get("bytes"):
            return f"{name} has {f.stat().st_size} bytes, the manifest says {want.get('bytes')}"
        if checksums and _sha256(f) != want.get("sha256"):
            return f"{name} does not match its SHA-256 in the manifest"
    return None


def _manifest_problem(files: object) -> Optional[str]:
    """Why a manifest's ``files`` is not what save() writes ({plain file name: {"bytes": int, "sha256": str}})."""
    if not isinstance(files, dict):
        return f'"files" is {type(files).__name__}, not an object'
    for name, want in files.items():
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name:
            return f"{name!r} is not a file name inside the checkpoint"
        if (
            not isinstance(want, dict)
            or not isinstance(want.get("bytes"), int)
            or isinstance(want.get("bytes"), bool)
            or not isinstance(want.get("sha256"), str)
        ):
            return f'{name}: expected {{"bytes": integer, "sha256": string}}'
    return None


def _step_dirs(root: Path) -> Iterator[tuple[int, Path]]:
    if not root.is_dir():
        return iter(())
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name)) and p.is_dir()]
    return iter(sorted(found, reverse=True))


def move_aside(path: Path, problem: str) -> Optional[Path]:
    """Rename a checkpoint that failed verification to ``corrupt-<name>-<UTC time>``; returns the new path.

    None when it is gone already (another rank moved it first).
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{CORRUPT_PREFIX}{path.name}-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{CORRUPT_PREFIX}{path.name}-{stamp}-{n}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return None
    try:
        (aside / CORRUPT_NOTE).write_text(
            f"moved aside by the msdoctor trainer at {stamp}: {problem}\n"
            "nothing resumes from this directory; delete it when you have looked\n"
        )
    except OSError:  # a full disk must not stop the fallback to an older checkpoint
        pass
    return aside


def find_latest(
    root: Path, log: Callable[[str], None] = lambda _: None, *, move_corrupt: bool = False
) -> Optional[Checkpoint]:
    """The newest checkpoint that verifies; damaged ones are reported through log and skipped.

    With ``move_corrupt`` (the writer, rank 0) a damaged one is also moved aside (:func:`move_aside`).
    """
    for step, path in _step_dirs(root):
        problem = verify(path)
        if problem is not None:
            aside = move_aside(path, problem) if move_corrupt else None
            log(f"skipping checkpoint {path}: {problem}" + (f"; moved aside to {aside}" if aside else ""))
            continue
        return Checkpoint(path, step, json.loads((path / STATE).read_text()))
    return None


def prune(root: Path, keep_last: int, log: Callable[[str], None] = lambda _: None) -> list[Path]:
    """Delete all but the newest keep_last checkpoints that verify; returns what was deleted.

    One that does not verify (manifest, files and sizes) is moved aside, not counted and not deleted.
    """
    complete = []
    for _, p in _step_dirs(root):
        problem = verify(p, checksums=False)
        if problem is None:
            complete.append(p)
            continue
        aside = move_aside(p, problem)
        log(f"checkpoint {p} does not verify ({problem}): not counted" + (f", moved aside to {aside}" if aside else ""))
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
