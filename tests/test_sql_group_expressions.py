"""GROUP BY an expression (``GROUP BY x % 10``, a SELECT alias, a position), on both engines.

The translator computes each grouping expression as a hidden column (``_group0`` ...) of the
rows before the aggregation (``SelectQuery.group_keys``); the same expression in the SELECT
list, HAVING or ORDER BY reads that column. Each query is compared with DuckDB.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.errors import MinidbError

QUERIES = [
    "SELECT x % 10, COUNT(*) FROM t GROUP BY x % 10",
    "SELECT x % 10 AS k, SUM(f), AVG(x) FROM t GROUP BY k",
    "SELECT x % 10 AS k, SUM(f) FROM t GROUP BY 1 HAVING COUNT(*) > 40",
    "SELECT LOWER(s), COUNT(DISTINCT x) FROM t GROUP BY LOWER(s)",
    "SELECT CASE WHEN x > 0 THEN 1 ELSE 0 END AS pos, MIN(f), MAX(s) FROM t GROUP BY pos",
    "SELECT n % 3, COUNT(*), COUNT(n) FROM t GROUP BY n % 3",
    "SELECT x % 10 + 1, COUNT(*) FROM t GROUP BY x % 10",
    "SELECT s, x % 2, COUNT(*) FROM t GROUP BY s, x % 2 HAVING x % 2 = 0",
    "SELECT u.z + 1, COUNT(*) FROM t JOIN u ON t.x = u.x2 GROUP BY u.z + 1",
    "SELECT CAST(f AS INTEGER), SUM(x) FROM t GROUP BY CAST(f AS INTEGER)",
    "SELECT x % 2, COUNT(*) FROM t GROUP BY x % 2, x % 2, x % 2",
    "SELECT x % 3 AS k, COUNT(*) FROM t WHERE x > 100 GROUP BY k",
]


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(3)
    return {
        "t": pa.table({
            "x": rng.integers(-30, 30, 500), "f": np.round(rng.uniform(-5, 5, 500), 1),
            "s": [f"W{v}" for v in rng.integers(0, 12, 500)],
            "n": pa.array([None if v % 7 == 0 else int(v) for v in rng.integers(0, 50, 500)],
                          pa.int64())}),
        "u": pa.table({"x2": rng.integers(-30, 30, 80), "z": rng.integers(0, 5, 80)}),
    }


def _key(row):
    return tuple((0, round(v, 6)) if isinstance(v, float) else (1, str(v)) for v in row)


@pytest.mark.parametrize("nodes", [1, 3])
def test_group_by_expressions_match_duckdb(nodes):
    tables = _tables()
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    db = minidb.connect(nodes=nodes) if nodes > 1 else minidb.connect()
    with db:
        for name, table in tables.items():
            db.create_table(name, table)
        for sql in QUERIES:
            mine = sorted(db.sql(sql).to_pylist(), key=_key)
            theirs = sorted(con.execute(sql).fetchall(), key=_key)
            assert len(mine) == len(theirs), sql
            for a, b in zip(mine, theirs, strict=True):
                for x, y in zip(a, b, strict=True):
                    assert (math.isclose(x, y, rel_tol=1e-9) if isinstance(y, float) else x == y), \
                        (sql, a, b)


def test_group_by_expression_explain_and_errors():
    with minidb.connect() as db:
        db.create_table("t", _tables()["t"])
        text = db.sql("SELECT x % 2, COUNT(*) FROM t GROUP BY x % 2").explain()
        assert "(x % 2) AS _group0" in text and "BY _group0" in text
        with pytest.raises(MinidbError, match="column x must appear in GROUP BY"):
            db.sql("SELECT x, COUNT(*) FROM t GROUP BY x % 10")
        with pytest.raises(MinidbError, match="aggregate cannot be a grouping key"):
            db.sql("SELECT COUNT(*) FROM t GROUP BY COUNT(*)")
        with pytest.raises(MinidbError, match="GROUP BY a condition"):
            db.sql("SELECT COUNT(*) FROM t GROUP BY x > 1")
