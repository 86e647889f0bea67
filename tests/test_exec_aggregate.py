"""HashAggregate: grouped and scalar aggregates against DuckDB, output types, spilling, budgets."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from minidb.buffer.manager import BufferManager
from minidb.errors import MemoryBudgetError, SchemaError
from minidb.exec import ArrayScan, ExecContext, HashAggregate, HeapScan
from minidb.exec.aggregate import hash_columns
from minidb.exec.expr import Arith, Col, Const
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, char_column, float_column, int_column

SCHEMA = Schema([
    int_column("unique2"), int_column("ten"), int_column("hundred"), int_column("thousand"),
    int_column("small", "int16"), int_column("big", "int64"), float_column("fl"),
    char_column("str", 8), char_column("cat", 4),
])


def make_records(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r = np.empty(n, dtype=SCHEMA.dtype)
    r["unique2"] = np.arange(n)
    r["ten"] = rng.integers(0, 10, n)
    r["hundred"] = rng.integers(0, 100, n)
    r["thousand"] = rng.integers(0, 1000, n)
    r["small"] = rng.integers(-300, 300, n)
    r["big"] = rng.integers(-(2**40), 2**40, n)
    r["fl"] = rng.normal(size=n)
    letters = rng.integers(ord("a"), ord("d") + 1, (n, 8), dtype=np.uint8)
    letters[np.arange(8)[None, :] >= rng.integers(1, 4, n)[:, None]] = 0
    r["str"] = letters.view("S8").ravel()
    r["cat"] = np.array([b"red", b"blue", b"g", b"ochr"])[rng.integers(0, 4, n)]
    return r


@pytest.fixture
def ctx(tmp_path):
    disk = Disk(tmp_path, 4096)
    return ExecContext(disk, BufferManager(disk, 32))


def rows_of(schema: Schema, records: np.ndarray) -> list[tuple]:
    return [tuple(d.values()) for d in schema.arrow_from_records(records).to_pylist()]


def duck(sql: str, records: np.ndarray) -> list[tuple]:
    con = duckdb.connect()
    con.register("t", SCHEMA.arrow_from_records(records))
    return [tuple(r) for r in con.sql(sql).fetchall()]


def assert_rows_equal(got: list[tuple], expected: list[tuple]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(sorted(got), sorted(expected), strict=True):
        assert len(g) == len(e)
        for a, b in zip(g, e, strict=True):
            if isinstance(a, float) or isinstance(b, float):
                assert a == pytest.approx(b, rel=1e-9, abs=1e-9)
            else:
                assert a == b


ALL_FIVE = [
    ("n", "COUNT", None),
    ("total", "SUM", Col("small")),
    ("lo", "MIN", Col("big")),
    ("hi", "MAX", Col("str")),
    ("mean", "AVG", Col("fl")),
    ("fsum", "SUM", Col("fl")),
    ("lo_s", "min", Col("cat")),
    ("avg_i", "AVG", Col("thousand")),
]
ALL_FIVE_SQL = ("count(*), sum(small), min(big), max(str), avg(fl), sum(fl), min(cat), "
                "avg(thousand)")


@pytest.mark.parametrize("group_by", [["hundred"], ["ten", "cat"], ["str"], ["cat", "small"]])
def test_grouped_matches_duckdb(ctx, group_by):
    records = make_records(20000, seed=len(group_by))
    heap = HeapFile(ctx.disk.create("t"), SCHEMA, ctx.buffer)
    heap.append(records)
    op = HashAggregate(ctx, HeapScan(ctx, heap), group_by, ALL_FIVE, memory_pages=200)
    out = op.collect()
    keys = ", ".join(group_by)
    expected = duck(f"SELECT {keys}, {ALL_FIVE_SQL} FROM t GROUP BY {keys}", records)
    assert_rows_equal(rows_of(op.schema, out), expected)
    assert op.stats.extra["groups"] == len(expected)
    assert op.stats.extra["spills"] == 0
    assert op.stats.tuples_in == len(records)


def test_scalar_aggregates_match_duckdb(ctx):
    records = make_records(12345)
    op = HashAggregate(ctx, ArrayScan(SCHEMA, records, batch_rows=1000), [], ALL_FIVE, 3)
    out = op.collect()
    assert len(out) == 1
    assert_rows_equal(rows_of(op.schema, out), duck(f"SELECT {ALL_FIVE_SQL} FROM t", records))


def test_output_types(ctx):
    op = HashAggregate(ctx, ArrayScan(SCHEMA, make_records(10)), ["cat", "small"], [
        ("c", "COUNT", Col("ten")), ("si", "SUM", Col("small")), ("sf", "SUM", Col("fl")),
        ("a", "AVG", Col("small")), ("mn", "MIN", Col("small")), ("mx", "MAX", Col("str")),
        ("e", "MAX", Arith("*", Col("ten"), Const(2))),
    ], 3)
    kinds = [(c.name, c.kind, c.width) for c in op.schema.columns]
    assert kinds == [("cat", "char", 4), ("small", "int16", 2), ("c", "int64", 8), ("si", "int64", 8),
                     ("sf", "float64", 8), ("a", "float64", 8), ("mn", "int16", 2),
                     ("mx", "char", 8), ("e", "int64", 8)]


def test_expression_argument(ctx):
    records = make_records(5000)
    op = HashAggregate(ctx, ArrayScan(SCHEMA, records, 700), ["ten"],
                       [("s", "SUM", Arith("*", Col("hundred"), Const(3))),
                        ("m", "MAX", Arith("+", Col("fl"), Col("small")))], 10)
    expected = duck("SELECT ten, sum(hundred * 3), max(fl + small) FROM t GROUP BY ten", records)
    assert_rows_equal(rows_of(op.schema, op.collect()), expected)


def test_empty_input(ctx):
    empty = make_records(5)[:0]
    counts = HashAggregate(ctx, ArrayScan(SCHEMA, empty), [],
                           [("c", "COUNT", None), ("s", "SUM", Col("big")), ("f", "SUM", Col("fl"))], 3)
    assert rows_of(counts.schema, counts.collect()) == [(0, None, None)]
    # MIN, MAX, SUM and AVG of nothing are NULL, as in SQL (and DuckDB): one row
    for func in ("MIN", "MAX", "AVG"):
        op = HashAggregate(ctx, ArrayScan(SCHEMA, empty), [], [("c", "COUNT", None), ("x", func, Col("ten"))], 3)
        assert rows_of(op.schema, op.collect()) == [(0, None)]
    grouped = HashAggregate(ctx, ArrayScan(SCHEMA, empty), ["ten"], [("c", "COUNT", None)], 3)
    assert len(grouped.collect()) == 0


@pytest.mark.parametrize("memory", [3, 5, 12])
def test_spills_partitions_when_groups_do_not_fit(ctx, memory):
    records = make_records(30000, seed=4)
    op = HashAggregate(ctx, ArrayScan(SCHEMA, records, batch_rows=2000), ["thousand", "cat"],
                       [("n", "COUNT", None), ("s", "SUM", Col("big")), ("lo", "MIN", Col("str")),
                        ("a", "AVG", Col("small"))], memory)
    before = ctx.disk.io.snapshot()
    out = op.collect()
    io = ctx.disk.io.minus(before)
    expected = duck("SELECT thousand, cat, count(*), sum(big), min(str), avg(small) FROM t "
                    "GROUP BY thousand, cat", records)
    assert_rows_equal(rows_of(op.schema, out), expected)
    extra = op.stats.extra
    assert len(expected) > extra["max_groups"]
    assert extra["spills"] >= 1 and extra["spill_partitions"] >= 2
    assert extra["spill_pages_written"] == extra["spill_pages_read"] == io.writes > 0
    assert not any(ctx.disk.path.iterdir())  # partitions dropped


def test_no_spill_when_groups_fit(ctx):
    records = make_records(30000, seed=5)
    before = ctx.disk.io.snapshot()
    op = HashAggregate(ctx, ArrayScan(SCHEMA, records), ["hundred"], [("n", "COUNT", None)], 3)
    op.collect()
    assert op.stats.extra["max_groups"] >= 100 and op.stats.extra["spills"] == 0
    assert ctx.disk.io.minus(before).writes == 0


def test_hash_is_consistent_across_batches():
    records = make_records(1000)
    again = records.copy()
    again["fl"][:] = np.where(records["fl"] == 0, -0.0, records["fl"])
    cols = ["cat", "ten", "str", "fl"]
    assert np.array_equal(hash_columns(records, cols, 1), hash_columns(again, cols, 1))
    assert not np.array_equal(hash_columns(records, cols, 1), hash_columns(records, cols, 2))
    zero = np.zeros(2, dtype=[("f", "<f8")])
    zero["f"] = [0.0, -0.0]
    h = hash_columns(zero, ["f"])
    assert h[0] == h[1]


def test_errors(ctx):
    scan = ArrayScan(SCHEMA, make_records(10))
    with pytest.raises(SchemaError, match="text"):
        HashAggregate(ctx, scan, [], [("s", "SUM", Col("str"))], 3)
    with pytest.raises(SchemaError, match="unknown aggregate"):
        HashAggregate(ctx, scan, [], [("s", "MEDIAN", Col("ten"))], 3)
    with pytest.raises(SchemaError, match="argument"):
        HashAggregate(ctx, scan, [], [("s", "MAX", None)], 3)
    op = HashAggregate(ctx, scan, ["ten"], [("c", "COUNT", None)], 2)
    with pytest.raises(MemoryBudgetError):
        op.open()


NUMERIC_AGGREGATES = [
    ("n", "COUNT", None), ("c", "COUNT", Col("fl")), ("total", "SUM", Col("small")),
    ("lo", "MIN", Col("big")), ("hi", "MAX", Col("thousand")), ("avg_i", "AVG", Col("big")),
    ("mn_f", "MIN", Col("fl")), ("e", "MAX", Arith("*", Col("ten"), Const(2))),
]


@pytest.mark.parametrize("group_by, memory", [
    ("hundred", 200), ("thousand", 200), ("small", 200), ("unique2", 200),
    ("big", 200), ("hundred", 3), ("thousand", 4)])  # 3, 4 pages: the table spills
def test_direct_addressing_gives_what_sorting_gives(ctx, monkeypatch, group_by, memory):
    """Grouping a batch by direct addressing (``DIRECT_SPAN``) and by sorting give the same
    bytes, the same counters (groups, spills, pages) and the same answer as DuckDB."""
    import minidb.exec.aggregate as agg

    records = make_records(30000, seed=7)
    records["small"][::3] = -30000  # int16 keys 60,000 apart: the offset must not wrap
    records["small"][1::3] = 30000

    used = []
    real = agg.HashAggregate._partial_direct
    monkeypatch.setattr(agg.HashAggregate, "_partial_direct",
                        lambda self, *a: used.append(1) or real(self, *a))

    def run(span: int):
        monkeypatch.setattr(agg, "DIRECT_SPAN", span)
        op = HashAggregate(ctx, ArrayScan(SCHEMA, records, batch_rows=16000), [group_by],
                           NUMERIC_AGGREGATES, memory_pages=memory)
        return op.collect(), op.stats

    direct, direct_stats = run(agg.DIRECT_SPAN)
    assert bool(used) == (group_by != "big")  # +-2**40 apart: sorted
    sorted_, sorted_stats = run(0)  # a span of at least 1 never fits in 0 per tuple: sort
    assert direct.tobytes() == sorted_.tobytes()
    assert direct_stats == sorted_stats
    sql = (f"SELECT {group_by}, count(*), count(fl), sum(small), min(big), max(thousand), "
           f"avg(big), min(fl), max(ten * 2) FROM t GROUP BY {group_by}")
    expected = duck(sql, records)
    assert_rows_equal(rows_of(HashAggregate(ctx, ArrayScan(SCHEMA, records[:1]), [group_by],
                                            NUMERIC_AGGREGATES, 3).schema, direct), expected)


def test_direct_addressing_with_null_arguments(monkeypatch):
    """NULL arguments under direct addressing: skipped by SUM / MIN / AVG / COUNT(x), and a group
    whose values are all NULL gets NULL; the same bytes as sorting, the same answer as DuckDB."""
    import pyarrow as pa

    import minidb
    import minidb.exec.aggregate as agg

    rng = np.random.default_rng(11)
    n = 20_000
    g = rng.integers(0, 50, n)
    v = rng.integers(-(2**31), 2**31 - 1, n)
    w = rng.integers(-(2**40), 2**40, n)  # 64-bit: summed as two words
    table = pa.table({"g": pa.array(g, pa.int32()),
                      "v": pa.array(v, pa.int32(), mask=(rng.random(n) < 0.3) | (g == 7)),
                      "w": pa.array(w, pa.int64(), mask=rng.random(n) < 0.3)})
    sql = ("SELECT g, COUNT(*), COUNT(v), SUM(v), MIN(v), MAX(w), AVG(v), SUM(w) FROM t "
           "GROUP BY g ORDER BY g")
    answers = {}
    for span in (agg.DIRECT_SPAN, 0):
        monkeypatch.setattr(agg, "DIRECT_SPAN", span)
        with minidb.connect() as db:
            db.create_table("t", table)
            r = db.sql(sql)
            answers[span] = (r._records.tobytes(), r.to_pylist(), r.counters)
    assert answers[agg.DIRECT_SPAN] == answers[0]
    con = duckdb.connect()
    con.register("t", table)
    expected = [tuple(row) for row in con.execute(sql).fetchall()]
    assert_rows_equal(answers[0][1], expected)
    assert answers[0][1][7][3] is None  # group 7: every v is NULL


@pytest.mark.parametrize("kind, low", [("int8", -128), ("int8", 100), ("int64", 2**63 - 40),
                                       ("int64", -(2**63)), ("int32", -(2**31))])
def test_direct_addressing_at_the_ends_of_the_key_type(ctx, monkeypatch, kind, low):
    """Keys at the ends of their type: the slot (key - smallest key) and the key given back
    (slot + smallest key) must not wrap into other values."""
    import minidb.exec.aggregate as agg

    schema = Schema([int_column("k", kind), int_column("v", "int64")])
    info = np.iinfo(schema.dtype["k"])
    records = np.empty(3000, dtype=schema.dtype)
    rng = np.random.default_rng(5)
    records["k"] = np.clip(low + rng.integers(0, 40, 3000), info.min, info.max)
    records["v"] = rng.integers(-1000, 1000, 3000)
    aggregates = [("n", "COUNT", None), ("s", "SUM", Col("v")), ("m", "MIN", Col("v"))]

    def run(span: int) -> np.ndarray:
        monkeypatch.setattr(agg, "DIRECT_SPAN", span)
        return HashAggregate(ctx, ArrayScan(schema, records, 1000), ["k"], aggregates, 10).collect()

    direct, sorted_ = run(agg.DIRECT_SPAN), run(0)
    assert direct.tobytes() == sorted_.tobytes()
    assert sorted(direct["k"].tolist()) == sorted(set(records["k"].tolist()))
