"""minidb.cluster.transaction on the Ray backend: the locks live in the node actors, the lock
handles are plain ids, the scheduler's detector reads the actors' wait-for edges by calls.

The same table as tests/test_parallel_transactions.py (``acct`` range-partitioned on its lock key
over two disk nodes: ids below 5 on node 0, the others on node 1). A node's waiters are seen
through its ``txn_wait_edges``. The global deadlock test runs by default; the others are slow.
"""

from __future__ import annotations

import random

import pytest

import minidb
from minidb.errors import LockError, MinidbError
from minidb.txn.deadlock import find_cycle
from tests.test_locks import WAIT, Worker, wait_until
from tests.test_parallel_transactions import (
    ROWS,
    WRITES,
    accounts,
    assert_t2_chosen_as_victim,
    crossed_transfers,
    duck,
    rows,
)

pytestmark = pytest.mark.ray


def make(**kw):
    pdb = minidb.connect(nodes=2, backend="ray", **kw)
    pdb.create_table("acct", accounts(), partition="range(id: 5)")
    return pdb


@pytest.fixture
def pdb(ray_session):
    d = make()
    yield d
    d.close()


def edges(pdb, n: int) -> list[tuple]:
    return pdb.backend.call(n, "txn_wait_edges")


def waiting(pdb, n: int) -> set[int]:
    return {w for w, _, _ in edges(pdb, n)}


def handles(pdb) -> list[int]:
    return [pdb.backend.call(n, "txn_handles") for n in pdb.disk]


def test_a_global_deadlock_through_two_actors_is_broken_by_the_scheduler(pdb):
    t1, t2, gate, second = crossed_transfers(pdb)
    w1 = Worker(second(t1), "T1")
    wait_until(lambda: waiting(pdb, 1) == {t1.id}, "T1 waiting for T2's row on node 1", 4 * WAIT)
    w2 = Worker(second(t2), "T2")
    wait_until(lambda: waiting(pdb, 0) == {t2.id}, "T2 waiting for T1's row on node 0", 4 * WAIT)
    graphs = [{w: {h} for w, h, _ in edges(pdb, n)} for n in pdb.disk]
    assert all(find_cycle(g) is None for g in graphs)  # each actor alone sees no cycle
    gate.set()
    w1.join()
    w2.join()
    assert_t2_chosen_as_victim(pdb, t1, t2, w1, w2)
    assert handles(pdb) == [0, 0] and all(edges(pdb, n) == [] for n in pdb.disk)
    assert pdb.backend.healthy  # a refused lock wait leaves the actors fit to be pooled


@pytest.mark.slow
def test_concurrent_repeatable_transfers_apply_each_committed_transfer_once(pdb):
    ids = list(ROWS)
    done: list[list[tuple[int, int, int]]] = [[], []]
    refused = [0, 0]

    def transfers(worker: int) -> None:
        rng = random.Random(worker)
        for _ in range(6):
            src, dst = rng.sample(ids, 2)
            amt = rng.randint(1, 20)
            for _attempt in range(10):
                try:
                    with pdb.begin("repeatable", lock_timeout=WAIT) as tx:
                        (bal,), = tx.sql(f"SELECT bal FROM acct WHERE id = {src}").to_pylist()
                        tx.sql(f"UPDATE acct SET bal = {bal - amt} WHERE id = {src}")
                        tx.sql(f"UPDATE acct SET bal = bal + {amt} WHERE id = {dst}")
                    done[worker].append((src, dst, amt))
                    break
                except LockError:  # a deadlock victim or a timeout: aborted, so retry
                    refused[worker] += 1

    workers = [Worker(lambda w=w: transfers(w), f"transfers {w}") for w in (0, 1)]
    for w in workers:
        w.join()
    assert all(w.error is None for w in workers), [w.error for w in workers]
    expected = dict(ROWS)
    for src, dst, amt in done[0] + done[1]:
        expected[src] -= amt
        expected[dst] += amt
    got = {i: b for i, b, _ in rows(pdb)}
    assert got == expected  # each committed transfer applied once, no aborted one at all
    assert sum(got.values()) == sum(ROWS.values())
    assert len(done[0]) == len(done[1]) == 6
    assert handles(pdb) == [0, 0]


@pytest.mark.slow
def test_abort_restores_the_rows_and_commit_matches_duckdb(pdb):
    tx = pdb.begin("repeatable")
    for s in WRITES:
        tx.sql(s)
    assert sorted(tx.sql("SELECT id, bal, who FROM acct").to_pylist()) == duck(WRITES)
    tx.abort()
    assert rows(pdb) == duck([]) and handles(pdb) == [0, 0]
    with pdb.begin("stable") as tx:
        for s in WRITES:
            tx.sql(s)
    assert rows(pdb) == duck(WRITES) and handles(pdb) == [0, 0]


@pytest.mark.slow
def test_a_transaction_not_committed_at_close_is_rolled_back_at_reopen(ray_session, tmp_path):
    pdb = make(data_dir=tmp_path / "d")
    with pdb.begin() as tx:
        tx.sql(WRITES[0])
    tx = pdb.begin("repeatable")
    for s in WRITES[1:]:
        tx.sql(s)
    assert rows(pdb) != duck(WRITES[:1])
    pdb.close()
    with pytest.raises(MinidbError, match="closed"):
        tx.commit()
    pdb = minidb.connect(nodes=2, backend="ray", data_dir=tmp_path / "d")
    try:
        assert "rolled back 1 unfinished transaction" in pdb.recovery
        assert rows(pdb) == duck(WRITES[:1])
    finally:
        pdb.close()
    pdb = minidb.connect(nodes=2, backend="ray", data_dir=tmp_path / "d")
    try:  # nothing is rolled back twice
        assert pdb.recovery is None and rows(pdb) == duck(WRITES[:1])
    finally:
        pdb.close()
