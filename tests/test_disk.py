"""Tests of minidb.storage.disk: the sequential / random I/O meter and damaged page files."""

from __future__ import annotations

import numpy as np
import pytest

from minidb.buffer import BufferManager
from minidb.errors import CorruptPageError, MinidbError, PageSizeError
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.page import HeapPageFormat
from minidb.storage.schema import Schema, int_column

PAGE = 2048
SCHEMA = Schema([int_column("k", "int64"), int_column("v")])


def make_file(disk: Disk, name: str, num_pages: int):
    """A page file of ``num_pages`` full heap pages whose record k is its position in the file."""
    fmt = HeapPageFormat(disk.page_size, SCHEMA.dtype)
    records = np.zeros(num_pages * fmt.capacity, dtype=SCHEMA.dtype)
    records["k"] = np.arange(len(records))
    f = disk.create(name)
    f.append_pages(fmt.pack(records, 0))
    return f, fmt


def flip_byte(path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture
def disk(tmp_path):
    d = Disk(tmp_path / "node0", PAGE)
    yield d
    d.close()


# -- the meter ------------------------------------------------------------------------------
def test_run_from_the_head_is_all_sequential(disk):
    f, _ = make_file(disk, "r", 20)
    assert disk.io.as_dict() == {"seq_reads": 0, "rand_reads": 0, "seq_writes": 19, "rand_writes": 1}
    before = disk.io.snapshot()
    f.read_pages(0, 5)  # the arm is past page 19: moving to page 0 is one seek
    assert disk.io.minus(before).as_dict() == {"seq_reads": 4, "rand_reads": 1, "seq_writes": 0, "rand_writes": 0}
    before = disk.io.snapshot()
    f.read_pages(5, 7)  # continues right where the head is: n sequential pages
    assert disk.io.minus(before).seq_reads == 7
    assert disk.io.minus(before).rand_reads == 0


def test_a_jump_costs_one_random_access(disk):
    f, _ = make_file(disk, "r", 20)
    f.read_pages(0, 4)
    before = disk.io.snapshot()
    f.read_pages(10, 6)  # skips pages 4..9
    d = disk.io.minus(before)
    assert (d.rand_reads, d.seq_reads) == (1, 5)
    before = disk.io.snapshot()
    f.read_pages(3, 1)  # backwards
    f.read_pages(3, 1)  # the same page again is not "the next one"
    d = disk.io.minus(before)
    assert (d.rand_reads, d.seq_reads) == (2, 0)


def test_interleaving_two_files_makes_random_accesses(disk):
    f, _ = make_file(disk, "f", 4)
    g, _ = make_file(disk, "g", 4)
    before = disk.io.snapshot()
    for p in range(4):
        f.read_pages(p, 1)
        g.read_pages(p, 1)
    d = disk.io.minus(before)
    assert (d.rand_reads, d.seq_reads) == (8, 0)
    # the same pages file by file: one seek per file
    f.read_pages(0, 1)
    before = disk.io.snapshot()
    for p in range(1, 4):
        f.read_pages(p, 1)
    for p in range(4):
        g.read_pages(p, 1)
    d = disk.io.minus(before)
    assert (d.rand_reads, d.seq_reads) == (1, 6)


def test_scan_one_file_while_writing_another(disk):
    f, fmt = make_file(disk, "in", 3)
    out = disk.create("out")
    before = disk.io.snapshot()
    for p in range(3):
        pages = f.read_pages(p, 1)
        out.append_pages(fmt.pack(fmt.unpack(pages, p)[0], p))
    d = disk.io.minus(before)
    assert d.as_dict() == {"seq_reads": 0, "rand_reads": 3, "seq_writes": 0, "rand_writes": 3}


def test_zero_page_transfers_are_not_counted(disk):
    f, _ = make_file(disk, "r", 2)
    before = disk.io.snapshot()
    assert f.read_pages(2, 0).shape == (0, PAGE)
    f.write_pages(2, np.zeros((0, PAGE), dtype=np.uint8))
    assert disk.io.minus(before).as_dict() == dict.fromkeys(before.as_dict(), 0)


def test_page_files_are_real_files(disk):
    f, _ = make_file(disk, "r", 3)
    assert f.path.exists()
    assert f.path.stat().st_size == 3 * PAGE
    disk.drop(f)
    assert not f.path.exists()


def test_reads_and_writes_past_the_end_are_refused(disk):
    f, _ = make_file(disk, "r", 3)
    with pytest.raises(MinidbError, match="past its end"):
        f.read_pages(2, 2)
    with pytest.raises(MinidbError, match="past its end"):
        f.read_pages(-1, 1)
    with pytest.raises(MinidbError, match="cannot write page 5"):
        f.write_pages(5, np.zeros((1, PAGE), dtype=np.uint8))


def test_bad_page_size_for_a_disk(tmp_path):
    with pytest.raises(PageSizeError):
        Disk(tmp_path / "d", 1024)


def test_temporary_data_directory_is_removed_on_close():
    d = Disk(None, PAGE)
    make_file(d, "x", 1)
    assert d.path.exists()
    d.close()
    assert not d.path.exists()


# -- damage ---------------------------------------------------------------------------------
def test_corrupted_byte_names_file_and_page(disk):
    f, _ = make_file(disk, "emp", 8)
    flip_byte(f.path, 5 * PAGE + 300)
    with pytest.raises(CorruptPageError, match=r"page 5 of emp .*checksum"):
        f.read_pages(0, 8)
    with pytest.raises(CorruptPageError, match=r"page 5 of emp"):
        f.read_pages(5, 1)
    f.read_pages(0, 5)  # the pages before it are fine
    f.read_pages(6, 2)


def test_corrupted_checksum_field_is_caught(disk):
    f, _ = make_file(disk, "emp", 3)
    flip_byte(f.path, 1 * PAGE + 2)  # inside the stored checksum itself
    with pytest.raises(CorruptPageError, match=r"page 1 of emp"):
        f.read_pages(1, 1)


def test_corrupted_byte_reaches_a_heap_file_scan(disk):
    buf = BufferManager(disk, 4)
    heap = HeapFile(disk.create("dept"), SCHEMA, buf)
    records = np.zeros(3000, dtype=SCHEMA.dtype)
    records["k"] = np.arange(3000)
    heap.append(records)
    assert heap.num_pages > 12
    flip_byte(heap.file.path, 12 * PAGE + 1000)
    with pytest.raises(CorruptPageError, match=r"page 12 of dept"):
        heap.read_all()
    with pytest.raises(CorruptPageError, match=r"page 12 of dept"):
        list(heap.scan(first_page=12, last_page=12))
    # a fetch of a record on that page goes through fix and fails the same way
    with pytest.raises(CorruptPageError, match=r"page 12 of dept"):
        heap.fetch(np.array([12 * heap.capacity]))
    assert buf.frame_of(heap.file, 12) == -1  # the damaged page was not installed
    assert len(heap.fetch(np.array([0, 11 * heap.capacity]))) == 2


def test_page_written_at_the_wrong_offset_is_caught(disk):
    f, fmt = make_file(disk, "emp", 6)
    # a page sealed as page 0 written over page 2: its checksum is valid, its number is not
    stray = fmt.pack(np.zeros(3, dtype=SCHEMA.dtype), 0)
    f.write_pages(2, stray)
    with pytest.raises(CorruptPageError, match=r"page 2 of emp holds page 0 \(misplaced write\)"):
        f.read_pages(0, 6)


def test_page_copied_to_the_wrong_place_on_disk_is_caught(disk):
    f, _ = make_file(disk, "emp", 6)
    data = bytearray(f.path.read_bytes())
    data[4 * PAGE : 5 * PAGE] = data[1 * PAGE : 2 * PAGE]
    f.path.write_bytes(bytes(data))
    with pytest.raises(CorruptPageError, match=r"page 4 of emp holds page 1"):
        f.read_pages(4, 2)


def test_truncated_file_is_reported(disk):
    f, _ = make_file(disk, "emp", 4)
    f.path.write_bytes(f.path.read_bytes()[: 2 * PAGE])
    with pytest.raises(MinidbError, match="shorter than its catalog"):
        f.read_pages(0, 4)


def test_short_writes_and_reads_are_completed(disk, monkeypatch):
    """The kernel moves at most about 2 GiB per call; a transfer must loop until it is done
    (simulated here with calls that move at most 1000 bytes)."""
    import os

    real_pwrite, real_preadv = os.pwrite, os.preadv
    monkeypatch.setattr(os, "pwrite", lambda fd, data, off: real_pwrite(fd, data[:1000], off))
    monkeypatch.setattr(os, "preadv", lambda fd, bufs, off: real_preadv(fd, [bufs[0][:1000]], off))
    f, _ = make_file(disk, "short", 5)
    assert f.path.stat().st_size == 5 * disk.page_size
    pages = f.read_pages(0, 5)  # checksums verify, so every byte arrived
    assert pages.shape == (5, disk.page_size)


def _open_descriptors() -> set[str]:
    from pathlib import Path

    fds = Path("/proc/self/fd")
    if not fds.exists():
        pytest.skip("needs /proc/self/fd")
    return {str(p.resolve()) for p in fds.iterdir() if p.exists()}


def test_files_stay_open_and_close_on_drop_and_on_close(tmp_path):
    """A page file is opened once and kept open for its reads and writes; dropping it, or
    closing the disk, closes it (and a read after close opens it again)."""
    disk = Disk(tmp_path / "d", PAGE)
    before = _open_descriptors()
    f, _ = make_file(disk, "kept", 6)
    g, _ = make_file(disk, "dropped", 3)
    for first in range(6):
        f.read_pages(first, 1)
    g.read_pages(0, 3)
    opened = _open_descriptors() - before
    assert opened == {str(f.path.resolve()), str(g.path.resolve())}  # one descriptor each
    disk.drop(g)
    assert _open_descriptors() - before == {str(f.path.resolve())}
    disk.close()
    assert _open_descriptors() - before == set()
    assert f.read_pages(2, 2).shape == (2, PAGE)  # opened again on demand
    f.close()
    assert _open_descriptors() - before == set()
