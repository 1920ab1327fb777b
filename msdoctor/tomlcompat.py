"""The one TOML reader: the standard library's tomllib (Python >= 3.11), else tomli, its backport with the same
API (https://github.com/hukkin/tomli; a dependency on Python < 3.11, see pyproject.toml)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

__all__ = ["tomllib"]
