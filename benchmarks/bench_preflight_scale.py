"""The preflight's gather and report assembly at N ranks, over the in-process simulated collective.

    python benchmarks/bench_preflight_scale.py --ranks 16384 [--per-node 8] [--envs 1]

Each rank's document has the shape a real rank sends (msdoctor/preflight/ranktask.py: facts with ~40
MS_*/HCCL_*/ASCEND_* variables, 12 collective outcomes, a 20-row bandwidth sweep on rank 0) and the first
rank of each node carries a `msdoctor check --quick` report; ``--envs K`` gives the nodes K different
environments (one package version differs). All ranks step through :func:`msdoctor.preflight.wire.protocol`
in lockstep (:class:`~msdoctor.preflight.wire.SimCollective`); then three ranks are replayed alone under
tracemalloc, each step's answer received into a fresh buffer: a non-leader, the last node's leader and rank 0,
which also assembles the report (:func:`msdoctor.preflight.cluster.build_assembled`) and writes it as a leader
does (:func:`msdoctor.preflight.ranktask.write_json`: redacted, streamed).

Prints bytes sent per rank (as the real AllGather pads), each replayed rank's peak above its baseline and rank 0's
assembly time (wall, and CPU: on a shared machine the wall time swings with the load); the last line is one JSON object. Goal (issue 28): at 16,384 ranks, per-rank peak under 100 MiB and
rank 0's assembly under 10 s. Before this protocol (every rank AllGathered every rank's full JSON, padded to the
longest, as Python int lists): 4.7 s and 384 MiB per rank at 4,096 ranks, as measured in the issue.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from msdoctor.preflight import wire  # noqa: E402
from msdoctor.preflight.cluster import Options, build_assembled  # noqa: E402
from msdoctor.preflight.identity import PER_NODE_ENV  # noqa: E402
from msdoctor.preflight.ranktask import redactor, write_json  # noqa: E402


def node_check(node: int) -> dict:
    """A `msdoctor check --quick --format json` report's shape and size (~23 KB: the issue's first-rank document)."""
    checks = [
        {
            "id": f"check-{i:02d}",
            "title": f"Check number {i} of the quick set",
            "status": "pass",
            "duration_s": 0.001 * (i + node % 7),
            "findings": [
                {
                    "status": "pass",
                    "title": f"finding {i}.{j}: the environment agrees with the matrix",
                    "detail": "x" * 120,
                    "evidence": {"path": f"/opt/env/lib/python3.11/site-packages/p{i}"},
                }
                for j in range(2)
            ],
        }
        for i in range(45)
    ]
    return {
        "schema_version": 1,
        "msdoctor_version": "0.9",
        "started_at": f"2026-12-02T13:{node % 60:02d}:00Z",
        "duration_s": 3.2 + node % 5,
        "target": {"executable": "/opt/env/bin/python", "python_version": "3.11.7"},
        "checks": checks,
    }


def rank_doc(rank: int, world: int, per_node: int, envs: int) -> dict:
    node, local = divmod(rank, per_node)
    env = {f"MS_SETTING_{i:02d}": f"value-{i}" for i in range(20)}
    env.update({f"HCCL_OPTION_{i}": str(i) for i in range(8)})
    env.update({f"ASCEND_HOME_{i}": f"/usr/local/Ascend/ascend-toolkit/latest/part{i}" for i in range(6)})
    env.update(
        {
            "RANK_ID": str(rank),
            "DEVICE_ID": str(local),
            "MS_NODE_RANK": str(node),
            "MS_WORKER_IP": f"10.{node // 250}.{node % 250}.1",
            "HCCL_IF_IP": f"10.{node // 250}.{node % 250}.1",
            "MS_ROLE": "MS_WORKER",
            "RANK_SIZE": str(world),
            "MS_WORKER_NUM": str(world),
        }
    )
    packages = {
        "mindspore": "2.7.0",
        "numpy": "1.26.4",
        "msdoctor": "0.9",
        "mindformers": "1.6.0",
        "transformers": "4.46.3",
        "tokenizers": "0.20.3",
        "safetensors": "0.4.5",
        "protobuf": "4.25.3",
    }
    if envs > 1:
        packages["numpy"] = f"1.26.{node % envs}"
    colls = [
        {
            "op": op,
            "dtype": dt,
            "status": "ok",
            "detail": None,
            "seconds": 0.01 + rank * 1e-7,
            "required": dt == "float32",
            "why": "informational",
            "group": "world",
        }
        for op in ("AllReduce", "AllGather", "Broadcast", "ReduceScatter")
        for dt in ("float32", "float16", "bfloat16")
    ]
    rows = [
        {
            "group": "world",
            "op": op,
            "size_bytes": 1 << k,
            "ranks": world,
            "time_s": 1e-3 * k,
            "algbw_gbs": 1.0,
            "busbw_gbs": 1.9,
        }
        for op in ("AllReduce", "AllGather")
        for k in range(10, 20)
    ]
    return {
        "rank": rank,
        "world_size": world,
        "host": f"node{node:05d}",
        "identity": {
            "role": "worker",
            "rank": rank,
            "world_size": world,
            "node_rank": node,
            "local_index": local,
            "sched_host": "10.0.0.1",
            "sched_port": 8118,
            "cluster_time_out": 600,
        },
        "worker_ip": env["MS_WORKER_IP"],
        "backend": "hccl",
        "device_target": "Ascend",
        "device_id": str(local),
        "init_s": 20.0 + rank % 13,
        "facts": {
            "python": {
                "executable": "/opt/env/bin/python",
                "version": "3.11.7",
                "implementation": "CPython",
                "prefix": "/opt/env",
                "python_on_path": "/opt/env/bin/python",
                "python_on_path_real": "/opt/env/bin/python3.11",
            },
            "packages": packages,
            "env": env,
            "platform": {"system": "Linux", "machine": "aarch64", "release": "5.10.0"},
        },
        "timeouts": {
            "HCCL_CONNECT_TIMEOUT": {"value": "600", "source": "environment"},
            "HCCL_EXEC_TIMEOUT": {"value": None, "source": "unset (HCCL's own default applies)"},
        },
        "node_check": node_check(node) if local == 0 else None,
        "collectives": colls,
        "subgroups": [
            {
                "group": "intra-node",
                "name": f"msdoctor_intra_{node}",
                "status": "ok",
                "detail": "ok",
                "ranks": list(range(node * per_node, node * per_node + per_node)),
            }
        ],
        "bandwidth": rows if rank == 0 else rows,  # every rank measured the same rows (the slowest rank's time)
        "compute": {"n": 4096, "dtype": "float16", "seconds": 0.1, "gflops": 250.0 + rank % 17},
        "seconds_before_gather": 60.0,
    }


def steps_for(world: int, per_node: int, envs: int):
    cache: dict = {}
    for r in range(world):
        doc = rank_doc(r, world, per_node, envs)
        part, blobs = wire.split(doc, PER_NODE_ENV)
        yield wire.protocol(r, r // per_node, part, blobs, cache)


def measure(rank: int, world: int, per_node: int, envs: int, answers) -> tuple[float, float, float, int]:
    """(peak MiB above baseline, assembly wall seconds, its CPU seconds, report bytes) of one rank, replayed
    alone."""
    doc = rank_doc(rank, world, per_node, envs)
    part, blobs = wire.split(doc, PER_NODE_ENV)
    del doc
    step = wire.protocol(rank, rank // per_node, part, blobs)
    del part, blobs
    gc.collect()
    tracemalloc.start()
    size = _assemble(step, answers)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    t0, c0 = time.perf_counter(), time.process_time()  # again without tracemalloc (it slows allocation)
    doc = rank_doc(rank, world, per_node, envs)
    part, blobs = wire.split(doc, PER_NODE_ENV)
    _assemble(wire.protocol(rank, rank // per_node, part, blobs), answers)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return peak / (1 << 20), seconds, cpu, size


def _assemble(step, answers) -> int:
    _lay, asm = wire.replay(step, answers)
    if asm is None:
        return 0
    rep, _ = build_assembled(asm, Options(), started_at="t", duration_s=0.0, msdoctor_version="bench")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "preflight-report.json"
        write_json(out, rep, redactor(asm))  # what a leader writes (redacted, streamed)
        return out.stat().st_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=4096)
    ap.add_argument("--per-node", type=int, default=8)
    ap.add_argument("--envs", type=int, default=1, help="distinct environments among the nodes")
    a = ap.parse_args()
    if not 1 <= a.ranks <= 1 << 16 or a.per_node < 1:
        ap.error("--ranks 1..65536, --per-node >= 1")
    world, per = a.ranks, a.per_node
    import msdoctor.render.json_report  # noqa: F401 - imported once here, not inside rank 0's timed assembly
    import msdoctor.report_diff  # noqa: F401

    last_leader = (world - 1) // per * per
    focal = {"rank 0 (leader, writes the report)": 0}
    if last_leader:
        focal["leader of the last node"] = last_leader
    if world > 1:
        focal["non-leader rank"] = 1
    sim = wire.SimCollective(world)
    t0 = time.perf_counter()
    results, rec = sim.run(list(steps_for(world, per, a.envs)), record=focal.values())
    sim_s = time.perf_counter() - t0
    del results
    sent = sim.bytes_sent
    print(
        f"preflight gather: {world} ranks, {per} per node, {a.envs} distinct environment(s); "
        f"lockstep simulation {sim_s:.1f} s"
    )
    print(
        f"  bytes sent per rank: max {max(sent):,}  median {sorted(sent)[len(sent) // 2]:,}  "
        f"(rank 0 {sent[0]:,}, non-leader {sent[1] if world > 1 else 0:,})"
    )
    peaks, assemble_s, assemble_cpu = {}, 0.0, 0.0
    for label, r in focal.items():
        peak, secs, cpu, size = measure(r, world, per, a.envs, rec[r])
        peaks[label] = peak
        extra = f", assembly {secs:.2f} s wall ({cpu:.2f} s CPU), report {size / (1 << 20):.1f} MiB" if size else ""
        if r == 0:
            assemble_s, assemble_cpu = secs, cpu
        print(f"  {label:<36} peak {peak:8.2f} MiB above baseline{extra}")
    print(
        "  anchors: goal at 16,384 ranks: peak < 100 MiB a rank, rank 0's assembly < 10 s; before (issue 28, "
        "flat AllGather of every full document): 384 MiB and 4.7 s a rank at 4,096 ranks"
    )
    print(
        json.dumps(
            {
                "ranks": world,
                "per_node": per,
                "envs": a.envs,
                "bytes_sent_per_rank_max": max(sent),
                "per_rank_peak_mib": round(max(peaks.values()), 2),
                "assemble_s": round(assemble_s, 3),
                "assemble_cpu_s": round(assemble_cpu, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
