"""Files msdoctor writes for users: atomically (temp file + rename), with a backup.

Every name msdoctor creates next to a user's file (the backup, the temp file) is created with
``O_CREAT | O_EXCL | O_NOFOLLOW``: a name that exists in any form, a dangling symbolic link
included, is taken, so a link planted in a cloned repository can never make msdoctor create or
fill the file it points at. A write that fails (a read-only file system, a full disk, a path
under a file) is a :class:`WriteError`: an ``OSError`` for callers that handle one, and a
:class:`msdoctor.errors.UserError` (exit 2, the path and the fix) for those that do not.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path
from typing import Optional, Union

from msdoctor.errors import UserError

#: flags of every file msdoctor creates for a user: a new name only, never through a link
CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class WriteError(UserError, OSError):
    """A file msdoctor writes could not be written: the path, the reason and what to do (exit 2)."""

    def __init__(self, path: Union[str, Path], exc: OSError, what: str = "write") -> None:
        reason, fix = _why(exc, Path(path))
        message = f"cannot {what} {path}: {reason}"
        OSError.__init__(self, exc.errno, message, str(path))
        UserError.__init__(self, message, fix)

    def __str__(self) -> str:
        return UserError.__str__(self)


def _why(exc: OSError, path: Path) -> tuple[str, str]:
    code = exc.errno
    where = path.parent if str(path.parent) else Path(".")
    if code == errno.ENOSPC or code == getattr(errno, "EDQUOT", -1):
        return (
            "no space left on the device (or the quota is used up)",
            f"free space on the file system of {where} (df -h {where}), or choose another directory",
        )
    if code == errno.EROFS:
        return "the file system is read-only", "choose a directory on a writable file system"
    if code == errno.ENOTDIR:
        return ("a part of the path is a file, not a directory", "choose a path whose parents are directories")
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied", f"choose a path you can write to, or fix the permissions of {where}"
    if code == errno.EEXIST:
        return "the name is taken (a file or a symbolic link is there)", "remove it or choose another name"
    if code == errno.ELOOP:
        return "it is a symbolic link; msdoctor does not write through links", "remove the link or choose another name"
    if code == errno.EISDIR:
        return "it is a directory", "name a file inside it"
    if code == errno.ENAMETOOLONG:
        return "the name is too long", "choose a shorter path"
    return (exc.strerror or str(exc)), "check the path and the file system"


def why_unwritable(directory: Union[str, Path]) -> Optional[tuple[str, str]]:
    """Why msdoctor cannot create files in the existing ``directory`` (the reason and the fix, as a failed
    write would say them: a read-only file system, permission denied), or None when it can."""
    directory = Path(directory)
    if os.access(directory, os.W_OK | os.X_OK):
        return None
    try:
        read_only = bool(os.statvfs(directory).f_flag & getattr(os, "ST_RDONLY", 1))
    except OSError:
        read_only = False
    code = errno.EROFS if read_only else errno.EACCES
    return _why(OSError(code, os.strerror(code)), directory / "x")


def make_dirs(path: Union[str, Path], flag: str = "") -> Path:
    """``mkdir -p`` of a directory msdoctor writes into (--out, --log-dir, a run directory); WriteError (exit 2)
    naming the option, the path and the fix when it cannot be made (under a file, read-only, no space)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(path, exc, f"create {flag + ' ' if flag else ''}directory") from None
    return path


def create_new(path: Union[str, Path], mode: int = 0o600) -> int:
    """A descriptor of a file created at ``path`` by this call (FileExistsError when the name is taken in any
    form, a dangling link included)."""
    return os.open(str(path), CREATE_NEW, mode)


def open_log(path: Union[str, Path], mode: int = 0o644, append: bool = False) -> int:
    """A descriptor for writing a log msdoctor owns (created or truncated; appended with ``append``), opened
    without following a symbolic link (ELOOP for a link) and refused unless it is a regular file."""
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | (os.O_APPEND if append else os.O_TRUNC)
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NONBLOCK", 0)
    )
    fd = os.open(str(path), flags, mode)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    os.set_blocking(fd, True)
    return fd


def _candidates(path: Path):  # type: ignore[no-untyped-def]
    yield path.with_name(path.name + ".bak")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    yield path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while True:
        yield path.with_name(f"{path.name}.{stamp}-{n}.bak")
        n += 1


def backup_path(path: Path) -> Path:
    """``settings.json.bak``, or a timestamped name when that one is taken (a dangling link counts as taken).

    Only a hint of the name: :func:`make_backup` creates the file exclusively."""
    for cand in _candidates(path):
        if not os.path.lexists(cand):
            return cand
    raise AssertionError("unreachable")  # pragma: no cover


def make_backup(path: Path, data: Optional[bytes] = None) -> Path:
    """A copy of ``path`` (or ``data``) in a new file next to it: the first free ``.bak`` name, created with
    O_EXCL|O_NOFOLLOW, so a name that exists (a dangling link too) is skipped, never written through."""
    path = Path(path)
    if data is None:
        with open(path, "rb") as src:
            data = src.read()
    mode = 0o600
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        pass
    for n, cand in enumerate(_candidates(path)):
        try:
            fd = create_new(cand, mode)
        except FileExistsError:
            if n > 10_000:
                raise
            continue
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            _unlink(cand)
            raise
        return cand
    raise AssertionError("unreachable")  # pragma: no cover


def _unlink(path: Union[str, Path]) -> None:
    try:
        os.unlink(str(path))
    except OSError:
        pass


def _temp_name(path: Path) -> tuple[int, str]:
    for _ in range(1000):
        tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return create_new(tmp, 0o600), str(tmp)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


def atomic_write(
    path: Union[str, Path], data: Union[str, bytes], *, backup: bool = True, mode: Optional[int] = None
) -> Optional[Path]:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half of one.

    Args:
        path: the file to write (its directory must exist).
        data: text (written as UTF-8) or bytes.
        backup: copy an existing file to a ``.bak`` next to it first (:func:`make_backup`).
        mode: permission bits for the new file (default: those of the file it
            replaces, else 0o644).

    Returns:
        The backup's path, when one was made.

    Raises:
        WriteError: an OSError that names the path and the fix (exit 2 when uncaught).
    """
    path = Path(path)
    try:
        return _atomic_write(path, data, backup, mode)
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(path, exc) from None


def _atomic_write(path: Path, data: Union[str, bytes], backup: bool, mode: Optional[int]) -> Optional[Path]:
    made_backup = None
    if backup and path.is_file():
        made_backup = make_backup(path)
    if mode is None:
        mode = path.stat().st_mode & 0o7777 if path.is_file() else 0o644
    payload = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    fd, tmp = _temp_name(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
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
    from msdoctor.inputs import CONFIG_CAP, read_bytes

    raw = read_bytes(path, cap=CONFIG_CAP, what="settings file").decode("utf-8")
    nl = "\r\n" if "\r\n" in raw else "\n"
    return raw.replace("\r\n", "\n"), nl


def with_newlines(text: str, nl: str) -> str:
    """``text`` (with "\\n" line ends) with ``nl`` line ends."""
    return text.replace("\n", nl) if nl != "\n" else text
