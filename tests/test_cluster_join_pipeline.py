"""Joins of several tables, and joins without an equality, on the parallel engine (inline nodes).

The coordinator runs them as one right-deep pipeline (``_join_pipeline``): every table but the
largest is built into a hash table (hash-partitioned on its join key, or broadcast when no
equality joins it), then the largest table streams through all the joins in one probe phase.
Each query is compared with DuckDB on the same data, on 1 to 8 nodes and every partitioning.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb


def _tables(seed: int = 0) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    return {
        "a": pa.table({"x": rng.integers(0, 20, 300), "y": rng.integers(0, 5, 300),
                       "s": [f"k{v}" for v in rng.integers(0, 9, 300)]}),
        "b": pa.table({"x2": rng.integers(0, 20, 60), "z": rng.integers(0, 9, 60),
                       "f": np.round(rng.uniform(-5, 5, 60), 1)}),
        "c": pa.table({"z2": pa.array(rng.integers(0, 9, 40), pa.int32()),
                       "w": rng.uniform(0, 1, 40), "s2": [f"k{v}" for v in rng.integers(0, 9, 40)]}),
        "e": pa.table({"x": pa.array([], pa.int64())}),
    }


QUERIES = [
    "SELECT a.x, c.w FROM a JOIN b ON a.x = b.x2 JOIN c ON b.z = c.z2",
    "SELECT a.x, b.z, c.w FROM a, b, c WHERE a.x = b.x2 AND b.z = c.z2 AND a.y < c.z2",
    "SELECT a.y, COUNT(*), SUM(c.w) FROM a, b, c WHERE a.x = b.x2 AND a.s = c.s2 GROUP BY a.y",
    "SELECT a.x, b.z FROM a, b WHERE a.x < b.x2 AND b.z = 3",
    "SELECT a.x, b.z FROM a, b WHERE a.y = 1 AND b.z > 6",
    "SELECT a.x FROM a JOIN b ON a.x = b.x2 AND a.y = b.z",
    "SELECT a.x, b.x2 FROM a JOIN b ON a.x + 1 = b.x2",
    "SELECT COUNT(*) FROM a, b, c WHERE a.x = b.x2 AND c.z2 < b.z",
    "SELECT DISTINCT a.y, c.z2 FROM a, c WHERE a.y <> c.z2",
    "SELECT b.f, c.z2 FROM b, c WHERE b.f = c.z2 ORDER BY b.f, c.z2",  # float = int32 key
    "SELECT COUNT(*) FROM a, b, e WHERE a.x = b.x2 AND b.x2 = e.x",
    "SELECT a.x, b.z, c.w FROM a, b, c WHERE a.y = 4 AND b.z = 1 AND c.z2 = 2",
]


def _rows(rows: list[tuple]) -> list[tuple]:
    return sorted(tuple(round(v, 9) if isinstance(v, float) else v for v in r) for r in rows)


@pytest.fixture(scope="module")
def oracle():
    con = duckdb.connect()
    for name, table in _tables().items():
        con.register(name, table)
    return con


@pytest.mark.parametrize("nodes", [1, 2, 3, 8])
@pytest.mark.parametrize("spec", ["round_robin", "hash(x)", "range_uniform(x)"])
def test_join_pipeline_matches_duckdb(oracle, nodes, spec):
    tables = _tables()
    with minidb.connect(nodes=nodes, disk_nodes=nodes) as db:
        for name, table in tables.items():
            column = table.column_names[0]
            db.create_table(name, table, partition=spec.replace("x", column))
        for sql in QUERIES:
            mine = db.sql(sql).to_pylist()
            assert _rows(mine) == _rows(oracle.execute(sql).fetchall()), sql


def test_pipeline_phases_and_explain():
    tables = _tables()
    with minidb.connect(nodes=3) as db:
        for name, table in tables.items():
            db.create_table(name, table)
        r = db.sql(QUERIES[0])
        text = r.explain()
        # two hash tables built in their own phases, then one probe phase streaming the largest
        assert r.phase_names == ["build b", "build c", "probe pipeline"], r.phase_names
        assert "scan a on nodes [0, 1, 2] -> hash(a.x)" in text
        assert "probe on b.z = c.z2" in text
        cross = db.sql(QUERIES[3])
        assert "broadcast" in cross.explain()
        # a broadcast build puts every qualifying build tuple into every node's hash table,
        # and each probe tuple is probed on one node only
        b_rows = int(np.sum(np.asarray(tables["b"]["z"]) == 3))
        builds = [c["tuples"].get("hash_build", 0) for c in cross.per_node.values()]
        probes = [c["tuples"].get("hash_probe", 0) for c in cross.per_node.values()]
        assert builds == [b_rows] * 3
        assert sum(probes) == tables["a"].num_rows


def test_more_tables_than_a_pipeline_takes_is_refused():
    t = pa.table({"x": [1, 2]})
    with minidb.connect(nodes=2) as db:
        for name in "pqrst":
            db.create_table(name, t)
        with pytest.raises(minidb.errors.UnsupportedSQLError, match="more than 4 tables"):
            db.sql("SELECT p.x FROM p, q, r, s, t")
        assert db.sql("SELECT COUNT(*) FROM p, q, r, s").to_pylist() == [(16,)]
