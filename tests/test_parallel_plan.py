"""The typed parallel plan (minidb.cluster.plan): fragments check themselves, print as trees,
are what a node runs, and a plan whose exchange ends disagree is refused before it runs."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.cluster import plan
from minidb.cluster.node import Node
from minidb.cluster.planner import ParallelPlanner
from minidb.errors import MinidbError
from minidb.exec.expr import Col, Compare, Const
from minidb.exec.join.simple_hash import SimpleHashJoin
from minidb.parallel.partitioners import Hash
from minidb.sql.hints import parse_hints
from minidb.storage.schema import Schema, int_column

SCHEMA = Schema([int_column("k", "int64"), int_column("v", "int64")])


def records(n: int) -> np.ndarray:
    out = np.empty(n, dtype=SCHEMA.dtype)
    out["k"], out["v"] = np.arange(n), np.arange(n) % 7
    return out


def hashed(column: str, nodes: int) -> Hash:
    p = Hash(column)
    p.fit(None, nodes)
    return p


# -- the plan objects ----------------------------------------------------------------------------
def test_fragments_refuse_what_is_not_a_plan_node():
    with pytest.raises(MinidbError, match="invalid parallel plan: .*source"):
        plan.Fragment("f", {"kind": "scan", "table": "t"})
    with pytest.raises(MinidbError, match="unknown step"):
        plan.Fragment("f", plan.Scan("t"), [("project", [])])
    with pytest.raises(MinidbError, match="unknown sink"):
        plan.Fragment("f", plan.Scan("t"), sink={"kind": "host"})
    with pytest.raises(MinidbError, match="needs its partitioner"):
        plan.SplitTo("x", [0, 1])
    with pytest.raises(MinidbError, match="partitions or broadcasts"):
        plan.SplitTo("x", [0, 1], hashed("k", 2), mode="scatter")
    with pytest.raises(MinidbError, match="at least one consumer"):
        plan.SplitTo("x", [], mode="broadcast")
    with pytest.raises(MinidbError, match="build input must be a source"):
        plan.Join("not a source", plan.Scan("t"), "k", "k", SimpleHashJoin)


def test_a_fragment_prints_as_a_tree_root_first():
    join = plan.Join(plan.Receive("x1", [0, 1], SCHEMA), plan.Receive("x2", [2], SCHEMA),
                     "b.k", "a.k", SimpleHashJoin)
    f = plan.Fragment("q1.join3", join, [plan.Selection(Compare(">", Col("v"), Const(3))),
                                         plan.Projection([("k", Col("k"))])], plan.ToHost())
    lines = f.explain([0, 1]).splitlines()
    assert lines[0] == "[q1.join3] on nodes [0, 1] -> to the host"
    assert lines[1].strip() == "project k"  # the last step is nearest the root
    assert lines[2].strip().startswith("filter")
    assert lines[3].strip() == "join simple_hash_join on b.k = a.k"
    assert lines[4].strip() == "build: receive x1 from nodes [0, 1]"
    assert lines[5].strip() == "probe: receive x2 from nodes [2]"
    depth = [len(line) - len(line.lstrip()) for line in lines]
    assert depth[1] < depth[2] < depth[3] < depth[4] == depth[5]


def test_then_and_into_copy_the_fragment():
    f = plan.Fragment("f", plan.Scan("t"))
    g = f.then(plan.DuplicateElimination()).into(plan.Hold("h"))
    assert f.steps == [] and f.sink is None
    assert isinstance(g.steps[0], plan.DuplicateElimination) and g.sink == plan.Hold("h")


def test_check_exchanges_compares_both_ends():
    send = plan.Fragment("s", plan.Scan("t"), sink=plan.SplitTo("x", [0, 1], hashed("k", 2)))
    receive = plan.Fragment("r", plan.Receive("x", [2, 3], SCHEMA), sink=plan.ToHost())
    plan.check_exchanges([(send, [2, 3]), (receive, [0, 1])])  # agree
    with pytest.raises(MinidbError, match="receives x from nodes \\[2, 3\\], but s runs on \\[2\\]"):
        plan.check_exchanges([(send, [2]), (receive, [0, 1])])
    with pytest.raises(MinidbError, match="sends x to nodes \\[0, 1\\], but r runs on \\[0\\]"):
        plan.check_exchanges([(send, [2, 3]), (receive, [0])])
    # a receive nested in a join is found too
    join = plan.Fragment("j", plan.Join(plan.Receive("x", [2, 3], SCHEMA), plan.Scan("t"),
                                        "k", "k", SimpleHashJoin), sink=plan.ToHost())
    with pytest.raises(MinidbError, match="j runs on \\[0\\]"):
        plan.check_exchanges([(send, [2, 3]), (join, [0])])


# -- nodes run typed fragments ---------------------------------------------------------------------
def test_a_node_runs_a_fragment_built_by_hand(tmp_path):
    node = Node(0, 1)
    try:
        f = plan.Fragment("f", plan.Arrays(SCHEMA, records(100)),
                          [plan.Selection(Compare("=", Col("v"), Const(3))),
                           plan.Aggregation(["v"], []), plan.Projection([("v", Col("v"))])],
                          plan.ToHost())
        out = node.run(f)
        assert out["v"].tolist() == [3]
        node.create_fragment("t", SCHEMA, records(50))
        out = node.run(plan.Fragment("g", plan.Scan("t", [Compare("<", Col("k"), Const(10))]),
                                     [plan.DuplicateElimination()], plan.ToHost()))
        assert sorted(out["k"].tolist()) == list(range(10))
    finally:
        node.close()


# -- the plans the coordinator makes ---------------------------------------------------------------
@pytest.fixture(scope="module")
def pdb():
    rng = np.random.default_rng(5)
    db = minidb.connect(nodes=3, diskless_nodes=1)
    db.create_table("a", pa.table({"k": np.arange(600), "v": rng.integers(0, 9, 600)}),
                    partition="hash(k)")
    db.create_table("b", pa.table({"k": rng.integers(0, 900, 200), "w": np.arange(200)}))
    db.create_table("c", pa.table({"w": np.arange(50), "z": np.arange(50) * 2}))
    yield db
    db.close()


QUERIES = [
    ("SELECT v FROM a WHERE k < 100", None),
    ("SELECT v, COUNT(*) FROM a GROUP BY v HAVING COUNT(*) > 1", None),
    ("SELECT COUNT(DISTINCT v) FROM a", None),
    ("SELECT DISTINCT a.v FROM a, b WHERE a.k = b.k", "remote"),
    ("SELECT a.k, b.w FROM a LEFT JOIN b ON a.k = b.k WHERE a.k < 20", None),
    ("SELECT a.k, c.z FROM a, b, c WHERE a.k = b.k AND b.w = c.w", "allnodes"),
    ("SELECT COUNT(*) FROM a, b WHERE a.k = b.k", "simple_hash"),
]


@pytest.mark.parametrize("query,hint", QUERIES)
def test_every_statement_keeps_a_consistent_typed_plan(pdb, query, hint):
    r = pdb.sql(query, hint=hint)
    assert [p.name for p in r.plan] == r.phase_names
    started = [(f, nodes) for phase in r.plan for f, nodes in phase.fragments]
    assert started and all(isinstance(f, plan.Fragment) and f.sink is not None for f, _ in started)
    plan.check_exchanges(started)
    splits, receives = plan.exchanges(started)
    assert set(receives) <= set(splits)  # every stream a fragment waits for has its producer
    text = r.explain(fragments=True)
    for f, _ in started:
        assert f"[{f.id}]" in text
    pickle.loads(pickle.dumps([f for f, _ in started]))  # shipped to Ray workers as they are


def test_a_hinted_join_is_in_the_plan_with_its_placement(pdb):
    r = pdb.sql("SELECT COUNT(*) FROM a, b WHERE a.k = b.k", hint="remote grace_hash")
    joins = [(f, nodes) for p in r.plan for f, nodes in p.fragments if isinstance(f.source, plan.Join)]
    assert len(joins) == 1
    join, nodes = joins[0]
    assert join.source.algorithm.kind == "grace_hash_join" and nodes == pdb.diskless
    assert "join grace_hash_join on b.k = a.k" in r.explain(fragments=True)


def test_a_plan_whose_ends_disagree_is_refused_before_any_node_runs(pdb):
    run = ParallelPlanner(pdb, parse_hints(None), 999)
    send = plan.Fragment("q999.s", plan.Scan("a"), sink=plan.SplitTo("q999.x", [0, 1], hashed("k", 2)))
    receive = plan.Fragment("q999.r", plan.Receive("q999.x", [0], SCHEMA), sink=plan.ToHost())
    with pytest.raises(MinidbError, match="internal error: q999.r receives q999.x"):
        run.scheduler.phase("broken", [(0, "run", (receive,)), (1, "run", (receive,)),
                             (0, "run", (send,)), (1, "run", (send,))])
    assert run.scheduler.phases == []  # nothing ran
