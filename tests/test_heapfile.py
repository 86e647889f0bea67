"""Tests of minidb.storage.heapfile: append, scan, fetch / update / delete, and their counters."""

from __future__ import annotations

import numpy as np
import pytest

from minidb.buffer import BufferManager
from minidb.storage.disk import Disk
from minidb.storage.heapfile import CLUSTER_BYTES, HeapFile
from minidb.storage.schema import Schema, char_column, int_column

SCHEMA = Schema([int_column("k", "int64"), int_column("v"), char_column("s", 20)])  # 32 bytes
# 208 bytes, like a Wisconsin tuple: 19 records on a 4 KB page
WIDE = Schema([int_column("k", "int64")] + [char_column(f"s{i}", 50) for i in range(4)])


def records(schema: Schema, start: int, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=schema.dtype)
    out["k"] = np.arange(start, start + n)
    if "v" in schema.dtype.names:
        out["v"] = -out["k"]
    return out


def make_heap(tmp_path, page_size=4096, frames=8, schema=SCHEMA, name="t"):
    disk = Disk(tmp_path / f"node-{page_size}", page_size)
    buf = BufferManager(disk, frames)
    return disk, buf, HeapFile(disk.create(name), schema, buf)


def scanned(heap: HeapFile, **kw):
    parts = list(heap.scan(**kw))
    if not parts:
        return np.empty(0, dtype=heap.schema.dtype), np.empty(0, dtype=np.int64)
    return np.concatenate([r for r, _ in parts]), np.concatenate([i for _, i in parts])


def assert_io_matches_buffer(disk: Disk, buf: BufferManager) -> None:
    """Every page moved between disk and memory went through (and was counted by) the pool."""
    assert disk.io.reads == buf.counters.reads
    assert disk.io.writes == buf.counters.writes


# -- append and scan -------------------------------------------------------------------------
@pytest.mark.parametrize("schema", [SCHEMA, WIDE])
def test_append_in_pieces_then_scan_returns_each_record_once_in_order(tmp_path, schema):
    disk, buf, heap = make_heap(tmp_path, schema=schema)
    pieces = [5, 30, 1, 0, 57, 19, 400]
    start = 0
    for n in pieces:
        rids = heap.append(records(schema, start, n))
        np.testing.assert_array_equal(rids, np.arange(start, start + n))  # dense: no gaps
        start += n
    total = sum(pieces)
    assert heap.num_records == total
    assert heap.num_pages == -(-total // heap.capacity)
    out, rids = scanned(heap)
    np.testing.assert_array_equal(out["k"], np.arange(total))
    np.testing.assert_array_equal(rids, np.arange(total))
    assert out.tobytes() == records(schema, 0, total).tobytes()
    assert_io_matches_buffer(disk, buf)
    # a cold pool sees the same file: everything reached the disk
    cold = HeapFile(heap.file, schema, BufferManager(disk, 2))
    np.testing.assert_array_equal(cold.read_all()["k"], np.arange(total))


def test_empty_file_scans_to_nothing(tmp_path):
    _, buf, heap = make_heap(tmp_path)
    assert heap.read_all().shape == (0,)
    assert heap.append(records(SCHEMA, 0, 0)).shape == (0,)
    assert heap.num_pages == 0
    assert buf.counters.lock_acquisitions == 0


def test_scan_a_page_range(tmp_path):
    _, _, heap = make_heap(tmp_path, schema=WIDE)
    heap.append(records(WIDE, 0, 19 * 10))
    out, rids = scanned(heap, first_page=3, last_page=5)
    np.testing.assert_array_equal(rids, np.arange(3 * 19, 6 * 19))
    np.testing.assert_array_equal(out["k"], rids)
    _, rids = scanned(heap, first_page=8, last_page=100)  # clipped to the last page
    np.testing.assert_array_equal(rids, np.arange(8 * 19, 10 * 19))


# -- record ids ------------------------------------------------------------------------------
def test_fetch_update_delete_by_record_id(tmp_path):
    disk, buf, heap = make_heap(tmp_path, schema=WIDE, frames=3)
    heap.append(records(WIDE, 0, 200))  # 11 pages of 19

    got = heap.fetch(np.array([150, 3, 150, 19, 0]))  # any order, repeats allowed
    np.testing.assert_array_equal(got["k"], [150, 3, 150, 19, 0])

    new = records(WIDE, 1000, 3)
    heap.update(np.array([199, 4, 57]), new)
    np.testing.assert_array_equal(heap.fetch(np.array([4, 57, 199]))["k"], [1001, 1002, 1000])

    assert heap.delete(np.array([57, 3, 20, 21])) == 4
    assert heap.num_records == 196
    assert heap.delete(np.array([3, 57])) == 0  # already gone
    out, rids = scanned(heap)
    assert len(out) == 196
    assert not {3, 20, 21, 57} & set(rids.tolist())
    expect = np.arange(200)
    expect[[199, 4]] = [1000, 1001]
    expect = np.delete(expect, [3, 20, 21, 57])
    np.testing.assert_array_equal(out["k"], expect)
    # the surviving records kept their ids: id r still holds record r (or its update)
    updated = {199: 1000, 4: 1001}
    np.testing.assert_array_equal(out["k"], [updated.get(r, r) for r in rids.tolist()])
    assert_io_matches_buffer(disk, buf)
    buf.flush()
    assert_io_matches_buffer(disk, buf)
    cold = HeapFile(heap.file, WIDE, BufferManager(disk, 2))
    np.testing.assert_array_equal(cold.read_all()["k"], expect)


def test_delete_counts_each_record_once(tmp_path):
    _, buf, heap = make_heap(tmp_path, schema=WIDE, frames=4)
    heap.append(records(WIDE, 0, 100))
    before = buf.counters.snapshot()
    # unsorted, with a repeat: three distinct records on two pages
    assert heap.delete(np.array([40, 2, 41, 2])) == 3
    assert heap.num_records == 97
    d = buf.counters.minus(before)
    assert d.hits + d.misses == 2  # each page visited once, in page order
    assert heap.delete(np.array([2, 2, 40])) == 0
    assert heap.delete(np.array([7, 7])) == 1  # a repeated id next to itself
    assert heap.num_records == 96
    assert len(heap.read_all()) == 96


def test_append_after_delete_keeps_order_and_ids(tmp_path):
    _, _, heap = make_heap(tmp_path, schema=WIDE)
    heap.append(records(WIDE, 0, 25))  # page 1 holds 6 records
    heap.delete(np.array([20]))  # a hole below the last used slot of page 1
    rids = heap.append(records(WIDE, 25, 3))
    np.testing.assert_array_equal(rids, [25, 26, 27])  # after the last used slot, not in the hole
    _, got = scanned(heap)
    assert list(got) == sorted(got)


# -- counters -----------------------------------------------------------------------------------
def test_counters_add_up(tmp_path):
    disk, buf, heap = make_heap(tmp_path, schema=WIDE, frames=4)
    heap.append(records(WIDE, 0, 19 * 20))  # 20 pages
    requested = 0
    before = buf.counters.snapshot()

    heap.read_all()  # 20 pages, bigger than the pool: not kept
    requested += 20
    heap.fetch(np.array([0, 1, 19 * 5, 19 * 5 + 3, 19 * 19]))  # pages 0, 5, 19
    requested += 3
    heap.update(np.array([19 * 5]), records(WIDE, 7, 1))  # page 5 again, a hit
    requested += 1
    list(heap.scan(first_page=4, last_page=6))  # page 5 is resident and dirty
    requested += 3

    d = buf.counters.minus(before)
    assert d.hits + d.misses == requested
    assert d.hits == 2  # the update's fix of page 5 and the scan's copy of it
    assert d.reads == d.misses
    assert_io_matches_buffer(disk, buf)


@pytest.mark.parametrize("page_size", [2048, 2560, 4096, 8192, 16384, 32768])
def test_full_scan_reads_every_page_exactly_once(tmp_path, page_size):
    disk, buf, heap = make_heap(tmp_path, page_size=page_size, frames=4)
    heap.append(records(SCHEMA, 0, 20_000))
    before_io, before = disk.io.snapshot(), buf.counters.snapshot()
    out, _ = scanned(heap)
    assert len(out) == 20_000
    io, d = disk.io.minus(before_io), buf.counters.minus(before)
    assert io.reads == d.reads == d.misses == heap.num_pages
    assert (io.rand_reads, io.seq_reads) == (1, heap.num_pages - 1)  # one seek, then sequential
    assert d.lock_acquisitions == -(-heap.num_pages // heap.cluster_pages())


def test_scan_calls_grow_with_bytes_not_pages(tmp_path):
    """Volcano's clusters: a 4 KB-page file makes as many transfers per byte as a 32 KB one."""
    calls = {}
    for page_size in (4096, 32768):
        disk, buf, heap = make_heap(tmp_path, page_size=page_size, frames=4)
        num_pages = 2 * 1024 * 1024 // page_size  # 2 MB either way: 512 or 64 pages
        heap.append(records(SCHEMA, 0, num_pages * heap.capacity))
        assert heap.num_pages == num_pages
        before = buf.counters.snapshot()
        scanned(heap)
        d = buf.counters.minus(before)
        assert d.reads == num_pages
        calls[page_size] = d.lock_acquisitions
    assert calls[4096] == calls[32768] == 2 * 1024 * 1024 // CLUSTER_BYTES


def test_small_file_scan_is_kept_in_the_pool(tmp_path):
    disk, buf, heap = make_heap(tmp_path, schema=WIDE, frames=8)
    heap.append(records(WIDE, 0, 19 * 4))  # 4 pages <= 8 // 2: kept by default
    buf_before, io_before = buf.counters.snapshot(), disk.io.snapshot()
    heap.read_all()
    heap.read_all()
    d = buf.counters.minus(buf_before)
    assert (d.misses, d.hits) == (4, 4)
    assert disk.io.minus(io_before).reads == 4
    # a scan told not to keep its pages does not install them
    _, buf2, heap2 = make_heap(tmp_path / "b", schema=WIDE, frames=8)
    heap2.append(records(WIDE, 0, 19 * 4))
    list(heap2.scan(keep=False))
    list(heap2.scan(keep=False))
    assert (buf2.counters.hits, buf2.counters.misses) == (0, 8)
    assert buf2.frame_of(heap2.file, 0) == -1
