"""Concurrent transactions on one database, with NonStop SQL's three access modes.

``db.begin(access=...)`` gives a ``Transaction``; several threads may each run one at the same time
against the same ``Database``::

    tx = db.begin(access="repeatable")
    tx.sql("UPDATE acct SET bal = bal - 10 WHERE id = 1")
    tx.sql("UPDATE acct SET bal = bal + 10 WHERE id = 2")
    tx.commit()                      # or tx.abort(); or `with db.begin() as tx:`

Access modes (Englert et al. 1989, Section 2, the parallel batch queries beside OLTP; and
Section 4's update query, which "defaults to STABLE ACCESS ... locks are immediately released if
the row is not updated"):

* ``browse``: reads take no locks and wait for none. A reader may see a change that is not
  committed yet and may still be undone (a *dirty read*): fine for the approximate reports NonStop
  SQL runs beside its transactions, since it never delays them.
* ``stable`` (the default, as in NonStop SQL): a read takes an S lock on every row it reads and
  lets go of it once the statement has read it (*cursor stability*). No dirty reads (an
  uncommitted row is X-locked, so the reader waits), but a row read twice may have changed in
  between, and a read-then-write can lose another transaction's update.
* ``repeatable``: read locks are kept to commit, and a read also locks the *key range* it scanned,
  so a second read finds the same rows: no changed rows and no phantoms (new rows in the range).

Writes (INSERT ... VALUES, UPDATE, DELETE) take X locks on every row they change, whatever the
mode, and keep them to commit or abort (strict two-phase locking, ``minidb.txn.locks``).

How a statement gets its locks. The SQL engine reads pages, not locked rows, and is not
thread-safe, so one mutex (the database's ``_engine`` lock) lets one statement at a time run;
the *locks* are what span statements, so transactions interleave statement by statement, block
on each other and deadlock. Locks are asked for with the engine mutex *released* (a waiting
transaction must not stop the one it waits for). A statement on one table therefore runs in
rounds: under the mutex, find the lock keys of the rows it will touch (a query on the key only);
let go of the mutex and lock the keys not locked yet; repeat until a round finds nothing new,
and in that round run the statement. A REPEATABLE statement first locks the key range of its
WHERE clause (bounds on the lock key: =, <, <=, >, >=, BETWEEN, IN; a strict bound is locked as
inclusive; none means the whole table), so nobody can add a row to it between the rounds.
A REPEATABLE UPDATE or DELETE locks the key range of its WHERE clause in X, not in S: with S,
two transactions running the same ``UPDATE ... WHERE id = 3`` would both get the S range and
then deadlock converting it to X (systems with an *update* mode U avoid that; this one has only
S and X). A read of several tables (a join, a subquery) locks each table whole in S.

The *lock key* of a table is its clustering or hash key, or else its first column
(``lock_key``). A row whose lock key is NULL cannot be locked alone: the whole table is locked.

Abort. Two live transactions may change rows on the same page, so the page before-images of
``minidb.txn.undo`` cannot undo one of them without the other. A transaction therefore keeps a
*logical* undo list: before each write it copies the rows having the keys it has X-locked
(before-images of rows, not pages); abort deletes the rows with those keys and puts the copies
back, newest write first, while it still holds the X locks, then releases them. Each statement
(and each undo step) is still made atomic by the database's own mechanism: in a data directory
the undo journal commits it (``Database._statement``); in a temporary directory a statement
checks everything before it changes a page, and there is nothing to recover after a crash.

Durability. In a data directory every statement is committed on its own by the statement
journal, and the undo records are made durable first in the transaction log
(``minidb.txn.txn_log``): ``commit`` forces an END record, its commit point; a transaction that
had not committed when its process died (or its database was closed) is rolled back when the
directory is opened again (``roll_back_losers``), so a crash leaves every committed transaction
and none of the others.

Deleted rows. A DELETE takes its rows off the pages at once, so a reader could not find, lock
and wait for a row another transaction has deleted but not committed, and would read the delete
early. The keys a live transaction deleted are kept as *ghosts* (``Ghosts``, ``db.ghosts``)
until it ends; a STABLE or REPEATABLE statement locks the ghosts in its key range along with the
rows it finds, so it waits for the deleter, then sees the row again (abort) or not (commit).
BROWSE reads the delete at once, as it reads any uncommitted change.

Simplified, and said so: DDL (CREATE, DROP) and INSERT ... SELECT are refused in a transaction;
an UPDATE may not change the lock key. A STABLE UPDATE or DELETE finds its rows with its whole
WHERE clause before it locks them, so a row another transaction has changed (not committed) so
that it no longer qualifies is skipped without waiting; NonStop SQL would S-lock every row of the
key range, test it under the lock and let go of those it does not change. REPEATABLE, which
X-locks the key range first, has no such gap. Statements outside a transaction (``db.sql``)
take no locks, as before.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlglot import exp

from minidb.errors import LockError, MinidbError
from minidb.sql.compound import inline_subqueries
from minidb.sql.hints import split_hint_comment
from minidb.sql.translate import InsertStatement, UpdateStatement, parse, translate
from minidb.storage.schema import null_mask
from minidb.txn.locks import S, X, new_txn_id

if TYPE_CHECKING:
    from minidb.catalog import Catalog, Table
    from minidb.database import Database, Result
    from minidb.txn.txn_log import TransactionLog

ACCESS_MODES = ("browse", "stable", "repeatable")
#: rounds of "find the keys, lock them" before a statement gives up (keys keep appearing)
MAX_ROUNDS = 50


def lock_key(table: Table) -> str:
    """The column whose values name a table's rows in the lock table: the clustering or hash key,
    or else the first column."""
    return table.key or table.schema.columns[0].name


def _python(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _constant(node: exp.Expression) -> Any:
    """The value of a literal (``5``, ``-5``, ``'x'``), or None for anything else."""
    negate = False
    if isinstance(node, exp.Neg):
        negate, node = True, node.this
    if isinstance(node, exp.Paren):
        return _constant(node.this)
    if not isinstance(node, exp.Literal):
        return None
    if node.is_string:
        return None if negate else node.this
    try:
        v = int(node.this)
    except ValueError:
        v = float(node.this)
    return -v if negate else v


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def key_bounds(where: exp.Expression | None, key: str) -> tuple[Any, Any, list[exp.Expression]]:
    """(low, high, the conjuncts they came from) of the lock key in a WHERE condition; None is
    an open end. Only top-level AND terms comparing the key with a constant count."""
    lo = hi = None
    used = []

    def is_key(n) -> bool:
        return isinstance(n, exp.Column) and n.name.lower() == key.lower()

    def lower(v) -> None:
        nonlocal lo
        lo = v if lo is None else max(lo, v)

    def upper(v) -> None:
        nonlocal hi
        hi = v if hi is None else min(hi, v)

    flip = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE, exp.EQ: exp.EQ}
    for term in _conjuncts(where.this if isinstance(where, exp.Where) else where):
        if isinstance(term, exp.Between) and is_key(term.this):
            a, b = _constant(term.args["low"]), _constant(term.args["high"])
            if a is not None and b is not None:
                lower(a)
                upper(b)
                used.append(term)
        elif isinstance(term, exp.In) and is_key(term.this) and term.expressions:
            values = [_constant(e) for e in term.expressions]
            if all(v is not None for v in values):
                lower(min(values))
                upper(max(values))
                used.append(term)
        elif type(term) in flip:
            left, right, kind = term.left, term.right, type(term)
            if is_key(right) and not is_key(left):
                left, right, kind = right, left, flip[kind]
            v = _constant(right)
            if not is_key(left) or v is None:
                continue
            if kind in (exp.EQ, exp.GT, exp.GTE):
                lower(v)
            if kind in (exp.EQ, exp.LT, exp.LTE):
                upper(v)
            used.append(term)
    return lo, hi, used


def check_begin(access: Any, lock_timeout: Any) -> None:
    """The arguments of ``begin``: an access mode of ``ACCESS_MODES``, and a lock timeout in
    seconds above 0 (or None for the lock manager's default). The timeout must be finite: a
    wait always ends (``inf`` would also overflow the thread library's timed wait)."""
    if not isinstance(access, str) or access.lower() not in ACCESS_MODES:
        raise MinidbError(f"access must be one of {', '.join(ACCESS_MODES)}, not {access!r}")
    if lock_timeout is not None and (isinstance(lock_timeout, bool)
                                     or not isinstance(lock_timeout, int | float)
                                     or not lock_timeout > 0 or not math.isfinite(lock_timeout)):
        raise MinidbError(f"lock_timeout is a finite number of seconds above 0 (or None for the "
                          f"default), not {lock_timeout!r}")


@dataclass
class _Undo:
    table: str
    key: str
    keys: list  # the lock keys the write touched (X-locked); None: the rows with a NULL key
    before: np.ndarray  # the rows with those keys before the write


class Ghosts:
    """The keys of rows that live transactions have deleted, by table: what a real system keeps
    as *ghost* rows until the deleter ends (Gray and Reuter, ch. 7). Without them a STABLE or
    REPEATABLE statement would not find such a row, so would neither lock it nor wait, and would
    read the delete before it commits: a dirty read (and, if the deleter aborts, miss a row that
    was there all along). A statement therefore also locks the ghosts in its key range, which
    waits until their deleters end (``_in_rounds``). Thread-safe."""

    def __init__(self):
        self._mutex = threading.Lock()
        self._keys: dict[str, dict[Any, set[int]]] = {}

    def add(self, txn: int, table: str, keys: list) -> None:
        with self._mutex:
            mine = self._keys.setdefault(table.lower(), {})
            for k in keys:
                if k is not None:  # a NULL key's rows are covered by the deleter's table lock
                    mine.setdefault(k, set()).add(txn)

    def forget(self, txn: int) -> None:
        """``txn`` ended: its deletes are committed or undone, no longer ghosts."""
        with self._mutex:
            for table in list(self._keys):
                keys = self._keys[table]
                for k in [k for k, owners in keys.items() if txn in owners]:
                    keys[k].discard(txn)
                    if not keys[k]:
                        del keys[k]
                if not keys:
                    del self._keys[table]

    def within(self, table: str, lo: Any, hi: Any, txn: int) -> list:
        """The ghost keys of ``table`` in ``lo..hi`` (None: open end) that transactions other
        than ``txn`` deleted, in key order."""
        with self._mutex:
            keys = [k for k, owners in self._keys.get(table.lower(), {}).items()
                    if owners - {txn} and _between(k, lo, hi)]
        return key_list(keys)


def _between(k: Any, lo: Any, hi: Any) -> bool:
    try:
        return (lo is None or lo <= k) and (hi is None or k <= hi)
    except TypeError:  # a bound of another type than the key: keep the ghost (the safe side)
        return True


class TransactionBase:
    """What every transaction shares, on one node or on the parallel engine: the statement kinds
    it runs (each subclass says how a read, an insert and a change take their locks), the
    life cycle active -> committed or aborted, and ``with ... as tx`` (commit at the end, abort
    on an exception). ``begun_with`` names the call that starts one, for the messages."""

    begun_with = "db.begin()"

    def __init__(self, access: str, lock_timeout: float | None):
        check_begin(access, lock_timeout)
        self.access = access.lower()
        self.lock_timeout = lock_timeout
        self.id = new_txn_id()
        self.state = "active"
        self.statements = 0
        self._undo: list[_Undo] = []
        #: in a data directory, where the undo records are made durable (``minidb.txn.txn_log``)
        self._log: TransactionLog | None = None
        #: the database's keys of rows deleted by live transactions (``Ghosts``)
        self._ghosts: Ghosts = Ghosts()
        #: held by the thread running a statement, commit or abort of this transaction
        self._busy = threading.RLock()

    @contextmanager
    def _in_use(self) -> Iterator[None]:
        """Around ``sql``, ``commit`` and ``abort``: one thread at a time. A transaction is one
        thread's; were a second thread to commit it while the first waits for a lock, the
        commit would release the locks under the waiting statement, which would then time out
        with a transaction already committed (or run a write after the commit point). Refused
        with a clear error instead. Re-entrant: ``sql`` aborts on a lock error, and runs the
        subqueries of an UPDATE or DELETE, in the same thread."""
        if not self._busy.acquire(blocking=False):
            raise MinidbError(f"transaction T{self.id} is in use by another thread (a statement, "
                              f"commit or abort is running); a transaction belongs to one thread "
                              f"at a time: give each thread its own {self.begun_with}")
        try:
            yield
        finally:
            self._busy.release()

    def _remember(self, undo: _Undo) -> None:
        """Keep the undo record of a write about to run; in a data directory force it to the
        transaction log first (the write-ahead rule, ``minidb.txn.txn_log``)."""
        if self._log is not None:
            self._log.write(self.id, undo.table, undo.key, undo.keys, undo.before)
        self._undo.append(undo)

    def _log_end(self, outcome: str) -> None:
        """Force the END record: at commit the commit point, at abort the undo's completion."""
        if self._log is not None:
            self._log.end(self.id, outcome)

    def sql(self, text: str):
        """Run one statement in this transaction, taking the locks its access mode asks for.
        A ``DeadlockError`` or ``LockTimeoutError`` aborts the transaction before it is raised."""
        with self._in_use():
            return self._sql(text)

    def _sql(self, text: str):
        self._check_active()
        tree = parse(text)
        if isinstance(tree, exp.Update | exp.Delete):  # its subqueries first, under our locks
            rewritten = inline_subqueries(text, self._catalog(), lambda q: self.sql(q)._shown()[1])
            if rewritten != text:
                text, tree = rewritten, parse(rewritten)
        if isinstance(tree, exp.Select | exp.Union):
            run = self._read
        elif isinstance(tree, exp.Insert):
            run = self._insert
        elif isinstance(tree, exp.Update | exp.Delete):
            run = self._change
        else:
            raise MinidbError(f"a transaction runs SELECT, INSERT ... VALUES, UPDATE and DELETE; "
                              f"run {tree.key.upper()} outside it with "
                              f"{self.begun_with.replace('.begin()', '.sql()')}")
        try:
            result = run(tree, text)
        except LockError:
            self.abort()
            raise
        self.statements += 1
        return result

    def _catalog(self):
        raise NotImplementedError

    def _read(self, tree: exp.Expression, text: str):
        raise NotImplementedError

    def _insert(self, tree: exp.Expression, text: str):
        raise NotImplementedError

    def _change(self, tree: exp.Expression, text: str):
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def _check_active(self) -> None:
        if self.state != "active":
            raise MinidbError(f"transaction T{self.id} is {self.state}; begin a new one with "
                              f"{self.begun_with}")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if self.state != "active":
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(T{self.id}, {self.access}, {self.state}, "
                f"{self.statements} statements)")


class Transaction(TransactionBase):
    """A transaction of one thread on a shared ``Database`` (see the module docstring)."""

    def __init__(self, db: Database, access: str = "stable", lock_timeout: float | None = None):
        super().__init__(access, lock_timeout)
        self.db = db
        self.locks = db.locks
        self._log = db.txn_log
        self._ghosts = db.ghosts

    # -- statements ---------------------------------------------------------------------------
    def _catalog(self):
        return self.db.catalog

    def _read(self, tree: exp.Expression, text: str) -> Result:
        db = self.db
        if self.access == "browse":
            with db._engine:
                return db.sql(text)
        names = [t.name for t in tree.find_all(exp.Table)]
        held = self.access == "repeatable"
        if not (isinstance(tree, exp.Select) and len(names) == 1 and not tree.args.get("joins")):
            handles = [self.locks.lock_range(self.id, db.catalog.get(n).name, None, None, S,
                                             self.lock_timeout) for n in dict.fromkeys(names)]
            try:
                with db._engine:
                    return db.sql(text)
            finally:
                if not held:
                    for h in handles:
                        self.locks.release(h)
        table = db.catalog.get(names[0])
        key = lock_key(table)
        source = (tree.args.get("from_") or tree.args.get("from")).this.sql(dialect="duckdb")
        with db._engine:  # check the statement first: a constant of another type than the key
            translate(split_hint_comment(text)[0], db.catalog)  # (id = 'x') is a SchemaError
        lo, hi, used = key_bounds(tree.args.get("where"), key)  # so these bounds compare
        if lo is not None and hi is not None and lo > hi:
            with db._engine:  # no key can qualify: nothing to read, nothing to lock
                return db.sql(text)
        if held:  # no phantoms: the scanned key range is locked to commit
            self.locks.lock_range(self.id, table.name, lo, hi, S, self.lock_timeout)
        scan = f"SELECT {key} FROM {source}" + \
            (" WHERE " + " AND ".join(t.sql(dialect="duckdb") for t in used) if used else "")
        return self._in_rounds(table.name, scan, S, keep=held, run=lambda keys: db.sql(text),
                               bounds=(lo, hi))

    def _change(self, tree: exp.Expression, text: str) -> Result:
        db = self.db
        with db._engine:
            statement = translate(text, db.catalog)
        table = statement.ref.table
        key = lock_key(table)
        if isinstance(statement, UpdateStatement) and \
                any(name.lower() == key.lower() for name, _ in statement.assignments):
            raise MinidbError(f"an UPDATE in a transaction may not change {table.name}.{key}, the "
                              "column rows are locked by; delete the row and insert it again")
        where = tree.args.get("where")
        lo, hi, _ = key_bounds(where, key)
        if self.access == "repeatable":
            if lo is None or hi is None or lo <= hi:  # X, not S: see the module docstring
                self.locks.lock_range(self.id, table.name, lo, hi, X, self.lock_timeout)
        scan = f"SELECT {key} FROM {tree.this.sql(dialect='duckdb')}" + \
            (f" WHERE {where.this.sql(dialect='duckdb')}" if where is not None else "")
        deletes = isinstance(tree, exp.Delete)
        return self._in_rounds(table.name, scan, X, keep=True, bounds=(lo, hi),
                               run=lambda keys: self._write(table.name, key, keys, text, deletes))

    def _insert(self, tree: exp.Expression, text: str) -> Result:
        db = self.db
        with db._engine:
            statement: InsertStatement = translate(text, db.catalog)
        if statement.records is None:
            raise MinidbError("a transaction inserts with INSERT ... VALUES; INSERT ... SELECT "
                              "runs outside it (db.sql)")
        table = statement.table
        key = lock_key(table)
        keys = key_list(record_keys(statement.records, key))
        for k in keys:  # an X lock on a new key waits for a REPEATABLE reader's range: no phantom
            if k is None:  # a NULL key names no row: lock the table
                self.locks.lock_range(self.id, table.name, None, None, X, self.lock_timeout)
            else:
                self.locks.lock_row(self.id, table.name, k, X, self.lock_timeout)
        with db._engine:
            return self._write(table.name, key, keys, text)

    def _in_rounds(self, table: str, scan: str, mode: str, keep: bool,
                   run: Callable[[list], Result], bounds: tuple[Any, Any] = (None, None)) -> Result:
        """Find the keys ``scan`` gives, and the ghosts (``Ghosts``) in the key range ``bounds``,
        lock them, and repeat until nothing new turns up; then ``run(keys)`` in the same hold of
        the engine mutex as the last look. Without ``keep`` the S locks are released once the
        statement has run (STABLE)."""
        db = self.db
        got: dict[Any, Any] = {}
        try:
            for _ in range(MAX_ROUNDS):
                with db._engine:
                    keys = [_python(k) for k in db.sql(scan).to_arrow().column(0).to_pylist()]
                    ghosts = self._ghosts.within(table, *bounds, self.id)
                    missing = key_list([k for k in keys + ghosts
                                        if k not in got and k is not None])
                    whole = None in keys and None not in got
                    if not missing and not whole:
                        return run(key_list(keys))
                if whole:  # a NULL key names no row: lock the table
                    got[None] = self.locks.lock_range(self.id, table, None, None, mode,
                                                      self.lock_timeout)
                for k in missing:  # in key order, which avoids some deadlocks
                    got[k] = self.locks.lock_row(self.id, table, k, mode, self.lock_timeout)
            raise MinidbError(f"T{self.id}: the rows of {table} kept changing while their locks "
                              f"were taken ({MAX_ROUNDS} rounds); retry the statement")
        finally:
            if not keep:
                for h in got.values():
                    self.locks.release(h)

    def _write(self, table: str, key: str, keys: list, text: str, deletes: bool = False) -> Result:
        """Run a write (engine mutex held, X locks held) after saving the rows it may change; the
        keys of a DELETE become ghosts until this transaction ends."""
        self._remember(_Undo(table, key, keys, self._rows_with(table, key, keys)))
        result = self.db.sql(text)
        if deletes:
            self._ghosts.add(self.id, table, keys)
        return result

    def _rows_with(self, table: str, key: str, keys: list) -> np.ndarray:
        records = self.db.catalog.get(table).read_all()
        return records[self._mask(records, key, keys)]

    @staticmethod
    def _mask(records: np.ndarray, key: str, keys: list) -> np.ndarray:
        return key_mask(records, key, keys)

    # -- the end ------------------------------------------------------------------------------
    def commit(self) -> None:
        """Commit: every statement is already applied; in a data directory the forced END record
        makes them durable as a whole (``minidb.txn.txn_log``). Then release the locks (the end
        of strict two-phase locking)."""
        with self._in_use():
            self._check_active()
            self.db._check_open()
            self._log_end("commit")
            self.state = "committed"
            self._ghosts.forget(self.id)  # its deletes are committed; releasing ends the waits
            self.locks.release_all(self.id)

    def abort(self) -> None:
        """Undo every change of the transaction (newest first, X locks still held), then release
        the locks. Aborting a finished transaction does nothing; aborting one whose database was
        closed only marks it aborted: a temporary directory is gone with its rows, and in a data
        directory its log has no END record, so reopening the directory rolls it back."""
        if self.state != "active":
            return
        db = self.db
        with self._in_use():
            try:
                if not db._closed:  # the pages of a closed database cannot be read or written
                    with db._engine:
                        for u in reversed(self._undo):
                            undo_write(db, u)
                    self._log_end("abort")  # not reached if a step failed: restart undoes it
            finally:
                self._undo.clear()
                self.state = "aborted"
                self._ghosts.forget(self.id)
                self.locks.release_all(self.id)



def record_keys(records: np.ndarray, key: str) -> list:
    """The lock keys of ``records`` as Python values, None where the key is NULL."""
    nulls = null_mask(records, key)
    return [None if nulls is not None and nulls[i] else _python(v)
            for i, v in enumerate(records[key])]


def key_list(keys: list) -> list:
    """The distinct keys in order; None (the rows whose key is NULL) last, if there."""
    distinct = set(keys)
    return sorted(distinct - {None}) + ([None] if None in distinct else [])


def key_mask(records: np.ndarray, key: str, keys: list) -> np.ndarray:
    """Which of ``records`` have one of ``keys`` in column ``key`` (None in ``keys``: the rows
    whose key is NULL; a NULL is stored as a zero value, so it must not match a key 0)."""
    mask = np.zeros(len(records), dtype=bool)
    nulls = null_mask(records, key)
    values = [k for k in keys if k is not None]
    if values:
        mask = np.isin(records[key], np.array([k.encode() if isinstance(k, str) else k
                                               for k in values]))
        if nulls is not None:
            mask &= ~nulls
    if None in keys and nulls is not None:
        mask |= nulls
    return mask


def undo_write(db: Database, u: _Undo) -> None:
    """One undo step on one node: the rows having the keys of ``u`` are replaced by its rows
    before the write, as one statement (in a data directory, committed on its own). Doing it
    twice leaves what doing it once leaves, which restart recovery relies on."""
    table = db.catalog.get(u.table)
    with db._statement():
        records, rids = table.read_all_with_rids()
        mask = key_mask(records, u.key, u.keys)
        if mask.any():
            table.delete(rids[mask])
        if len(u.before):
            table.insert(u.before)


def roll_back_losers(log: TransactionLog, undo: Callable[[_Undo], None],
                     catalog: Catalog) -> str | None:
    """Restart recovery of transactions (``minidb.txn.txn_log``): undo every write of every
    transaction that had not ended, newest first, then empty the log. Returns what was done
    (None: nothing). A write on a table dropped since (DDL runs outside transactions), or
    dropped and created again with other columns, is skipped and named."""
    losers = log.losers()
    steps, skipped = 0, set()
    for txn in sorted(losers):
        for table, key, keys, before in reversed(losers[txn]):
            if not catalog.has(table) or catalog.get(table).schema.dtype != before.dtype:
                skipped.add(table)
                continue
            undo(_Undo(table, key, keys, before))
            steps += 1
    log.reset()
    if not losers:
        return None
    said = (f"rolled back {len(losers)} unfinished transaction(s) "
            f"({', '.join(f'T{t}' for t in sorted(losers))}: {steps} write(s) undone)")
    if skipped:
        said += (f"; tables dropped (or re-created) since, their rows not restored: "
                 f"{', '.join(sorted(skipped))}")
    return said
