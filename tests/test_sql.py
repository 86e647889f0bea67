"""The SQL front door (minidb/sql): every supported construct, every refused one, the errors.

Results are checked against DuckDB on the same Arrow data where a construct computes something;
unsupported constructs must raise ``UnsupportedSQLError`` naming the construct; a statement that
fails must leave every table exactly as it was.
"""

from __future__ import annotations

from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.datagen import wisconsin
from minidb.errors import (
    MinidbError,
    SchemaError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedSQLError,
)
from minidb.sql.hints import Hints, parse_hints, split_hint_comment

ROWS = 2000


def _norm(v):
    if isinstance(v, Decimal):
        return int(v) if v == int(v) else float(v)
    if isinstance(v, float):
        return round(v, 6)
    return v


def rows_of(table: pa.Table) -> list[tuple]:
    cols = [table[c].to_pylist() for c in table.column_names]
    return [tuple(_norm(v) for v in row) for row in zip(*cols, strict=True)]


def duck_rows(con, sql: str) -> list[tuple]:
    return [tuple(_norm(v) for v in row) for row in con.execute(sql).fetchall()]


def same(db, con, sql: str, ordered: bool = False) -> list[tuple]:
    mine = rows_of(db.sql(sql).to_arrow())
    theirs = duck_rows(con, sql)
    if not ordered:
        mine, theirs = sorted(mine), sorted(theirs)
    assert mine == theirs, sql
    return mine


@pytest.fixture(scope="module")
def data():
    wis = wisconsin(ROWS, seed=1)
    small = pa.table({
        "id": pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
        "grp": pa.array([1, 1, 2, 2, 3, 3], pa.int32()),
        "val": pa.array([10.5, -2.0, 3.25, 7.0, 0.0, 1.5], pa.float64()),
        "name": pa.array(["ann", "bob", "cy", "dee", "ed", "flo"]),
    })
    other = pa.table({
        "id": pa.array([2, 4, 6, 8], pa.int32()),
        "label": pa.array(["two", "four", "six", "eight"]),
    })
    return {"wis": wis, "small": small, "other": other}


@pytest.fixture(scope="module")
def env(data):
    db = minidb.connect(buffer_pages=256)
    con = duckdb.connect()
    for name, table in (("wis", data["wis"]), ("wis2", data["wis"]), ("small", data["small"]),
                        ("other", data["other"])):
        db.create_table(name, table)
        con.register(f"{name}_arrow", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    yield db, con
    db.close()
    con.close()


@pytest.fixture
def fresh(data):
    """A database of its own for statements that change tables."""
    db = minidb.connect(buffer_pages=128)
    db.create_table("small", data["small"])
    db.create_table("wis", data["wis"])
    yield db
    db.close()


def contents(db, table: str) -> list[tuple]:
    return sorted(rows_of(db.sql(f"SELECT * FROM {table}").to_arrow()))


# -- SELECT lists ----------------------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "SELECT * FROM small",
    "SELECT id, name FROM small",
    "SELECT small.* FROM small",
    "SELECT s.id, s.name FROM small s",
    "SELECT id + 1, id - 10, id * 3, id / 4, id % 4, -id, val * 2 FROM small",
    "SELECT (id + grp) * 2 AS x, val - id AS y FROM small",
    "SELECT unique1, stringu1, string4 FROM wis WHERE unique2 < 20",
    "SELECT -unique1 % 7, unique1 % -7 FROM wis WHERE unique1 < 30",
])
def test_select_lists(env, sql):
    same(*env, sql)


def test_output_names_and_aliases(env):
    db, _ = env
    t = db.sql("SELECT id AS ident, name, id * 2 FROM small").to_arrow()
    assert t.column_names[:2] == ["ident", "name"]
    assert len(t.column_names) == 3


# -- WHERE -----------------------------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "SELECT id FROM small WHERE id = 3",
    "SELECT id FROM small WHERE id <> 3",
    "SELECT id FROM small WHERE id < 3",
    "SELECT id FROM small WHERE id <= 3",
    "SELECT id FROM small WHERE id > 3",
    "SELECT id FROM small WHERE id >= 3",
    "SELECT id FROM small WHERE 3 < id",
    "SELECT id FROM small WHERE id BETWEEN 2 AND 4",
    "SELECT id FROM small WHERE id > 1 AND grp = 2",
    "SELECT id FROM small WHERE id = 1 OR grp = 3",
    "SELECT id FROM small WHERE NOT (id = 1 OR grp = 3)",
    "SELECT id FROM small WHERE (id > 1 AND id < 5) OR (val < 0)",
    "SELECT id FROM small WHERE id * 2 + 1 > grp * 3",
    "SELECT id FROM small WHERE val > 1.5",
    "SELECT id FROM small WHERE id > 2.5",
    "SELECT id FROM small WHERE name = 'cy'",
    "SELECT id FROM small WHERE name > 'cy'",
    "SELECT id FROM small WHERE name BETWEEN 'b' AND 'e'",
    "SELECT id FROM small WHERE id = -1",
    "SELECT unique1 FROM wis WHERE stringu1 < 'AAAABAA' AND ten = 3",
    "SELECT unique1 FROM wis WHERE unique2 BETWEEN 100 AND 119 AND NOT two = 1",
])
def test_where(env, sql):
    same(*env, sql)


# -- aggregates, GROUP BY ----------------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "SELECT MIN(unique1), MAX(unique1), SUM(unique1), COUNT(*), AVG(unique1) FROM wis",
    "SELECT COUNT(unique2) FROM wis WHERE ten = 4",
    "SELECT onePercent, MIN(unique1) FROM wis GROUP BY onePercent",
    "SELECT onePercent, SUM(unique1) FROM wis GROUP BY onePercent",
    "SELECT ten, two, COUNT(*), AVG(unique2) FROM wis GROUP BY ten, two",
    "SELECT ten, COUNT(*) FROM wis GROUP BY 1",
    "SELECT grp, SUM(val), MAX(name), MIN(name) FROM small GROUP BY grp",
    "SELECT SUM(unique1) / COUNT(*) AS mean, MAX(unique1) - MIN(unique1) FROM wis",
    "SELECT ten, SUM(unique1 * 2 + 1) FROM wis WHERE unique2 < 1000 GROUP BY ten",
    "SELECT SUM(val) FROM small",
])
def test_aggregates(env, sql):
    same(*env, sql)


def test_aggregate_types(env):
    db, _ = env
    t = db.sql("SELECT COUNT(*) AS c, SUM(unique1) AS s, AVG(unique1) AS a, MIN(unique1) AS m "
               "FROM wis").to_arrow()
    assert t.schema.field("c").type == pa.int64()
    assert t.schema.field("s").type == pa.int64()
    assert t.schema.field("a").type == pa.float64()
    assert t.schema.field("m").type == pa.int32()


# -- ORDER BY, LIMIT ---------------------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "SELECT id, name FROM small ORDER BY id DESC",
    "SELECT id, name FROM small ORDER BY name",
    "SELECT grp, id FROM small ORDER BY grp DESC, id ASC",
    "SELECT id AS k, name FROM small ORDER BY k DESC",
    "SELECT name, id FROM small ORDER BY 2 DESC",
    "SELECT name FROM small ORDER BY val",
    "SELECT name FROM small ORDER BY id * -1",
    "SELECT onePercent, SUM(unique1) FROM wis GROUP BY onePercent ORDER BY 2 DESC, 1",
    "SELECT ten, COUNT(*) AS n FROM wis GROUP BY ten ORDER BY MIN(unique1) DESC",
    "SELECT unique1 FROM wis ORDER BY unique2 LIMIT 7",
    "SELECT unique1, unique2 FROM wis WHERE ten = 1 ORDER BY unique1 DESC LIMIT 5",
])
def test_order_by_and_limit(env, sql):
    same(*env, sql, ordered=True)


def test_limit_without_order(env):
    db, _ = env
    assert db.sql("SELECT * FROM wis LIMIT 13").rows == 13
    assert db.sql("SELECT * FROM wis LIMIT 0").rows == 0


# -- joins -------------------------------------------------------------------------------------
@pytest.mark.parametrize("sql", [
    "SELECT s.id, o.label FROM small s JOIN other o ON s.id = o.id",
    "SELECT s.id, o.label FROM small s INNER JOIN other o ON o.id = s.id WHERE s.grp > 1",
    "SELECT small.name, other.label FROM small, other WHERE small.id = other.id",
    "SELECT * FROM small s, other o WHERE s.id = o.id",
    "SELECT name, label FROM small JOIN other ON small.id = other.id AND small.grp < 3",
    "SELECT a.unique1, b.unique2 FROM wis a, wis2 b WHERE a.unique1 = b.unique1 AND a.unique2 < 100",
    "SELECT a.unique1 FROM wis a JOIN wis2 b ON a.unique1 = b.unique2 WHERE b.ten = 3",
    "SELECT a.ten, COUNT(*), SUM(b.unique1) FROM wis a JOIN wis2 b ON a.unique1 = b.unique1 "
    "GROUP BY a.ten",
    "SELECT a.unique1, b.unique1, c.id FROM wis a JOIN wis2 b ON a.unique1 = b.unique2 "
    "JOIN small c ON c.id = a.unique1",
    "SELECT s.id, o.id FROM small s, other o WHERE s.id = o.id AND s.val > o.id",
    "SELECT s.id, o.id FROM small s CROSS JOIN other o WHERE s.grp = 3",
])
def test_joins(env, sql):
    same(*env, sql)


def test_nested_loops_hint_gives_the_same_join(env):
    db, con = env
    sql = "SELECT a.unique1, b.unique2 FROM wis a, wis2 b WHERE a.unique1 = b.unique2 AND a.ten = 2"
    hashed = db.sql(sql)
    looped = db.sql(sql, hint="nested_loops")
    assert "hash_join" in {op.kind for op in hashed.plan.walk()}
    assert "nested_loops_join" in {op.kind for op in looped.plan.walk()}
    assert sorted(rows_of(hashed.to_arrow())) == sorted(rows_of(looped.to_arrow())) == \
        sorted(duck_rows(con, sql))


def test_hash_join_builds_on_the_smaller_input(env):
    db, _ = env
    r = db.sql("SELECT a.unique1 FROM wis a, small s WHERE a.unique1 = s.id")
    join = next(op for op in r.plan.walk() if op.kind == "hash_join")
    build_columns = join.children[0].schema.names
    assert all(name.startswith("s.") for name in build_columns)
    assert "build on the smaller input" in r.explain()


# -- INSERT, UPDATE, DELETE, CREATE TABLE AS ---------------------------------------------------
def test_insert_values(fresh):
    r = fresh.sql("INSERT INTO small VALUES (7, 4, 2.5, 'gus'), (8, 4, -1.0, 'hal')")
    assert r.rows == 2 and r.to_arrow().to_pylist() == [{"count": 2}]
    fresh.sql("INSERT INTO small (name, val, grp, id) VALUES ('ivy', 0.5, 5, 9)")
    got = rows_of(fresh.sql("SELECT id, grp, val, name FROM small WHERE id > 6 ORDER BY id").to_arrow())
    assert got == [(7, 4, 2.5, "gus"), (8, 4, -1.0, "hal"), (9, 5, 0.5, "ivy")]


def test_insert_select(fresh):
    before = contents(fresh, "small")
    r = fresh.sql("INSERT INTO small SELECT id + 100, grp, val * 2, name FROM small WHERE grp = 2")
    assert r.rows == 2
    after = contents(fresh, "small")
    assert len(after) == len(before) + 2
    assert (103, 2, 6.5, "cy") in after and (104, 2, 14.0, "dee") in after


def test_insert_select_from_itself_reads_before_writing(fresh):
    fresh.sql("INSERT INTO small SELECT * FROM small")
    assert fresh.sql("SELECT COUNT(*) FROM small").to_arrow().column(0)[0].as_py() == 12


def test_update(fresh):
    r = fresh.sql("UPDATE small SET val = val + id, name = 'z' WHERE grp = 1")
    assert r.rows == 2
    got = rows_of(fresh.sql("SELECT id, val, name FROM small ORDER BY id").to_arrow())
    assert got[:3] == [(1, 11.5, "z"), (2, 0.0, "z"), (3, 3.25, "cy")]
    fresh.sql("UPDATE small SET grp = 0")
    assert rows_of(fresh.sql("SELECT grp, COUNT(*) FROM small GROUP BY grp").to_arrow()) == [(0, 6)]


def test_delete(fresh):
    assert fresh.sql("DELETE FROM small WHERE val < 1 OR name = 'ann'").rows == 3
    assert [r[0] for r in contents(fresh, "small")] == [3, 4, 6]
    assert fresh.sql("DELETE FROM small").rows == 3
    assert contents(fresh, "small") == []


def test_create_table_as(fresh):
    r = fresh.sql("CREATE TABLE result AS SELECT unique1, unique2 * 2 AS twice, stringu1 "
                  "FROM wis WHERE unique2 < 50")
    assert r.rows == 50
    t = fresh.table("result")
    assert t.organization == "heap" and t.num_records == 50
    assert t.schema.names == ["unique1", "twice", "stringu1"]
    got = fresh.sql("SELECT MIN(twice), MAX(twice) FROM result").to_arrow()
    assert rows_of(got) == [(0, 98)]
    with pytest.raises(MinidbError, match="already exists"):
        fresh.sql("CREATE TABLE result AS SELECT * FROM wis")


def test_failed_create_table_as_leaves_no_table(fresh):
    with pytest.raises(UnknownColumnError):
        fresh.sql("CREATE TABLE r2 AS SELECT nope FROM wis")
    assert "r2" not in [n.lower() for n in fresh.tables()]


# -- statement atomicity -------------------------------------------------------------------------
@pytest.mark.parametrize("sql, error", [
    ("UPDATE wis SET two = unique1 * 100000000 WHERE unique2 < 1000", SchemaError),  # int32 overflow
    ("UPDATE wis SET string4 = 'this text is far too long for a fifty-two byte column, really'",
     SchemaError),
    ("UPDATE wis SET ten = unique1 / 2", SchemaError),  # a float into an integer column
    ("INSERT INTO wis SELECT unique1 * 100000000, unique2, two, four, ten, twenty, onePercent, "
     "tenPercent, twentyPercent, fiftyPercent, unique3, evenOnePercent, oddOnePercent, stringu1, "
     "stringu2, string4 FROM wis", SchemaError),
    ("INSERT INTO wis VALUES (1, 2, 3)", SchemaError),
    ("DELETE FROM wis WHERE stringu1 = 5", SchemaError),
    ("UPDATE wis SET nope = 1", UnknownColumnError),
])
def test_failed_statement_leaves_table_unchanged(fresh, sql, error):
    before = contents(fresh, "wis")
    with pytest.raises(error):
        fresh.sql(sql)
    assert contents(fresh, "wis") == before


def test_failed_update_of_a_clustered_key_leaves_table_unchanged(data):
    with minidb.connect(buffer_pages=64) as db:
        db.create_table("wis", data["wis"])
        db.create_index("wis", "unique1", clustered=True)
        db.create_index("wis", "unique2")
        before = contents(db, "wis")
        with pytest.raises(SchemaError):  # moves tuples on the key, then overflows int32
            db.sql("UPDATE wis SET unique1 = unique1 * 100000000 WHERE unique2 < 500")
        assert contents(db, "wis") == before
        assert rows_of(db.sql("SELECT * FROM wis WHERE unique1 < 50").to_arrow()) == \
            sorted(r for r in before if r[0] < 50)


# -- unsupported constructs ----------------------------------------------------------------------
@pytest.mark.parametrize("sql, construct", [
    ("SELECT * FROM small RIGHT JOIN other ON small.id = other.id", "RIGHT OUTER JOIN"),
    ("SELECT * FROM small FULL OUTER JOIN other ON small.id = other.id", "FULL OUTER JOIN"),
    ("SELECT * FROM small JOIN other USING (id)", "USING"),
    ("SELECT * FROM small NATURAL JOIN other", "NATURAL"),
    ("SELECT id FROM (SELECT id FROM small) s", "subqueries"),
    ("SELECT id FROM small WHERE EXISTS (SELECT id FROM other)", "subqueries"),
    ("SELECT id, ROW_NUMBER() OVER (ORDER BY id) FROM small", "window functions"),
    ("SELECT id FROM small WHERE name LIKE name", "LIKE with a pattern that is not a text constant"),
    ("SELECT REVERSE(name) FROM small", "function REVERSE"),
    ("SELECT TRY_CAST(name AS INTEGER) FROM small", "TRY_CAST"),
    ("WITH x AS (SELECT id FROM small) SELECT id FROM x", "WITH"),
    ("SELECT id FROM small LIMIT 2 OFFSET 1", "OFFSET"),
    ("SELECT CAST(id AS DATE) FROM small", "CAST to DATE"),
    ("SELECT id // 2 FROM small", "integer division"),
    ("SELECT 1", "SELECT without FROM"),
    ("SELECT id FROM small; SELECT id FROM other", "several statements"),
    ("CREATE INDEX i ON small (id)", "CREATE INDEX"),
    ("CREATE TABLE t2 (a INT)", "CREATE TABLE with a column list"),
    ("DROP TABLE small", "DROP"),
    ("SELECT grp FROM small GROUP BY ROLLUP (grp)", "ROLLUP"),
    ("SELECT id = 1 FROM small", "condition in the SELECT list"),
    ("SELECT name || 'x' FROM small", "concatenation"),
])
def test_unsupported_constructs_are_named(env, sql, construct):
    db, _ = env
    with pytest.raises(UnsupportedSQLError) as info:
        db.sql(sql)
    message = str(info.value)
    assert message.startswith("unsupported SQL: ")
    assert construct.lower() in message.lower()
    assert "minidb supports SELECT-FROM-WHERE-GROUP BY-ORDER BY" in message
    assert message.endswith("see docs/sql.md)")


# -- name and type errors ------------------------------------------------------------------------
def test_unknown_table_lists_the_tables(env):
    db, _ = env
    with pytest.raises(UnknownTableError, match="small") as info:
        db.sql("SELECT * FROM nowhere")
    assert "nowhere" in str(info.value)
    with pytest.raises(UnknownTableError):
        db.sql("INSERT INTO nowhere VALUES (1)")
    with pytest.raises(UnknownTableError):
        db.sql("SELECT x.id FROM small s")


def test_unknown_column(env):
    db, _ = env
    for sql in ("SELECT nope FROM small", "SELECT id FROM small WHERE nope = 1",
                "SELECT s.nope FROM small s", "SELECT id FROM small ORDER BY nope",
                "SELECT SUM(nope) FROM small", "SELECT id FROM small GROUP BY nope"):
        with pytest.raises(UnknownColumnError):
            db.sql(sql)


def test_type_errors(env):
    db, _ = env
    for sql in ("SELECT id FROM small WHERE name = 3", "SELECT id FROM small WHERE id > 'a'",
                "SELECT id FROM small WHERE name BETWEEN 1 AND 2", "SELECT name + 1 FROM small",
                "SELECT SUM(name) FROM small", "SELECT AVG(name) FROM small",
                "SELECT s.id FROM small s JOIN other o ON s.name = o.id",
                "SELECT id FROM small WHERE id + 1", "SELECT id FROM small WHERE NOT id"):
        with pytest.raises(SchemaError):
            db.sql(sql)


def test_other_mistakes_are_one_line_errors(env):
    db, _ = env
    cases = {
        "SELECT id FROM small s, other o": "ambiguous",
        "SELECT name, COUNT(*) FROM small GROUP BY grp": "GROUP BY",
        "SELECT id FROM small WHERE SUM(id) > 2": "aggregate",
        "SELECT * FROM small, small": "twice",
        "SELECT id FROM small ORDER BY 9": "SELECT list",
        "SELEC id FROM small": "syntax",
        "SELECT * , COUNT(*) FROM small": "SELECT *",
        "": "empty",
    }
    for sql, words in cases.items():
        with pytest.raises(MinidbError, match=words):
            db.sql(sql)


# -- hints ---------------------------------------------------------------------------------------
def test_hint_comment_is_cut_before_parsing():
    rest, body = split_hint_comment("  /*+ index */ SELECT 1")
    assert body.strip() == "index" and rest.strip() == "SELECT 1"
    assert split_hint_comment("SELECT /*+ index */ 1") == ("SELECT /*+ index */ 1", None)
    assert split_hint_comment("/* plain */ SELECT 1")[1] is None


def test_parse_hints():
    assert parse_hints("index") == Hints("index", None)
    assert parse_hints("scan, nested_loops") == Hints("scan", "nested_loops")
    assert parse_hints(None, " clustered_index ") == Hints("clustered_index", None)
    assert parse_hints("Nested-Loops") == Hints(None, "nested_loops")
    with pytest.raises(MinidbError, match="unknown hint"):
        parse_hints("fast")
    with pytest.raises(MinidbError, match="conflicting"):
        parse_hints("scan", "index")


def test_comment_hint_and_argument_hint(env):
    db, _ = env
    r = db.sql("/*+ nested_loops */ SELECT s.id FROM small s, other o WHERE s.id = o.id")
    assert "nested_loops_join" in {op.kind for op in r.plan.walk()}
    with pytest.raises(MinidbError, match="unknown hint"):
        db.sql("/*+ turbo */ SELECT id FROM small")


def test_plain_comments_are_ignored(env):
    db, con = env
    same(db, con, "/* just a note */ SELECT id FROM small WHERE id < 3 -- trailing")


def test_result_rows_and_rid_never_shown(fresh):
    r = fresh.sql("SELECT * FROM small WHERE grp = 2")
    assert r.rows == 2
    assert "_rid" not in r.to_arrow().column_names
    assert isinstance(r.wall_s, float) and r.wall_s >= 0
    assert np.isclose(sum(rows_of(r.to_arrow())[i][2] for i in range(2)), 10.25)
