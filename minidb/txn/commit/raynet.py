"""The same commit protocols with every site a Ray actor: a process of its own, a log on disk.

``SimulatedNetwork`` runs every site's handlers in one process. ``RayNetwork`` keeps its clock,
its event queue and its seeded network (delay, drop, duplicate, partition: the driver decides the
fate of each message, so a seed means the same thing on both), but each site is a Ray actor,
``SiteActor``, running the protocol's handlers on a ``Site`` whose log is a real file
(``minidb.txn.log.LogFile``): a forced record is written and ``fsync``-ed, an unforced one stays
in the process's memory until a later force. A crash is real: when the protocol reaches the step
the site was told to crash at, the driver kills the actor's process (``ray.kill``), and the
restart is a new actor that finds only what its log file holds and runs ``recover``.

Effects come back from an actor in the order the handler made them (messages sent, timers set,
decisions), and the driver carries them out in that order, so a seed gives the run it gives on
``SimulatedNetwork``: the tests check that decisions, messages and forces agree.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from minidb.errors import MinidbError
from minidb.txn.commit.base import CommitProtocol, LogRecord
from minidb.txn.commit.simnet import Crash, Partition, SimulatedNetwork, Site, SiteCrashed, dispatch
from minidb.txn.log import LogFile

RECORD = 1  # the one type of record a site's log file holds: a protocol record, as JSON


class _Port:
    """What a ``Site`` needs of its network, inside the actor: it writes the handler's effects
    down, in order, for the driver to carry out."""

    def __init__(self, protocol: CommitProtocol, participants: int, votes: dict,
                 force_time: float = 0.0, read_only: set | None = None):
        self.protocol, self.participants, self.votes = protocol, participants, votes
        self.force_time = force_time
        self.read_only: set[tuple[int, int]] = set(read_only or ())
        self.left: set[tuple[int, int]] = set()
        self.now = 0.0
        self.voted: set[tuple[int, int]] = set()
        self.lost_work: set[tuple[int, int]] = set()
        self.decisions: list = []
        self.effects: list[tuple] = []

    def _transmit(self, m, at: float) -> None:
        self.effects.append(("send", m, at - self.now))

    def _schedule(self, time: float, kind: str, payload: tuple) -> None:
        _, _, txn, tag = payload
        self.effects.append(("timer", time - self.now, txn, tag))

    def _trace(self, *args, **kwargs) -> None:
        pass


class DurableSite(Site):
    """A ``Site`` whose stable log is a file: records reach it, ``fsync``-ed, at each force."""

    def __init__(self, port: _Port, site_id: int, path: str):
        super().__init__(port, site_id)
        self._file = LogFile(path)
        self._log = [LogRecord(*json.loads(r.payload)) for r in self._file.records()]
        self._stable = self._written = len(self._log)

    def log(self, kind: str, txn: int, force: bool = False, **data) -> None:
        super().log(kind, txn, force, **data)
        if force:
            self._write_stable()

    def force(self) -> None:
        super().force()
        self._write_stable()

    def _write_stable(self) -> None:
        for r in self._log[self._written : self._stable]:
            self._file.append(RECORD, json.dumps([r.kind, r.txn, r.data]).encode())
        self._file.force()
        self._written = self._stable


class SiteActor:
    """One site in its own process (made a Ray actor by ``RayNetwork``)."""

    def __init__(self, protocol: CommitProtocol, site_id: int, participants: int, votes: dict,
                 log_path: str, crash_at: int | None, voted: list, force_time: float = 0.0,
                 read_only: list | None = None):
        self.port = _Port(protocol, participants, votes, force_time,
                          {tuple(r) for r in read_only or ()})
        self.port.voted = {tuple(v) for v in voted}
        self.site = DurableSite(self.port, site_id, log_path)
        self.site.crash_at = crash_at

    def handle(self, now: float, event: tuple) -> dict:
        """Run one handler; return its effects in order, and whether the site crashed."""
        port, site = self.port, self.site
        port.now, port.effects, port.decisions = now, [], []
        site.clock = now
        crashed = False
        try:
            dispatch(port.protocol, site, event)
        except SiteCrashed:
            crashed = True
            site._crash()  # works out whose work is lost; the driver then kills this process
        return {"effects": port.effects,
                "decisions": [(time - now, s, t, o) for time, s, t, o in port.decisions],
                "voted": sorted(port.voted), "lost_work": sorted(port.lost_work),
                "left": sorted(port.left),
                "crashed": crashed, "steps": site.steps, "log_records": site.log_records,
                "log_forces": site.log_forces, "pid": os.getpid()}


@dataclass
class _SiteHandle:
    """The driver's view of a site: its actor, and what the results need."""

    id: int
    actor: object = None
    up: bool = True
    incarnation: int = 0
    steps: int = 0
    log_records: int = 0
    log_forces: int = 0
    pids: tuple[int, ...] = ()


class RayNetwork(SimulatedNetwork):
    """``SimulatedNetwork`` with each site a Ray actor (Ray is started here if it does not run;
    whoever started it stops it)."""

    def __init__(self, protocol: CommitProtocol, participants: int = 3, seed: int = 0,
                 drop: float = 0.0, duplicate: float = 0.0, delay: tuple[int, int] = (1, 3),
                 partitions: list[Partition] | None = None, crashes: list[Crash] | None = None,
                 votes: dict[tuple[int, int], bool] | None = None, trace: bool = False,
                 directory: str | os.PathLike | None = None, call_timeout_s: float = 120.0,
                 force_time: float = 0.0, read_only: set[tuple[int, int]] | None = None):
        import ray

        from minidb.cluster.backends import ship_by_value, start_ray

        if not ray.is_initialized():  # minidb's own start: local, no dashboard, quiet
            start_ray()
        super().__init__(protocol, participants, seed, drop, duplicate, delay, partitions,
                         crashes, votes, trace, force_time, read_only)
        ship_by_value(type(protocol))  # a student's class travels by value
        self._ray = ray
        self._remote = ray.remote(num_cpus=0)(SiteActor)
        self._dir = Path(tempfile.mkdtemp(prefix="minidb-commit-") if directory is None
                         else directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._timeout = call_timeout_s
        self.sites = [_SiteHandle(i) for i in range(participants + 1)]
        for site in self.sites:
            crash = self.crashes.get(site.id)
            self._start_actor(site, crash.step if crash else None)

    def _start_actor(self, site: _SiteHandle, crash_at: int | None) -> None:
        voted = sorted(v for v in self.voted if v[0] == site.id)
        site.actor = self._remote.remote(self.protocol, site.id, self.participants, self.votes,
                                         str(self._dir / f"site-{site.id}.log"), crash_at, voted,
                                         self.force_time, sorted(self.read_only))
        site.base = (site.steps, site.log_records, site.log_forces)

    def _restart(self, site_id: int) -> None:
        site = self.sites[site_id]
        self._start_actor(site, None)
        site.up = True

    def _run_at(self, site: _SiteHandle, event: tuple) -> None:
        if not site.up:
            return
        try:
            reply = self._ray.get(site.actor.handle.remote(self.now, event), timeout=self._timeout)
        except Exception as exc:  # the actor died outside the protocol, or hung
            raise MinidbError(f"site {site.id}'s actor did not answer {event[0]} "
                              f"({type(exc).__name__}: {exc})") from None
        steps, records, forces = site.base
        site.steps = steps + reply["steps"]
        site.log_records = records + reply["log_records"]
        site.log_forces = forces + reply["log_forces"]
        site.pids = tuple(dict.fromkeys((*site.pids, reply["pid"])))
        self.voted |= {tuple(v) for v in reply["voted"]}
        self.lost_work |= {tuple(v) for v in reply["lost_work"]}
        self.left |= {tuple(v) for v in reply["left"]}
        for after, s, t, o in reply["decisions"]:
            self.decisions.append((self.now + after, s, t, o))
            self._trace("decide", s, None, o, t)
        for effect in reply["effects"]:
            if effect[0] == "send":
                self._transmit(effect[1], self.now + effect[2])
            else:
                _, delay, txn, tag = effect
                self._schedule(self.now + delay, "timer", (site.id, site.incarnation, txn, tag))
        if reply["crashed"]:
            self._ray.kill(site.actor, no_restart=True)  # the process dies with what it held
            site.up = False
            site.incarnation += 1
            self._crashed(site.id, site.steps)

    def close(self) -> None:
        """End every site's actor."""
        for site in self.sites:
            try:
                self._ray.kill(site.actor, no_restart=True)
            except Exception:  # already dead
                pass
