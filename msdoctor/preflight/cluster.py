"""Rank 0's verdict from every rank's JSON document: findings, the report file, the table. Pure: no MindSpore.

Every rank computes the same verdict from the same gathered documents, so every worker exits with the
same status and ``msrun --join True`` returns non-zero on every node when anything failed.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from msdoctor.model import CheckResult, Finding, Report, Status, Target

from .bandwidth import Row, Verdict, judge
from .identity import PER_NODE_ENV, TIMEOUT_VARS
from .wire import Assembly

#: preflight-report.json schema (docs/preflight-report.md); bump on incompatible changes
#: (2: each distinct environment and node check once, in "environments"; "ranks" are the ranks' own parts)
PREFLIGHT_SCHEMA_VERSION = 2


@dataclass
class Options:
    straggler_ratio: float = 0.7
    baseline: Optional[dict[str, Any]] = None
    baseline_path: Optional[str] = None
    expected_python_prefix: Optional[str] = None
    extra: dict[str, Any] = field(default_factory=dict)


def ranks_text(ranks: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    rs = sorted(set(int(r) for r in ranks))
    parts, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ", ".join(parts)


def _pseudo_report(doc: dict) -> dict:
    """A rank's facts in the shape ``msdoctor diff`` compares (facts.python / packages / env / platform)."""
    f = doc.get("facts") or {}
    env = dict(f.get("env") or {})  # per-node names stay in: they are listed as differences that do not count
    return {
        "schema_version": 1,
        "checks": [],
        "target": {
            "python_version": (f.get("python") or {}).get("version"),
            "implementation": (f.get("python") or {}).get("implementation"),
        },
        "facts": {
            "python": {k: v for k, v in (f.get("python") or {}).items() if k in ("version", "implementation")},
            "packages": f.get("packages") or {},
            "env": env,
            "platform": {k: v for k, v in (f.get("platform") or {}).items() if k in ("system", "machine")},
        },
    }


def differences(docs: Sequence[dict]) -> list[dict]:
    """What differs between ranks (msdoctor diff's rules) and between the nodes' check reports.

    Each entry: section, key, matters, and the value each group of ranks has.
    """
    from msdoctor.report_diff import MISSING, compare

    if not docs:
        return []
    base = docs[0]
    found: dict[tuple[str, str], dict[str, Any]] = {}

    def add(section: str, key: str, matters: bool, values: dict[int, Any]) -> None:
        leaf = key.rsplit(".", 1)[-1]
        if section == "env vars" and leaf in PER_NODE_ENV:
            matters = False
        entry = found.setdefault((section, key), {"section": section, "key": key, "matters": matters, "values": {}})
        entry["matters"] = entry["matters"] or matters
        for r, v in values.items():
            entry["values"][r] = None if v is MISSING else v

    pa = _pseudo_report(base)
    for doc in docs[1:]:
        for d in compare(pa, _pseudo_report(doc)):
            add(d.section, d.key, d.matters, {base["rank"]: d.a, doc["rank"]: d.b})
    # node level: the first rank of each node ran `msdoctor check`; compare node 0's with each other node's
    node_docs = [d for d in docs if isinstance(d.get("node_check"), dict) and "checks" in d["node_check"]]
    for doc in node_docs[1:]:
        for d in compare(node_docs[0]["node_check"], doc["node_check"]):
            if d.section == "env vars":
                continue  # compared per rank above, with the per-node names excluded
            add("node check: " + d.section, d.key, d.matters, {node_docs[0]["rank"]: d.a, doc["rank"]: d.b})
    out = []
    for entry in found.values():
        # ranks not named in a pair have the base rank's value
        groups: dict[str, dict[str, Any]] = {}
        base_value = entry["values"].get(base["rank"])
        for doc in docs:
            r = doc["rank"]
            v = entry["values"].get(r, base_value)
            if entry["section"].startswith("node check") and r not in entry["values"]:
                continue
            g = groups.setdefault(repr(v), {"value": v, "ranks": []})
            g["ranks"].append(r)
        entry["values"] = sorted(groups.values(), key=lambda g: min(g["ranks"]))
        out.append(entry)
    return sorted(out, key=lambda e: (not e["matters"], e["section"], e["key"]))


#: a per-node variable (RANK_ID, MS_WORKER_IP ...) with more distinct values than this is counted, not listed
MAX_LISTED_VALUES = 64


def differences_assembled(asm: Assembly) -> list[dict]:
    """:func:`differences` over each distinct (environment, node check) once, then the per-rank variables.

    The same entries as :func:`differences` on every rank's full document (tests/test_preflight_scale.py
    proves it), at a cost that grows with the distinct environments, not with the ranks.
    """
    classes: dict[tuple[str, Optional[str]], list[int]] = {}
    for p in asm.parts:
        classes.setdefault((p["blobs"]["env"], p["blobs"].get("node_check")), []).append(p["rank"])
    reps = [
        {
            "rank": ranks[0],
            "facts": asm.blobs[key[0]].get("facts") or {},
            "node_check": asm.blobs[key[1]] if key[1] else None,
        }
        for key, ranks in classes.items()
    ]
    members = {ranks[0]: ranks for ranks in classes.values()}
    out = differences(reps)
    for e in out:
        for v in e["values"]:
            v["ranks"] = sorted(r for rep in v["ranks"] for r in members[rep])
    names = sorted({k for p in asm.parts for k in p.get("env") or {}})
    for name in names:
        groups: dict[str, dict[str, Any]] = {}
        for p in asm.parts:
            v = (p.get("env") or {}).get(name)
            groups.setdefault(repr(v), {"value": v, "ranks": []})["ranks"].append(p["rank"])
        if len(groups) > MAX_LISTED_VALUES:  # one per rank or node by construction: counted, not listed
            out.append(
                {
                    "section": "env vars",
                    "key": name,
                    "matters": False,
                    "distinct_values": len(groups),
                    "values": [
                        {
                            "value": f"({len(groups)} distinct values: set per node or rank)",
                            "ranks": [p["rank"] for p in asm.parts],
                        }
                    ],
                }
            )
        elif len(groups) > 1:
            out.append(
                {
                    "section": "env vars",
                    "key": name,
                    "matters": False,
                    "values": sorted(groups.values(), key=lambda g: min(g["ranks"])),
                }
            )
    return sorted(out, key=lambda e: (not e["matters"], e["section"], e["key"]))


def _node_of(docs: Sequence[dict]) -> dict[int, Optional[int]]:
    return {d["rank"]: (d.get("identity") or {}).get("node_rank") for d in docs}


def _where(ranks: Sequence[int], node_of: dict[int, Optional[int]]) -> str:
    nodes = sorted({n for n in (node_of.get(r) for r in ranks) if n is not None})
    return f"rank(s) {ranks_text(ranks)}" + (f" (node_rank {', '.join(str(n) for n in nodes)})" if nodes else "")


def timeouts(docs: Sequence[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in TIMEOUT_VARS:
        groups: dict[str, dict[str, Any]] = {}
        for d in docs:
            t = (d.get("timeouts") or {}).get(name) or {}
            g = groups.setdefault(repr(t.get("value")), {"value": t.get("value"), "sources": set(), "ranks": []})
            g["sources"].add(t.get("source"))
            g["ranks"].append(d["rank"])
        vals = [
            {"value": g["value"], "source": "; ".join(sorted(s for s in g["sources"] if s)), "ranks": g["ranks"]}
            for g in groups.values()
        ]
        out[name] = {"equal": len(vals) == 1, "values": sorted(vals, key=lambda v: min(v["ranks"]))}
    return out


def _finding(status: Status, title: str, *, proved: Optional[str] = None, **kw: Any) -> Finding:
    if status is Status.PASS:
        return Finding.passed(title, proved=proved or title, **kw)
    return Finding(status, title, **kw)


def _result(cid: str, title: str, description: str, findings: list[Finding]) -> CheckResult:
    if not findings:
        findings = [Finding.skipped(f"{title}: nothing to check", reason="no rank reported data for it")]
    return CheckResult(cid, title, description, findings)


def collectives_summary(docs: Sequence[dict]) -> list[dict]:
    """One row per (op, dtype, group): the worst outcome over ranks and the ranks of each outcome."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    order = {"ok": 0, "unsupported": 1, "wrong": 2, "error": 3}
    for d in docs:
        for c in d.get("collectives") or []:
            k = (c["op"], c["dtype"], c.get("group", "world"))
            row = rows.setdefault(
                k,
                {
                    "op": c["op"],
                    "dtype": c["dtype"],
                    "group": c.get("group", "world"),
                    "required": bool(c.get("required")),
                    "why": c.get("why"),
                    "status": "ok",
                    "ranks": defaultdict(list),
                    "detail": None,
                },
            )
            row["ranks"][c["status"]].append(d["rank"])
            if order.get(c["status"], 3) > order.get(row["status"], 0):
                row["status"] = c["status"]
                row["detail"] = c.get("detail")
    out = []
    for row in rows.values():
        row["ranks"] = {k: sorted(v) for k, v in row["ranks"].items()}
        out.append(row)
    return out


def build(
    docs: Sequence[dict], opts: Options, *, started_at: str, duration_s: float, msdoctor_version: str
) -> tuple[dict, Report]:
    """The preflight report (a dict, written as preflight-report.json) and a Report for the renderers."""
    return build_assembled(
        Assembly.of_docs(docs, PER_NODE_ENV),
        opts,
        started_at=started_at,
        duration_s=duration_s,
        msdoctor_version=msdoctor_version,
    )


def build_assembled(
    asm: Assembly, opts: Options, *, started_at: str, duration_s: float, msdoctor_version: str
) -> tuple[dict, Report]:
    """:func:`build` from the gathered parts and distinct blobs (what the leaders and rank 0 hold)."""
    docs = asm.docs()
    node_of = _node_of(docs)
    execs = sorted({((d.get("facts") or {}).get("python") or {}).get("executable") or "?" for d in docs})
    diffs = differences_assembled(asm)
    tos = timeouts(docs)
    coll = collectives_summary(docs)
    rows = [Row(**r) for r in (docs[0].get("bandwidth") or [])] if docs else []
    verdicts = judge(rows, opts.baseline)
    comp = _Compute.of(docs, opts.straggler_ratio)
    results = [
        _ranks_result(docs, opts, execs),
        _node_checks_result(docs, node_of),
        _consistency_result(docs, diffs, node_of),
        _timeouts_result(docs, tos, node_of),
        _collectives_result(docs, coll, node_of),
        _subgroups_result(docs),
        _bandwidth_result(rows, verdicts, opts),
        _compute_result(docs, comp, opts, node_of),
    ]

    target = Target(
        executable=execs[0] if execs else "?",
        python_version=(((docs[0].get("facts") or {}).get("python") or {}).get("version") if docs else None),
    )
    report = Report(msdoctor_version, target, results, started_at, duration_s)
    doc = {
        "schema_version": PREFLIGHT_SCHEMA_VERSION,
        "kind": "msdoctor-preflight",
        "msdoctor_version": msdoctor_version,
        "started_at": started_at,
        "duration_s": round(duration_s, 3),
        "status": _status(report),
        "exit_code": int(report.exit_code()),
        "cluster": cluster_summary(docs),
        "checks": None,  # filled below with the JSON renderer's result dicts
        "collectives": coll,
        "subgroups": (docs[0].get("subgroups") or []) if docs else [],
        "bandwidth": [dict(v.row.as_dict(), baseline_gbs=v.baseline_gbs, verdict=v.status) for v in verdicts],
        "compute": {
            "median_gflops": comp.median,
            "straggler_ratio": opts.straggler_ratio,
            "ranks": [{"rank": r, "gflops": g, "straggler": r in comp.stragglers} for r, g in comp.per_rank],
        },
        "timeouts": tos,
        "differences": diffs,
        "environments": asm.blobs,
        "ranks": [
            dict(
                {k: v for k, v in p.items() if k != "blobs"},
                environment=p["blobs"]["env"],
                node_check=p["blobs"].get("node_check"),
            )
            for p in asm.parts
        ],
    }
    from msdoctor.render.json_report import result_dict

    doc["checks"] = [result_dict(r) for r in results]
    return doc, report


def _ranks_result(docs: Sequence[dict], opts: Options, execs: list[str]) -> CheckResult:
    """1. Every rank ran, with the job's interpreter (when the launcher said which one that is)."""
    interp: list[Finding] = []
    for d in docs:
        py = (d.get("facts") or {}).get("python") or {}
        if opts.expected_python_prefix and py.get("prefix") and py["prefix"] != opts.expected_python_prefix:
            interp.append(
                Finding.fail(
                    f"rank {d['rank']} ran {py.get('executable')}, not the job's interpreter",
                    detail=f"msrun starts the task as `python` from PATH; on {d.get('host')} that is an interpreter in "
                    f"{py['prefix']}, the job expects {opts.expected_python_prefix}",
                    fix=f"put {opts.expected_python_prefix}/bin first on PATH on that node before msrun "
                    "(or activate the job's environment there)",
                    code="wrong-interpreter",
                    evidence={"rank": d["rank"], "prefix": py["prefix"], "expected": opts.expected_python_prefix},
                )
            )
    if not interp:
        interp.append(
            Finding.passed(
                f"{len(docs)} ranks report their interpreter and environment",
                proved="every rank started, ran the task and sent its facts before and after init",
                evidence={"executables": execs},
            )
        )
    return _result(
        "preflight-ranks",
        "Ranks and interpreters",
        "Every rank of the job ran the preflight with the job's interpreter.",
        interp,
    )


def _node_checks_result(docs: Sequence[dict], node_of: dict[int, Optional[int]]) -> CheckResult:
    """2. What `msdoctor check --quick` said on each node (run by the node's first rank)."""
    nodef: list[Finding] = []
    for d in docs:
        nc = d.get("node_check")
        if nc is None:
            continue
        where = f"node_rank {node_of.get(d['rank'])} ({d.get('host')}, rank {d['rank']})"
        if "error" in nc:
            nodef.append(Finding.error(f"msdoctor check could not run on {where}", detail=str(nc["error"])))
            continue
        bad = [c for c in nc.get("checks") or [] if c.get("status") in ("fail", "error")]
        for c in bad:
            worst_f: dict[str, Any] = next(
                (f for f in c.get("findings") or [] if f.get("status") in ("fail", "error")), {}
            )
            nodef.append(
                Finding(
                    Status.FAIL if c["status"] == "fail" else Status.ERROR,
                    f"{where}: {c['id']}: {worst_f.get('title') or c.get('title')}",
                    detail=worst_f.get("detail") or "",
                    fix=worst_f.get("fix"),
                    code=f"node-{c['id']}",
                )
            )
        if not bad:
            nodef.append(
                Finding.passed(
                    f"{where}: msdoctor check --quick passed",
                    proved=f"{len(nc.get('checks') or [])} checks passed or were skipped on that node",
                )
            )
    return _result(
        "preflight-node-checks",
        "msdoctor check on every node",
        "The environment checks, once per node (the first rank of each node).",
        nodef,
    )


def _consistency_result(docs: Sequence[dict], diffs: list[dict], node_of: dict[int, Optional[int]]) -> CheckResult:
    """3. The differences between ranks and nodes that matter (per-node names do not)."""
    cons: list[Finding] = []
    for e in diffs:
        if not e["matters"]:
            continue
        shown = "; ".join(f"{_show(v['value'])} on {_where(v['ranks'], node_of)}" for v in e["values"])
        cons.append(
            Finding.fail(
                f"{e['section']} {e['key']} differs between ranks",
                detail=shown,
                code="differs",
                fix="make the nodes' environments identical (the same launch script, module loads "
                "and package versions on every node), then rerun the preflight",
                evidence={"key": e["key"], "values": e["values"]},
            )
        )
    if not cons:
        ignored = sum(1 for e in diffs if not e["matters"])
        cons.append(
            Finding.passed(
                "versions and environment agree on every rank",
                proved=f"{len(docs)} ranks compared with msdoctor diff's rules; {ignored} per-node "
                "differences (MS_NODE_RANK, RANK_ID, DEVICE_ID, MS_WORKER_IP, HCCL_IF_IP, "
                "paths ...) do not count",
            )
        )
    return _result(
        "preflight-consistency",
        "Same versions and environment everywhere",
        "Python, packages, MS_*/HCCL_*/ASCEND_* variables compared across ranks and nodes.",
        cons,
    )


def _timeouts_result(docs: Sequence[dict], tos: dict[str, Any], node_of: dict[int, Optional[int]]) -> CheckResult:
    """4. Each HCCL timeout has one value on every rank, and where that value came from."""
    tf: list[Finding] = []
    for name, t in tos.items():
        shown = "; ".join(
            f"{v['value'] if v['value'] is not None else '(unset)'} from {v['source']} on {_where(v['ranks'], node_of)}"
            for v in t["values"]
        )
        if not t["equal"]:
            tf.append(
                Finding.fail(
                    f"{name} is not the same on every rank",
                    detail=shown + ". Ranks with a shorter "
                    "timeout give up first and the job fails with a socket timeout (HCCL EI0006) "
                    "that names neither variable.",
                    fix=f"export the same {name} on every node before msrun (MindSpore sets "
                    "HCCL_CONNECT_TIMEOUT=600 itself where it is unset)",
                    code="timeout-differs",
                    evidence={"values": t["values"]},
                )
            )
        else:
            tf.append(
                Finding.passed(
                    f"{name} is the same on every rank: {shown}",
                    proved=f"{len(docs)} ranks report the same {name} and where it came from",
                )
            )
    return _result(
        "preflight-timeouts",
        "HCCL timeouts",
        "HCCL_CONNECT_TIMEOUT and HCCL_EXEC_TIMEOUT agree on every rank; where each value came from.",
        tf,
    )


def _collectives_result(docs: Sequence[dict], coll: list[dict], node_of: dict[int, Optional[int]]) -> CheckResult:
    """5. Each collective's worst outcome over the ranks; an unsupported one fails only when the config needs it."""
    cf: list[Finding] = []
    for c in coll:
        what = f"{c['op']}({c['dtype']}) on the {c['group']} group"
        if c["status"] == "ok":
            cf.append(
                Finding.passed(
                    f"{what}: correct on all {len(docs)} ranks",
                    proved=f"every rank received exactly the position-dependent result of {what}",
                )
            )
        elif c["status"] == "unsupported":
            status = Status.FAIL if c["required"] else Status.SKIP
            cf.append(
                Finding(
                    status,
                    f"{what}: not supported by this backend"
                    + (f" (the config needs it: {c['why']})" if c["required"] else ""),
                    detail=c["detail"] or "",
                    code="unsupported",
                    fix=(
                        "change the config so that it does not need it on this device, or run on a device whose "
                        "backend has it"
                    )
                    if c["required"]
                    else None,
                )
            )
        else:
            bad = c["ranks"].get("wrong", []) + c["ranks"].get("error", [])
            cf.append(
                Finding.fail(
                    f"{what}: {'wrong values' if c['status'] == 'wrong' else 'failed'} on {_where(bad, node_of)}",
                    detail=c["detail"] or "",
                    code=c["status"],
                )
            )
    return _result(
        "preflight-collectives",
        "Collective correctness",
        "AllReduce, AllGather and what the config uses, with position-dependent inputs.",
        cf,
    )


def _subgroups_result(docs: Sequence[dict]) -> CheckResult:
    """6. Rank 0's intra- and inter-node group results."""
    sg: list[Finding] = []
    for g in (docs[0].get("subgroups") or []) if docs else []:
        if g["status"] == "ok":
            sg.append(Finding.passed(f"{g['group']} groups: collectives work", proved=g.get("detail") or g["group"]))
        elif g["status"] == "unsupported":
            sg.append(
                Finding.skipped(
                    f"{g['group']} groups: not supported by this backend",
                    reason=g.get("detail") or "",
                    code="unsupported",
                )
            )
        elif g["status"] == "skip":
            sg.append(Finding.skipped(f"{g['group']} groups: not measured", reason=g.get("detail") or ""))
        else:
            sg.append(Finding.fail(f"{g['group']} groups: {g['status']}", detail=g.get("detail") or ""))
    return _result(
        "preflight-subgroups",
        "Intra- and inter-node groups",
        "create_group for the ranks of one node and for one rank per node.",
        sg,
    )


def _bandwidth_result(rows: list[Row], verdicts: list[Verdict], opts: Options) -> CheckResult:
    """7. The size sweep against the baseline, or the best bus bandwidth measured when none is below it."""
    bf: list[Finding] = []
    for v in verdicts:
        if v.status in ("warn", "fail"):
            r = v.row
            bf.append(
                Finding(
                    Status.WARN if v.status == "warn" else Status.FAIL,
                    f"{r.group} {r.op} {_size(r.size_bytes)}: busbw {r.busbw_gbs:.3g} GB/s is "
                    f"{v.ratio:.0%} of the baseline {v.baseline_gbs:.3g} GB/s",
                    detail=f"baseline: {opts.baseline_path}",
                    code="below-baseline",
                )
            )
    if rows and not bf:
        best = max(rows, key=lambda r: r.busbw_gbs)
        bf.append(
            Finding.passed(
                f"bandwidth measured: best busbw {best.busbw_gbs:.3g} GB/s ({best.group} {best.op} {_size(best.size_bytes)})"
                + ("" if opts.baseline else " (no baseline given)"),
                proved=f"{len(rows)} sizes timed on {rows[0].ranks} ranks, the slowest rank's time each"
                + (f"; none below the baseline {opts.baseline_path}" if opts.baseline else ""),
            )
        )
    return _result("preflight-bandwidth", "Collective bandwidth", "A size sweep, nccl-tests' algbw/busbw.", bf)


@dataclass
class _Compute:
    """Each rank's matmul GFLOP/s, their median, and the ranks below straggler_ratio of it."""

    per_rank: list[tuple[int, Any]]
    values: list[float]
    median: Optional[float]
    stragglers: list[int]

    @classmethod
    def of(cls, docs: Sequence[dict], straggler_ratio: float) -> _Compute:
        comp = [(d["rank"], (d.get("compute") or {}).get("gflops")) for d in docs]
        vals = [g for _, g in comp if isinstance(g, (int, float)) and g > 0]
        median = statistics.median(vals) if vals else None
        stragglers = [r for r, g in comp if median and isinstance(g, (int, float)) and g < straggler_ratio * median]
        return cls(comp, vals, median, stragglers)


def _compute_result(
    docs: Sequence[dict], comp: _Compute, opts: Options, node_of: dict[int, Optional[int]]
) -> CheckResult:
    """8. Stragglers, and the ranks whose matmul probe failed."""
    cpf: list[Finding] = []
    median = comp.median
    for r in comp.stragglers:
        g = dict(comp.per_rank)[r]
        node = node_of.get(r)
        cpf.append(
            Finding.warn(
                f"rank {r}{f' (node_rank {node})' if node is not None else ''} is a straggler: "
                f"{g:.3g} GFLOP/s, "
                f"{g / median:.0%} of the median {median:.3g}",
                detail="one slow rank sets the pace of every synchronous step",
                fix="check that device's clocks, temperature and neighbours (npu-smi info / "
                "nvidia-smi), and what else runs on that node",
                code="straggler",
            )
        )
    for r, g in comp.per_rank:
        if g is None:
            err = next((d.get("compute") or {} for d in docs if d["rank"] == r), {}).get("error")
            cpf.append(Finding.error(f"rank {r}: matmul probe failed", detail=str(err or "no result")))
    if comp.values and not cpf:
        cpf.append(
            Finding.passed(
                f"matmul: median {median:.3g} GFLOP/s, no rank below {opts.straggler_ratio:.0%} of it",
                proved=f"{len(comp.values)} ranks timed a matmul",
            )
        )
    return _result("preflight-compute", "Compute per rank", "Matmul GFLOP/s per rank, stragglers flagged.", cpf)


def _status(report: Report) -> str:
    """pass when nothing failed (skips count as passes here: a skip is an unsupported informational op)."""
    s = report.status
    return "pass" if s in (Status.PASS, Status.SKIP) else s.value


def cluster_summary(docs: Sequence[dict]) -> dict[str, Any]:
    nodes: dict[Any, dict[str, Any]] = {}
    for d in docs:
        ident = d.get("identity") or {}
        n = nodes.setdefault(
            ident.get("node_rank"),
            {"node_rank": ident.get("node_rank"), "hosts": set(), "worker_ips": set(), "ranks": []},
        )
        n["hosts"].add(d.get("host"))
        if d.get("worker_ip"):
            n["worker_ips"].add(d["worker_ip"])
        n["ranks"].append(d["rank"])
    first = docs[0] if docs else {}
    inits = [float(d["init_s"]) for d in docs if isinstance(d.get("init_s"), (int, float))]
    return {
        "world_size": len(docs),
        "nodes": [
            {
                "node_rank": n["node_rank"],
                "hosts": sorted(h for h in n["hosts"] if h),
                "worker_ips": sorted(n["worker_ips"]),
                "ranks": sorted(n["ranks"]),
            }
            for n in sorted(nodes.values(), key=lambda n: (n["node_rank"] is None, n["node_rank"] or 0))
        ],
        "hosts": sorted({d.get("host") for d in docs if d.get("host")}),
        "backend": first.get("backend"),
        "device_target": first.get("device_target"),
        "init_s_max": max(inits) if inits else None,
        "scheduler": f"{(first.get('identity') or {}).get('sched_host')}:{(first.get('identity') or {}).get('sched_port')}",
        "cluster_time_out": (first.get("identity") or {}).get("cluster_time_out"),
    }


def _size(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def _show(v: Any) -> str:
    if v is None:
        return "(absent)"
    s = str(v)
    return s if len(s) <= 60 else s[:57] + "..."


def table(doc: dict) -> str:
    """The one table rank 0 prints: nodes, collectives, bandwidth, compute, verdicts."""
    cl = doc["cluster"]
    lines = [
        f"msdoctor preflight: {cl['world_size']} ranks on {len(cl['nodes'])} node(s) "
        f"({', '.join(cl['hosts'])}), backend {cl['backend']}, init {_secs(cl['init_s_max'])}"
    ]
    for n in cl["nodes"]:
        lines.append(f"  node_rank {n['node_rank']}: {', '.join(n['hosts'])}  ranks {ranks_text(n['ranks'])}")
    lines.append("")
    lines.append(f"  {'collective':<28} {'status':<19} ranks")
    for c in doc["collectives"]:
        mark = c["status"] + ("" if c["required"] else " (info)" if c["status"] != "ok" else "")
        lines.append(
            f"  {c['op'] + '(' + c['dtype'] + ')':<28} {mark:<19} "
            + "  ".join(f"{k}: {ranks_text(v)}" for k, v in c["ranks"].items())
        )
    if doc["bandwidth"]:
        lines.append("")
        lines.append(
            f"  {'group':<10} {'op':<10} {'size':>9} {'time (ms)':>10} {'algbw GB/s':>11} {'busbw GB/s':>11}"
            + ("  baseline" if any(r.get("baseline_gbs") for r in doc["bandwidth"]) else "")
        )
        for r in doc["bandwidth"]:
            extra = f"  {r['verdict']} ({r['baseline_gbs']:.3g})" if r.get("baseline_gbs") else ""
            lines.append(
                f"  {r['group']:<10} {r['op']:<10} {_size(r['size_bytes']):>9} {r['time_s'] * 1e3:>10.2f} "
                f"{r['algbw_gbs']:>11.4f} {r['busbw_gbs']:>11.4f}{extra}"
            )
    comp = doc["compute"]
    if comp["ranks"]:
        lines.append("")
        lines.append(
            "  matmul GFLOP/s: "
            + "  ".join(
                f"r{c['rank']} {c['gflops']:.3g}{'*' if c['straggler'] else ''}" if c["gflops"] else f"r{c['rank']} ?"
                for c in comp["ranks"]
            )
            + (f"  (median {comp['median_gflops']:.3g}; * straggler)" if comp["median_gflops"] else "")
        )
    lines.append("")
    for c in doc["checks"]:
        lines.append(f"  [{c['status']:^5}] {c['title']}")
        for f in c["findings"]:
            if f["status"] != "pass":
                lines.append(f"          {f['status']}: {f['title']}")
                if f.get("detail"):
                    lines.append(f"            {f['detail']}")
                if f.get("fix"):
                    lines.append(f"            fix: {f['fix']}")
    lines.append("")
    lines.append(
        f"verdict: {'passed' if doc['exit_code'] == 0 else 'FAILED'} ({doc['status']}, exit {doc['exit_code']})"
    )
    return "\n".join(lines)


def _secs(v: Optional[float]) -> str:
    return f"{v:.1f} s" if isinstance(v, (int, float)) else "?"
