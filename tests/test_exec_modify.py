"""Insert, Delete and Update over a small table backed by a heap file, checked against DuckDB."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from minidb.buffer.manager import BufferManager
from minidb.errors import SchemaError, UnknownColumnError
from minidb.exec import ArrayScan, Delete, ExecContext, HeapScan, Insert, Project, Update
from minidb.exec.expr import And, Arith, Col, Compare, Const
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, char_column, float_column, int_column

SCHEMA = Schema([int_column("id"), int_column("ten"), int_column("hundred", "int16"), float_column("fl"),
                 char_column("name", 6)])


class FakeTable:
    """The table protocol the modification iterators use, over one heap file."""

    def __init__(self, heap: HeapFile):
        self.heap = heap
        self.schema = heap.schema
        self.name = "fake"
        self.calls: list[str] = []

    def insert(self, records: np.ndarray) -> np.ndarray:
        self.calls.append("insert")
        return self.heap.append(records)

    def delete(self, rids: np.ndarray) -> int:
        self.calls.append("delete")
        return self.heap.delete(np.sort(rids))

    def update(self, rids: np.ndarray, records: np.ndarray) -> None:
        self.calls.append("update")
        self.heap.update(rids, records)


def make_records(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r = np.empty(n, dtype=SCHEMA.dtype)
    r["id"] = np.arange(n)
    r["ten"] = rng.integers(0, 10, n)
    r["hundred"] = rng.integers(0, 100, n)
    r["fl"] = rng.normal(size=n).round(3)
    r["name"] = np.char.add(b"n", rng.integers(0, 999, n).astype("S3"))
    return r


@pytest.fixture
def ctx(tmp_path):
    disk = Disk(tmp_path, 4096)
    return ExecContext(disk, BufferManager(disk, 32))


@pytest.fixture
def table(ctx):
    heap = HeapFile(ctx.disk.create("t"), SCHEMA, ctx.buffer)
    heap.append(make_records(5000))
    return FakeTable(heap)


def contents(table: FakeTable) -> list[tuple]:
    return sorted(tuple(d.values()) for d in SCHEMA.arrow_from_records(table.heap.read_all()).to_pylist())


def duck_after(records: np.ndarray, statement: str) -> tuple[int, list[tuple]]:
    con = duckdb.connect()
    con.register("src", SCHEMA.arrow_from_records(records))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    affected = con.execute(statement).fetchall()[0][0]
    return affected, sorted(tuple(r) for r in con.sql("SELECT * FROM t").fetchall())


def count_of(op) -> int:
    out = op.collect()
    assert op.schema.names == ["count"] and out.dtype["count"] == np.dtype("<i8") and len(out) == 1
    return int(out["count"][0])


def test_delete_matches_duckdb(ctx, table):
    before = table.heap.read_all()
    pred = And((Compare("<", Col("ten"), Const(4)), Compare(">", Col("hundred"), Const(20))))
    op = Delete(HeapScan(ctx, table.heap, pred, with_rids=True), table)
    affected, expected = duck_after(before, "DELETE FROM t WHERE ten < 4 AND hundred > 20")
    assert count_of(op) == affected == op.stats.extra["affected"]
    assert contents(table) == expected
    assert table.calls == ["delete"]
    # deleting again finds nothing
    assert count_of(Delete(HeapScan(ctx, table.heap, pred, with_rids=True), table)) == 0


def test_update_matches_duckdb(ctx, table):
    before = table.heap.read_all()
    pred = Compare(">=", Col("hundred"), Const(90))
    op = Update(HeapScan(ctx, table.heap, pred, with_rids=True), table,
                {"TEN": Arith("+", Col("ten"), Const(100)), "fl": Arith("*", Col("fl"), Const(2)),
                 "name": Const("big")})
    affected, expected = duck_after(
        before, "UPDATE t SET ten = ten + 100, fl = fl * 2, name = 'big' WHERE hundred >= 90")
    assert count_of(op) == affected
    got = contents(table)
    assert [r[:3] + r[4:] for r in got] == [r[:3] + r[4:] for r in expected]
    assert [r[3] for r in got] == pytest.approx([r[3] for r in expected])
    assert table.calls == ["update"]


def test_update_every_row_once(ctx, table):
    """No Halloween problem: rows moved by the update are not updated again."""
    op = Update(HeapScan(ctx, table.heap, with_rids=True), table, {"id": Arith("+", Col("id"), Const(1))})
    assert count_of(op) == 5000
    assert sorted(table.heap.read_all()["id"].tolist()) == list(range(1, 5001))


@pytest.mark.parametrize("assignments,message", [
    ({"name": Const("toolong")}, "7 bytes"),
    ({"ten": Const("x")}, "not text"),
    ({"name": Col("ten")}, "stores text"),
    ({"ten": Col("fl")}, "not floats"),
    ({"hundred": Arith("*", Col("hundred"), Const(1000))}, "does not fit in int16"),
])
def test_update_checks_values_before_changing_anything(ctx, table, assignments, message):
    before = contents(table)
    op = Update(HeapScan(ctx, table.heap, with_rids=True), table, assignments)
    with pytest.raises(SchemaError, match=message):
        op.collect()
    assert contents(table) == before and table.calls == []


def test_update_needs_rids_and_known_columns(ctx, table):
    with pytest.raises(SchemaError, match="_rid"):
        Update(HeapScan(ctx, table.heap), table, {"ten": Const(1)})
    with pytest.raises(SchemaError, match="_rid"):
        Delete(HeapScan(ctx, table.heap), table)
    with pytest.raises(UnknownColumnError, match="nope"):
        Update(HeapScan(ctx, table.heap, with_rids=True), table, {"nope": Const(1)})


def test_insert_values(table):
    new = make_records(300, seed=5)
    op = Insert(ArrayScan(SCHEMA, new, batch_rows=128), table)
    assert count_of(op) == 300
    assert table.heap.num_records == 5300 and table.calls == ["insert"]
    assert sorted(table.heap.read_all().tolist()[-300:]) == sorted(new.tolist())


def test_insert_select_converts_by_position(ctx, table):
    # INSERT INTO t SELECT id + 10000, ten, hundred, fl, name FROM t WHERE ten = 0 (reads t itself)
    pred = Compare("=", Col("ten"), Const(0))
    source = Project(HeapScan(ctx, table.heap, pred), [
        ("x", Arith("+", Col("id"), Const(10000))), ("y", Col("ten")), ("z", Col("hundred")),
        ("w", Col("fl")), ("v", Col("name"))])
    before = table.heap.read_all()
    n = int((before["ten"] == 0).sum())
    assert count_of(Insert(source, table)) == n
    after = table.heap.read_all()
    assert len(after) == 5000 + n
    added = after[after["id"] >= 10000]
    assert sorted(added["id"].tolist()) == sorted((before["id"][before["ten"] == 0] + 10000).tolist())


def test_insert_rejects_bad_rows_without_inserting(table):
    other = Schema([int_column("a"), int_column("b"), float_column("c"), float_column("d"),
                    char_column("e", 6)])
    rows = np.zeros(10, dtype=other.dtype)
    with pytest.raises(SchemaError, match="not floats"):
        Insert(ArrayScan(other, rows), table).collect()
    assert table.heap.num_records == 5000 and table.calls == []
    with pytest.raises(SchemaError, match="columns"):
        Insert(ArrayScan(Schema([int_column("a")]), np.zeros(1, dtype=[("a", "<i4")])), table)
