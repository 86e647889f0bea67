"""Tests of minidb.exec.index_scan: every index access path returns what a filtered scan does."""

from __future__ import annotations

import numpy as np
import pytest

from minidb.buffer import BufferManager
from minidb.exec.expr import And, Between, Col, Compare, Const, key_range
from minidb.exec.index_scan import ClusteredIndexScan, DenseIndexScan, HashLookupScan, IndexScan
from minidb.exec.iterator import ExecContext
from minidb.index.btree import BPlusTree
from minidb.index.clustered import ClusteredFile
from minidb.index.hashfile import DenseHashIndex, HashFile
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, char_column, int_column

SCHEMA = Schema([int_column("unique1"), int_column("unique2"), int_column("ten"),
                 int_column("hundred"), char_column("stringu1", 52)])
N = 20_000


def records(n: int = N) -> np.ndarray:
    rng = np.random.default_rng(9)
    out = np.zeros(n, dtype=SCHEMA.dtype)
    out["unique1"] = rng.permutation(n)
    out["unique2"] = rng.permutation(n)
    out["ten"] = out["unique1"] % 10
    out["hundred"] = out["unique1"] % 100
    out["stringu1"] = np.char.add(b"AAAA", out["unique1"].astype("S10"))
    return out


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    disk = Disk(tmp_path_factory.mktemp("idx") / "node", 4096)
    buf = BufferManager(disk, 128)
    ctx = ExecContext(disk, buf, batch_rows=4096)
    recs = records()
    heap = HeapFile(disk.create("heap"), SCHEMA, buf)
    rids = heap.append(recs)
    env = {
        "ctx": ctx, "disk": disk, "buf": buf, "recs": recs, "heap": heap,
        "tree": BPlusTree.bulk_load(disk, buf, "heap.unique2", recs["unique2"], rids),
        "cfile": ClusteredFile.build(disk, buf, "clustered", SCHEMA, recs, "unique1"),
        "hfile": HashFile.build(disk, buf, "hashed", SCHEMA, recs, "unique1"),
        "dense": DenseHashIndex.build(disk, buf, "heap.unique2.hash", recs["unique2"], rids),
    }
    yield env
    disk.close()


def expect(recs, column, low, high, predicate=None) -> np.ndarray:
    mask = np.ones(len(recs), dtype=bool)
    if low is not None:
        mask &= recs[column] >= low
    if high is not None:
        mask &= recs[column] <= high
    if predicate is not None:
        mask &= predicate.evaluate(recs)
    return recs[mask]


RANGES = [(100, 299), (0, 0), (None, 50), (19_900, None), (None, None), (500, 400), (-10, 5)]
RESIDUAL = Compare("=", Col("ten"), Const(3))


@pytest.mark.parametrize("low,high", RANGES)
@pytest.mark.parametrize("predicate", [None, RESIDUAL])
def test_clustered_index_scan(db, low, high, predicate):
    op = ClusteredIndexScan(db["ctx"], db["cfile"], low, high, predicate=predicate)
    got = op.collect()
    assert got.dtype == SCHEMA.dtype
    want = expect(db["recs"], "unique1", low, high, predicate)
    assert sorted(got["unique1"].tolist()) == sorted(want["unique1"].tolist())
    assert np.all(np.diff(got["unique1"]) >= 0)  # a clustered scan delivers key order
    np.testing.assert_array_equal(got, np.sort(want, order="unique1"))


@pytest.mark.parametrize("low,high", RANGES)
@pytest.mark.parametrize("predicate", [None, RESIDUAL])
def test_non_clustered_index_scan(db, low, high, predicate):
    op = IndexScan(db["ctx"], db["heap"], db["tree"], low, high, predicate=predicate)
    got = op.collect()
    want = expect(db["recs"], "unique2", low, high, predicate)
    np.testing.assert_array_equal(np.sort(got, order="unique1"), np.sort(want, order="unique1"))


@pytest.mark.parametrize("low,high", RANGES)
@pytest.mark.parametrize("predicate", [None, RESIDUAL])
def test_dense_index_scan(db, low, high, predicate):
    op = DenseIndexScan(db["ctx"], db["heap"], db["dense"], low, high, predicate=predicate)
    got = op.collect()
    want = expect(db["recs"], "unique2", low, high, predicate)
    np.testing.assert_array_equal(np.sort(got, order="unique1"), np.sort(want, order="unique1"))


@pytest.mark.parametrize("value", [0, 7, 19_999, 20_000, -1])
def test_hash_lookup_scan(db, value):
    got = HashLookupScan(db["ctx"], db["hfile"], value).collect()
    np.testing.assert_array_equal(got, expect(db["recs"], "unique1", value, value))
    never = Compare("<", Col("ten"), Const(0))
    assert len(HashLookupScan(db["ctx"], db["hfile"], value, predicate=never).collect()) == 0


def test_with_rids_column_points_at_the_rows(db):
    ctx = db["ctx"]
    cases = [
        (ClusteredIndexScan(ctx, db["cfile"], 10, 60, with_rids=True), db["cfile"]),
        (IndexScan(ctx, db["heap"], db["tree"], 10, 60, with_rids=True), db["heap"]),
        (HashLookupScan(ctx, db["hfile"], 33, with_rids=True), db["hfile"]),
        (DenseIndexScan(ctx, db["heap"], db["dense"], 10, 60, with_rids=True), db["heap"]),
        (DenseIndexScan(ctx, db["heap"], db["dense"], 44, 44, with_rids=True), db["heap"]),
    ]
    for op, source in cases:
        got = op.collect()
        assert op.schema.names == SCHEMA.names + ["_rid"]
        assert got.dtype["_rid"] == np.dtype("<i8") and len(got)
        fetched = source.fetch(got["_rid"])
        for name in SCHEMA.names:
            np.testing.assert_array_equal(fetched[name], got[name])


def test_scans_agree_with_a_filtered_full_scan_on_a_where_clause(db):
    # WHERE unique2 BETWEEN 1000 AND 1499 AND hundred < 50 : key_range splits off the residual
    pred = And((Between(Col("unique2"), Const(1000), Const(1499)),
                Compare("<", Col("hundred"), Const(50))))
    low, high, rest = key_range(pred, "unique2")
    assert (low, high) == (1000, 1499) and len(rest) == 1
    full = np.concatenate([r[pred.evaluate(r)] for r, _ in db["heap"].scan()])
    for op in (IndexScan(db["ctx"], db["heap"], db["tree"], low, high, predicate=rest[0]),
               DenseIndexScan(db["ctx"], db["heap"], db["dense"], low, high, predicate=rest[0])):
        got = op.collect()
        np.testing.assert_array_equal(np.sort(got, order="unique1"), np.sort(full, order="unique1"))
        assert op.stats.tuples_out == len(full) and op.stats.tuples_in == 500


def test_index_scan_fixes_each_data_page_once_per_batch(tmp_path):
    disk = Disk(tmp_path / "n", 4096)
    buf = BufferManager(disk, 512)
    recs = records(5000)
    recs["unique2"] = recs["unique1"] // 10  # ten matching tuples per key, spread over the file
    heap = HeapFile(disk.create("h"), SCHEMA, buf)
    rids = heap.append(recs)
    tree = BPlusTree.bulk_load(disk, buf, "h.u2", recs["unique2"], rids)
    ctx = ExecContext(disk, buf, batch_rows=100_000)  # the whole range in one batch
    before = buf.counters.snapshot()
    got = IndexScan(ctx, heap, tree, 0, 99).collect()
    used = buf.counters.minus(before)
    assert len(got) == 1000
    distinct_pages = len(np.unique(rids[recs["unique2"] <= 99] // heap.capacity))
    leaves = -(-1000 // tree.leaf_capacity) + 1
    assert distinct_pages < 1000  # several matches share a page ...
    assert used.hits + used.misses <= distinct_pages + tree.height + leaves  # ... and cost one fix


@pytest.mark.parametrize("scan", ["index", "dense"])
@pytest.mark.parametrize("low,high", [(100, 299), (None, 50), (500, 400)])
def test_index_order_fetch_returns_the_same_records_in_key_order(db, scan, low, high):
    ctx = ExecContext(db["disk"], db["buf"], batch_rows=4096, rid_fetch="index_order")
    if scan == "index":
        op = IndexScan(ctx, db["heap"], db["tree"], low, high, predicate=RESIDUAL)
    else:
        op = DenseIndexScan(ctx, db["heap"], db["dense"], low, high, predicate=RESIDUAL)
    got = op.collect()
    want = expect(db["recs"], "unique2", low, high, RESIDUAL)
    np.testing.assert_array_equal(np.sort(got, order="unique1"), np.sort(want, order="unique1"))
    if scan == "index":  # the B+ tree hands out record ids in key order, and so does the fetch
        assert np.all(np.diff(got["unique2"]) > 0)


def test_index_order_fetch_costs_a_fix_per_tuple_and_rereads_evicted_pages(tmp_path):
    """Gamma's access method (§5.1, §5.2.2): every qualifying tuple fixes its data page, so a
    page holding several of them is fixed several times, and read again from disk once a small
    buffer pool has let it go; the sorted fetch reads each page once."""
    recs = records(5000)
    recs["unique2"] = np.random.default_rng(3).permutation(5000)
    used = {}
    for mode in ("sorted", "index_order"):
        disk = Disk(tmp_path / mode, 4096)
        buf = BufferManager(disk, 16)
        heap = HeapFile(disk.create("h"), SCHEMA, buf)
        rids = heap.append(recs)
        tree = BPlusTree.bulk_load(disk, buf, "h.u2", recs["unique2"], rids)
        buf.flush()
        buf.discard(heap.file)  # start cold: no data page in the pool
        ctx = ExecContext(disk, buf, batch_rows=100_000, rid_fetch=mode)
        before_fix, before_io = buf.counters.snapshot(), disk.io.snapshot()
        got = IndexScan(ctx, heap, tree, 0, 999).collect()
        assert len(got) == 1000
        used[mode] = (buf.counters.minus(before_fix), disk.io.minus(before_io))
        matching = rids[recs["unique2"] <= 999]
        distinct_pages = len(np.unique(matching // heap.capacity))
        disk.close()
    fixes, io = used["index_order"]
    assert fixes.hits + fixes.misses >= 1000  # one fix per tuple (plus the index leaves)
    assert used["sorted"][1].reads < io.reads  # pages evicted between two of their tuples
    assert distinct_pages < 1000 < io.reads + fixes.hits


def test_an_unknown_fetch_order_is_refused(tmp_path):
    from minidb.database import Database
    from minidb.errors import MinidbError

    with pytest.raises(MinidbError, match="rid_fetch must be one of sorted, index_order"):
        Database(rid_fetch="random")


def test_describe_and_explain(db):
    ctx = db["ctx"]
    op = IndexScan(ctx, db["heap"], db["tree"], 5, 10, predicate=RESIDUAL, with_rids=True)
    text = op.describe()
    assert "heap.unique2" in text and "5" in text and "10" in text and "ten = 3" in text
    assert "unique1 = 7" in HashLookupScan(ctx, db["hfile"], 7).describe()
    assert "unique1 in [1 .. +inf]" in ClusteredIndexScan(ctx, db["cfile"], 1, None).describe()
    assert "whole index" in DenseIndexScan(ctx, db["heap"], db["dense"], 1, 2).describe()
    assert "one bucket" in DenseIndexScan(ctx, db["heap"], db["dense"], 2, 2).describe()
    op.collect()
    assert "[in=" in op.explain()
    assert {IndexScan.kind, ClusteredIndexScan.kind, HashLookupScan.kind, DenseIndexScan.kind} == {
        "index_scan", "clustered_index_scan", "hash_lookup", "dense_index_scan"}


def test_early_close_releases_everything(db):
    op = ClusteredIndexScan(db["ctx"], db["cfile"], None, None)
    op.open()
    assert op.next() is not None
    op.close()
    op2 = IndexScan(db["ctx"], db["heap"], db["tree"], None, None)
    op2.open()
    assert op2.next() is not None
    op2.close()
    assert db["buf"].pinned_frames == 0
