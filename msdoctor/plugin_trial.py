"""Third-party plugins imported once in a child interpreter before msdoctor imports them itself.

An ``os._exit()`` at import cannot be caught inside msdoctor (it ends the process at once, exit code and all),
nor can an import that never returns be interrupted: so each plugin is first imported in a child, and one that
ends or hangs the child is reported instead of imported (msdoctor.plugins.load_registry).
"""

from __future__ import annotations

import sys
from typing import Any


#: How long one trial import of the third-party plugins may take (seconds).
TRIAL_TIMEOUT_S = 30.0
_TRIAL_MARK = "@@msdoctor-plugin-trial@@"

#: Run by msdoctor's interpreter in a scratch directory: import each entry point as load_registry would,
#: printing a mark before and after each on a private copy of stdout (the plugin's own output goes to stderr).
_TRIAL = r"""
import json, os, sys
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.path[:] = json.loads(sys.argv[1])
from msdoctor.entry_points import EntryPoint, _Dist
from msdoctor.plugins import _instantiate
for i, (name, value) in enumerate(json.loads(sys.argv[2])):
    try:
        _instantiate(EntryPoint(name, value, _Dist("", "")).load())
    except BaseException:
        pass
    out.write("%s %d\n" % (sys.argv[3], i))
    out.flush()
os._exit(0)
"""


def trial_import(pairs: list[tuple[Any, str]], builtin: str) -> dict[int, str]:
    """Import the third-party entry points of ``pairs`` in a child first; returns, for each one that ends the
    child (``os._exit``, a signal) or does not finish within :data:`TRIAL_TIMEOUT_S`, why.

    An ``os._exit`` at import cannot be caught inside msdoctor: it ends the process at once, exit code and
    all. So plugins are imported once in a child interpreter (same sys.path, a scratch cwd, killed with its
    process group), and only those that come back are imported here. The costs: one interpreter start when
    third-party plugins are installed (none otherwise), and a plugin's import-time code runs twice.
    """
    import json
    import tempfile

    from msdoctor import proc

    todo = [i for i, (_ep, provider) in enumerate(pairs) if provider != builtin]
    bad: dict[int, str] = {}
    while todo:
        rows = [(pairs[i][0].name, pairs[i][0].value) for i in todo]
        with tempfile.TemporaryDirectory(prefix="msdoctor-plugins-") as scratch:
            res = proc.run(
                [sys.executable, "-I", "-c", _TRIAL, json.dumps(sys.path), json.dumps(rows), _TRIAL_MARK],
                timeout=TRIAL_TIMEOUT_S,
                cwd=scratch,
            )
        done = {
            int(line.split()[1])
            for line in res.stdout.splitlines()
            if line.startswith(_TRIAL_MARK + " ") and line.split()[1].isdigit()
        }
        ok = len([k for k in range(len(todo)) if k in done])
        if ok == len(todo):
            break
        culprit = todo[ok]
        if res.timed_out:
            bad[culprit] = f"its import did not finish within {TRIAL_TIMEOUT_S:.0f} s (a trial import in a child)"
        elif res.start_error:
            bad[culprit] = f"a trial import could not start: {res.start_error}"
        else:
            bad[culprit] = (
                f"its import ended the interpreter (exit code {res.returncode}: os._exit or a signal; "
                "seen in a trial import in a child)"
            )
        todo = todo[ok + 1 :]
    return bad
