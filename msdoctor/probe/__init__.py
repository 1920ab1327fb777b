"""Scripts run BY THE TARGET INTERPRETER in a subprocess, and the code that runs them.

Every file in this package except this one is a standalone, stdlib-only script
that parses as Python 3.7. It is fed to ``<python> -W ignore -`` on stdin (no
``-I``/``-E``/``-s``: PYTHONPATH and the user site are often the problem) and
prints one JSON object between marker lines. Arguments reach the script as one
JSON string in ``sys.argv[1]``.

No project code runs: every probe starts in an empty scratch directory (so the
cwd that ``python -`` puts first on ``sys.path`` holds nothing), with
``PYTHONSAFEPATH=1`` (``-P``: Python 3.11+ does not prepend it at all; older
ones ignore the variable), and :data:`PATH_FIXUP` first in the script removes
that entry and the variable before anything is imported. Whether a project file
would shadow an installed module is decided without executing it
(msdoctor.shadow).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from typing import Any, Iterator, Mapping, Optional, Sequence

from msdoctor import proc

BEGIN = "@@MSDOCTOR-PROBE-BEGIN@@"
END = "@@MSDOCTOR-PROBE-END@@"
#: Set by msdoctor (not the user) next to PYTHONSAFEPATH, so PATH_FIXUP knows it may drop both.
_OURS = "MSDOCTOR_SAFEPATH_SET"

#: First lines of every probe: no cwd on sys.path, no PYTHONSAFEPATH for the target's own children,
#: and a Python too old to examine answers in one line. Parses and runs on Python 2.7 too.
PATH_FIXUP = """import os, sys
_MSDOCTOR_STARTUP_MODULES = sorted(sys.modules)
if sys.path and sys.path[0] == "":
    del sys.path[0]
if os.environ.pop("%(ours)s", None):
    os.environ.pop("PYTHONSAFEPATH", None)
if sys.version_info < (3, 7):
    sys.stdout.write("\\n%(begin)s\\n{\\"unsupported_python\\": \\"%%d.%%d.%%d\\"}\\n%(end)s\\n" %% tuple(sys.version_info[:3]))
    sys.stdout.flush()
    sys.exit(0)
""" % {"ours": _OURS, "begin": BEGIN, "end": END}


def unsupported_message(version: str) -> str:
    major = version.split(".", 1)[0]
    if major == "2":
        return f"Python {version} is not supported by MindSpore; msdoctor examines Python 3.7+"
    return f"Python {version} is too old: MindSpore needs 3.7+ (msdoctor examines 3.7+)"


def probe_source(name: str) -> str:
    """What is fed to the target for probe script ``name``: the path fix-up, then the script."""
    return PATH_FIXUP + script_source(name)


#: Runs several probe scripts in one interpreter start, each in its own namespace with its output caught;
#: prints one result whose "msdoctor_blocks" holds each script's JSON text in order (null for a script that
#: printed none). The first script is the main one: its failure fails the run, as when it runs alone; a
#: later one that fails prints its traceback on stderr and gives null. Parses and runs on Python 3.7.
_COMBINED = """import io as _msd_io
_msd_out, _msd_blocks = sys.stdout, []
for _msd_i, (_msd_name, _msd_src) in enumerate(_MSDOCTOR_SCRIPTS):
    sys.stdout = _msd_io.StringIO()
    try:
        exec(compile(_msd_src, _msd_name, "exec"),
             {"__name__": "__main__", "_MSDOCTOR_STARTUP_MODULES": _MSDOCTOR_STARTUP_MODULES})
    except BaseException:
        if _msd_i == 0:
            _msd_out.write(sys.stdout.getvalue())
            sys.stdout = _msd_out
            raise
        import traceback
        traceback.print_exc()
    _msd_text, sys.stdout = sys.stdout.getvalue(), _msd_out
    _msd_a, _msd_b = _msd_text.rfind("%(begin)s"), _msd_text.rfind("%(end)s")
    _msd_blocks.append(_msd_text[_msd_a + len("%(begin)s"):_msd_b].strip() if 0 <= _msd_a < _msd_b else "null")
sys.stdout.write("\\n%(begin)s\\n{\\"msdoctor_blocks\\": [" + ", ".join(_msd_blocks) + "]}\\n%(end)s\\n")
sys.stdout.flush()
""" % {"begin": BEGIN, "end": END}


def combined_source(names: Sequence[str]) -> str:
    """What is fed to the target to run probe scripts ``names`` in one start (see :data:`_COMBINED`)."""
    scripts = ", ".join(f"({name!r}, {script_source(name)!r})" for name in names)
    return PATH_FIXUP + f"_MSDOCTOR_SCRIPTS = [{scripts}]\n" + _COMBINED


def safe_env(env: Optional[Mapping[str, str]]) -> dict[str, str]:
    """``env`` (default: os.environ) with PYTHONSAFEPATH=1: the target puts no cwd / script dir on sys.path."""
    out = dict(os.environ if env is None else env)
    if "PYTHONSAFEPATH" not in out:
        out["PYTHONSAFEPATH"] = "1"
        out[_OURS] = "1"
    return out


@contextlib.contextmanager
def scratch_dir(prefix: str = "msdoctor-") -> Iterator[str]:
    """An empty directory for a child of the target to run in (removed afterwards)."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class ProbeError(Exception):
    """A probe could not produce its JSON. ``message`` says why, ``fix`` what to do."""

    def __init__(self, message: str, fix: Optional[str] = None, output: str = "", unsupported: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.output = output
        #: the interpreter is older than Python 3.7: a usage error, said once
        self.unsupported = unsupported


def script_source(name: str) -> str:
    """The source of probe script ``name`` (e.g. "target_probe.py")."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    if os.path.isfile(here):  # installed as files (pip, an editable checkout): no importlib.resources (zipfile, ...)
        with open(here, encoding="utf-8") as fh:
            return fh.read()
    from importlib import resources  # pragma: no cover - a zipped msdoctor

    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")  # pragma: no cover


def extract_json(stdout: str) -> Any:
    """The JSON object between the marker lines; ProbeError when absent or invalid."""
    start = stdout.rfind(BEGIN)
    end = stdout.rfind(END)
    if start < 0 or end < start:
        raise ProbeError("the probe printed no result", output=stdout)
    body = stdout[start + len(BEGIN) : end].strip()
    try:
        return json.loads(body)
    except ValueError as exc:
        raise ProbeError(f"the probe printed malformed JSON ({exc})", output=stdout) from None


def run_script(
    python: str,
    name: str,
    *,
    timeout: float,
    args: Any = None,
    env: Optional[Mapping[str, str]] = None,
) -> tuple[Any, proc.ProcResult]:
    """Run probe script ``name`` under ``python`` (from a scratch cwd) and return (its JSON, the process result).

    Raises:
        ProbeError: the interpreter could not be started, timed out, crashed, printed
            something that is not the probe's JSON, or is older than Python 3.7.
    """
    return _run(python, name, probe_source(name), timeout=timeout, args=args, env=env)


def run_scripts(
    python: str,
    names: Sequence[str],
    *,
    timeout: float,
    args: Any = None,
    env: Optional[Mapping[str, str]] = None,
) -> tuple[list[Any], proc.ProcResult]:
    """Run probe scripts ``names`` in ONE start of ``python`` (each in its own namespace, all given ``args``)
    and return (the JSON of each, None for a later script that failed; the process result).

    One start instead of several: an interpreter with a big site-packages takes 50-100 ms of CPU to start.

    Raises:
        ProbeError: as :func:`run_script`, for the first script.
    """
    data, result = _run(python, names[0], combined_source(names), timeout=timeout, args=args, env=env)
    blocks = data.get("msdoctor_blocks") if isinstance(data, dict) else None
    if not isinstance(blocks, list) or len(blocks) != len(names) or blocks[0] is None:
        raise ProbeError(f"{python} did not produce the result of {names[0]}", output=result.stdout + result.stderr)
    return blocks, result


def _run(
    python: str, name: str, source: str, *, timeout: float, args: Any, env: Optional[Mapping[str, str]]
) -> tuple[Any, proc.ProcResult]:
    argv = [python, "-W", "ignore", "-"]
    if args is not None:
        argv.append(json.dumps(args))
    with scratch_dir("msdoctor-probe-") as cwd:
        result = proc.run(argv, timeout=timeout, input=source, cwd=cwd, env=safe_env(env))
    if result.start_error:
        raise ProbeError(
            f"cannot run {python}: {result.start_error}",
            fix="pass --python the path of a Python interpreter (or of a venv / conda env directory)",
        )
    if result.overflow:
        raise ProbeError(
            f"{python} wrote more than {proc.OUTPUT_CAP // (1024 * 1024)} MiB while probing and was stopped",
            fix="check what the interpreter runs at start-up (sitecustomize.py, .pth files, PYTHONSTARTUP), "
            "or pass --python a Python interpreter",
            output=result.stderr[-4000:],
        )
    if result.timed_out:
        raise ProbeError(
            f"{python} did not answer within {timeout:.0f} s (probe {name} stopped)",
            fix=(
                "check what the interpreter runs at start-up (sitecustomize.py, .pth files, "
                "PYTHONSTARTUP) or raise the limit with --probe-timeout"
            ),
            output=result.stdout + result.stderr,
        )
    try:
        data = extract_json(result.stdout)
    except ProbeError as exc:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        detail = " | ".join(tail) if tail else "no output"
        if result.returncode not in (0, None):
            msg = f"{python} exited with status {result.returncode} while probing: {detail}"
        else:
            msg = f"{python} did not produce the probe's result ({exc.message}); it printed: {detail}"
        raise ProbeError(
            msg,
            fix="make sure --python names a working Python >= 3.7 interpreter",
            output=result.stdout + result.stderr,
        ) from None
    if isinstance(data, dict) and isinstance(data.get("unsupported_python"), str):
        raise ProbeError(
            unsupported_message(data["unsupported_python"]),
            fix="pass --python a Python 3.7+ interpreter (the one your training runs with)",
            unsupported=True,
        )
    return data, result


def default_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment probes run with: the user's, with output encoding pinned."""
    env = dict(environ)
    env["PYTHONIOENCODING"] = "utf-8"
    env.pop("PYTHONINSPECT", None)
    return env


def is_python_like(path: str) -> bool:
    name = os.path.basename(path).lower()
    return name.startswith("python") or name.startswith("pypy")
