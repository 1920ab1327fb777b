"""Check version-matrix: do MindSpore, MindNLP, MindFormers, transformers, numpy, Python, CANN, driver and CUDA fit together.

The static part reads metadata and version files only (no package is imported in msdoctor's
process); it compares them with compat_matrix/ and reports each broken relationship once, with
both versions, the alternatives and the exact fix for the target interpreter. The import smoke
(skipped with --quick) then imports the stack in a fresh target process, in training-script order.

Rules live in this package's modules: stack (Python, numpy, protobuf, known breakages),
nlp (MindNLP, MindFormers), requires (pip check), ascend (CANN, driver), gpu (CUDA),
smoke (the import smoke); common holds what they share.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Optional

from msdoctor.context import Context
from msdoctor.facts.import_smoke import IMPORT_SMOKE
from msdoctor.facts.matrix import MATRIX
from msdoctor.model import Finding, Status

if TYPE_CHECKING:  # the rule modules load when the check runs: every `msdoctor` run imports this module
    from msdoctor.facts.target import TargetFacts
    from msdoctor.checks.version_matrix.gpu import GpuFacts
    from msdoctor.facts.cann import CannFacts
    from msdoctor.matrix import Matrix


@dataclass
class MatrixInputs:
    """Everything the static part concludes from (tests build it with tiny fakes)."""

    target: Any  # TargetFacts
    matrix: Matrix
    cann: CannFacts
    gpu: GpuFacts
    requested: Optional[str] = None  # the device target the run asks for, if known


def evaluate_packages(t: "TargetFacts", m: Matrix) -> list[Finding]:
    """The rules on installed packages (known breakages, MindSpore, MindNLP, MindFormers, Requires-Dist):
    the ones a pip install can repair (its fixer, ``fix.py``, runs them on its planned overlay too).
    The most specific rule reports a pair first; later rules skip pairs already reported."""
    from msdoctor.checks.version_matrix.common import installed_versions
    from msdoctor.checks.version_matrix.nlp import evaluate_mindformers, evaluate_mindnlp
    from msdoctor.checks.version_matrix.requires import evaluate_requirements
    from msdoctor.checks.version_matrix.stack import evaluate_breakages, evaluate_mindspore

    reported: set = set()
    out = evaluate_breakages(t, m, installed_versions(t), reported)
    out += evaluate_mindspore(t, m, reported)
    out += evaluate_mindnlp(t, m, reported)
    out += evaluate_mindformers(t, m, reported)
    out += evaluate_requirements(t, reported)
    return out


def evaluate_static(f: MatrixInputs) -> list[Finding]:
    """Rules 1-6: the package rules (:func:`evaluate_packages`), then CANN / driver and CUDA."""
    from msdoctor.checks.version_matrix.ascend import evaluate_ascend
    from msdoctor.checks.version_matrix.gpu import evaluate_gpu

    out = evaluate_packages(f.target, f.matrix)
    out += evaluate_ascend(f.target, f.cann, f.matrix)
    out += evaluate_gpu(f.target, f.gpu, f.matrix, f.requested)
    return out


def fold_skips(findings: list[Finding]) -> list[Finding]:
    """Parts that did not apply are noted on the first pass instead of turning the whole check into a skip."""
    skips = [f for f in findings if f.status is Status.SKIP]
    rest = [f for f in findings if f.status is not Status.SKIP]
    if not rest or not skips:
        return findings
    first = next((i for i, f in enumerate(rest) if f.status is Status.PASS), None)
    if first is None:
        return rest
    note = "Not compared: " + "; ".join(f"{f.title} ({f.detail})" for f in skips)
    rest[first] = replace(
        rest[first],
        detail=(rest[first].detail + " " + note).strip(),
        evidence={**rest[first].evidence, "not_compared": [f.title for f in skips]},
    )
    return rest


def accepted_prefixes(t: "TargetFacts", m: Matrix) -> Optional[list[str]]:
    """MindSpore's accepted CANN prefixes: the installed file's list, else the matrix's."""
    from msdoctor.checks.version_matrix.ascend import installed_accepted_list
    from msdoctor.checks.version_matrix.common import mindspore_dir

    found = installed_accepted_list(mindspore_dir(t))
    if found is not None:
        return found
    row = m.mindspore(t.version_of("mindspore"))
    return list(m.accepted_cann_prefixes(row)[0]) if row else None


def _requested(ctx: Context) -> Optional[str]:
    from msdoctor.facts.config import requested_device_target

    try:
        return requested_device_target(ctx)
    except Exception:  # noqa: BLE001 - any error of the config fact is the config check's finding, not this one's
        return None


class VersionMatrixCheck:
    id = "version-matrix"
    title = "Version matrix"
    description = "MindSpore, MindNLP, MindFormers, transformers, numpy, Python, CANN, driver and CUDA fit together"
    order = 20  # place in reports: environment first, then stack, devices, editors, project
    prefetch = (IMPORT_SMOKE, MATRIX)
    #: the live probe (--live-timeout) and, when a pip fix is due, the target's resolver (fix.py budget)
    timeout_s = 600.0

    def run(self, ctx: Context) -> list[Finding]:
        from msdoctor.checks.version_matrix.common import mindspore_dir
        from msdoctor.checks.version_matrix.gpu import read_gpu
        from msdoctor.checks.version_matrix.smoke import evaluate_smoke
        from msdoctor.facts.cann import CANN
        from msdoctor.matrix import MatrixError

        t = ctx.target
        try:
            m = ctx.get(MATRIX)
        except MatrixError as exc:
            return [
                Finding.error(
                    f"msdoctor's compatibility matrix is broken: {exc}",
                    fix="reinstall msdoctor; if it persists, report it",
                )
            ]
        from msdoctor.facts.nvidia import NVIDIA

        gpu = read_gpu(ctx.environ, t.env.get("LD_LIBRARY_PATH", ""), mindspore_dir(t), lambda: ctx.get(NVIDIA))
        inputs = MatrixInputs(t, m, ctx.get(CANN), gpu, _requested(ctx))
        findings = evaluate_static(inputs)
        smoke = ctx.get(IMPORT_SMOKE)
        findings += evaluate_smoke(t, smoke, accepted_prefixes(t, m))
        return fold_skips(_ground_truth_and_plan(ctx, t, smoke, inputs.requested, findings))


def _ground_truth_and_plan(
    ctx: Context, t: "TargetFacts", smoke: Any, requested: Optional[str], findings: list[Finding]
) -> list[Finding]:
    """Metadata-only conflicts the live probe disproved become warnings; every pip fix becomes ONE checked command."""
    from msdoctor.checks.version_matrix.truth import demote, proof
    from msdoctor.checks.version_matrix.fix import STACK_PLAN, apply_to_findings, pip_fixable, quick_plan

    if not ctx.quick:
        from msdoctor.facts.live import LIVE_DEVICE

        findings = demote(findings, proof(ctx.get(LIVE_DEVICE), smoke, requested))
    if not pip_fixable(findings):
        return findings
    plan = quick_plan(t, findings) if ctx.quick else ctx.get(STACK_PLAN)
    return apply_to_findings(findings, plan)
