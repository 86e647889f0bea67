"""Two-phase commit of a parallel statement over the nodes, presumed abort.

A statement of the parallel engine changes fragments on several nodes; each node's undo log
(``minidb.txn.undo``) makes its own part atomic, and this protocol makes the parts commit or abort
together (Gray 1978; the presumed-abort variant of Mohan, Lindsay and Obermarck, "Transaction
management in the R* distributed database management system", 1986):

1. *Prepare.* The coordinator asks every node to prepare. A node forces its pages, then a
   ``PREPARE`` record carrying the catalog it would commit, and answers yes; an error is a no.
2. *Decide.* With every answer yes, the coordinator forces a ``COMMIT`` record with the
   transaction's id and its own new catalog to its log (``wal.log`` in the parallel database's
   directory): that force is the commit point of the whole statement. Then it writes the catalog
   file (``cluster.json``); a crash before that is repaired from the record (``recover``).
3. *Commit.* Every node is told; each writes a ``COMMIT`` record and its catalog, and answers. Once
   all have, the coordinator empties its log.

Any failure before step 2 aborts: the coordinator tells the nodes it can reach to undo, and logs
nothing (presumed abort: no record of an abort is ever needed). A node that crashed while
prepared finds the transaction *in doubt* when it is opened again and asks the coordinator's log
(``coordinator_decisions``): a ``COMMIT`` record there means commit, no record means abort. The
coordinator's log is emptied only after every node has committed, so the answer is there for as
long as a node may ask.

Counted (``TwoPhaseCounters``): messages (a request and its answer are two), coordinator log forces.
Per committed statement over N nodes: 4N messages and one coordinator force, plus each node's
two forces (prepare, commit); the undo log's forces of before-images come on top
(``benchmarks/bench_commit.py`` measures both).

Simplified: the statement's own phases are the work phase; a node that never answers makes the
request fail after the scheduler's timeout, which aborts. Three-phase commit, presumed commit and
group commit are not here yet.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from minidb.errors import MinidbError
from minidb.txn.log import LogFile, read_log
from minidb.txn.undo import COMMIT, LOG_FILE

#: call every node: (method name, {node: args}, phase name) -> their answers
CallAll = Callable[[str, dict, str], list]


class CommitUnfinished(MinidbError):
    """The coordinator decided to commit, but a node could not be told: the statement is
    committed, and the node finishes it when the database is opened again."""


@dataclass
class TwoPhaseCounters:
    """Work of the commit protocol over the life of one coordinator."""

    commits: int = 0
    aborts: int = 0
    messages: int = 0
    log_forces: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class TwoPhaseCoordinator:
    """The coordinator's half: its log in ``directory`` and the two rounds of messages."""

    def __init__(self, directory: str | os.PathLike):
        self.log = LogFile(Path(directory) / LOG_FILE)
        self.counters = TwoPhaseCounters()

    def commit(self, call_all: CallAll, nodes: list[int], catalog: dict, catalog_path: Path) -> str:
        """Commit the open transaction on ``nodes`` and write ``catalog`` to ``catalog_path``;
        return the transaction's id. An exception before the decision means the caller must
        ``abort``; after it, ``CommitUnfinished`` (the statement *is* committed)."""
        from minidb.catalog import write_json_atomically

        txn = secrets.token_hex(8)
        call_all("prepare", {n: (txn,) for n in nodes}, "prepare")
        self.counters.messages += 2 * len(nodes)
        self.log.append(COMMIT, json.dumps({"txn": txn, "catalog": catalog}).encode())
        self.log.force()  # the decision: from here the statement is committed
        self.counters.log_forces += 1
        try:
            write_json_atomically(catalog_path, catalog)
            call_all("commit", {n: (txn,) for n in nodes}, "commit")
        except Exception as e:
            raise CommitUnfinished(
                f"the statement is committed (transaction {txn}) but not every node has "
                f"finished it ({e}); reopen the database to complete it") from e
        self.counters.messages += 2 * len(nodes)
        self.log.reset()  # every node has committed: nobody will ask any more
        self.counters.commits += 1
        return txn

    def recover(self, catalog_path: Path) -> bool:
        """At opening, before the catalog is read: write the catalog of a transaction decided
        committed again (the crash may have come before it was written). The log is kept until
        the nodes have been opened (``forget``). Whether there was such a transaction."""
        from minidb.catalog import write_json_atomically

        decided = [json.loads(r.payload) for r in self.log.records() if r.type == COMMIT]
        if decided:
            write_json_atomically(catalog_path, decided[-1]["catalog"])
        return bool(decided)

    def abort(self, call_all: CallAll, nodes: list[int]) -> None:
        """Tell the nodes to undo the open transaction; nothing is logged (presumed abort). A node
        that cannot be reached undoes it when it is opened again."""
        self.counters.aborts += 1
        self.counters.messages += 2 * len(nodes)
        call_all("abort", {n: () for n in nodes}, "abort")

    def forget(self) -> None:
        """Empty the log once every node has been opened (and so has settled what it doubted)."""
        self.log.reset()

    def close(self) -> None:
        self.log.close()


def coordinator_decisions(directory: str | os.PathLike) -> Callable[[str], bool]:
    """For a node: whether the coordinator in ``directory`` decided to commit transaction ``txn``
    (a ``COMMIT`` record in its log); no record means abort."""
    def committed(txn: str) -> bool:
        return any(r.type == COMMIT and json.loads(r.payload)["txn"] == txn
                   for r in read_log(Path(directory) / LOG_FILE))

    return committed
