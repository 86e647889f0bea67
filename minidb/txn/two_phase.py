"""Two-phase commit of a parallel statement over the nodes, with the registered protocol chosen.

A statement of the parallel engine changes fragments on several nodes (Distributed INGRES's
multi-site update); each node's undo log (``minidb.txn.undo``) makes its own part atomic, and a
commit protocol makes the parts commit or abort together. The protocol is a registered plug-in
(``minidb.txn.commit``, ``connect(commit=...)``), run with the nodes as its participants by
``minidb.txn.commit.enginenet``; the default is presumed abort (Gray 1978; Mohan, Lindsay and
Obermarck, "Transaction management in the R* distributed database management system", 1986):

1. *Prepare.* The coordinator asks every node to prepare. A node forces its pages, then a
   ``PREPARE`` record carrying the catalog it would commit, and answers yes; an error is a no.
2. *Decide.* With every answer yes, the coordinator forces a ``COMMIT`` record with the
   transaction's id and its own new catalog to its log (``wal.log`` in the parallel database's
   directory): that force is the commit point of the whole statement. Then it writes the catalog
   file (``cluster.json``); a crash before that is repaired from the record (``recover``).
3. *Commit.* Every node is told; each forces a ``COMMIT`` record, writes its catalog, and
   acknowledges. Once all have, the coordinator forgets: its log is emptied.

Presumed commit forces a COLLECTING record before step 1 and lets the nodes skip the commit's
force and acknowledgement; 2PC forces and acknowledges aborts too; a student's protocol does
what it does. Any failure before the statement reaches step 1 aborts: the coordinator tells the
nodes to undo, and logs nothing. A node that crashed while prepared finds the transaction *in
doubt* when it is opened again and asks the coordinator's log (``coordinator_decisions``): an
outcome record answers; a record without an outcome means the coordinator never decided: abort;
no record means the protocol's presumption (presumed abort: abort; presumed commit: commit). The
coordinator's log keeps a statement's records until no node can need them.

Counted: per statement, ``last`` (messages, log forces by role; ``ParallelResult.counters``
shows them as ``commit.*``), over the coordinator's life ``TwoPhaseCounters``. Per committed
statement over N nodes under presumed abort: 4N messages, one coordinator force and two per node
(prepare, commit), as on the simulated network; the undo log's forces of before-images come on
top (``benchmarks/bench_commit.py`` measures both). A node whose part of the statement changed
nothing votes READ and leaves (R*'s read-only optimization): it costs 2 messages and no force,
and a statement that changed nothing anywhere costs 2N messages and no force at all.

Simplified: the statement's own phases are the work phase; a node that never answers makes the
request fail after the scheduler's timeout, and counts as down for the rest of the commit.
3PC is refused (``enginenet``: no presumption to settle a node in doubt with).
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
    """The coordinator's half: its log in ``directory``, the chosen ``protocol`` (a registered
    name, class or instance; ``minidb.txn.commit.enginenet.engine_protocol``) and its runs."""

    def __init__(self, directory: str | os.PathLike, protocol=None):
        from minidb.txn.commit.enginenet import engine_protocol, presumption, protocol_name

        self.protocol = engine_protocol(protocol)
        self.protocol_name = protocol_name(self.protocol)
        self.presume = presumption(self.protocol)
        self.log = LogFile(Path(directory) / LOG_FILE)
        self.counters = TwoPhaseCounters()
        #: the commit work of the last statement (``EngineNetwork.counters``)
        self.last: dict[str, int] = {}
        self._kept = not self.log.empty  # records a node may still ask about

    def commit(self, call_all: CallAll, nodes: list[int], catalog: dict, catalog_path: Path) -> str:
        """Commit the open transaction on ``nodes`` with the protocol and write ``catalog`` to
        ``catalog_path``; return the transaction's id. ``CommitAborted``: the protocol aborted
        it (every node it reached undid its part); ``CommitUnfinished``: it is committed but a
        node did not learn it; any other exception before the decision: the caller aborts."""
        from minidb.txn.commit.base import ABORT as ABORTED
        from minidb.txn.commit.base import COMMIT as COMMITTED
        from minidb.txn.commit.enginenet import CommitAborted, EngineNetwork

        txn = secrets.token_hex(8)
        net = EngineNetwork(self.protocol, nodes, self.log, catalog, catalog_path, self.presume)
        try:
            outcome = net.run(txn, call_all)
        except BaseException:
            self._kept = self._kept or not self.log.empty
            raise
        finally:
            self.last = net.counters()
            self.counters.messages += net.messages
            self.counters.log_forces += net.coordinator.log_forces
        undecided = net.undecided()
        if outcome is not None and (not undecided or outcome == self.presume) and not self._kept:
            self.log.reset()  # nobody can need these records: every node knows, or presumes it
        elif outcome is not None or not self.log.empty:
            self._kept = True  # a node may ask: keep them until every node has been reopened
        if outcome == COMMITTED:
            self.counters.commits += 1
            if undecided:
                why = "; ".join(f"node {self.nodes_of(net, p)}: {e}" for p, e in net.down.items())
                raise CommitUnfinished(
                    f"the statement is committed (transaction {txn}) but node(s) {undecided} "
                    f"have not finished it ({why or 'no answer'}); reopen the database to "
                    "complete it")
            return txn
        if outcome == ABORTED:
            self.counters.aborts += 1
            why = {**net.down, **net.no_reasons}
            raise CommitAborted(
                f"the statement was aborted by the commit protocol {self.protocol_name!r}: "
                + ("; ".join(f"node {self.nodes_of(net, p)}: {e}" for p, e in sorted(why.items()))
                   or "a node did not vote yes"))
        raise MinidbError(f"the commit protocol {self.protocol_name!r} did not decide "
                          f"transaction {txn} (nodes down: {sorted(net.down)})")

    @staticmethod
    def nodes_of(net, participant: int) -> int:
        return net.nodes[participant - 1]

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
        """Tell the nodes to undo the open transaction, which the protocol has not begun to
        commit (no node prepared); nothing is logged. A node that cannot be reached undoes it
        when it is opened again."""
        self.counters.aborts += 1
        self.counters.messages += 2 * len(nodes)
        call_all("abort", {n: () for n in nodes}, "abort")

    def forget(self) -> None:
        """Empty the log once every node has been opened (and so has settled what it doubted)."""
        self.log.reset()
        self._kept = False

    def close(self) -> None:
        self.log.close()


def coordinator_decisions(directory: str | os.PathLike) -> Callable[[str, str], bool]:
    """For a node: whether the coordinator in ``directory`` decided to commit transaction ``txn``.
    Its last outcome record (``COMMIT``, ``ABORT``) answers; a record of ``txn`` without one
    means the coordinator was still collecting votes, so it never decided (presumed commit's
    COLLECTING): abort; no record means ``presume``, the presumption of the protocol that
    prepared the node (presumed abort: ``"abort"``; presumed commit: ``"commit"``)."""
    from minidb.txn.undo import ABORT, NOTE

    def committed(txn: str, presume: str = "abort") -> bool:
        mentioned, outcome = False, None
        for r in read_log(Path(directory) / LOG_FILE):
            if r.type in (COMMIT, ABORT, NOTE) and json.loads(r.payload).get("txn") == txn:
                mentioned = True
                if r.type != NOTE:
                    outcome = r.type
        if outcome is not None:
            return outcome == COMMIT
        return not mentioned and presume == "commit"

    return committed
