"""Files the trainer writes in the run directory, opened without following symbolic links.

A run directory can come from elsewhere (a shared disk, an unpacked archive, a cloned project): a
``train.log``, ``stderr.log`` or ``.msdoctor.lock`` there that is a symbolic link would make the trainer
append to, truncate or lock whatever it points at. Every such file is opened with ``O_NOFOLLOW`` (a link
is refused, ELOOP) and ``O_NONBLOCK`` (a FIFO cannot block the open), then checked to be a regular file.
This module is the trainer's own (training/ imports nothing from msdoctor outside msdoctor.training).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, Any, Union

from .errors import TrainerError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_fd(path: Union[str, Path], flags: int, mode: int = 0o644) -> int:
    """``os.open`` of a regular file that is not a symbolic link; TrainerError naming the file otherwise."""
    try:
        fd = os.open(str(path), flags | NOFOLLOW | CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TrainerError(
                f"{path} is a symbolic link; the trainer does not write through links in the run "
                "directory (it would change the file it points at)",
            ) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise TrainerError(
            f"{path} is not a regular file (a FIFO, a device or a directory); remove it or use another run directory"
        )
    os.set_blocking(fd, True)
    return fd


def open_append(path: Union[str, Path], binary: bool = False, **kw: Any) -> IO[Any]:
    """``open(path, "a")`` without following a link (see the module)."""
    fd = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    return os.fdopen(fd, "ab" if binary else "a", **kw)


def open_new(path: Union[str, Path], **kw: Any) -> IO[Any]:
    """``open(path, "w")`` of a scratch file: whatever has the name (a planted link too) is removed first, and
    the file is created with O_EXCL, so it is always a new file."""
    try:
        os.unlink(str(path))
    except FileNotFoundError:
        pass
    fd = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    return os.fdopen(fd, "w", **kw)
