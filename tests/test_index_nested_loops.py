"""Index nested loops (``minidb/exec/join/index_nested_loops.py``): every outer tuple looks its
partners up through the inner table's index, on one node and where a parallel join reads the
inner table in place (NonStop SQL's broadcast and co-located strategies). Rows equal DuckDB's,
the counters say what the algorithm did (one lookup per outer tuple, the inner table never
scanned), and a join it cannot run is refused with a message that says what would make it
possible."""

from __future__ import annotations

from collections import Counter

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.errors import MinidbError

rng = np.random.default_rng(5)
N = 2000
OUTER = pa.table({"k": pa.array([None if i % 13 == 0 else int(x) for i, x in
                                 enumerate(rng.integers(0, 600, N))], pa.int64()),
                  "v": np.arange(N)})
INNER = pa.table({"k": np.repeat(np.arange(0, 600, 2), 2).astype(float),  # duplicates, floats
                  "w": np.arange(600)})
THIRD = pa.table({"k": np.arange(0, 600, 3), "x": np.arange(200)})

QUERIES = {
    "rows": "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k",
    "inner filter": "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k WHERE b.w % 3 = 0 AND a.v < 1500",
    "aggregate": "SELECT COUNT(*), SUM(b.w) FROM a JOIN b ON a.k = b.k",
    "residual": "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k AND a.v > b.w",
}


def oracle(sql: str) -> Counter:
    con = duckdb.connect()
    for name, t in (("a", OUTER), ("b", INNER), ("c", THIRD)):
        con.register(name, t)
    return Counter(tuple(float(x) if isinstance(x, float) else x for x in row)
                   for row in con.execute(sql).fetchall())


def rows(result) -> Counter:
    return Counter(tuple(r.values()) for r in result.to_arrow().to_pylist())


def lookups(result) -> dict:
    """The join's own counters (single node: ``op<n>.index_nested_loops_join.<name>``)."""
    out: dict = {}
    for key, n in result.counters.items():
        if ".index_nested_loops_join." in key:
            name = key.rsplit(".", 1)[-1]
            out[name] = out.get(name, 0) + n
    return out


@pytest.fixture(scope="module")
def single():
    db = minidb.connect()
    db.create_table("a", OUTER)
    db.create_table("b", INNER)
    db.create_table("c", THIRD)
    db.create_index("b", "k")
    db.create_index("c", "k")
    yield db
    db.close()


@pytest.mark.parametrize("shape", sorted(QUERIES))
def test_rows_equal_duckdb_on_one_node(single, shape):
    sql = QUERIES[shape]
    result = single.sql(f"/*+ index_nested_loops */ {sql}")
    assert rows(result) == oracle(sql)
    assert "IndexNestedLoopsJoin" in result.explain()


@pytest.mark.parametrize("side", ["outer", "inner"])
def test_an_empty_input_joins_nothing(single, side):
    empty = pa.table({"k": pa.array([], pa.int64()), "w": pa.array([], pa.int64())})
    single.create_table("nothing", empty)
    single.create_index("nothing", "k")
    try:
        sql = ("SELECT n.w, b.w FROM nothing n JOIN b ON n.k = b.k" if side == "outer" else
               "SELECT a.v, n.w FROM a JOIN nothing n ON a.k = n.k")
        result = single.sql(f"/*+ index_nested_loops */ {sql}")
        assert rows(result) == Counter()
        assert "IndexNestedLoopsJoin" in result.explain()
    finally:
        single.drop_table("nothing")


def test_one_lookup_per_outer_tuple_and_the_inner_table_is_never_scanned(single):
    result = single.sql("/*+ index_nested_loops */ SELECT a.v, b.w FROM a JOIN b ON a.k = b.k")
    counted = lookups(result)
    non_null = sum(1 for k in OUTER.column("k").to_pylist() if k is not None)
    assert counted["index_lookups"] == non_null  # a NULL key looks nothing up
    assert counted["distinct_keys"] <= counted["index_lookups"]
    assert counted["matches"] == sum(oracle(QUERIES["rows"]).values())
    scanned = [k for k in result.counters if k.endswith("heap_scan.pages")]
    assert len(scanned) == 1  # the outer table's scan; the inner one is only looked up


def test_a_small_outer_input_reads_fewer_pages_than_a_hash_join(single):
    """The reason the algorithm exists: a few outer tuples touch a few inner pages, where a
    hash join reads the whole inner table."""
    big = pa.table({"k": np.arange(40_000), "w": np.arange(40_000)})
    single.create_table("big", big)
    single.create_index("big", "k")
    try:
        sql = "SELECT a.v, big.w FROM a JOIN big ON a.k = big.k WHERE a.v < 5"
        single.clear_buffer_pool()
        indexed = single.sql(f"/*+ index_nested_loops */ {sql}")
        single.clear_buffer_pool()
        hashed = single.sql(f"/*+ hash_join */ {sql}")
        assert rows(indexed) == rows(hashed)
        assert sum(rows(indexed).values()) == sum(1 for k, v in zip(
            OUTER.column("k").to_pylist(), OUTER.column("v").to_pylist(), strict=True)
            if v < 5 and k is not None)
        assert indexed.counters["pages_read"] * 5 < hashed.counters["pages_read"]
    finally:
        single.drop_table("big")


def test_three_tables_each_looked_up_through_its_index(single):
    sql = "SELECT a.v, b.w, c.x FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k"
    result = single.sql(f"/*+ index_nested_loops */ {sql}")
    assert rows(result) == oracle(sql)
    assert result.explain().count("IndexNestedLoopsJoin") == 2


def test_no_index_is_a_clear_error(single):
    with pytest.raises(MinidbError, match="no index on"):
        single.sql("/*+ index_nested_loops */ SELECT a.v, o.k FROM a JOIN a AS o ON a.v = o.v")


def test_the_plug_in_alone_refuses_an_input_that_is_not_a_stored_table(tmp_path):
    """Given two streams (no table to look up), the join says what it needs."""
    from minidb.buffer.manager import BufferManager
    from minidb.exec import ArrayScan, ExecContext
    from minidb.exec.join.base import JoinPluginError
    from minidb.plugins import lookup
    from minidb.storage.disk import Disk
    from minidb.storage.schema import Schema, int_column

    disk = Disk(tmp_path, 4096)
    ctx = ExecContext(disk, BufferManager(disk, 16))
    bs, ps = Schema([int_column("b_key")]), Schema([int_column("a_key")])
    join = lookup("join", "index_nested_loops")(
        ctx, ArrayScan(bs, bs.new_records(3)), ArrayScan(ps, ps.new_records(3)), "b_key",
        "a_key", 4)
    with pytest.raises(JoinPluginError, match="stored table"):
        join.collect()


@pytest.fixture(scope="module")
def cluster():
    db = minidb.connect(nodes=4)
    db.create_table("a", OUTER, partition="hash(v)")
    db.create_table("b", INNER, partition="hash(k)")
    db.create_table("a_on_k", OUTER, partition="hash(k)")
    db.create_index("b", "k")
    yield db
    db.close()


@pytest.mark.parametrize("hint", ["", "broadcast"])
def test_parallel_broadcast_looks_up_the_large_table_where_it_lies(cluster, hint):
    sql = "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k WHERE a.v < 300"
    result = cluster.sql(f"/*+ index_nested_loops {hint} */ {sql}")
    assert rows(result) == oracle(sql)
    assert "broadcast" in result.explain()
    assert "look up b through its index" in result.explain()


def test_parallel_co_located_and_stored(cluster):
    sql = "SELECT a.v, b.w FROM a_on_k a JOIN b ON a.k = b.k"
    assert rows(cluster.sql(f"/*+ index_nested_loops co_located */ {sql}")) == oracle(
        sql.replace("a_on_k", "a"))
    stored = cluster.sql(f"/*+ index_nested_loops co_located */ CREATE TABLE r AS {sql}")
    try:
        assert stored.rows == sum(oracle(sql.replace("a_on_k", "a")).values())
    finally:
        cluster.drop_table("r")


@pytest.mark.parametrize("hint", ["repartition", "remote repartition"])
def test_parallel_refuses_an_inner_table_that_would_travel(cluster, hint):
    with pytest.raises(MinidbError, match="where it lies"):
        cluster.sql(f"/*+ index_nested_loops {hint} */ SELECT a.v, b.w FROM a JOIN b "
                    "ON a.k = b.k")


def test_parallel_without_an_index_is_a_clear_error(cluster):
    with pytest.raises(MinidbError, match="no index on"):
        cluster.sql("/*+ index_nested_loops broadcast */ SELECT b.w, a.v FROM b JOIN a "
                    "ON a.k = b.k WHERE b.w < 10")
