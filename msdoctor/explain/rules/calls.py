"""The rules over a call that does not fit its callee: a keyword the function does not take, a signature the call
does not match (made by another package), and CANN's operator check on a call MindSpore made."""

from __future__ import annotations

import re
from typing import Optional, Sequence

from msdoctor.explain.owners import file_owner, frame_owner
from msdoctor.explain.rules.common import _FRAME, _MACHINERY, _raising_path, _unprefixed, frames


# -- a keyword a library's function does not take, passed by another package ----------------------------------------
def keyword_groups(func: str, keyword: str, before: Sequence[str]) -> dict[str, str]:
    """Cause and fix for a keyword argument the called library rejects (``For 'context.set_context', the keyword
    argument jit_config is not recognized``), from the frames: the raising frame's package M and the last frame before
    it that another package L owns. L passes a keyword that the installed M does not know: L and M are releases that
    do not pair. Empty (no claim) when either owner is unknown (the caller is the user's own code: no claim either)."""
    paths = [p for p in frames(before) if not _MACHINERY.search(p)]
    if not paths:
        return {}
    callee = frame_owner(paths[-1])
    if callee is None:
        return {}
    for caller_path in reversed(paths[:-1]):  # out of the library's own frames, to the frame that called it
        caller = frame_owner(caller_path)
        if caller is None:
            return {}  # the user's own frame called the library: whose release the code expects is not known
        if caller.name.lower() != callee.name.lower():
            break
    else:
        return {}
    lib, top = caller.name, callee.name
    return {
        "_title": f"{lib} and {top} are releases that do not pair ({lib} passes {keyword} to {top}'s {func})",
        "_cause": (
            f"{caller_path} ({lib}: {caller.why}) calls {func} with the keyword {keyword}, and the installed "
            f"{top} ({paths[-1]}) does not know it: {lib} was written for another release of {top} (one that "
            f"has, or still has, {keyword}). {lib} and {top} are releases that do not pair."
        ),
        "_fix": (
            f"Install the {top} release {lib} was written for, or the {lib} release (a branch or tag) made for the "
            f"installed {top}; {lib}'s README or installation page names the pairing (`{{python}} -m pip show "
            f"{top}` gives the installed version). Unverified: msdoctor did not compare the two releases; "
            f"`msdoctor check --only version-matrix` names the pairings its compat data has."
        ),
        "rule": "release-pairing",
        "frame": caller_path,
    }


# -- a call that does not fit the callee's signature, made by another package ----------------------------------------
_ARG_NAMES = re.compile(r"'\w+'(?:,? (?:and )?'\w+')*")


def wrapped_arguments(after: Sequence[str]) -> str:
    """The argument names of ``missing N required arguments:`` when the message wrapped them onto the next line."""
    for line in after:
        m = _ARG_NAMES.match(_unprefixed(line).lstrip("`"))
        if m:
            return m.group(0)
    return ""


#: a call that passes on its own ``*args`` / ``**kwargs`` unchanged (a wrapper's body): ``f(self, *args, **kwargs)``
_FORWARDS = re.compile(r"\((?:[^()]*,\s*)?\*{1,2}[A-Za-z_]\w*\s*(?:,\s*\*\*[A-Za-z_]\w*\s*)?\)\s*$")


def _caller_path(before: Sequence[str]) -> Optional[str]:
    """The file of the frame that made the call the exception is about: the raising frame, or, past frames whose
    source line only forwards ``*args`` / ``**kwargs`` (a wrapper passing the call on), the frame before them."""
    found: list[tuple[str, str]] = []  # (path, the source line printed under the frame)
    for i, line in enumerate(before):
        m = _FRAME.search(line)
        if m is None or _MACHINERY.search(m.group("path")):
            continue
        code = before[i + 1] if i + 1 < len(before) and not _FRAME.search(before[i + 1]) else ""
        found.append((m.group("path"), _unprefixed(code).strip()))
    if not found:
        return _raising_path(before)
    while len(found) > 1 and _FORWARDS.search(found[-1][1]):
        found.pop()
    return found[-1][0]


def signature_groups(func: str, what: str, before: Sequence[str]) -> dict[str, str]:
    """Cause and fix for Python's ``F() got an unexpected keyword argument 'k'`` / ``F() missing N required ...
    arguments`` / ``F() takes N positional arguments but M were given``. Python raises it at the call, so the last
    frame is the caller's: when a package L owns it, L calls F as another release of F's library defined it (F gained
    required arguments, or lost or renamed one): L and that library are releases that do not pair. Empty (no claim)
    when the caller is the user's own file or not shown. A frame whose line only forwards its arguments
    (``init_func(self, *args, **kwargs)``: a decorator's or wrapper's) is not the caller: the frame before it is."""
    path = _caller_path(before)
    if path is None:
        return {}
    caller = frame_owner(path)
    if caller is None:
        return {}
    lib = caller.name
    if func.endswith(".__init__"):
        func = func[: -len(".__init__")]  # a class's constructor: the class is what the other release changed
    return {
        "_title": f"{lib} calls {func}() in a way the installed release does not take ({what})",
        "_cause": (
            f"{path} ({lib}: {caller.why}) calls {func}(), and the installed {func} does not accept that call "
            f"({what}). Python checks a call against the function's signature in the release that is "
            f"installed: {lib} was written for another release of the library that defines {func} (one whose "
            f"{func} took these arguments), so {lib} and that library are releases that do not pair (unless "
            f"{func} is {lib}'s own, a bug in that {lib} release)."
        ),
        "_fix": (
            f"`{{python}} -m pip show {lib}` names its requirements: install the release of {func}'s library "
            f"that {lib} pins or documents (its README / requirements), or the {lib} release made for the "
            f"installed one (`{{python}} -m pip install -U {lib}`). Unverified: msdoctor did not read either "
            f"release's code; `{{python}} -m pip check` shows a declared requirement that is not met."
        ),
        "rule": "release-pairing",
        "frame": path,
    }


# -- a CANN operator's parameter check failing on a framework's call ------------------------------------------------
#: MindSpore's own log lines name the source file that drives CANN's operator compiler
_MS_OP_COMPILE = re.compile(r"mindspore/ccsrc/plugin/device/ascend/kernel/(?:tbe|aclnn|opapi)", re.I)


def opcheck_groups(op: str, param: str, code: str, before: Sequence[str]) -> dict[str, str]:
    """CANN's operator check (``{'errCode': 'E8xxxx', 'op_name': OP, 'param_name': P, ...}``) raised while MindSpore
    drives the operator (its frames in site-packages/mindspore, or its ascend kernel log lines): MindSpore built the
    call for another CANN release's operator interface. Empty when the caller is not shown to be MindSpore."""
    paths = [p for p in frames(before) if not _MACHINERY.search(p)]
    owners = {o.name.lower() for o in map(file_owner, paths) if o is not None}
    if "mindspore" not in owners and not any(_MS_OP_COMPILE.search(line) for line in before):
        return {}
    what = f"parameter {param} of operator {op}" if param else f"a parameter of operator {op}"
    return {
        "_title": f"CANN's {op} operator rejected the {param or 'parameter'} MindSpore passed ({code}): MindSpore and "
        f"CANN are releases that do not pair",
        "_cause": (
            f"CANN's operator check ({code}) refused {what} in a call MindSpore made while compiling the graph: "
            f"each MindSpore release calls CANN's operators with the interface of the CANN releases it was "
            f"built for, so a parameter of the wrong type or one the operator does not know means the "
            f"installed CANN is another release than this MindSpore expects (`mindspore.run_check()` can still "
            f"pass: it compiles few operators)."
        ),
        "_fix": (
            "Install the CANN release that the installed MindSpore is made for, or the MindSpore release made for "
            "your CANN (https://www.mindspore.cn/install lists the pairs); `msdoctor check --only version-matrix` "
            "reads both versions and names the pairing. Unverified: msdoctor read only the lines pasted; `{python} "
            '-c "import mindspore; print(mindspore.__version__)"` and `cat /usr/local/Ascend/ascend-toolkit/'
            "latest/*/ascend_toolkit_install.info` give the two versions."
        ),
        "rule": "op-interface",
    }
