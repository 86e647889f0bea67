"""Uncorrelated subqueries in UPDATE and DELETE (``minidb.sql.compound.inline_subqueries``): each
runs first, as SQL evaluates it once before the statement changes a row, and its answer is
written in. Checked against DuckDB on one node and on the parallel engine, in a transaction
(abort undoes, commit keeps), and for the statements that stay refused."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.errors import MinidbError, SchemaError, UnsupportedSQLError

ROWS = 120
STATEMENTS = [
    "DELETE FROM t WHERE k IN (SELECT k FROM u)",  # u.k holds a NULL
    "UPDATE t SET v = (SELECT MAX(v) FROM t) WHERE k < 10",  # the maximum before the change
    "UPDATE t SET v = v + 1 WHERE k NOT IN (SELECT k FROM u WHERE k IS NOT NULL) AND k > 100",
    "DELETE FROM t WHERE k NOT IN (SELECT k FROM u)",  # a NULL in the list: no row qualifies
    "DELETE FROM t WHERE v > (SELECT AVG(v) FROM t) AND s IN (SELECT s FROM t WHERE k = 3)",
    "UPDATE t SET v = 0 WHERE k IN (SELECT k FROM u WHERE f > 100)",  # no answer: IN is false
    "UPDATE t SET f = (SELECT MAX(f) FROM u) WHERE k = 20",  # u.f holds NaN, the largest
    "/*+ scan */ UPDATE t SET v = -1 WHERE k = (SELECT MIN(k) FROM u)",
    "UPDATE t SET s = (SELECT MIN(s) FROM t WHERE k > 50) WHERE k IN (SELECT k + 40 FROM u)",
    "DELETE FROM t WHERE v IN (SELECT f * 4 FROM u)",  # integers against doubles, NaN and NULL
    "UPDATE t SET f = f + (SELECT MIN(k) FROM u) WHERE v < (SELECT AVG(f) FROM u WHERE f < 10)",
]


def tables() -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(7)
    t = pa.table({"k": np.arange(ROWS, dtype=np.int64),
                  "v": rng.integers(0, 20, ROWS).astype(np.int64),
                  "f": rng.random(ROWS),
                  "s": pa.array([f"x{i % 7}" for i in range(ROWS)])})
    u = pa.table({"k": pa.array([1, 5, 9, None, 110], type=pa.int64()),
                  "f": pa.array([0.5, float("nan"), 2.0, None, 3.0])})
    return t, u


def oracle(t: pa.Table, u: pa.Table) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("t_in", t)
    con.register("u_in", u)
    con.execute("CREATE TABLE t AS SELECT * FROM t_in")
    con.execute("CREATE TABLE u AS SELECT * FROM u_in")
    return con


def same(rows_a, rows_b) -> bool:
    """The same bag of rows (compared by their text, so that NaN equals NaN)."""
    return sorted(map(repr, rows_a)) == sorted(map(repr, rows_b))


@pytest.mark.parametrize("config", [dict(), dict(organization="hash", key="k"), dict(nodes=3)],
                         ids=["heap", "hash", "3 nodes"])
def test_each_statement_changes_what_duckdb_changes(config):
    t, u = tables()
    nodes = config.pop("nodes", None)
    db = minidb.connect(nodes=nodes) if nodes else minidb.connect()
    con = oracle(t, u)
    try:
        db.create_table("t", t, **config)
        db.create_table("u", u)
        for statement in STATEMENTS:
            db.sql(statement)
            con.execute(statement.split("*/")[-1])
            mine = db.sql("SELECT k, v, f, s FROM t").to_pylist()
            assert same(mine, con.execute("SELECT k, v, f, s FROM t").fetchall()), statement
        assert len(mine) < ROWS  # the DELETEs did delete
    finally:
        db.close()


@pytest.mark.parametrize("nodes", [1, 2])
def test_in_a_transaction_abort_undoes_and_commit_keeps(tmp_path, nodes):
    t, u = tables()
    db = minidb.connect(nodes=nodes, data_dir=tmp_path / "d")
    try:
        db.create_table("t", t)
        db.create_table("u", u)
        before = db.sql("SELECT * FROM t").to_pylist()
        tx = db.begin()
        tx.sql("DELETE FROM t WHERE k IN (SELECT k FROM u)")
        tx.sql("UPDATE t SET v = (SELECT MAX(v) + 100 FROM t) WHERE k = 2")
        tx.abort()
        assert same(db.sql("SELECT * FROM t").to_pylist(), before)
        tx = db.begin()
        tx.sql("DELETE FROM t WHERE k IN (SELECT k FROM u)")
        tx.commit()
        assert db.sql("SELECT COUNT(*) FROM t").to_pylist() == [(ROWS - 4,)]
    finally:
        db.close()


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("statement, error, words", [
    ("DELETE FROM t WHERE k IN (SELECT k FROM u x WHERE x.f = t.f)", UnsupportedSQLError,
     "correlated subqueries (the subquery refers to t.f"),
    ("DELETE FROM t WHERE EXISTS (SELECT 1 FROM u)", UnsupportedSQLError, "EXISTS"),
    ("DELETE FROM t WHERE k IN (SELECT k, f FROM u)", SchemaError, "gives 2 columns"),
    ("UPDATE t SET v = (SELECT k FROM u) WHERE k = 1", MinidbError, "More than one row"),
])
def test_what_stays_refused_is_one_clear_error_and_changes_nothing(nodes, statement, error, words):
    t, u = tables()
    db = minidb.connect(nodes=nodes)
    try:
        db.create_table("t", t)
        db.create_table("u", u)
        with pytest.raises(error, match=words.replace("(", r"\(")):
            db.sql(statement)
        assert db.sql("SELECT COUNT(*), SUM(v) FROM t").to_pylist() == \
            [(ROWS, int(t["v"].to_numpy().sum()))]
    finally:
        db.close()
