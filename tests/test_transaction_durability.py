"""Transactions in a data directory survive a crash whole or not at all (``minidb.txn.txn_log``).

The strongest check is a real crash: a child process runs bank transfers from several threads
(each transaction: take from one account, give to another, insert a history row; some abort on
purpose, some are refused by deadlock detection) and is killed with ``SIGKILL`` at a random
moment. After reopening: the money adds up (no transfer half applied), every transfer the child
reported committed is in the history (no committed transaction lost), and every account's
balance is exactly what the history explains (no uncommitted transfer left). Done on one node and
on three nodes of the parallel engine, round after round on the same directory. Also here: the
log's records and forces, a crash in the middle of restart recovery, and what abort leaves.
"""

from __future__ import annotations

import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.datagen import wisconsin
from minidb.errors import MinidbError
from minidb.txn.txn_log import END, TXN_LOG_FILE, WRITE, TransactionLog, decode_write, encode_write

REPO = Path(__file__).resolve().parents[1]
ACCOUNTS, START = 40, 1000


# -- the log's records --------------------------------------------------------------------------

def test_a_write_record_gives_back_its_rows_and_keys():
    rows = np.asarray(minidb.connect().create_table("w", wisconsin(50, seed=4)).read_all())
    for keys in ([1, 2, 3], ["AAAA", "b"], [1.5, -0.0], []):
        txn, table, key, got_keys, before = decode_write(encode_write(7, "w", "unique1", keys, rows))
        assert (txn, table, key, got_keys) == (7, "w", "unique1", keys)
        assert before.dtype == rows.dtype and np.array_equal(before, rows)
    nan = decode_write(encode_write(1, "t", "f", [math.nan], rows[:0]))[3]
    assert math.isnan(nan[0])


def test_losers_are_the_transactions_written_and_not_ended(tmp_path):
    log = TransactionLog(tmp_path)
    none = np.empty(0, dtype=[("k", "<i8")])
    log.write(1, "t", "k", [1], none)
    log.write(2, "t", "k", [2], none)
    log.write(1, "t", "k", [3], none)
    log.end(2, "commit")
    log.end(9, "commit")  # wrote nothing: nothing logged
    log.close()
    again = TransactionLog(tmp_path)
    losers = again.losers()
    assert list(losers) == [1] and [r[2] for r in losers[1]] == [[1], [3]]
    kinds = [r.type for r in again.log.records()]
    assert kinds == [WRITE, WRITE, WRITE, END]
    again.reset()
    assert again.losers() == {} and again.log.empty
    again.close()


def test_each_write_and_the_commit_are_forced_and_a_reader_logs_nothing(tmp_path):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("acct", _accounts())
        log = db.txn_log.counters
        with db.begin(access="repeatable") as tx:
            tx.sql("SELECT * FROM acct WHERE id < 5")
        assert (log.records, log.forces) == (0, 0)
        with db.begin() as tx:
            tx.sql("UPDATE acct SET bal = bal - 5 WHERE id = 1")
            tx.sql("UPDATE acct SET bal = bal + 5 WHERE id = 2")
        assert (log.records, log.forces) == (3, 3)  # two WRITEs before the writes, one END


def _concurrent_commits(db, threads: int, each: int) -> None:
    def work(w: int) -> None:
        for i in range(each):
            with db.begin() as tx:  # rows of its own: no lock waits, the commits overlap
                tx.sql(f"UPDATE acct SET bal = bal + 1 WHERE id = {w * 4 + i % 4}")

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


@pytest.mark.parametrize("group", [1, 4])
def test_group_commit_shares_forces_and_keeps_every_commit(tmp_path, group):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("acct", _accounts())
        db.txn_log.set_group_commit(group, 0.05)
        _concurrent_commits(db, threads=8, each=10)
        log = db.txn_log
        assert log.commits == 80
        if group == 1:  # alone: one force per WRITE and one per END
            assert (log.commit_forces, log.counters.forces) == (80, 160)
        else:  # an END rides on the group's force, or on another thread's WRITE force
            assert log.commit_forces < 80 and log.counters.forces < 160
    with minidb.connect(data_dir=tmp_path) as db:
        assert db.recovery is None
        assert sum(dict(_rows(db, "acct")).values()) == ACCOUNTS * START + 80


def test_a_lone_commit_under_group_commit_is_forced_when_its_wait_ends(tmp_path):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("acct", _accounts())
        db.txn_log.set_group_commit(8, 0.01)
        with db.begin() as tx:
            tx.sql("UPDATE acct SET bal = 0 WHERE id = 1")
        assert (db.txn_log.commits, db.txn_log.commit_forces) == (1, 1)


def test_closing_forces_a_commit_that_waits_for_its_group(tmp_path):
    db = minidb.connect(data_dir=tmp_path)
    db.create_table("acct", _accounts())
    db.txn_log.set_group_commit(8, 10)  # nobody else comes: it would wait 10 s
    tx = db.begin()
    tx.sql("UPDATE acct SET bal = 0 WHERE id = 1")
    waiter = threading.Thread(target=tx.commit)
    waiter.start()
    while db.txn_log.commits == 0:
        time.sleep(0.01)
    db.close()
    waiter.join(timeout=5)
    assert not waiter.is_alive() and tx.state == "committed"
    with minidb.connect(data_dir=tmp_path) as again:
        assert again.recovery is None and dict(_rows(again, "acct"))[1] == 0


@pytest.mark.parametrize("size,wait", [(0, 0.01), (2.5, 0.01), (True, 0.01), (2, 0), (2, -1),
                                       (2, 60), (2, "x")])
def test_group_commit_settings_are_checked(tmp_path, size, wait):
    with minidb.connect(data_dir=tmp_path) as db:
        with pytest.raises(MinidbError, match="group commit"):
            db.txn_log.set_group_commit(size, wait)


# -- what a restart rolls back ------------------------------------------------------------------

def _accounts() -> pa.Table:
    return pa.table({"id": pa.array(range(ACCOUNTS), pa.int64()),
                     "bal": pa.array([START] * ACCOUNTS, pa.int64())})


def _history() -> pa.Table:
    return pa.table({"tid": pa.array([-1], pa.int64()), "src": pa.array([0], pa.int64()),
                     "dst": pa.array([0], pa.int64()), "amt": pa.array([0], pa.int64())})


def _open(path: Path, nodes: int):
    return minidb.connect(data_dir=path) if nodes == 1 else \
        minidb.connect(nodes=nodes, data_dir=path)


def _create(db, nodes: int) -> None:
    if nodes == 1:
        db.create_table("acct", _accounts())
        db.create_table("hist", _history())
    else:
        db.create_table("acct", _accounts(), partition="hash(id)")
        db.create_table("hist", _history(), partition="hash(tid)")


def _rows(db, table: str) -> list[tuple]:
    return sorted(db.sql(f"SELECT * FROM {table}").to_pylist())


@pytest.mark.parametrize("nodes", [1, 3])
def test_a_transaction_not_committed_at_close_is_rolled_back_at_reopen(tmp_path, nodes):
    db = _open(tmp_path, nodes)
    _create(db, nodes)
    with db.begin() as tx:
        tx.sql("UPDATE acct SET bal = bal - 10 WHERE id = 1")
        tx.sql("UPDATE acct SET bal = bal + 10 WHERE id = 2")
    committed = _rows(db, "acct")
    tx = db.begin()
    tx.sql("UPDATE acct SET bal = 0 WHERE id = 3")
    tx.sql("DELETE FROM acct WHERE id = 4")
    tx.sql("INSERT INTO hist VALUES (7, 3, 4, 1000)")
    assert _rows(db, "acct") != committed
    db.close()
    with pytest.raises(MinidbError, match="closed"):
        tx.commit()
    with _open(tmp_path, nodes) as db:
        assert "rolled back 1 unfinished transaction" in db.recovery
        assert "3 write(s) undone" in db.recovery
        assert _rows(db, "acct") == committed
        assert _rows(db, "hist") == [(-1, 0, 0, 0)]
    with _open(tmp_path, nodes) as db:  # nothing is rolled back twice
        assert db.recovery is None and _rows(db, "acct") == committed


@pytest.mark.parametrize("nodes", [1, 3])
def test_an_abort_is_not_undone_again_over_a_later_commit(tmp_path, nodes):
    with _open(tmp_path, nodes) as db:
        _create(db, nodes)
        tx = db.begin()
        tx.sql("UPDATE acct SET bal = 1 WHERE id = 5")
        tx.abort()
        with db.begin() as tx:  # the same row, after the abort released it
            tx.sql("UPDATE acct SET bal = 2 WHERE id = 5")
    with _open(tmp_path, nodes) as db:
        assert db.recovery is None
        assert dict(_rows(db, "acct"))[5] == 2


# -- real crashes -------------------------------------------------------------------------------

CHILD = textwrap.dedent("""
    import os, random, sys, threading, traceback
    import minidb
    from minidb.errors import LockError
    path, nodes, seed, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    db = minidb.connect(data_dir=path) if nodes == 1 else minidb.connect(nodes=nodes, data_dir=path)
    db.txn_log.set_group_commit(int(sys.argv[5]), 0.02)
    start = db.sql("SELECT MAX(tid) FROM hist").to_pylist()[0][0] + 1
    out = threading.Lock()
    print("ready", flush=True)

    def transfers(w):
        rng = random.Random(seed * 100 + w)
        n = 0
        while True:
            tid = start + w * 1_000_000 + n
            a, b = rng.sample(range({accounts}), 2)
            amt = rng.randint(1, 50)
            tx = db.begin(lock_timeout=20)
            try:
                tx.sql(f"UPDATE acct SET bal = bal - {amt} WHERE id = {a}")
                tx.sql(f"UPDATE acct SET bal = bal + {amt} WHERE id = {b}")
                tx.sql(f"INSERT INTO hist VALUES ({tid}, {a}, {b}, {amt})")
                if rng.random() < 0.2:
                    tx.abort()  # on purpose: its rows must come back
                    continue
                tx.commit()
            except LockError:  # refused by deadlock detection: already aborted
                continue
            with out:
                print(tid, flush=True)
            n += 1

    def worker(w):
        try:
            transfers(w)
        except BaseException:  # a worker that dies ends the child: the test must see it
            traceback.print_exc()
            os._exit(3)

    for w in range(threads):
        threading.Thread(target=worker, args=(w,), daemon=True).start()
    threading.Event().wait()
""").replace("{accounts}", str(ACCOUNTS))


def _crash_round(path: Path, nodes: int, seed: int, rng: random.Random, group: int = 1) -> list[int]:
    """Run the child until it is killed after a random time; the transfers it said committed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(nodes), str(seed), "3",
                              str(group)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = child.stdout.readline()
        assert ready == "ready\n", ready + child.stderr.read()
        time.sleep(rng.uniform(0.05, 1.5))
    finally:
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL, err
    return [int(line) for line in out.split()]


def _check_after_crash(path: Path, nodes: int, committed: set[int]) -> None:
    with _open(path, nodes) as db:
        balances = dict(_rows(db, "acct"))
        history = _rows(db, "hist")
    assert len(balances) == ACCOUNTS
    assert sum(balances.values()) == ACCOUNTS * START  # no transfer half applied
    tids = [h[0] for h in history]
    assert len(tids) == len(set(tids))
    assert committed <= set(tids), f"committed transfers lost: {sorted(committed - set(tids))[:5]}"
    expected = dict.fromkeys(range(ACCOUNTS), START)
    for _, src, dst, amt in history:
        expected[src] -= amt
        expected[dst] += amt
    assert balances == expected  # nothing the history does not explain


def _crash_rounds(path: Path, nodes: int, seed: int, rounds: int, group: int) -> None:
    with _open(path, nodes) as db:
        _create(db, nodes)
    rng, committed = random.Random(seed), set()
    for r in range(rounds):
        committed |= set(_crash_round(path, nodes, seed * 10 + r, rng, group))
        _check_after_crash(path, nodes, committed)
    assert committed, "the child committed nothing before it was killed"


@pytest.mark.parametrize("nodes,seed,rounds,group", [
    (1, 1, 4, 1), (3, 2, 3, 1), (1, 6, 3, 3),
    pytest.param(1, 3, 12, 1, marks=pytest.mark.slow),
    pytest.param(3, 4, 10, 1, marks=pytest.mark.slow),
    pytest.param(2, 5, 10, 1, marks=pytest.mark.slow),
    pytest.param(1, 7, 10, 3, marks=pytest.mark.slow),
    pytest.param(3, 8, 8, 3, marks=pytest.mark.slow),
])
def test_kill_9_during_concurrent_transfers_loses_no_commit_and_keeps_no_loser(tmp_path, nodes,
                                                                               seed, rounds, group):
    """``group``: commits per group force (group commit); 1 forces each commit alone."""
    _crash_rounds(tmp_path, nodes, seed, rounds, group)


RECOVERY_KILLER = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.txn import transaction
    real, done = transaction.undo_write, [0]
    def undo_write(db, u):  # killed after this many undo steps of restart recovery
        real(db, u)
        done[0] += 1
        if done[0] >= int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
    transaction.undo_write = undo_write
    minidb.connect(data_dir=sys.argv[1])
    print("finished", flush=True)
""")

LOSER = textwrap.dedent("""
    import os, signal, sys
    import minidb
    db = minidb.connect(data_dir=sys.argv[1])
    tx = db.begin()
    for i in range(6):
        tx.sql(f"UPDATE acct SET bal = bal + {i + 1} WHERE id < {5 * (i + 1)}")
    tx.sql("DELETE FROM acct WHERE id >= 35")
    tx.sql("INSERT INTO acct VALUES (100, 1)")
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_crash_during_restart_recovery_is_recovered_again(tmp_path):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("acct", _accounts())
        before = _rows(db, "acct")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    loser = subprocess.run([sys.executable, "-c", LOSER, str(tmp_path)], env=env,
                           capture_output=True, text=True, timeout=300)
    assert loser.returncode == -signal.SIGKILL, loser.stderr
    log = TransactionLog(tmp_path)
    assert [len(w) for w in log.losers().values()] == [8]
    log.close()
    for k in (2, 5):  # killed twice in the middle of the undo, at two points
        again = subprocess.run([sys.executable, "-c", RECOVERY_KILLER, str(tmp_path), str(k)],
                               env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == -signal.SIGKILL, again.stderr
    with minidb.connect(data_dir=tmp_path) as db:
        assert "8 write(s) undone" in db.recovery
        assert _rows(db, "acct") == before
    assert (tmp_path / TXN_LOG_FILE).stat().st_size == 0


# -- what abort and restart put back, NULL keys included ----------------------------------------

def _random_table(rng: random.Random) -> pa.Table:
    n = rng.randint(0, 12)
    keys = [rng.choice([None, 0, 1, 2, 3, 5]) for _ in range(n)]
    return pa.table({"k": pa.array(keys, pa.int64()),
                     "v": pa.array([rng.randint(0, 50) for _ in range(n)], pa.int64())})


def _random_writes(rng: random.Random) -> list[str]:
    pool = ["UPDATE t SET v = v + 1", "UPDATE t SET v = 0 WHERE k IS NULL",
            "UPDATE t SET v = v * 2 WHERE k = 0", "DELETE FROM t WHERE v > 25",
            "DELETE FROM t WHERE k IS NULL", "DELETE FROM t WHERE k = 0",
            "INSERT INTO t VALUES (NULL, 99)", "INSERT INTO t VALUES (0, 98)",
            "INSERT INTO t VALUES (7, 97), (NULL, 96)", "UPDATE t SET v = 1 WHERE k < 3"]
    return rng.sample(pool, rng.randint(1, 5))


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_abort_and_restart_put_back_every_row_null_keys_included(tmp_path, nodes, seed):
    rng = random.Random(seed * 7 + nodes)
    data, writes = _random_table(rng), _random_writes(rng)
    for how in ("abort", "restart"):
        path = tmp_path / how
        db = _open(path, nodes)
        if nodes == 1:
            db.create_table("t", data)
        else:
            db.create_table("t", data, partition="hash(k)")
        before = sorted(db.sql("SELECT * FROM t").to_pylist(), key=str)
        tx = db.begin()
        for w in writes:
            tx.sql(w)
        if how == "abort":
            tx.abort()
            assert sorted(db.sql("SELECT * FROM t").to_pylist(), key=str) == before, writes
            db.close()
            continue
        db.close()
        with _open(path, nodes) as again:
            assert sorted(again.sql("SELECT * FROM t").to_pylist(), key=str) == before, writes


def test_a_loser_on_a_table_dropped_or_recreated_since_is_skipped_and_named(tmp_path):
    db = minidb.connect(data_dir=tmp_path)
    db.create_table("acct", _accounts())
    db.create_table("hist", _history())
    tx = db.begin()
    tx.sql("UPDATE acct SET bal = 0 WHERE id = 1")
    tx.sql("INSERT INTO hist VALUES (5, 1, 2, 3)")
    db.drop_table("acct")  # DDL outside the transaction, while it lives
    db.drop_table("hist")
    db.create_table("hist", pa.table({"tid": pa.array([1], pa.int64())}))  # other columns
    db.close()
    with minidb.connect(data_dir=tmp_path) as again:
        assert "2 write(s) undone" not in again.recovery
        assert "not restored: acct, hist" in again.recovery
        assert _rows(again, "hist") == [(1,)]
