"""Files msdoctor writes for users: atomically (temp file + rename), with a backup."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Optional, Union


def backup_path(path: Path) -> Path:
    """``settings.json.bak``, or a timestamped name when that one exists already."""
    first = path.with_name(path.name + ".bak")
    if not first.exists():
        return first
    stamp = time.strftime("%Y%m%d-%H%M%S")
    cand = path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while cand.exists():
        cand = path.with_name(f"{path.name}.{stamp}-{n}.bak")
        n += 1
    return cand


def atomic_write(path: Union[str, Path], data: Union[str, bytes], *, backup: bool = True, mode: Optional[int] = None) -> Optional[Path]:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half of one.

    Args:
        path: the file to write (its directory must exist).
        data: text (written as UTF-8) or bytes.
        backup: copy an existing file to a ``.bak`` next to it first.
        mode: permission bits for the new file (default: those of the file it
            replaces, else 0o644).

    Returns:
        The backup's path, when one was made.
    """
    path = Path(path)
    made_backup = None
    if path.exists() and backup:
        made_backup = backup_path(path)
        shutil.copy2(path, made_backup)
    if mode is None:
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)
    return made_backup


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(str(directory), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_text_newlines(path: Union[str, Path]) -> tuple[str, str]:
    """A text file's content with "\\n" line ends, and the line end it uses ("\\r\\n" or "\\n").

    For files msdoctor edits for a user (.vscode/*.json): :func:`with_newlines` puts the file's own
    line ends back, so a CRLF file stays CRLF.
    """
    raw = Path(path).read_bytes().decode("utf-8")
    nl = "\r\n" if "\r\n" in raw else "\n"
    return raw.replace("\r\n", "\n"), nl


def with_newlines(text: str, nl: str) -> str:
    """``text`` (with "\\n" line ends) with ``nl`` line ends."""
    return text.replace("\n", nl) if nl != "\n" else text
