"""Selection propagation (Gamma paper §6.1): a one-column restriction crosses an inner
equi-join to the other table, which then reads fewer tuples into the join; answers stay
DuckDB's."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb

rng = np.random.default_rng(11)
N = 3000
TABLES = {
    "a": pa.table({"u1": rng.permutation(N), "u2": np.arange(N), "f": rng.normal(size=N),
                   "s": pa.array([f"k{i % 40}" for i in range(N)])}),
    "b": pa.table({"u1": rng.permutation(N), "u2": rng.permutation(N),
                   "s": pa.array([f"k{i % 55}" for i in range(N)])}),
    "c": pa.table({"u1": rng.permutation(N // 10), "u2": np.arange(N // 10)}),
}
QUERIES = [
    "SELECT a.u1, b.u1 FROM a JOIN b ON a.u2 = b.u2 WHERE b.u2 < 300",
    "SELECT a.u1, b.u1 FROM a JOIN b ON a.u2 = b.u2 WHERE b.u2 BETWEEN 10 AND 20 OR b.u2 = 2999",
    "SELECT a.s, b.u2 FROM a JOIN b ON a.s = b.s WHERE upper(b.s) LIKE 'K1%' AND b.u2 < 400",
    "SELECT a.u1, c.u1 FROM a JOIN b ON a.u2 = b.u2 JOIN c ON c.u2 = b.u2 WHERE a.u2 < 200",
    "SELECT COUNT(*) FROM a JOIN b ON a.u2 = b.u2 WHERE b.u2 IN (SELECT u2 FROM c) ",
    "SELECT a.u1, b.u1 FROM a LEFT JOIN b ON a.u2 = b.u2 WHERE a.u2 < 50",
    "SELECT a.u1, b.u1 FROM a JOIN b ON a.u2 = b.u2 WHERE b.u2 < 100 AND a.f > 0",
]


def oracle(sql: str) -> list[tuple]:
    con = duckdb.connect()
    for name, t in TABLES.items():
        con.register(name, t)
    return sorted(con.sql(sql).fetchall(), key=repr)


@pytest.mark.parametrize("nodes", [1, 3])
def test_answers_with_propagation_equal_duckdb(nodes):
    with minidb.connect(nodes=nodes) as db:
        for name, t in TABLES.items():
            db.create_table(name, t)
        for sql in QUERIES:
            got = [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()]
            assert sorted(got, key=repr) == oracle(sql), sql


def test_the_other_table_reads_only_its_share_into_the_join():
    sql = QUERIES[0]
    with minidb.connect(nodes=3) as db:
        for name, t in TABLES.items():
            db.create_table(name, t)
        res = db.sql(sql)
        assert "selection propagation (Gamma §6.1): a.u2 < 300" in res.explain()
        # both sides send only their 300 qualifying tuples to the join nodes
        partitioned = sum(n["tuples"].get("partition", 0) for p in res.phases for n in p.values())
        assert partitioned == 600
    with minidb.connect() as db:
        for name, t in TABLES.items():
            db.create_table(name, t)
        plan = db.sql(sql).explain()
        assert plan.count("where u2 < 300") == 2  # a's scan is restricted too


def test_a_left_join_keeps_every_left_row():
    with minidb.connect(nodes=2) as db:
        for name, t in TABLES.items():
            db.create_table(name, t)
        res = db.sql("SELECT a.u1, b.u1 FROM a LEFT JOIN b ON a.u2 = b.u2 WHERE b.u2 < 10")
        assert "selection propagation" not in res.explain()
