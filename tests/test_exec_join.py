"""HashJoin and NestedLoopsJoin against DuckDB; memory budgets, schema rules, block accounting."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest

from minidb.buffer.manager import BufferManager
from minidb.errors import MemoryBudgetError, SchemaError
from minidb.exec import ArrayScan, ExecContext, HashJoin, HeapScan, NestedLoopsJoin
from minidb.exec.expr import And, Arith, Col, Compare, Const
from minidb.exec.store import tuples_per_page
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, char_column, float_column, int_column


def schema_for(prefix: str) -> Schema:
    return Schema([int_column(f"{prefix}_id"), int_column(f"{prefix}_key"), float_column(f"{prefix}_f"),
                   char_column(f"{prefix}_s", 6)])


A, B = schema_for("a"), schema_for("b")


def make_records(schema: Schema, n: int, keys: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = schema.names[0].split("_")[0]
    r = np.empty(n, dtype=schema.dtype)
    r[f"{p}_id"] = np.arange(n)
    r[f"{p}_key"] = rng.integers(0, keys, n)
    r[f"{p}_f"] = rng.normal(size=n).round(3)
    r[f"{p}_s"] = np.char.add(b"k", rng.integers(0, keys, n).astype("S5"))
    return r


@pytest.fixture
def ctx(tmp_path):
    disk = Disk(tmp_path, 4096)
    return ExecContext(disk, BufferManager(disk, 32), batch_rows=4096)


def heap_of(ctx, name, schema, records):
    heap = HeapFile(ctx.disk.create(name), schema, ctx.buffer)
    heap.append(records)
    return heap


def rows_of(schema: Schema, records: np.ndarray) -> list[tuple]:
    return [tuple(d.values()) for d in schema.arrow_from_records(records).to_pylist()]


def duck(sql: str, a: np.ndarray, b: np.ndarray) -> list[tuple]:
    con = duckdb.connect()
    con.register("a", A.arrow_from_records(a))
    con.register("b", B.arrow_from_records(b))
    return [tuple(r) for r in con.sql(sql).fetchall()]


@pytest.mark.parametrize("keys", [50, 3000])
def test_hash_join_matches_duckdb(ctx, keys):
    a, b = make_records(A, 6000, keys, 1), make_records(B, 1500, keys, 2)
    op = HashJoin(ctx, HeapScan(ctx, heap_of(ctx, "b", B, b)), HeapScan(ctx, heap_of(ctx, "a", A, a)),
                  "b_key", "a_key", memory_pages=100)
    out = op.collect()
    assert op.schema.names == A.names + B.names  # probe columns, then build columns
    expected = duck("SELECT a.*, b.* FROM a JOIN b ON a_key = b_key", a, b)
    assert sorted(rows_of(op.schema, out)) == sorted(expected)
    extra = op.stats.extra
    assert extra["build_tuples"] == 1500 and extra["probe_tuples"] == 6000
    assert extra["matches"] == len(expected) == len(out)
    assert extra["build_pages"] == math.ceil(1500 / tuples_per_page(ctx.page_size, B))
    if keys == 50:
        assert max(len(x) for x in HashJoin(ctx, ArrayScan(B, b), ArrayScan(A, a), "b_key", "a_key",
                                            100)) <= ctx.batch_rows


def test_hash_join_on_text(ctx):
    a, b = make_records(A, 3000, 400, 3), make_records(B, 800, 400, 4)
    op = HashJoin(ctx, ArrayScan(B, b, 300), ArrayScan(A, a, 500), "b_s", "a_s", memory_pages=50)
    expected = duck("SELECT a.*, b.* FROM a JOIN b ON a_s = b_s", a, b)
    assert sorted(rows_of(op.schema, op.collect())) == sorted(expected)


def test_hash_join_build_too_large_still_answers(ctx):
    """A build input bigger than the table's memory (an underestimate) is joined in several
    memory-loads against the spooled probe input: same answer, more passes, never an error."""
    b = make_records(B, 5000, 10, 5)
    a = make_records(A, 300, 10, 6)
    per_page = tuples_per_page(ctx.page_size, B)
    needed = math.ceil(5000 / per_page)
    expected = sorted(rows_of(
        HashJoin(ctx, ArrayScan(B, b, 700), ArrayScan(A, a), "b_key", "a_key", needed).schema,
        HashJoin(ctx, ArrayScan(B, b, 700), ArrayScan(A, a), "b_key", "a_key", needed).collect()))
    assert len(expected) == sum(int((b["b_key"] == k).sum()) for k in a["a_key"])
    for memory in (needed - 1, needed // 3, 1):
        op = HashJoin(ctx, ArrayScan(B, b, 700), ArrayScan(A, a, 90), "b_key", "a_key", memory)
        out = op.collect()
        assert sorted(rows_of(op.schema, out)) == expected
        assert op.stats.extra["build_pages"] == needed
        assert op.stats.extra["overflow_passes"] == math.ceil(5000 / (memory * per_page)) - 1
        assert op.stats.extra["spill_pages_written"] > 0
    op = HashJoin(ctx, ArrayScan(B, b, 700), ArrayScan(A, a), "b_key", "a_key", needed)
    op.collect()
    assert op.stats.extra["overflow_passes"] == 0
    op = HashJoin(ctx, ArrayScan(B, b), ArrayScan(A, b[:0].view(A.dtype)), "b_key", "a_key", 0)
    with pytest.raises(MemoryBudgetError, match="at least 1"):
        op.open()


def test_hash_join_empty_inputs(ctx):
    a, b = make_records(A, 100, 5, 1), make_records(B, 100, 5, 2)
    assert len(HashJoin(ctx, ArrayScan(B, b[:0]), ArrayScan(A, a), "b_key", "a_key", 4).collect()) == 0
    assert len(HashJoin(ctx, ArrayScan(B, b), ArrayScan(A, a[:0]), "b_key", "a_key", 4).collect()) == 0


def test_joins_reject_shared_column_names(ctx):
    a = make_records(A, 10, 5, 1)
    with pytest.raises(SchemaError, match="a_key"):
        HashJoin(ctx, ArrayScan(A, a), ArrayScan(A, a), "a_key", "a_key", 4)
    with pytest.raises(SchemaError, match="a_id"):
        NestedLoopsJoin(ctx, ArrayScan(A, a), ArrayScan(A, a), None, 4)
    with pytest.raises(SchemaError, match="text"):
        HashJoin(ctx, ArrayScan(B, make_records(B, 10, 5, 2)), ArrayScan(A, a), "b_s", "a_key", 4)


NON_EQUI = [
    ("a_key < b_key AND a_f > b_f + 1.5",
     And((Compare("<", Col("a_key"), Col("b_key")),
          Compare(">", Col("a_f"), Arith("+", Col("b_f"), Const(1.5)))))),
    ("a_s = b_s AND a_id % 3 = 0", And((Compare("=", Col("a_s"), Col("b_s")),
                                        Compare("=", Arith("%", Col("a_id"), Const(3)), Const(0))))),
    ("b_id BETWEEN a_id AND a_id + 2", And((Compare(">=", Col("b_id"), Col("a_id")),
                                            Compare("<=", Col("b_id"), Arith("+", Col("a_id"), Const(2)))))),
]


@pytest.mark.parametrize("sql,pred", NON_EQUI, ids=[p[0] for p in NON_EQUI])
@pytest.mark.parametrize("memory", [3, 6, 200])
def test_nested_loops_matches_duckdb(ctx, sql, pred, memory):
    a, b = make_records(A, 1200, 40, 7), make_records(B, 700, 40, 8)
    outer_heap, inner_heap = heap_of(ctx, "a", A, a), heap_of(ctx, "b", B, b)
    op = NestedLoopsJoin(ctx, HeapScan(ctx, outer_heap), HeapScan(ctx, inner_heap), pred, memory)
    out = op.collect()
    assert op.schema.names == A.names + B.names
    expected = duck(f"SELECT a.*, b.* FROM a, b WHERE {sql}", a, b)
    assert sorted(rows_of(op.schema, out)) == sorted(expected)
    extra = op.stats.extra
    blocks = math.ceil(1200 / ((memory - 2) * tuples_per_page(ctx.page_size, A)))
    assert extra["outer_blocks"] == extra["inner_scans"] == blocks
    assert extra["inner_pages_written"] == inner_heap.num_pages
    assert extra["inner_pages_read"] == blocks * inner_heap.num_pages
    assert extra["pairs"] == 1200 * 700
    assert len(list(ctx.disk.path.iterdir())) == 2  # the temp inner file was dropped


def test_nested_loops_equi_join_equals_hash_join(ctx):
    a, b = make_records(A, 2000, 100, 9), make_records(B, 500, 100, 10)
    nl = NestedLoopsJoin(ctx, ArrayScan(A, a, 333), ArrayScan(B, b, 200),
                         Compare("=", Col("a_key"), Col("b_key")), 4).collect()
    hj = HashJoin(ctx, ArrayScan(B, b), ArrayScan(A, a), "b_key", "a_key", 50).collect()
    assert sorted(nl.tolist()) == sorted(hj.tolist())


def test_nested_loops_cross_product_and_empty(ctx):
    a, b = make_records(A, 150, 10, 1), make_records(B, 40, 10, 2)
    out = NestedLoopsJoin(ctx, ArrayScan(A, a), ArrayScan(B, b), None, 3).collect()
    assert len(out) == 150 * 40
    assert len(NestedLoopsJoin(ctx, ArrayScan(A, a), ArrayScan(B, b[:0]), None, 3).collect()) == 0
    assert len(NestedLoopsJoin(ctx, ArrayScan(A, a[:0]), ArrayScan(B, b), None, 3).collect()) == 0
    op = NestedLoopsJoin(ctx, ArrayScan(A, a), ArrayScan(B, b), None, 2)
    with pytest.raises(MemoryBudgetError):
        op.open()
