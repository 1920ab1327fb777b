"""The rules over an import that failed: the structure of the traceback and the owners of its frames.

A catalogue entry with ``lookup = "import"`` or ``lookup = "pairing"`` matches only the final exception line; the
rule here reads the frames printed before it (``File "PATH", line N, in F``), decides who owns the file that raised
(:func:`msdoctor.explain.owners.file_owner`) and answers from that structure:

- ``No module named M`` raised in a file of package P:
  - M's top-level package is another than P and M has no dot: M is a dependency of P that is not installed;
  - M is P's own compiled part (a component starting with ``_``: ``torch._C``, ``mindspore._c_expression``):
    when P's file lies outside site-packages in a directory named P (a source checkout), that source tree shadows
    the installed package; in site-packages, the install lacks its compiled part (a checkout's own plain module
    that is missing, ``pkg.decorators``, is neither: no claim);
- ``cannot import name N from M`` / ``module M has no attribute N`` raised in a file of package L, M another
  package: L and M are releases that do not pair.

Where the frames do not tell (no frame, the raising file is the user's own), the rule makes no claim: the match is
dropped. A rule's answer yields to any other entry that explains the same line.

The same family: a name missing from a module (or a namespace package), a module used while it is still being
imported, two interpreters in one paste, a module imported that is not the distribution pip lists, and two
distributions that ship the same module.
"""

from __future__ import annotations

import re
import sys
from typing import Optional, Sequence

from msdoctor.explain.owners import (
    checkout_owner,
    distributions_of,
    file_owner,
    frame_owner,
    import_name_hint,
    known_package,
)
from msdoctor.explain.rules.common import (
    _MACHINERY,
    _SITE,
    _checkout_of,
    _normal_dist,
    _pip_versions,
    _raising_path,
    _same_version,
    _top,
    _unprefixed,
    frames,
)
from msdoctor.explain.rules.packaging import build_isolation_groups
from msdoctor.explain.rules.removed import module_shipper_groups, removed_groups


def import_groups(module: str, before: Sequence[str], after: Sequence[str] = ()) -> dict[str, str]:
    """Cause, fix and check for ``No module named MODULE``: a module a release removed, or one pip does not install
    (compat_matrix/modules.toml), else from the frames before it, else from two interpreters the paste shows
    (:func:`interpreters_groups`); empty: no claim."""
    found = (
        removed_groups("", module, before, after)
        or module_shipper_groups(module)
        or build_isolation_groups(module, before, after)
        or _import_frame_groups(module, before)
    )
    return found or interpreters_groups(module, (*before, *after))


def _import_frame_groups(module: str, before: Sequence[str]) -> dict[str, str]:
    path = _raising_path(before)
    if path is None:
        return {}
    top = _top(module)
    private = any(part.startswith("_") for part in module.split(".")[1:])
    owner = file_owner(path)
    if private and (_checkout_of(path, top) or (owner is not None and owner.name == top)):
        where = "a source tree" if _checkout_of(path, top) else "an install"
        return {
            "_title": f"{top} was imported from {where} without its compiled part ({module})",
            "_cause": (
                f"{module} is {top}'s own compiled part, and the {top} that raised is {path}"
                + (
                    f", a directory named {top} outside site-packages: a source checkout (the current "
                    f"directory, or one on PYTHONPATH) shadows the installed {top}, and the checkout holds no "
                    f"built {module}."
                    if where == "a source tree"
                    else ": that install lacks it (two distributions overwrote each other's files, or the wheel is "
                    "for another Python or platform)."
                )
            ),
            "_fix": (
                f"Start Python from another directory than the source tree, and remove it from PYTHONPATH; "
                f"`{{python}} -c \"import importlib.util as u; print(u.find_spec('{top}').origin)\"` shows which "
                f"{top} is imported. If that is site-packages, reinstall {top}: `{{python}} -m pip install "
                f"--force-reinstall --no-deps {top}`. Unverified: confirm with `msdoctor check --only "
                f"duplicate-installs` first."
            ),
            "rule": "shadowed-install",
            "frame": path,
        }
    if owner is None or "." in module or owner.name.lower() == top.lower():
        return {}  # the user's own file, or a submodule (its package exists: a pairing, not a missing dependency)
    if top in getattr(sys, "stdlib_module_names", ()):
        return {}  # part of Python itself (https://docs.python.org/3/library/sys.html#sys.stdlib_module_names): no pip
    return {
        "_title": f"{owner.name} needs {module}, which is not installed in this environment",
        "_cause": (
            f"The import of {module} was made by {path} ({owner.name}: {owner.why}); {module} is a dependency "
            f"of {owner.name} that is not installed in the environment that runs it (or is installed in "
            f"another one)."
        ),
        "_fix": (
            f"`{{python}} -m pip install {module}` (the distribution's name can differ from the module's: "
            f"{import_name_hint()}). Unverified: "
            f"`{{python}} -m pip check` lists the requirements of installed packages that are missing."
        ),
        "rule": "missing-dependency",
        "frame": path,
    }


#: the file of the module named in ``cannot import name 'N' from 'M' (PATH)``
_FROM_PATH = re.compile(r"from '[\w.]+' \((?P<path>[^)]+)\)")
#: a per-user site-packages (https://docs.python.org/3/library/site.html#site.USER_SITE): ~/.local/lib/pythonX.Y/
#: site-packages on POSIX, %APPDATA%\Python\PythonXY\site-packages on Windows
_USER_SITE = re.compile(
    r"(?P<site>.*?[/\\]\.local[/\\]lib[/\\]python\d\.\d+[/\\]site-packages|"
    r".*?[/\\]AppData[/\\]Roaming[/\\]Python[/\\]Python\d+[/\\]site-packages)[/\\]",
    re.I,
)


def user_site_groups(name: str, module: str, line: str) -> dict[str, str]:
    """``cannot import name N from M (PATH)`` where PATH lies in the per-user site-packages: the M imported is the copy
    ``pip install --user`` put there, which Python searches before the environment's own site-packages (outside a
    venv), and that copy has no N. Empty when the message names no such path."""
    f = _FROM_PATH.search(line)
    u = _USER_SITE.match(f.group("path")) if f else None
    if f is None or u is None:
        return {}
    top = _top(module)
    return {
        "_title": f"the {top} imported is the per-user copy in {u.group('site')}, a release without {name}",
        "_cause": (
            f"{module} was imported from {f.group('path')}, the per-user site-packages that `pip install --user` "
            f"(or a pip run without a writable environment) fills; Python searches it before the environment's "
            f"own site-packages, so that copy of {top} is the one used, and it has no {name}: it is another "
            f"(most often an older) release than the code needs, and any {top} installed in the environment "
            f"is hidden behind it."
        ),
        "_fix": (
            f"Upgrade or remove the per-user copy: `{{python}} -m pip install --user -U {top}` (or `{{python}} -m "
            f"pip uninstall {top}` until `{{python}} -m pip list --user` no longer shows it), or run with "
            f'PYTHONNOUSERSITE=1 to ignore it. Unverified: `{{python}} -c "import {top}; print({top}.__version__, '
            f'{top}.__file__)"` shows which copy and release is imported.'
        ),
        "rule": "user-site",
    }


def pairing_groups(
    name: str, module: str, before: Sequence[str], line: str = "", after: Sequence[str] = ()
) -> dict[str, str]:
    """Cause, fix and check for ``cannot import name NAME from MODULE`` / ``module MODULE has no attribute NAME``
    raised in a file of another package; empty: no claim."""
    if module and name and re.search(r"\(unknown location\)\s*$", line):
        return namespace_groups(name, module)
    if module and name and (removed := removed_groups(name, module, before, (line, *after))):
        return removed  # the data says which release removed it  # whoever imports it: the module found is no installed package
    path = _raising_path(before)
    if path is None or not module:
        if module and any(f"partially initialized module '{module}'" in x for x in (*before, *after)):
            return {}  # the paste shows that this M is being imported from elsewhere: the circular-import rule's
        return (
            (
                user_site_groups(name, module, line)
                or variants_groups(module, (*before, line, *after))
                or missing_name_groups(name, module, line, None)
            )
            if module
            else {}
        )
    owner = frame_owner(path)
    top = _top(module)
    if owner is None or owner.name.lower() in (top.lower(), "python"):
        return (
            user_site_groups(name, module, line)
            or variants_groups(module, (*before, line, *after))
            or (missing_name_groups(name, module, line, path) if owner is None else {})
        )
    lib = owner.name
    if name == "__version__" and module == top:
        # every release of a distributed package sets it; a module without it is not the installed package: a
        # directory named like it imported as a namespace package (https://peps.python.org/pep-0420/), which has no
        # __init__.py and so none of the package's attributes
        return {
            "_title": f"the {top} that {lib} imported is not the installed {top} package (it has no __version__)",
            "_cause": (
                f"{path} ({lib}: {owner.why}) reads {top}.__version__, which every release of {top} sets; the "
                f"module Python imported as {top} has none, so it is not the installed package: most often a "
                f"directory named {top} (a source checkout, or a folder in the current directory or on "
                f"PYTHONPATH) imported as a namespace package, or an install of {top} left without its files."
            ),
            "_fix": (
                f"`{{python}} -c \"import {top}; print(getattr({top}, '__file__', None), list({top}.__path__))\"` "
                f"shows what was imported: start Python from another directory, drop that directory from "
                f"PYTHONPATH, or build and install the checkout (`{{python}} -m pip install -e <checkout>`); if "
                f"it points into site-packages, reinstall {top}. Unverified: `msdoctor check --only "
                f"duplicate-installs` finds a shadowing copy."
            ),
            "rule": "shadowed-install",
            "frame": path,
        }
    return {
        "_title": f"{lib} and {top} are releases that do not pair ({lib} uses {module}.{name})",
        "_cause": (
            f"{path} ({lib}: {owner.why}) uses {name} from {module}, and the installed {top} has no {name}: "
            f"{lib} was written for another release of {top} (one that still has, or already has, {name}). "
            f"{lib} and {top} are releases that do not pair."
        ),
        "_fix": (
            f"Install the {lib} release made for the installed {top}, or the {top} release {lib} was written for "
            f"(its requirements: `{{python}} -m pip show {lib} {top}`). Unverified: compare the two releases "
            f"first; `msdoctor check --only version-matrix` names the pairing msdoctor's compat data has for "
            f"MindSpore, mindnlp, mindformers and transformers."
        ),
        "rule": "release-pairing",
        "frame": path,
    }


def missing_name_groups(name: str, module: str, line: str, caller: Optional[str]) -> dict[str, str]:
    """``cannot import name N from M`` / ``module M has no attribute N`` where no package's frame shows who uses N (no
    frame, or the user's own file): the fact is that the M imported has no N; which release of M the code expects,
    and whether M is the installed package at all, the paste does not tell. Said as that, and how to tell, for a
    package module (a dotted M, or an M whose path lies in site-packages); no claim for a plain module name found
    elsewhere (it may be the user's own file), for a module that is being imported (a circular import: another
    rule), or where MindSpore's family has its own entry (api-skew)."""
    if not name or name == "__version__" or "partially initialized" in line:
        return {}
    from_path = _FROM_PATH.search(line)  # `from 'M' (PATH)`: where Python found M
    where = from_path.group("path").strip() if from_path else ""
    if where == "unknown location":
        return namespace_groups(name, module)
    in_site = bool(where) and bool(_SITE.search(where))
    if where and not in_site:
        return {}  # found outside site-packages: the user's own module or a checkout, another reading
    if "." not in module and not in_site and known_package(module) is None:
        return {}  # a plain name that is not a well-known package may be the user's own module
    if _specific_entry_explains(line):
        return {}
    top = _top(module)
    used = (
        f"Your code ({caller}) uses {module}.{name}"
        if caller
        else f"The code that uses {module}.{name} (its frame is not in the paste) needs it"
    )
    return {
        "_title": f"the installed {top} has no {module}.{name}: the code expects another {top} release",
        "_cause": (
            f"{used}, and the {module} that Python imported has no {name}. An installed package gains and loses "
            f"names between releases (added in a later one, renamed or removed in another), so the code was "
            f"written for another release of {top} than the one installed: the two do not pair. (If {top} is "
            f"not the installed package at all, a directory or file of that name first on sys.path, "
            f"`{top}.__file__` shows it.)"
        ),
        "_fix": (
            f"`{{python}} -c \"import {top}; print({top}.__file__, getattr({top}, '__version__', None))\"` shows "
            f"which copy and release is imported; then install the {top} release that has {module}.{name} (the "
            f"one the code or the package importing it requires: `{{python}} -m pip check` and `{{python}} -m pip "
            f"show {top}`), or change the code to the name the installed release has. Unverified: msdoctor did "
            f"not read either release."
        ),
        "rule": "name-missing",
    }


def namespace_groups(name: str, module: str) -> dict[str, str]:
    """``cannot import name N from M (unknown location)``: Python says "unknown location" for a module without a file,
    a namespace package (https://peps.python.org/pep-0420/): a directory named M with no __init__.py on sys.path. The
    installed package has an __init__.py, so the M imported is not it: a checkout or folder of that name in the current
    directory or on PYTHONPATH, or a site-packages/M directory left behind by an uninstall or a broken install."""
    top = _top(module)
    return {
        "_title": f"the {top} that was imported is not the installed {top} package (a directory without __init__.py)",
        "_cause": (
            f"Python found {module} at an unknown location: it imported a directory named {top} that has no "
            f"__init__.py as a namespace package, and such a directory has none of the package's names, so "
            f"{name} cannot be imported from it. The installed {top} has an __init__.py; the directory taken "
            f"instead is a folder or source checkout named {top} in the current directory or on PYTHONPATH, "
            f"or a site-packages/{top} left behind by an uninstall or a broken install (no {top} installed at "
            f"all)."
        ),
        "_fix": (
            f'`{{python}} -c "import {top}; print(list({top}.__path__))"` shows the directory: start Python '
            f"elsewhere or drop it from PYTHONPATH; if it is site-packages/{top}, remove it (`{{python}} -m pip "
            f"uninstall {top}`, then delete what is left) and install {top} again if the code needs it. "
            f"Unverified: `msdoctor check --only duplicate-installs` finds a shadowing copy."
        ),
        "rule": "namespace-package",
    }


def _specific_entry_explains(line: str) -> bool:
    """Whether the catalogue has a generic entry of its own for this line's family (MindSpore's api-skew, which knows
    which releases added and dropped its names): that text is better than this rule's."""
    from msdoctor.explain.catalogue import load_catalogue

    return any(e.id == "api-skew" and e.pattern.search(line) for e in load_catalogue())


# -- a module used while it is still being imported ---------------------------------------------------------------
def _stem(path: str) -> str:
    return re.split(r"[/\\]", path)[-1].rsplit(".", 1)[0]


def circular_groups(name: str, module: str, before: Sequence[str]) -> dict[str, str]:
    """Cause and fix for ``cannot import name N from partially initialized module M`` / ``partially initialized
    module M has no attribute N``: M was asked for N while M's own code was still running. From the frames:

    - a frame's file is ``M.py`` outside site-packages: the user's file of that name is imported as M (a script named
      like the package it imports: its directory comes first on sys.path), and it imports itself;
    - M's frames lie in a source checkout named as M (``vllm-main/vllm``) outside site-packages: that tree is imported
      instead of an install (the current directory, or PYTHONPATH), or it is being developed with a real cycle;
    - no frame at all: a released M does not import itself while loading, so the M imported is most likely not the
      installed one; said with the command that shows which one it is.

    Frames only in site-packages (a cycle inside installed packages, or one the frames do not show): no claim."""
    top = _top(module)
    if not top:
        return {}
    paths = [p for p in frames(before) if not _MACHINERY.search(p)]
    where = (
        f"`{{python}} -c \"import importlib.util as u; print(u.find_spec('{top}').origin)\"`, run from the same "
        f"directory, shows which {top} Python imports"
    )
    own = next((p for p in paths if _stem(p) == top and not _SITE.search(p)), None)
    if own is not None:
        return {
            "_title": f"your file {own} is imported as {top}, instead of the {top} package",
            "_cause": (
                f"{own} is a file named {top}.py outside site-packages: Python imports it as the module {top} (the "
                f"directory of the script being run comes first on sys.path), so `import {top}` in it imports "
                f"itself, and asking it for {name} while it is still running fails. The installed {top} is "
                f"never reached."
            ),
            "_fix": (
                f"Rename {own} (and delete the __pycache__/{top}*.pyc next to it); {where}. Unverified: msdoctor "
                f"read only the frames pasted."
            ),
            "rule": "file-shadows-module",
        }
    # a checkout named as the package (vllm-main/vllm): a directory merely named M (pytorch/torch, a developer's own
    # build with a real cycle) tells nothing
    tree = next((p for p in paths for o in [checkout_owner(p)] if o is not None and o.name == top), None)
    if tree is not None:
        return {
            "_title": f"{top} was imported from {tree.rsplit(top, 1)[0]}{top}, a directory outside site-packages, and "
            f"it imports itself while loading",
            "_cause": (
                f"The frames show {top}'s files in {tree}, outside site-packages: that directory is what Python "
                f"imports as {top}. If it is a source checkout of an installed package (the current directory, "
                f"or one on PYTHONPATH), it shadows the install and lacks what the build adds (its compiled "
                f"parts, generated files), so {name} is not there yet when asked for; if it is your own "
                f"package, two of its modules import each other at load time."
            ),
            "_fix": (
                f"Start Python from another directory than the checkout and remove it from PYTHONPATH (or build "
                f"and install it: `{{python}} -m pip install -e <checkout>`); {where}. For your own package, move "
                f"the import of {name} into the function that uses it. Unverified: `msdoctor check --only "
                f"duplicate-installs` finds a shadowing copy."
            ),
            "rule": "shadowed-install",
        }
    if paths:
        return {}
    return {
        "_title": f"{top} was asked for {name} while still being imported: most likely not the installed {top}",
        "_cause": (
            f"Python was still running {top}'s own import when {name} was asked of it. A released {top} does "
            f"not import itself while loading, so the {top} imported is most likely not the installed package: "
            f"a source checkout of {top} in the current directory (or on PYTHONPATH), which lacks the parts a "
            f"build adds, or a file named {top}.py next to the script. The paste shows no frames to tell "
            f"which."
        ),
        "_fix": (
            f"{where[0].upper()}{where[1:]}: if it is not site-packages, start Python from another directory "
            f"(or rename the file, or remove the directory from PYTHONPATH). Unverified: `msdoctor check --only "
            f"duplicate-installs` finds a shadowing copy."
        ),
        "rule": "not-the-install",
    }


# -- two interpreters in one paste --------------------------------------------------------------------------------
#: an interpreter's path as sys.executable, `which python` or a kernel's argv print it (a repr doubles backslashes)
_INTERPRETER = re.compile(
    r"(?P<path>(?:[A-Za-z]:[/\\]|/)[^\s'\"]*?[/\\]python(?:\d+(?:\.\d+)?)?(?:\.exe)?)(?=['\"\s,]|$)", re.I
)
#: what marks the interpreter a notebook runs
_KERNEL_WORDS = re.compile(r"jupyter|notebook|ipykernel|kernel|ipython|vs ?code", re.I)


def interpreters_groups(module: str, context: Sequence[str]) -> dict[str, str]:
    """``No module named M`` with two different interpreter paths in the paste (``sys.executable`` printed from a
    shell and from a notebook, say): M is installed for one and the process that failed runs the other. The one named
    on (or just after) a line about Jupyter, a kernel or VS Code is the notebook's. Empty with fewer than two."""
    seen: list[tuple[str, bool]] = []
    label = False
    for line in context:
        text = line.replace("\\\\", "\\")
        marked = bool(_KERNEL_WORDS.search(text))
        for m in _INTERPRETER.finditer(text):
            path = m.group("path")
            if all(path != p for p, _ in seen):
                seen.append((path, marked or label))
        label = marked and not _INTERPRETER.search(text)  # "sys.executable for jupyter:" then the path
    if len(seen) < 2:
        return {}
    kernel = next((p for p, k in seen if k), None)
    other = next((p for p, k in seen if p != kernel and not k), None)
    top = _top(module)
    if kernel is not None and other is not None:
        return {
            "_title": f"the notebook's kernel runs {kernel}, not {other}: {top} is not installed for the kernel's "
            f"interpreter",
            "_cause": (
                f"The paste shows two interpreters: {kernel} (the one Jupyter / the kernel runs) and {other}. "
                f"A kernel runs the interpreter its kernel.json names, not the one the shell that started "
                f"Jupyter activated; {top} is installed for {other}, and the kernel's interpreter has none."
            ),
            "_fix": (
                f"Register a kernel for the environment that has {top} and select it in the notebook: `msdoctor "
                f"fix-kernel --python {other}` (it writes the kernel.json with a backup; --dry-run shows the "
                f"plan); or install {top} for the kernel's interpreter: `{kernel} -m pip install {top}`. "
                f"Unverified: msdoctor read only the paths pasted; `msdoctor check --only kernel-mismatch` "
                f"compares the kernels with the target interpreter."
            ),
            "rule": "two-interpreters",
        }
    names = ", ".join(p for p, _ in seen[:3])
    return {
        "_title": f"{top} is missing for the interpreter that ran, one of the several the paste shows",
        "_cause": (
            f"The paste shows more than one interpreter ({names}): {top} is installed for one of them, and the "
            f"process that failed runs another."
        ),
        "_fix": (
            f'Run with the interpreter that has {top} (`<that python> -c "import {top}"` tells), or install {top} '
            f"for the one that failed: `<that python> -m pip install {top}`. Unverified: msdoctor read only the "
            f"paths pasted."
        ),
        "rule": "two-interpreters",
    }


# -- the module imported is not the distribution pip lists -----------------------------------------------------------
#: a printed version string on the line after `M.__version__` (the REPL's repr, or print's plain text)
_PRINTED_VERSION = re.compile(r"^['\"]?(?P<v>\d+(?:\.\d+)+[\w.+-]*)['\"]?$")


def version_shadow_groups(module: str, context: Sequence[str]) -> dict[str, str]:
    """``M.__version__`` printed as V1 while the paste's pip list shows a distribution that installs M at V2: the M
    Python imports is another copy than the one pip installed (a directory on PYTHONPATH, a toolkit's own bindings
    put on the path by its setup script, a user-site copy). Empty unless both versions are in the paste and differ."""
    top = _top(module)
    imported = None
    for i, line in enumerate(context):
        if f"{top}.__version__" in line:
            for nxt in context[i + 1 : i + 4]:
                v = _PRINTED_VERSION.match(_unprefixed(nxt))
                if v:
                    imported = v.group("v")
                    break
            if imported:
                break
    if imported is None:
        return {}
    listed = _pip_versions(context)
    dists = [(d, listed[_normal_dist(d)]) for d in distributions_of(top) if _normal_dist(d) in listed]
    if not dists or any(_same_version(v, imported) for _, v in dists):
        return {}
    shown = ", ".join(f"{d} {v}" for d, v in dists)
    return {
        "_title": f"the {top} Python imports ({imported}) is not the one pip installed ({shown})",
        "_cause": (
            f"{top}.__version__ says {imported}, while pip lists {shown}: the module Python imports is another "
            f"copy than the installed distribution, found earlier on sys.path: a directory on PYTHONPATH (a "
            f"toolkit's setup script that prepends its own Python bindings, such as a vendor SDK's copy of "
            f"{top}), a per-user copy, or a build in the current directory. Whatever pip installs or upgrades "
            f"stays hidden behind it."
        ),
        "_fix": (
            f'`{{python}} -c "import {top}; print({top}.__file__)"` shows the copy that is imported; remove its '
            f"directory from PYTHONPATH (`echo $PYTHONPATH`; a setup script sourced in ~/.bashrc is a usual "
            f"source), or source that script only where its own {top} is wanted (after activating the "
            f"environment, so the environment's copy is not overridden by accident). Unverified: `msdoctor check "
            f"--only duplicate-installs` finds a shadowing copy."
        ),
        "rule": "version-shadow",
    }


def variants_groups(module: str, context: Sequence[str]) -> dict[str, str]:
    """An error about module M and a paste that names two distributions that both install M (opencv-python and
    opencv-contrib-python): they write the same files, and the one installed last replaced part of the other. Empty
    when fewer than two are named."""
    top = _top(module)
    dists = distributions_of(top)
    if len(dists) < 2:
        return {}
    text = "\n".join(context).lower()
    named = [d for d in dists if re.search(rf"(?<![\w-]){re.escape(d.lower())}(?![\w-])", text)]
    if len(named) < 2:
        return {}
    both = " and ".join(named)
    return {
        "_title": f"{both} are installed together: they install the same {top} module",
        "_cause": (
            f"{both} are variants of one project that all install the module {top} into the same files; with "
            f"more than one installed, the one installed last overwrote the other's files, so {module} is a "
            f"mix (a module the other variant has, like the contrib ones, is missing, or parts of two "
            f"releases are loaded). Only one of them may be installed."
        ),
        "_fix": (
            f"Uninstall all of them and install the one you need: `{{python}} -m pip uninstall -y "
            f"{' '.join(dists)}` then `{{python}} -m pip install <the one variant>` (the contrib variant has "
            f"the main modules too). Unverified: `msdoctor check --only duplicate-installs` lists distributions "
            f"that own the same files."
        ),
        "rule": "module-variants",
    }
