"""A randomized audit of concurrency control, on one node and on ``connect(nodes=2)`` inline.

Four threads run seeded random transactions under one access mode against ``acct`` (ids 1..6,
balance 100 each, ``cnt`` counting the updates of a row):

* *transfer*: read a row, move an amount from it to another (``bal = bal - d`` / ``bal + d``,
  ``cnt + 1`` each); under REPEATABLE half of them read both balances first and write the values
  read (read-then-write, safe only because the read locks are kept); some run a failing
  statement in between (a statement error leaves the transaction active);
* *move*: X-lock a row, read it, delete it and insert it again (a ghost meanwhile), sometimes
  with an extra row inserted (and deleted) at a key of its own;
* *bump*: ``cnt + 1`` on the rows of an IN list, OR or key range;
* *reader*: the sum twice, a key range twice, the count of the extra rows twice.

A quarter of them abort; deadlock victims and lock timeouts abort by themselves. Checked: every
thread ends (no hang), a victim's transaction is aborted and says why; STABLE and REPEATABLE
readers see every balance (sum 600, ids 1..6), REPEATABLE ones the same rows twice and no
phantom; at the end the balances and counters are those of the committed transactions applied
in any serial order (so nothing of an aborted one is left, and no update is lost), and no lock
or ghost is left behind. ``-m slow`` sweeps more seeds and the three partitionings.
"""

from __future__ import annotations

import random
import threading

import pyarrow as pa
import pytest

import minidb
from minidb.errors import DeadlockError, LockError, LockTimeoutError, MinidbError

N, START = 6, 100
ACCESS = ["browse", "stable", "repeatable"]
PARTITION = {"range": f"range(id: {N // 2 + 1})", "hash": "hash(id)", "rr": "round_robin"}
FAILING = ["SELECT nosuch FROM acct", "UPDATE acct SET bal = 'x' WHERE id = 2",
           "INSERT INTO acct VALUES (1, 2)", "DELETE FROM nosuch"]


def make(nodes: int, partition: str):
    table = pa.table({"id": pa.array(range(1, N + 1), pa.int32()),
                      "bal": pa.array([START] * N, pa.int32()),
                      "cnt": pa.array([0] * N, pa.int32())})
    if nodes == 1:
        db = minidb.connect()
        db.create_table("acct", table)
    else:
        db = minidb.connect(nodes=nodes)
        db.create_table("acct", table, partition=PARTITION[partition])
    return db


class Run:
    """One randomized run: ``threads`` threads of ``per_thread`` transactions each."""

    def __init__(self, db, access: str, seed: int, lock_timeout: float = 3.0):
        self.db, self.access, self.seed, self.timeout = db, access, seed, lock_timeout
        self.mutex = threading.Lock()
        self.problems: list[str] = []
        self.moved: list[tuple[int, int, int]] = []  # committed transfers: (from, to, amount)
        self.bumped: list[list[int]] = []  # committed bumps: the ids they counted
        self.extra = iter(range(100, 10**6))  # keys of the extra rows, one per use
        self.outcomes: dict[str, int] = {}

    def note(self, what: str) -> None:
        with self.mutex:
            self.outcomes[what] = self.outcomes.get(what, 0) + 1

    def transaction(self, rng: random.Random, body) -> None:
        """Run ``body(tx)`` in a new transaction; abort a quarter, commit the rest."""
        tx = self.db.begin(access=self.access, lock_timeout=self.timeout)
        try:
            done = body(tx)
            if rng.random() < 0.25:
                tx.abort()
                self.note("aborted")
                return
            with self.mutex:  # commit and record as one step: the record order is a serial one
                tx.commit()
                if done is not None:
                    done()
            self.note("committed")
        except (DeadlockError, LockTimeoutError) as e:
            if tx.state != "aborted":
                self.problems.append(f"{type(e).__name__} left T{tx.id} {tx.state}")
            if isinstance(e, DeadlockError) and "victim" not in str(e):
                self.problems.append(f"a deadlock error that names no victim: {e}")
            self.note(type(e).__name__)

    def failing_statement(self, rng: random.Random, tx) -> None:
        try:
            tx.sql(rng.choice(FAILING))
        except LockError:  # it may still deadlock while it takes its locks
            raise
        except MinidbError:
            if tx.state != "active":
                self.problems.append(f"a statement error left T{tx.id} {tx.state}")
        else:
            self.problems.append("a failing statement ran")

    def transfer(self, rng: random.Random) -> None:
        a, b = rng.sample(range(1, N + 1), 2)
        d = rng.randint(1, 20)

        def body(tx):
            if self.access == "repeatable" and rng.random() < 0.5:
                ((ba,),) = tx.sql(f"SELECT bal FROM acct WHERE id = {a}").to_pylist()
                ((bb,),) = tx.sql(f"SELECT bal FROM acct WHERE id = {b}").to_pylist()
                tx.sql(f"UPDATE acct SET bal = {ba - d}, cnt = cnt + 1 WHERE id = {a}")
                writes = f"UPDATE acct SET bal = {bb + d}, cnt = cnt + 1 WHERE id = {b}"
            else:
                tx.sql(f"SELECT bal FROM acct WHERE id = {a}")
                tx.sql(f"UPDATE acct SET bal = bal - {d}, cnt = cnt + 1 WHERE id = {a}")
                writes = f"UPDATE acct SET bal = bal + {d}, cnt = cnt + 1 WHERE id = {b}"
            if rng.random() < 0.2:
                self.failing_statement(rng, tx)
            tx.sql(writes)
            return lambda: self.moved.append((a, b, d))

        self.transaction(rng, body)

    def move(self, rng: random.Random) -> None:
        a = rng.randint(1, N)

        def body(tx):
            tx.sql(f"UPDATE acct SET cnt = cnt WHERE id = {a}")  # X-lock it before reading it
            ((bal, cnt),) = tx.sql(f"SELECT bal, cnt FROM acct WHERE id = {a}").to_pylist()
            tx.sql(f"DELETE FROM acct WHERE id = {a}")
            if rng.random() < 0.3:
                k = next(self.extra)
                tx.sql(f"INSERT INTO acct VALUES ({k}, 0, 0)")
                if rng.random() < 0.5:
                    tx.sql(f"DELETE FROM acct WHERE id = {k}")
            tx.sql(f"INSERT INTO acct VALUES ({a}, {bal}, {cnt})")

        self.transaction(rng, body)

    def bump(self, rng: random.Random) -> None:
        a, b = sorted(rng.sample(range(1, N + 1), 2))
        where, ids = rng.choice([(f"id IN ({a}, {b})", [a, b]), (f"id = {a} OR id = {b}", [a, b]),
                                 (f"id BETWEEN {a} AND {b}", list(range(a, b + 1))),
                                 (f"id >= {a} AND id <= {b}", list(range(a, b + 1)))])

        def body(tx):
            tx.sql(f"UPDATE acct SET cnt = cnt + 1 WHERE {where}")
            seen = sorted(r[0] for r in tx.sql(f"SELECT id FROM acct WHERE {where}").to_pylist())
            if seen != ids:
                self.problems.append(f"after UPDATE ... WHERE {where} it read {seen}")
            return lambda: self.bumped.append(ids)

        self.transaction(rng, body)

    def reader(self, rng: random.Random) -> None:
        def body(tx):
            def once():
                return (tx.sql("SELECT SUM(bal) FROM acct").to_pylist()[0][0],
                        sorted(tx.sql("SELECT id, bal FROM acct WHERE id BETWEEN 2 AND 4").to_pylist()),
                        tx.sql("SELECT COUNT(*) FROM acct WHERE id >= 100").to_pylist()[0][0],
                        sorted(r[0] for r in tx.sql("SELECT id FROM acct WHERE id <= 10").to_pylist()))
            first, second = once(), once()
            if self.access == "repeatable" and first != second:
                self.problems.append(f"a REPEATABLE reader read {first}, then {second}")
            if self.access != "browse":
                for total, _, _, ids in (first, second):
                    if total != N * START or ids != list(range(1, N + 1)):
                        self.problems.append(f"a {self.access} reader saw sum {total}, ids {ids}")

        self.transaction(rng, body)

    def go(self, threads: int = 4, per_thread: int = 6, wait: float = 60.0) -> None:
        kinds = [self.reader, self.reader, self.transfer, self.transfer, self.transfer,
                 self.move, self.move, self.bump, self.bump]

        def worker(i: int) -> None:
            rng = random.Random(self.seed * 1000 + i)
            try:
                for _ in range(per_thread):
                    rng.choice(kinds)(rng)
            except Exception as e:  # noqa: BLE001 - reported as a problem of the run
                self.problems.append(f"thread {i}: {type(e).__name__}: {e}")

        ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(wait)
        hung = [t.name for t in ts if t.is_alive()]
        assert not hung, f"threads {hung} did not finish in {wait} s"

    def check_final(self, managers, ghosts) -> None:
        rows = {r[0]: (r[1], r[2]) for r in self.db.sql("SELECT id, bal, cnt FROM acct").to_pylist()}
        bal = {k: START for k in range(1, N + 1)}
        cnt = {k: 0 for k in range(1, N + 1)}
        for a, b, d in self.moved:
            bal[a] -= d
            bal[b] += d
            cnt[a] += 1
            cnt[b] += 1
        for ids in self.bumped:
            for k in ids:
                cnt[k] += 1
        assert {k: v for k, v in rows.items() if k <= N} == {k: (bal[k], cnt[k]) for k in bal}, \
            "the final state is not the serial run of the committed transactions"
        assert all(v == (0, 0) for k, v in rows.items() if k > N)
        for m in managers:  # every transaction ended: its locks (and queued requests) are gone
            assert not m._by_txn, f"locks left behind on {m.name}: {m}"
        assert not ghosts._keys, "ghosts left behind"


def audit(nodes: int, access: str, seed: int, partition: str = "range") -> dict[str, int]:
    db = make(nodes, partition)
    try:
        run = Run(db, access, seed)
        run.go()
        assert not run.problems, "\n".join(run.problems)
        managers = [db.locks] if nodes == 1 else [db.backend.nodes[n].locks for n in db.disk]
        run.check_final(managers, db.ghosts)
        return run.outcomes
    finally:
        db.close()


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("access", ACCESS)
def test_random_transactions_keep_the_money_and_every_committed_update(nodes, access):
    outcomes = audit(nodes, access, seed=1)
    assert outcomes.get("committed", 0) > 0


@pytest.mark.slow
@pytest.mark.parametrize("partition", list(PARTITION))
@pytest.mark.parametrize("access", ACCESS)
def test_random_transactions_sweep(access, partition):
    for seed in range(2, 12):
        audit(1, access, seed)
        audit(2, access, seed, partition)
