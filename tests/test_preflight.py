"""msdoctor preflight's pure parts: patterns, the gather wire format, bandwidth formulas, the verdict, the plan."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from msdoctor.preflight import bandwidth as bw
from msdoctor.preflight import patterns, wire
from msdoctor.preflight.cluster import Options, build, ranks_text, table
from msdoctor.preflight.identity import identify, timeouts
from msdoctor.preflight.schedlog import read

DATA = Path(__file__).parent / "data"


# patterns ------------------------------------------------------------------------------------


def _sum(cases, world):
    return [sum(c.inputs[i] for c in cases) for i in range(len(cases[0].inputs))]


@pytest.mark.parametrize("world", [1, 2, 4, 7, 64])
def test_allreduce_pattern_expected_is_the_sum(world):
    cases = [patterns.allreduce_sum(r, world) for r in range(world)]
    got = _sum(cases, world)
    assert all(patterns.explain(c, got, world) is None for c in cases)


def test_allreduce_pattern_names_missing_and_doubled_ranks():
    world = 4
    cases = [patterns.allreduce_sum(r, world) for r in range(world)]
    missing = _sum([c for i, c in enumerate(cases) if i != 2], world)
    assert "rank(s) 2 is missing" in patterns.explain(cases[0], missing, world)
    doubled = _sum(cases + [cases[1]], world)
    assert "rank(s) 1 is counted twice" in patterns.explain(cases[0], doubled, world)


def test_allgather_pattern_names_wrong_order():
    world = 3
    cases = [patterns.allgather(r, world) for r in range(world)]
    good = [x for c in cases for x in c.inputs]
    assert patterns.explain(cases[0], good, world) is None
    swapped = cases[1].inputs + cases[0].inputs + cases[2].inputs
    msg = patterns.explain(cases[0], swapped, world)
    assert "slot 0 holds rank 1's data" in msg and "slot 1 holds rank 0's data" in msg


def test_patterns_are_exact_in_bfloat16_range():
    # bfloat16 holds integers exactly up to 256: the AllGather values wrap below it, AllReduce stays <= world
    assert max(patterns.allgather(100, 128, "bfloat16").expected) < 256
    assert max(patterns.allreduce_sum(5, 200).expected) <= 200


def test_reducescatter_and_broadcast_patterns():
    world = 4
    cases = [patterns.reducescatter_sum(r, world) for r in range(world)]
    total = _sum(cases, world)
    for r, c in enumerate(cases):
        chunk = total[r * patterns.SLOT : (r + 1) * patterns.SLOT]
        assert patterns.explain(c, chunk, world) is None
    b = [patterns.broadcast(r, world) for r in range(world)]
    assert patterns.explain(b[3], b[0].inputs, world) is None
    assert patterns.explain(b[3], b[3].inputs, world) is not None  # zeros: the root's data never came


# wire ----------------------------------------------------------------------------------------


def test_rank_documents_split_into_a_part_and_shared_blobs():
    part, blobs = wire.split(
        {
            "rank": 1,
            "facts": {"env": {"RANK_ID": "1", "MS_X": "a"}},
            "collectives": [{"op": "AllReduce", "seconds": 0.5}],
            "node_check": None,
            "timeouts": {},
        },
        {"RANK_ID"},
    )
    assert part["env"] == {"RANK_ID": "1"} and part["collective_seconds"] == [0.5]
    assert set(blobs) == {"env"} and b"RANK_ID" not in blobs["env"] and b"seconds" not in blobs["env"]


# bandwidth -----------------------------------------------------------------------------------


def test_busbw_formulas_match_nccl_tests():
    # NVIDIA/nccl-tests doc/PERFORMANCE.md: AllReduce busbw = algbw * 2(n-1)/n, AllGather algbw * (n-1)/n
    r = bw.row("world", "AllReduce", 1 << 20, [0.001, 0.002, 0.0015, 0.001])
    assert r.time_s == 0.002  # the slowest rank
    assert r.algbw_gbs == pytest.approx((1 << 20) / 0.002 / 1e9)
    assert r.busbw_gbs == pytest.approx(r.algbw_gbs * 2 * 3 / 4)
    g = bw.row("world", "AllGather", 1 << 20, [0.001] * 8)
    assert g.busbw_gbs == pytest.approx(g.algbw_gbs * 7 / 8)
    assert bw.sweep_sizes(4096, 4 << 20) == [4096, 16384, 65536, 262144, 1048576, 4194304]


def test_baseline_judges_rows_and_reads_an_earlier_report(tmp_path):
    rows = [bw.row("world", "AllReduce", 1024, [1e-3] * 4), bw.row("world", "AllReduce", 4096, [1e-3] * 4)]
    base = {"busbw_gbs": {"world/AllReduce/1024": rows[0].busbw_gbs * 4, "world/AllReduce/4096": rows[1].busbw_gbs}}
    v = bw.judge(rows, base)
    assert [x.status for x in v] == ["fail", "pass"]
    p = tmp_path / "old.json"
    p.write_text(json.dumps({"schema_version": 1, "bandwidth": [r.as_dict() for r in rows]}))
    assert bw.load_baseline(p)["busbw_gbs"]["world/AllReduce/4096"] == pytest.approx(rows[1].busbw_gbs)
    bad = tmp_path / "bad.json"
    bad.write_text('{"busbw_gbs": {"x": "fast"}}')
    with pytest.raises(bw.BaselineError, match="expected a number"):
        bw.load_baseline(bad)


# identity and timeouts -----------------------------------------------------------------------


def test_identity_from_msrun_env_not_get_local_rank():
    env = {
        "MS_ROLE": "MS_WORKER",
        "RANK_ID": "3",
        "DEVICE_ID": "1",
        "MS_NODE_RANK": "1",
        "MS_WORKER_NUM": "4",
        "MS_SCHED_HOST": "10.0.0.1",
        "MS_SCHED_PORT": "18118",
        "MS_TOPO_TIMEOUT": "120",
    }
    i = identify(env)
    assert (i.role, i.rank, i.node_rank, i.local_index, i.world_size, i.first_on_node) == ("worker", 3, 1, 1, 4, False)
    assert identify(dict(env, DEVICE_ID="0")).first_on_node
    assert identify({"MS_ROLE": "MS_SCHED", "RANK_ID": "0"}).role == "scheduler"


def test_timeout_sources():
    t = timeouts({"HCCL_CONNECT_TIMEOUT": "1200"}, {"HCCL_CONNECT_TIMEOUT": "1200"})
    assert t["HCCL_CONNECT_TIMEOUT"]["source"].startswith("environment (set by")
    t = timeouts({}, {"HCCL_CONNECT_TIMEOUT": "600"})
    assert "MindSpore's default" in t["HCCL_CONNECT_TIMEOUT"]["source"]
    assert t["HCCL_EXEC_TIMEOUT"]["value"] is None


# the verdict ---------------------------------------------------------------------------------


def _doc(rank, node, env=None, gflops=10.0, coll_status="ok"):
    return {
        "rank": rank,
        "host": f"host{node}",
        "identity": {
            "role": "worker",
            "rank": rank,
            "world_size": 4,
            "node_rank": node,
            "local_index": rank % 2,
            "sched_host": "10.0.0.1",
            "sched_port": 1,
            "cluster_time_out": 120,
        },
        "backend": "mccl",
        "device_target": "CPU",
        "init_s": 1.0,
        "facts": {
            "python": {
                "executable": "/env/bin/python",
                "version": "3.11.7",
                "implementation": "CPython",
                "prefix": "/env",
            },
            "packages": {"mindspore": "2.7.0"},
            "env": dict(
                {"MS_NODE_RANK": str(node), "RANK_ID": str(rank), "HCCL_IF_IP": f"10.0.0.{node}"}, **(env or {})
            ),
            "platform": {"system": "Linux", "machine": "x86_64"},
        },
        "timeouts": timeouts(
            env or {}, dict(env or {}, HCCL_CONNECT_TIMEOUT=(env or {}).get("HCCL_CONNECT_TIMEOUT", "600"))
        ),
        "node_check": None,
        "collectives": [
            {
                "op": "AllReduce",
                "dtype": "float32",
                "status": coll_status,
                "required": True,
                "why": "dp",
                "detail": None if coll_status == "ok" else "rank(s) 3 is missing",
            },
            {
                "op": "AllReduce",
                "dtype": "bfloat16",
                "status": "unsupported",
                "required": False,
                "why": "informational",
                "detail": "Kernel select failed",
            },
        ],
        "subgroups": [],
        "bandwidth": [bw.row("world", "AllReduce", 4096, [1e-3] * 4).as_dict()] if rank == 0 else [],
        "compute": {"gflops": gflops},
    }


SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "preflight-report.schema.json").read_text())


def validate(doc):
    import jsonschema

    jsonschema.validate(json.loads(json.dumps(doc, default=str)), SCHEMA)


def test_verdict_passes_when_only_per_node_env_differs():
    docs = [_doc(r, r // 2) for r in range(4)]
    doc, report = build(docs, Options(), started_at="t", duration_s=1.0, msdoctor_version="0")
    validate(doc)
    assert doc["exit_code"] == 0 and doc["status"] == "pass"
    assert list(doc)[0] == "schema_version"
    assert [d for d in doc["differences"] if d["matters"]] == []
    assert "node_rank 1: host1  ranks 2-3" in table(doc)


def test_verdict_fails_on_a_timeout_set_on_one_node_and_names_it():
    docs = [_doc(r, r // 2, env={"HCCL_CONNECT_TIMEOUT": "1200"} if r >= 2 else None) for r in range(4)]
    doc, report = build(docs, Options(), started_at="t", duration_s=1.0, msdoctor_version="0")
    validate(doc)
    assert doc["exit_code"] == 1
    d = [d for d in doc["differences"] if d["key"] == "HCCL_CONNECT_TIMEOUT"]
    assert d and d[0]["matters"] and [v["ranks"] for v in d[0]["values"]] == [[0, 1], [2, 3]]
    assert doc["timeouts"]["HCCL_CONNECT_TIMEOUT"]["equal"] is False
    checks = {c["id"]: c for c in doc["checks"]}
    assert checks["preflight-timeouts"]["status"] == "fail"
    assert "node_rank 1" in json.dumps(checks["preflight-timeouts"])


def test_verdict_wrong_values_required_unsupported_and_stragglers():
    docs = [_doc(r, r // 2, gflops=2.0 if r == 3 else 10.0, coll_status="wrong" if r == 1 else "ok") for r in range(4)]
    docs[0]["collectives"][1]["required"] = True  # bf16 training on a backend without bf16 AllReduce
    doc, _ = build(docs, Options(), started_at="t", duration_s=1.0, msdoctor_version="0")
    checks = {c["id"]: c for c in doc["checks"]}
    titles = [f["title"] for f in checks["preflight-collectives"]["findings"]]
    assert any("wrong values on rank(s) 1 (node_rank 0)" in t for t in titles)
    assert any("bfloat16" in t and "the config needs it" in t for t in titles)
    assert checks["preflight-compute"]["status"] == "warn"
    assert doc["compute"]["ranks"][3]["straggler"] is True
    assert doc["exit_code"] == 1


def test_ranks_text():
    assert ranks_text([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"


# scheduler.log -------------------------------------------------------------------------------


def test_scheduler_log_names_the_missing_node():
    s = read(DATA / "preflight" / "scheduler-node1-missing.log")
    assert s.failed and s.missing_ranks() == [2, 3]
    assert s.missing_nodes() == {1: [2, 3]}
    assert s.summary() == "2 of 4 workers registered; never registered: node_rank 1 (ranks 2-3)"
    # with 4 workers per node given, ranks 2-3 belong to node_rank 0
    assert s.missing_nodes(4) == {0: [2, 3]}


# --plan ----------------------------------------------------------------------------------------


def _msdoctor(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "msdoctor", *args], capture_output=True, text=True, timeout=timeout)


def test_plan_names_the_process_holding_the_port():
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket,sys,time\ns=socket.socket()\n"
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(('127.0.0.1', 0))\n"
            "s.listen()\nprint(s.getsockname()[1], flush=True)\ntime.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(holder.stdout.readline())
        t0 = time.monotonic()
        r = _msdoctor(
            "preflight",
            "--plan",
            "--json",
            "--worker-num",
            "2",
            "--local-worker-num",
            "2",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(port),
            "--node-rank",
            "0",
            "--python",
            sys.executable,
        )
        wall = time.monotonic() - t0
        assert r.returncode == 1, r.stdout + r.stderr
        out = json.loads(r.stdout)
        # no timing bound here (speed is measured in benchmarks/); only that the port scan does not hang
        assert out["seconds"] < 30.0, out["seconds"]
        port_f = [f for f in out["findings"] if f["code"] == "port"][0]
        assert port_f["status"] == "fail"
        assert f"pid {holder.pid}" in port_f["title"] and "python" in port_f["title"]
        assert port_f["evidence"]["holder"]["pid"] == holder.pid
        print(f"--plan with the port held: {out['seconds']:.3f} s inside, {wall:.2f} s wall")
    finally:
        holder.kill()
        holder.wait()


def test_plan_refuses_arguments_that_do_not_add_up_and_a_loopback_master():
    r = _msdoctor(
        "preflight",
        "--plan",
        "--json",
        "--worker-num",
        "5",
        "--local-worker-num",
        "2",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        "29999",
        "--node-rank",
        "0",
    )
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert any(f["code"] == "args" and f["status"] == "fail" for f in out["findings"])
    r = _msdoctor(
        "preflight",
        "--plan",
        "--json",
        "--worker-num",
        "4",
        "--local-worker-num",
        "2",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        "29999",
        "--node-rank",
        "0",
    )
    out = json.loads(r.stdout)
    assert any(f["code"] == "master-addr" and "loopback" in f["title"] for f in out["findings"])


def test_plan_reports_python_on_path_that_is_not_the_target(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "msdoctor",
            "preflight",
            "--plan",
            "--json",
            "--worker-num",
            "1",
            "--local-worker-num",
            "1",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            "29998",
            "--node-rank",
            "0",
            "--python",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=60,
    )
    out = json.loads(r.stdout)
    py = [f for f in out["findings"] if f["code"] == "python"][0]
    assert py["status"] == "fail" and "not the job's interpreter" in py["title"]


def test_preflight_outside_msrun_is_a_usage_error():
    r = _msdoctor("preflight")
    assert r.returncode == 2 and "runs under msrun" in r.stderr and "Traceback" not in r.stderr


def test_compare_plans_finds_unequal_time_outs_duplicate_ranks_and_a_missing_node(tmp_path):
    def plan(rank, **kw):
        args = dict(
            worker_num=4,
            local_worker_num=2,
            master_addr="10.0.0.1",
            master_port=18118,
            node_rank=rank,
            cluster_time_out=120,
        )
        args.update(kw)
        p = tmp_path / f"n{rank}-{len(list(tmp_path.iterdir()))}.json"
        p.write_text(json.dumps({"args": args, "status": "pass", "findings": []}))
        return str(p)

    ok = _msdoctor("preflight", "--compare-plans", plan(0), "--compare-plans", plan(1))
    assert ok.returncode == 0 and "2 plans describe one job of 4 workers" in ok.stdout
    bad = _msdoctor("preflight", "--compare-plans", plan(0), "--compare-plans", plan(1, cluster_time_out=30))
    assert bad.returncode == 1 and "--cluster_time_out differs" in bad.stdout
    dup = _msdoctor("preflight", "--compare-plans", plan(0), "--compare-plans", plan(0))
    assert dup.returncode == 1 and "node_rank 0 used by more than one node" in dup.stdout
    one = _msdoctor("preflight", "--compare-plans", plan(0))
    assert one.returncode == 1 and "node ranks without a plan: 1" in one.stdout


def test_a_rank_on_another_interpreter_fails_the_cluster():
    docs = [_doc(r, r // 2) for r in range(4)]
    docs[3]["facts"]["python"]["prefix"] = "/other-env"
    doc, _ = build(docs, Options(expected_python_prefix="/env"), started_at="t", duration_s=1.0, msdoctor_version="0")
    ranks = {c["id"]: c for c in doc["checks"]}["preflight-ranks"]
    assert (
        ranks["status"] == "fail"
        and "rank 3 ran /env/bin/python, not the job's interpreter" in ranks["findings"][0]["title"]
    )


def test_launcher_sees_when_a_worker_got_through_init(tmp_path):
    from msdoctor.preflight.launch import joined

    assert not joined(tmp_path)
    (tmp_path / "worker_0.log").write_text("[WARNING] DISTRIBUTED ... Retry number: 3\n")
    assert not joined(tmp_path)
    (tmp_path / "worker_1.log").write_text("[msdoctor preflight] rank 1/4 joined in 12.0 s (mccl)\n")
    assert joined(tmp_path)


def test_cluster_verdict_renders_as_junit_and_github_annotations():
    import io

    from msdoctor.render import RenderOptions, render

    docs = [_doc(r, r // 2, env={"HCCL_CONNECT_TIMEOUT": "1200"} if r >= 2 else None) for r in range(4)]
    _, report = build(docs, Options(), started_at="t", duration_s=1.0, msdoctor_version="0")
    gh, ju = io.StringIO(), io.StringIO()
    render("github", report, gh, RenderOptions())
    render("junit", report, ju, RenderOptions())
    assert "::error" in gh.getvalue() and "HCCL_CONNECT_TIMEOUT is not the same on every rank" in gh.getvalue()
    assert 'name="preflight-timeouts"' in ju.getvalue() and "<failure" in ju.getvalue()


def test_plan_says_when_python_on_path_lacks_msdoctor(tmp_path):
    import venv

    venv.create(tmp_path / "bare", with_pip=False)
    bare = tmp_path / "bare" / "bin"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "msdoctor",
            "preflight",
            "--plan",
            "--json",
            "--worker-num",
            "1",
            "--local-worker-num",
            "1",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            "29997",
            "--node-rank",
            "0",
            "--python",
            str(bare / "python"),
        ],
        capture_output=True,
        text=True,
        env={"PATH": f"{bare}:/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=60,
    )
    out = json.loads(r.stdout)
    f = [f for f in out["findings"] if f["code"] == "msdoctor-importable"]
    assert f and f[0]["status"] == "fail" and "msdoctor is not installed" in f[0]["title"], out
    assert r.returncode == 1


def test_a_crash_after_the_shared_verdict_is_counted_per_worker_log(tmp_path):
    """msrun exits 1 when a worker segfaults in MindSpore's teardown after the preflight (seen on a loaded 2-core
    machine: 'Worker process 2933 exit with exception. Error code: -11'); the launch counts the worker logs that
    reached the shared verdict, and only all of this node's count as 'the verdict stands'."""
    from msdoctor.preflight.launch import VERDICT, verdicts

    (tmp_path / "worker_2.log").write_text(
        f"[msdoctor preflight] rank 2/4 joined in 3.1 s (mccl)\n{VERDICT}0\n[WARNING] DISTRIBUTED(1) teardown\n"
    )
    (tmp_path / "worker_3.log").write_text("[msdoctor preflight] rank 3/4 joined in 3.0 s (mccl)\n")
    assert verdicts(tmp_path) == 1
    (tmp_path / "worker_3.log").write_text(f"{VERDICT}0\n")
    assert verdicts(tmp_path) == 2
