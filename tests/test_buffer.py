"""Tests of minidb.buffer.manager: pins, write-back, Volcano's hints, grouped unfix, clusters."""

from __future__ import annotations

import numpy as np
import pytest

from minidb.buffer import BufferManager
from minidb.errors import BufferPoolFullError, MinidbError
from minidb.storage.disk import Disk
from minidb.storage.page import HeapPageFormat
from minidb.storage.schema import Schema, int_column

PAGE = 2048
SCHEMA = Schema([int_column("k", "int64")])


@pytest.fixture
def disk(tmp_path):
    d = Disk(tmp_path / "node0", PAGE)
    yield d
    d.close()


def make_file(disk: Disk, num_pages: int, name: str = "t"):
    """``num_pages`` full heap pages; every record of page p holds the value p."""
    fmt = HeapPageFormat(PAGE, SCHEMA.dtype)
    records = np.zeros(num_pages * fmt.capacity, dtype=SCHEMA.dtype)
    records["k"] = np.arange(len(records)) // fmt.capacity
    f = disk.create(name)
    f.append_pages(fmt.pack(records, 0))
    return f, fmt


def value(fmt: HeapPageFormat, page: np.ndarray) -> int:
    """The value stored in slot 0 of a page."""
    return int(fmt.slot_view(page)["k"][0])


def touch(buf: BufferManager, f, *page_nos: int, hint: str | None = None) -> None:
    for p in page_nos:
        buf.fix(f, p)
        buf.unfix(f, p, hint=hint)


def resident(buf: BufferManager, f, num_pages: int) -> set[int]:
    return {p for p in range(num_pages) if buf.frame_of(f, p) >= 0}


# -- fix / unfix ------------------------------------------------------------------------------
def test_fix_and_unfix_count_pins(disk):
    f, fmt = make_file(disk, 4)
    buf = BufferManager(disk, 3)
    page = buf.fix(f, 2)
    assert value(fmt, page) == 2
    buf.fix(f, 2)
    frame = buf.frame_of(f, 2)
    assert buf.pins[frame] == 2 and buf.pinned_frames == 1
    assert (buf.counters.misses, buf.counters.hits) == (1, 1)
    buf.unfix(f, 2)
    assert buf.pins[frame] == 1
    buf.unfix(f, 2)
    assert buf.pins[frame] == 0 and buf.pinned_frames == 0
    with pytest.raises(MinidbError, match="unfix of page 2 that is not fixed"):
        buf.unfix(f, 2)
    with pytest.raises(MinidbError, match="not fixed"):
        buf.unfix(f, 3)  # never in the pool
    assert buf.pins[frame] == 0


def test_fix_returns_a_writable_view_of_the_frame(disk):
    f, fmt = make_file(disk, 2)
    buf = BufferManager(disk, 2)
    page = buf.fix(f, 1)
    fmt.slot_view(page)["k"][0] = 77
    assert value(fmt, buf.fix(f, 1)) == 77
    buf.unfix(f, 1, n=2, dirty=True)


def test_fix_of_a_missing_page_is_refused(disk):
    f, _ = make_file(disk, 2)
    buf = BufferManager(disk, 2)
    for bad in (2, -1):
        with pytest.raises(MinidbError, match="does not exist"):
            buf.fix(f, bad)


def test_pool_of_pinned_frames_is_full(disk):
    f, _ = make_file(disk, 3)
    buf = BufferManager(disk, 2)
    buf.fix(f, 0)
    buf.fix(f, 1)
    with pytest.raises(BufferPoolFullError, match="all 2 buffer frames are pinned; raise buffer_pages"):
        buf.fix(f, 2)
    assert resident(buf, f, 3) == {0, 1}  # the failed fix changed nothing
    buf.unfix(f, 1)
    buf.fix(f, 2)
    assert resident(buf, f, 3) == {0, 2}


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_pool_needs_a_positive_number_of_frames(disk, bad):
    with pytest.raises(MinidbError, match="buffer_pages must be a positive integer"):
        BufferManager(disk, bad)


# -- write-back -------------------------------------------------------------------------------
def test_dirty_pages_survive_a_two_frame_pool(disk):
    f, fmt = make_file(disk, 12)
    buf = BufferManager(disk, 2)
    for p in range(12):
        page = buf.fix(f, p)
        fmt.slot_view(page)["k"][0] = 1000 + p
        buf.unfix(f, p, dirty=True)
    assert buf.counters.writes == 10  # every eviction wrote its dirty page back
    assert disk.io.writes - 12 == 10  # (12 pages were written when the file was made)
    buf.flush()
    assert buf.counters.writes == 12
    assert not buf.dirty.any()
    buf.flush()  # nothing is dirty any more
    assert buf.counters.writes == 12
    # read back cold, through a fresh pool and straight from the file
    cold = BufferManager(disk, 2)
    for p in range(12):
        assert value(fmt, cold.fix(f, p)) == 1000 + p
        cold.unfix(f, p)
    assert [value(fmt, pg) for pg in f.read_pages(0, 12)] == [1000 + p for p in range(12)]


def test_clean_pages_are_not_written(disk):
    f, _ = make_file(disk, 6)
    buf = BufferManager(disk, 2)
    before = disk.io.snapshot()
    touch(buf, f, *range(6))
    buf.flush()
    assert buf.counters.writes == 0 and disk.io.minus(before).writes == 0


def test_flush_of_one_file_leaves_the_others_dirty(disk):
    f, fmt = make_file(disk, 3, "f")
    g, _ = make_file(disk, 3, "g")
    buf = BufferManager(disk, 6)
    for file in (f, g):
        for p in (2, 0):
            buf.fix(file, p)
            buf.unfix(file, p, dirty=True)
    before = disk.io.snapshot()
    buf.flush(f)
    d = disk.io.minus(before)
    assert d.writes == 2 and d.rand_writes == 2  # page order: 0 then 2 (a gap between them)
    assert buf.dirty[buf.frame_of(g, 0)] and buf.dirty[buf.frame_of(g, 2)]
    assert not buf.dirty[buf.frame_of(f, 0)]


def test_new_page_reaches_the_file_on_flush(disk):
    f, fmt = make_file(disk, 2)
    buf = BufferManager(disk, 2)
    page_no, page = buf.new_page(f)
    assert page_no == 2 and f.num_pages == 3
    page[:] = fmt.pack(np.array([(55,)], dtype=SCHEMA.dtype), 2)[0]
    buf.unfix(f, page_no)
    buf.flush()
    assert value(fmt, f.read_pages(2, 1)[0]) == 55


def test_discard_forgets_pages_without_writing(disk):
    f, fmt = make_file(disk, 3)
    buf = BufferManager(disk, 3)
    page = buf.fix(f, 1)
    with pytest.raises(MinidbError, match="fixed"):
        buf.discard(f)
    fmt.slot_view(page)["k"][0] = 9
    buf.unfix(f, 1, dirty=True)
    buf.discard(f)
    assert buf.frame_of(f, 1) == -1 and buf.counters.writes == 0
    assert value(fmt, f.read_pages(1, 1)[0]) == 1


# -- keep / toss hints (Volcano, Section 4.1 footnote) -------------------------------------------
def test_tossed_page_is_the_next_victim(disk):
    f, _ = make_file(disk, 5)
    buf = BufferManager(disk, 3)  # LRU
    touch(buf, f, 0, 1)
    touch(buf, f, 2, hint="toss")  # the most recently used page, but tossed
    touch(buf, f, 3)
    assert resident(buf, f, 5) == {0, 1, 3}  # LRU alone would have replaced page 0
    touch(buf, f, 4)
    assert resident(buf, f, 5) == {1, 3, 4}  # back to plain LRU


def test_fixing_a_tossed_page_again_clears_the_hint(disk):
    f, _ = make_file(disk, 4)
    buf = BufferManager(disk, 2)
    touch(buf, f, 0, hint="toss")
    touch(buf, f, 1)
    touch(buf, f, 0)  # referenced again, unfixed without a hint
    touch(buf, f, 2)
    assert resident(buf, f, 4) == {0, 2}  # plain LRU replaced page 1


def test_kept_page_survives_while_unhinted_pages_exist(disk):
    f, _ = make_file(disk, 8)
    buf = BufferManager(disk, 3)
    touch(buf, f, 0, hint="keep")
    for p in range(1, 8):
        touch(buf, f, p)
        assert 0 in resident(buf, f, 8)
    # when only kept pages are unpinned, one of them must go
    touch(buf, f, 6, 7, hint="keep")
    touch(buf, f, 1)
    assert len(resident(buf, f, 8) & {0, 6, 7}) == 2


def test_unknown_hint_is_refused(disk):
    f, _ = make_file(disk, 1)
    buf = BufferManager(disk, 1)
    buf.fix(f, 0)
    with pytest.raises(MinidbError, match="unknown buffer hint 'forget'"):
        buf.unfix(f, 0, hint="forget")
    buf.unfix(f, 0)


# -- grouped unfix (Volcano, Section 5.2) ----------------------------------------------------
def test_grouped_unfix_takes_the_pool_lock_twice(disk):
    f, fmt = make_file(disk, 2)
    buf = BufferManager(disk, 2)
    n = fmt.capacity
    buf.fix(f, 0, count=n)  # one fix for every record on the page
    frame = buf.frame_of(f, 0)
    assert buf.pins[frame] == n
    buf.unfix(f, 0, n=n)  # and one unfix for all of them
    assert buf.pins[frame] == 0
    assert buf.counters.lock_acquisitions == 2
    # the simple scheme: one unfix per record
    buf.fix(f, 1, count=n)
    for _ in range(n):
        buf.unfix(f, 1)
    assert buf.counters.lock_acquisitions == 2 + n + 1


def test_grouped_unfix_cannot_release_more_than_fixed(disk):
    f, _ = make_file(disk, 1)
    buf = BufferManager(disk, 1)
    buf.fix(f, 0, count=3)
    with pytest.raises(MinidbError, match="not fixed 4 times"):
        buf.unfix(f, 0, n=4)
    buf.unfix(f, 0, n=2)
    buf.unfix(f, 0, n=1)
    assert buf.pinned_frames == 0


# -- clusters -------------------------------------------------------------------------------
def test_read_run_merges_resident_dirty_pages_with_disk(disk):
    f, fmt = make_file(disk, 10)
    buf = BufferManager(disk, 4)
    touch(buf, f, 2)
    page = buf.fix(f, 3)
    fmt.slot_view(page)["k"][0] = 333  # changed in the pool, not on disk
    buf.unfix(f, 3, dirty=True)
    buf_before, io_before = buf.counters.snapshot(), disk.io.snapshot()

    out = buf.read_run(f, 0, 8)

    assert [value(fmt, p) for p in out] == [0, 1, 2, 333, 4, 5, 6, 7]
    d, io = buf.counters.minus(buf_before), disk.io.minus(io_before)
    assert (d.hits, d.misses, d.reads, d.writes, d.lock_acquisitions) == (2, 6, 6, 0, 1)
    # two transfers, pages 0-1 and 4-7: each starts with a seek
    assert (io.rand_reads, io.seq_reads) == (2, 4)
    assert buf.dirty[buf.frame_of(f, 3)]  # still dirty: read_run does not write
    assert resident(buf, f, 10) == {2, 3}  # keep=False installs nothing
    out[3] = 0
    assert value(fmt, buf.fix(f, 3)) == 333  # the caller got a copy, not the frame
    buf.unfix(f, 3)


def test_read_run_of_a_cold_range_is_one_transfer(disk):
    f, _ = make_file(disk, 10)
    buf = BufferManager(disk, 4)
    f.read_pages(0, 1)  # leave the arm at page 1
    before = disk.io.snapshot()
    buf.read_run(f, 1, 9)
    io = disk.io.minus(before)
    assert (io.rand_reads, io.seq_reads) == (0, 9)
    assert buf.counters.misses == 9 and buf.counters.lock_acquisitions == 1


def test_read_run_with_keep_installs_pages(disk):
    f, fmt = make_file(disk, 6)
    buf = BufferManager(disk, 4)
    out = buf.read_run(f, 1, 3, keep=True)
    assert [value(fmt, p) for p in out] == [1, 2, 3]
    assert resident(buf, f, 6) == {1, 2, 3}
    assert buf.pinned_frames == 0
    assert buf.counters.lock_acquisitions == 1
    buf.read_run(f, 0, 4, keep=True)
    assert (buf.counters.hits, buf.counters.misses) == (3, 4)
    assert buf.counters.lock_acquisitions == 2


@pytest.mark.parametrize("n", [0, -1])
def test_unfix_needs_a_positive_count(disk, n):
    f, _ = make_file(disk, 1)
    buf = BufferManager(disk, 1)
    buf.fix(f, 0)
    with pytest.raises(MinidbError, match="at least 1"):
        buf.unfix(f, 0, n=n)
    assert buf.pins[buf.frame_of(f, 0)] == 1  # unchanged
    with pytest.raises(MinidbError, match="at least 1"):
        buf.fix(f, 0, count=n)
    assert buf.pins[buf.frame_of(f, 0)] == 1


def test_a_policy_must_choose_among_the_offered_frames(disk):
    """The manager, not the policy, enforces pins and keep hints: a stray choice is refused."""
    from minidb.buffer.policy import ReplacementPolicy

    class AlwaysFrameZero(ReplacementPolicy):
        name = "frame0"

        def choose_victim(self, candidates):
            return 0

    f, _ = make_file(disk, 4)
    buf = BufferManager(disk, 2, policy=AlwaysFrameZero)
    touch(buf, f, 0, hint="keep")  # frame 0 holds a kept page
    touch(buf, f, 1)
    with pytest.raises(MinidbError, match="chose frame 0, which is not one of the candidates"):
        touch(buf, f, 2)
    assert resident(buf, f, 4) == {0, 1}
    buf.fix(f, 0)  # now pinned
    with pytest.raises(MinidbError, match="chose frame 0"):
        buf.fix(f, 3)
