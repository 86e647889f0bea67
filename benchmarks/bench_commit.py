"""What a commit costs: the commit protocols on the simulated network, and the real engine's logs.

Run:  .venv/bin/python benchmarks/bench_commit.py [--participants 8] [--load-txns 400]
                                                    [--statements 200] [--rows 2000]
                                                    [--nodes 1,2,4] [--dir PATH] [--no-ray]
                                                    [--quick]

One run prints, side by side:

1. **Simulated** (``minidb.txn.commit``, the seeded network of ``simnet``; no fault). For every
   registered commit protocol, the messages and log forces of one committed transaction at 1 to
   ``--participants`` participants (counts, the same on any machine). Then a load: ``--load-txns``
   transactions over 3 participants, one started every 0.5 time units, under group commit and
   under presumed abort (group commit is presumed abort with every site's forces made a group at
   a time). Per protocol: commits, commits per simulated time unit, the mean time from start to
   "committed" (group commit's wait), messages and forces per commit, the coordinator's forces
   per commit, and group commit over presumed abort. The load runs twice: with a force that
   takes no simulated time (both commit as fast as transactions start; group commit saves log
   work only), and with a force of ``FORCE_TIME`` units on each site's one log device, where
   presumed abort's participants fall behind, its coordinator aborts what times out, and group
   commit's saving becomes commits.
2. **Transports**, wall clock: fault-free commits of every protocol, one at a time, at 1, 2, 4
   and 8 participants, on the simulated network and, up to 4, on ``RayNetwork``
   (``minidb.txn.commit.raynet``: the same protocol objects, each site a Ray actor whose log is a
   file forced with ``fsync``;
   ``--no-ray`` and ``--quick`` leave those out). What a message costs as an actor call and a
   force as an ``fsync``, against a function call.
3. **The real engine** (``minidb.connect``), wall clock: a small UPDATE (one row of a
   ``--rows``-tuple Wisconsin table) run ``--statements`` times, as statements per second and log
   forces (``fsync``) per statement. On one node with its pages in a temporary directory (no log)
   and with a data directory (the undo log, ``minidb.txn.undo``: before-images forced before the
   pages, a forced COMMIT record); then the parallel engine on each ``--nodes`` count (inline
   backend, one table hash-partitioned over the nodes) without a data directory and with one (each
   statement commits with two-phase commit, presumed abort, ``minidb.txn.two_phase``: the
   coordinator's force, the changed node's PREPARE and COMMIT forces and 4 messages; every other
   node changed nothing, votes READ and leaves, 2 messages and no force). The two
   databases of a pair are open together and take turns, ten statements at a time, so a load
   that comes and goes on a shared machine hits both alike; their ratio (no-log over logged
   statements per second) is what durability costs here.
4. **Group commit in the engine** (``minidb.txn.txn_log``), wall clock: 8 threads (4 at
   ``--quick``) each commit one-UPDATE transactions on rows of their own, on one data directory
   per group size (1, 4, 8; the sizes take turns, three rounds): commits per second, the
   transaction log's forces per commit (END records, and with the forced WRITE records), every
   force per commit (with the statement journal's), and commits per second over size 1.

The data directories go under ``--dir`` (default: the system's temporary directory), whose file
system the output names: an ``fsync`` on tmpfs costs nothing, on a disk it is the price of a
commit. Nothing is asserted about wall time (``tests/test_bench_commit.py`` checks the counts and
the structure at ``--quick``); compare ratios measured in one run, not seconds across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

import minidb
from minidb.datagen import wisconsin
from minidb.plugins import names
from minidb.txn.commit.base import COMMIT, COORDINATOR
from minidb.txn.commit.matrix import one_run, protocol
from minidb.txn.txn_log import GROUP_WAIT_S

#: the load: one transaction every START_EVERY simulated time units, over LOAD_PARTICIPANTS
START_EVERY = 0.5
FORCE_TIME = 0.4  # the second load run: a force takes this long on a site's one log device
SIMULATED_MORE = 50  # simulated commits timed for each one timed on Ray
RAY_MOST = 4  # participants of the largest Ray point (a run starts an actor per site)
LOAD_PARTICIPANTS = 3
LOAD_PROTOCOLS = ("presumed_abort", "group_commit")
UPDATE = "UPDATE t SET ten = ten + 1 WHERE unique1 = {key}"
WARMUP = 3  # statements run before the clock starts (the first plans, the first log records)
CHUNK = 10  # statements run on one database before the other takes its turn
QUICK = {"participants": 4, "load_txns": 40, "statements": 10, "rows": 500, "nodes": [1, 2],
         "group_threads": 4, "group_each": 3}
GROUP_SIZES = (1, 4, 8)  # group commit sizes compared in the engine
GROUP_ROUNDS = 3


class BrokenCommit(RuntimeError):
    """A protocol's fault-free run did not commit everywhere, or broke a promise."""


# -- simulated -----------------------------------------------------------------------------------
@dataclass
class CommitCost:
    """One fault-free committed transaction: what it cost."""

    protocol: str
    participants: int
    messages: int
    forces: int
    coordinator_forces: int


@dataclass
class LoadRun:
    """Many transactions started one every ``START_EVERY`` units."""

    protocol: str
    force_time: float
    txns: int
    commits: int
    span: float  # simulated time from the first start to the last "committed"
    mean_latency: float  # start to "committed", averaged
    messages: int
    forces: int
    coordinator_forces: int

    @property
    def commits_per_unit(self) -> float:
        return self.commits / self.span

    @property
    def forces_per_commit(self) -> float:
        return self.forces / self.commits

    @property
    def coordinator_forces_per_commit(self) -> float:
        return self.coordinator_forces / self.commits


def _check(label: str, run, txns: int, every_one_commits: bool = True) -> None:
    broken = run.violations()
    if broken:
        raise BrokenCommit(f"{label}: {broken[0]}")
    for txn in range(txns if every_one_commits else 0):
        for site in range(run.participants + 1):
            if run.outcome(site, txn) != COMMIT:
                raise BrokenCommit(f"{label}: site {site} did not commit transaction {txn} in a "
                                   "fault-free run")


def commit_costs(protocols: Sequence[str], most: int) -> list[CommitCost]:
    """The messages and forces of one fault-free commit, 1 to ``most`` participants."""
    out = []
    for name in protocols:
        for n in range(1, most + 1):
            run = one_run(name, n)
            _check(f"{name}, {n} participant(s)", run, 1)
            out.append(CommitCost(name, n, run.messages, sum(run.log_forces),
                                  run.log_forces[COORDINATOR]))
    return out


def load_run(name: str, txns: int, participants: int = LOAD_PARTICIPANTS,
             force_time: float = 0.0) -> LoadRun:
    """Many transactions of ``name``; with ``force_time`` a force takes time, and a protocol whose
    logs cannot keep up loses transactions to the coordinator's vote timeout (they abort)."""
    run = one_run(name, participants, txns=txns, start_every=START_EVERY, force_time=force_time)
    _check(f"{name} under load", run, txns, every_one_commits=not force_time)
    told = {t: time for time, site, t, o in run.decisions if site == COORDINATOR and o == COMMIT}
    latency = sum(told[t] - t * START_EVERY for t in told) / len(told)
    return LoadRun(name, force_time, txns, len(told), max(told.values()), latency, run.messages,
                   sum(run.log_forces), run.log_forces[COORDINATOR])


def print_simulated(costs: list[CommitCost], loads: list[LoadRun]) -> None:
    counts = sorted({c.participants for c in costs})
    protocols = list(dict.fromkeys(c.protocol for c in costs))
    by = {(c.protocol, c.participants): c for c in costs}
    width = max(18, *(len(p) + 2 for p in protocols))
    for title, value in (("messages per commit", lambda c: c.messages),
                         ("log forces per commit", lambda c: c.forces)):
        print(f"{title + ', participants':<{width + 12}}"
              + "".join(f"{n:>6}" for n in counts))
        for p in protocols:
            print(f"{p:<{width + 12}}" + "".join(f"{value(by[p, n]):>6}" for n in counts))
        print()
    print(f"load: {loads[0].txns} transactions over {LOAD_PARTICIPANTS} participants, one started "
          f"every {START_EVERY} simulated time units")
    print(f"{'protocol':<{width}}{'force time':>11}{'commits':>8}{'commits/unit':>14}"
          f"{'latency':>9}{'msgs/commit':>13}{'forces/commit':>15}{'coord forces/commit':>21}")
    for r in loads:
        print(f"{r.protocol:<{width}}{r.force_time:>11.1f}{r.commits:>8}"
              f"{r.commits_per_unit:>14.2f}{r.mean_latency:>9.2f}{r.messages / r.commits:>13.2f}"
              f"{r.forces_per_commit:>15.3f}{r.coordinator_forces_per_commit:>21.3f}")
    for force_time in dict.fromkeys(r.force_time for r in loads):
        by_name = {r.protocol: r for r in loads if r.force_time == force_time}
        if set(LOAD_PROTOCOLS) <= set(by_name):
            pa, gc = by_name["presumed_abort"], by_name["group_commit"]
            print(f"force time {force_time}: group_commit / presumed_abort: forces per commit "
                  f"{gc.forces_per_commit / pa.forces_per_commit:.2f}x, the coordinator's "
                  f"{gc.coordinator_forces_per_commit / pa.coordinator_forces_per_commit:.2f}x, "
                  f"commits {gc.commits / pa.commits:.2f}x, commits per unit "
                  f"{gc.commits_per_unit / pa.commits_per_unit:.2f}x, "
                  f"latency {gc.mean_latency / pa.mean_latency:.2f}x")
    print(f"with force time 0 both commit as fast as transactions start; with {FORCE_TIME} a "
          "participant of presumed abort needs more log time per transaction than the gap between "
          "transactions: it falls further behind with every one, and past the coordinator's vote "
          "timeout transactions abort.")


# -- the real engine -----------------------------------------------------------------------------
@dataclass
class EngineRun:
    """``statements`` small UPDATEs on one configuration of the engine."""

    label: str
    nodes: int  # 0: the single-node engine
    logged: bool
    statements: int
    wall_s: float
    forces: int
    log_records: int
    messages: int  # two-phase commit's (a request and its answer are two)

    @property
    def per_second(self) -> float:
        return self.statements / self.wall_s

    @property
    def forces_per_statement(self) -> float:
        return self.forces / self.statements


def _log_counts(db) -> tuple[int, int, int]:
    """(log forces, log records, 2PC messages) so far, over every log the database has."""
    journals = [getattr(db, "journal", None)]
    two_phase = getattr(db, "two_phase", None)
    if hasattr(db, "backend"):
        journals += [node.db.journal for node in db.backend.nodes]
    logs = [j.log for j in journals if j is not None]
    if two_phase is not None:
        logs.append(two_phase.log)
    messages = two_phase.counters.messages if two_phase is not None else 0
    return (sum(log.counters.forces for log in logs), sum(log.counters.records for log in logs),
            messages)


def _open(nodes: int, data_dir: Path | None, data):
    """A database holding table t: the single-node engine (``nodes`` 0) or the parallel one."""
    if not nodes:
        db = minidb.connect(data_dir=data_dir)
        db.create_table("t", data)
        return db
    # bit_filters (its default) makes even one node the parallel engine
    db = minidb.connect(nodes=nodes, backend="inline", bit_filters=False, data_dir=data_dir)
    db.create_table("t", data, partition="hash(unique1)")
    return db


def engine_pair(nodes: int, data_dir: Path, rows: int, statements: int,
                labels: tuple[str, str]) -> list[EngineRun]:
    """The same UPDATEs on a database without a log and on one with ``data_dir``, taking turns
    ``CHUNK`` statements at a time so that both see the same load on a shared machine."""
    data = wisconsin(rows, seed=1)
    with contextlib.ExitStack() as stack:
        dbs = [stack.enter_context(_open(nodes, d, data)) for d in (None, data_dir)]
        for db in dbs:
            for key in range(WARMUP):
                db.sql(UPDATE.format(key=key))
        before = [_log_counts(db) for db in dbs]
        walls = [0.0, 0.0]
        for first in range(0, statements, CHUNK):
            keys = [(WARMUP + i) % rows for i in range(first, min(first + CHUNK, statements))]
            for which, db in enumerate(dbs):
                start = time.perf_counter()
                for key in keys:
                    db.sql(UPDATE.format(key=key))
                walls[which] += time.perf_counter() - start
        after = [_log_counts(db) for db in dbs]
    out = []
    for label, db_dir, wall, b, a in zip(labels, (None, data_dir), walls, before, after,
                                         strict=True):
        forces, records, messages = (x - y for x, y in zip(a, b, strict=True))
        out.append(EngineRun(label, nodes, db_dir is not None, statements, wall, forces,
                             records, messages))
    return out


def engine_runs(rows: int, statements: int, node_counts: Sequence[int],
                where: str | None = None) -> list[EngineRun]:
    """Each configuration without a log and with one (in pairs, see ``engine_pair``)."""
    top = Path(tempfile.mkdtemp(prefix="bench_commit_", dir=where))
    try:
        out = engine_pair(0, top / "single", rows, statements,
                          ("1 node, temporary directory", "1 node, data directory"))
        for n in node_counts:
            out += engine_pair(n, top / f"par{n}", rows, statements,
                               (f"parallel {n} node(s), no data dir",
                                f"parallel {n} node(s), data dir (2PC)"))
        return out
    finally:
        shutil.rmtree(top, ignore_errors=True)


def print_engine(runs: list[EngineRun], rows: int) -> None:
    print(f"real engine: {runs[0].statements} x `{UPDATE.format(key='k')}` on {rows:,} Wisconsin "
          f"tuples (after {WARMUP} warm-up statements; each pair takes turns, {CHUNK} "
          "statements at a time)")
    width = max(len(r.label) for r in runs) + 2
    print(f"{'configuration':<{width}}{'statements/s':>13}{'ms/statement':>14}"
          f"{'forces/stmt':>13}{'records/stmt':>14}{'2PC msgs/stmt':>15}{'no log / log':>14}")
    for plain, logged in zip(runs[::2], runs[1::2], strict=True):
        for r in (plain, logged):
            ratio = f"{plain.per_second / r.per_second:>13.2f}x" if r is logged else ""
            print(f"{r.label:<{width}}{r.per_second:>13.1f}{1000 / r.per_second:>14.2f}"
                  f"{r.forces_per_statement:>13.2f}{r.log_records / r.statements:>14.2f}"
                  f"{r.messages / r.statements:>15.2f}{ratio}")
    print("no log / log: statements per second without the log over with it (measured in this "
          "run); a force is one fsync of a log file.")


# -- group commit in the engine's transaction log ---------------------------------------------
@dataclass
class GroupRun:
    """Transactions committed by several threads at once with one group commit size."""

    size: int  # commits per group force (1: each forced alone)
    commits: int
    wall_s: float
    commit_forces: int  # forces made for END records (``TransactionLog.commit_forces``)
    txn_forces: int  # every force of the transaction log (WRITEs too)
    all_forces: int  # with the statement journal's forces

    @property
    def per_second(self) -> float:
        return self.commits / self.wall_s


def group_commit_runs(sizes: Sequence[int], threads: int, rounds: int, each: int,
                      where: str | None = None) -> list[GroupRun]:
    """``threads`` threads each commit ``each`` one-UPDATE transactions on rows of their own, per
    round, on one data directory per group size; the sizes take turns round by round, so a
    load that comes and goes on a shared machine hits them alike."""
    top = Path(tempfile.mkdtemp(prefix="bench_group_", dir=where))
    accounts = threads * 4
    data = pa.table({"id": pa.array(range(accounts), pa.int64()),
                     "bal": pa.array([0] * accounts, pa.int64())})
    try:
        with contextlib.ExitStack() as stack:
            dbs = []
            for size in sizes:
                db = stack.enter_context(minidb.connect(data_dir=top / f"group{size}"))
                db.create_table("acct", data)
                db.txn_log.set_group_commit(size, GROUP_WAIT_S)
                dbs.append(db)
            before = [(db.txn_log.commits, db.txn_log.commit_forces, db.txn_log.counters.forces,
                       db.journal.log.counters.forces) for db in dbs]
            walls = [0.0] * len(dbs)
            for _ in range(rounds):
                for i, db in enumerate(dbs):
                    walls[i] += _commit_together(db, threads, each)
            out = []
            for size, db, b, wall in zip(sizes, dbs, before, walls, strict=True):
                log = db.txn_log
                commits, ends, txn, journal = (log.commits - b[0], log.commit_forces - b[1],
                                               log.counters.forces - b[2],
                                               db.journal.log.counters.forces - b[3])
                out.append(GroupRun(size, commits, wall, ends, txn, txn + journal))
            return out
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _commit_together(db, threads: int, each: int) -> float:
    """Wall seconds for ``threads`` threads to commit ``each`` transactions apiece."""
    def work(w: int) -> None:
        for i in range(each):
            with db.begin() as tx:
                tx.sql(f"UPDATE acct SET bal = bal + 1 WHERE id = {w * 4 + i % 4}")

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    start = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - start


def print_group_commit(runs: list[GroupRun], threads: int) -> None:
    print(f"group commit in the engine (minidb.txn.txn_log): {threads} threads commit one-UPDATE "
          f"transactions on one data directory; a commit waits at most {GROUP_WAIT_S * 1000:g} ms "
          "for its group")
    print(f"{'group size':<12}{'commits':>8}{'commits/s':>11}{'END forces/commit':>19}"
          f"{'txn log forces/commit':>23}{'all forces/commit':>19}{'commits/s vs size 1':>21}")
    alone = runs[0]
    for r in runs:
        print(f"{r.size:<12}{r.commits:>8}{r.per_second:>11.1f}{r.commit_forces / r.commits:>19.2f}"
              f"{r.txn_forces / r.commits:>23.2f}{r.all_forces / r.commits:>19.2f}"
              f"{r.per_second / alone.per_second:>20.2f}x")
    print("an END rides on its group's force or on another thread's WRITE force; the statement "
          "journal still forces every statement (FORCE), which group commit does not change.")


# -- the whole run -------------------------------------------------------------------------------
def _filesystem(path: str) -> str:
    """The type of the file system holding ``path`` (from /proc/mounts), or '?'."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "?"
    path = os.path.realpath(path)
    best = ("", "?")
    for point, kind in mounts:
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, kind)
    return f"{best[1]} (mounted at {best[0]})"


def environment(where: str | None) -> dict[str, str]:
    folder = where or tempfile.gettempdir()
    return {
        "python": platform.python_version(),
        "os.cpu_count": str(os.cpu_count()),
        "load average (1 min)": f"{os.getloadavg()[0]:.1f}",
        "data directories in": f"{folder}, file system {_filesystem(folder)}",
    }


@dataclass
class TransportRun:
    """Fault-free commits of one protocol, one after another, on one transport."""

    protocol: str
    transport: str  # "simulated" or "ray"
    participants: int
    commits: int
    wall_s: float

    @property
    def per_second(self) -> float:
        return self.commits / self.wall_s


def transport_runs(protocols: Sequence[str], participant_counts: Sequence[int],
                   commits: int, ray: bool) -> list[TransportRun]:
    """Wall-clock commits per second: the same protocol objects on the simulated network and,
    with ``ray``, on ``RayNetwork`` (a Ray actor per site, its log a file forced with fsync).
    Each run is one transaction; ``commits`` runs are timed per point (the actors are started
    once per point and not timed)."""
    from minidb.txn.commit.raynet import RayNetwork
    from minidb.txn.commit.simnet import SimulatedNetwork

    out = []
    for name in protocols:
        for n in participant_counts:
            proto = protocol(name)
            simulated = commits * SIMULATED_MORE  # microseconds each: time many more of them
            start = time.perf_counter()
            for i in range(simulated):
                _check(f"{name} simulated", SimulatedNetwork(proto, n, seed=i).run(), 1)
            out.append(TransportRun(name, "simulated", n, simulated, time.perf_counter() - start))
            if not ray or n > RAY_MOST:
                continue
            with tempfile.TemporaryDirectory(prefix="minidb-bench-commit-") as folder:
                nets = [RayNetwork(proto, n, seed=i, directory=Path(folder) / str(i))
                        for i in range(commits)]
                try:
                    for net in nets:  # wait for every actor to start before the clock runs
                        ray_ready(net)
                    start = time.perf_counter()
                    for net in nets:
                        _check(f"{name} on Ray", net.run(), 1)
                    out.append(TransportRun(name, "ray", n, commits, time.perf_counter() - start))
                finally:
                    for net in nets:
                        net.close()
    return out


def ray_ready(net) -> None:
    import ray

    ray.get([site.actor.__ray_ready__.remote() for site in net.sites])


def print_transports(runs: list[TransportRun]) -> None:
    print("commits per second (wall clock), one transaction at a time, the same protocol objects:")
    print(f"{'protocol':<18}{'participants':>13}{'simulated':>12}{'ray actors':>12}"
          f"{'simulated / ray':>17}")
    by = {(r.protocol, r.participants, r.transport): r for r in runs}
    for (name, n, transport), r in by.items():
        if transport != "simulated":
            continue
        on_ray = by.get((name, n, "ray"))
        ray_text = f"{on_ray.per_second:>12.1f}" if on_ray else f"{'-':>12}"
        ratio = f"{r.per_second / on_ray.per_second:>16.1f}x" if on_ray else f"{'-':>17}"
        print(f"{name:<18}{n:>13}{r.per_second:>12.1f}{ray_text}{ratio}")
    if not any(r.transport == "ray" for r in runs):
        print("note: no Ray rows (--no-ray).")


def report(participants: int = 8, load_txns: int = 400, statements: int = 200, rows: int = 2000,
           node_counts: Sequence[int] = (1, 2, 4), where: str | None = None,
           ray: bool = False, transport_commits: int = 4, group_threads: int = 8,
           group_each: int = 10) -> dict:
    """Measure and print everything; return what was measured."""
    env = environment(where)
    width = len("load average (1 min), after") + 2
    for key, value in env.items():
        print(f"{key:<{width}}{value}")
    print()
    protocols = names("commit")
    costs = commit_costs(protocols, participants)
    loads = [load_run(name, load_txns, force_time=f) for f in (0.0, FORCE_TIME)
             for name in LOAD_PROTOCOLS]
    print_simulated(costs, loads)
    print()
    started = False
    if ray:
        import ray as ray_module

        from minidb.cluster.backends import start_ray

        if not ray_module.is_initialized():
            start_ray(num_cpus=os.cpu_count() or 1)
            started = True
    try:
        transports = transport_runs(protocols, [1, 2, 4, 8] if participants >= 8 else [1, 2],
                                    transport_commits, ray)
    finally:
        if started:
            ray_module.shutdown()
    print_transports(transports)
    print()
    runs = engine_runs(rows, statements, node_counts, where)
    print_engine(runs, rows)
    print()
    groups = group_commit_runs(GROUP_SIZES, group_threads, GROUP_ROUNDS, group_each, where)
    print_group_commit(groups, group_threads)
    print()
    print(f"{'load average (1 min), after':<{width}}{os.getloadavg()[0]:.1f}")
    return {"costs": costs, "loads": loads, "engine": runs, "transports": transports,
            "group_commit": groups}


def _counts(text: str, parser: argparse.ArgumentParser) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        parser.error(f"--nodes takes whole numbers separated by commas, not {text!r}")
    if not values or min(values) < 1:
        parser.error(f"--nodes takes node counts of at least 1, not {text!r}")
    return values


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=8,
                        help="messages and forces per commit at 1..this many participants")
    parser.add_argument("--load-txns", type=int, default=400,
                        help="transactions of the simulated load")
    parser.add_argument("--statements", type=int, default=200,
                        help="UPDATEs timed on each engine configuration")
    parser.add_argument("--rows", type=int, default=2000, help="tuples of the updated table")
    parser.add_argument("--nodes", default="1,2,4", help="node counts of the parallel engine")
    parser.add_argument("--dir", default=None,
                        help="where the data directories go (default: the temporary directory)")
    parser.add_argument("--no-ray", action="store_true",
                        help="leave out the commits per second on Ray actors")
    parser.add_argument("--quick", action="store_true",
                        help=f"a few seconds: {', '.join(f'{k}={v}' for k, v in QUICK.items())}")
    args = parser.parse_args(argv)
    nodes = _counts(args.nodes, parser)
    if args.quick:
        args.participants, args.load_txns = QUICK["participants"], QUICK["load_txns"]
        args.statements, args.rows, nodes = QUICK["statements"], QUICK["rows"], QUICK["nodes"]
    for name in ("participants", "load_txns", "statements", "rows"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    threads, each = (QUICK["group_threads"], QUICK["group_each"]) if args.quick else (8, 10)
    return report(args.participants, args.load_txns, args.statements, args.rows, nodes, args.dir,
                  ray=not args.no_ray and not args.quick, group_threads=threads, group_each=each)


if __name__ == "__main__":
    main()
