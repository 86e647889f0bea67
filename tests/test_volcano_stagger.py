"""Volcano §6.1, staggered buffer flushes: the sort's switch (minidb.volcano.psort), the flush
calls it counts (minidb.volcano.pool) and the flush phase of the model
(minidb.cost.volcano_model.flush_phase)."""

from __future__ import annotations

import pytest

from minidb.cost.profiles import get_profile
from minidb.cost.volcano_model import flush_phase, price, spin_handoff_s
from minidb.errors import MinidbError
from minidb.volcano.psort import SortSetup, parallel_sort
from minidb.volcano.records import sort_records

KB = 1024
SEQUENT = get_profile("sequent")
HOLD_MS = SEQUENT.lock_hold_cluster_us / 1e3     # one process's flush: one sweep of its pool


def _sort(stagger_ms: float = 0.0, processes: int = 8, pools: int = 1):
    setup = SortSetup(processes=processes, cluster_bytes=4 * KB, pools=pools, unfix="macro_1",
                      sort_space_bytes=processes * 12 * 4 * KB, flush_stagger_ms=stagger_ms)
    return parallel_sort(sort_records(6000, seed=2), setup, runtime="inline")


# -- the engine's switch ---------------------------------------------------------------------------

def test_no_stagger_keeps_the_old_counts_and_adds_one_flush_call_per_process():
    plain, staggered = _sort(0.0, pools=2), _sort(3.0, pools=2)
    calls = plain.buffer.counters.calls
    assert calls == staggered.buffer.counters.calls          # the delay changes no count
    assert [w.__dict__ for w in plain.work] == [w.__dict__ for w in staggered.work]
    # one flush call per process, on the pool of its disk (device mod pools, §5.1)
    assert {k: n for k, n in calls.items() if k[2] == "flush"} == {
        (p, p % 2, "flush"): 1 for p in range(8)}
    assert plain.buffer_counters().flush_writes == staggered.buffer_counters().flush_writes
    # what price charges is the counts it charged before the flush was counted: the same
    assert price(plain, SEQUENT).elapsed_s == price(staggered, SEQUENT).elapsed_s


def test_the_flush_starts_are_process_number_times_the_delay():
    assert _sort(0.0).flush_start_ms == [0.0] * 8
    assert _sort(2.0).flush_start_ms == [2.0 * p for p in range(8)]   # §6.1: 15 x 4 ms at most


def test_a_negative_delay_is_a_clear_error():
    with pytest.raises(MinidbError, match="delayed, not advanced"):
        SortSetup(flush_stagger_ms=-1.0)


# -- the flush phase of the model ----------------------------------------------------------------

def test_all_at_once_the_flush_requests_queue_and_spin():
    flush = flush_phase(_sort(0.0), SEQUENT)
    # eight requests at one lock: the k-th granted waits for k sweeps and for the handoffs of
    # the grants up to its own, the j-th of which passes 7 - j spinners
    hold, spin = HOLD_MS / 1e3, spin_handoff_s(SEQUENT)
    assert flush.peak_spinners == 7
    assert flush.lock_wait_s == pytest.approx(
        sum(k * hold + sum((7 - j) * spin for j in range(k + 1)) for k in range(8)))
    assert flush.handoff_s == pytest.approx(sum(range(8)) * spin)
    assert flush.length_s == pytest.approx(8 * HOLD_MS / 1e3 + flush.handoff_s)


def test_the_contention_falls_with_the_delay_and_is_gone_past_one_sweep():
    run_at = {d: _sort(d) for d in (0.0, 0.1, 0.2, HOLD_MS * 0.99, HOLD_MS * 1.01, 2.0)}
    waits = [flush_phase(run, SEQUENT).lock_wait_s for run in run_at.values()]
    assert waits[0] > waits[1] > waits[2] > waits[3] > 0
    assert waits[4] == waits[5] == 0.0                   # each finds the lock free
    assert flush_phase(run_at[2.0], SEQUENT).peak_spinners == 0


def test_two_pools_space_a_pools_requests_by_twice_the_delay():
    # processes 0, 2, 4, ... share pool 0: a delay of half a sweep is already enough
    assert flush_phase(_sort(HOLD_MS * 0.51, pools=2), SEQUENT).lock_wait_s == 0.0
    assert flush_phase(_sort(HOLD_MS * 0.49, pools=2), SEQUENT).lock_wait_s > 0.0


def test_the_delay_adds_only_the_last_process_start_to_the_phase():
    flush = flush_phase(_sort(4.0), SEQUENT)
    assert flush.length_s == pytest.approx((7 * 4.0 + HOLD_MS) / 1e3)   # milliseconds
    assert flush.per_process[7]["start_s"] == pytest.approx(0.028)


def test_without_a_handoff_or_a_hold_nothing_contends():
    run = _sort(0.0)
    queue_only = flush_phase(run, SEQUENT.replace(spin_transfers=0.0))
    assert queue_only.handoff_s == 0.0 and queue_only.lock_wait_s > 0.0
    free = flush_phase(run, SEQUENT.replace(spin_transfers=0.0, lock_hold_cluster_us=0.0))
    assert free.lock_wait_s == 0.0 and free.length_s == 0.0
