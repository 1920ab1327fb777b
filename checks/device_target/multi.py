"""Multi-device variables: DEVICE_ID, RANK_ID, RANK_SIZE, RANK_TABLE_FILE, MS_WORKER_NUM (pure, checked when set).

Rank table format (HCCL JSON: version, server_count, server_list[].device[] with
device_id / device_ip / rank_id as strings, status "completed"):
https://www.mindspore.cn/tutorials/en/r2.7.2/_sources/parallel/rank_table.md.txt
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

from msdoctor.docfile import Document, load_json_text
from msdoctor.errors import UserError
from msdoctor.model import Finding, Location

MULTI_VARS = (
    "DEVICE_ID",
    "RANK_ID",
    "RANK_SIZE",
    "RANK_TABLE_FILE",
    "MS_WORKER_NUM",
    "MS_LOCAL_WORKER",
    "MS_SCHED_HOST",
    "ASCEND_RT_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
)


def _int(value: Any) -> Optional[int]:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _bad_int(name: str, value: str) -> Finding:
    return Finding.fail(
        f"{name}={value!r} is not a whole number",
        detail=f"MindSpore parses {name} as an integer and stops at start-up otherwise.",
        fix=f"export {name}=<integer> in the launch script",
        evidence={name: value},
        code=f"{name.lower().replace('_', '-')}-invalid",
    )


def _index_var(
    env: Mapping[str, str],
    name: str,
    bound: Optional[int],
    bound_key: str,
    title: str,
    detail: str,
    fix: str,
    code: str,
) -> list[Finding]:
    """An index variable (DEVICE_ID, RANK_ID) that must be a whole number in 0..bound-1 (bound None: not known).

    ``title`` and ``fix`` are templates: {value}, {bound} and {last} (bound - 1) are filled in."""
    raw = env.get(name)
    if raw is None:
        return []
    value = _int(raw)
    if value is None:
        return [_bad_int(name, raw)]
    if bound is None or 0 <= value < bound:
        return []
    fill = {"value": value, "bound": bound, "last": bound - 1}
    return [
        Finding.fail(
            title.format(**fill),
            detail=detail,
            fix=fix.format(**fill),
            evidence={name: value, bound_key: bound},
            code=code,
        )
    ]


def _rank_vars(env: Mapping[str, str], visible: Optional[int]) -> list[Finding]:
    out = _index_var(
        env,
        "DEVICE_ID",
        visible,
        "visible",
        "DEVICE_ID={value} but only {bound} device(s) are visible (ids 0..{last})",
        "The process would bind a device that does not exist here and fail at initialisation.",
        "export DEVICE_ID=<0..{last}>",
        "device-id-range",
    )
    rank_size = env.get("RANK_SIZE")
    size = _int(rank_size) if rank_size is not None else None
    if rank_size is not None and (size is None or size < 1):
        out.append(
            _bad_int("RANK_SIZE", rank_size)
            if size is None
            else Finding.fail(
                f"RANK_SIZE={size} must be at least 1",
                fix="export RANK_SIZE=<number of devices in the job>",
                code="rank-size-invalid",
            )
        )
        size = None
    out += _index_var(
        env,
        "RANK_ID",
        size,
        "RANK_SIZE",
        "RANK_ID={value} is outside 0..RANK_SIZE-1 ({last})",
        "Each process of a job needs a distinct rank below RANK_SIZE.",
        "export RANK_ID=<0..{last}> per process",
        "rank-id-range",
    )
    workers = env.get("MS_WORKER_NUM")
    if workers is not None:
        n = _int(workers)
        local = (env.get("MS_SCHED_HOST") or "127.0.0.1") in ("127.0.0.1", "localhost")
        if n is None or n < 1:
            out.append(_bad_int("MS_WORKER_NUM", workers))
        elif local and visible is not None and n > visible and env.get("MS_LOCAL_WORKER") is None:
            out.append(
                Finding.warn(
                    f"MS_WORKER_NUM={n} workers on this node, but only {visible} device(s) are visible",
                    detail="With the scheduler on localhost every worker runs here and needs its own device.",
                    fix=f"export MS_WORKER_NUM={visible} (or msrun --worker_num={visible} --local_worker_num={visible})",
                    evidence={"MS_WORKER_NUM": n, "visible": visible},
                    code="worker-num-devices",
                )
            )
    return out


def check_rank_table(doc: Document, rank_size: Optional[int], visible: Optional[int]) -> list[str]:
    """Problems of a parsed rank table, each with its line when known (empty: valid)."""
    data = doc.data
    where = lambda *k: doc.where(*k)  # noqa: E731
    if not isinstance(data, dict):
        return [f"{doc.path}: the rank table must be a JSON object"]
    problems = []
    servers = data.get("server_list")
    if not isinstance(servers, list) or not servers:
        return [f"{where('server_list')}: server_list is missing or empty"]
    if data.get("status") not in (None, "completed"):
        problems.append(
            f'{where("status")}: status is {data.get("status")!r}, not "completed" (the file is unfinished)'
        )
    count = _int(data.get("server_count"))
    if data.get("server_count") is not None and count != len(servers):
        problems.append(
            f"{where('server_count')}: server_count {data.get('server_count')!r} but server_list has "
            f"{len(servers)} server(s)"
        )
    ranks: list[int] = []
    for si, server in enumerate(servers):
        devices = server.get("device") if isinstance(server, dict) else None
        if not isinstance(devices, list) or not devices:
            problems.append(f"{where('server_list')}: server {si} has no device list")
            continue
        ids = []
        for di, d in enumerate(devices):
            did, rid = _int((d or {}).get("device_id")), _int((d or {}).get("rank_id"))
            if did is None or rid is None:
                problems.append(f"{where('server_list')}: server {si} device {di} lacks a numeric device_id/rank_id")
                continue
            ids.append(did)
            ranks.append(rid)
            if visible is not None and did >= visible:
                problems.append(
                    f"{where('server_list')}: server {si} lists device_id {did}, but only {visible} "
                    f"device(s) are visible here"
                )
        if len(set(ids)) != len(ids):
            problems.append(f"{where('server_list')}: server {si} lists a device_id twice: {sorted(ids)}")
    if ranks and sorted(ranks) != list(range(len(ranks))):
        problems.append(f"{where('server_list')}: rank_ids must be 0..{len(ranks) - 1} once each, got {sorted(ranks)}")
    if rank_size is not None and ranks and len(ranks) != rank_size:
        problems.append(f"{doc.path}: {len(ranks)} device(s) in the rank table but RANK_SIZE={rank_size}")
    return problems


def _rank_table(env: Mapping[str, str], visible: Optional[int]) -> list[Finding]:
    path = env.get("RANK_TABLE_FILE")
    if not path:
        return []
    p = Path(path)
    try:
        doc = load_json_text(p.read_text(encoding="utf-8"), p)
    except OSError as exc:
        return [
            Finding.fail(
                f"RANK_TABLE_FILE={path} cannot be read: {exc.strerror or exc}",
                detail="Ranktable-started jobs on Ascend read the device layout from this file.",
                fix="point RANK_TABLE_FILE at the hccl JSON of this job (e.g. generated by hccl_tools.py)",
                location=Location(path),
                code="rank-table-unreadable",
            )
        ]
    except UserError as exc:
        return [
            Finding.fail(
                f"RANK_TABLE_FILE is not valid JSON: {exc.message}",
                fix=exc.fix,
                location=Location(path),
                code="rank-table-malformed",
            )
        ]
    problems = check_rank_table(doc, _int(env.get("RANK_SIZE")), visible)
    if problems:
        return [
            Finding.fail(
                f"the rank table {path} does not describe this job: {problems[0]}",
                detail="\n".join(problems),
                fix="regenerate the rank table for the devices of this job (device_id per server, rank_id 0..N-1)",
                location=Location(path, doc.line_of("server_list")),
                evidence={"problems": problems},
                code="rank-table-invalid",
            )
        ]
    return []


def multi_device_findings(env: Mapping[str, str], visible: Optional[int]) -> tuple[list[Finding], dict[str, str]]:
    """Findings for the multi-device variables of the target env, and the variables that were set."""
    present = {k: env[k] for k in MULTI_VARS if env.get(k) is not None}
    return _rank_vars(env, visible) + _rank_table(env, visible), present
