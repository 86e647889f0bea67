"""ExternalSort: order checked against DuckDB ORDER BY, run and merge-pass accounting, budgets."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minidb.buffer.manager import BufferManager
from minidb.errors import MemoryBudgetError, UnknownColumnError
from minidb.exec import ArrayScan, ExecContext, ExternalSort, HeapScan
from minidb.exec.store import tuples_per_page
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, char_column, float_column, int_column

SCHEMA = Schema([
    int_column("unique2"), int_column("ten"), int_column("hundred"), int_column("big", "int64"),
    float_column("fl"), char_column("str", 12), char_column("cat", 4),
])


def make_records(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r = np.empty(n, dtype=SCHEMA.dtype)
    r["unique2"] = rng.permutation(n)
    r["ten"] = rng.integers(0, 10, n)
    r["hundred"] = rng.integers(-50, 50, n)
    r["big"] = rng.integers(-(2**62), 2**62, n)
    r["fl"] = rng.normal(size=n).round(2)
    letters = rng.integers(ord("a"), ord("e") + 1, (n, 12), dtype=np.uint8)  # many shared prefixes
    letters[np.arange(12)[None, :] >= rng.integers(1, 13, n)[:, None]] = 0
    r["str"] = letters.view("S12").ravel()
    r["cat"] = np.array([b"red", b"blue", b"g", b"ochr", b"re"])[rng.integers(0, 5, n)]
    return r


@pytest.fixture
def ctx(tmp_path):
    disk = Disk(tmp_path, 4096)
    return ExecContext(disk, BufferManager(disk, 32))


def duck_order(records: np.ndarray, order_by: str) -> list[int]:
    con = duckdb.connect()
    con.register("t", SCHEMA.arrow_from_records(records))
    return [r[0] for r in con.sql(f"SELECT unique2 FROM t ORDER BY {order_by}").fetchall()]


ORDERS = [
    ([("unique2", True)], "unique2"),
    ([("big", False)], "big DESC"),
    ([("str", True), ("unique2", True)], "str, unique2"),
    ([("str", False), ("unique2", False)], "str DESC, unique2 DESC"),
    ([("ten", False), ("cat", True), ("unique2", True)], "ten DESC, cat, unique2"),
    ([("cat", False), ("hundred", True), ("fl", False), ("unique2", True)],
     "cat DESC, hundred, fl DESC, unique2"),
]


@pytest.mark.parametrize("memory", [4, 12, 1000])
@pytest.mark.parametrize("keys,order_by", ORDERS, ids=[o[1] for o in ORDERS])
def test_order_matches_duckdb(ctx, keys, order_by, memory):
    records = make_records(5000, seed=len(order_by))
    heap = HeapFile(ctx.disk.create("t"), SCHEMA, ctx.buffer)
    heap.append(records)
    op = ExternalSort(ctx, HeapScan(ctx, heap), keys, memory)
    out = op.collect()
    assert out["unique2"].tolist() == duck_order(records, order_by)
    assert op.stats.tuples_in == op.stats.tuples_out == len(records)
    if memory == 1000:  # fits in the sort space: nothing written
        assert op.stats.extra["runs"] == 0 and op.stats.extra["pages_written"] == 0
    else:
        assert op.stats.extra["runs"] > 1


def test_tiny_budget_makes_many_runs_and_merge_passes(ctx):
    n = 3000
    records = make_records(n, seed=3)
    per_page = tuples_per_page(ctx.page_size, SCHEMA)
    pages = math.ceil(n / per_page)
    for memory in (3, 4):
        before = ctx.disk.io.snapshot()
        op = ExternalSort(ctx, ArrayScan(SCHEMA, records, batch_rows=500), [("str", False), ("unique2", True)],
                          memory)
        out = op.collect()
        io = ctx.disk.io.minus(before)
        extra = op.stats.extra
        runs = math.ceil(n / (memory * per_page))
        passes = math.ceil(math.log(runs, memory - 1))
        assert extra["runs"] == runs
        assert extra["merge_passes"] == passes > 1
        # every pass but the last writes each page once; every pass reads each page once
        assert extra["pages_written"] == pages * (passes - 1) + pages == io.writes
        assert extra["pages_read"] == pages * passes == io.reads
        assert out["unique2"].tolist() == duck_order(records, "str DESC, unique2")
    assert sorted(p.name for p in ctx.disk.path.iterdir()) == []  # temp runs dropped


def test_input_that_fits_writes_no_run(ctx):
    records = make_records(2000)
    memory = math.ceil(2000 / tuples_per_page(ctx.page_size, SCHEMA))
    before = ctx.disk.io.snapshot()
    op = ExternalSort(ctx, ArrayScan(SCHEMA, records), [("hundred", True)], memory)
    out = op.collect()
    assert ctx.disk.io.minus(before).writes == 0
    assert op.stats.extra["runs"] == 0 and op.stats.extra["merge_passes"] == 0
    assert np.array_equal(out, records[np.argsort(records["hundred"], kind="stable")])
    op = ExternalSort(ctx, ArrayScan(SCHEMA, records), [("hundred", True)], memory - 1)
    op.collect()
    assert op.stats.extra["runs"] == 2 and op.stats.extra["merge_passes"] == 1


def test_sort_is_stable_on_equal_keys(ctx):
    records = make_records(4000, seed=9)
    for memory in (3, 5, 100):
        out = ExternalSort(ctx, ArrayScan(SCHEMA, records, 333), [("ten", False)], memory).collect()
        expected = records[np.argsort(~records["ten"], kind="stable")]
        assert np.array_equal(out, expected)


def test_output_batches_are_bounded(ctx):
    ctx.batch_rows = 700
    records = make_records(3000)
    op = ExternalSort(ctx, ArrayScan(SCHEMA, records), [("big", True)], 5)
    sizes = [len(b) for b in op]
    assert max(sizes) <= 700 and sum(sizes) == 3000


def test_empty_input(ctx):
    records = make_records(10)[:0]
    assert len(ExternalSort(ctx, ArrayScan(SCHEMA, records), [("ten", True)], 3).collect()) == 0


def test_budget_below_minimum_raises(ctx):
    op = ExternalSort(ctx, ArrayScan(SCHEMA, make_records(10)), [("ten", True)], 2)
    with pytest.raises(MemoryBudgetError, match="at least 3 pages"):
        op.open()


def test_unknown_key_raises():
    with pytest.raises(UnknownColumnError):
        ExternalSort(None, ArrayScan(SCHEMA, make_records(10)), [("nope", True)], 3)


def test_early_close_drops_runs(ctx):
    op = ExternalSort(ctx, ArrayScan(SCHEMA, make_records(5000)), [("str", True)], 3)
    op.open()
    assert op.next() is not None
    assert any(ctx.disk.path.iterdir())
    op.close()
    assert not any(ctx.disk.path.iterdir())


INT_SCHEMA = Schema([int_column("v", "int64")])


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=2500),
       memory=st.integers(3, 8), ascending=st.booleans())
def test_property_equals_np_sort(values, memory, ascending):
    disk = Disk(None, 2048)  # 2 KB pages: 250 int64 tuples a page, so runs are short
    try:
        ctx = ExecContext(disk, BufferManager(disk, 16), batch_rows=1000)
        records = np.array(values, dtype=np.int64).view(INT_SCHEMA.dtype)
        out = ExternalSort(ctx, ArrayScan(INT_SCHEMA, records, batch_rows=300), [("v", ascending)],
                           memory).collect()
        expected = np.sort(np.array(values, dtype=np.int64))
        assert np.array_equal(out["v"], expected if ascending else expected[::-1])
    finally:
        disk.close()
