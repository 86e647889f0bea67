"""minidb.txn.locks and minidb.txn.deadlock: the lock table, its queues, and deadlock detection.

Every thread is joined with a timeout that names what was slow, and every lock wait has a
timeout, so a bug here fails a test instead of hanging the suite.
"""

from __future__ import annotations

import threading
import time

import pytest

from minidb.errors import DeadlockError, LockTimeoutError, MinidbError
from minidb.txn.deadlock import GlobalDeadlockDetector, find_cycle, merge_graphs, youngest
from minidb.txn.locks import COMPATIBLE, LockManager, S, X

WAIT = 5.0  # seconds any single step may take before the test says what was slow


def wait_until(predicate, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout} s still waiting for: {what}")
        time.sleep(0.005)


class Worker:
    """A thread running ``fn``; ``join`` re-raises nothing but records the outcome."""

    def __init__(self, fn, name: str):
        self.outcome = None
        self.error: BaseException | None = None

        def body():
            try:
                self.outcome = fn()
            except BaseException as e:  # noqa: BLE001 - the test inspects it
                self.error = e

        self.thread = threading.Thread(target=body, name=name, daemon=True)
        self.thread.start()

    def join(self, timeout: float = WAIT):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"thread {self.thread.name} did not finish in {timeout} s"
        return self


def waiting_txns(lm: LockManager) -> set[int]:
    return {w[0] for w in lm.waiting()}


# -- compatibility ------------------------------------------------------------------------------
@pytest.mark.parametrize("held,asked", [(S, S), (S, X), (X, S), (X, X)])
def test_compatibility_matrix(held, asked):
    lm = LockManager(timeout=1.0)
    lm.lock_row(1, "t", 5, held)
    if COMPATIBLE[(held, asked)]:
        assert lm.lock_row(2, "t", 5, asked, timeout=0) is not None
    else:
        with pytest.raises(LockTimeoutError, match=r"T2 waited 0 s for an \w lock on t key 5"):
            lm.lock_row(2, "t", 5, asked, timeout=0)
    assert COMPATIBLE == {(S, S): True, (S, X): False, (X, S): False, (X, X): False}


def test_other_rows_and_tables_do_not_conflict():
    lm = LockManager()
    lm.lock_row(1, "t", 5, X)
    assert lm.lock_row(2, "t", 6, X, timeout=0) is not None
    assert lm.lock_row(2, "u", 5, X, timeout=0) is not None


def test_locks_are_reentrant_and_covered_by_stronger_ones():
    lm = LockManager()
    assert lm.lock_row(1, "t", 5, X) is not None
    assert lm.lock_row(1, "t", 5, S) is None  # X covers S
    assert lm.lock_range(1, "t", 1, 10, S) is not None
    assert lm.lock_row(1, "t", 7, S) is None  # the range covers the row
    assert lm.held(1) == [("t", 5, 5, X), ("t", 1, 10, S)]


# -- ranges and phantoms ------------------------------------------------------------------------
def test_range_lock_blocks_an_insert_inside_it_only():
    lm = LockManager()
    lm.lock_range(1, "t", 10, 20, S)
    with pytest.raises(LockTimeoutError, match=r"X lock on t key 15 .*held by T1 \(S\)"):
        lm.lock_row(2, "t", 15, X, timeout=0)
    assert lm.lock_row(2, "t", 21, X, timeout=0) is not None
    assert lm.lock_row(2, "t", 9, X, timeout=0) is not None
    assert lm.lock_range(3, "t", 12, 19, S, timeout=0) is not None  # S ranges share
    with pytest.raises(LockTimeoutError):
        lm.lock_range(3, "t", 20, None, X, timeout=0)  # open-ended range meets T2's row 21


def test_whole_table_lock_conflicts_with_any_row():
    lm = LockManager()
    lm.lock_row(1, "t", "abc", X)
    with pytest.raises(LockTimeoutError, match=r"S lock on t \(every key\)"):
        lm.lock_range(2, "t", None, None, S, timeout=0)


def test_empty_range_and_bad_mode_are_refused():
    lm = LockManager()
    with pytest.raises(MinidbError, match="is empty"):
        lm.lock_range(1, "t", 5, 1)
    with pytest.raises(MinidbError, match="lock mode"):
        lm.lock_row(1, "t", 5, "IX")


# -- queues ---------------------------------------------------------------------------------------
def test_fifo_a_reader_does_not_pass_a_waiting_writer():
    lm = LockManager(timeout=WAIT)
    lm.lock_row(1, "t", 5, X)
    order: list[int] = []
    lock = threading.Lock()

    def ask(txn, mode):
        def fn():
            lm.lock_row(txn, "t", 5, mode)
            with lock:
                order.append(txn)
        return fn

    w2 = Worker(ask(2, S), "T2 S")
    wait_until(lambda: waiting_txns(lm) == {2}, "T2 queued")
    w3 = Worker(ask(3, X), "T3 X")
    wait_until(lambda: waiting_txns(lm) == {2, 3}, "T3 queued")
    w4 = Worker(ask(4, S), "T4 S")
    wait_until(lambda: waiting_txns(lm) == {2, 3, 4}, "T4 queued")
    lm.release_all(1)
    w2.join()
    time.sleep(0.05)
    assert order == [2]  # T4's S is compatible with T2's, but T3 is ahead of it
    assert waiting_txns(lm) == {3, 4}
    lm.release_all(2)
    w3.join()
    assert order == [2, 3] and waiting_txns(lm) == {4}
    lm.release_all(3)
    w4.join()
    assert order == [2, 3, 4]
    assert all(w.error is None for w in (w2, w3, w4))


def test_upgrade_s_to_x_goes_ahead_of_the_queue():
    lm = LockManager(timeout=WAIT)
    lm.lock_row(1, "t", 5, S)
    lm.lock_row(2, "t", 5, S)
    w3 = Worker(lambda: lm.lock_row(3, "t", 5, X), "T3 X")
    wait_until(lambda: waiting_txns(lm) == {3}, "T3 queued")
    up = Worker(lambda: lm.lock_row(1, "t", 5, X), "T1 upgrade")  # waits for T2's S only
    wait_until(lambda: waiting_txns(lm) == {1, 3}, "T1's conversion queued")
    lm.release_all(2)
    up.join()
    assert up.error is None and ("t", 5, 5, X) in lm.held(1)
    assert waiting_txns(lm) == {3} and lm.counters.conversions == 1
    lm.release_all(1)
    w3.join()
    assert w3.error is None


def test_two_upgrades_deadlock_and_the_youngest_is_the_victim():
    lm = LockManager(timeout=WAIT)
    lm.lock_row(1, "t", 5, S)
    lm.lock_row(2, "t", 5, S)
    w1 = Worker(lambda: lm.lock_row(1, "t", 5, X), "T1 upgrade")
    wait_until(lambda: waiting_txns(lm) == {1}, "T1 waiting")
    with pytest.raises(DeadlockError, match=r"T2 waits for T1 .*T1 waits for T2 .*T2, the youngest"):
        lm.lock_row(2, "t", 5, X)
    lm.release_all(2)  # the victim aborts
    w1.join()
    assert w1.error is None and lm.counters.deadlocks == 1


# -- strict two-phase locking, timeouts -----------------------------------------------------------
def test_x_locks_are_held_until_release_all():
    lm = LockManager()
    x = lm.lock_row(1, "t", 5, X)
    with pytest.raises(MinidbError, match="strict two-phase locking"):
        lm.release(x)
    s = lm.lock_row(1, "t", 6, S)
    lm.release(s)  # an S lock may go early (STABLE)
    assert lm.held(1) == [("t", 5, 5, X)]
    assert lm.release_all(1) == 1 and lm.held(1) == []


def test_a_timeout_names_the_lock_and_its_holder_and_leaves_no_request():
    lm = LockManager(timeout=0.1)
    lm.lock_row(1, "acct", 7, X)
    start = time.monotonic()
    with pytest.raises(LockTimeoutError, match=r"T2 waited 0.1 s for an S lock on acct key 7 on "
                                               r"node0 and gave up \(held by T1 \(X\)\)"):
        lm.lock_row(2, "acct", 7, S)
    assert 0.09 < time.monotonic() - start < WAIT
    assert lm.waiting() == [] and lm.counters.timeouts == 1


# -- deadlocks ----------------------------------------------------------------------------------
def test_find_cycle_and_youngest():
    assert find_cycle({1: {2}, 2: {3}}) is None
    cycle = find_cycle({1: {2}, 2: {3}, 3: {1}, 4: {1}})
    assert sorted(cycle) == [1, 2, 3] and youngest(cycle) == 3
    assert find_cycle({1: {2}, 2: {1}, 3: {4}}, start=3) is None
    assert merge_graphs([{1: {2}}, {1: {3}, 2: {1}}]) == {1: {2, 3}, 2: {1}}


def test_local_deadlock_refuses_the_youngest_even_when_the_oldest_closes_the_cycle():
    lm = LockManager(timeout=WAIT)
    lm.lock_row(1, "t", 1, X)
    lm.lock_row(2, "t", 2, X)
    victim = Worker(lambda: lm.lock_row(2, "t", 1, X), "T2")
    wait_until(lambda: waiting_txns(lm) == {2}, "T2 waiting")
    survivor = Worker(lambda: lm.lock_row(1, "t", 2, X), "T1")  # closes the cycle
    victim.join()
    assert isinstance(victim.error, DeadlockError)
    assert "T2, the youngest in the cycle, is the victim" in str(victim.error)
    lm.release_all(2)
    survivor.join()
    assert survivor.error is None and ("t", 2, 2, X) in lm.held(1)


def test_global_deadlock_across_two_nodes_only_the_scheduler_sees():
    a, b = LockManager("node A", timeout=WAIT), LockManager("node B", timeout=WAIT)
    a.lock_row(1, "t", 1, X)  # T1 holds row 1 on node A
    b.lock_row(2, "t", 2, X)  # T2 holds row 2 on node B
    t1 = Worker(lambda: b.lock_row(1, "t", 2, X), "T1 on B")
    t2 = Worker(lambda: a.lock_row(2, "t", 1, X), "T2 on A")
    wait_until(lambda: waiting_txns(a) == {2} and waiting_txns(b) == {1}, "both waiting")
    assert find_cycle(a.wait_for_graph()) is None and find_cycle(b.wait_for_graph()) is None
    detector = GlobalDeadlockDetector([a, b])
    cycle = detector.check()
    assert sorted(cycle) == [1, 2] and detector.deadlocks == 1
    t2.join()
    assert isinstance(t2.error, DeadlockError)
    assert "global deadlock found by the scheduler" in str(t2.error)
    assert "on node A" in str(t2.error) and "on node B" in str(t2.error)
    a.release_all(2)
    b.release_all(2)  # the victim aborts on every node
    t1.join()
    assert t1.error is None and ("t", 2, 2, X) in b.held(1)
    assert detector.check() is None


def test_global_detector_on_its_own_thread():
    a, b = LockManager("A", timeout=WAIT), LockManager("B", timeout=WAIT)
    a.lock_row(1, "t", 1, X)
    b.lock_row(2, "t", 2, X)
    with GlobalDeadlockDetector([a, b]) as detector:
        detector.start(interval=0.01)
        t1 = Worker(lambda: b.lock_row(1, "t", 2, X), "T1 on B")
        t2 = Worker(lambda: a.lock_row(2, "t", 1, X), "T2 on A")
        t2.join()
        assert isinstance(t2.error, DeadlockError)
        a.release_all(2)
        b.release_all(2)
        t1.join()
        assert t1.error is None
    assert detector._thread is None


def test_two_cycles_through_one_waiter_are_both_broken():
    # T1 holds row 1 in S and row 2 in X; T2 and T3 hold row 1 in S and wait for row 2;
    # T1's upgrade of row 1 then closes two cycles (T1-T2 and T1-T3): both T2 and T3 must go
    lm = LockManager(timeout=WAIT)
    lm.lock_row(1, "t", 2, X)
    for t in (1, 2, 3):
        lm.lock_row(t, "t", 1, S)
    w2 = Worker(lambda: lm.lock_row(2, "t", 2, S), "T2")
    wait_until(lambda: waiting_txns(lm) == {2}, "T2 waiting")
    w3 = Worker(lambda: lm.lock_row(3, "t", 2, S), "T3")
    wait_until(lambda: waiting_txns(lm) == {2, 3}, "T3 waiting")
    up = Worker(lambda: lm.lock_row(1, "t", 1, X), "T1 upgrade")
    w2.join()
    w3.join()
    assert isinstance(w2.error, DeadlockError) and isinstance(w3.error, DeadlockError)
    lm.release_all(2)
    lm.release_all(3)
    up.join()
    assert up.error is None and lm.counters.deadlocks == 2
