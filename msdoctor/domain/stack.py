"""The training stack: compat_matrix/stack.toml read once, each package with its role.

Every reader of "is this package part of the training stack" asks here: version-matrix (a broken requirement
fails), duplicate-installs (a second copy fails), python-env (a user-site copy), the preflight's per-rank versions
and the report's package table. The file is validated by the compat matrix's schema (msdoctor/matrix_schema.py,
kind "stack"); a broken packaged file raises MatrixError with file, line and row.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Optional

from msdoctor.matrix_schema import NEAR_STACK_ROLES, STACK_ROLES, validate

FILE = "stack.toml"


@dataclass(frozen=True)
class StackPackage:
    name: str  # canonical distribution name
    role: str  # one of STACK_ROLES or NEAR_STACK_ROLES
    source: str

    @property
    def in_stack(self) -> bool:
        """Part of the training stack proper (not a notebook package or msdoctor itself)."""
        return self.role in STACK_ROLES


def canonical(name: str) -> str:
    """A distribution name as PEP 503 normalises it (``Jupyter_Client`` -> ``jupyter-client``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(text: str, path: str = f"compat_matrix/{FILE}") -> tuple[StackPackage, ...]:
    """The rows of a stack file's text, in file order (raises MatrixError)."""
    _, _, tables = validate(text, path, "stack", deep=True)  # names and roles: cheap to check in full
    return tuple(StackPackage(r["name"], r["role"], r["source"]) for r in tables["package"])


@functools.lru_cache(maxsize=1)
def packages() -> tuple[StackPackage, ...]:
    """The packaged compat_matrix/stack.toml, parsed once per process."""
    from msdoctor.shipped import read_text

    return parse(read_text(f"compat_matrix/{FILE}"))


@functools.lru_cache(maxsize=1)
def training_stack() -> frozenset[str]:
    """Canonical names of the training stack (roles in STACK_ROLES)."""
    return frozenset(p.name for p in packages() if p.in_stack)


def listed(*roles: str) -> tuple[str, ...]:
    """Names in file order: the training stack, then the packages of ``roles`` (from NEAR_STACK_ROLES)."""
    unknown = [r for r in roles if r not in NEAR_STACK_ROLES]
    if unknown:
        raise ValueError(f"not a role listed beside the stack: {unknown}")
    return tuple(p.name for p in packages() if p.in_stack or p.role in roles)


def in_stack(*names: Optional[str]) -> bool:
    """Whether any of ``names`` (distribution names, any spelling) is in the training stack."""
    stack = training_stack()
    return any(canonical(n) in stack for n in names if n)
