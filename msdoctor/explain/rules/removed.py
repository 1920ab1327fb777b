"""Names and modules a release of their distribution removed, and modules that no pip distribution installs under
that name (compat_matrix/modules.toml), read against the versions and the frames the paste shows."""

from __future__ import annotations

import re
from typing import Optional, Sequence

from msdoctor.explain.owners import file_owner, frame_owner
from msdoctor.explain.rules.common import _MACHINERY, _dist_shown, _python_shown, _top, _vtuple, frames


# -- a name (or module) that a release of its distribution removed (compat_matrix/modules.toml) ----------------------
#: a frame of the standard library itself (`.../lib/python3.12/ctypes/__init__.py`, `...\Lib\pkgutil.py`), not of a
#: package in its site-packages
_STDLIB_FRAME = re.compile(
    r"[/\\]lib[/\\]python\d\.\d+[/\\](?!(?:site|dist)-packages)|[/\\]Lib[/\\](?!site-packages)"
    r"[\w.]+\.py$"
)


def _user_of(before: Sequence[str], dist: str, module: str) -> Optional[str]:
    """The frame that used the removed name: the last one that is neither the import machinery, the standard library,
    nor the removing distribution's own code (NumPy's ``__getattr__`` raises on behalf of its caller)."""
    top = _top(module)
    for path in reversed(frames(before)):
        if _MACHINERY.search(path):
            continue
        owner = file_owner(path)
        if owner is not None and owner.name.lower() in (top.lower(), dist.lower()):
            continue
        if owner is None and _STDLIB_FRAME.search(path) and dist == "Python":
            continue
        return path
    return None


_PACKAGING_TOOLS = ("setuptools", "pkg_resources", "pip", "_distutils_hack")


def removed_groups(
    name: str, module: str, before: Sequence[str], after: Sequence[str] = (), release: str = "", said: bool = False
) -> dict[str, str]:
    """``module M has no attribute N`` / ``cannot import name N from M`` / ``No module named M`` (no ``name``) where
    compat_matrix/modules.toml says a release R of M's distribution removed it: the code that uses it, or the package
    whose frame raised, was written for a release before R. No claim when the data does not say so, or when the paste
    shows a version older than R (then the name was not removed: another cause). ``said``: the error message itself
    names the release that removed it (NumPy 2's), so the release that runs is R or newer."""
    from msdoctor.explain.owners import removal_of

    r = removal_of(module, name)
    if r is None:
        return {}
    release = release or r.release
    context = (*before, *after)
    shown = _python_shown(context) if r.dist == "Python" else _dist_shown(r.dist, context)
    if shown and _vtuple(shown) < _vtuple(release):
        return {}  # the installed release still has it: not this
    label = "Python" if r.dist == "Python" else r.dist
    what = f"{module}.{name}" if name else module
    installed = f"{label} {shown}" if shown else f"{label} {release} or newer"
    path = _user_of(before, r.dist, module)
    owner = frame_owner(path) if path else None
    if owner is not None and owner.name.lower() in _PACKAGING_TOOLS:
        lib = "setuptools" if owner.name.lower() in ("pkg_resources", "_distutils_hack") else owner.name
        build_env = "pip-build-env" in path  # type: ignore[operator]
        user = f"{lib} (its frame {path}{', in the build environment pip made for a package being built' if build_env else ''})"
        fix = (
            (
                "This pip cannot run on this Python, so it cannot upgrade itself: reinstall it with the pip this "
                "Python bundles, `{python} -m ensurepip --upgrade` (or get-pip.py, https://pip.pypa.io/en/stable/"
                "installation/), then `{python} -m pip install -U setuptools`"
                if lib == "pip"
                else "Upgrade the packaging tools in this environment: `{python} -m pip install -U pip setuptools`"
            )
            + (
                f"; the build environment installs the setuptools the package's own build requirements name "
                f"(pyproject.toml [build-system]): install a release of that package made for {label} {release}, or "
                f"build it with `--no-build-isolation` once a current setuptools is installed"
                if build_env
                else ""
            )
            + f", or run it with a {label} older than {release}."
        )
    elif owner is not None:
        user = f"{owner.name} (its frame {path}: {owner.why})"
        fix = f"Install the {owner.name} release made for {installed} (`{{python}} -m pip install -U {owner.name}`)" + (
            f", or run it with a Python older than {release} (a venv made from it)."
            if r.dist == "Python"
            else f', or a {label} older than {release} for it: `{{python}} -m pip install "{r.dist}<{release}"`.'
        )
    else:
        user = f"your code ({path})" if path else "the code that uses it (its frame is not in the paste)"
        fix = f"Change the code to {r.instead}" + (
            f", or run it with a Python older than {release}."
            if r.dist == "Python"
            else f', or install a {label} older than {release}: `{{python}} -m pip install "{r.dist}<{release}"`.'
        )
    check = "`{python} --version`" if r.dist == "Python" else f"`{{python}} -m pip show {r.dist}` (its Version)"
    return {
        "_title": f"{what} was removed in {label} {release}: {user.split(' (')[0]} was written for an older {label}",
        "_cause": (
            f"{label} {release} removed {what} ({r.source}), and {user} still uses it"
            + (
                f"; the interpreter runs {installed}."
                if shown
                else f"; the interpreter runs {installed} (the message itself says so)."
                if said
                else f": that is the error if the interpreter runs {installed} (the paste does not show which "
                f"release runs)."
            )
            + f" Replaced by: {r.instead}."
        ),
        "_fix": fix + f" Unverified: {check} shows the release that runs.",
        "rule": "name-removed",
        "removed_in": f"{label} {release}",
        **({"frame": path} if path else {}),
    }


def module_shipper_groups(module: str) -> dict[str, str]:
    """``No module named M`` for a module that pip does not install (CPython's optional extensions): who ships it and
    what provides it (compat_matrix/modules.toml); empty when the data does not name M."""
    from msdoctor.explain.owners import module_shipper

    s = module_shipper(_top(module))
    if s is None:
        return {}
    return {
        "_title": f"this Python has no {s.module}: it is part of {s.owner.split(' (')[0]}, not a pip package",
        "_cause": f"{s.module} is shipped by {s.owner}. {s.cause}",
        "_fix": s.fix.replace("{module}", s.module) + f" Unverified: `{s.check}` confirms it ({s.source}).",
        "rule": "module-shipper",
    }


#: NumPy 2's own message names the name and the release (numpy/__init__.py, __expired_attributes__)
def numpy_removed_groups(g: dict[str, str], before: Sequence[str], after: Sequence[str]) -> dict[str, str]:
    return removed_groups(g.get("name", ""), "numpy", before, after, g.get("rel", ""), said=bool(g.get("rel")))
