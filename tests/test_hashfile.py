"""Tests of minidb.index.hashfile: Teradata's hash-organized files and dense hash indices."""

from __future__ import annotations

import numpy as np
import pytest

from minidb.buffer import BufferManager
from minidb.index._util import bucket_of, hash_keys
from minidb.index.hashfile import DenseHashIndex, HashFile
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.page import HASH_BUCKET, headers
from minidb.storage.schema import Schema, char_column, int_column

SCHEMA = Schema([int_column("unique1"), int_column("unique2"), int_column("ten"),
                 char_column("pad", 52)])  # 64 bytes


def make_records(n: int, seed: int = 0, first: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.zeros(n, dtype=SCHEMA.dtype)
    out["unique1"] = np.arange(first, first + n)
    out["unique2"] = rng.permutation(n) + first
    out["ten"] = out["unique1"] % 10
    out["pad"] = np.char.add(b"x", out["unique1"].astype("S12"))
    return out


def setup(tmp_path, n=10_000, page_size=4096, frames=64):
    disk = Disk(tmp_path / "node", page_size)
    buf = BufferManager(disk, frames)
    recs = make_records(n)
    return disk, buf, recs, HashFile.build(disk, buf, "h", SCHEMA, recs, "unique1")


def chain_length(f, page_no: int) -> int:
    """Pages in a bucket chain, read straight from the file (not through the pool)."""
    n = 0
    while page_no >= 0:
        page_no = int(headers(f.read_pages(page_no, 1))["link"][0])
        n += 1
    return n


def all_records(hf) -> tuple[np.ndarray, np.ndarray]:
    parts = list(hf.scan())
    return np.concatenate([r for r, _ in parts]), np.concatenate([i for _, i in parts])


# -- the hash function ------------------------------------------------------------------------
def test_hash_is_stable_and_width_independent():
    ints = np.array([0, 1, 2, -1, 2**31 - 1], dtype=np.int64)
    h = hash_keys(ints)
    np.testing.assert_array_equal(h, hash_keys(ints.astype(np.int32)))
    assert h.dtype == np.uint64 and len(set(h.tolist())) == 5
    words = np.array([b"abc", b"abd", b""], dtype="S6")
    hw = hash_keys(words)
    assert len(set(hw.tolist())) == 3
    np.testing.assert_array_equal(hw, hash_keys(words.copy()))
    counts = np.bincount(bucket_of(np.arange(100_000), 100), minlength=100)
    assert counts.min() > 800 and counts.max() < 1200  # spreads consecutive keys evenly


def test_hash_values_do_not_change_between_releases():
    # golden values: files written by one run must be found by the next. hash(0) is the first
    # output of splitmix64 seeded with 0 (0xE220A8397B1DCDAF)
    assert [int(x) for x in hash_keys(np.array([0, 1, 42], dtype=np.int32))] == [
        16294208416658607535, 10451216379200822465, 13679457532755275413]
    assert [int(x) for x in hash_keys(np.array([b"teradata", b""], dtype="S8"))] == [
        13966575984142102863, 6603144262649002859]


# -- HashFile -----------------------------------------------------------------------------------
def test_build_places_records_in_hash_key_order(tmp_path):
    disk, buf, recs, hf = setup(tmp_path)
    assert hf.num_records == 10_000
    expected_b = -(-10_000 // int(hf.capacity * 0.8))
    assert hf.num_buckets == expected_b
    pages = hf.heap.file.read_pages(0, hf.num_pages)
    h = headers(pages)
    assert set(h["kind"].tolist()) == {HASH_BUCKET}
    assert h["count"].sum() == 10_000
    got, rids = all_records(hf)
    assert sorted(got["unique1"].tolist()) == list(range(10_000))
    page_of = rids // hf.capacity
    primary = page_of < hf.num_buckets
    np.testing.assert_array_equal(bucket_of(got["unique1"][primary], hf.num_buckets), page_of[primary])
    np.testing.assert_array_equal(hf.fetch(rids), got)


def test_lookup_reads_one_bucket(tmp_path):
    disk, buf, recs, hf = setup(tmp_path)
    single = 0
    for key in [0, 17, 4242, 9999, 123_456, -5]:
        b = hf.bucket(key)
        length = chain_length(hf.heap.file, b)
        before = buf.counters.snapshot()
        got, rids = hf.lookup(key)
        used = buf.counters.minus(before)
        assert used.misses + used.hits == length
        single += length == 1
        want = recs[recs["unique1"] == key]
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(hf.fetch(rids), want)
    assert single >= 4  # buckets start about 80% full: overflow chains are rare
    assert len(hf.lookup(2**40)[0]) == 0  # cannot be an int32 key: no page read at all


def test_insert_overflow_chain_then_delete(tmp_path):
    disk, buf, recs, hf = setup(tmp_path, n=2000, frames=16)
    pages_before = hf.num_pages
    dup = make_records(500, seed=1, first=100_000)
    dup["unique1"] = 77  # one key, far more than a page: the bucket grows an overflow chain
    rids = hf.insert(dup)
    assert hf.num_pages > pages_before
    np.testing.assert_array_equal(hf.fetch(rids), dup)
    got, got_rids = hf.lookup(77)
    assert len(got) == 501
    buf.flush()  # the chain's pages reach the disk, where chain_length reads them
    assert chain_length(hf.heap.file, hf.bucket(77)) >= 1 + 500 // hf.capacity
    assert hf.delete(got_rids[::2]) == 251
    assert len(hf.lookup(77)[0]) == 250
    assert hf.num_records == 2000 + 500 - 251
    again = hf.insert(make_records(10, first=200_000))  # reuses free slots
    assert len(again) == 10 and hf.num_records == 2259
    total, _ = all_records(hf)
    assert len(total) == 2259


def test_update_in_place(tmp_path):
    disk, buf, recs, hf = setup(tmp_path, n=500)
    got, rids = hf.lookup(5)
    got["pad"] = b"new"
    hf.update_in_place(rids, got)
    assert hf.lookup(5)[0]["pad"].tolist() == [b"new"]


# -- DenseHashIndex -----------------------------------------------------------------------------
@pytest.fixture
def indexed(tmp_path):
    disk = Disk(tmp_path / "node", 4096)
    buf = BufferManager(disk, 64)
    recs = make_records(20_000, seed=3)
    heap = HeapFile(disk.create("rel"), SCHEMA, buf)
    rids = heap.append(recs)
    index = DenseHashIndex.build(disk, buf, "rel.unique2", recs["unique2"], rids)
    return disk, buf, recs, rids, heap, index


def test_dense_index_lookup_reads_one_bucket(indexed):
    disk, buf, recs, rids, heap, index = indexed
    assert index.num_entries == 20_000
    assert index.num_pages >= index.num_buckets == -(-20_000 // int(index.capacity * 0.8))
    for value in [0, 19_999, 1234]:
        b = int(bucket_of(np.array([value], np.int32), index.num_buckets)[0])
        before = buf.counters.snapshot()
        got = index.lookup(value)
        used = buf.counters.minus(before)
        assert used.hits + used.misses == chain_length(index.file, b)
        np.testing.assert_array_equal(got, rids[recs["unique2"] == value])


@pytest.mark.parametrize("low,high", [(100, 299), (5000, 5000), (None, 10), (19_990, None), (7, 3)])
def test_dense_index_range_reads_every_index_page(indexed, low, high):
    disk, buf, recs, rids, heap, index = indexed
    before_b, before_d = buf.counters.snapshot(), disk.io.snapshot()
    got = index.range_rids(low, high)
    used_b, used_d = buf.counters.minus(before_b), disk.io.minus(before_d)
    mask = np.ones(len(recs), dtype=bool)
    if low is not None:
        mask &= recs["unique2"] >= low
    if high is not None:
        mask &= recs["unique2"] <= high
    assert sorted(got.tolist()) == sorted(rids[mask].tolist())
    if low is not None and high is not None and low > high:
        return
    # not sorted, so the whole index is read, in one sequential pass, however small the range
    assert used_b.misses + used_b.hits == index.num_pages
    assert used_d.reads == index.num_pages and used_d.rand_reads == 1


def test_dense_index_insert_and_delete(indexed):
    disk, buf, recs, rids, heap, index = indexed
    new = make_records(3000, seed=4, first=50_000)
    new["unique2"] = 42  # a very hot key: an overflow chain
    new_rids = heap.append(new)
    index.insert(new["unique2"], new_rids)
    assert index.num_entries == 23_000
    assert sorted(index.lookup(42).tolist()) == sorted(
        np.append(new_rids, rids[recs["unique2"] == 42]).tolist())
    assert len(index.range_rids(40, 44)) == 3000 + 5
    gone = index.delete(np.full(1500, 42), new_rids[:1500])
    assert gone == 1500
    assert index.delete(np.array([42]), np.array([10**9])) == 0  # absent pair
    assert index.delete(recs["unique2"][:10], rids[:10]) == 10
    assert index.num_entries == 23_000 - 1510
    assert len(index.lookup(42)) == 1501 - (1 if 42 in recs["unique2"][:10] else 0)
    assert len(index.range_rids()) == index.num_entries


def test_dense_index_on_char_keys(tmp_path):
    disk = Disk(tmp_path / "node", 2048)
    buf = BufferManager(disk, 16)
    keys = np.array([f"name{i % 700}" for i in range(3000)], dtype="S10")
    index = DenseHashIndex.build(disk, buf, "names", keys, np.arange(3000))
    assert sorted(index.lookup("name5").tolist()) == list(range(5, 3000, 700))
    got = index.range_rids("name10", "name12")
    want = np.flatnonzero((keys >= b"name10") & (keys <= b"name12"))
    assert sorted(got.tolist()) == want.tolist()
    assert len(index.lookup("name5-and-more")) == 0
