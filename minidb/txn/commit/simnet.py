"""A seeded simulated network for commit protocols: delay, drop, duplicate, partition, crash.

Discrete events in virtual time. A message takes 1 to 3 time units (uniform, from the seed); it
can be dropped (probability ``drop``), delivered twice (``duplicate``), or lost because a
partition separates the two sites at the moment it is sent. A log force takes ``force_time``
units (0 by default) on the site's one log device: what the handler does after a force happens
that much later, and forces queue behind each other, so a protocol that forces less commits
more per unit of time when the log is the bottleneck (group commit). A site can be told to crash at its
k-th *step* (a step is one log write or one message sent: the site dies just before doing it) and
to restart ``restart_after`` units later (None: it stays down). A crash loses the site's volatile
state and every log record not covered by a force; the protocol's ``recover`` then runs on what
the stable log holds. Everything is drawn from one ``random.Random(seed)``, so a failing seed
replays exactly, event for event (``RunResult.trace``).

A workload can mark a participant *read-only* for a transaction (``read_only={(site, txn)}``):
it changed nothing there, and ``Site.changed`` says so. Protocols with R*'s read-only
optimization (presumed abort) let such a participant vote READ and ``leave``; the others ignore
the mark and let it take part as any other.

The network does not know any protocol: it calls ``CommitProtocol.start / receive / timeout /
recover`` and counts what the protocol does (messages, log records, forces) per site.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field

from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR, CommitProtocol, LogRecord, Message


class SiteCrashed(Exception):
    """Raised inside a handler when the site reaches the step it was told to crash at."""


@dataclass
class Crash:
    """Crash ``site`` just before its ``step``-th step (1 = its first); restart it after
    ``restart_after`` time units, or never (None)."""

    site: int
    step: int
    restart_after: float | None = 30


@dataclass
class Partition:
    """From ``start`` to ``end``, messages between ``side`` and the other sites are lost."""

    start: float
    end: float
    side: frozenset[int]

    def separates(self, a: int, b: int, now: float) -> bool:
        return self.start <= now < self.end and ((a in self.side) != (b in self.side))


@dataclass
class RunResult:
    """What happened in one run, and what the checks need."""

    participants: int
    votes: dict[tuple[int, int], bool]
    decisions: list[tuple[float, int, int, str]]  # (time, site, txn, outcome), every one made
    up: list[bool]  # each site's state at the end
    messages: int
    log_records: list[int]  # per site
    log_forces: list[int]  # per site
    trace: list[dict] = field(default_factory=list)
    txns: list[int] = field(default_factory=list)
    voted: set[tuple[int, int]] = field(default_factory=set)
    lost_work: set[tuple[int, int]] = field(default_factory=set)
    read_only: set[tuple[int, int]] = field(default_factory=set)  # the workload's marks
    left: set[tuple[int, int]] = field(default_factory=set)  # voted READ and left (R*)

    def outcome(self, site: int, txn: int) -> str | None:
        """The last outcome ``site`` decided for ``txn`` (None: undecided)."""
        found = None
        for _, s, t, o in self.decisions:
            if s == site and t == txn:
                found = o
        return found

    def has_left(self, site: int, txn: int) -> bool:
        """Whether ``site`` voted READ on ``txn`` and left (R*): it needs no outcome."""
        return (site, txn) in self.left

    def blocked(self, txn: int) -> list[int]:
        """Participants that voted on ``txn``, are up at the end and have not decided: in doubt,
        they can neither commit nor abort on their own. One that voted READ and left is not in
        doubt: it has nothing to commit or undo."""
        return [p for p in range(1, self.participants + 1)
                if self.up[p] and (p, txn) in self.voted and self.outcome(p, txn) is None
                and not self.has_left(p, txn)]

    def violations(self, everyone_recovers: bool = True) -> list[str]:
        """Broken promises, one line each (empty: the run is correct). ``everyone_recovers``: all
        sites restart and the network heals, so a commit must reach every participant."""
        out = []
        for txn in self.txns:
            made = {(s, o) for _, s, t, o in self.decisions if t == txn}
            outcomes = {o for _, o in made}
            if len(outcomes) > 1:
                out.append(f"txn {txn}: atomicity broken, sites decided both commit and abort: "
                           f"{sorted(made)}")
            for site in {s for s, _ in made}:
                if len({o for s, o in made if s == site}) > 1:
                    out.append(f"txn {txn}: site {site} changed its decision")
            no = [p for p in range(1, self.participants + 1) if not self.votes.get((p, txn), True)]
            if COMMIT in outcomes and no:
                out.append(f"txn {txn}: committed although participant(s) {no} voted no")
            lost = sorted(s for s, t in self.lost_work if t == txn and (s, COMMIT) in made)
            if lost:
                out.append(f"txn {txn}: site(s) {lost} committed work a crash had wiped out "
                           "(their yes vote was not in the stable log)")
            wrongly_left = sorted(p for p, t in self.left
                                  if t == txn and (p, txn) not in self.read_only)
            if wrongly_left:
                out.append(f"txn {txn}: participant(s) {wrongly_left} voted read-only and left, "
                           "but had changed something (their work is neither committed nor "
                           "undone)")
            if everyone_recovers and self.outcome(COORDINATOR, txn) == COMMIT:
                lost = [p for p in range(1, self.participants + 1)
                        if self.outcome(p, txn) != COMMIT and not self.has_left(p, txn)]
                if lost:
                    out.append(f"txn {txn}: the coordinator committed but participant(s) {lost} "
                               "never did (a lost commit)")
        return out


class Site:
    """One site as a protocol sees it: its log, timers, messages, vote and decisions."""

    def __init__(self, net: SimulatedNetwork, site_id: int):
        self.id, self.net = site_id, net
        self.up = True
        self.state: dict = {}  # the protocol's volatile state (lost in a crash)
        self._log: list[LogRecord] = []
        self._stable = 0
        self._decided: dict[int, str] = {}
        self.steps = 0
        self.crash_at: int | None = None
        self.incarnation = 0
        self.log_records = self.log_forces = 0
        self.clock = 0.0  # the site's time in a handler: past the network's after a force
        self._log_free_at = 0.0  # when the log device finishes the forces queued on it

    @property
    def participants(self) -> list[int]:
        return list(range(1, self.net.participants + 1))

    @property
    def now(self) -> float:
        """The site's time: the network's, plus the forces this handler has waited for."""
        return self.clock

    def _wait_for_force(self) -> None:
        """A force takes ``force_time`` on the site's one log device, after the ones before it."""
        cost = getattr(self.net, "force_time", 0.0)
        if cost:
            self.clock = max(self.clock, self._log_free_at) + cost
            self._log_free_at = self.clock

    # -- what a protocol may do -----------------------------------------------------------------
    def log(self, kind: str, txn: int, force: bool = False, **data) -> None:
        """Append a record to this site's log; ``force``: it and every earlier one are stable."""
        self._step()
        self._log.append(LogRecord(kind, txn, data))
        self.log_records += 1
        if force:
            self._stable = len(self._log)
            self.log_forces += 1
            self._wait_for_force()
        self.net._trace("log", self.id, None, kind, txn, forced=force)

    def force(self) -> None:
        """Make every record appended so far stable, with one force (group commit's)."""
        self._step()
        if self._stable < len(self._log):
            self._stable = len(self._log)
            self.log_forces += 1
            self._wait_for_force()
            self.net._trace("force", self.id, None, "", -1)

    def stable_log(self) -> list[LogRecord]:
        """The records that would survive a crash now (all of them, after a recovery)."""
        return list(self._log[: self._stable])

    def send(self, to: int, kind: str, txn: int, **data) -> None:
        self._step()
        self.net._transmit(Message(self.id, to, kind, txn, data), self.clock)

    def set_timer(self, txn: int, tag: str, delay: float | None = None) -> None:
        delay = self.net.protocol.timeout_after if delay is None else delay
        self.net._schedule(self.clock + delay, "timer", (self.id, self.incarnation, txn, tag))

    def vote(self, txn: int) -> bool:
        """Whether this participant can commit ``txn`` (the workload decides). Asking is voting:
        from here until it decides, a participant that said yes is *in doubt*."""
        self.net.voted.add((self.id, txn))
        return self.net.votes.get((self.id, txn), True)

    def changed(self, txn: int) -> bool:
        """Whether this participant changed anything in ``txn`` (the workload decides: True
        unless it marked the site read-only). R*'s presumed abort asks it before the vote."""
        return (self.id, txn) not in self.net.read_only

    def leave(self, txn: int) -> None:
        """This participant voted READ on ``txn`` (R*, Mohan, Lindsay and Obermarck 1986): it
        changed nothing, so it has nothing to commit or undo and takes no part in phase two."""
        self.net.left.add((self.id, txn))
        self.net._trace("leave", self.id, None, "", txn)

    def decide(self, txn: int, outcome: str) -> None:
        """Apply the outcome of ``txn`` at this site (the coordinator's: tell the client)."""
        if outcome not in (COMMIT, ABORT):
            raise ValueError(f"an outcome is {COMMIT!r} or {ABORT!r}, not {outcome!r}")
        if self._decided.get(txn) == outcome:
            return  # told again (a duplicate message, a recovery): nothing new
        self._decided[txn] = outcome
        self.net.decisions.append((self.clock, self.id, txn, outcome))
        self.net._trace("decide", self.id, None, outcome, txn)

    def decided(self, txn: int) -> str | None:
        """What this site decided for ``txn`` since it last started (volatile)."""
        return self._decided.get(txn)

    # -- the network's side ---------------------------------------------------------------------
    def _step(self) -> None:
        self.steps += 1
        if self.crash_at is not None and self.steps >= self.crash_at:
            self.crash_at = None
            raise SiteCrashed(self.id)

    def _crash(self) -> None:
        """Volatile state and unforced records are gone. So is the work of every transaction this
        participant voted on, has not decided, and has no stable record of: a protocol that
        commits it later has committed updates that no longer exist."""
        stable = {r.txn for r in self.stable_log()}
        for site, txn in self.net.voted:
            if site == self.id and txn not in self._decided and txn not in stable:
                self.net.lost_work.add((site, txn))
        self.up = False
        self.state = {}
        self._decided = {}
        del self._log[self._stable :]
        self.incarnation += 1

    def _restart(self) -> None:
        self.up = True
        self._log_free_at = 0.0


class SimulatedNetwork:
    """Runs one protocol over a coordinator and ``participants`` participants."""

    def __init__(self, protocol: CommitProtocol, participants: int = 3, seed: int = 0,
                 drop: float = 0.0, duplicate: float = 0.0, delay: tuple[int, int] = (1, 3),
                 partitions: list[Partition] | None = None, crashes: list[Crash] | None = None,
                 votes: dict[tuple[int, int], bool] | None = None, trace: bool = False,
                 force_time: float = 0.0, read_only: set[tuple[int, int]] | None = None):
        self.protocol, self.participants = protocol, participants
        self.force_time = force_time
        self.rng = random.Random(seed)
        self.drop, self.duplicate, self.delay = drop, duplicate, delay
        self.partitions = partitions or []
        self.votes = votes or {}
        #: (participant, txn) pairs that changed nothing: ``Site.changed`` answers False
        self.read_only = set(read_only or ())
        self.sites = [Site(self, i) for i in range(participants + 1)]
        self.crashes = {c.site: c for c in crashes or []}
        for c in self.crashes.values():
            self.sites[c.site].crash_at = c.step
        self.now = 0.0
        self.decisions: list[tuple[float, int, int, str]] = []
        self.voted: set[tuple[int, int]] = set()
        self.lost_work: set[tuple[int, int]] = set()
        self.left: set[tuple[int, int]] = set()
        self.messages = 0
        self._events: list = []
        self._seq = itertools.count()
        self._keep_trace = trace
        self.trace: list[dict] = []

    def run(self, txns: int = 1, start_every: float = 0.0, until: float = 2000.0) -> RunResult:
        """Start ``txns`` transactions (one each ``start_every`` units) and run until nothing is
        left to happen or ``until``."""
        for txn in range(txns):
            self._schedule(txn * start_every, "start", (txn,))
        while self._events:
            time, _, kind, payload = heapq.heappop(self._events)
            if time > until:
                break
            self.now = time
            self._handle(kind, payload)
        return RunResult(self.participants, dict(self.votes), list(self.decisions),
                         [s.up for s in self.sites], self.messages,
                         [s.log_records for s in self.sites], [s.log_forces for s in self.sites],
                         self.trace, list(range(txns)), set(self.voted), set(self.lost_work),
                         set(self.read_only), set(self.left))

    # -- events ---------------------------------------------------------------------------------
    def _schedule(self, time: float, kind: str, payload: tuple) -> None:
        heapq.heappush(self._events, (time, next(self._seq), kind, payload))

    def _handle(self, kind: str, payload: tuple) -> None:
        if kind == "start":
            (txn,) = payload
            self._run_at(self.sites[COORDINATOR], ("start", txn))
        elif kind == "deliver":
            (m,) = payload
            site = self.sites[m.dst]
            if not site.up:
                self._trace("lost", m.src, m.dst, m.kind, m.txn, why="site down")
                return
            self._trace("deliver", m.src, m.dst, m.kind, m.txn)
            self._run_at(site, ("receive", m))
        elif kind == "timer":
            site_id, incarnation, txn, tag = payload
            site = self.sites[site_id]
            if site.up and site.incarnation == incarnation:
                self._run_at(site, ("timeout", txn, tag))
        elif kind == "restart":
            (site_id,) = payload
            self._restart(site_id)
            self._trace("restart", site_id, None, "", -1)
            self._run_at(self.sites[site_id], ("recover",))

    def _restart(self, site_id: int) -> None:
        self.sites[site_id]._restart()

    def _run_at(self, site: Site, event: tuple) -> None:
        """Run one handler of the protocol at ``site``; a crash on the way takes the site down."""
        if not site.up:
            return
        site.clock = self.now
        try:
            dispatch(self.protocol, site, event)
        except SiteCrashed:
            site._crash()
            self._crashed(site.id, site.steps)

    def _crashed(self, site_id: int, steps: int) -> None:
        self._trace("crash", site_id, None, "", -1, step=steps)
        after = self.crashes[site_id].restart_after
        if after is not None:
            self._schedule(self.now + after, "restart", (site_id,))

    def _transmit(self, m: Message, at: float | None = None) -> None:
        """Send ``m`` at time ``at`` (the sender's clock; the network's now by default)."""
        at = self.now if at is None else at
        self.messages += 1
        if any(p.separates(m.src, m.dst, at) for p in self.partitions):
            self._trace("lost", m.src, m.dst, m.kind, m.txn, why="partition")
            return
        if self.rng.random() < self.drop:
            self._trace("lost", m.src, m.dst, m.kind, m.txn, why="dropped")
            return
        self._trace("send", m.src, m.dst, m.kind, m.txn)
        self._schedule(at + self.rng.randint(*self.delay), "deliver", (m,))
        if self.rng.random() < self.duplicate:
            self._schedule(at + self.rng.randint(*self.delay), "deliver", (m,))

    def _trace(self, event: str, src: int, dst: int | None, kind: str, txn: int, **extra) -> None:
        if self._keep_trace:
            self.trace.append({"time": self.now, "event": event, "src": src, "dst": dst,
                               "kind": kind, "txn": txn, **extra})


def dispatch(protocol: CommitProtocol, site: Site, event: tuple) -> None:
    """Call the protocol's handler for ``event``: ("start", txn), ("receive", message),
    ("timeout", txn, tag) or ("recover",)."""
    kind = event[0]
    if kind == "start":
        protocol.start(site, event[1])
    elif kind == "receive":
        protocol.receive(site, event[1])
    elif kind == "timeout":
        protocol.timeout(site, event[1], event[2])
    elif kind == "recover":
        protocol.recover(site)
    else:
        raise ValueError(f"unknown event {event!r}")
