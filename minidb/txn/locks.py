"""One node's lock manager: row locks and key-range locks, strict two-phase locking, deadlocks.

What it is. Concurrent transactions are kept apart by *locks*: before a transaction reads a row it
takes a shared lock (S), before it writes one an exclusive lock (X). S is compatible with S, X
with nothing. A request that conflicts with a lock another transaction holds *waits* in a queue.
NonStop SQL locks rows, not pages or tables (Englert et al. 1989, Section 2: "row locking" is one
of the techniques behind its OLTP scaleup, and row-granularity locking is the default of every
table in the benchmark, Section 3), and locks *key ranges* of a table for sequential inserts and
updates (Section 2, sequential block buffering "preserves update consistency by locking key
ranges of the target table").

The lock table. Every lock is on a closed interval ``[lo, hi]`` of one column of one table, the
table's *lock key* (``minidb.txn.transaction.lock_key``); ``None`` is an open end.

* a **row lock** is the point ``[k, k]`` (``lock_row``);
* a **key-range lock** is ``[lo, hi]`` (``lock_range``): the range a scan read. Two locks conflict
  when their intervals overlap, their modes are incompatible and their transactions differ, so an
  X lock on a new key 15 (an insert) conflicts with an S lock on the range [10, 20].
  That is how the **phantom** is prevented: a transaction that counted the rows with keys 10..20
  and counts them again before it commits must find the same rows, so no other transaction may
  insert (or delete, or move) a row with such a key in between. Locking only the rows that were
  read cannot stop that, because the new row did not exist when the rows were locked.
* a table lock is the range covering every key, ``[None, None]``: one lock hierarchy level, so no
  intention modes (IS / IX) are needed; they matter where table and row locks live in separate
  lock tables.

The queue of one table is its requests in arrival order (a sequence number). FIFO fairness: a new
request waits if it conflicts with a granted lock *or with a request queued ahead of it*, so a
stream of readers cannot starve a writer. A *conversion* (a transaction asking for more on
something it already holds a lock on, e.g. the upgrade S -> X after reading a row it then
updates) only waits for granted locks: it goes ahead of the queue, because the queue is usually
waiting for this very transaction. Two transactions that both read a row and then both want to
update it still deadlock (each waits for the other's S): the classic conversion deadlock.

Strict two-phase locking. Locks are released only by ``release_all`` at commit or abort, after the
transaction's last change; then nobody can read a change that might still be undone, and the
transactions are serializable in their commit order. The one early release, ``release``, is for
S locks only: a STABLE reader lets go of a row once it has read it (cursor stability,
``minidb.txn.transaction``). An X lock cannot be released early.

Waits and deadlocks. Each wait has a timeout (``LockTimeoutError`` names the lock, who held it and
how long it waited). When a request has to wait, the manager builds its *wait-for graph* (waiter
-> every transaction holding or queued ahead for a conflicting lock) and looks for a cycle through
the waiter (``minidb.txn.deadlock``). A cycle is a deadlock: its youngest transaction (largest id)
is the victim; its request is refused with a ``DeadlockError`` naming the cycle, and its
transaction must abort (which releases its locks and lets the others go on). A cycle through
several nodes is found by the global detector (``minidb.txn.deadlock.GlobalDeadlockDetector``),
which calls ``refuse_waiter``.

Counted (``LockCounters``): requests, granted at once, waits, conversions, deadlocks, timeouts,
early releases. Simplified: one mutex for the whole lock table (a real one is hashed into
partitions); finding the conflicts of a range request looks at every row lock of its table,
which is fine for the table sizes of the labs.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from minidb.errors import DeadlockError, LockTimeoutError, MinidbError
from minidb.txn.deadlock import Graph, describe_cycle, find_cycle, youngest

S, X = "S", "X"
MODES = (S, X)
#: which held mode (first) is compatible with which requested mode (second)
COMPATIBLE = {(S, S): True, (S, X): False, (X, S): False, (X, X): False}
_STRENGTH = {S: 1, X: 2}
DEFAULT_LOCK_TIMEOUT = 10.0

_txn_ids = itertools.count(1)


def new_txn_id() -> int:
    """A transaction id, unique in this process and growing with begin time (so the largest id
    in a deadlock cycle is its youngest transaction)."""
    return next(_txn_ids)


def _overlap(a_lo, a_hi, b_lo, b_hi) -> bool:
    """Whether the closed intervals [a_lo, a_hi] and [b_lo, b_hi] meet (None: open end)."""
    return (a_lo is None or b_hi is None or a_lo <= b_hi) and \
           (b_lo is None or a_hi is None or b_lo <= a_hi)


def _contains(a_lo, a_hi, b_lo, b_hi) -> bool:
    """Whether [a_lo, a_hi] covers [b_lo, b_hi]."""
    return (a_lo is None or (b_lo is not None and a_lo <= b_lo)) and \
           (a_hi is None or (b_hi is not None and b_hi <= a_hi))


def describe_resource(table: str, lo: Any, hi: Any) -> str:
    """``acct key 7``, ``acct keys 10..20``, ``acct (every key)``."""
    if lo is None and hi is None:
        return f"{table} (every key)"
    if lo is not None and lo == hi:
        return f"{table} key {lo!r}"
    return f"{table} keys {'-inf' if lo is None else repr(lo)}..{'+inf' if hi is None else repr(hi)}"


@dataclass(eq=False)
class Request:
    """One lock request, granted or waiting; the handle ``lock_row`` / ``lock_range`` return."""

    txn: int
    table: str
    lo: Any
    hi: Any
    mode: str
    seq: int
    granted: bool = False
    conversion: bool = False  # the transaction already held a lock overlapping this one
    refused: str | None = None  # set when the request is a deadlock victim: the message

    @property
    def is_row(self) -> bool:
        return self.lo is not None and self.lo == self.hi

    def conflicts(self, other: Request) -> bool:
        return (self.txn != other.txn and not COMPATIBLE[(other.mode, self.mode)]
                and _overlap(self.lo, self.hi, other.lo, other.hi))

    def describe(self) -> str:
        return f"{self.mode} lock on {describe_resource(self.table, self.lo, self.hi)}"


@dataclass
class LockCounters:
    """What a lock manager did."""

    requests: int = 0
    granted_at_once: int = 0
    waits: int = 0
    conversions: int = 0
    deadlocks: int = 0
    timeouts: int = 0
    early_releases: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class _TableLocks:
    points: dict[Any, list[Request]] = field(default_factory=dict)  # row locks by key
    ranges: list[Request] = field(default_factory=list)  # every other interval

    def overlapping(self, lo, hi) -> list[Request]:
        if lo is not None and lo == hi:
            found = list(self.points.get(lo, ()))
        else:
            found = [r for key, rs in self.points.items() if _overlap(lo, hi, key, key) for r in rs]
        found += [r for r in self.ranges if _overlap(lo, hi, r.lo, r.hi)]
        return found

    def add(self, r: Request) -> None:
        if r.is_row:
            self.points.setdefault(r.lo, []).append(r)
        else:
            self.ranges.append(r)

    def remove(self, r: Request) -> None:
        if r.is_row:
            rs = self.points.get(r.lo, [])
            if r in rs:
                rs.remove(r)
            if not rs:
                self.points.pop(r.lo, None)
        elif r in self.ranges:
            self.ranges.remove(r)

    def waiting(self) -> list[Request]:
        rs = [r for rs in self.points.values() for r in rs if not r.granted]
        rs += [r for r in self.ranges if not r.granted]
        return sorted(rs, key=lambda r: (not r.conversion, r.seq))


class LockManager:
    """The lock table of one node. Thread-safe: every transaction thread calls it directly."""

    def __init__(self, name: str = "node0", timeout: float = DEFAULT_LOCK_TIMEOUT):
        self.name = name
        self.timeout = timeout
        self.counters = LockCounters()
        self._mutex = threading.Lock()
        self._changed = threading.Condition(self._mutex)
        self._tables: dict[str, _TableLocks] = {}
        self._by_txn: dict[int, list[Request]] = {}
        self._seq = itertools.count()

    # -- asking -------------------------------------------------------------------------------
    def lock_row(self, txn: int, table: str, key: Any, mode: str = S,
                 timeout: float | None = None) -> Request | None:
        """Lock the row with lock key ``key``; see ``lock_range``."""
        if key is None:
            raise MinidbError("a row lock needs a key; NULL keys cannot be locked one by one")
        return self._acquire(txn, table, key, key, mode, timeout)

    def lock_range(self, txn: int, table: str, lo: Any = None, hi: Any = None, mode: str = S,
                   timeout: float | None = None) -> Request | None:
        """Lock the keys ``lo..hi`` of ``table`` (None: open end; both None: the whole table).

        Returns the granted request (the handle for ``release``), or None when the transaction
        already holds a lock at least as strong covering it. Waits at most ``timeout`` seconds
        (the manager's default when None; 0: do not wait): ``LockTimeoutError`` then, or
        ``DeadlockError`` if the wait closed a cycle and this transaction is the victim."""
        return self._acquire(txn, table, lo, hi, mode, timeout)

    def _acquire(self, txn, table, lo, hi, mode, timeout) -> Request | None:
        if mode not in MODES:
            raise MinidbError(f"lock mode must be one of {', '.join(MODES)}, not {mode!r}")
        if lo is not None and hi is not None and lo > hi:
            raise MinidbError(f"key range {lo!r}..{hi!r} is empty; give the low end first")
        timeout = self.timeout if timeout is None else timeout
        with self._mutex:
            self.counters.requests += 1
            locks = self._tables.setdefault(table, _TableLocks())
            near = locks.overlapping(lo, hi)
            mine = [r for r in near if r.txn == txn and r.granted]
            if any(_STRENGTH[r.mode] >= _STRENGTH[mode] and _contains(r.lo, r.hi, lo, hi) for r in mine):
                self.counters.granted_at_once += 1
                return None  # already covered: locks are re-entrant
            req = Request(txn, table, lo, hi, mode, next(self._seq), conversion=bool(mine))
            if req.conversion:
                self.counters.conversions += 1
            locks.add(req)
            self._by_txn.setdefault(txn, []).append(req)
            if self._grantable(req, near):
                req.granted = True
                self.counters.granted_at_once += 1
                return req
            self.counters.waits += 1
            self._check_deadlock(req)
            deadline = time.monotonic() + timeout
            while not req.granted:
                if req.refused is not None:
                    self._forget(req)
                    raise DeadlockError(req.refused)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    blockers = self._blockers(req)
                    self._forget(req)
                    self.counters.timeouts += 1
                    held = ", ".join(f"T{b.txn} ({b.mode}{'' if b.granted else ', queued ahead'})"
                                     for b in blockers) or "nobody now"
                    raise LockTimeoutError(
                        f"T{txn} waited {timeout:g} s for an {req.describe()} on {self.name} and "
                        f"gave up (held by {held}); the transaction was aborted: retry it, or give "
                        "it a longer lock_timeout")
                self._changed.wait(remaining)
            return req

    def _grantable(self, req: Request, near: list[Request] | None = None) -> bool:
        near = self._tables[req.table].overlapping(req.lo, req.hi) if near is None else near
        return not self._blockers(req, near)

    def _blockers(self, req: Request, near: list[Request] | None = None) -> list[Request]:
        """The requests ``req`` waits for: conflicting granted ones, and (FIFO; not for a
        conversion) conflicting ones queued ahead of it."""
        near = self._tables[req.table].overlapping(req.lo, req.hi) if near is None else near
        return [r for r in near if r is not req and req.conflicts(r)
                and (r.granted or (not req.conversion and r.refused is None and r.seq < req.seq))]

    # -- deadlocks ----------------------------------------------------------------------------
    def _edges(self) -> list[tuple[int, int, str]]:
        edges = []
        for locks in self._tables.values():
            for w in locks.waiting():
                if w.refused is not None:  # a victim on its way out
                    continue
                for b in self._blockers(w):
                    edges.append((w.txn, b.txn, f"{w.describe()}, {b.mode} "
                                  f"{'held' if b.granted else 'queued ahead'} by T{b.txn}"))
        return edges

    def wait_for_edges(self) -> list[tuple[int, int, str]]:
        """Every edge of this node's wait-for graph: (waiter, waited-for, why)."""
        with self._mutex:
            return self._edges()

    def wait_for_graph(self) -> Graph:
        """This node's wait-for graph: transaction -> the transactions it waits for."""
        graph: Graph = {}
        for w, h, _ in self.wait_for_edges():
            graph.setdefault(w, set()).add(h)
        return graph

    def _check_deadlock(self, req: Request) -> None:
        """Called with the mutex held when ``req`` starts waiting: break every cycle through it.
        There may be several (T1 waits for T2 and for T3, both of which wait for T1); one victim
        per cycle, until none is left (a refused victim's waits are no longer edges)."""
        while True:
            graph: Graph = {}
            why: dict[tuple[int, int], str] = {}
            for w, h, reason in self._edges():
                graph.setdefault(w, set()).add(h)
                why.setdefault((w, h), reason)
            cycle = find_cycle(graph, start=req.txn)
            if cycle is None:
                return
            victim = youngest(cycle)
            self.counters.deadlocks += 1
            message = (f"deadlock on {self.name}: {describe_cycle(cycle, why)}; T{victim}, the "
                       "youngest in the cycle, is the victim and was aborted; retry it")
            if victim == req.txn:
                self._forget(req)
                raise DeadlockError(message)
            self._refuse(victim, message)

    def _refuse(self, txn: int, message: str) -> bool:
        waiting = [r for r in self._by_txn.get(txn, ()) if not r.granted]
        for r in waiting:
            r.refused = message
        if waiting:
            self._changed.notify_all()
        return bool(waiting)

    def refuse_waiter(self, txn: int, message: str) -> bool:
        """Refuse the waiting request of ``txn`` (a victim chosen by the global detector): it
        raises ``DeadlockError(message)`` in its thread. False if ``txn`` waits for nothing here."""
        with self._mutex:
            found = self._refuse(txn, message)
            if found:
                self.counters.deadlocks += 1
            return found

    # -- letting go ---------------------------------------------------------------------------
    def _forget(self, req: Request) -> None:
        """Take ``req`` out of the lock table and grant what can now be granted (mutex held)."""
        self._tables[req.table].remove(req)
        mine = self._by_txn.get(req.txn, [])
        if req in mine:
            mine.remove(req)
        if not mine:
            self._by_txn.pop(req.txn, None)
        self._grant_waiters(req.table)

    def _grant_waiters(self, table: str) -> None:
        locks = self._tables[table]
        woke = False
        for w in locks.waiting():
            if w.refused is None and self._grantable(w):
                w.granted = True
                woke = True
        if woke:
            self._changed.notify_all()

    def release(self, req: Request | None) -> None:
        """Release one S lock before commit (a STABLE reader done with a row). X locks are kept
        to the end of the transaction: that is what makes two-phase locking *strict*."""
        if req is None:
            return
        if req.mode != S:
            raise MinidbError(f"T{req.txn} may not release its {req.describe()} before it "
                              "commits or aborts (strict two-phase locking)")
        with self._mutex:
            if req in self._by_txn.get(req.txn, ()):
                self.counters.early_releases += 1
                self._forget(req)

    def release_all(self, txn: int) -> int:
        """Commit or abort of ``txn``: release every lock it holds (and any request it has
        queued). Returns how many were released."""
        with self._mutex:
            reqs = self._by_txn.pop(txn, [])
            tables = set()
            for r in reqs:
                self._tables[r.table].remove(r)
                tables.add(r.table)
            for t in sorted(tables):
                self._grant_waiters(t)
            return len(reqs)

    # -- looking ------------------------------------------------------------------------------
    def held(self, txn: int) -> list[tuple[str, Any, Any, str]]:
        """The granted locks of ``txn``: (table, lo, hi, mode), in the order they were asked."""
        with self._mutex:
            return [(r.table, r.lo, r.hi, r.mode) for r in self._by_txn.get(txn, ()) if r.granted]

    def waiting(self) -> list[tuple[int, str, Any, Any, str]]:
        """The requests waiting now: (txn, table, lo, hi, mode)."""
        with self._mutex:
            return [(r.txn, r.table, r.lo, r.hi, r.mode)
                    for locks in self._tables.values() for r in locks.waiting()]

    def __repr__(self) -> str:
        with self._mutex:
            n = sum(len(v) for v in self._by_txn.values())
        return f"LockManager({self.name}, {n} requests, {len(self._by_txn)} transactions)"
