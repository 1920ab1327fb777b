"""The preflight's two-level gather (msdoctor/preflight/wire.py) over the in-process simulated collective.

No MindSpore: the same protocol and assembly code as a real rank, with SimCollective in place of ops.AllGather.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from msdoctor.preflight import wire
from msdoctor.preflight.cluster import Options, build_assembled, differences
from msdoctor.preflight.identity import PER_NODE_ENV

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_preflight_scale as bench  # noqa: E402


def docs_for(world, per_node, odd_node=None):
    docs = [bench.rank_doc(r, world, per_node, 1) for r in range(world)]
    for d in docs:
        if d["identity"]["node_rank"] == odd_node:
            d["facts"]["env"]["HCCL_CONNECT_TIMEOUT"] = "1200"
            d["facts"]["packages"]["numpy"] = "2.0.0"
    return docs


def run(docs, per_node):
    world = len(docs)
    sim = wire.SimCollective(world)
    cache = {}
    steps = []
    for d in docs:
        part, blobs = wire.split(copy.deepcopy(d), PER_NODE_ENV)
        steps.append(wire.protocol(d["rank"], d["rank"] // per_node, part, blobs, cache))
    results, _ = sim.run(steps)
    return results, sim


def test_leaders_assemble_every_rank_and_each_environment_once():
    world, per = 24, 4
    docs = docs_for(world, per, odd_node=3)
    results, _ = run(docs, per)
    leaders = [r for r, (lay, asm) in enumerate(results) if asm is not None]
    assert leaders == [0, 4, 8, 12, 16, 20]
    asm = results[0][1]
    assert [p["rank"] for p in asm.parts] == list(range(world))
    # two environments (node 3 differs) and two node-check reports that differ only in timings -> one
    by_env = {}
    for p in asm.parts:
        by_env.setdefault(p["blobs"]["env"], []).append(p["rank"])
    assert sorted(by_env.values()) == [list(range(0, 12)) + list(range(16, 24)), [12, 13, 14, 15]]
    checks = {p["blobs"]["node_check"] for p in asm.parts if "node_check" in p["blobs"]}
    assert len(checks) == 1 and len(asm.blobs) == 3
    # every rank's document comes back as it was sent (less the node check's timings)
    for d in docs:
        back = asm.full_doc(asm.parts[d["rank"]])
        want = copy.deepcopy(d)
        if want["node_check"]:
            want["node_check"] = wire._strip_volatile(want["node_check"])
        if d["rank"]:
            want.pop("subgroups"), want.pop("bandwidth")
        assert back == want
    # every leader holds the same assembly, so every node writes the same report
    for r in leaders[1:]:
        assert results[r][1].parts == asm.parts and results[r][1].blobs == asm.blobs


def test_differences_between_nodes_are_found_as_with_every_full_document():
    world, per = 16, 4
    docs = docs_for(world, per, odd_node=2)
    asm = run(docs, per)[0][0][1]
    rep, _ = build_assembled(asm, Options(), started_at="t", duration_s=1.0, msdoctor_version="0")
    old = differences(docs)  # the old rule: every rank's full document against rank 0's
    assert rep["differences"] == old
    hccl = [d for d in rep["differences"] if d["key"] == "HCCL_CONNECT_TIMEOUT"][0]
    assert hccl["matters"] and {repr(v["value"]): v["ranks"] for v in hccl["values"]} == {
        "'1200'": [8, 9, 10, 11],
        "None": [0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15],
    }
    assert rep["exit_code"] == 1
    assert {d["key"] for d in rep["differences"] if not d["matters"]} >= {"RANK_ID", "DEVICE_ID", "MS_NODE_RANK"}
    assert [r["rank"] for r in rep["ranks"]] == list(range(world))
    assert set(rep["environments"]) == {p["blobs"]["env"] for p in asm.parts} | {
        p["blobs"]["node_check"] for p in asm.parts if "node_check" in p["blobs"]
    }


def test_verdict_reaches_every_rank_of_each_node():
    world, per = 12, 4
    results, _ = run(docs_for(world, per), per)
    sim = wire.SimCollective(world)
    codes = [3 if asm is not None else None for _, asm in results]
    out, _ = sim.run([wire.share_verdict(r, results[r][0], codes[r]) for r in range(world)])
    assert out == [3] * world


@pytest.mark.parametrize("per", [4, 8])
def test_a_ranks_bytes_sent_do_not_grow_with_the_world(per):
    small = run(docs_for(8 * per, per), per)[1].bytes_sent
    large = run(docs_for(64 * per, per), per)[1].bytes_sent
    # the same, but for the digits of larger rank numbers in the documents themselves
    assert large[1] <= small[1] + 64
    assert max(large) <= max(small) + 64 * per
    flat = sum(len(wire.encode(d)) for d in docs_for(64 * per, per))
    assert max(large) * 20 < flat  # the old AllGather sent every rank's padded document to every rank


def test_a_group_must_step_together():
    sim = wire.SimCollective(2)
    g = (0, 1)
    with pytest.raises(RuntimeError, match="stepped by 1 of its 2"):
        sim.step([(b"x", g), (b"y", tuple([0, 1]))])  # a different group object: not the same step


def test_frames_round_trip_and_refuse_garbage():
    items = [b"", b"abc", "ü".encode() * 1000]
    assert wire.unpack(wire.pack(items)) == items
    with pytest.raises(ValueError):
        wire.unpack(b"\xff\xff\xff\x7f" + b"x")
    with pytest.raises(ValueError):
        wire.unpack(b"\x01\x00")
