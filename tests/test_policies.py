"""Tests of the replacement policies, on reference traces worked out by hand.

Every trace runs through ``BufferManager.fix`` / ``unfix`` on a real ``Disk``, and the test compares
the pool's counters (and the disk's I/O meter) with the hit / miss counts derived in the comments.
Notation in the comments: ``{a,b,c}`` is the set of resident pages, ``@t`` a reference at logical
time t, ``[x,y]`` an LRU-2 history (last reference, second-to-last; 0 = none, "infinitely old").
An empty frame is always used before any policy is asked for a victim.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from minidb import plugins
from minidb.buffer import BufferManager
from minidb.buffer.clock import ClockPolicy
from minidb.buffer.lru import LRUPolicy
from minidb.buffer.lru_k import LRUKPolicy
from minidb.buffer.mru import MRUPolicy
from minidb.buffer.policy import ReplacementPolicy
from minidb.buffer.two_q import TwoQPolicy
from minidb.errors import UnknownPluginError
from minidb.plugins import lookup, register
from minidb.storage.disk import Disk, PagedFile
from minidb.storage.page import HeapPageFormat

PAGE = 2048
BUILTIN = ["lru", "mru", "clock", "lru2", "lruk", "2q"]


@pytest.fixture
def disk(tmp_path):
    d = Disk(tmp_path / "node0", PAGE)
    yield d
    d.close()


def make_file(disk: Disk, num_pages: int):
    fmt = HeapPageFormat(PAGE, np.dtype("<i8"))
    f = disk.create("t")
    f.append_pages(fmt.pack(np.arange(num_pages * fmt.capacity), 0))
    return f


class Run(NamedTuple):
    buf: BufferManager
    file: PagedFile


def run_trace(disk: Disk, policy, frames: int, trace: list[int]) -> Run:
    """Fix and unfix each page of ``trace`` in turn; check the counters agree with each other."""
    f = make_file(disk, max(trace) + 1)
    buf = BufferManager(disk, frames, policy)
    before = disk.io.snapshot()
    for p in trace:
        buf.fix(f, p)
        buf.unfix(f, p)
    c, io = buf.counters, disk.io.minus(before)
    assert c.hits + c.misses == len(trace)
    assert c.reads == c.misses == io.reads
    assert c.writes == io.writes == 0
    assert c.lock_acquisitions == 2 * len(trace)
    return Run(buf, f)


def hits_misses(run: Run) -> tuple[int, int]:
    return run.buf.counters.hits, run.buf.counters.misses


def resident(run: Run) -> set[int]:
    return {p for p in range(run.file.num_pages) if run.buf.frame_of(run.file, p) >= 0}


# -- sequential flooding: a loop over N + 1 pages with N frames ----------------------------------
# 3 frames, pages 0..3 read three times over.
# LRU: the page about to be needed is always the least recently used one, so it has just been
#   replaced: 12 misses, 0 hits. FIFO, Clock (all bits set, so the hand behaves like FIFO), LRU-2
#   (no page is ever referenced twice while resident, so ties fall back to LRU) and 2Q (everything
#   stays in A1, a FIFO) do the same.
# MRU:  pass 1: 0 1 2 miss, 3 miss replaces 2 (used @3)         -> {0,1,3}   0 hits 4 misses
#       pass 2: 0 hit @5, 1 hit @6, 2 miss replaces 1 (@6),
#               3 hit @8                                       -> {0,2,3}   3 hits 1 miss
#       pass 3: 0 hit @9, 1 miss replaces 0 (@9), 2 hit, 3 hit -> {1,2,3}   3 hits 1 miss
#       total 6 hits, 6 misses.
FLOOD = [0, 1, 2, 3] * 3
FLOOD_EXPECTED = {"lru": (0, 12), "mru": (6, 6), "clock": (0, 12), "lru2": (0, 12), "lruk": (0, 12),
                  "2q": (0, 12)}


@pytest.mark.parametrize("policy", BUILTIN)
def test_sequential_flooding(disk, policy):
    assert hits_misses(run_trace(disk, policy, 3, FLOOD)) == FLOOD_EXPECTED[policy]


def test_mru_beats_lru_on_a_loop_one_page_larger_than_the_pool(disk, tmp_path):
    n = 8
    loop = list(range(n + 1)) * 5
    lru = run_trace(disk, "lru", n, loop)
    mru = run_trace(Disk(tmp_path / "node1", PAGE), "mru", n, loop)
    assert hits_misses(lru) == (0, 45)
    # after the first pass MRU misses one page per pass: 4 passes x 8 hits
    assert hits_misses(mru) == (32, 13)


# -- a scan through a pool holding two hot pages -----------------------------------------------
# 3 frames. Pages 0 and 1 are referenced twice each (hot), then a scan reads 2..7 once, then the hot
# pages are wanted again: 0 1 0 1 2 3 4 5 6 7 0 1.
# LRU:   0 1 miss, 0 1 hit, 2 miss (empty frame) -> {0,1,2}; 3 replaces 0 (@3), 4 replaces 1,
#        5..7 replace 2..4 -> {5,6,7}; 0 and 1 miss.                  2 hits, 10 misses.
# LRU-2: histories 0:[3,1] 1:[4,2] 2:[5,0]; 3 replaces 2 (infinitely old), 4 replaces 3, ... 7
#        replaces 6 -> {0,1,7}; 0 and 1 hit.                          4 hits, 8 misses.
# 2Q:    0 and 1 move to Am on their second reference; the scan pages enter A1, which then holds
#        1 of 3 frames (> 3/4), so each scan page replaces the previous one -> {0,1,7}.  4 hits.
# MRU:   each scan page replaces the one before it (the most recent) -> {0,1,7}.         4 hits.
# Clock: loading 3 finds all bits set: the hand clears them all and takes frame 0 (page 0);
#        4 takes frame 1 (page 1), and the hot pages are gone.           2 hits, 10 misses.
SCAN = [0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1]
SCAN_EXPECTED = {"lru": (2, 10), "mru": (4, 8), "clock": (2, 10), "lru2": (4, 8), "lruk": (4, 8),
                 "2q": (4, 8)}


@pytest.mark.parametrize("policy", BUILTIN)
def test_scan_through_hot_pages(disk, policy):
    run = run_trace(disk, policy, 3, SCAN)
    assert hits_misses(run) == SCAN_EXPECTED[policy]
    if SCAN_EXPECTED[policy] == (4, 8):
        assert resident(run) == {0, 1, 7}


def test_lru2_resists_a_scan_that_flushes_lru(disk, tmp_path):
    hot = [0, 1, 2] * 3
    trace = hot + list(range(10, 30)) + [0, 1, 2]  # 4 frames: the scan is 5 times the pool
    lru = run_trace(disk, "lru", 4, trace)
    lru2 = run_trace(Disk(tmp_path / "node1", PAGE), "lru2", 4, trace)
    # both: 3 misses then 6 hits on the hot pages, 20 scan misses. LRU then misses the 3 hot
    # pages; LRU-2 hits them: every scan page is the only one without a second reference, so
    # each replaces the scan page before it.
    assert hits_misses(lru) == (6, 26)
    assert hits_misses(lru2) == (9, 23)
    assert resident(lru2) == {0, 1, 2, 29}


# -- Clock, step by step ------------------------------------------------------------------------
# 3 frames f0 f1 f2; the state is page(bit) per frame and the hand position.
#   0 1 2  miss   f0=0(1) f1=1(1) f2=2(1)                 hand f0
#   3      miss   hand clears f0, f1, f2, comes back to f0 (bit 0): replaces page 0
#                 f0=3(1) f1=1(0) f2=2(0)                 hand f1
#   1      hit    f1=1(1)
#   4      miss   f1 has its bit set: cleared (second chance); f2 bit 0: replaces page 2
#                 f0=3(1) f1=1(0) f2=4(1)                 hand f0
#   1      hit    page 1 survived thanks to its second chance.      2 hits, 5 misses
# FIFO would have replaced page 1 for page 4 (1 hit); LRU also gets 2 hits here.
CLOCK_TRACE = [0, 1, 2, 3, 1, 4, 1]
#   ... but one bit only approximates LRU. Insert a 5 before the last 1 (0 1 2 3 1 4 5 1):
#   5      miss   hand at f0: page 3 bit set, cleared; f1: page 1 bit 0 (spent on 4): replaced
#                 f0=3(0) f1=5(1) f2=4(1)                 hand f2
#   1      miss                                                     1 hit, 7 misses
#   LRU keeps page 1 (used @5, after 3 @4 and 2 @3) and replaces 3 for 5: 2 hits, 6 misses.
CLOCK_LOSES = [0, 1, 2, 3, 1, 4, 5, 1]


def test_clock_trace_by_hand(disk, tmp_path):
    run = run_trace(disk, "clock", 3, CLOCK_TRACE)
    assert hits_misses(run) == (2, 5)
    assert resident(run) == {1, 3, 4}
    assert run.buf.policy.hand == 0
    assert list(run.buf.policy.ref) == [True, True, True]  # 3 (loaded), 1 (hit again), 4 (loaded)
    assert hits_misses(run_trace(Disk(tmp_path / "n1", PAGE), "lru", 3, CLOCK_TRACE)) == (2, 5)


def test_clock_can_lose_to_lru(disk, tmp_path):
    assert hits_misses(run_trace(disk, "clock", 3, CLOCK_LOSES)) == (1, 7)
    assert hits_misses(run_trace(Disk(tmp_path / "n1", PAGE), "lru", 3, CLOCK_LOSES)) == (2, 6)


def test_clock_skips_frames_not_offered_and_keeps_their_bit():
    clock = ClockPolicy(4)
    for frame in range(4):
        clock.page_loaded(frame)
    # only frames 1 and 3 may go: the hand passes 0 and 2 without touching them
    assert clock.choose_victim(np.array([1, 3])) == 1
    assert list(clock.ref) == [True, False, True, False]
    assert clock.hand == 2
    clock.page_evicted(1)
    assert clock.choose_victim(np.array([0, 2, 3])) == 3  # 2 gets its second chance first
    assert list(clock.ref) == [True, False, False, False]


def test_clock_pinned_page_keeps_its_second_chance(disk):
    # 3 frames. 0 1 2 loaded (bits 1 1 1), page 0 stays pinned while 3 comes in: the hand skips f0,
    # clears f1 and f2, skips f0 again, takes f1 (page 1).  f0=0(1) f1=3(1) f2=2(0), hand f2.
    # Page 2 is hit (bit 1), page 0 unpinned. Loading 4: f2 cleared, f0 cleared (the bit it kept
    # while pinned), f1 cleared, f2 taken: page 2 goes and page 0 stays.
    f = make_file(disk, 5)
    buf = BufferManager(disk, 3, "clock")
    for p in (0, 1, 2):
        buf.fix(f, p)
        buf.unfix(f, p)
    buf.fix(f, 0)
    buf.fix(f, 3)
    buf.unfix(f, 3)
    buf.fix(f, 2)
    buf.unfix(f, 2)
    buf.unfix(f, 0)
    buf.fix(f, 4)
    buf.unfix(f, 4)
    assert {p for p in range(5) if buf.frame_of(f, p) >= 0} == {0, 3, 4}
    assert (buf.counters.hits, buf.counters.misses) == (2, 5)


# -- LRU-K ----------------------------------------------------------------------------------
# 3 frames: 0 0 0 1 1 2 3 1.  Histories before 3 arrives (@7):
#   LRU-2: 0:[3,2] 1:[5,4] 2:[6,0]  -> 2 is infinitely old: replaced, so the last 1 hits.
#   LRU-3: 0:[3,2,1] 1:[5,4,0] 2:[6,0,0] -> 1 and 2 both lack a third reference: LRU among them
#          replaces 1 (@5), so the last 1 misses.
LRUK_TRACE = [0, 0, 0, 1, 1, 2, 3, 1]


class LRU3(LRUKPolicy):
    name = "lru3"
    K = 3


def test_lru_k_with_k_as_a_class_attribute(disk, tmp_path):
    assert LRUKPolicy.K == 2 and lookup("buffer_policy", "lruk") is lookup("buffer_policy", "lru2")
    assert hits_misses(run_trace(disk, "lru2", 3, LRUK_TRACE)) == (4, 4)
    run = run_trace(Disk(tmp_path / "n1", PAGE), LRU3, 3, LRUK_TRACE)
    assert run.buf.policy.history.shape == (3, 3)
    assert hits_misses(run) == (3, 5)


def test_lru_k_history_is_newest_first():
    p = LRUKPolicy(2)
    p.page_loaded(0)  # @1
    p.page_loaded(1)  # @2
    p.page_hit(0)  # @3
    p.page_hit(0)  # @4
    assert p.history.tolist() == [[4, 3], [2, 0]]
    assert p.choose_victim(np.array([0, 1])) == 1  # no second reference
    p.page_hit(1)  # @5: 1 is [5,2], 0 is [4,3]: 1's second-to-last reference is older
    assert p.choose_victim(np.array([0, 1])) == 1
    assert p.choose_victim(np.array([0])) == 0
    p.page_evicted(1)
    assert p.history[1].tolist() == [0, 0]


# -- 2Q -------------------------------------------------------------------------------------
# 4 frames, A1 may hold one frame (a quarter) before it must give one up: 0 0 1 1 2 2 3 4 0 3.
#   0 0, 1 1, 2 2: each page is loaded into A1 and promoted to Am by its second reference.
#   3      miss, empty frame: A1 = [3], Am = 0 1 2 (LRU order)
#   4      miss: A1 holds 1 frame, not more than a quarter: Am's LRU page 0 goes.  A1 = [3, 4]
#   0      miss: A1 holds 2 frames: its oldest, 3, goes.                          A1 = [4, 0]
#   3      miss: 4 goes.                                                3 hits, 7 misses
# LRU replaces 0, then 1, and hits on the last 3: 4 hits, 6 misses.
TWOQ_TRACE = [0, 0, 1, 1, 2, 2, 3, 4, 0, 3]


def test_two_q_trace_by_hand(disk, tmp_path):
    run = run_trace(disk, "2q", 4, TWOQ_TRACE)
    assert hits_misses(run) == (3, 7)
    assert resident(run) == {0, 1, 2, 3}
    assert hits_misses(run_trace(Disk(tmp_path / "n1", PAGE), "lru", 4, TWOQ_TRACE)) == (4, 6)


def test_two_q_takes_from_a1_when_am_offers_nothing():
    q = TwoQPolicy(8)  # A1 may hold 2 frames
    for frame in range(4):
        q.page_loaded(frame)
    for frame in (0, 1, 2):
        q.page_hit(frame)  # Am: 0 1 2, A1: 3
    assert q.choose_victim(np.array([0, 1, 2, 3])) == 0  # A1 is small: LRU of Am
    assert q.choose_victim(np.array([3])) == 3  # Am pinned: A1 after all
    q.page_loaded(4)
    q.page_loaded(5)  # A1: 3 4 5, more than 2
    assert q.choose_victim(np.array([0, 1, 2, 4, 5])) == 4  # FIFO head of A1 among candidates
    q.page_hit(3)  # 3 moves to Am; A1: 4 5
    assert q.choose_victim(np.array([0, 3, 4, 5])) == 0


# -- all policies, random traces with pins and hints --------------------------------------------
@pytest.mark.parametrize("policy", BUILTIN)
def test_random_workload_keeps_counters_consistent(disk, policy):
    rng = np.random.default_rng(7)
    f = make_file(disk, 40)
    buf = BufferManager(disk, 6, policy)
    pinned: list[int] = []
    requests = 0
    for _ in range(600):
        p = int(rng.zipf(1.3) % 40)
        if len(pinned) < 3 and rng.random() < 0.1:
            buf.fix(f, p)  # hold it for a while; the policy must never pick its frame
            pinned.append(p)
        else:
            buf.fix(f, p)
            buf.unfix(f, p, dirty=bool(rng.random() < 0.2),
                      hint=[None, None, None, "keep", "toss"][rng.integers(5)])
        requests += 1
        if pinned and rng.random() < 0.1:
            buf.unfix(f, pinned.pop(0))
        assert buf.pins.sum() == len(pinned)
    c = buf.counters
    assert c.hits + c.misses == requests
    assert c.reads == c.misses == disk.io.reads
    assert c.writes == disk.io.writes - 40  # the file's own 40 pages were written at creation
    assert 0 < c.hits < requests


# -- the registry ---------------------------------------------------------------------------
def test_builtin_names_resolve_to_their_classes():
    assert lookup("buffer_policy", "lru") is LRUPolicy
    assert lookup("buffer_policy", "MRU") is MRUPolicy
    assert lookup("buffer_policy", "clock") is ClockPolicy
    assert lookup("buffer_policy", "lru2") is LRUKPolicy
    assert lookup("buffer_policy", "2q") is TwoQPolicy
    assert set(BUILTIN) <= set(plugins.names("buffer_policy"))


def test_unknown_policy_lists_the_known_ones(disk):
    with pytest.raises(UnknownPluginError) as err:
        BufferManager(disk, 4, "lfu")
    message = str(err.value)
    assert "'lfu'" in message
    for name in BUILTIN:
        assert name in message


@pytest.fixture
def restore_registry():
    saved = dict(plugins._REGISTRY.get("buffer_policy", {}))
    yield
    plugins._REGISTRY["buffer_policy"] = saved


def test_user_policy_is_selectable_by_name(disk, restore_registry):
    @register("buffer_policy", "fifo")
    class FifoPolicy(ReplacementPolicy):
        """First in, first out: replace the page that was loaded longest ago."""

        name = "fifo"

        def __init__(self, num_frames):
            super().__init__(num_frames)
            self.loaded_at = np.zeros(num_frames, dtype=np.int64)
            self.clock = 0

        def page_loaded(self, frame):
            self.clock += 1
            self.loaded_at[frame] = self.clock

        def choose_victim(self, candidates):
            return int(candidates[np.argmin(self.loaded_at[candidates])])

    assert "fifo" in plugins.names("buffer_policy")
    run = run_trace(disk, "fifo", 3, CLOCK_TRACE)
    assert isinstance(run.buf.policy, FifoPolicy)
    # 0 1 2 miss; 3 replaces 0; 1 hit; 4 replaces 1 (loaded longest ago); 1 replaces 2
    assert hits_misses(run) == (1, 6)
    assert resident(run) == {1, 3, 4}
