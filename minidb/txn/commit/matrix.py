"""The fault matrix: every commit protocol, crashed at every step, over lossy links and seeds.

For a protocol, a fault-free run first counts the steps (log writes, messages sent) the
coordinator and participant 1 take. Then one run per (site, step, links, seed): that site
crashes just before that step and restarts 30 time units later, over reliable links and over
links that drop 20% of the messages and deliver 10% twice (``LINKS``). Every run is checked (``RunResult.violations``): all sites agree, no commit
without every yes, and a commit the coordinator reported reaches every participant. A second
family crashes the coordinator for good at each of its steps and counts the participants left in
doubt at the end: where 2PC blocks, 3PC's termination protocol finishes.

``fault_matrix`` returns one ``MatrixRow`` per run; ``summarize`` one line per protocol with the
figures the issue asks for (violations, blocked runs, messages and log forces per commit and per
abort in a fault-free run).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from minidb.plugins import lookup, names
from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR, CommitProtocol
from minidb.txn.commit.simnet import Crash, Partition, RunResult, SimulatedNetwork

UNTIL = 5000.0


@dataclass
class MatrixRow:
    protocol: str
    crashed: str  # "coordinator", "participant 1", or "none"
    step: int
    restart: bool
    drop: float
    seed: int
    outcome: str  # what the coordinator told the client: commit, abort, or "-" (nothing)
    violations: list[str]
    blocked: int  # participants in doubt at the end
    messages: int
    log_forces: int

    def as_dict(self) -> dict:
        return asdict(self)


def protocol(name_or_class: str | type[CommitProtocol] | CommitProtocol) -> CommitProtocol:
    """A protocol instance from a registered name, a class, or an instance."""
    if isinstance(name_or_class, CommitProtocol):
        return name_or_class
    cls = lookup("commit", name_or_class) if isinstance(name_or_class, str) else name_or_class
    return cls()


def one_run(proto, participants: int = 3, seed: int = 0, drop: float = 0.0,
            crash: Crash | None = None, votes: dict | None = None, txns: int = 1,
            start_every: float = 0.0, trace: bool = False, duplicate: float = 0.0,
            partitions: list[Partition] | None = None, force_time: float = 0.0) -> RunResult:
    net = SimulatedNetwork(protocol(proto), participants, seed=seed, drop=drop,
                           duplicate=duplicate, crashes=[crash] if crash else [], votes=votes,
                           trace=trace, partitions=partitions, force_time=force_time)
    return net.run(txns=txns, start_every=start_every, until=UNTIL)


#: the links of the matrix's runs: (messages dropped, messages delivered twice)
LINKS = ((0.0, 0.0), (0.2, 0.1))


def fault_matrix(protocols: list | None = None, participants: int = 3, seeds=range(3),
                 links=LINKS) -> list[MatrixRow]:
    rows = []
    for name in protocols or names("commit"):
        proto = protocol(name)
        label = getattr(proto, "name", str(name))
        clean = one_run(proto, participants)
        rows.append(_row(label, "none", 0, True, 0.0, 0, clean))
        for site, who in ((COORDINATOR, "coordinator"), (1, "participant 1")):
            steps = _steps(proto, participants, site)
            for step in range(1, steps + 1):
                for drop, duplicate in links:
                    for seed in seeds:
                        r = one_run(proto, participants, seed, drop, Crash(site, step, 30),
                                    duplicate=duplicate)
                        rows.append(_row(label, who, step, True, drop, seed, r))
                if site == COORDINATOR:  # the coordinator never comes back
                    r = one_run(proto, participants, 0, 0.0, Crash(site, step, None))
                    rows.append(_row(label, who, step, False, 0.0, 0, r))
    return rows


def _steps(proto: CommitProtocol, participants: int, site: int) -> int:
    net = SimulatedNetwork(proto, participants)
    net.run(until=UNTIL)
    return net.sites[site].steps


def _row(label, who, step, restart, drop, seed, r: RunResult) -> MatrixRow:
    outcome = r.outcome(COORDINATOR, 0) or "-"
    violations = r.violations(everyone_recovers=restart)
    return MatrixRow(label, who, step, restart, drop, seed, outcome, violations,
                     len(r.blocked(0)), r.messages, sum(r.log_forces))


@dataclass
class ProtocolSummary:
    protocol: str
    runs: int
    violations: int
    blocked_runs: int  # coordinator down for good, someone left in doubt
    commit_messages: int  # fault-free commit
    commit_forces: int
    abort_messages: int  # fault-free abort (participant 1 votes no)
    abort_forces: int


def summarize(rows: list[MatrixRow], participants: int = 3) -> list[ProtocolSummary]:
    out = []
    for label in dict.fromkeys(r.protocol for r in rows):
        mine = [r for r in rows if r.protocol == label]
        clean = one_run(label, participants)
        aborted = one_run(label, participants, votes={(1, 0): False})
        assert clean.outcome(COORDINATOR, 0) == COMMIT and aborted.outcome(COORDINATOR, 0) == ABORT
        out.append(ProtocolSummary(
            label, len(mine), sum(1 for r in mine if r.violations),
            sum(1 for r in mine if not r.restart and r.blocked),
            clean.messages, sum(clean.log_forces), aborted.messages, sum(aborted.log_forces)))
    return out
