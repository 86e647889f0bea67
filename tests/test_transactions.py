"""minidb.txn.transaction: concurrent transactions on one database, BROWSE / STABLE / REPEATABLE.

Each scenario runs real threads against one ``Database``; steps are ordered by waiting until the
lock manager shows a transaction queued (never by sleeping and hoping), and every join and lock
wait has a timeout that names what was slow.
"""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa
import pytest

import minidb
from minidb.errors import DeadlockError, LockTimeoutError, MinidbError, SchemaError
from tests.test_locks import WAIT, Worker, wait_until, waiting_txns

BALANCES = {1: 100, 2: 200, 3: 300, 10: 10, 12: 12, 20: 20}


def accounts() -> pa.Table:
    return pa.table({"id": pa.array(list(BALANCES), pa.int32()),
                     "bal": pa.array(list(BALANCES.values()), pa.int32())})


@pytest.fixture
def db():
    d = minidb.connect()
    d.create_table("acct", accounts())
    yield d
    d.close()


def balances(db) -> dict[int, int]:
    return dict(db.sql("SELECT id, bal FROM acct").to_pylist())


def bal(db_or_tx, key: int) -> int:
    (row,) = db_or_tx.sql(f"SELECT bal FROM acct WHERE id = {key}").to_pylist()
    return row[0]


# -- strict two-phase locking ---------------------------------------------------------------------
def test_write_locks_are_held_until_commit_and_a_stable_reader_waits(db):
    writer = db.begin("stable")
    writer.sql("UPDATE acct SET bal = bal + 1 WHERE id = 1")
    writer.sql("SELECT * FROM acct WHERE id = 2")  # a STABLE read lock is gone after the read
    assert db.locks.held(writer.id) == [("acct", 1, 1, "X")]
    reader = db.begin("stable")
    r = Worker(lambda: bal(reader, 1), "stable reader")
    wait_until(lambda: waiting_txns(db.locks) == {reader.id}, "the reader queued behind the X lock")
    assert db.locks.held(writer.id) == [("acct", 1, 1, "X")]  # still held between statements
    writer.commit()
    r.join()
    assert r.outcome == 101 and db.locks.held(writer.id) == []
    reader.commit()


# -- deadlock ---------------------------------------------------------------------------------------
def test_deadlock_one_victim_the_other_commits_and_the_state_is_its_serial_run(db):
    t1, t2 = db.begin("stable"), db.begin("stable")
    s1 = ["UPDATE acct SET bal = bal - 50 WHERE id = 1", "UPDATE acct SET bal = bal + 50 WHERE id = 2"]
    s2 = ["UPDATE acct SET bal = bal - 7 WHERE id = 2", "UPDATE acct SET bal = bal + 7 WHERE id = 1"]
    t1.sql(s1[0])
    t2.sql(s2[0])

    def second(tx, statement):
        def fn():
            tx.sql(statement)
            tx.commit()
        return fn

    w1 = Worker(second(t1, s1[1]), "T1")
    wait_until(lambda: waiting_txns(db.locks) == {t1.id}, "T1 waiting for T2's row")
    w2 = Worker(second(t2, s2[1]), "T2")
    w1.join()
    w2.join()
    errors = [w.error for w in (w1, w2) if w.error is not None]
    assert len(errors) == 1 and isinstance(errors[0], DeadlockError)
    assert w1.error is None and isinstance(w2.error, DeadlockError)  # T2 is the younger
    assert f"T{t2.id}, the youngest in the cycle, is the victim" in str(w2.error)
    assert (t1.state, t2.state) == ("committed", "aborted")
    serial = duckdb.connect()
    serial.register("initial", accounts())
    serial.execute("CREATE TABLE acct AS SELECT * FROM initial")
    for statement in s1:
        serial.execute(statement)
    assert balances(db) == dict(serial.execute("SELECT id, bal FROM acct").fetchall())
    assert db.locks.waiting() == [] and db.locks.counters.deadlocks == 1


# -- lost updates ---------------------------------------------------------------------------------
def read_then_write(db, access: str, barrier: threading.Barrier, log: list):
    """Read account 1's balance, wait for the other thread to read it too, write it back + 1;
    a deadlock victim starts again (without the barrier)."""
    def fn():
        first = True
        while True:
            tx = db.begin(access, lock_timeout=WAIT)
            try:
                v = bal(tx, 1)
                if first:
                    first = False
                    barrier.wait()
                tx.sql(f"UPDATE acct SET bal = {v + 1} WHERE id = 1")
                tx.commit()
                return v
            except DeadlockError:
                log.append(tx.id)
    return fn


def test_repeatable_prevents_the_lost_update(db):
    barrier, victims = threading.Barrier(2, timeout=WAIT), []
    workers = [Worker(read_then_write(db, "repeatable", barrier, victims), f"w{i}") for i in range(2)]
    for w in workers:
        w.join()
    assert [w.error for w in workers] == [None, None]
    assert bal(db, 1) == 102  # both increments counted
    assert len(victims) == 1  # the two S -> X upgrades deadlocked once


def test_stable_loses_an_update_in_read_then_write(db):
    barrier = threading.Barrier(2, timeout=WAIT)
    workers = [Worker(read_then_write(db, "stable", barrier, []), f"w{i}") for i in range(2)]
    for w in workers:
        w.join()
    assert [w.error for w in workers] == [None, None]
    assert bal(db, 1) == 101  # cursor stability let both read 100: one increment is lost


@pytest.mark.parametrize("access", ["browse", "stable", "repeatable"])
def test_concurrent_increments_in_one_statement_are_all_counted(db, access):
    def fn():
        for _ in range(5):
            with db.begin(access, lock_timeout=WAIT) as tx:
                tx.sql("UPDATE acct SET bal = bal + 1 WHERE id = 3")
    workers = [Worker(fn, f"inc{i}") for i in range(4)]
    for w in workers:
        w.join(2 * WAIT)
    assert [w.error for w in workers] == [None] * 4
    assert bal(db, 3) == 320


# -- access modes ---------------------------------------------------------------------------------
def test_browse_sees_an_uncommitted_write_stable_does_not(db):
    writer = db.begin("stable")
    writer.sql("UPDATE acct SET bal = 999 WHERE id = 2")
    browser = db.begin("browse")
    assert bal(browser, 2) == 999  # a dirty read, without waiting
    stable = db.begin("stable")
    r = Worker(lambda: bal(stable, 2), "stable reader")
    wait_until(lambda: waiting_txns(db.locks) == {stable.id}, "the STABLE reader waiting")
    writer.abort()
    r.join()
    assert r.outcome == 200  # it never saw 999
    assert bal(browser, 2) == 200
    browser.commit()
    stable.commit()


@pytest.mark.parametrize("outcome", ["abort", "commit"])
@pytest.mark.parametrize("access", ["stable", "repeatable"])
def test_an_uncommitted_delete_is_not_read_the_reader_waits_for_its_end(db, access, outcome):
    deleter = db.begin("stable")
    deleter.sql("DELETE FROM acct WHERE id = 2")
    browser = db.begin("browse")
    assert 2 not in dict(browser.sql("SELECT id, bal FROM acct").to_pylist())  # dirty, no wait
    reader = db.begin(access)
    r = Worker(lambda: dict(reader.sql("SELECT id, bal FROM acct WHERE bal > 0").to_pylist()),
               "reader")
    wait_until(lambda: waiting_txns(db.locks) == {reader.id}, "the reader waiting on the ghost")
    getattr(deleter, outcome)()
    r.join()
    expected = dict(BALANCES)
    if outcome == "commit":
        del expected[2]
    assert r.outcome == expected  # the committed state, never the uncommitted delete
    reader.commit()
    browser.commit()
    assert db.ghosts.within("acct", None, None, 0) == []


def test_a_ghost_outside_the_key_range_makes_nobody_wait(db):
    deleter = db.begin("stable")
    deleter.sql("DELETE FROM acct WHERE id = 20")
    with db.begin("stable") as reader:
        assert reader.sql("SELECT bal FROM acct WHERE id = 1").to_pylist() == [(100,)]
        reader.sql("UPDATE acct SET bal = 7 WHERE id BETWEEN 1 AND 3")
    deleter.abort()
    assert balances(db) == {**BALANCES, 1: 7, 2: 7, 3: 7}


def test_repeatable_blocks_a_phantom_insert_into_the_scanned_range(db):
    reader = db.begin("repeatable")
    count = "SELECT COUNT(*) FROM acct WHERE id BETWEEN 10 AND 20"
    assert reader.sql(count).to_pylist() == [(3,)]
    assert ("acct", 10, 20, "S") in db.locks.held(reader.id)
    inserter = db.begin("stable")
    w = Worker(lambda: inserter.sql("INSERT INTO acct VALUES (15, 15)"), "inserter")
    wait_until(lambda: waiting_txns(db.locks) == {inserter.id}, "the insert waiting for the range")
    assert reader.sql(count).to_pylist() == [(3,)]  # no phantom: the insert still waits
    outside = db.begin("stable")
    outside.sql("INSERT INTO acct VALUES (25, 25)")  # outside the range: not blocked
    outside.commit()
    reader.commit()
    w.join()
    inserter.commit()
    assert balances(db)[15] == 15


def test_stable_lets_the_phantom_in(db):
    reader = db.begin("stable")
    count = "SELECT COUNT(*) FROM acct WHERE id BETWEEN 10 AND 20"
    assert reader.sql(count).to_pylist() == [(3,)]
    assert db.locks.held(reader.id) == []
    with db.begin("stable") as inserter:  # not blocked
        inserter.sql("INSERT INTO acct VALUES (15, 15)")
    assert reader.sql(count).to_pylist() == [(4,)]  # the phantom
    reader.commit()


# -- abort ------------------------------------------------------------------------------------------
def check_abort_undoes(db):
    before = balances(db)
    tx = db.begin("repeatable")
    tx.sql("UPDATE acct SET bal = bal * 2 WHERE id <= 3")
    tx.sql("DELETE FROM acct WHERE id = 10")
    tx.sql("INSERT INTO acct VALUES (40, 4), (41, 5)")
    tx.sql("UPDATE acct SET bal = 0 WHERE id = 41")
    assert balances(db) != before
    tx.abort()
    assert balances(db) == before and tx.state == "aborted"
    assert db.locks.held(tx.id) == []
    with pytest.raises(MinidbError, match="is aborted; begin a new one"):
        tx.sql("SELECT * FROM acct")


def test_abort_undoes_the_changes(db):
    check_abort_undoes(db)


def test_abort_undoes_the_changes_in_a_data_directory(tmp_path):
    with minidb.connect(data_dir=tmp_path / "db") as d:
        d.create_table("acct", accounts())
        check_abort_undoes(d)
    with minidb.connect(data_dir=tmp_path / "db") as d:
        assert balances(d) == BALANCES


def test_an_exception_in_with_aborts(db):
    with pytest.raises(ZeroDivisionError), db.begin() as tx:
        tx.sql("UPDATE acct SET bal = 0 WHERE id = 1")
        1 / 0  # noqa: B018
    assert bal(db, 1) == 100 and tx.state == "aborted"


# -- timeouts and refusals ------------------------------------------------------------------------
def test_a_lock_timeout_is_a_clear_error_and_aborts_the_waiter(db):
    holder = db.begin("stable")
    holder.sql("UPDATE acct SET bal = 0 WHERE id = 2")
    waiter = db.begin("stable", lock_timeout=0.2)
    waiter.sql("UPDATE acct SET bal = 1 WHERE id = 1")
    with pytest.raises(LockTimeoutError, match=rf"T{waiter.id} waited 0.2 s for an X lock on acct "
                                               rf"key 2 on node0 and gave up \(held by T{holder.id}"):
        waiter.sql("UPDATE acct SET bal = 1 WHERE id = 2")
    assert waiter.state == "aborted" and bal(db, 1) == 100  # its first update was undone
    holder.commit()
    assert bal(db, 2) == 0


def test_what_a_transaction_refuses(db):
    with pytest.raises(MinidbError, match="access must be one of browse, stable, repeatable"):
        db.begin("serializable")
    tx = db.begin()
    with pytest.raises(MinidbError, match="outside it with db.sql"):
        tx.sql("CREATE TABLE t2 AS SELECT * FROM acct")
    with pytest.raises(MinidbError, match="may not change acct.id"):
        tx.sql("UPDATE acct SET id = 5 WHERE id = 1")
    with pytest.raises(MinidbError, match="INSERT ... SELECT"):
        tx.sql("INSERT INTO acct SELECT * FROM acct")
    tx.commit()
    with pytest.raises(MinidbError, match="is committed"):
        tx.commit()


def test_joins_lock_whole_tables(db):
    db.create_table("owner", pa.table({"id": pa.array([1, 2], pa.int32()),
                                       "name": pa.array(["ann", "bob"])}))
    reader = db.begin("repeatable")
    rows = reader.sql("SELECT o.name, a.bal FROM acct a JOIN owner o ON a.id = o.id").to_pylist()
    assert sorted(rows) == [("ann", 100), ("bob", 200)]
    assert {h[0] for h in db.locks.held(reader.id)} == {"acct", "owner"}
    writer = db.begin("stable", lock_timeout=0.1)
    with pytest.raises(LockTimeoutError):
        writer.sql("UPDATE owner SET name = 'cy' WHERE id = 1")
    reader.commit()


def test_text_keys(db):
    db.create_table("names", pa.table({"name": pa.array(["a", "b", "c"]), "n": pa.array([1, 2, 3])}))
    tx = db.begin("repeatable")
    tx.sql("UPDATE names SET n = 20 WHERE name = 'b'")
    tx.sql("DELETE FROM names WHERE name >= 'c'")
    assert ("names", "b", "b", "X") in db.locks.held(tx.id)
    tx.abort()
    assert sorted(db.sql("SELECT * FROM names").to_pylist()) == [("a", 1), ("b", 2), ("c", 3)]


# -- the experiment -------------------------------------------------------------------------------
def test_access_modes_experiment_counts_and_keeps_the_money_under_repeatable():
    from minidb.experiments.registry import get_experiment

    rows = get_experiment("ingres.locking").run(
        {"threads": 3, "transfers": 3, "accounts": 6, "hot": 3, "access": ["repeatable", "stable"]})
    got = {(r["row"], r["metric"]): r["value"] for r in rows}
    for level in ("low", "high"):
        assert got[(f"repeatable_{level}", "commits")] == 9
        assert got[(f"repeatable_{level}", "money_lost")] == 0
        assert got[(f"stable_{level}", "commits")] == 9
    assert {r["paper"] for r in rows} == {"ingres"} and all(r["reference"] == "" for r in rows)


@pytest.mark.parametrize("timeout", [-1, 0, "5", True, float("nan"), float("inf")])
def test_a_bad_lock_timeout_is_a_clear_error(db, timeout):
    # inf was taken, and the first wait died in the thread library (OverflowError)
    with pytest.raises(MinidbError, match="lock_timeout is a finite number of seconds above 0"):
        db.begin(lock_timeout=timeout)


def test_a_transaction_used_by_a_second_thread_while_it_waits_is_refused(db):
    """Committing T from another thread while T's statement waited for a lock released the
    locks under the waiting statement: it then timed out ("held by nobody now") with T already
    committed. Now the second thread gets a clear error and T goes on."""
    holder = db.begin()
    holder.sql("UPDATE acct SET bal = bal + 1 WHERE id = 1")
    tx = db.begin(lock_timeout=WAIT)
    w = Worker(lambda: tx.sql("UPDATE acct SET bal = bal + 100 WHERE id = 1"), "waiter")
    wait_until(lambda: tx.id in waiting_txns(db.locks), "the waiter queued")
    for misuse in (tx.commit, tx.abort, lambda: tx.sql("SELECT * FROM acct")):
        with pytest.raises(MinidbError, match=rf"T{tx.id} is in use by another thread"):
            misuse()
    holder.commit()
    assert w.join().error is None and tx.state == "active"
    tx.commit()
    assert balances(db)[1] == 201 and db.locks.held(tx.id) == []


MIXED_TYPES = ["SELECT * FROM acct WHERE id = 'abc'", "SELECT * FROM acct WHERE id > 1 AND id < 'x'",
               "SELECT * FROM acct WHERE id IN (1, 'x')", "SELECT * FROM acct WHERE id BETWEEN 'a' AND 5"]


@pytest.mark.parametrize("access", ["stable", "repeatable"])
def test_a_read_comparing_the_key_with_text_is_the_engines_schema_error(db, access):
    """The key bounds of a read were compared before the engine checked the statement: a
    TypeError ('<' between str and int) from key_bounds or from the lock manager."""
    other = db.begin("repeatable")
    other.sql("SELECT * FROM acct WHERE id BETWEEN 1 AND 2")  # a range lock to compare with
    tx = db.begin(access)
    for q in MIXED_TYPES:
        with pytest.raises(SchemaError, match="cannot compare text with a number"):
            tx.sql(q)
    assert tx.state == "active"
    tx.commit()
    other.commit()


def test_close_waits_for_the_statement_another_thread_is_running():
    """close() removed the pages under a statement of another thread's transaction, which then
    died with a FileNotFoundError from the disk layer. It now waits for the engine mutex, which
    a running statement holds (here the test holds it, as a statement does)."""
    d = minidb.connect()
    d.create_table("acct", accounts())
    tx = d.begin()
    statement_runs, statement_may_end = threading.Event(), threading.Event()

    def statement():
        with d._engine:
            statement_runs.set()
            assert statement_may_end.wait(WAIT)
            return balances(d)  # the pages are still there

    w = Worker(statement, "statement")
    assert statement_runs.wait(WAIT)
    closing = Worker(d.close, "close")
    closing.thread.join(0.2)
    assert closing.thread.is_alive(), "close did not wait for the running statement"
    statement_may_end.set()
    assert w.join().error is None and w.outcome == BALANCES
    assert closing.join().error is None
    with pytest.raises(MinidbError, match="this database is closed"):
        tx.sql("SELECT * FROM acct")
    tx.abort()


def test_abort_after_the_database_was_closed_is_quiet():
    """The undo read the pages of a closed database (FileNotFoundError from the disk layer)."""
    d = minidb.connect()
    d.create_table("acct", accounts())
    tx = d.begin()
    tx.sql("UPDATE acct SET bal = 0 WHERE id = 1")
    d.close()
    with pytest.raises(MinidbError, match="this database is closed"):
        tx.commit()
    tx.abort()
    assert tx.state == "aborted"
