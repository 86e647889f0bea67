"""The fault matrix: every commit protocol, crashed at every step, over lossy links and seeds.

For a protocol, a fault-free run first counts the steps (log writes, messages sent) the
coordinator and participant 1 take. Then one run per (site, step, links, seed): that site
crashes just before that step and restarts 30 time units later, over reliable links and over
links that drop 20% of the messages and deliver 10% twice (``LINKS``). Every run is checked (``RunResult.violations``): all sites agree, no commit
without every yes, and a commit the coordinator reported reaches every participant. A second
family crashes the coordinator for good at each of its steps and counts the participants left in
doubt at the end: where 2PC blocks, 3PC's termination protocol finishes.

For a protocol with R*'s read-only votes (presumed abort: ``read_only_votes``; Mohan, Lindsay
and Obermarck 1986) both families run again with read-only participants
(``read_only_workloads``): participant 1 changed nothing, then every participant changed
nothing; participant 2, a YES voter beside the read-only one, is crashed at each of its steps
too. ``read_only=True`` adds these runs for every protocol (the others ignore the mark and must
hold their promises all the same); ``False`` leaves them out.

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
    read_only: tuple[int, ...] = ()  # the participants that changed nothing

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
            partitions: list[Partition] | None = None, force_time: float = 0.0,
            read_only: tuple[int, ...] = ()) -> RunResult:
    """One seeded run; ``read_only``: participants that changed nothing in any transaction."""
    marks = {(p, t) for p in read_only for t in range(txns)}
    net = SimulatedNetwork(protocol(proto), participants, seed=seed, drop=drop,
                           duplicate=duplicate, crashes=[crash] if crash else [], votes=votes,
                           trace=trace, partitions=partitions, force_time=force_time,
                           read_only=marks)
    return net.run(txns=txns, start_every=start_every, until=UNTIL)


#: the links of the matrix's runs: (messages dropped, messages delivered twice)
LINKS = ((0.0, 0.0), (0.2, 0.1))


def read_only_workloads(participants: int) -> list[tuple[int, ...]]:
    """The matrix's workloads: nobody read-only, participant 1 read-only, all read-only."""
    everyone = tuple(range(1, participants + 1))
    return list(dict.fromkeys([(), (1,), everyone]))


def fault_matrix(protocols: list | None = None, participants: int = 3, seeds=range(3),
                 links=LINKS, read_only: bool | None = None) -> list[MatrixRow]:
    """Every protocol crashed at every step (see the module docstring). ``read_only``: also run
    the read-only workloads of ``read_only_workloads`` (None: for the protocols with read-only
    votes only)."""
    rows = []
    for name in protocols or names("commit"):
        proto = protocol(name)
        label = getattr(proto, "name", str(name))
        with_ro = getattr(proto, "read_only_votes", False) if read_only is None else read_only
        workloads = read_only_workloads(participants) if with_ro else [()]
        for ro in workloads:
            rows += _workload_rows(proto, label, participants, seeds, links, ro)
    return rows


def _workload_rows(proto: CommitProtocol, label: str, participants: int, seeds, links,
                   ro: tuple[int, ...]) -> list[MatrixRow]:
    """The runs of one workload: fault-free, then each crashed site at each of its steps."""
    clean = one_run(proto, participants, read_only=ro)
    rows = [_row(label, "none", 0, True, 0.0, 0, clean, ro)]
    crashed = [(COORDINATOR, "coordinator"), (1, "participant 1")]
    if ro and 2 not in ro and participants >= 2:  # a YES voter beside the read-only one
        crashed.append((2, "participant 2"))
    for site, who in crashed:
        steps = _steps(proto, participants, site, ro)
        for step in range(1, steps + 1):
            for drop, duplicate in links:
                for seed in seeds:
                    r = one_run(proto, participants, seed, drop, Crash(site, step, 30),
                                duplicate=duplicate, read_only=ro)
                    rows.append(_row(label, who, step, True, drop, seed, r, ro))
            if site == COORDINATOR:  # the coordinator never comes back
                r = one_run(proto, participants, 0, 0.0, Crash(site, step, None), read_only=ro)
                rows.append(_row(label, who, step, False, 0.0, 0, r, ro))
    return rows


def _steps(proto: CommitProtocol, participants: int, site: int, ro: tuple[int, ...] = ()) -> int:
    net = SimulatedNetwork(proto, participants, read_only={(p, 0) for p in ro})
    net.run(until=UNTIL)
    return net.sites[site].steps


def _row(label, who, step, restart, drop, seed, r: RunResult, ro=()) -> MatrixRow:
    outcome = r.outcome(COORDINATOR, 0) or "-"
    violations = r.violations(everyone_recovers=restart)
    return MatrixRow(label, who, step, restart, drop, seed, outcome, violations,
                     len(r.blocked(0)), r.messages, sum(r.log_forces), tuple(ro))


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
    read_only_messages: int = 0  # fault-free commit, participant 1 changed nothing
    read_only_forces: int = 0


def summarize(rows: list[MatrixRow], participants: int = 3) -> list[ProtocolSummary]:
    out = []
    for label in dict.fromkeys(r.protocol for r in rows):
        mine = [r for r in rows if r.protocol == label]
        clean = one_run(label, participants)
        aborted = one_run(label, participants, votes={(1, 0): False})
        reading = one_run(label, participants, read_only=(1,))
        assert clean.outcome(COORDINATOR, 0) == COMMIT and aborted.outcome(COORDINATOR, 0) == ABORT
        out.append(ProtocolSummary(
            label, len(mine), sum(1 for r in mine if r.violations),
            sum(1 for r in mine if not r.restart and r.blocked),
            clean.messages, sum(clean.log_forces), aborted.messages, sum(aborted.log_forces),
            reading.messages, sum(reading.log_forces)))
    return out
