"""Reading files a user names (--config, diff reports, explain --log): regular files only, bounded.

A FIFO, a device (/dev/zero), a directory, a symlink loop, a path under a file, or a file
larger than the cap is a :class:`msdoctor.errors.UserError` (exit 2) with the path and what to
do, before a byte is read: nothing here can block or fill memory.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, Union

from msdoctor.errors import UserError

MiB = 1024 * 1024
#: configs (YAML / JSON / TOML): the largest real ones are a few hundred KiB
CONFIG_CAP = 8 * MiB
#: msdoctor JSON reports (diff)
REPORT_CAP = 64 * MiB
#: the most nesting a config or report may have (real ones: under 10 levels)
MAX_DEPTH = 100


def _refuse(label: str, path: Path, why: str, fix: str) -> UserError:
    return UserError(f"{label}{path}: {why}", fix)


def open_regular(path: Union[str, Path], *, label: str = "") -> Any:
    """Open ``path`` for binary reading if it is a regular file; UserError otherwise (never blocks)."""
    path = Path(path).expanduser()
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _refuse(label, path, "no such file", "check the path you passed") from None
    except NotADirectoryError:
        raise _refuse(
            label,
            path,
            "a part of the path before the file name is a file, not a directory",
            "check the path you passed",
        ) from None
    except PermissionError:
        raise _refuse(
            label, path, "permission denied", "make the file readable, or copy it somewhere you can"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(
                label,
                path,
                "a symbolic link loop (the link points back at itself)",
                "point the link at a real file, or pass the file itself",
            ) from None
        raise _refuse(label, path, f"cannot read: {exc.strerror or exc}", "check the path you passed") from None
    if stat.S_ISDIR(st.st_mode):
        raise _refuse(label, path, "is a directory, not a file", "pass the file itself")
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a named pipe (FIFO)"
            if stat.S_ISFIFO(st.st_mode)
            else "a device"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "a socket"
            if stat.S_ISSOCK(st.st_mode)
            else "not a regular file"
        )
        raise _refuse(
            label,
            path,
            f"{kind}, not a regular file: msdoctor reads only regular files",
            "save the content to a file and pass that",
        )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except PermissionError:
        raise _refuse(
            label, path, "permission denied", "make the file readable, or copy it somewhere you can"
        ) from None
    except OSError as exc:
        raise _refuse(label, path, f"cannot read: {exc.strerror or exc}", "check the path you passed") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between stat and open
        os.close(fd)
        raise _refuse(label, path, "not a regular file", "pass a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_bytes(path: Union[str, Path], *, cap: int, label: str = "", what: str = "file") -> bytes:
    """The whole file, at most ``cap`` bytes (a larger one is refused: exit 2)."""
    with open_regular(path, label=label) as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise _refuse(
            label,
            Path(path).expanduser(),
            f"larger than {cap // MiB} MiB; not a {what} msdoctor reads",
            f"pass the {what} itself (real ones are far smaller)",
        )
    return data


def read_text(path: Union[str, Path], *, cap: int, label: str = "", what: str = "file") -> str:
    """The file as UTF-8 text, bounded as :func:`read_bytes`."""
    data = read_bytes(path, cap=cap, label=label, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(
            label, Path(path).expanduser(), f"not UTF-8 text (byte {exc.start})", "save the file as UTF-8"
        ) from None


def depth_of(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of lists/dicts in ``value``, counted without recursion; stops at ``limit + 1``."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((c, depth + 1) for c in children)
    return deepest


def too_deep(path: Path, label: str = "") -> UserError:
    return _refuse(
        label,
        path,
        f"nested more than {MAX_DEPTH} levels deep; not a file msdoctor reads",
        "pass the config or report itself (real ones nest under 10 levels)",
    )


#: project sources the registry scan parses: the largest real modules are a few hundred KiB; the syntax tree of a
#: file takes ~80x its size in memory (a 77 MB module took 5.9 GB), so a larger one is skipped and said so
SOURCE_CAP = 2 * MiB


class NotRead(OSError):
    """A file msdoctor skipped without reading it: not a regular file (a FIFO would block, /dev/zero never ends)
    or over the cap. ``strerror`` says which, for the finding that reports the skip."""


def _kind(mode: int) -> str:
    return (
        "a named pipe (FIFO)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a directory"
        if stat.S_ISDIR(mode)
        else "not a regular file"
    )


def open_bounded(path: Union[str, Path]) -> Any:
    """A binary file object for ``path`` if it is a regular file (opened O_NONBLOCK, so a FIFO cannot block the
    open, then fstat S_ISREG); :class:`NotRead` otherwise. For files found in a project or a data directory."""
    fd = os.open(str(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRead(errno.EINVAL, f"{_kind(mode)}, not a regular file: not read", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Union[str, Path], cap: int = SOURCE_CAP) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes; :class:`NotRead` for anything else."""
    with open_bounded(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > cap:
            raise NotRead(
                errno.EFBIG, f"{size:,} bytes, over the {cap / MiB:g} MiB msdoctor reads: not read", str(path)
            )
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise NotRead(errno.EFBIG, f"over the {cap / MiB:g} MiB msdoctor reads: not read", str(path))
    return data
