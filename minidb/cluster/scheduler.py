"""The scheduler: runs a statement's phases on the nodes and keeps what each phase did.

This is the control side of Gamma's query execution (DeWitt et al. 1988, Section 2, "Query
Execution"): the scheduler starts each operator on the processors that run it, and for each
operator on each node three control messages are exchanged: the scheduler's *start* message,
the operator's *reply* identifying its process, and the *completion* message when it is done.
Operators that must not overlap run in separate *phases*: a hash join first builds its tables
from the inner relation everywhere, and only when that phase has ended on every node is the
outer relation scanned to probe them.

A phase here is a list of calls ``(node, method, args)`` on the nodes (``Node.run`` /
``Node.start`` with a ``minidb.cluster.plan.Fragment``, ``Node.drain`` with a fragment id, or
another node method such as ``insert``) started at once; the scheduler waits for all of them,
then collects every node's counters for the phase (a diskless node's temporary pages counted
where Gamma kept them, on a disk node: ``minidb.cluster.diskless``). What the planner decides lives in
``minidb.cluster.planner``; the cost model prices the counters (``model_phases``).
"""

from __future__ import annotations

import time
from typing import Any

from minidb.cluster.diskless import ship_diskless_io
from minidb.cluster.plan import Fragment, Phase, check_exchanges

CONTROL_MESSAGES_PER_OPERATOR = 3  # start, reply with the process id, completion (Gamma §2)


class Scheduler:
    """One statement's phases: the fragments started, the counters and the scheduler messages.

    ``phases`` holds one dict per phase, ``{node_id: counters}`` (nodes that did nothing left
    out); ``plan`` the typed plan of each phase (``minidb.cluster.plan.Phase``); ``lines`` the
    readable plan ``explain`` prints (the planner adds its own notes with ``note``)."""

    def __init__(self, pdb: Any):
        self.pdb = pdb  # the ParallelDatabase: its backend runs the calls
        self.phases: list[dict] = []
        self.phase_names: list[str] = []
        self.phase_wall_s: list[float] = []
        self.scheduler_messages = 0
        self.plan: list[Phase] = []
        self.fragments: list[tuple[Fragment, list[int]]] = []  # every fragment started so far
        self.lines: list[str] = []

    def phase(self, name: str, calls: list[tuple[int, str, tuple]], operators: int | None = None,
              texts: list[str] = ()) -> list:
        """Start ``calls`` at once, wait for all of them, collect every node's counters; returns
        the calls' results in order. The fragments they start are checked against the
        statement's others before any runs (``minidb.cluster.plan.check_exchanges``).
        ``operators``: how many operators each call starts, when the nodes do not count them
        (the scheduler's messages are three per operator); ``texts``: the phase's plan lines."""
        started: dict[str, tuple[Fragment, list[int]]] = {}
        for node, method, args in calls:
            if method in ("run", "start") and isinstance(args[0], Fragment):
                started.setdefault(args[0].id, (args[0], []))[1].append(node)
        self.fragments += started.values()
        check_exchanges(self.fragments)
        self.plan.append(Phase(name, list(started.values())))
        self.lines.append(f"phase {len(self.phases) + 1}: {name}")
        self.lines += [f"  {t}" for t in texts]
        start = time.perf_counter()
        out = self.pdb.backend.call_many(calls, name)
        self.phase_wall_s.append(time.perf_counter() - start)
        counters = ship_diskless_io(self.pdb._take_counters(f"{name} (counters)"),
                                    self.pdb.disk, self.pdb.diskless, self.pdb.page_size,
                                    self.pdb.packet_bytes)
        self.phases.append({n: c for n, c in enumerate(counters) if _nonzero(c)})
        self.phase_names.append(name)
        operators_started = sum(c["operators_started"] for c in counters) if operators is None \
            else operators * len(calls)
        self.scheduler_messages += CONTROL_MESSAGES_PER_OPERATOR * operators_started
        return out

    def note(self, line: str) -> None:
        """Add a line to the readable plan (what the host does, a subquery's answer ...)."""
        self.lines.append(line)

    def explain(self) -> str:
        return "\n".join(self.lines)


def model_phases(phases: list[dict], scheduler_messages: int, profile, page_size: int,
                 **options):
    """The cost model's ``ModeledTime`` for the counters of a statement's phases (``options``
    go to ``minidb.cost.modeled_time``: ``startup``, ``overlap``)."""
    from dataclasses import fields

    from minidb.cost.model import WorkCounters, modeled_time

    names = {f.name for f in fields(WorkCounters)}

    def work(c: dict) -> WorkCounters:
        w = WorkCounters(**{k: v for k, v in c.items() if k in names})
        # results returned to the host leave the node through its network interface too
        # (Gamma's host is a separate machine on the ring)
        w.packets_sent_remote += c.get("packets_to_host", 0)
        w.bytes_sent_remote += c.get("bytes_to_host", 0)
        return w

    return modeled_time([{n: work(c) for n, c in phase.items()} for phase in phases], profile,
                        page_size, coordinator_messages=scheduler_messages, **options)


def _nonzero(c: dict) -> bool:
    return any(v for k, v in c.items() if not isinstance(v, dict)) or any(c.get("tuples", {}).values())


__all__ = ["CONTROL_MESSAGES_PER_OPERATOR", "Scheduler", "model_phases"]
