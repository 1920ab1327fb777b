"""Which interpreter a pyenv shim runs, by pyenv's own rules, without starting it.

A pyenv shim (``$PYENV_ROOT/shims/python3``) is a bash script that runs ``pyenv exec``; one
``python3 -c pass`` through it starts about 30 bash processes (``strace -f -e trace=execve`` shows
them) and costs 0.1-0.2 s of CPU before Python starts. msdoctor probes ``python`` and ``python3``
on PATH in every run, so it reads pyenv's choice itself, following pyenv 2.x
(https://github.com/pyenv/pyenv#understanding-python-version-selection, and in the pyenv
repository libexec/pyenv-version-name, pyenv-version-file, pyenv-version-file-read, pyenv-which):

1. ``PYENV_VERSION``, else the first ``.python-version`` found from ``PYENV_DIR`` (default: the
   working directory) upwards, else ``$PYENV_ROOT/version``; one version per line or per
   ``:``, comments and blank lines skipped;
2. each named version must be a directory ``$PYENV_ROOT/versions/<name>`` (a leading
   ``python-`` is dropped when only that exists);
3. the first of them whose ``bin/<command>`` is executable runs.

Whatever these rules do not settle with certainty (``system``, a version prefix that pyenv
resolves with ``pyenv latest``, an unsafe name, a ``version-name`` hook, a ``which`` hook this
module does not know, a command no version has) returns None, and the caller runs the shim as before.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, Optional

_ROOT_LINE = re.compile(r'^export PYENV_ROOT="([^"\n]+)"$', re.M)
_EXEC_LINE = re.compile(r'^exec "([^"\n]+)" exec "\$program" "\$@"$', re.M)
#: pyenv-virtualenv's ``which`` hooks act only when the command is missing from the version (read
#: in pyenv-virtualenv's etc/pyenv.d/which/): a version that has the command is decided without them.
_KNOWN_WHICH_HOOKS = frozenset({"python-config.bash", "system-site-packages.bash", "conda.bash"})


def shim_of(path: str) -> Optional[tuple[str, str]]:
    """(PYENV_ROOT, the pyenv executable) when ``path`` is a pyenv shim (pyenv-rehash's prototype shim)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2048)
    except OSError:
        return None
    if not head.startswith(b"#!/usr/bin/env bash") or b'exec "$program"' not in head:
        return None
    text = head.decode("utf-8", "replace")
    root, exe = _ROOT_LINE.search(text), _EXEC_LINE.search(text)
    if root is None or exe is None:
        return None
    return root.group(1), exe.group(1)


def _hook_dirs(root: str, pyenv_exe: str, environ: Mapping[str, str]) -> list[str]:
    """PYENV_HOOK_PATH as libexec/pyenv builds it."""
    dirs = [d for d in environ.get("PYENV_HOOK_PATH", "").split(":") if d]
    dirs.append(os.path.join(root, "pyenv.d"))
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(pyenv_exe)))
    if prefix != root:
        dirs.append(os.path.join(prefix, "pyenv.d"))
    dirs += ["/usr/etc/pyenv.d", "/usr/local/etc/pyenv.d", "/etc/pyenv.d", "/usr/lib/pyenv/hooks"]
    plugins = os.path.join(root, "plugins")
    try:
        dirs += [os.path.join(plugins, p, "etc", "pyenv.d") for p in sorted(os.listdir(plugins))]
    except OSError:
        pass
    return dirs


def _hooks(dirs: list[str], command: str) -> set[str]:
    found: set[str] = set()
    for d in dirs:
        try:
            found |= {n for n in os.listdir(os.path.join(d, command)) if n.endswith(".bash")}
        except OSError:
            continue
    return found


def _version_file(root: str, environ: Mapping[str, str], cwd: str) -> str:
    def local(start: str) -> Optional[str]:
        d = os.path.abspath(start)
        while True:
            cand = os.path.join(d, ".python-version")
            if os.path.isfile(cand):
                return cand
            parent = os.path.dirname(d)
            if parent == d:
                return None
            d = parent

    pyenv_dir = environ.get("PYENV_DIR") or cwd
    found = local(pyenv_dir) or (local(cwd) if pyenv_dir != cwd else None)
    return found or os.path.join(root, "version")


def _read_versions(path: str) -> Optional[list[str]]:
    """The names in a version file (pyenv-version-file-read); None when one is unsafe."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(64 * 1024).splitlines()
    except OSError:
        return []
    names = []
    for line in lines:
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == ".." or "/" in words[0]:
            return None  # pyenv checks these against PYENV_ROOT/versions: leave it to pyenv
        names.append(words[0])
    return names


def resolve_shim(path: str, environ: Mapping[str, str], cwd: Optional[str] = None) -> Optional[str]:
    """The interpreter the pyenv shim ``path`` would run, or None when only pyenv itself can say."""
    shim = shim_of(path)
    if shim is None:
        return None
    root, pyenv_exe = shim
    command = os.path.basename(path)
    dirs = _hook_dirs(root, pyenv_exe, environ)
    if _hooks(dirs, "version-name") or not _hooks(dirs, "which") <= _KNOWN_WHICH_HOOKS:
        return None
    here = cwd or os.getcwd()
    if environ.get("PYENV_VERSION"):
        names: Optional[list[str]] = [n for n in environ["PYENV_VERSION"].split(":") if n]
    else:
        names = _read_versions(_version_file(root, environ, here))
    if not names:
        return None  # no version set: pyenv runs the system Python
    versions = []
    for name in names:
        if name == "system":
            return None
        plain = name[len("python-") :] if name.startswith("python-") else name
        if os.path.isdir(os.path.join(root, "versions", name)):
            versions.append(name)
        elif os.path.isdir(os.path.join(root, "versions", plain)):
            versions.append(plain)
        else:
            return None  # a prefix such as 3.11 (pyenv latest) or a version that is not installed
    for v in versions:
        cand = os.path.join(root, "versions", v, "bin", command)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None
