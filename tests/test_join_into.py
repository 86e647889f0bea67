"""``CREATE TABLE ... AS`` over a join in the parallel engine (``ParallelPlanner.join_into``): the
join nodes send each result tuple through a split table to the store operators of the disk
nodes, as Gamma stores every query result (§2.2), instead of gathering it at the host. The
stored relation must equal DuckDB's answer, every tuple must be stored once (and counted as
inserted, so a machine whose inserts cost I/Os pays for them), nothing reaches the host, and
each path of the planner (repartition in every placement, co-located, broadcast, a three-table
pipeline, a LEFT JOIN, Gamma's distributed overflow passes) stores this way."""

from __future__ import annotations

from collections import Counter

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.errors import MinidbError

rng = np.random.default_rng(11)
A = pa.table({"k": rng.integers(0, 400, 2000), "v": np.arange(2000)})
B = pa.table({"k": rng.integers(0, 400, 1500), "w": np.arange(1500)})
C = pa.table({"k": np.arange(0, 400, 2), "x": np.arange(200)})
F = pa.table({"k": np.arange(0, 400, 3).astype(float), "y": np.arange(134)})  # float keys
E = pa.table({"k": pa.array([], pa.int64()), "z": pa.array([], pa.int64())})  # empty

CASES = {
    "repartition local": ("/*+ local repartition */", "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k"),
    "repartition remote": ("/*+ remote repartition */",
                           "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k WHERE b.w > 50"),
    "allnodes": ("/*+ allnodes repartition */", "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k"),
    "co-located": ("/*+ co_located */", "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k"),
    "broadcast": ("/*+ broadcast */", "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k"),
    "three tables": ("/*+ remote */", "SELECT a.v, b.w, c.x FROM a JOIN b ON a.k = b.k "
                                      "JOIN c ON c.k = a.k"),
    "left join": ("/*+ remote repartition */", "SELECT a.v, b.w FROM a LEFT JOIN b ON a.k = b.k"),
    "overflow passes": ("/*+ remote simple_hash repartition */",
                        "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k"),
    "float keys": ("/*+ remote repartition */", "SELECT a.v, f.y FROM a JOIN f ON a.k = f.k"),
    "empty input": ("/*+ remote repartition */", "SELECT a.v, e.z FROM a JOIN e ON a.k = e.k"),
    "empty broadcast": ("/*+ broadcast */", "SELECT a.v, e.z FROM a JOIN e ON a.k = e.k"),
}


def oracle(sql: str) -> Counter:
    con = duckdb.connect()
    for name, t in (("a", A), ("b", B), ("c", C), ("f", F), ("e", E)):
        con.register(name, t)
    return Counter(con.execute(sql).fetchall())


@pytest.fixture(scope="module")
def db():
    # 3 pages of 2 KB of hash-table memory per joining node: the Simple hash join overflows
    d = minidb.connect(nodes=6, disk_nodes=3, profile="teradata", memory_pages=3, page_size=2048)
    for name, t in (("a", A), ("b", B), ("c", C), ("f", F), ("e", E)):
        d.create_table(name, t, partition="hash(k)")
    yield d
    d.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_stored_join_equals_duckdb_and_goes_to_the_store_operators(db, case):
    hint, sql = CASES[case]
    result = db.sql(f"{hint} CREATE TABLE r AS {sql}")
    try:
        want = oracle(sql)
        got = [tuple(r.values()) for r in db.sql("SELECT * FROM r").to_arrow().to_pylist()]
        assert Counter(got) == want
        assert result.rows == sum(want.values())
        counters = result.counters
        assert counters["packets_to_host"] == 0  # no result tuple went through the host
        assert counters["tuples_inserted"] == sum(want.values())  # each stored once
        assert "store" in result.explain()
        if case == "overflow passes":
            assert any(n.get("join", {}).get("overflows", 0) for n in result.per_node.values())
    finally:
        db.drop_table("r")


def test_the_partition_hint_places_the_stored_join(db):
    db.sql("/*+ remote partition=hash(v) */ CREATE TABLE r AS "
           "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k")
    try:
        assert db.sql("SELECT COUNT(*) AS n FROM r").to_arrow().to_pylist()[0]["n"] == \
            sum(oracle("SELECT a.v, b.w FROM a JOIN b ON a.k = b.k").values())
        assert "hash" in db.schemes["r"].describe().lower()
    finally:
        db.drop_table("r")


def test_an_existing_name_is_refused_before_the_join_runs(db):
    with pytest.raises(MinidbError, match="already exists"):
        db.sql("CREATE TABLE a AS SELECT a.v, b.w FROM a JOIN b ON a.k = b.k")
    assert db.sql("SELECT COUNT(*) AS n FROM a").to_arrow().to_pylist()[0]["n"] == len(A)
