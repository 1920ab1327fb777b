"""Findings from the live device probe: did MindSpore really run on the requested device, and what did it log (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from msdoctor.checks.device_target.common import skipped_no_mindspore
from msdoctor.facts.live import LiveDevice, LogLine
from msdoctor.model import Finding

#: relative error allowed against the float64 reference. Generous on purpose: Ascend's
#: cube units may compute float32 matmuls at reduced (HF32/fp16) precision (INFERENCE);
#: a broken device gives garbage, NaN or zeros, orders of magnitude beyond this.
REL_TOLERANCE = 1e-2


@dataclass
class LiveContext:
    """What the live evaluation needs besides the probe result."""

    requested: Optional[str]
    python_cmd: str
    source_command: str  # "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
    hardware: dict[str, bool]  # target -> hardware present on the host (static evidence)
    wanted_devices: Optional[int] = None


def load_errors(message: str) -> str:
    """The useful part of MindSpore's "Unsupported device target" error: its first line and the load errors."""
    lines = (message or "").splitlines()
    keep = lines[:1] + [l for l in lines if l.startswith("Load dynamic library")]
    return "\n".join(keep)


_LOAD_PREFIX = "Load dynamic library: "


def missing_libraries(message: str) -> list[tuple[str, str]]:
    """(plugin, missing library) pairs from MindSpore's "Device load error message" block.

    Each block line reads "Load dynamic library: <plugin> failed. <library>: cannot open shared object file";
    the library is found by the error catalogue's shared-library entry, the same one `msdoctor explain` uses.
    """
    from msdoctor.explain import explain_lines, load_catalogue

    entries = [e for e in load_catalogue() if e.id == "shared-library-missing"]
    out: list[tuple[str, str]] = []
    for line in (message or "").splitlines():
        line = line.strip()
        if not line.startswith(_LOAD_PREFIX) or " failed." not in line:
            continue
        plugin = line[len(_LOAD_PREFIX) :].split(" failed.", 1)[0]
        out.extend((plugin, m.groups["lib"]) for m in explain_lines([line], entries))
    return out


def explain_missing(missing: list[tuple[str, str]], c: LiveContext) -> tuple[str, str]:
    """Why the backend plugin could not load, and the fix, from the first missing library (the catalogue's
    [[library]] table says who ships it)."""
    from msdoctor.explain import load_catalogue_full

    if not missing:
        return (
            "MindSpore could not load the backend plugin.",
            f"check the static findings above; {c.source_command} for Ascend",
        )
    plugin, lib = missing[0]
    owner = load_catalogue_full().library(lib)
    if owner is None:
        return (
            f"{plugin} needs {lib}, which the loader cannot find.",
            f"find the package that provides {lib} and add its directory to LD_LIBRARY_PATH",
        )
    fix = owner.fix.replace("{source}", c.source_command)
    return f"{plugin} needs {lib} from {owner.owner}, which the loader cannot find. {owner.cause}", fix


def log_findings(logs: list[LogLine], c: LiveContext) -> list[Finding]:
    """Findings for what MindSpore logged at WARNING and above that the error catalogue marks `live`
    (compat_matrix/errors.toml: CANN version mismatch, te/hccl wheels, opp_kernel, custom ops, libgomp)."""
    from msdoctor.explain import explain_lines, load_catalogue

    entries = [e for e in load_catalogue() if e.live_code]
    by_id = {e.id: e for e in entries}
    out: list[Finding] = []
    seen: set[str] = set()
    for line in logs:
        if line.level not in ("WARNING", "ERROR", "CRITICAL"):
            continue
        for m in explain_lines(line.message.splitlines(), entries):
            e = by_id[m.entry_id]
            if e.live_code in seen:
                continue
            seen.add(str(e.live_code))
            make = Finding.fail if e.live_status == "fail" else Finding.warn
            out.append(
                make(
                    m.title,
                    detail=f"{m.cause} MindSpore logged: {line.message.splitlines()[0][:400]}",
                    fix=m.fix_for(c.python_cmd, values={"source": c.source_command}),
                    evidence={"log": str(line)[:1000], "phase": line.phase, "catalogue": m.entry_id},
                    code=e.live_code,
                )
            )
    return out


def _fmt_s(value: Any) -> str:
    return f"{value:.2f} s" if isinstance(value, (int, float)) else "?"


def _crash(live: LiveDevice, c: LiveContext) -> list[Finding]:
    evidence = {
        "phase": live.last_phase,
        "returncode": live.returncode,
        "stderr_tail": live.stderr_tail[-10:],
        "logs": [str(l)[:500] for l in live.warnings()[-10:]],
    }
    if live.timed_out:
        return [
            Finding.error(
                f"the live device probe did not finish within {live.timeout_s:.0f} s (it was in phase "
                f"'{live.last_phase or 'interpreter start-up'}')",
                detail="Importing MindSpore and initialising the device hung or was too slow; msdoctor stopped it. "
                "A busy or stuck NPU can hang device initialisation; an interpreter that runs slow start-up code "
                "(sitecustomize.py, .pth files) delays everything.",
                fix=f'run `{c.python_cmd} -c "import mindspore"` by hand to see where it stalls; check `npu-smi info` for '
                "processes holding the device; or rerun with --quick to skip the live probe",
                evidence=evidence,
                code="live-timeout",
            )
        ]
    return [
        Finding.fail(
            f"MindSpore crashed in the target interpreter during '{live.last_phase or 'start-up'}'",
            detail=f"{live.failure}. A crash at import or device selection often means mismatched CANN/MindSpore "
            "versions (a CANN that this MindSpore release does not accept) or a broken install.",
            fix=f'run `{c.python_cmd} -c "import mindspore; mindspore.run_check()"` to see the full output',
            evidence=evidence,
            code="live-crash",
        )
    ]


def _numbers(comp: Any) -> tuple[bool, str]:
    rel = comp.get("max_rel_err")
    ok = bool(comp.get("finite")) and rel is not None and rel <= REL_TOLERANCE
    text = (
        f"max abs error {comp.get('max_abs_err'):.1e} vs NumPy float64 (relative {rel:.1e}, tolerance "
        f"{REL_TOLERANCE:.0e})"
        if rel is not None
        else "non-finite values in the result"
    )
    return ok, text


def live_findings(live: Optional[LiveDevice], c: LiveContext) -> list[Finding]:
    """Findings from the live probe (None: skipped with --quick, no findings)."""
    if live is None:
        return []  # --quick: the summary says the verdict rests on static evidence only
    if live.failure:
        return _crash(live, c)
    target = c.requested or (live.data.get("default_device") or "the default device")
    ver = live.mindspore_version
    logs = log_findings(live.logs, c)
    if live.data.get("mindspore_missing"):
        # the live probe found no mindspore module on the target's sys.path (find_spec; nothing imported)
        return logs + [skipped_no_mindspore(c.python_cmd)]
    if live.import_error:
        e = live.import_error
        not_installed = e.get("type") == "ModuleNotFoundError" and "mindspore" in e.get("message", "")
        return logs + [
            Finding.fail(
                f"import mindspore fails in the target interpreter: {e.get('summary')}",
                detail="Nothing can run before the import works." + ("" if not_installed else f" {e.get('where', '')}"),
                fix=f"{c.python_cmd} -m pip install --force-reinstall --no-deps mindspore=={ver}"
                if not_installed and ver
                else f"{c.python_cmd} -m pip install --force-reinstall --no-deps mindspore"
                if not_installed
                else f'run `{c.python_cmd} -c "import mindspore"` for the full traceback',
                evidence={"error": dict(e)},
                code="import-failed",
            )
        ]
    if live.set_device_error:
        e = live.set_device_error
        why, fix = explain_missing(missing_libraries(e.get("message", "")), c)
        return logs + [
            Finding.fail(
                f"MindSpore {ver} cannot use {target}: {e.get('summary')}",
                detail=f"{why} Captured MindSpore error:\n{load_errors(e.get('message', ''))[:1500]}",
                fix=fix,
                evidence={
                    "error_type": e.get("type"),
                    "error": e.get("message", "")[:4000],
                    "log_warnings": [str(l)[:500] for l in live.warnings()[:20]],
                    "missing_libraries": missing_libraries(e.get("message", "")),
                    "api": live.data.get("set_device_api"),
                },
                code="device-unusable",
            )
        ]
    if live.compute_error:
        e = live.compute_error
        return logs + [
            Finding.fail(
                f"a 64x64 matmul on {target} failed: {e.get('summary')}",
                detail=f"MindSpore {ver} selected the device but could not compute on it.\n{e.get('message', '')[:1500]}",
                fix=f"run `{c.python_cmd} -c \"import mindspore; mindspore.set_device('{target}'); mindspore.run_check()\"` "
                "for the full error",
                evidence={"error": dict(e)},
                code="compute-failed",
            )
        ]
    return logs + _ran(live, c, target)


def _ran(live: LiveDevice, c: LiveContext, target: str) -> list[Finding]:
    comp = live.compute or {}
    actual = live.device_target
    ok, numbers = _numbers(comp)
    # the stack is imported by the import smoke of the same process when it ran first
    imported = live.timings.get("smoke_s") if live.smoke is not None else live.timings.get("import_s")
    timing = f"imports {_fmt_s(imported)}, matmul {_fmt_s(comp.get('seconds'))}, probe {live.duration_s:.1f} s"
    evidence = {
        "mindspore": live.mindspore_version,
        "device_target": actual,
        "device_id": live.device_id,
        "device_count": live.device_count,
        "compute": comp,
        "timings": dict(live.timings),
        "log_warnings": [str(l)[:500] for l in live.warnings()[:20]],
    }
    out: list[Finding] = []
    if c.requested and actual != c.requested:
        out.append(
            Finding.fail(
                f"MindSpore was asked for {c.requested} but ran on {actual}",
                detail="MindSpore fell back silently; a run would train on the wrong device.",
                fix="see the static findings for what the requested device is missing",
                evidence=evidence,
                code="silent-fallback",
            )
        )
    if not c.requested:
        missed = [t for t, present in c.hardware.items() if present and t != actual]
        for t in missed:
            out.append(
                Finding.warn(
                    f"{t} hardware is present, but MindSpore picks {actual} by default",
                    detail=f"Without device_target MindSpore chose {actual}: the {t} backend did not load, so a run "
                    "that does not set the device trains on the CPU.",
                    fix=f"set the device explicitly (`--device-target {t}`, or runtime.device_target in the config) and "
                    "rerun msdoctor to see why it cannot be used",
                    evidence=evidence,
                    code="default-not-accelerator",
                )
            )
    if not ok:
        out.append(
            Finding.fail(
                f"the matmul on {actual} gave wrong numbers: {numbers}",
                detail="The device computes, but not correctly: a broken driver/firmware or operator package.",
                fix="run the CANN/driver self-test (`npu-smi info -t health`) and reinstall the operator packages",
                evidence=evidence,
                code="wrong-numbers",
            )
        )
    # judged per msrun worker, as msrun launches them: each of this node's workers takes one device of this node.
    # A CPU worker is its own process on its own CPU device (CPU:0 in each; observed: tiny-cpu-dp2.yaml trains on
    # 2 msrun workers while the probe's single process sees 1 CPU device), so CPU needs no more than the one.
    if actual != "CPU" and c.wanted_devices and live.device_count is not None and live.device_count < c.wanted_devices:
        out.append(
            Finding.warn(
                f"MindSpore sees {live.device_count} {actual} device(s); the config's msrun workers on this node need "
                f"{c.wanted_devices}, one device each",
                fix="lower the parallel degrees, or check ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES",
                evidence=evidence,
                code="too-few-devices",
            )
        )
    if ok:
        count = f"; {live.device_count} {actual} device(s) visible" if live.device_count is not None else ""
        out.insert(
            0,
            Finding.passed(
                f"MindSpore {live.mindspore_version} ran a 64x64 matmul on {actual}:{live.device_id}",
                proved=f"ran a 64x64 float32 matmul on {actual}:{live.device_id} in a fresh {c.python_cmd}: {numbers}"
                f"{count}; {timing}",
                evidence=evidence,
            ),
        )
    return out
