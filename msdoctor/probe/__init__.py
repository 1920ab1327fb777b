"""Scripts run BY THE TARGET INTERPRETER in a subprocess, and the code that runs them.

Every file in this package except this one is a standalone, stdlib-only script
that parses as Python 3.7. It is fed to ``<python> -W ignore -`` on stdin (no
``-I``/``-E``/``-s``: PYTHONPATH and the user site are often the problem), from
the project directory, and prints one JSON object between marker lines.
Arguments reach the script as one JSON string in ``sys.argv[1]``.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Optional

from msdoctor import proc

BEGIN = "@@MSDOCTOR-PROBE-BEGIN@@"
END = "@@MSDOCTOR-PROBE-END@@"


class ProbeError(Exception):
    """A probe could not produce its JSON. ``message`` says why, ``fix`` what to do."""

    def __init__(self, message: str, fix: Optional[str] = None, output: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.output = output


def script_source(name: str) -> str:
    """The source of probe script ``name`` (e.g. "target_probe.py")."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8") if hasattr(
        resources, "files"
    ) else resources.read_text(__name__, name)  # pragma: no cover - Python < 3.9


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
    cwd: Optional[Path] = None,
    args: Any = None,
    env: Optional[Mapping[str, str]] = None,
) -> tuple[Any, proc.ProcResult]:
    """Run probe script ``name`` under ``python`` and return (its JSON, the process result).

    Raises:
        ProbeError: the interpreter could not be started, timed out, crashed, or
            printed something that is not the probe's JSON.
    """
    argv = [python, "-W", "ignore", "-"]
    if args is not None:
        argv.append(json.dumps(args))
    run_cwd = cwd if cwd is not None and Path(cwd).is_dir() else None
    result = proc.run(argv, timeout=timeout, input=script_source(name), cwd=run_cwd, env=env)
    if result.start_error:
        raise ProbeError(
            f"cannot run {python}: {result.start_error}",
            fix="pass --python the path of a Python interpreter (or of a venv / conda env directory)",
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
