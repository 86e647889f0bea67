"""NonStop SQL's three parallel join strategies (Englert et al. 1989; ``_join_strategy`` in
minidb/cluster/planner.py): co-located when both tables are partitioned the same way on the
join columns, broadcast when one is small, repartition otherwise. Rows equal DuckDB's for every
strategy x join algorithm x query shape; each strategy moves only what it says; hints override
the choice, and a hint that cannot hold is a clear error."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.cluster import plan
from minidb.errors import MinidbError

rng = np.random.default_rng(3)
N = 3000
A = pa.table({"k": rng.integers(0, 1500, N), "v": np.arange(N), "g": np.arange(N) % 7})
B = pa.table({"k": pa.array([None if i % 17 == 0 else int(x) for i, x in
                             enumerate(rng.integers(0, 1500, 900))], pa.int64()),
              "w": np.arange(900)})
SMALL = pa.table({"k": np.arange(0, 60, dtype=np.int32).astype(float), "w": np.arange(60)})

QUERIES = {
    "rows": "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k",
    "filtered": "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k WHERE a.v < 1000 AND b.w > 10",
    "aggregate": "SELECT a.g, COUNT(*), SUM(b.w) FROM a JOIN b ON a.k = b.k GROUP BY a.g",
    "scalar": "SELECT COUNT(*), SUM(a.v), AVG(b.w), MIN(b.w) FROM a JOIN b ON a.k = b.k",
    "groups": "SELECT a.g % 3 AS h, COUNT(*), AVG(a.v + b.w) FROM a JOIN b ON a.k = b.k "
              "GROUP BY a.g % 3 HAVING COUNT(*) > 10 ORDER BY h",
    "distinct aggregate": "SELECT a.g, COUNT(DISTINCT b.w) FROM a JOIN b ON a.k = b.k GROUP BY a.g",
    "distinct": "SELECT DISTINCT a.g, b.w % 5 FROM a JOIN b ON a.k = b.k",
    "left join": "SELECT a.v, b.w FROM a LEFT JOIN b ON a.k = b.k",
    "residual": "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k AND a.v > b.w",
}


def oracle(sql: str, b: pa.Table) -> list[tuple]:
    con = duckdb.connect()
    con.register("a", A)
    con.register("b", b)
    return sorted(con.sql(sql).fetchall(), key=repr)


def rows_of(res) -> list[tuple]:
    return sorted((tuple(r.values()) for r in res.to_arrow().to_pylist()), key=repr)


def connect(b_partition: str, b: pa.Table = B, a_partition: str = "hash(k)", **options):
    db = minidb.connect(nodes=4, **options)
    db.create_table("a", A, partition=a_partition)
    db.create_table("b", b, partition=b_partition)
    return db


def strategy_of(res) -> str:
    line = next(x for x in res.explain().splitlines() if x.startswith("join strategy:"))
    return line.split(":", 1)[1].split("(", 1)[0].strip()


CASES = {  # b's partitioning, b, hint -> the strategy that runs
    "co-located (hash)": ("hash(k)", B, None, "co-located"),
    "broadcast (small b)": ("round_robin", SMALL, None, "broadcast"),
    "repartition (hinted)": ("hash(k)", B, "repartition", "repartition"),
    "broadcast (hinted)": ("hash(w)", B, "broadcast", "broadcast"),
    # float keys against A's int keys, hashed by value: still co-located
    "co-located (float b)": ("hash(k)", SMALL, None, "co-located"),
    "co-located (empty b)": ("hash(k)", B.slice(0, 0), None, "co-located"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("query", list(QUERIES))
@pytest.mark.parametrize("join", ["hash_join", "hybrid_hash", "sort_merge", "simple_hash"])
def test_rows_equal_duckdb_for_every_strategy(case, query, join):
    partition, b, hint, expected = CASES[case]
    sql = QUERIES[query]
    with connect(partition, b, join=join, memory_pages=6) as db:
        res = db.sql(sql, hint=hint)
    assert rows_of(res) == oracle(sql, b), res.explain()
    assert strategy_of(res) == expected


def test_a_co_located_join_moves_no_tuple_between_nodes():
    with connect("hash(k)") as db:
        res = db.sql(QUERIES["rows"])
    assert res.phase_names == ["co-located join"]
    assert res.counters.get("packets_sent_remote", 0) == 0
    assert res.counters.get("packets_short_circuited", 0) == 0
    (join, nodes), = res.plan[0].fragments
    assert isinstance(join.source.build, plan.Local) and isinstance(join.source.probe, plan.Local)
    assert nodes == [0, 1, 2, 3]
    assert "each node joins its own fragments" in res.explain()


def test_range_partitioned_copies_are_co_located_too():
    with connect("range_uniform(k)", a_partition="range_uniform(k)") as db:
        db.create_table("b2", A, partition="range_uniform(k)")  # the same data: same boundaries
        sql = "SELECT a.v, b2.v FROM a JOIN b2 ON a.k = b2.k WHERE a.v < 50"
        res = db.sql(sql)
        assert strategy_of(res) == "co-located"
        con = duckdb.connect()
        con.register("a", A)
        con.register("b2", A)
        assert rows_of(res) == sorted(con.sql(sql).fetchall(), key=repr)
        # b is range-partitioned on k too, but with boundaries learned from other data
        assert db.partitioner("b").boundaries != db.partitioner("a").boundaries
        assert strategy_of(db.sql(QUERIES["rows"])) != "co-located"
        with pytest.raises(MinidbError, match="not the same function or boundaries"):
            db.sql(QUERIES["rows"], hint="co_located")


def test_a_broadcast_sends_the_small_table_to_every_node_and_leaves_the_large_one():
    with connect("round_robin", SMALL) as db:
        res = db.sql(QUERIES["rows"])
    assert res.phase_names == ["build", "probe"]
    build, probe = res.phases
    sent = sum(c["tuples"].get("partition", 0) for c in build.values())
    assert sent == SMALL.num_rows  # each tuple routed once, delivered to all 4 nodes
    delivered = sum(c["packets_delivered"] for c in build.values())
    assert delivered >= 4  # every node received the broadcast
    assert not any(c.get("packets_sent_remote", 0) for c in probe.values())  # a stays put


def test_hints_that_cannot_hold_are_clear_errors():
    with connect("round_robin") as db:
        with pytest.raises(MinidbError, match="co_located needs both tables partitioned the "
                                              "same way.*b is round_robin"):
            db.sql(QUERIES["rows"], hint="co_located")
    with connect("hash(k)", disk_nodes=2) as db:
        with pytest.raises(MinidbError, match="cannot run in the remote placement"):
            db.sql(QUERIES["rows"], hint="remote broadcast")
        # Remote joins on the diskless nodes: always a repartition
        assert strategy_of(db.sql(QUERIES["rows"], hint="remote")) == "repartition"
        # two strategies or two placements used to be taken silently (the first one won)
        for two in ("broadcast repartition", "co_located, broadcast", "local remote"):
            with pytest.raises(MinidbError, match="conflicting hints"):
                db.sql(QUERIES["rows"], hint=two)
        with pytest.raises(MinidbError, match="conflicting hints 'repartition' and 'broadcast'"):
            db.sql(f"/*+ broadcast */ {QUERIES['rows']}", hint="repartition")
        with pytest.raises(MinidbError, match="a hint is a string"):  # was a TypeError
            db.sql(QUERIES["rows"], hint=3)


def test_hash_partitioned_on_other_columns_or_seeds_is_not_co_located():
    with connect("hash(w)") as db:
        assert strategy_of(db.sql(QUERIES["rows"])) != "co-located"
    with connect("hash(k)", a_partition="hash(v)") as db:
        assert strategy_of(db.sql(QUERIES["rows"])) != "co-located"


def test_the_choice_follows_the_sizes():
    """Broadcast while the small table times the nodes is under both tables; else repartition."""
    big = pa.table({"k": rng.integers(0, 1500, 2500), "w": np.arange(2500)})
    with connect("round_robin", big) as db:
        res = db.sql(QUERIES["rows"])
        assert strategy_of(res) == "repartition" and "would move" in res.explain()
        assert rows_of(res) == oracle(QUERIES["rows"], big)


# -- NonStop SQL's join benchmark: a co-located join stored where it runs --------------------------
def test_a_co_located_join_stores_its_result_on_each_node():
    from minidb.datagen import generate
    from minidb.experiments.tandem import join_statement

    rows = 6000
    t = generate("tandem", rows, seed=4)
    with minidb.connect(nodes=4) as db:
        db.create_table("t", t, partition="range_uniform(unique2)")
        db.create_table("t2", generate("tandem", rows, seed=4), partition="range_uniform(unique2)")
        res = db.sql(join_statement(rows))
        assert res.phase_names == ["co-located join", "store result"]
        assert res.counters.get("packets_sent_remote", 0) == 0  # no row crossed processors
        stored = db.sql("SELECT unique1, stringu2 FROM result")
        # every node keeps what its own pair of partitions produced: its key range
        got = sorted(tuple(r.values()) for r in stored.to_arrow().to_pylist())
        sizes = [len(f) for f in db.fragments("result")]
        assert sum(sizes) == res.rows and sum(1 for s in sizes if s) > 1
    con = duckdb.connect()
    con.register("t", t)
    cut = rows // 100 - 1
    want = sorted(con.sql("SELECT one.unique1, two.stringu2 FROM t one, t two WHERE one.unique2 = "
                          f"two.unique2 AND one.hundpct <= {cut} AND two.hundpct <= {cut}").fetchall())
    assert got == want


def test_the_join_row_of_table_2_is_reproduced_on_the_clx():
    from minidb.experiments.registry import get_experiment
    from minidb.results.reference import load_reference

    rows = get_experiment("tandem.speedup").run({"machines": ["clx"]}, quick=True)
    join = {r["column"]: r["value"] for r in rows
            if r["row"] == "join" and r["metric"] == "speedup" and r["reference"] == "Table 2"}
    published = {r["column"]: r["value"] for r in load_reference("tandem").to_pylist()
                 if r["row"] == "join" and r["reference"] == "Table 2"}
    assert set(join) == set(published) == {"clx_f2", "clx_f4", "clx_f8"}
    for column, value in published.items():  # the report's bar for Table 2's ratio cells
        assert abs(join[column] / value - 1) <= 0.10, (column, join[column], value)


def _to_host(res) -> int:
    return sum(c.get("tuples", {}).get("result", 0) for p in res.phases for c in p.values())


@pytest.mark.parametrize("hint", ["repartition", "co_located", "broadcast"])
def test_aggregates_over_a_join_run_on_the_join_nodes(hint):
    """Gamma §7's plan over a join: partial aggregates where the join runs, groups finished on
    the nodes after a repartitioning on the group columns; the host gets groups, not tuples."""
    with connect("hash(k)") as db:
        res = db.sql(QUERIES["groups"], hint=hint)
        fragments = [f for p in res.plan for f, _ in p.fragments]
        join = next(f for f in fragments if isinstance(f.source, plan.Join))
        assert isinstance(join.steps[-1], plan.Aggregation) and isinstance(join.sink, plan.SplitTo)
        assert any(isinstance(f.source, plan.Receive) and isinstance(f.steps[0], plan.Aggregation)
                   for f in fragments)
        assert _to_host(res) == res.rows  # HAVING ran on the nodes too
        scalar = db.sql(QUERIES["scalar"], hint=hint)
        assert _to_host(scalar) <= 4  # one partial row per join node at most
        assert rows_of(scalar) == oracle(QUERIES["scalar"], B)


@pytest.mark.parametrize("hint", [None, "broadcast", "repartition", "co_located"])
def test_a_selection_no_node_can_satisfy_gives_an_empty_join(hint):
    """Range partitioning prunes every node of a side (an empty range): still a valid join."""
    a = pa.table({"k": np.arange(1000), "v": np.arange(1000)})
    b = pa.table({"k": np.arange(0, 1000, 10), "w": np.arange(100)})
    with minidb.connect(nodes=3) as db:
        db.create_table("a", a, partition="range(k: 300, 600)")
        db.create_table("b", b, partition="range(k: 300, 600)")
        for where in ("a.k > 5 AND a.k < 3", "b.k > 700 AND b.k < 650"):
            assert db.sql(f"SELECT a.v, b.w FROM a JOIN b ON a.k = b.k WHERE {where}",
                          hint=hint).rows == 0
            count = db.sql(f"SELECT COUNT(*) AS n FROM a JOIN b ON a.k = b.k WHERE {where}",
                           hint=hint)
            assert count.to_arrow().to_pylist() == [{"n": 0}]
        left = db.sql("SELECT a.v, b.w FROM a LEFT JOIN b ON a.k = b.k WHERE a.k > 5 AND a.k < 3",
                      hint=hint)
        assert left.rows == 0


@pytest.mark.parametrize("query", ["scalar", "groups"])
def test_aggregates_over_a_join_that_resolves_overflow_in_passes(query):
    """A Simple hash join that overflows sends partials from later passes: a scalar aggregate
    still combines them at the host; a grouped one is aggregated at the host instead."""
    pad = pa.array(["p" * 40] * 3000)
    a = pa.table({"k": rng.integers(0, 3000, 8000), "v": np.arange(8000), "g": np.arange(8000) % 7})
    b = pa.table({"k": rng.permutation(6000)[:3000], "w": np.arange(3000), "pad": pad})
    with minidb.connect(nodes=3, memory_pages=3, join="simple_hash") as db:
        db.create_table("a", a, partition="hash(v)")
        db.create_table("b", b, partition="hash(w)")
        res = db.sql(QUERIES[query], hint="repartition")
    assert "overflow pass 1: build" in res.explain()
    con = duckdb.connect()
    con.register("a", a)
    con.register("b", b)
    assert rows_of(res) == sorted(con.sql(QUERIES[query]).fetchall(), key=repr)
