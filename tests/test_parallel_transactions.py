"""minidb.cluster.transaction: transactions on the parallel engine, locks on the nodes, global
deadlocks found by the scheduler.

The table ``acct`` is range-partitioned on its lock key over two disk nodes: ids below 5 on node
0, the others on node 1, so a key range can span both nodes and two rows can be chosen to live
on different ones. Steps are ordered by waiting until a node's lock manager shows a transaction
queued; every join and lock wait has a timeout.
"""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa
import pytest

import minidb
from minidb.errors import DeadlockError, LockTimeoutError, MinidbError, SchemaError
from minidb.txn.deadlock import find_cycle, merge_graphs
from tests.test_locks import WAIT, Worker, wait_until, waiting_txns
from tests.test_transactions import MIXED_TYPES

ROWS = {1: 100, 2: 200, 3: 300, 7: 700, 8: 800, 9: 900}


def accounts() -> pa.Table:
    return pa.table({"id": pa.array(list(ROWS), pa.int32()),
                     "bal": pa.array(list(ROWS.values()), pa.int32()),
                     "who": pa.array([f"c{k}" for k in ROWS], pa.string())})


def make(partition: str = "range(id: 5)"):
    pdb = minidb.connect(nodes=2)
    pdb.create_table("acct", accounts(), partition=partition)
    return pdb


@pytest.fixture
def pdb():
    d = make()
    yield d
    d.close()


def managers(pdb):
    return [pdb.backend.nodes[n].locks for n in pdb.disk]


def rows(db) -> list[tuple]:
    return sorted(db.sql("SELECT id, bal, who FROM acct").to_pylist())


def duck(statements: list[str]) -> list[tuple]:
    """What DuckDB holds after running ``statements`` on the same data."""
    con = duckdb.connect()
    con.register("src", accounts())
    con.execute("CREATE TABLE acct AS SELECT * FROM src")
    for s in statements:
        con.execute(s)
    return sorted(con.execute("SELECT id, bal, who FROM acct").fetchall())


WRITES = ["UPDATE acct SET bal = bal + 1 WHERE id IN (1, 8)",
          "INSERT INTO acct VALUES (4, 400, 'c4'), (6, 600, 'c6')",
          "DELETE FROM acct WHERE id = 9 OR id = 2",
          "UPDATE acct SET bal = bal * 2 WHERE id BETWEEN 3 AND 7"]


# -- commit and abort, against DuckDB -------------------------------------------------------------
@pytest.mark.parametrize("access", ["browse", "stable", "repeatable"])
@pytest.mark.parametrize("partition", ["range(id: 5)", "hash(id)", "round_robin"])
def test_commit_matches_duckdb_and_abort_restores_the_original_rows(access, partition):
    pdb = make(partition)
    try:
        tx = pdb.begin(access)
        for s in WRITES:
            tx.sql(s)
        assert sorted(tx.sql("SELECT id, bal, who FROM acct").to_pylist()) == duck(WRITES)
        assert any(m.held(tx.id) for m in managers(pdb))
        tx.abort()
        assert rows(pdb) == duck([])  # exactly the original rows, as a multiset
        assert all(m.held(tx.id) == [] for m in managers(pdb))
        with pdb.begin(access) as tx:
            for s in WRITES:
                tx.sql(s)
        assert tx.state == "committed" and rows(pdb) == duck(WRITES)
        assert all(m.held(tx.id) == [] for m in managers(pdb))
    finally:
        pdb.close()


def test_locks_live_on_the_node_that_stores_the_row(pdb):
    tx = pdb.begin("stable")
    tx.sql("UPDATE acct SET bal = 0 WHERE id = 1 OR id = 8")
    node0, node1 = managers(pdb)
    assert node0.held(tx.id) == [("acct", 1, 1, "X")]
    assert node1.held(tx.id) == [("acct", 8, 8, "X")]
    tx.sql("SELECT * FROM acct WHERE id = 2")  # a STABLE read lock is gone after the read
    assert node0.held(tx.id) == [("acct", 1, 1, "X")]
    tx.commit()


# -- waiting --------------------------------------------------------------------------------------
def test_a_second_writer_of_the_same_row_waits_until_the_first_commits(pdb):
    order = []
    t1, t2 = pdb.begin("stable"), pdb.begin("stable", lock_timeout=WAIT)
    t1.sql("UPDATE acct SET bal = bal + 1 WHERE id = 8")
    order.append("T1 updated")

    def second():
        t2.sql("UPDATE acct SET bal = bal * 10 WHERE id = 8")
        order.append("T2 updated")
        t2.commit()

    w = Worker(second, "T2")
    node1 = managers(pdb)[1]
    wait_until(lambda: waiting_txns(node1) == {t2.id}, "T2 queued behind T1's X lock on node 1")
    assert order == ["T1 updated"]
    order.append("T1 commits")
    t1.commit()
    w.join()
    assert w.error is None and order == ["T1 updated", "T1 commits", "T2 updated"]
    assert rows(pdb) == duck(["UPDATE acct SET bal = bal + 1 WHERE id = 8",
                              "UPDATE acct SET bal = bal * 10 WHERE id = 8"])


def test_repeatable_locks_a_key_range_on_both_nodes_so_no_phantom(pdb):
    count = "SELECT count(*) FROM acct WHERE id BETWEEN 2 AND 8"
    reader = pdb.begin("repeatable")
    assert reader.sql(count).to_pylist() == [(4,)]
    assert all(("acct", 2, 8, "S") in m.held(reader.id) for m in managers(pdb))
    writer = pdb.begin("stable", lock_timeout=WAIT)

    def insert():
        writer.sql("INSERT INTO acct VALUES (6, 600, 'c6')")  # node 1, inside the range
        writer.commit()

    w = Worker(insert, "inserter")
    wait_until(lambda: waiting_txns(managers(pdb)[1]) == {writer.id}, "the insert waits on node 1")
    assert reader.sql(count).to_pylist() == [(4,)]  # the same rows: no phantom
    reader.commit()
    w.join()
    assert w.error is None
    assert rows(pdb) == duck(["INSERT INTO acct VALUES (6, 600, 'c6')"])


def test_stable_sees_a_phantom_in_a_range_spanning_both_nodes(pdb):
    count = "SELECT count(*) FROM acct WHERE id BETWEEN 2 AND 8"
    reader = pdb.begin("stable")
    assert reader.sql(count).to_pylist() == [(4,)]
    assert all(m.held(reader.id) == [] for m in managers(pdb))  # read locks already let go
    writer = pdb.begin("stable", lock_timeout=0.5)
    writer.sql("INSERT INTO acct VALUES (4, 400, 'c4'), (6, 600, 'c6')")  # no wait, one per node
    writer.commit()
    assert reader.sql(count).to_pylist() == [(6,)]  # phantoms
    reader.commit()


def test_browse_reads_an_uncommitted_change_while_stable_waits(pdb):
    writer = pdb.begin("stable")
    writer.sql("UPDATE acct SET bal = 5 WHERE id = 2")
    browse = pdb.begin("browse")
    assert browse.sql("SELECT bal FROM acct WHERE id = 2").to_pylist() == [(5,)]  # dirty read
    assert pdb.sql("SELECT bal FROM acct WHERE id = 2").to_pylist() == [(5,)]  # autocommit: no locks
    stable = pdb.begin("stable", lock_timeout=WAIT)
    r = Worker(lambda: stable.sql("SELECT bal FROM acct WHERE id = 2").to_pylist(), "stable reader")
    wait_until(lambda: waiting_txns(managers(pdb)[0]) == {stable.id}, "the stable reader waits")
    writer.abort()
    r.join()
    assert r.outcome == [(200,)]  # never saw the change that was undone
    browse.commit()
    stable.commit()


@pytest.mark.parametrize("outcome", ["abort", "commit"])
def test_a_stable_reader_waits_for_an_uncommitted_delete_on_another_node(pdb, outcome):
    deleter = pdb.begin("stable")
    deleter.sql("DELETE FROM acct WHERE id = 8")  # node 1
    reader = pdb.begin("stable", lock_timeout=WAIT)
    r = Worker(lambda: sorted(reader.sql("SELECT id FROM acct WHERE bal > 0").to_pylist()),
               "stable reader")
    wait_until(lambda: waiting_txns(managers(pdb)[1]) == {reader.id},
               "the stable reader waits on the deleted row's node")
    getattr(deleter, outcome)()
    r.join()
    expected = [(k,) for k in ROWS if not (outcome == "commit" and k == 8)]
    assert r.outcome == expected  # the committed state, never the uncommitted delete
    reader.commit()
    assert pdb.ghosts.within("acct", None, None, 0) == []


def test_lock_timeout_aborts_the_waiter(pdb):
    t1 = pdb.begin("stable")
    t1.sql("UPDATE acct SET bal = 1 WHERE id = 1")
    t2 = pdb.begin("stable", lock_timeout=0.2)
    t2.sql("UPDATE acct SET bal = 2 WHERE id = 9")
    with pytest.raises(LockTimeoutError, match=rf"T{t2.id} waited 0.2 s for an X lock on acct key 1 "
                                               rf"on node 0 and gave up \(held by T{t1.id}"):
        t2.sql("UPDATE acct SET bal = 2 WHERE id = 1")
    assert t2.state == "aborted" and all(m.held(t2.id) == [] for m in managers(pdb))
    t1.commit()
    assert rows(pdb) == duck(["UPDATE acct SET bal = 1 WHERE id = 1"])  # T2's id 9 undone


#: what T1 of ``crossed_transfers`` runs (it commits; T2 is the deadlock's victim)
T1_STATEMENTS = ["UPDATE acct SET bal = bal - 50 WHERE id = 1",
                 "UPDATE acct SET bal = bal + 50 WHERE id = 8"]


def crossed_transfers(pdb):
    """T1 and T2 each change one row (T1 on node 0, T2 on node 1), with the scheduler's detector
    held until ``gate`` is set. Returns (t1, t2, gate, second): ``second(tx)`` is a function that
    runs that transaction's second statement, on the other's row, and commits."""
    t1, t2 = pdb.begin("stable", lock_timeout=WAIT), pdb.begin("stable", lock_timeout=WAIT)
    detector = pdb._deadlocks.detector
    gate = threading.Event()  # hold the scheduler's detector until both transactions wait
    check = detector.check
    detector.check = lambda: check() if gate.wait(WAIT) else None
    t1.sql(T1_STATEMENTS[0])  # a row on node 0
    t2.sql("UPDATE acct SET bal = bal - 7 WHERE id = 8")  # a row on node 1
    then = {t1.id: T1_STATEMENTS[1],
            t2.id: "UPDATE acct SET bal = bal + 7 WHERE id = 1"}

    def second(tx):
        def fn():
            tx.sql(then[tx.id])
            tx.commit()
        return fn

    return t1, t2, gate, second


def assert_t2_chosen_as_victim(pdb, t1, t2, w1, w2) -> None:
    """After ``crossed_transfers``: the scheduler broke the global deadlock once by aborting T2
    (the younger), whose error names both waits, both keys and both nodes; T1 committed and
    the table holds exactly T1's transfer."""
    assert w1.error is None, w1.error
    assert isinstance(w2.error, DeadlockError), w2.error
    message = str(w2.error)
    assert message.startswith("global deadlock found by the scheduler: ")
    for part in (f"T{t1.id} waits for T{t2.id}", f"T{t2.id} waits for T{t1.id}", "acct key 1",
                 "acct key 8", "on node 0", "on node 1", f"T{t2.id}, the youngest"):
        assert part in message, (part, message)
    assert t1.state == "committed" and t2.state == "aborted"
    assert pdb._deadlocks.detector.deadlocks == 1
    assert rows(pdb) == duck(T1_STATEMENTS)  # T2 left nothing behind


# -- deadlocks ------------------------------------------------------------------------------------
def test_a_global_deadlock_no_node_sees_is_broken_by_the_scheduler(pdb):
    t1, t2, gate, second = crossed_transfers(pdb)
    node0, node1 = managers(pdb)
    w1 = Worker(second(t1), "T1")
    wait_until(lambda: waiting_txns(node1) == {t1.id}, "T1 waiting for T2's row on node 1")
    w2 = Worker(second(t2), "T2")
    wait_until(lambda: waiting_txns(node0) == {t2.id}, "T2 waiting for T1's row on node 0")
    # each node alone sees one wait and no cycle; only the merged graph has one
    assert find_cycle(node0.wait_for_graph()) is None and find_cycle(node1.wait_for_graph()) is None
    assert node0.counters.deadlocks == node1.counters.deadlocks == 0
    assert sorted(find_cycle(merge_graphs([node0.wait_for_graph(), node1.wait_for_graph()]))) \
        == sorted([t1.id, t2.id])
    gate.set()
    w1.join()
    w2.join()
    assert_t2_chosen_as_victim(pdb, t1, t2, w1, w2)
    assert all(m.held(t.id) == [] for m in managers(pdb) for t in (t1, t2))


def test_a_local_deadlock_is_found_by_the_node_itself(pdb):
    t1, t2 = pdb.begin("stable", lock_timeout=WAIT), pdb.begin("stable", lock_timeout=WAIT)
    t1.sql("UPDATE acct SET bal = 0 WHERE id = 1")
    t2.sql("UPDATE acct SET bal = 0 WHERE id = 2")  # both rows on node 0
    w1 = Worker(lambda: t1.sql("UPDATE acct SET bal = 1 WHERE id = 2"), "T1")
    wait_until(lambda: waiting_txns(managers(pdb)[0]) == {t1.id}, "T1 waiting on node 0")
    with pytest.raises(DeadlockError, match=rf"^deadlock on node 0: .*T{t2.id}, the youngest"):
        t2.sql("UPDATE acct SET bal = 1 WHERE id = 1")
    w1.join()
    assert w1.error is None and t2.state == "aborted"
    t1.commit()
    assert rows(pdb) == duck(["UPDATE acct SET bal = 0 WHERE id = 1",
                              "UPDATE acct SET bal = 1 WHERE id = 2"])


# -- errors ---------------------------------------------------------------------------------------
def test_errors(pdb):
    with pytest.raises(MinidbError, match="access must be one of browse, stable, repeatable"):
        pdb.begin("serializable")
    with pytest.raises(MinidbError, match="lock_timeout is a finite number of seconds above 0"):
        pdb.begin(lock_timeout=0)
    tx = pdb.begin()
    tx.commit()
    with pytest.raises(MinidbError, match=rf"transaction T{tx.id} is committed; begin a new one"):
        tx.sql("SELECT * FROM acct")
    with pytest.raises(MinidbError, match="is committed"):
        tx.commit()
    tx.abort()  # aborting a finished transaction does nothing
    tx = pdb.begin()
    with pytest.raises(MinidbError, match="run CREATE outside it"):
        tx.sql("CREATE TABLE t2 AS SELECT * FROM acct")
    with pytest.raises(MinidbError, match="may not change acct.id"):
        tx.sql("UPDATE acct SET id = 5 WHERE id = 1")
    tx.abort()
    with pytest.raises(MinidbError, match=r"below the nodes' timeout"):
        pdb.begin(lock_timeout=1e6)
    assert rows(pdb) == duck([])


def test_a_read_comparing_the_key_with_text_is_the_engines_schema_error(pdb):
    """As on one node: a TypeError from comparing the key bounds, not the engine's error."""
    other = pdb.begin("repeatable")
    other.sql("SELECT * FROM acct WHERE id BETWEEN 1 AND 8")  # a range lock on both nodes
    tx = pdb.begin("repeatable")
    for q in MIXED_TYPES:
        with pytest.raises(SchemaError, match="cannot compare text with a number"):
            tx.sql(q)
    tx.commit()
    other.commit()


def test_a_second_thread_is_refused_and_abort_after_close_is_quiet():
    """As on one node: a transaction is one thread's at a time (a commit from another thread
    while its statement waited released the locks under it); and abort after close sent the
    undo to nodes that were shut down (a confusing 'cannot schedule new futures' error)."""
    pdb = make()
    try:
        holder = pdb.begin()
        holder.sql("UPDATE acct SET bal = 0 WHERE id = 8")
        tx = pdb.begin(lock_timeout=WAIT)
        w = Worker(lambda: tx.sql("UPDATE acct SET bal = 1 WHERE id = 8"), "waiter")
        wait_until(lambda: tx.id in waiting_txns(managers(pdb)[1]), "the waiter queued")
        with pytest.raises(MinidbError, match=rf"T{tx.id} is in use by another thread"):
            tx.commit()
        holder.commit()
        assert w.join().error is None and tx.state == "active"
    finally:
        pdb.close()
    tx.abort()
    assert tx.state == "aborted"


# -- lock handles and the threads of lock waits ---------------------------------------------------
def test_lock_handles_are_plain_ids_that_the_node_keeps_until_release(pdb):
    tx = pdb.begin("repeatable")
    tx.sql("UPDATE acct SET bal = 0 WHERE id = 1")
    handles = pdb.backend.call(0, "txn_lock_rows", tx.id, "acct", [2, 1], "S", 1.0)
    assert isinstance(handles[0], int) and handles[1] is None  # id 1: its X lock covers it
    assert pdb.backend.call(0, "txn_lock_range", tx.id, "acct", 1, 1, "S", 1.0) is None
    kept = pdb.backend.nodes[0].txn_handles()
    pdb.backend.call(0, "txn_release", handles)  # by id: the node finds its own Request
    assert ("acct", 2, 2, "S") not in managers(pdb)[0].held(tx.id)
    assert pdb.backend.nodes[0].txn_handles() == kept - 1
    pdb.backend.call(0, "txn_release", handles)  # released already: nothing
    tx.commit()
    assert [pdb.backend.nodes[n].txn_handles() for n in pdb.disk] == [0, 0]


def test_past_the_lock_wait_slots_a_transaction_waits_at_the_coordinator(pdb):
    from minidb.cluster.backends import LOCK_WAITS
    from minidb.cluster.transaction import NodeLocks, SchedulerDeadlocks

    t1 = pdb.begin("stable", lock_timeout=WAIT)
    t1.sql("UPDATE acct SET bal = 1 WHERE id = 1")
    assert pdb._deadlocks.slots == LOCK_WAITS
    assert all(isinstance(m, NodeLocks) for m in pdb._deadlocks.detector.managers)
    pdb._deadlocks = SchedulerDeadlocks(pdb._deadlocks.detector.managers, pdb.deadlock_interval,
                                        slots=1)
    t2 = pdb.begin("stable", lock_timeout=WAIT)
    w = Worker(lambda: t2.sql("UPDATE acct SET bal = 2 WHERE id = 1"), "T2")  # takes the slot
    wait_until(lambda: waiting_txns(managers(pdb)[0]) == {t2.id}, "T2 waiting on node 0")
    t3 = pdb.begin("stable", lock_timeout=0.2)
    with pytest.raises(LockTimeoutError, match=rf"T{t3.id} waited 0.2 s for a lock request "
                                               r"slot \(the 1 of the database"):
        t3.sql("UPDATE acct SET bal = 3 WHERE id = 9")
    assert t3.state == "aborted"
    t1.commit()
    w.join()
    assert w.error is None
    t2.commit()
    with pdb.begin("stable") as t4:  # the slot is free again
        t4.sql("UPDATE acct SET bal = 4 WHERE id = 9")
    assert dict((i, b) for i, b, _ in rows(pdb))[1] == 2


def test_in_a_data_directory_each_statement_and_undo_step_commits_on_every_node(tmp_path):
    pdb = minidb.connect(nodes=2, data_dir=tmp_path / "d")
    pdb.create_table("acct", accounts(), partition="range(id: 5)")
    tx = pdb.begin("repeatable")
    for s in WRITES:
        tx.sql(s)
    tx.abort()
    with pdb.begin("stable") as tx:
        tx.sql(WRITES[0])
    pdb.close()
    pdb = minidb.connect(nodes=2, data_dir=tmp_path / "d")
    try:
        assert rows(pdb) == duck(WRITES[:1])
    finally:
        pdb.close()
