"""Scans, filter, project and store, checked against DuckDB on the same data."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from minidb.buffer.manager import BufferManager
from minidb.errors import SchemaError
from minidb.exec import ArrayScan, ExecContext, Filter, HeapScan, Project, Store
from minidb.exec.expr import And, Arith, Between, Col, Compare, Const, Not, Or
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, char_column, float_column, int_column

SCHEMA = Schema([
    int_column("unique1"), int_column("unique2"), int_column("ten"), int_column("hundred"),
    int_column("big", "int64"), float_column("fl"), char_column("str", 12), char_column("cat", 4),
])


def make_records(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r = np.empty(n, dtype=SCHEMA.dtype)
    r["unique1"] = rng.permutation(n)
    r["unique2"] = np.arange(n)
    r["ten"] = r["unique1"] % 10
    r["hundred"] = rng.integers(0, 100, n)
    r["big"] = rng.integers(-(2**40), 2**40, n)
    r["fl"] = rng.normal(size=n).round(3)
    letters = rng.integers(ord("a"), ord("z") + 1, (n, 12), dtype=np.uint8)
    letters[np.arange(12)[None, :] >= rng.integers(1, 13, n)[:, None]] = 0
    r["str"] = letters.view("S12").ravel()
    r["cat"] = np.array([b"red", b"blue", b"g", b"ochr"])[rng.integers(0, 4, n)]
    return r


@pytest.fixture
def ctx(tmp_path):
    disk = Disk(tmp_path, 4096)
    return ExecContext(disk, BufferManager(disk, 64))


@pytest.fixture
def loaded(ctx):
    records = make_records(6000)
    heap = HeapFile(ctx.disk.create("t"), SCHEMA, ctx.buffer)
    heap.append(records)
    return heap, records


def rows_of(schema: Schema, records: np.ndarray) -> list[tuple]:
    return [tuple(d.values()) for d in schema.arrow_from_records(records).to_pylist()]


def duck(sql: str, **tables) -> list[tuple]:
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return [tuple(r) for r in con.sql(sql).fetchall()]


PREDICATES = [
    ("unique2 < 100", Compare("<", Col("unique2"), Const(100))),
    ("hundred BETWEEN 10 AND 20 AND ten <> 3",
     And((Between(Col("hundred"), Const(10), Const(20)), Compare("<>", Col("ten"), Const(3))))),
    ("cat = 'blue' OR fl > 1.5", Or((Compare("=", Col("cat"), Const("blue")),
                                     Compare(">", Col("fl"), Const(1.5))))),
    ("str >= 'm' AND NOT (ten = 0)", And((Compare(">=", Col("str"), Const("m")),
                                          Not(Compare("=", Col("ten"), Const(0)))))),
    # non-negative operands: numpy's % floors where SQL's truncates (they differ on negatives)
    ("unique1 % 7 = hundred % 7", Compare("=", Arith("%", Col("unique1"), Const(7)),
                                          Arith("%", Col("hundred"), Const(7)))),
]


def test_heap_scan_reads_every_tuple_and_counts_pages(ctx, loaded):
    heap, records = loaded
    scan = HeapScan(ctx, heap)
    out = scan.collect()
    assert np.array_equal(out, records)
    assert scan.stats.tuples_in == scan.stats.tuples_out == len(records)
    assert scan.stats.extra["pages"] == heap.num_pages
    clusters = -(-heap.num_pages // heap.cluster_pages())
    assert scan.stats.batches_out == clusters  # one batch per cluster of pages


@pytest.mark.parametrize("sql,pred", PREDICATES, ids=[p[0] for p in PREDICATES])
def test_heap_scan_predicate_matches_duckdb(ctx, loaded, sql, pred):
    heap, records = loaded
    t = SCHEMA.arrow_from_records(records)
    scan = HeapScan(ctx, heap, pred)
    got = rows_of(SCHEMA, scan.collect())
    assert sorted(got) == sorted(duck(f"SELECT * FROM t WHERE {sql}", t=t))
    assert scan.stats.tuples_in == len(records)


@pytest.mark.parametrize("sql,pred", PREDICATES, ids=[p[0] for p in PREDICATES])
def test_filter_matches_duckdb(loaded, sql, pred):
    _, records = loaded
    t = SCHEMA.arrow_from_records(records)
    op = Filter(ArrayScan(SCHEMA, records, batch_rows=700), pred)
    got = rows_of(SCHEMA, op.collect())
    expected = duck(f"SELECT * FROM t WHERE {sql}", t=t)
    wanted = set(expected)
    assert got == [r for r in rows_of(SCHEMA, records) if r in wanted]  # input order is kept
    assert sorted(got) == sorted(expected)
    assert op.stats.tuples_in == len(records) and op.stats.tuples_out == len(expected)


def test_scan_with_rids(ctx, loaded):
    heap, records = loaded
    heap.delete(np.arange(0, heap.num_records, 5, dtype=np.int64))  # leave holes in the pages
    scan = HeapScan(ctx, heap, Compare("<", Col("ten"), Const(5)), with_rids=True)
    out = scan.collect()
    assert scan.schema.names == SCHEMA.names + ["_rid"]
    assert out.dtype["_rid"] == np.dtype("<i8")
    fetched = heap.fetch(out["_rid"])
    assert np.array_equal(fetched, out[SCHEMA.names].astype(SCHEMA.dtype))
    assert (out["ten"] < 5).all()
    assert len(out) == int((heap.read_all()["ten"] < 5).sum())


def test_array_scan_batches():
    records = make_records(1000)
    op = ArrayScan(SCHEMA, records, batch_rows=300)
    sizes = [len(b) for b in op]
    assert sizes == [300, 300, 300, 100]
    assert np.array_equal(ArrayScan(SCHEMA, records[:0]).collect(), records[:0])


def test_project_matches_duckdb(loaded):
    _, records = loaded
    t = SCHEMA.arrow_from_records(records)
    outputs = [
        ("u", Col("unique2")),
        ("s", Col("str")),
        ("twice", Arith("*", Col("ten"), Const(2))),
        ("total", Arith("+", Col("big"), Col("unique1"))),
        ("ratio", Arith("/", Col("hundred"), Const(4))),
        ("shifted", Arith("-", Col("fl"), Const(0.5))),
        ("label", Const("x")),
    ]
    op = Project(ArrayScan(SCHEMA, records, batch_rows=1000), outputs)
    assert [c.kind for c in op.schema.columns] == ["int32", "char", "int64", "int64", "float64",
                                                   "float64", "char"]
    assert op.schema.column("s").width == 12
    got = rows_of(op.schema, op.collect())
    expected = duck("SELECT unique2, str, ten * 2, big + unique1, hundred / 4, fl - 0.5, 'x' "
                    "FROM t ORDER BY unique2", t=t)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g[:4] == e[:4] and g[6] == e[6]
        assert g[4] == pytest.approx(e[4]) and g[5] == pytest.approx(e[5])


def test_project_rejects_a_comparison_as_output():
    with pytest.raises(SchemaError):
        Project(ArrayScan(SCHEMA, make_records(10)), [("flag", Compare("<", Col("ten"), Const(3)))])


def test_store_appends_to_a_heap_file(ctx, loaded):
    heap, records = loaded
    target = HeapFile(ctx.disk.create("result"), SCHEMA, ctx.buffer)
    op = Store(Filter(HeapScan(ctx, heap), Compare("<", Col("hundred"), Const(30))), target)
    assert len(op.collect()) == 0
    expected = records[records["hundred"] < 30]
    assert op.stats.extra["stored"] == len(expected) == target.num_records
    assert np.array_equal(target.read_all(), expected)
    assert "Store" in op.explain() and "Filter" in op.explain()


def test_store_into_a_table_like_target():
    class Sink:
        schema = SCHEMA

        def __init__(self):
            self.parts = []

        def insert(self, records):
            self.parts.append(records.copy())
            return np.arange(len(records))

    sink = Sink()
    op = Store(ArrayScan(SCHEMA, make_records(2500), batch_rows=1000), sink)
    op.collect()
    assert op.stats.extra["stored"] == 2500
    assert [len(p) for p in sink.parts] == [1000, 1000, 500]


def test_heap_scan_projection_keeps_only_the_asked_columns(ctx, loaded):
    heap, records = loaded
    names = SCHEMA.names
    pick = [names[-1], names[0]]
    scan = HeapScan(ctx, heap, columns=pick, predicate=None)
    out = scan.collect()
    assert out.dtype.names == tuple(pick)
    for c in pick:
        assert np.array_equal(out[c], records[c])
