"""Files that ship with msdoctor, by the path they have here, for messages and help texts that point at them,
and the data files msdoctor reads (compat_matrix/).

docs/ is installed as ``msdoctor.docs`` and training/ as ``msdoctor.training`` (pyproject.toml
package-dir): a wheel puts them under site-packages/msdoctor/, a clone's editable install reads the
clone's own folders. A message names the file this msdoctor has, not a path in a clone the user may
not have: ``path("docs/memory.md")``.
"""

from __future__ import annotations

from pathlib import Path


def path(rel: str) -> str:
    """The path here of a file or folder named as in the repository: ``docs/...`` or ``training/...``."""
    top, _, rest = rel.partition("/")
    folder = _folder(top)
    return str(folder / rest) if rest else str(folder)


def read_text(rel: str) -> str:
    """The text of a shipped file named as in the repository (``compat_matrix/stack.toml``), read from disk: no
    importlib.resources on every run (it brings zipfile and its readers; msdoctor is never installed zipped)."""
    return Path(path(rel)).read_text(encoding="utf-8")


def _folder(top: str) -> Path:
    if top == "training":
        import msdoctor.training

        return Path(msdoctor.training.__file__).resolve().parent
    if top == "compat_matrix":
        import msdoctor.compat_matrix

        return Path(msdoctor.compat_matrix.__file__).resolve().parent
    if top != "docs":
        raise ValueError(f"{top}/ is not a shipped folder of msdoctor (compat_matrix/, docs/, training/)")
    try:
        import msdoctor.docs
    except ImportError:  # an editable install made before msdoctor.docs existed: the clone's docs/ is beside msdoctor/
        import msdoctor

        return Path(msdoctor.__file__).resolve().parent.parent / "docs"
    return Path(msdoctor.docs.__file__).resolve().parent
