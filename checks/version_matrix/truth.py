"""version-matrix: ground truth beats metadata.

When the live probe (one fresh target process) imported the installed stack in training-script order
AND computed a correct matmul on the requested device, a conflict that only the metadata shows
(pip check's complaint: mindspore 2.7.0 declares numpy<2, numpy 2.2.6 is installed) is a warning
with that evidence, not a failure. What was proved is said exactly: the device it ran on, and
nothing about the others (a pass on CPU says nothing about Ascend, where CANN's TBE Python stack
brings its own numpy requirements). Known runtime breakages and failed imports keep failing, with
the real error from the probe.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from msdoctor.model import Finding, Status

#: findings that come from metadata alone (Requires-Dist, the matrix's copies of it)
METADATA_CODES = frozenset(
    {
        "requirement-conflict",
        "requirement-missing",
        "mindspore-numpy",
        "mindspore-protobuf",
        "mindnlp-mindspore",
        "mindformers-mindspore",
        "mindformers-transformers",
    }
)


def proof(live: Any, smoke: Any, requested: Optional[str]) -> Optional[dict[str, Any]]:
    """What the live probe proved, or None when it did not prove the stack works on the requested device."""
    from msdoctor.checks.device_target.live import REL_TOLERANCE

    if live is None or smoke is None or smoke.state != "ran" or smoke.failed_step is not None or not smoke.steps:
        return None
    if live.failure or live.import_error or live.set_device_error or live.compute_error:
        return None
    comp = live.compute or {}
    rel = comp.get("max_rel_err")
    if not comp.get("finite") or rel is None or rel > REL_TOLERANCE:
        return None
    device = live.device_target
    if not device or (requested and device != requested):
        return None
    others = [d for d in ("Ascend", "GPU", "CPU") if d != device]
    imported = [f"{s['module']} {s.get('version') or ''}".strip() for s in smoke.steps if s.get("ok")]
    return {
        "python": live.python,
        "device": f"{device}:{live.device_id}",
        "device_target": device,
        "requested": requested,
        "imported": imported,
        "order": list(smoke.planned),
        "matmul_max_rel_err": rel,
        "said": (
            f"in a fresh {live.python} process the stack imported in training-script order "
            f"({', '.join(imported)}) and a 64x64 float32 matmul on {device}:{live.device_id} matched NumPy "
            f"(relative error {rel:.1e}); this proves nothing about {' or '.join(others)}"
        ),
    }


def demote(findings: list[Finding], proved: Optional[dict[str, Any]]) -> list[Finding]:
    """Metadata-only failures become warnings carrying the proof; everything else is unchanged."""
    if proved is None:
        return findings
    out = []
    for f in findings:
        if f.status is Status.FAIL and f.code in METADATA_CODES:
            out.append(
                replace(
                    f,
                    status=Status.WARN,
                    title=f.title + f" (metadata only: the stack works on {proved['device_target']})",
                    detail=(
                        f"{f.detail} Ground truth outranks the metadata here: {proved['said']}. pip check still "
                        "reports the conflict; matching the metadata is the safe choice before a run on "
                        "another device."
                    ).strip(),
                    evidence={**f.evidence, "ground_truth": proved, "metadata_status": "fail"},
                )
            )
        else:
            out.append(f)
    return out
