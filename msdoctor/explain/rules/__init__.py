"""General rules over the structure of a pasted error: each reads the frames, pip's lines or the values a message
names, and answers with a cause, a fix marked unverified and the check that confirms it, or makes no claim.

A catalogue entry whose ``lookup`` names a rule matches only its line; :func:`claim` dispatches on the lookup to the
rule (``_CLAIMS``). The rules live by family:

- :mod:`.common`: the frames of a traceback (plain and rich), the frame that raised, pip's version lines, the
  versions a paste shows;
- :mod:`.imports`: import errors, names a module lacks, namespace packages, circular imports, two interpreters,
  a module that is not the distribution pip lists, variants of one package;
- :mod:`.removed`: names and modules a release removed, modules pip does not install (compat_matrix/modules.toml);
- :mod:`.packaging`: wheels, distributions, Requires-Python, the resolver's conflicts, source builds,
  requirements, build isolation, the MindSpore wheel;
- :mod:`.native`: runtime libraries, CUDA builds, the Ascend loader, NumPy's C API, CANN's ACL codes;
- :mod:`.launch`: ports, the scheduler's variables, device access;
- :mod:`.calls`: a keyword, a signature or an operator's parameter check that a call does not fit;
- :mod:`.env`: the environment around a run (the lookups of ``catalogue.ENV_LOOKUPS``).
"""

from __future__ import annotations

from typing import Callable, Sequence

from msdoctor.explain.rules.calls import keyword_groups, opcheck_groups, signature_groups, wrapped_arguments
from msdoctor.explain.rules.imports import circular_groups, import_groups, pairing_groups, version_shadow_groups
from msdoctor.explain.rules.native import acl_code_groups
from msdoctor.explain.rules.packaging import (
    build_groups,
    conflict_groups,
    distribution_groups,
    requirement_groups,
    requires_python_groups,
    wheel_groups,
)
from msdoctor.explain.rules.removed import numpy_removed_groups


# -- the rules that claim or say nothing, by the catalogue's lookup name --------------------------------------------
def _signature(g: dict[str, str], before: Sequence[str], after: Sequence[str]) -> dict[str, str]:
    if g.get("kw"):
        what = f"no keyword argument {g['kw']}"
    elif g.get("n"):
        args = g.get("args") or wrapped_arguments(after[:1])
        what = f"{g['n']} required {g.get('kind', '')} argument(s) not passed" + (f": {args}" if args else "")
    else:
        what = f"{g.get('given', '?')} positional arguments given, {g.get('takes', '?')} taken"
    return signature_groups(g.get("func") or g.get("func2") or g.get("func3") or "", what, before)


def _requirement(g: dict[str, str], context: Sequence[str]) -> dict[str, str]:
    return requirement_groups(
        g.get("req") or g.get("req2", ""),
        g.get("dist") or g.get("dist2", ""),
        g.get("found") or g.get("found2", ""),
        " ".join(x for x in (g.get("who"), g.get("whover")) if x),
        context,
    )


def _env_claims() -> dict[str, Callable[[dict[str, str], Sequence[str], str, Sequence[str]], dict[str, str]]]:
    from msdoctor.explain.rules.env import CLAIMS as env

    return env


#: lookup -> the rule, given the matched groups, the lines before, the matched line and the lines after
_CLAIMS: dict[str, Callable[[dict[str, str], Sequence[str], str, Sequence[str]], dict[str, str]]] = {
    "import": lambda g, b, line, a: import_groups(g.get("mod", ""), b, a),
    "pairing": lambda g, b, line, a: pairing_groups(
        g.get("name") or g.get("attribute", ""), g.get("module") or g.get("owner", ""), b, line, a
    ),
    "keyword": lambda g, b, line, a: keyword_groups(g.get("func", ""), g.get("kw", ""), b),
    "conflict": lambda g, b, line, a: conflict_groups(a),
    "opcheck": lambda g, b, line, a: opcheck_groups(g.get("op", ""), g.get("param", ""), g.get("code", ""), b),
    "signature": lambda g, b, line, a: _signature(g, b, a),
    "version": lambda g, b, line, a: version_shadow_groups(g.get("mod", ""), (*b, line, *a)),
    "circular": lambda g, b, line, a: circular_groups(
        g.get("name") or g.get("attribute", ""), g.get("module") or g.get("owner", ""), b
    ),
    "requirement": lambda g, b, line, a: _requirement(g, (*b, line, *a)),
    "build": lambda g, b, line, a: build_groups(g.get("pkg") or g.get("pkg2") or g.get("pkg3") or "", (*b, line, *a)),
    "wheel": lambda g, b, line, a: wheel_groups(g.get("wheel", ""), (*b, line, *a)),
    "distribution": lambda g, b, line, a: distribution_groups(g.get("req") or g.get("req2", ""), (*b, line, *a)),
    "requires-python": lambda g, b, line, a: requires_python_groups(
        g.get("pkg", ""), g.get("have", ""), g.get("spec", "")
    ),
    "removed": lambda g, b, line, a: numpy_removed_groups(g, b, a),
    "aclcode": lambda g, b, line, a: acl_code_groups(g.get("acl", ""), g.get("call", ""), line, (*b, *a)),
}
_CLAIMS.update(_env_claims())
CLAIMS = frozenset(_CLAIMS)


def claim(
    lookup: str, groups: dict[str, str], before: Sequence[str], line: str, after: Sequence[str]
) -> dict[str, str]:
    """The answer of the rule a catalogue entry's lookup names: cause, fix and check, or empty (no claim)."""
    return _CLAIMS[lookup](groups, before, line, after)
