"""Lay msdoctor out as it is installed, for type checkers and editors: build/static-tree/msdoctor/...

pyproject.toml's package-dir installs checks/ as msdoctor.checks and training/ as msdoctor.training. The default
editable install serves that with an import hook, which static tools do not run. setuptools' strict editable
mode builds, from pyproject.toml itself, a tree of links to the repository's files laid out as the wheel installs
them (PEP 660 build_editable, editable_mode=strict: build/__editable__.msdoctor-<version>-<tag>/). This builds
that tree without installing anything (the venv keeps its default install) and points build/static-tree at it,
a name that does not change with the version. A file added since needs this to run again (scripts/lint.sh
does, each time).

Usage: .venv/bin/python scripts/static_tree.py [PROJECT]   (prints the tree's path)
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

STABLE = Path("build") / "static-tree"


def build(project: Path) -> Path:
    """Build the strict editable tree of ``project`` and return ``project/build/static-tree`` (a link to it)."""
    try:
        from setuptools import build_meta
    except ImportError:
        raise SystemExit(
            f"static_tree: {sys.executable} has no setuptools; install it: "
            f"{sys.executable} -m pip install 'setuptools>=64'"
        ) from None

    here = Path.cwd()
    os.chdir(project)
    try:
        log = io.StringIO()
        with (
            tempfile.TemporaryDirectory() as wheel_dir,
            contextlib.redirect_stdout(log),
            contextlib.redirect_stderr(log),
        ):
            try:
                build_meta.build_editable(wheel_dir, {"editable_mode": "strict"})
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - setuptools' own message, with its log
                last = next((ln for ln in reversed(log.getvalue().splitlines()) if ln.strip()), str(exc))
                raise SystemExit(
                    f"{log.getvalue()}\nstatic_tree: setuptools could not build the tree "
                    f"(its log above): {last.strip()}"
                ) from None
        trees = sorted(Path("build").glob("__editable__.msdoctor-*"), key=lambda p: p.stat().st_mtime)
        if not trees or not (trees[-1] / "msdoctor" / "__init__.py").exists():
            raise SystemExit(
                f"static_tree: no build/__editable__.msdoctor-*/msdoctor after the build\n{log.getvalue()}"
            )
        if STABLE.is_symlink() or STABLE.exists():
            STABLE.unlink()
        STABLE.symlink_to(trees[-1].name)
        return project / STABLE
    finally:
        os.chdir(here)


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
