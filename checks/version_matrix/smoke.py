"""version-matrix rule 7: the import smoke (msdoctor.facts.import_smoke) turned into findings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from msdoctor.facts.import_smoke import SmokeResult
from msdoctor.matrix import cann_prefix
from msdoctor.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    from msdoctor.facts.target import TargetFacts


def _order(result: SmokeResult) -> str:
    return " -> ".join(f"import {m}" for m in result.planned)


def evaluate_smoke(t: "TargetFacts", result: SmokeResult, accepted: Optional[Sequence[str]] = None) -> list[Finding]:
    """accepted: MindSpore's accepted CANN prefixes, to judge te.version.version when te was imported."""
    if result.state == "skipped":
        return [Finding.skipped("import smoke not run", reason=result.reason)]
    evidence = {
        "python": result.python,
        "order": result.planned,
        "seconds": round(result.seconds, 2),
        "steps": result.steps,
        "mindspore_log": result.log_lines,
    }
    if result.state == "timeout":
        return [
            Finding.error(
                f"the import smoke did not finish within its limit (stuck in `import {result.crashed_in}`)",
                detail=f"{_order(result)} in a fresh {result.python} process: {result.reason}. An import that hangs "
                "usually waits for a device, a lock or the network.",
                fix=f'run `{result.python} -c "import {result.crashed_in}"` to see where it stops',
                evidence=evidence,
                code="import-timeout",
            )
        ]
    if result.state == "crashed":
        tail = " | ".join(result.output_tail[-3:])
        return [
            Finding.fail(
                f"`import {result.crashed_in}` crashed the interpreter"
                if result.crashed_in
                else "the import smoke could not run",
                detail=f"{result.reason}. Last output: {tail or 'none'}. A crash at import is typical of MindSpore "
                "running against a CANN it does not match (users report the version warning, then a segmentation fault).",
                fix=f'run `{result.python} -c "import {result.crashed_in or "mindspore"}"` and compare its CANN with '
                "`msdoctor matrix`",
                evidence=evidence,
                code="import-crash",
            )
        ]
    failed = result.failed_step
    if failed is not None:
        done = [s["module"] for s in result.steps if s.get("ok")]
        return [
            Finding.fail(
                f"`import {failed['module']}` fails: {failed.get('last_line')}",
                detail=(
                    f"In a fresh {result.python} process, importing in training-script order ({_order(result)})"
                    + (f", {', '.join(done)} imported fine, then" if done else ",")
                    + f" `import {failed['module']}` raised:\n"
                    + "\n".join(failed.get("traceback_tail") or [])
                ),
                fix=f'reproduce with `{result.python} -c "import {failed["module"]}"`; the traceback names the module '
                "that is missing or the version that breaks it (other findings of this check give the fix for known ones)",
                evidence=evidence,
                code="import-fails",
            )
        ]
    out = []
    te = next((s for s in result.steps if s["module"] == "te" and s.get("version")), None)
    if te and accepted and cann_prefix(te["version"]) not in accepted:
        out.append(
            Finding.fail(
                f"CANN's te wheel reports version {te['version']}, MindSpore accepts {', '.join(accepted)}",
                detail="MindSpore compares te.version.version at import, warns and counts down, then compiles operators "
                "with this te (MindSpore's Ascend install guide).",
                fix=f"{t.python_cmd()} -m pip uninstall -y te hccl, then install the te and hccl wheels from the lib64 "
                "folder of the CANN you use",
                evidence=evidence,
                code="te-version",
            )
        )
    parts = []
    for s in result.steps:
        ver = s.get("version") if s["module"] != "mindnlp" else t.version_of("mindnlp")
        touched = "".join(f", {s['module']}.{a}" for a in s.get("touched") or [])
        parts.append(f"import {s['module']}{touched} ({ver or 'ok'}, {s.get('seconds', 0):.1f} s)")
    out.insert(
        0,
        Finding.passed(
            f"the stack imports in training-script order ({', '.join(result.planned)})",
            proved=f"in a fresh {result.python} process, in this order: " + "; ".join(parts),
            evidence=evidence,
        ),
    )
    return out
