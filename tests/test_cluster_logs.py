"""msdoctor.cluster_logs on a real scheduler.log (observed with MindSpore 2.7.0 msrun, see tests/data/cluster/README.md)."""

from __future__ import annotations

from pathlib import Path

from msdoctor.cluster_logs import parse_scheduler_log, read_scheduler_log

DATA = Path(__file__).parent / "data" / "cluster"


def test_real_scheduler_log_names_the_ranks_that_never_registered() -> None:
    s = read_scheduler_log(DATA / "scheduler_2_of_4.log")
    assert s.expected == 4 and s.last_count == 2
    assert s.registered_ranks == [0, 1]
    assert s.missing_ranks == [2, 3]
    assert not s.complete
    assert s.hosts == {"vm": [0, 1]}
    assert s.describe() == (
        "2 of 4 nodes registered with the scheduler (vm: ranks 0, 1); ranks 2, 3 never registered "
        "(node_rank 1: ranks 2, 3; 2 workers per node, as on the nodes that registered)"
    )
    assert s.missing_nodes() == {1: [2, 3]} and s.missing_nodes(per_node=1) == {2: [2], 3: [3]}


def test_complete_cluster_timeouts_and_logs_without_counts() -> None:
    line = (
        "[WARNING] DISTRIBUTED(1,7f,python):2026-12-01-20:19:56.181.150 [meta_server_node.cc:254] ProcessRegister] "
        "The new node: {r}(role: MS_WORKER), rank id: {r}, device id: {r}, hostname: node{h}, ip: 10.0.0.{h} is "
        "registered successfully. Currently registered node number: {n}, expected node number: 2"
    )
    s = parse_scheduler_log(
        [line.format(r=0, h=1, n=1), line.format(r=1, h=2, n=2), "[WARNING] DISTRIBUTED ... The node: 1 is timed out"]
    )
    assert s.complete and s.missing_ranks == [] and s.timed_out == ["1"]
    assert s.describe().endswith("every expected node registered; timed out later: node(s) 1")
    bare = parse_scheduler_log(["The new node: worker-a is registered successfully."])
    assert bare.expected is None and bare.missing_ranks is None
    assert bare.describe() == "1 node(s) registered with the scheduler; the log does not say how many were expected"
    assert parse_scheduler_log(["unrelated", "Topology build timed out., retry(1/60)."]).registered == {}
