"""The parallel engine's nodes as a transport for the commit protocols (the third, after
``simnet`` and ``raynet``).

A statement of the parallel engine changes fragments on several nodes (Distributed INGRES's
multi-site update: every site's part commits, or none does). ``minidb.connect(nodes=N,
data_dir=D, commit="presumed_commit")`` commits each such statement with the registered protocol
of that name (presumed abort by default, R*'s choice), running its handlers unchanged:

* the *coordinator* role runs in the host process on a ``Site`` whose log is the parallel
  database's ``wal.log`` (``CoordinatorSite``): a ``COMMIT`` record carries the statement's
  ``cluster.json``, as ``minidb.txn.two_phase`` always wrote it; other records (presumed
  commit's COLLECTING, 2PC's END) are kept as named notes; ``decide(COMMIT)`` writes the catalog
  file (the coordinator "tells the client").
* participant *p* is node *p - 1*, and its role runs *on the node* (inline object or Ray actor,
  through the backend's ``call_all``) on a ``NodeSite`` whose log is the node's undo journal
  (``minidb.txn.undo``): ``vote`` forces the node's pages (an error is a no); a record the
  protocol logs while the node is voting or in doubt ("prepared", 3PC's "precommitted") is a
  ``PREPARE`` record carrying the node catalog it would commit; ``commit`` and ``abort`` are the
  journal's ``COMMIT`` and ``ABORT`` records; each is forced exactly when the protocol says.
  ``decide(COMMIT)`` writes the node's catalog and empties its journal (``Node.commit``);
  ``decide(ABORT)`` undoes the node's part (``Node.abort``). ``changed`` asks the node whether
  its part changed anything (its journal holds a before-image, a grown, created or dropped file,
  or its catalog differs: ``Node.changed``); under presumed abort a node whose part changed
  nothing votes READ (R*'s read-only optimization), forces nothing and ``leave``-s: its journal
  is emptied without a record (``Node.release``), and it is not told the outcome.

``EngineNetwork`` drives one transaction like ``SimulatedNetwork``, over links that neither drop
nor reorder: messages due at the same virtual time go out as one round, the messages for each
node in one call, all nodes at once. A timer fires only when nothing is in flight and someone
still waits for an outcome (a silent node: the coordinator's vote timer aborts). A node whose
call fails (a dead Ray actor) is down for the rest of the run: what is sent to it is lost, as on
the simulated network; it settles when the database is opened again. So a fault-free statement
sends the messages and forces the logs the simulator counts for the same protocol and number of
participants (``ParallelResult.counters["commit.messages"]``, ``["commit.forces"]``).

Recovery follows the protocol's presumption (R*: Mohan, Lindsay and Obermarck 1986). A node in
doubt when it is opened asks the coordinator's ``wal.log`` (``two_phase.coordinator_decisions``):
an outcome record answers; a record of the transaction with no outcome means the coordinator was
still collecting votes, so it never decided: abort; no record at all means the protocol's
presumption, which the node's PREPARE record carries (the protocol's own coordinator, asked about
a transaction it has no record of, gave it: ``presumption``). The coordinator drops a statement's
records once nobody can ask about them: every node decided, or the outcome is what the
presumption answers anyway (presumed commit forgets a commit at once, presumed abort an abort).

A protocol whose coordinator gives no answer about a transaction it has forgotten (3PC, whose
way out of doubt is its termination protocol among the participants) is refused here: the
engine's nodes act only when the coordinator calls them, so a node in doubt after a crash would
have nobody to settle it with.
"""

from __future__ import annotations

import heapq
import itertools
import json
from pathlib import Path

from minidb.errors import MinidbError
from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR, CommitProtocol, Message
from minidb.txn.commit.raynet import _Port
from minidb.txn.commit.simnet import Site, dispatch

#: the protocol the engine runs when ``connect`` names none (R*'s, as before this module)
DEFAULT_PROTOCOL = "presumed_abort"
#: how far (virtual time units) one statement's run may go before the coordinator must decide
UNTIL = 1000.0


class CommitAborted(MinidbError):
    """The commit protocol decided to abort the statement (a node voted no or fell silent);
    every node it reached has undone its part, the others undo it when reopened."""


def engine_protocol(choice: str | type | CommitProtocol | None) -> CommitProtocol:
    """The protocol instance for ``connect(commit=...)``: a registered name (an unknown one is an
    error listing the registered ones), a ``CommitProtocol`` class or instance. Refuses one the
    engine cannot recover with (see the module docstring)."""
    from minidb.plugins import lookup, names

    choice = DEFAULT_PROTOCOL if choice is None else choice
    if isinstance(choice, str):
        try:
            proto = lookup("commit", choice)()
        except MinidbError:
            raise MinidbError(f"unknown commit protocol {choice!r}; the registered ones are: "
                              f"{', '.join(names('commit'))}") from None
    elif isinstance(choice, type) and issubclass(choice, CommitProtocol):
        proto = choice()
    elif isinstance(choice, CommitProtocol):
        proto = choice
    else:
        raise MinidbError(f"commit must name a registered commit protocol "
                          f"({', '.join(names('commit'))}), not {choice!r}")
    if presumption(proto) is None:
        raise MinidbError(
            f"commit protocol {protocol_name(proto)!r} cannot commit the parallel engine's "
            "statements: its coordinator gives no answer about a transaction it has no record "
            "of, so a node left in doubt by a crash could not be settled when the database is "
            "reopened (3PC settles doubt with its termination protocol among the participants, "
            "and the engine's nodes act only when the coordinator calls them); choose a protocol "
            "with a presumption, e.g. presumed_abort or presumed_commit")
    return proto


def protocol_name(proto: CommitProtocol) -> str:
    name = getattr(proto, "name", None)
    return name if isinstance(name, str) and name != "base" else type(proto).__name__


def presumption(proto: CommitProtocol) -> str | None:
    """What ``proto``'s coordinator answers a participant asking about a transaction of which it
    has no record (COMMIT or ABORT), found by asking it; None when it does not answer."""
    port = _Port(proto, 1, {})
    site = Site(port, COORDINATOR)
    try:
        proto.receive(site, Message(1, COORDINATOR, "ask", "probe"))
    except Exception:  # a handler that cannot take the question has no presumption to give
        return None
    for effect in port.effects:
        if effect[0] == "send" and effect[1].dst == 1 and effect[1].kind in (COMMIT, ABORT):
            return effect[1].kind
    return None


# -- the coordinator's site: wal.log ----------------------------------------------------------------
class CoordinatorSite(Site):
    """The coordinator, site 0, in the host process: its log is the parallel database's
    ``wal.log``; deciding commit writes the statement's ``cluster.json``."""

    def __init__(self, port, log, catalog: dict, catalog_path: Path):
        super().__init__(port, COORDINATOR)
        self.file, self.catalog, self.catalog_path = log, catalog, catalog_path

    def log(self, kind: str, txn, force: bool = False, **data) -> None:
        from minidb.txn.undo import ABORT as ABORT_RECORD
        from minidb.txn.undo import COMMIT as COMMIT_RECORD
        from minidb.txn.undo import NOTE

        super().log(kind, txn, force, **data)
        if kind == COMMIT:  # the commit point of the statement, as minidb.txn.two_phase wrote it
            record, body = COMMIT_RECORD, {"txn": txn, "catalog": self.catalog}
        elif kind == ABORT:
            record, body = ABORT_RECORD, {"txn": txn}
        else:
            record, body = NOTE, {"txn": txn, "kind": kind}
        self.file.append(record, json.dumps(body).encode())
        if force:
            self.file.force()

    def force(self) -> None:
        super().force()
        self.file.force()

    def decide(self, txn, outcome: str) -> None:
        if outcome == COMMIT and self.decided(txn) is None:
            from minidb.catalog import write_json_atomically

            write_json_atomically(self.catalog_path, self.catalog)  # the client is told
        super().decide(txn, outcome)


# -- a participant's site: the node's undo journal ---------------------------------------------------
class NodeSite(Site):
    """Participant ``site_id`` on ``node`` (a ``minidb.cluster.node.Node``): its log is the
    node's undo journal, its decisions commit or undo the node's part of the statement."""

    def __init__(self, port, site_id: int, node, ctx: dict):
        super().__init__(port, site_id)
        self.node, self.ctx = node, ctx
        self.no_reason: str | None = None

    def vote(self, txn) -> bool:
        super().vote(txn)
        try:
            self.node.db.force_pages()  # FORCE: the statement's pages are on disk before the vote
        except Exception as e:  # a node that cannot make its part durable votes no
            self.no_reason = f"{type(e).__name__}: {e}"
            return False
        return True

    def log(self, kind: str, txn, force: bool = False, **data) -> None:
        super().log(kind, txn, force, **data)
        db = self.node.db
        if kind == COMMIT:
            db.log_commit(force)
        elif kind == ABORT:
            db.log_abort(txn, force)
        else:  # voting or in doubt (prepared, pre-committed): the catalog it would commit
            self.node.prepare_as = {"kind": kind, "force": force, "protocol": self.ctx["protocol"],
                                    "presume": self.ctx["presume"]}
            try:
                self.node.prepare(txn)
            finally:
                self.node.prepare_as = {}

    def force(self) -> None:
        super().force()
        self.node.db.force_log()

    def changed(self, txn) -> bool:
        return self.node.changed()

    def leave(self, txn) -> None:
        super().leave(txn)
        self.node.release()

    def decide(self, txn, outcome: str) -> None:
        if outcome in (COMMIT, ABORT) and self.decided(txn) is None:
            if outcome == COMMIT:
                self.node.commit(txn)
            else:
                self.node.abort()
        super().decide(txn, outcome)


def handle_on_node(node, protocol: CommitProtocol, ctx: dict, seq: int, events: list) -> dict:
    """Run the participant's handlers for ``events`` (``(time, event)``, in order) on ``node``
    (``Node.commit_events`` calls this, inline or in a Ray actor). The site lives on the node
    for the whole transaction; a batch delivered again (the driver retrying after a failed
    round) is answered from memory, not handled twice. A handler that raises stops the batch:
    the site is down for the rest of the run (its journal settles it when reopened)."""
    run = getattr(node, "_commit_run", None)
    if run is None or run["txn"] != ctx["txn"]:
        port = _Port(protocol, ctx["participants"], {})
        run = node._commit_run = {"txn": ctx["txn"], "port": port, "seq": None, "reply": None,
                                  "site": NodeSite(port, ctx["site"], node, ctx)}
    if run["seq"] == seq:
        return run["reply"]
    port, site = run["port"], run["site"]
    port.protocol = protocol
    results = []
    for now, event in events:
        port.now, port.effects, port.decisions = now, [], []
        site.clock = now
        error = None
        try:
            dispatch(protocol, site, event)
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
        results.append({"effects": port.effects, "decisions": [d[3] for d in port.decisions],
                        "error": error})
        if error is not None:
            break
    reply = {"results": results, "log_records": site.log_records, "log_forces": site.log_forces,
             "no_reason": site.no_reason, "left": bool(port.left)}
    run["seq"], run["reply"] = seq, reply
    return reply


# -- the driver -----------------------------------------------------------------------------------
class EngineNetwork:
    """One transaction of ``protocol`` over the engine's ``nodes`` (participant p = node p-1),
    the coordinator on ``CoordinatorSite``; see the module docstring."""

    def __init__(self, protocol: CommitProtocol, nodes: list[int], log, catalog: dict,
                 catalog_path: Path, presume: str):
        self.protocol, self.nodes, self.presume = protocol, list(nodes), presume
        self.port = _Port(protocol, len(nodes), {})
        self.coordinator = CoordinatorSite(self.port, log, catalog, catalog_path)
        self.messages = 0
        self.node_records = [0] * len(nodes)
        self.node_forces = [0] * len(nodes)
        self.outcomes: dict[int, str] = {}  # participant -> what it decided
        self.left: set[int] = set()  # participants that voted READ and left (R*)
        self.down: dict[int, str] = {}  # participant -> why its node stopped answering
        self.no_reasons: dict[int, str] = {}
        self._events: list = []
        self._seq = itertools.count()
        self._rounds = itertools.count()

    # -- what happened ------------------------------------------------------------------------
    @property
    def outcome(self) -> str | None:
        return self.coordinator.decided(self.txn)

    def counters(self) -> dict[str, int]:
        """The commit work of this statement, by role (the simulator's ``RunResult`` figures)."""
        c = self.coordinator
        return {"messages": self.messages, "forces": c.log_forces + sum(self.node_forces),
                "coordinator_forces": c.log_forces, "participant_forces": sum(self.node_forces),
                "log_records": c.log_records + sum(self.node_records),
                "coordinator_log_records": c.log_records,
                "participant_log_records": sum(self.node_records),
                "participants": len(self.nodes), "read_only": len(self.left)}

    def undecided(self) -> list[int]:
        """Nodes that did not learn the outcome (down, or left waiting); a node that voted READ
        needs none."""
        return [self.nodes[p - 1] for p in range(1, len(self.nodes) + 1)
                if p not in self.outcomes and p not in self.left]

    # -- the run ------------------------------------------------------------------------------
    def run(self, txn: str, call_all) -> str | None:
        """Commit ``txn``; the coordinator's outcome (None: it never decided)."""
        self.txn, self.call_all = txn, call_all
        self.ctx = {"txn": txn, "participants": len(self.nodes),
                    "protocol": protocol_name(self.protocol), "presume": self.presume}
        self._at_coordinator(0.0, ("start", txn))
        while self._events:
            now = self._events[0][0]
            if now > UNTIL:
                break
            if self._finished():
                break
            due = []
            while self._events and self._events[0][0] == now:
                due.append(heapq.heappop(self._events))
            if all(kind == "timer" for _, _, kind, _ in due) and self._finished():
                break
            self._round(now, due)
        return self.outcome

    def _finished(self) -> bool:
        """Nothing in flight, the coordinator decided, and every node that is up decided: the
        timers left (acknowledgements still awaited, say) would find nothing to do."""
        in_flight = any(kind == "deliver" for _, _, kind, _ in self._events)
        waiting = [p for p in range(1, len(self.nodes) + 1)
                   if p not in self.outcomes and p not in self.down and p not in self.left]
        return not in_flight and self.outcome is not None and not waiting

    def _round(self, now: float, due: list) -> None:
        per_node: dict[int, list] = {}
        for _, _, kind, payload in due:
            if kind == "deliver":
                m = payload
                event = ("receive", m)
                site = m.dst
            else:
                site, txn, tag = payload
                event = ("timeout", txn, tag)
            if site == COORDINATOR:
                self._at_coordinator(now, event)
            elif site in self.down:
                continue  # lost: the node does not answer
            else:
                per_node.setdefault(site, []).append((now, event))
        if per_node:
            self._at_nodes(now, per_node)

    def _at_coordinator(self, now: float, event: tuple) -> None:
        self.port.now, self.port.effects, self.port.decisions = now, [], []
        self.coordinator.clock = now
        dispatch(self.protocol, self.coordinator, event)
        self._carry_out(COORDINATOR, now, self.port.effects)

    def _at_nodes(self, now: float, per_node: dict[int, list]) -> None:
        seq = next(self._rounds)
        args = {self.nodes[p - 1]: (self.protocol, {**self.ctx, "site": p}, seq, events)
                for p, events in per_node.items()}
        try:
            replies = dict(zip(args, self.call_all("commit_events", args, "commit"), strict=True))
        except Exception:  # someone failed: ask each node alone (a node answers a batch once)
            replies = {}
            for node, a in args.items():
                try:
                    replies[node] = self.call_all("commit_events", {node: a}, "commit")[0]
                except Exception as e:
                    replies[node] = e
        for p in per_node:
            reply = replies[self.nodes[p - 1]]
            if isinstance(reply, Exception):
                self.down[p] = f"{type(reply).__name__}: {reply}"
                continue
            self.node_records[p - 1] = reply["log_records"]
            self.node_forces[p - 1] = reply["log_forces"]
            if reply["no_reason"]:
                self.no_reasons[p] = reply["no_reason"]
            if reply.get("left"):
                self.left.add(p)
            for result in reply["results"]:
                for outcome in result["decisions"]:
                    self.outcomes[p] = outcome
                self._carry_out(p, now, result["effects"])
                if result["error"] is not None:
                    self.down[p] = result["error"]

    def _carry_out(self, site: int, now: float, effects: list) -> None:
        for effect in effects:
            if effect[0] == "send":
                m, after = effect[1], effect[2]
                self.messages += 1
                self._schedule(now + after + 1, "deliver", m)
            else:
                _, delay, txn, tag = effect
                self._schedule(now + delay, "timer", (site, txn, tag))

    def _schedule(self, time: float, kind: str, payload) -> None:
        heapq.heappush(self._events, (time, next(self._seq), kind, payload))
