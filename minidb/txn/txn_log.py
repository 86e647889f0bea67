"""A transaction survives a crash whole or not at all: a log of its logical undo records.

Why. A transaction (``minidb.txn.transaction``, ``minidb.cluster.transaction``) runs several
statements, and in a data directory each statement is committed on its own by the statement
journal (``minidb.txn.undo``; on the parallel engine by the commit protocol,
``minidb.txn.two_phase``). Without more, a process killed between two statements of a
transaction leaves the statements it had run: changes nobody committed. The transaction already
keeps, for its own ``abort``, a *logical* undo record of every write (the rows having the keys it
X-locked, as they were before the write). This module makes those records durable, so that
restart recovery can roll back every transaction that had not committed: the *losers* of
Gray and Reuter's restart (Transaction Processing, ch. 10), and what NonStop SQL's audit trail
gives its transactions (Englert et al. 1989, Section 2; Helland et al. 1988 on its log).

The log (``txn.log`` in the directory; records as in ``minidb.txn.log``) holds two kinds of
record:

* ``WRITE`` (transaction id, table, lock-key column, the keys, the rows before): appended and
  **forced before the write runs**, the write-ahead rule one level up: the statement that makes
  the change durable commits after its undo record is durable.
* ``END`` (transaction id, "commit" or "abort"): forced at commit, and that force is the
  transaction's **commit point**; at abort it is forced after the undo has put the rows back and
  before the locks are released (else a restart would undo the rows again, over what the next
  holder of the locks committed). A transaction that wrote nothing logs nothing.

Restart (``losers`` then ``reset``): a transaction with a ``WRITE`` and no ``END`` after it is a
loser; its writes are undone newest first, each undo step a statement of its own (committed by
the statement journal), and once every loser is undone the log is emptied. Undoing is
idempotent: a step sets the rows with its keys back to fixed rows, so a crash in the middle of
recovery, followed by the same recovery from the start, ends in the same state. Strict
two-phase locking is what makes key-by-key undo correct: while a transaction lives nobody else
writes its X-locked keys inside a transaction (statements outside a transaction take no locks;
if one changes such a row, undo puts the old row back, as ``abort`` does).

Group commit (Helland, Sammer, Lyon, Carr, Garrett and Reuter, Tandem 1988; the simulated
network's protocol of the same name is ``minidb.txn.commit.group_commit``): with
``set_group_commit(size, wait_s)`` a commit's END record is appended and the committing thread
waits until ``size`` commits wait or ``wait_s`` has passed; then one force makes the whole group
durable and every member returns. Under load many commits share a force; the price is the wait
(``benchmarks/bench_commit.py`` measures both). Any force covers every record before it, so a
WRITE forced by another thread releases the waiting commits too. An abort's END is forced at
once: it must be durable before the locks go.

The log is emptied when no transaction that wrote is live and it has grown past ``RESET_BYTES``
(emptying costs a force too, so not after every commit), and at every restart.

Counted (``counters``): records, bytes and forces, as for the node's other log; per committed
transaction that wrote: one forced ``WRITE`` per write statement and one ``END``, forced alone or
with its group (``commits`` and ``commit_forces``: committed transactions, and the forces made
for their END records).
"""

from __future__ import annotations

import io
import json
import struct
import threading
import time
from pathlib import Path

import numpy as np

from minidb.errors import MinidbError
from minidb.txn.log import LogCounters, LogFile

TXN_LOG_FILE = "txn.log"
WRITE, END = 1, 2
#: a log this large is emptied the next time no transaction that wrote is live
RESET_BYTES = 1 << 20
#: group commit's timer: the longest a commit waits for others to share its force (our choice:
#: a few times a disk's rotation, so a lone commit is not held up long)
GROUP_WAIT_S = 0.01
_HEADER = struct.Struct("<I")  # length of the JSON part of a WRITE record


def encode_write(txn: int, table: str, key: str, keys: list, before: np.ndarray) -> bytes:
    """A WRITE record's payload: a JSON header, then the rows before in numpy's ``.npy`` form."""
    head = json.dumps({"txn": txn, "table": table, "key": key, "keys": keys}).encode()
    rows = io.BytesIO()
    np.save(rows, before, allow_pickle=False)
    return _HEADER.pack(len(head)) + head + rows.getvalue()


def decode_write(payload: bytes) -> tuple[int, str, str, list, np.ndarray]:
    (n,) = _HEADER.unpack_from(payload)
    head = json.loads(payload[_HEADER.size:_HEADER.size + n])
    before = np.load(io.BytesIO(payload[_HEADER.size + n:]), allow_pickle=False)
    return head["txn"], head["table"], head["key"], head["keys"], before


class TransactionLog:
    """The log of logical undo records of one database's transactions (see the module)."""

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / TXN_LOG_FILE
        self.log = LogFile(self.path)
        self._mutex = threading.Condition()
        self._live: set[int] = set()  # transactions with a WRITE and no END yet
        self._forces = 0  # forces made so far: an END is durable once a force follows it
        self._waiting = 0  # commits whose END waits for a group force
        self.group_size, self.group_wait_s = 1, GROUP_WAIT_S
        #: committed transactions (END "commit" records) and the forces that made them durable
        self.commits = 0
        self.commit_forces = 0

    @property
    def counters(self) -> LogCounters:
        return self.log.counters

    def set_group_commit(self, size: int, wait_s: float = GROUP_WAIT_S) -> None:
        """Group commit (Helland et al. 1988): a commit's END record waits until ``size`` of them
        wait, or ``wait_s`` seconds, and one force makes the whole group durable. ``size=1``
        (the default) forces every commit alone."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise MinidbError(f"group commit size must be a whole number of at least 1, not {size!r}")
        if isinstance(wait_s, bool) or not isinstance(wait_s, int | float) or not 0 < wait_s <= 10:
            raise MinidbError(f"group commit wait must be a number of seconds in (0, 10], "
                              f"not {wait_s!r}")
        with self._mutex:
            self.group_size, self.group_wait_s = size, float(wait_s)

    def write(self, txn: int, table: str, key: str, keys: list, before: np.ndarray) -> None:
        """Log a transaction's undo record and force it, before the write it undoes runs."""
        payload = encode_write(txn, table, key, keys, before)
        with self._mutex:
            self._check_open()
            self.log.append(WRITE, payload)
            self._force()
            self._live.add(txn)

    def end(self, txn: int, outcome: str) -> None:
        """Log that ``txn`` committed or finished aborting, and return once the record is
        durable: forced alone, or with its group under group commit. A transaction that wrote
        nothing has nothing to log."""
        with self._mutex:
            if txn not in self._live:
                return
            self._check_open()
            self.log.append(END, json.dumps({"txn": txn, "outcome": outcome}).encode())
            mine = self._forces  # the END is durable once a force after this one is done
            if outcome == "commit":
                self.commits += 1
            if self.group_size > 1 and outcome == "commit":
                self._wait_for_group(mine)
            if self._forces == mine:
                self._force(commit=outcome == "commit")
            self._live.discard(txn)
            if not self._live and self.log.size > RESET_BYTES and self._waiting == 0:
                self.log.reset()

    def _wait_for_group(self, mine: int) -> None:
        """Wait (mutex released) until a force covers this END: the group's last member or the
        first one whose wait ran out forces for all (mutex held)."""
        self._waiting += 1
        deadline = time.monotonic() + self.group_wait_s
        try:
            while self._forces == mine and self._waiting < self.group_size:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._mutex.wait(left)
        finally:
            self._waiting -= 1
        if self._forces == mine:
            self._force(commit=True)

    def _force(self, commit: bool = False) -> None:
        """One force of everything appended so far; wake the commits waiting for it."""
        self.log.force()
        self._forces += 1
        if commit:
            self.commit_forces += 1
        self._mutex.notify_all()

    def losers(self) -> dict[int, list[tuple[str, str, list, np.ndarray]]]:
        """The transactions the log shows written and not ended, each with its undo records
        (table, key column, keys, rows before), oldest first; read from the file."""
        live: dict[int, list] = {}
        for record in self.log.records():
            if record.type == WRITE:
                txn, table, key, keys, before = decode_write(record.payload)
                live.setdefault(txn, []).append((table, key, keys, before))
            elif record.type == END:
                live.pop(json.loads(record.payload)["txn"], None)
        return live

    def reset(self) -> None:
        """Empty the log: every loser is undone (restart), nothing in it is needed any more."""
        with self._mutex:
            self._check_open()
            self.log.reset()
            self._live.clear()

    def close(self) -> None:
        """Force what was appended (a commit waiting for its group is durable, and returns),
        then close the file."""
        with self._mutex:
            if not self.log.closed:
                self._force()
            self.log.close()

    def _check_open(self) -> None:
        if self.log.closed:
            raise MinidbError("the database was closed; a transaction that had not committed is "
                              "rolled back when the directory is opened again")
