"""Issue 18, item 10: text and statements that used to end in a traceback.

Multi-byte UTF-8 text, a Parquet file whose name is not valid UTF-8, a WHERE with 500 ORs and
statements nested thousands of levels deep. Each either works (and agrees with DuckDB, on the
single-node and the parallel engine) or is refused with one line and exit status 2 by the
command line, and with a minidb error class by the Python API.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import minidb
from minidb.errors import SchemaError, UnsupportedSQLError

ROOT = Path(__file__).resolve().parents[1]

WORDS = ["héllo", "日本語", "ascii", "ɐbc", "ß", "Ωmega", "naïve", "😀x", "ﬁne", "", "Ärger", "日本"]

TEXT_QUERIES = [
    "SELECT id, s FROM t WHERE s = '日本語'",
    "SELECT id, LENGTH(s), UPPER(s), LOWER(s), SUBSTRING(s, 2, 2) FROM t ORDER BY id",
    "SELECT id FROM t WHERE s LIKE '日_語' OR s LIKE '_bc' OR s ILIKE 'ä%' ORDER BY id",
    "SELECT s FROM t ORDER BY s",
    "SELECT UPPER(s) AS u, COUNT(*) FROM t GROUP BY UPPER(s) ORDER BY u",
    "SELECT MIN(s), MAX(s) FROM t",
]

ENGINES = [{}, {"nodes": 3}, {"nodes": 2, "partition": "range_uniform(id)"}]


def _words_table() -> pa.Table:
    return pa.table({"id": pa.array(range(len(WORDS)), pa.int64()), "s": WORDS})


def _numbers_table(rows: int = 1000) -> pa.Table:
    return pa.table({"id": pa.array(range(rows), pa.int64()),
                     "g": pa.array([i % 7 for i in range(rows)], pa.int64())})


def _connect(engine: dict, name: str, table: pa.Table):
    options = dict(engine)
    partition = options.pop("partition", None)
    db = minidb.connect(**options)
    if partition is None:
        db.create_table(name, table)
    else:
        db.create_table(name, table, partition=partition)
    return db


def _rows(db, query: str) -> list[tuple]:
    return [tuple(r.values()) for r in db.sql(query).to_arrow().to_pylist()]


def _oracle(table: pa.Table, query: str) -> list[tuple]:
    con = duckdb.connect()
    con.register("t", table)
    return con.sql(query).fetchall()


def _cli(*args: str | bytes) -> subprocess.CompletedProcess:
    """Run ``python -m minidb.cli`` on this checkout; arguments may be bytes (odd file names)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "minidb.cli", *args], capture_output=True,
                          timeout=120, env=env)


def _assert_one_line_error(done: subprocess.CompletedProcess, message: str) -> None:
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("minidb: error:"), stderr
    assert message in lines[0]


def _ors(count: int) -> str:
    return " OR ".join(f"id = {3 * i}" for i in range(count))


# -- multi-byte UTF-8 text -------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES, ids=["single", "hash3", "range2"])
def test_utf8_text_matches_duckdb(engine):
    table = _words_table()
    with _connect(engine, "t", table) as db:
        for query in TEXT_QUERIES:
            assert _rows(db, query) == _oracle(table, query), query


@pytest.mark.parametrize("engine", ENGINES[:2], ids=["single", "hash3"])
def test_text_that_fits_in_characters_but_not_in_bytes_is_refused(engine):
    table = pa.table({"id": pa.array([1], pa.int64()), "s": ["abcd"]})  # char(4): four bytes
    with _connect(engine, "t", table) as db:
        db.sql("INSERT INTO t VALUES (2, 'éé')")  # two characters, four bytes: fits
        for statement in ("INSERT INTO t VALUES (3, 'ééé')",  # three characters, six bytes
                          "UPDATE t SET s = '日本' WHERE id = 1"):
            with pytest.raises(SchemaError, match="longer than its 4 bytes"):
                db.sql(statement)
        assert _rows(db, "SELECT id, s FROM t ORDER BY id") == [(1, "abcd"), (2, "éé")]


def test_utf8_text_through_the_command_line(tmp_path):
    parquet = tmp_path / "words.parquet"
    pq.write_table(_words_table(), parquet)
    done = _cli("sql", "SELECT id, s, LENGTH(s) AS n FROM t WHERE s LIKE '日%' ORDER BY id",
                "--table", f"t={parquet}")
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode("utf-8").splitlines()
    assert [line.split() for line in lines[2:]] == [["1", "日本語", "3"], ["11", "日本", "2"]]


# -- file names that are not UTF-8 -----------------------------------------------------------
def _odd_name(tmp_path: Path, table: pa.Table) -> bytes:
    """Write ``table`` to a Parquet file whose name holds byte 0xff; return the name as bytes."""
    good = tmp_path / "plain.parquet"
    pq.write_table(table, good)
    odd = os.fsencode(tmp_path) + b"/odd\xffname.parquet"
    os.rename(os.fsencode(good), odd)
    return odd


def test_a_file_name_that_is_not_utf8_loads_through_the_command_line(tmp_path):
    odd = _odd_name(tmp_path, _words_table())
    done = _cli("sql", "SELECT COUNT(*) AS n FROM t", "--table", b"t=" + odd)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert done.stdout.decode().split()[-1] == str(len(WORDS))
    missing = odd.replace(b"odd", b"gone")
    _assert_one_line_error(_cli("sql", "SELECT * FROM t", "--table", b"t=" + missing),
                           "no such file")
    broken = odd.replace(b"odd", b"broken")
    Path(os.fsdecode(broken)).write_bytes(b"not parquet")
    _assert_one_line_error(_cli("sql", "SELECT * FROM t", "--table", b"t=" + broken),
                           "as a Parquet file")


def test_a_file_name_that_is_not_utf8_loads_through_the_api(tmp_path):
    odd = _odd_name(tmp_path, _words_table())
    with minidb.connect() as db:
        db.create_table("a", os.fsdecode(odd))  # str, as os.listdir and sys.argv give it
        db.create_table("b", odd)  # bytes, as os.listdir(bytes) gives it
        db.create_table("c", Path(os.fsdecode(odd)))
        for name in "abc":
            assert _rows(db, f"SELECT COUNT(*) FROM {name}") == [(len(WORDS),)]


# -- 500 ORs and deep nesting ----------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES, ids=["single", "hash3", "range2"])
def test_a_where_with_500_ors_works(engine):
    table = _numbers_table()
    queries = [
        f"SELECT id FROM t WHERE {_ors(500)} ORDER BY id",
        f"SELECT g, COUNT(*) FROM t WHERE ({_ors(500)}) AND g <> 3 GROUP BY g ORDER BY g",
        f"SELECT COUNT(*) FROM t WHERE NOT ({_ors(500)})",
        "SELECT COUNT(*) FROM t WHERE " + " AND ".join(f"id <> {3 * i + 1}" for i in range(500)),
        # more ANDs than Python's recursion limit (the WHERE's terms were once split recursively)
        "SELECT COUNT(*) FROM t WHERE " + " AND ".join(f"id <> {i % 900}" for i in range(3000)),
        "SELECT COUNT(*) FROM t a JOIN t b ON a.id = b.id AND "
        + " AND ".join(f"a.id <> {i % 700}" for i in range(3000)),
        f"SELECT SUM(CASE WHEN {_ors(500)} THEN 1 ELSE 0 END) FROM t",
    ]
    with _connect(engine, "t", table) as db:
        for query in queries:
            assert _rows(db, query) == _oracle(table, query), query[:60]
        db.sql(f"DELETE FROM t WHERE {_ors(500)}")
        assert _rows(db, "SELECT COUNT(*) FROM t") == [(1000 - 334,)]


def test_500_ors_through_the_command_line(tmp_path):
    parquet = tmp_path / "n.parquet"
    pq.write_table(_numbers_table(), parquet)
    done = _cli("sql", f"SELECT COUNT(*) AS n, SUM(id) AS total FROM t WHERE {_ors(500)}",
                "--table", f"t={parquet}")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split()[-2:] == ["334", str(sum(range(0, 1000, 3)))]


DEEP = [
    ("SELECT id FROM t WHERE " + "(" * 3000 + "id = 1" + ")" * 3000,
     "nested too deeply (3000 levels of parentheses; the limit is 32)"),
    ("SELECT id FROM t WHERE " + "NOT " * 3000 + "id = 1", "nested too deeply"),
    ("SELECT " + " + ".join(["id"] * 3000) + " FROM t", "nested too deeply"),
    ("SELECT id FROM t WHERE " + "ABS(" * 500 + "id" + ")" * 500 + " = 1", "nested too deeply"),
]


@pytest.mark.parametrize(("query", "message"), DEEP, ids=["parens", "not", "plus", "abs"])
def test_deep_nesting_is_one_line_on_the_command_line(tmp_path, query, message):
    parquet = tmp_path / "n.parquet"
    pq.write_table(_numbers_table(10), parquet)
    _assert_one_line_error(_cli("sql", query, "--table", f"t={parquet}"), message)


@pytest.mark.parametrize("engine", ENGINES[:2], ids=["single", "hash3"])
def test_deep_nesting_is_a_minidb_error_in_the_api(engine):
    with _connect(engine, "t", _numbers_table(10)) as db:
        for query, message in DEEP:
            with pytest.raises(UnsupportedSQLError, match=message.replace("(", r"\(")
                               .replace(")", r"\)")):
                db.sql(query)
        # within the limits, the same shapes work and agree with DuckDB
        table = _numbers_table(10)
        for query in ("SELECT id FROM t WHERE " + "(" * 30 + "id = 1" + ")" * 30,
                      "SELECT id FROM t WHERE " + "NOT " * 20 + "id = 1 ORDER BY id",
                      "SELECT " + " + ".join(["id"] * 150) + " AS x FROM t ORDER BY x"):
            assert _rows(db, query) == _oracle(table, query), query[:40]

