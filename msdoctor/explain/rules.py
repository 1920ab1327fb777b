"""General rules over the structure of a traceback and the owners of its frames (issue 24 section 3).

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
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from msdoctor.explain.owners import file_owner

#: a Python traceback frame as CPython prints it
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\]")


def frames(lines: Sequence[str]) -> list[str]:
    """The file paths of the traceback frames in these lines, in order."""
    return [m.group("path") for line in lines for m in _FRAME.finditer(line)]


def _raising_path(before: Sequence[str]) -> Optional[str]:
    """The file of the last frame printed before the exception line (the frame that raised)."""
    paths = frames(before)
    return paths[-1] if paths else None


def _top(module: str) -> str:
    return module.split(".")[0]


def _checkout_of(path: str, package: str) -> bool:
    """Whether ``path`` is a file of a directory named ``package`` outside site-packages (a source tree)."""
    if _SITE.search(path):
        return False
    parts = re.split(r"[/\\]", path)
    return package in parts[:-1]


def import_groups(module: str, before: Sequence[str]) -> dict[str, str]:
    """Cause, fix and check for ``No module named MODULE`` from the frames before it; empty: no claim."""
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
            "_cause": (f"{module} is {top}'s own compiled part, and the {top} that raised is {path}"
                       + (f", a directory named {top} outside site-packages: a source checkout (the current "
                          f"directory, or one on PYTHONPATH) shadows the installed {top}, and the checkout holds no "
                          f"built {module}." if where == "a source tree" else
                          ": that install lacks it (two distributions overwrote each other's files, or the wheel is "
                          "for another Python or platform).")),
            "_fix": (f"Start Python from another directory than the source tree, and remove it from PYTHONPATH; "
                     f"`{{python}} -c \"import importlib.util as u; print(u.find_spec('{top}').origin)\"` shows which "
                     f"{top} is imported. If that is site-packages, reinstall {top}: `{{python}} -m pip install "
                     f"--force-reinstall --no-deps {top}`. Unverified: confirm with `msdoctor check --only "
                     f"duplicate-installs` first."),
            "rule": "shadowed-install",
        }
    if owner is None or "." in module or owner.name.lower() == top.lower():
        return {}  # the user's own file, or a submodule (its package exists: a pairing, not a missing dependency)
    return {
        "_title": f"{owner.name} needs {module}, which is not installed in this environment",
        "_cause": (f"The import of {module} was made by {path} ({owner.name}: {owner.why}); {module} is a dependency "
                   f"of {owner.name} that is not installed in the environment that runs it (or is installed in "
                   f"another one)."),
        "_fix": (f"`{{python}} -m pip install {module}` (the distribution's name can differ from the module's: yaml is "
                 f"PyYAML, attr is attrs, cv2 is opencv-python, PIL is Pillow, sklearn is scikit-learn). Unverified: "
                 f"`{{python}} -m pip check` lists the requirements of installed packages that are missing."),
        "rule": "missing-dependency",
    }


def pairing_groups(name: str, module: str, before: Sequence[str]) -> dict[str, str]:
    """Cause, fix and check for ``cannot import name NAME from MODULE`` / ``module MODULE has no attribute NAME``
    raised in a file of another package; empty: no claim."""
    path = _raising_path(before)
    if path is None or not module:
        return {}
    owner = file_owner(path)
    top = _top(module)
    if owner is None or owner.name.lower() in (top.lower(), "python"):
        return {}
    lib = owner.name
    return {
        "_title": f"{lib} and {top} are releases that do not pair ({lib} uses {module}.{name})",
        "_cause": (f"{path} ({lib}: {owner.why}) uses {name} from {module}, and the installed {top} has no {name}: "
                   f"{lib} was written for another release of {top} (one that still has, or already has, {name}). "
                   f"{lib} and {top} are releases that do not pair."),
        "_fix": (f"Install the {lib} release made for the installed {top}, or the {top} release {lib} was written for "
                 f"(its requirements: `{{python}} -m pip show {lib} {top}`). Unverified: compare the two releases "
                 f"first; `msdoctor check --only version-matrix` names the pairing msdoctor's compat data has for "
                 f"MindSpore, mindnlp, mindformers and transformers."),
        "rule": "release-pairing",
    }
