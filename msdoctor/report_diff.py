"""What differs between two ``msdoctor check --format json`` reports ("works on node A, not on node B").

Compares Python and platform, installed package versions, environment variables msdoctor reads (CANN paths,
MS_*/HCCL_*/RANK_* ...), any further facts (CANN/driver versions, device counts, when checks record them),
and the checks' verdicts and version/count evidence. Differences in per-node identity (paths of the
interpreter, RANK_ID, DEVICE_ID, MS_NODE_ID, run time and duration) are listed but do not count.
Used by ``msdoctor diff`` and by the preflight's per-node comparison.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator


from msdoctor.errors import UserError
from msdoctor.model import SCHEMA_VERSION

#: env vars that are meant to differ between ranks / nodes
PER_NODE_ENV = frozenset(
    {
        "RANK_ID",
        "DEVICE_ID",
        "MS_NODE_ID",
        "MS_ROLE",
        "RANK",
        "LOCAL_RANK",
        "NODE_RANK",
        "HOSTNAME",
        "ASCEND_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
    }
)
PER_NODE_PREFIXES = ("JPY_", "VSCODE_")
#: evidence keys worth comparing across nodes
EVIDENCE_KEYS = re.compile(r"version|count|devices?|cann|driver|firmware|soc|hbm|memory|target", re.IGNORECASE)
#: leaf names that are run-specific, never environment facts
VOLATILE = re.compile(r"(^|_)(time|duration|duration_s|pid|started|started_at|elapsed)($|_)", re.IGNORECASE)
MISSING = object()
#: facts sections only a part of the run collects: section -> that part (as named in facts.invocation.collected).
#: mindspore_runtime comes from the live device probe (msdoctor/doctor.py _device_facts), which --quick never runs.
SECTION_PART = {"mindspore_runtime": "live"}
#: what a report collected when it does not say (reports written before facts.invocation.collected existed)
ALL_PARTS = ("static", "live")


@dataclass
class Difference:
    section: str
    key: str
    a: Any
    b: Any
    matters: bool
    #: present in one report only because the other was a --quick run, which skips the live parts
    not_run: bool = False


def load_report(path: Path) -> dict:
    """A JSON report from ``msdoctor check --format json``; UserError (exit 2) with file and reason otherwise."""
    from msdoctor.inputs import REPORT_CAP, read_text

    path = Path(path).expanduser()
    if not path.exists() and not path.is_symlink():
        raise UserError(f"{path}: no such file", "write it with: msdoctor check --format json --output " + str(path))
    from msdoctor.docfile import load_json_text
    from msdoctor.schema import REPORT, require

    fix = "pass a report written by: msdoctor check --format json --output FILE (unedited)"
    doc = load_json_text(read_text(path, cap=REPORT_CAP, what="JSON report"), path)
    data = doc.data
    if not isinstance(data, dict) or "schema_version" not in data or "checks" not in data:
        raise UserError(
            f"{path}: not an msdoctor JSON report (no schema_version / checks)",
            "write it with: msdoctor check --format json --output FILE",
        )
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise UserError(
            f"{path}: report schema_version {version!r} is newer than this msdoctor reads ({SCHEMA_VERSION})",
            "upgrade msdoctor here, or write both reports with the same msdoctor version",
        )
    return dict(require(doc, REPORT, what="an msdoctor JSON report", fix=fix))


def _flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        if not value:
            yield prefix, {}
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list) and any(isinstance(x, (dict, list)) for x in value):
        for i, v in enumerate(value):
            yield from _flatten(v, f"{prefix}[{i}]")
    else:
        yield prefix, value


def _pairs(a: dict, b: dict) -> Iterator[tuple[str, Any, Any]]:
    fa = dict(_flatten(a, "")) if a else {}  # nothing at all: no keys, not one key "" holding {}
    fb = dict(_flatten(b, "")) if b else {}
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key, MISSING), fb.get(key, MISSING)
        if va != vb:
            yield key, va, vb


def _env_matters(name: str) -> bool:
    return name not in PER_NODE_ENV and not name.startswith(PER_NODE_PREFIXES)


def _facts(a: dict, b: dict) -> list[Difference]:
    out = []
    fa, fb = a.get("facts") or {}, b.get("facts") or {}
    both = collected(a) & collected(b)
    for section in sorted(set(fa) | set(fb)):
        # an absent section contributes nothing (its keys are absent), never a placeholder {} on the wrong side
        va = {section: fa[section]} if section in fa else {}
        vb = {section: fb[section]} if section in fb else {}
        for key, x, y in _pairs(va, vb):
            leaf = key.split(".", 1)[1] if "." in key else key
            part = SECTION_PART.get(section)
            if part is not None and part not in both:
                out.append(Difference(section, key, x, y, False, not_run=True))
            elif section == "packages":
                out.append(Difference("packages", leaf, x, y, True))
            elif section == "env":
                out.append(Difference("env vars", leaf, x, y, _env_matters(leaf)))
            elif section == "python":
                out.append(Difference("python", key, x, y, leaf in ("version", "env_kind")))
            elif section == "platform":
                out.append(Difference("platform", key, x, y, not leaf.startswith("release")))
            elif section == "invocation":
                out.append(Difference("invocation", key, x, y, False))
            else:
                last = key.rsplit(".", 1)[-1]
                out.append(Difference(section, key, x, y, not VOLATILE.search(last)))
    return out


def _checks(a: dict, b: dict) -> list[Difference]:
    out = []
    ca = {c.get("id"): c for c in a.get("checks") or [] if isinstance(c, dict)}
    cb = {c.get("id"): c for c in b.get("checks") or [] if isinstance(c, dict)}
    for cid in sorted(set(ca) | set(cb), key=str):
        x, y = ca.get(cid), cb.get(cid)
        if x is None or y is None:
            out.append(
                Difference("checks", f"{cid}", x["status"] if x else MISSING, y["status"] if y else MISSING, True)
            )
            continue
        if x.get("status") != y.get("status"):
            out.append(Difference("checks", f"{cid}", x.get("status"), y.get("status"), True))
        ev_a = _evidence(x)
        ev_b = _evidence(y)
        for key, va, vb in _pairs(ev_a, ev_b):
            if EVIDENCE_KEYS.search(key) and not VOLATILE.search(key.rsplit(".", 1)[-1]):
                out.append(Difference("checks", f"{cid}: {key}", va, vb, True))
        titles_a = {(f.get("status"), f.get("title")) for f in x.get("findings") or [] if f.get("status") != "pass"}
        titles_b = {(f.get("status"), f.get("title")) for f in y.get("findings") or [] if f.get("status") != "pass"}
        for status, title in sorted(titles_a - titles_b, key=str):
            out.append(Difference("findings", f"{cid}: {status}", title, MISSING, False))
        for status, title in sorted(titles_b - titles_a, key=str):
            out.append(Difference("findings", f"{cid}: {status}", MISSING, title, False))
    return out


def _evidence(check: dict) -> dict:
    """Evidence of a check's findings keyed by finding code (or position), scalars only."""
    out: dict[str, Any] = {}
    for i, f in enumerate(check.get("findings") or []):
        ev = f.get("evidence") or {}
        if isinstance(ev, dict) and ev:
            out[f.get("code") or f"finding{i}"] = ev
    return out


def _target(a: dict, b: dict) -> list[Difference]:
    out = []
    ta, tb = a.get("target") or {}, b.get("target") or {}
    for key in ("python_version", "implementation", "env_kind", "platform"):
        if ta.get(key) != tb.get(key):
            out.append(Difference("python", f"target.{key}", ta.get(key), tb.get(key), True))
    for key in ("executable", "prefix", "env_name"):
        if ta.get(key) != tb.get(key):
            out.append(Difference("python", f"target.{key}", ta.get(key), tb.get(key), False))
    return out


def _quick(report: dict) -> bool:
    return bool(((report.get("facts") or {}).get("invocation") or {}).get("quick"))


def collected(report: dict) -> set[str]:
    """The parts of the run this report collected: "static" always, "live" (the live device probe) unless --quick."""
    inv = (report.get("facts") or {}).get("invocation") or {}
    parts = inv.get("collected")
    if isinstance(parts, list) and all(isinstance(p, str) for p in parts):
        return set(parts)
    return {"static"} if inv.get("quick") else set(ALL_PARTS)


def not_compared(a: dict, b: dict) -> list[str]:
    """The parts one report collected and the other did not (compared on neither side)."""
    ca, cb = collected(a), collected(b)
    return sorted((ca | cb) - (ca & cb))


def _not_run(d: Difference, quick_a: bool, quick_b: bool) -> Difference:
    """A check or evidence the --quick side never produced is "not run", not a difference that matters."""
    if d.section != "checks":
        return d
    skipped = (quick_a and (d.a is MISSING or d.a == "skip")) or (quick_b and (d.b is MISSING or d.b == "skip"))
    return replace(d, matters=False, not_run=True) if skipped else d


def compare(a: dict, b: dict) -> list[Difference]:
    """Every difference between two reports, each marked as mattering, not mattering, or not run."""
    quick_a, quick_b = _quick(a), _quick(b)
    diffs = _target(a, b) + _facts(a, b) + [_not_run(d, quick_a, quick_b) for d in _checks(a, b)]
    # the same fact can come from target and facts.python: keep one line per value pair and section
    seen, out = set(), []
    for d in diffs:
        sig = (d.section, repr(d.a), repr(d.b), d.key.rsplit(".", 1)[-1])
        if sig in seen:
            continue
        seen.add(sig)
        out.append(d)
    return out
