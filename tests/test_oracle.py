"""The correctness oracle: minidb and DuckDB must give the same answers on the same data.

The same Arrow table (the Wisconsin relation of ``minidb.datagen``) is loaded into DuckDB and
into minidb under every file organization minidb offers: a heap with no index, a heap with
non-clustered B+ trees, a clustered file with a non-clustered index, and (Teradata style) a
hash-organized file with a dense secondary index. Then:

* the Wisconsin benchmark queries of the Gamma paper (Sections 5 to 8): 1% and 10% selections on
  unique1 and unique2 (through each access path, and forced both ways by hints), the single-tuple
  select, the MIN scalar aggregate, MIN and SUM grouped by onePercent, a join on unique1 with a
  second relation, and updates, deletes and inserts followed by the whole table;
* randomly generated queries (hypothesis): conjunctions and disjunctions of comparisons on random
  integer columns with random constants, random GROUP BY columns and aggregates, random ORDER BY.

Results are compared as sorted lists of tuples unless ORDER BY fixes the order; DuckDB's sums
(HUGEINT / DECIMAL) are turned into ints, averages are compared with a relative tolerance.
"""

from __future__ import annotations

import math
from decimal import Decimal

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minidb
from minidb.datagen import wisconsin
from minidb.errors import MinidbError

N = 10_000  # tuples of the main relation (Gamma's smallest Wisconsin relation)
N_PRIME = 1_000  # Bprime of the joinABprime query
INT_COLUMNS = ("unique1", "unique2", "two", "four", "ten", "twenty", "onePercent", "tenPercent",
               "twentyPercent", "fiftyPercent", "unique3", "evenOnePercent", "oddOnePercent")
AGGREGATES = ("MIN", "MAX", "SUM", "COUNT", "AVG")


def _has_hash_files() -> bool:
    try:
        import minidb.exec.index_scan as index_scan
        import minidb.index.hashfile  # noqa: F401
    except ImportError:
        return False
    return hasattr(index_scan, "HashLookupScan")


# organization name -> (organization, key, secondary indexes, clustered index column)
LAYOUTS = {
    "heap": ("heap", None, (), None),
    "indexed": ("heap", None, ("unique2", "unique1", "ten"), None),
    "clustered": ("heap", None, ("unique2",), "unique1"),
    "hashed": ("hash", "unique1", ("unique2",), None),
}


def layouts() -> list[str]:
    return [name for name in LAYOUTS if name != "hashed" or _has_hash_files()]


def load(db, name: str, data, layout: str) -> None:
    organization, key, indexes, clustered = LAYOUTS[layout]
    db.create_table(name, data, organization=organization, key=key)
    if clustered:
        db.create_index(name, clustered, clustered=True)
    for column in indexes:
        db.create_index(name, column)


# -- comparison ---------------------------------------------------------------------------------
def _norm(v):
    if isinstance(v, Decimal):
        return int(v) if v == int(v) else float(v)
    return v


def _sort_key(row):
    return tuple((0, round(v, 6)) if isinstance(v, float) else (1, v) for v in row)


def assert_same(mine: list[tuple], theirs: list[tuple], ordered: bool, sql: str) -> None:
    mine = [tuple(_norm(v) for v in r) for r in mine]
    theirs = [tuple(_norm(v) for v in r) for r in theirs]
    if not ordered:
        mine, theirs = sorted(mine, key=_sort_key), sorted(theirs, key=_sort_key)
    assert len(mine) == len(theirs), f"{sql}: {len(mine)} rows, DuckDB {len(theirs)}"
    for a, b in zip(mine, theirs, strict=True):
        assert len(a) == len(b), sql
        for x, y in zip(a, b, strict=True):
            if isinstance(x, float) or isinstance(y, float):
                assert math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9), f"{sql}: {a} != {b}"
            else:
                assert x == y, f"{sql}: {a} != {b}"


def minidb_rows(db, sql: str, hint: str | None = None) -> list[tuple]:
    return db.sql(sql, hint=hint).to_pylist()


def check(db, con, sql: str, duck_sql: str | None = None, ordered: bool = False,
          hint: str | None = None) -> list[tuple]:
    mine = minidb_rows(db, sql, hint)
    theirs = con.execute(duck_sql or sql).fetchall()
    assert_same(mine, theirs, ordered, sql)
    return mine


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def relations():
    return wisconsin(N, seed=11), wisconsin(N_PRIME, seed=12)


@pytest.fixture(scope="module")
def oracle(relations):
    """minidb with the relation under every layout, DuckDB with it once."""
    tenk, bprime = relations
    db = minidb.connect(buffer_pages=256)
    for layout in layouts():
        load(db, f"w_{layout}", tenk, layout)
    db.create_table("bprime", bprime)
    con = duckdb.connect()
    con.register("tenk_arrow", tenk)
    con.register("bprime_arrow", bprime)
    con.execute("CREATE TABLE wis AS SELECT * FROM tenk_arrow")
    con.execute("CREATE TABLE bprime AS SELECT * FROM bprime_arrow")
    yield db, con
    db.close()
    con.close()


def on(layout: str, sql: str) -> tuple[str, str]:
    """The query against minidb's table of ``layout`` and against DuckDB's ``wis``."""
    return sql.format(t=f"w_{layout}"), sql.format(t="wis")


# -- the Wisconsin queries ----------------------------------------------------------------------
SELECTIONS = {
    "1% on unique2": "SELECT * FROM {t} WHERE unique2 BETWEEN 4200 AND 4299",
    "10% on unique2": "SELECT * FROM {t} WHERE unique2 BETWEEN 792 AND 1791",
    "1% on unique1": "SELECT * FROM {t} WHERE unique1 >= 7000 AND unique1 < 7100",
    "10% on unique1": "SELECT * FROM {t} WHERE unique1 BETWEEN 2500 AND 3499",
    "single tuple": "SELECT * FROM {t} WHERE unique1 = 2001",
    "1% on both": "SELECT unique1, unique2 FROM {t} WHERE unique2 < 100 AND unique1 > 5000",
    "range and filter": "SELECT unique3, stringu1 FROM {t} WHERE unique2 <= 300 AND ten = 7",
}


@pytest.mark.parametrize("layout", layouts())
@pytest.mark.parametrize("query", list(SELECTIONS))
@pytest.mark.parametrize("hint", [None, "scan", "index"])
def test_wisconsin_selections(oracle, layout, query, hint):
    db, con = oracle
    sql, duck = on(layout, SELECTIONS[query])
    no_index = layout == "heap" or (layout == "hashed" and query.endswith("on unique1"))
    if hint == "index" and no_index:  # a hash file cannot serve a range on its key
        with pytest.raises(MinidbError, match="cannot be followed"):
            db.sql(sql, hint=hint)
        return
    check(db, con, sql, duck, hint=hint)


@pytest.mark.parametrize("layout", layouts())
def test_wisconsin_aggregates(oracle, layout):
    db, con = oracle
    for q in ("SELECT MIN(unique2) FROM {t}",
              "SELECT onePercent, MIN(unique2) FROM {t} GROUP BY onePercent",
              "SELECT onePercent, SUM(unique2) FROM {t} GROUP BY onePercent",
              "SELECT COUNT(*), AVG(unique1), MAX(stringu2) FROM {t}"):
        check(db, con, *on(layout, q))


@pytest.mark.parametrize("layout", layouts())
@pytest.mark.parametrize("hint", [None, "nested_loops"])
def test_wisconsin_join(oracle, layout, hint):
    db, con = oracle
    check(db, con, *on(layout, "SELECT * FROM {t} a, bprime b WHERE a.unique1 = b.unique1"), hint=hint)
    check(db, con, *on(layout, "SELECT a.unique1, b.unique2, a.stringu1 FROM {t} a JOIN bprime b "
                               "ON a.unique2 = b.unique2 WHERE b.unique1 < 500"), hint=hint)
    check(db, con, *on(layout, "SELECT b.ten, COUNT(*), SUM(a.unique2) FROM {t} a, bprime b "
                               "WHERE a.unique1 = b.unique1 GROUP BY b.ten ORDER BY b.ten"),
          ordered=True, hint=hint)


UPDATES = [
    # modify a non-indexed attribute, found through the key (Gamma Table 8, fifth query)
    "UPDATE {t} SET oddOnePercent = oddOnePercent + 1000 WHERE unique1 BETWEEN 10 AND 40",
    # modify the key attribute: the tuple must move and every index follow it
    "UPDATE {t} SET unique1 = unique1 + 20000 WHERE unique2 < 150",
    # modify the attribute of the non-clustered index
    "UPDATE {t} SET unique2 = unique2 + 50000, stringu2 = 'changed' WHERE unique1 BETWEEN 300 AND 420",
    "DELETE FROM {t} WHERE unique1 BETWEEN 5000 AND 5600",
    "DELETE FROM {t} WHERE unique2 = 77",
    "INSERT INTO {t} VALUES (777777, 888888, 1, 1, 1, 1, 1, 1, 1, 1, 777777, 2, 3, 'new', 'tuple', 'x')",
    "INSERT INTO {t} SELECT unique1 + 100000, unique2 + 100000, two, four, ten, twenty, onePercent, "
    "tenPercent, twentyPercent, fiftyPercent, unique3, evenOnePercent, oddOnePercent, stringu1, "
    "stringu2, string4 FROM {t} WHERE unique1 < 250",
]
AFTER = [
    "SELECT * FROM {t} WHERE unique2 BETWEEN 0 AND 200",
    "SELECT * FROM {t} WHERE unique1 BETWEEN 0 AND 500",
    "SELECT * FROM {t} WHERE unique1 >= 20000",
    "SELECT * FROM {t} WHERE unique2 >= 50000",
    "SELECT * FROM {t} WHERE unique1 = 20005",
]


@pytest.mark.parametrize("layout", layouts())
def test_wisconsin_updates(relations, layout):
    tenk, _ = relations
    db = minidb.connect(buffer_pages=128)
    con = duckdb.connect()
    try:
        load(db, "w", tenk, layout)
        con.register("tenk_arrow", tenk)
        con.execute("CREATE TABLE w AS SELECT * FROM tenk_arrow")
        for statement in UPDATES:
            sql = statement.format(t="w")
            expected = con.execute(sql).fetchall()[0][0]
            assert db.sql(sql).rows == expected, sql
            check(db, con, "SELECT * FROM w")
            for q in AFTER:  # every access path still finds exactly the right tuples
                for hint in (None, "scan", "index"):
                    try:
                        check(db, con, q.format(t="w"), hint=hint)
                    except MinidbError as e:
                        assert hint == "index" and "cannot be followed" in str(e)
        assert db.table("w").num_records == con.execute("SELECT COUNT(*) FROM w").fetchone()[0]
    finally:
        db.close()
        con.close()


def test_create_table_as_is_retrieve_into(oracle):
    db, con = oracle
    db.sql("CREATE TABLE r1 AS SELECT * FROM w_heap WHERE unique2 BETWEEN 0 AND 99")
    try:
        check(db, con, "SELECT * FROM r1", "SELECT * FROM wis WHERE unique2 BETWEEN 0 AND 99")
    finally:
        db.drop_table("r1")


# -- random queries -----------------------------------------------------------------------------
def _constant(column: str) -> st.SearchStrategy[int]:
    top = N if column.startswith("unique") else 200
    return st.integers(-3, top + 3)


@st.composite
def comparisons(draw) -> str:
    column = draw(st.sampled_from(INT_COLUMNS))
    shape = draw(st.sampled_from(["cmp", "cmp", "cmp", "between", "arith", "mod"]))
    if shape == "between":
        a, b = draw(_constant(column)), draw(_constant(column))
        return f"{column} BETWEEN {min(a, b)} AND {max(a, b)}"
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
    if shape == "arith":
        k = draw(st.integers(1, 5))
        arith = draw(st.sampled_from(["+", "-", "*"]))
        return f"{column} {arith} {k} {op} {draw(_constant(column))}"
    if shape == "mod":
        m = draw(st.integers(2, 9))
        return f"{column} % {m} {op} {draw(st.integers(0, m - 1))}"
    value = draw(_constant(column))
    if draw(st.booleans()):
        return f"{column} {op} {value}"
    flipped = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "<>": "<>"}[op]
    return f"{value} {flipped} {column}"


predicates = st.recursive(
    comparisons(),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda ps: "(" + " AND ".join(ps) + ")"),
        st.lists(inner, min_size=2, max_size=3).map(lambda ps: "(" + " OR ".join(ps) + ")"),
        inner.map(lambda p: f"NOT ({p})"),
    ),
    max_leaves=5,
)

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@SETTINGS
@given(layout=st.sampled_from(layouts()), where=predicates,
       columns=st.lists(st.sampled_from(INT_COLUMNS + ("stringu1",)), min_size=1, max_size=4,
                        unique=True),
       hint=st.sampled_from([None, "scan"]))
def test_random_selections(oracle, layout, where, columns, hint):
    db, con = oracle
    sql, duck = on(layout, f"SELECT {', '.join(columns)} FROM {{t}} WHERE {where}")
    check(db, con, sql, duck, hint=hint)


@SETTINGS
@given(layout=st.sampled_from(layouts()), where=st.one_of(st.none(), predicates),
       group=st.sampled_from(INT_COLUMNS[2:10]),
       func=st.sampled_from(AGGREGATES), argument=st.sampled_from(INT_COLUMNS))
def test_random_group_by(oracle, layout, where, group, func, argument):
    db, con = oracle
    clause = f" WHERE {where}" if where else ""
    sql, duck = on(layout, f"SELECT {group}, {func}({argument}), COUNT(*) FROM {{t}}{clause} "
                           f"GROUP BY {group}")
    check(db, con, sql, duck)


@SETTINGS
@given(layout=st.sampled_from(layouts()), where=predicates,
       funcs=st.lists(st.tuples(st.sampled_from(AGGREGATES), st.sampled_from(INT_COLUMNS)),
                      min_size=1, max_size=3))
def test_random_scalar_aggregates(oracle, layout, where, funcs):
    db, con = oracle
    items = ", ".join(f"{f}({c})" for f, c in funcs)
    sql, duck = on(layout, f"SELECT COUNT(*), {items} FROM {{t}} WHERE {where}")
    theirs = con.execute(duck).fetchall()
    mine = minidb_rows(db, sql)
    # no tuple qualifies: one row, COUNT 0 and NULL for MIN / MAX / AVG / SUM, as in SQL
    assert_same(mine, theirs, True, sql)


@SETTINGS
@given(layout=st.sampled_from(layouts()), where=st.one_of(st.none(), predicates),
       keys=st.lists(st.tuples(st.sampled_from(INT_COLUMNS[2:]), st.booleans()), min_size=1,
                     max_size=3, unique_by=lambda k: k[0]),
       limit=st.one_of(st.none(), st.integers(0, 50)))
def test_random_order_by(oracle, layout, where, keys, limit):
    db, con = oracle
    order = ", ".join(f"{c} {'ASC' if asc else 'DESC'}" for c, asc in keys)
    clause = f" WHERE {where}" if where else ""
    tail = f" LIMIT {limit}" if limit is not None else ""
    # unique1 last makes the order total, so the two engines must agree row by row
    sql, duck = on(layout, f"SELECT unique1, {', '.join(c for c, _ in keys)} FROM {{t}}{clause} "
                           f"ORDER BY {order}, unique1{tail}")
    check(db, con, sql, duck, ordered=True)


@pytest.mark.slow
def test_wisconsin_100k_selections_and_join():
    big, small = wisconsin(100_000, seed=3), wisconsin(10_000, seed=4)
    db = minidb.connect(buffer_pages=512)
    con = duckdb.connect()
    try:
        load(db, "big", big, "clustered")
        db.create_table("small", small)
        con.register("big_arrow", big)
        con.register("small_arrow", small)
        con.execute("CREATE TABLE big AS SELECT * FROM big_arrow")
        con.execute("CREATE TABLE small AS SELECT * FROM small_arrow")
        for sql in ("SELECT * FROM big WHERE unique2 BETWEEN 1000 AND 1999",
                    "SELECT * FROM big WHERE unique1 BETWEEN 50000 AND 59999",
                    "SELECT onePercent, SUM(unique2) FROM big GROUP BY onePercent",
                    "SELECT b.unique1, s.unique2 FROM big b, small s WHERE b.unique1 = s.unique1"):
            check(db, con, sql)
    finally:
        db.close()
        con.close()
