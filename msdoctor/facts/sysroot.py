"""Where the host's system files are read from.

Ascend and NVIDIA facts come from fixed system paths (``/dev/davinci0``,
``/usr/local/Ascend/driver/version.info``, ``/etc/ascend_install.info``). Tests
that have no such hardware point ``MSDOCTOR_SYSROOT`` at a fixture tree that
mirrors those paths (device nodes as plain files); in normal use it is unset
and the real root ``/`` is read. It is documented in docs/testing.md and is
never needed by users.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

SYSROOT_ENV = "MSDOCTOR_SYSROOT"


def sysroot(environ: Mapping[str, str]) -> Path:
    return Path(environ.get(SYSROOT_ENV) or "/")


def host_path(environ: Mapping[str, str], absolute: str) -> Path:
    """The path of ``absolute`` (e.g. "/usr/local/Ascend") under the sysroot."""
    root = sysroot(environ)
    return root / absolute.lstrip("/") if str(root) != "/" else Path(absolute)
