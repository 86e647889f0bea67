"""Concurrent transactions on the parallel engine: locks on the nodes, deadlocks at the scheduler.

``pdb.begin(access=...)`` on a ``ParallelDatabase`` gives a ``ParallelTransaction``, with the
surface and the semantics of the single-node ``minidb.txn.transaction.Transaction`` (read its
docstring first: access modes, rounds, logical undo); several threads may each run one::

    pdb = minidb.connect(nodes=2)
    with pdb.begin(access="repeatable") as tx:
        tx.sql("UPDATE acct SET bal = bal - 10 WHERE id = 1")
        tx.sql("UPDATE acct SET bal = bal + 10 WHERE id = 7")

NonStop SQL (Englert et al. 1989, Section 2) locks rows and key ranges, with BROWSE, STABLE and
REPEATABLE access, on the disk process that owns the data; Gamma (DeWitt et al. 1988, Section 1)
leaves global deadlock detection to its scheduler. So here:

* **Locks live where the data lives.** Every node has its own ``LockManager`` (``Node.locks``)
  for the rows of its fragments. A statement in a transaction runs in rounds, as on one node:
  under the coordinator's statement mutex each disk node runs the key query (``SELECT key FROM
  t WHERE ...``) on its own fragment (``Node.txn_keys``); with the mutex released the
  transaction asks each node to lock the keys it found there (``Node.txn_lock_rows``), and the
  request waits *on that node*; the node keeps each granted request and hands back a plain id,
  the handle ``Node.txn_release`` takes back (a Request object sent over Ray would come back a
  copy, and a lock manager knows its requests by identity); repeat until no node finds a new
  key, and in that round run the statement as an ordinary parallel statement while the locks
  are held. A REPEATABLE statement
  first locks the key range of its WHERE clause on every disk node (a row of the range may be
  inserted on any of them). An INSERT locks its new keys in X on the node its partitioner sends
  each row to (hash, range and predicate partitioning), or on every disk node when the placement
  is not known in advance (round-robin). The lock key of a table is that of its fragments
  (``lock_key``: the clustering or hash key it was stored with, or the first column).
* **Undo.** Before each write the transaction reads, with a parallel SELECT, the rows having the
  keys it X-locked (logical before-images); ``abort`` deletes the rows with those keys and
  inserts the before-images (newest write first, one statement per write, ``_put_back``) while it
  still holds its locks, then releases them on every node. ``commit`` releases them on every
  node (strict two-phase locking).
* **Deadlocks.** A cycle of waits on one node is found by that node's manager the moment the
  wait begins, as on one node. A cycle through several nodes (T1 waits for T2 on node 1, T2 for
  T1 on node 0) is acyclic on each node; the coordinator, Gamma's scheduler, runs
  ``minidb.txn.deadlock.GlobalDeadlockDetector`` over the nodes' managers (``NodeLocks``: each
  reads a node's wait-for edges and refuses a victim there by a call to the node, on both
  backends) every ``ParallelDatabase.deadlock_interval`` seconds (0.05) while any
  transaction's lock request is in flight, and refuses the youngest transaction of a cycle where
  it waits: its ``sql`` raises ``DeadlockError`` naming the cycle (transactions, locks, nodes)
  and the transaction is aborted.
  A wait longer than ``lock_timeout`` raises ``LockTimeoutError`` (it must be below the nodes'
  phase timeout, ``connect(timeout=...)``, checked by ``begin``).

Statements of all threads (``pdb.sql`` too) run one at a time under the coordinator's statement
mutex (``ParallelDatabase._engine``), as the single-node engine's ``_engine``; lock waits
happen with it released. Statements outside a transaction (``pdb.sql``) take no locks, as
before: they neither wait for a transaction nor stop one.

Threads of the nodes. Both backends, the same code. A lock wait occupies a thread of its node
for up to ``lock_timeout``: a thread of a Ray actor (threaded, ``max_concurrency``) or of the
inline backend's pool. Enough waits could take every thread a node needs for a statement's
phase (its operators and its peers' split tables), and that phase would stall behind waits
that only a later statement can end. So waits get threads of their own: at most
``minidb.cluster.backends.LOCK_WAITS`` (8) transactions of a database have lock requests in
flight at once (``SchedulerDeadlocks.asking``, a semaphore at the coordinator: a transaction
asks the nodes one after another, so one slot each), and every node serves that many calls
beyond those of its work (the actors' ``max_concurrency``, the inline pool's workers). A
ninth transaction that needs a lock waits at the coordinator for a slot, at most its
``lock_timeout`` (``LockTimeoutError`` then, naming the slots). Bounding at the coordinator,
rather than raising the actors' concurrency with the number of transactions, keeps the actors
(pooled between machines, ``node_pool``) of a fixed width; refusing ``begin`` instead would
refuse transactions that never wait. The calls that never wait (the key queries, releases, the
detector's) use the nodes' ordinary threads and end at once.

Refused, and said so: DDL, INSERT ... SELECT and DISTRIBUTE in a transaction; an UPDATE that
changes the lock key or a partitioning column (the row would move to another node, away from
its locks); tables whose placement changes as they grow (``lh_star``). Durability: in a data
directory each statement (and each undo step) commits on every node by the commit protocol on
its own, and the transaction's undo records are forced first to the coordinator's transaction
log (``txn.log`` in the directory, ``minidb.txn.txn_log``; it lives in this process, so the same
on both backends); ``commit`` forces an END record there, the transaction's commit point.
Opening the directory again rolls back every transaction that had not committed
(``undo_parallel_write``), as on one node. Simplified: an aborted round-robin table's restored
rows may land on other nodes than before (same rows, other placement).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlglot import exp

from minidb.cluster.backends import LOCK_WAITS
from minidb.cluster.machine import phase_timeout
from minidb.errors import LockTimeoutError, MinidbError
from minidb.parallel.partitioners import Hash, Partitioner, PredicateFragments, Range
from minidb.sql.hints import split_hint_comment
from minidb.sql.translate import InsertStatement, UpdateStatement, translate
from minidb.txn.deadlock import GlobalDeadlockDetector
from minidb.txn.locks import DEFAULT_LOCK_TIMEOUT, S, X
from minidb.txn.transaction import (
    MAX_ROUNDS,
    TransactionBase,
    _Undo,
    key_bounds,
    key_list,
    record_keys,
)

if TYPE_CHECKING:
    from minidb.cluster.coordinator import ParallelDatabase, ParallelResult

log = logging.getLogger("minidb.cluster")

#: keys per ``key IN (...)`` list of the undo's SELECT and DELETE
IN_LIST = 500


class NodeLocks:
    """The scheduler's view of one disk node's lock manager, for ``GlobalDeadlockDetector``:
    ``name``, ``wait_for_edges()`` and ``refuse_waiter(victim, message)``, each a call to the node
    (``Node.txn_wait_edges``, ``Node.txn_refuse_waiter``).

    Used on both backends, one code path: on Ray the managers live in the actors and can only be
    reached by a call; inline the same call runs in the backend's thread pool (a few
    microseconds every ``deadlock_interval`` while a lock request is in flight), and the inline
    tests then exercise the path the Ray backend takes. A node that cannot answer (it died, the
    database is closing) shows no edges and refuses nobody this round: the detector's thread
    goes on, and the transactions' own calls report the failure."""

    def __init__(self, backend: Any, node: int):
        self.backend, self.node = backend, node
        self.name = f"node {node}"  # as the node's LockManager is named: the messages match

    def wait_for_edges(self) -> list[tuple[int, int, str]]:
        try:
            edges = self.backend.call(self.node, "txn_wait_edges", phase="deadlock detection")
        except MinidbError as e:
            log.debug("deadlock detection: %s gave no wait-for edges (%s)", self.name, e)
            return []
        return [tuple(e) for e in edges]

    def refuse_waiter(self, txn: int, message: str) -> bool:
        try:
            return self.backend.call(self.node, "txn_refuse_waiter", txn, message,
                                     phase="deadlock detection")
        except MinidbError as e:
            log.debug("deadlock detection: %s could not refuse T%d (%s)", self.name, txn, e)
            return False


class SchedulerDeadlocks:
    """Gamma's scheduler job: run the global detector over the nodes' lock managers while any
    transaction's lock request is in flight (``asking``), every ``interval`` seconds.

    ``asking`` also bounds how many transactions have lock requests in flight at once: ``slots``
    (``LOCK_WAITS``), the threads every node keeps for lock waits beyond those of its work; a
    transaction past the bound waits here, at most its lock timeout."""

    def __init__(self, managers: list, interval: float, slots: int = LOCK_WAITS):
        self.detector = GlobalDeadlockDetector(managers)
        self.interval = interval
        self.slots = slots
        self._free = threading.BoundedSemaphore(slots)
        self._mutex = threading.Lock()
        self._asking = 0

    @contextmanager
    def asking(self, txn: int, timeout: float) -> Iterator[None]:
        """Around the lock requests of transaction ``txn`` (one at a time, waiting on the
        nodes): take a slot (``LockTimeoutError`` after ``timeout`` seconds without one) and
        keep the detector running."""
        if not self._free.acquire(timeout=timeout):
            raise LockTimeoutError(
                f"T{txn} waited {timeout:g} s for a lock request slot (the {self.slots} of the "
                "database were all taken by transactions waiting for locks on the nodes) and "
                "gave up; the transaction was aborted: retry it, or run fewer transactions at "
                "once")
        try:
            with self._mutex:
                self._asking += 1
                if self._asking == 1:
                    self.detector.start(self.interval)
            try:
                yield
            finally:
                with self._mutex:
                    self._asking -= 1
                    if self._asking == 0:
                        self.detector.stop()
        finally:
            self._free.release()

    def close(self) -> None:
        with self._mutex:
            self.detector.stop()


def _literal(value: Any) -> str:
    return exp.convert(value).sql(dialect="duckdb")


def _in_lists(key: str, keys: list) -> list[str]:
    """``key IN (...)`` conditions covering ``keys``, ``IN_LIST`` keys each, and ``key IS NULL``
    when None is one of them."""
    values = [k for k in keys if k is not None]
    return [f"{key} IN ({', '.join(_literal(k) for k in values[i:i + IN_LIST])})"
            for i in range(0, len(values), IN_LIST)] + ([f"{key} IS NULL"] if None in keys else [])


class ParallelTransaction(TransactionBase):
    """A transaction of one thread on a shared ``ParallelDatabase`` (see the module docstring)."""

    begun_with = "pdb.begin()"

    def __init__(self, pdb: ParallelDatabase, access: str = "stable",
                 lock_timeout: float | None = None):
        super().__init__(access, lock_timeout)
        self._log = pdb.txn_log
        self._ghosts = pdb.ghosts
        wait = DEFAULT_LOCK_TIMEOUT if lock_timeout is None else lock_timeout
        limit = phase_timeout(pdb.backend.timeout)
        if wait >= limit:
            raise MinidbError(f"lock_timeout ({wait:g} s) must be below the nodes' timeout "
                              f"({limit:g} s, connect(timeout=...)): a lock waits on a node")
        with pdb._engine:
            if pdb._deadlocks is None:
                managers = [NodeLocks(pdb.backend, n) for n in pdb.disk]
                pdb._deadlocks = SchedulerDeadlocks(managers, pdb.deadlock_interval)
        self.pdb = pdb
        self._wait = wait

    # -- statements ---------------------------------------------------------------------------
    def sql(self, text: str) -> ParallelResult:
        """Run one statement in this transaction, taking the locks its access mode asks for on
        the nodes. A ``DeadlockError`` (local or global) or ``LockTimeoutError`` aborts the
        transaction before it is raised."""
        self.pdb._check_open()
        return super().sql(text)

    def _catalog(self):
        return self.pdb.catalog

    def _read(self, tree: exp.Expression, text: str) -> ParallelResult:
        pdb = self.pdb
        if self.access == "browse":
            return pdb.sql(text)
        names = [t.name for t in tree.find_all(exp.Table)]
        held = self.access == "repeatable"
        if not (isinstance(tree, exp.Select) and len(names) == 1 and not tree.args.get("joins")):
            handles = [self._range_everywhere(pdb.catalog.get(n).name, None, None, S)
                       for n in dict.fromkeys(names)]
            try:
                return pdb.sql(text)
            finally:
                if not held:
                    for h in handles:
                        self._release(h)
        table = pdb.catalog.get(names[0]).name
        key = self._lock_key(table)
        source = (tree.args.get("from_") or tree.args.get("from")).this.sql(dialect="duckdb")
        with pdb._engine:  # check the statement first: a constant of another type than the key
            translate(split_hint_comment(text)[0], pdb.catalog)  # (id = 'x') is a SchemaError
        lo, hi, used = key_bounds(tree.args.get("where"), key)  # so these bounds compare
        if lo is not None and hi is not None and lo > hi:
            return pdb.sql(text)  # no key can qualify: nothing to read, nothing to lock
        if held:  # no phantoms: the scanned key range is locked to commit, on every node
            self._range_everywhere(table, lo, hi, S)
        scan = f"SELECT {key} FROM {source}" + \
            (" WHERE " + " AND ".join(t.sql(dialect="duckdb") for t in used) if used else "")
        return self._in_rounds(table, scan, S, keep=held, run=lambda keys: pdb._sql(text),
                               bounds=(lo, hi))

    def _change(self, tree: exp.Expression, text: str) -> ParallelResult:
        pdb = self.pdb
        with pdb._engine:
            statement = translate(split_hint_comment(text)[0], pdb.catalog)
        table = statement.ref.table.name
        key = self._lock_key(table)
        if isinstance(statement, UpdateStatement):
            placed_by = {c.lower() for c in pdb.schemes[table.lower()].columns}
            for name, _ in statement.assignments:
                if name.lower() == key.lower():
                    raise MinidbError(f"an UPDATE in a transaction may not change {table}.{key}, "
                                      "the column rows are locked by; delete the row and insert "
                                      "it again")
                if name.lower() in placed_by:
                    raise MinidbError(f"an UPDATE in a transaction may not change {table}.{name}, "
                                      "the column that places its rows on the nodes (the row "
                                      "would move away from its locks); delete the row and "
                                      "insert it again")
        where = tree.args.get("where")
        lo, hi, _ = key_bounds(where, key)
        if self.access == "repeatable":
            if lo is None or hi is None or lo <= hi:  # X, not S: see minidb.txn.transaction
                self._range_everywhere(table, lo, hi, X)
        scan = f"SELECT {key} FROM {tree.this.sql(dialect='duckdb')}" + \
            (f" WHERE {where.this.sql(dialect='duckdb')}" if where is not None else "")
        deletes = isinstance(tree, exp.Delete)
        return self._in_rounds(table, scan, X, keep=True, bounds=(lo, hi),
                               run=lambda keys: self._write(table, key, keys, text, deletes))

    def _insert(self, tree: exp.Expression, text: str) -> ParallelResult:
        pdb = self.pdb
        with pdb._engine:
            statement: InsertStatement = translate(split_hint_comment(text)[0], pdb.catalog)
            if statement.records is None:
                raise MinidbError("a transaction inserts with INSERT ... VALUES; INSERT ... SELECT "
                                  "runs outside it (pdb.sql)")
            table = statement.table.name
            p = pdb.schemes[table.lower()]
            key = self._lock_key(table)
            where = self._insert_nodes(table, p, statement.records)
        keys = record_keys(statement.records, key)
        with pdb._deadlocks.asking(self.id, self._wait):
            for n in pdb.disk:  # node by node, each node's keys in key order
                mine = key_list([k for k, w in zip(keys, where, strict=True) if w is None or w == n])
                if mine and mine[-1] is None:  # a NULL key names no row: lock the table there
                    mine.pop()
                    pdb.backend.call(n, "txn_lock_range", self.id, table, None, None, X,
                                     self.lock_timeout, phase="lock")
                if mine:
                    pdb.backend.call(n, "txn_lock_rows", self.id, table, mine, X,
                                     self.lock_timeout, phase="lock")
        with pdb._engine:
            return self._write(table, key, key_list(keys), text)

    def _insert_nodes(self, table: str, p: Partitioner, records: np.ndarray) -> list:
        """The node each new row will be stored on, or None each when that is not known before
        the insert runs (round-robin, a user's partitioner): the row's key is locked on every
        disk node then."""
        if type(p).grow is not Partitioner.grow:
            raise MinidbError(f"{table} is partitioned by {p.describe()}, whose placement changes "
                              "as it grows (rows move between nodes, away from their locks); "
                              "change it outside a transaction")
        if isinstance(p, Hash | Range | PredicateFragments) and \
                getattr(p, "boundaries", ()) is not None:
            return [self.pdb.disk[i] for i in copy.deepcopy(p).route(records)]
        return [None] * len(records)

    def _in_rounds(self, table: str, scan: str, mode: str, keep: bool,
                   run: Callable[[list], ParallelResult],
                   bounds: tuple[Any, Any] = (None, None)) -> ParallelResult:
        """Every disk node finds the keys ``scan`` gives on its fragment; each node locks its
        new ones (waiting there, statement mutex released); repeat until no node finds anything
        new, then ``run(keys)`` in the same hold of the mutex as the last look. Without ``keep``
        the S locks are released on every node once the statement has run (STABLE)."""
        pdb = self.pdb
        got: dict[int, dict[Any, Any]] = {n: {} for n in pdb.disk}
        try:
            for _ in range(MAX_ROUNDS):
                with pdb._engine:
                    found = pdb.backend.call_all("txn_keys", {n: (scan,) for n in pdb.disk},
                                                 "find the lock keys")
                    # a ghost (``Ghosts``: a row a live transaction deleted) may have been on
                    # any node: it is locked on every disk node, which waits where its X lock is
                    ghosts = self._ghosts.within(table, *bounds, self.id)
                    missing = {n: key_list([k for k in keys + ghosts
                                            if k not in got[n] and k is not None])
                               for n, keys in zip(pdb.disk, found, strict=True)}
                    whole = {n: None in keys and None not in got[n]
                             for n, keys in zip(pdb.disk, found, strict=True)}
                    if not any(missing.values()) and not any(whole.values()):
                        return run(key_list([k for keys in found for k in keys]))
                with pdb._deadlocks.asking(self.id, self._wait):
                    for n in pdb.disk:  # node by node, each node's keys in key order
                        if whole[n]:  # a NULL key names no row: lock the table on that node
                            got[n][None] = pdb.backend.call(n, "txn_lock_range", self.id, table,
                                                            None, None, mode, self.lock_timeout,
                                                            phase="lock")
                        if missing[n]:
                            handles = pdb.backend.call(n, "txn_lock_rows", self.id, table,
                                                       missing[n], mode, self.lock_timeout,
                                                       phase="lock")
                            got[n].update(zip(missing[n], handles, strict=True))
            raise MinidbError(f"T{self.id}: the rows of {table} kept changing while their locks "
                              f"were taken ({MAX_ROUNDS} rounds); retry the statement")
        finally:
            if not keep:
                self._release({n: list(hs.values()) for n, hs in got.items()})

    def _range_everywhere(self, table: str, lo: Any, hi: Any, mode: str) -> dict[int, list]:
        """Lock the key range lo..hi of ``table`` on every disk node, in node order."""
        handles: dict[int, list] = {}
        with self.pdb._deadlocks.asking(self.id, self._wait):
            for n in self.pdb.disk:
                handles[n] = [self.pdb.backend.call(n, "txn_lock_range", self.id, table, lo, hi,
                                                    mode, self.lock_timeout, phase="lock")]
        return handles

    def _release(self, handles: dict[int, list]) -> None:
        for n, hs in handles.items():
            if any(h is not None for h in hs):
                self.pdb.backend.call(n, "txn_release", hs, phase="release S locks")

    def _lock_key(self, table: str) -> str:
        with self.pdb._engine:
            return self.pdb.backend.call(self.pdb.disk[0], "txn_lock_key", table, phase="lock key")

    def _write(self, table: str, key: str, keys: list, text: str,
               deletes: bool = False) -> ParallelResult:
        """Run a write (statement mutex held, X locks held) after saving, with a parallel
        SELECT, the rows it may change; the keys of a DELETE become ghosts until the end."""
        self._remember(_Undo(table, key, keys, self._rows_with(table, key, keys)))
        result = self.pdb._sql(text)
        if deletes:
            self._ghosts.add(self.id, table, keys)
        return result

    def _rows_with(self, table: str, key: str, keys: list) -> np.ndarray:
        layout = self.pdb.catalog.get(table).schema
        parts = []
        for cond in _in_lists(key, keys):
            result = self.pdb._sql(f"SELECT * FROM {table} WHERE {cond}")
            got = result._records
            rows = np.empty(len(got), dtype=layout.dtype)
            for name in layout.dtype.names:
                rows[name] = got[name]
            parts.append(rows)
        return np.concatenate(parts) if parts else np.empty(0, dtype=layout.dtype)

    # -- the end ------------------------------------------------------------------------------
    def commit(self) -> None:
        """Commit: every statement is already applied (and, in a data directory, committed on
        every node); there the forced END record in the coordinator's transaction log makes them
        durable as a whole (``minidb.txn.txn_log``). Then release the locks on every node (the
        end of strict two-phase locking)."""
        with self._in_use():
            self._check_active()
            self.pdb._check_open()
            self._log_end("commit")
            self.state = "committed"
            self._release_all()

    def abort(self) -> None:
        """Undo every change of the transaction (newest first, X locks still held), then release
        the locks on every node. Aborting a finished transaction does nothing; aborting one whose
        database was closed only marks it aborted (its nodes are gone; in a data directory its
        log has no END record, so reopening the directory rolls it back)."""
        if self.state != "active":
            return
        pdb = self.pdb
        with self._in_use():
            try:
                if not pdb._closed:  # a closed database's nodes no longer take statements
                    with pdb._engine:
                        for u in reversed(self._undo):
                            undo_parallel_write(pdb, u)
                    self._log_end("abort")  # not reached if a step failed: restart undoes it
            finally:
                self._undo.clear()
                self.state = "aborted"
                self._release_all()

    def _release_all(self) -> None:
        self._ghosts.forget(self.id)  # its deletes are committed or undone: no longer ghosts
        if not self.pdb._closed:
            self.pdb.backend.call_all("txn_release_all", {n: (self.id,) for n in self.pdb.disk},
                                      "release locks")


def undo_parallel_write(pdb: ParallelDatabase, u: _Undo) -> None:
    """One undo step on the parallel engine: delete the rows having the keys of ``u`` and insert
    its rows before the write, as one statement committed on every node (``_put_back``).
    Idempotent, as restart recovery needs (``minidb.txn.txn_log``)."""
    deletes = [f"DELETE FROM {u.table} WHERE {c}" for c in _in_lists(u.key, u.keys)]
    pdb._put_back(u.table, deletes, u.before)
