"""Deadlock detection: the wait-for graph, its cycles, the victim, and the global detector.

A transaction that waits for a lock waits for the transactions holding (or queued ahead for) a
conflicting lock: an edge ``waiter -> holder`` of the *wait-for graph*. A cycle in that graph is a
deadlock: nobody in it will ever be granted, so one member, the *victim*, must be aborted. The
victim here is the **youngest** transaction in the cycle (the largest transaction id: ids grow
with begin time), the usual choice because it has done the least work and, being youngest, will
not be picked forever (an older transaction eventually becomes the oldest in any cycle).

Two levels, as in the papers:

* *Local*: every node's ``LockManager`` (``minidb.txn.locks``) holds the graph of its own waits
  and looks for a cycle each time a request has to wait, so a deadlock among transactions waiting
  on one node is found at once.
* *Global*: a transaction of a parallel database holds locks on several nodes, so a cycle can pass
  through two nodes while each node's own graph is acyclic (T1 waits for T2 on node B, T2 waits
  for T1 on node A). Gamma (DeWitt et al. 1988, Section 1) leaves "global deadlock detection" to
  one processor of the machine, its scheduler; ``GlobalDeadlockDetector`` is that processor's job:
  collect every node's edges, merge them into one graph, find a cycle, and tell the nodes where
  the victim waits to refuse its request. NonStop SQL's benchmark paper (Englert et al. 1989) does
  not describe its deadlock handling; Tandem's systems were known for lock *timeouts*, which this
  package has too (every wait has one).

Simplified: the global detector runs when asked (``check``) or every ``interval`` seconds on a
thread of its own (``start`` / ``stop``), not as a message protocol between processors; it reads
each manager's graph with one call. The parallel engine's transactions
(``minidb.cluster.transaction``) use it as Gamma does: the coordinator runs it over the disk
nodes' lock managers (``NodeLocks``: a call to the node, inline or a Ray actor) every
``ParallelDatabase.deadlock_interval`` seconds while any transaction's lock request is in flight.
The tests and the lab also drive it with lock managers standing for nodes: anything with
``name``, ``wait_for_edges()`` and ``refuse_waiter(txn, message)`` will do.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minidb.txn.locks import LockManager

#: a wait-for graph: transaction -> the transactions it waits for
Graph = dict[int, set[int]]


def find_cycle(graph: Graph, start: int | None = None) -> list[int] | None:
    """A cycle of ``graph`` as a list of transactions ``[t1, t2, ..., tk]`` (t1 waits for t2 ...,
    tk waits for t1), or None. With ``start``, only a cycle through ``start``."""
    starts = [start] if start is not None else sorted(graph)
    done: set[int] = set()
    for s in starts:
        if s in done:
            continue
        path: list[int] = []
        on_path: dict[int, int] = {}
        stack = [(s, iter(sorted(graph.get(s, ()))))]
        path.append(s)
        on_path[s] = 0
        while stack:
            node, children = stack[-1]
            nxt = next(children, None)
            if nxt is None:
                stack.pop()
                path.pop()
                del on_path[node]
                done.add(node)
                continue
            if nxt in on_path:
                cycle = path[on_path[nxt]:]
                if start is None or start in cycle:
                    return cycle
                continue
            if nxt in done:
                continue
            on_path[nxt] = len(path)
            path.append(nxt)
            stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return None


def youngest(cycle: Sequence[int]) -> int:
    """The victim of a deadlock: the youngest transaction (the largest id) in the cycle."""
    return max(cycle)


def describe_cycle(cycle: Sequence[int], why: dict[tuple[int, int], str] | None = None) -> str:
    """``T2 waits for T1 (X lock on acct key 1), T1 waits for T2 (...)``."""
    parts = []
    for i, t in enumerate(cycle):
        u = cycle[(i + 1) % len(cycle)]
        reason = (why or {}).get((t, u))
        parts.append(f"T{t} waits for T{u}" + (f" ({reason})" if reason else ""))
    return ", ".join(parts)


def merge_graphs(graphs: Iterable[Graph]) -> Graph:
    """One wait-for graph holding every edge of ``graphs`` (the nodes' local graphs)."""
    merged: Graph = {}
    for g in graphs:
        for t, targets in g.items():
            merged.setdefault(t, set()).update(targets)
    return merged


class GlobalDeadlockDetector:
    """Gamma's scheduler job (Section 1): merge the wait-for graphs of every node's lock manager
    and break the cycles no single node can see.

    ``check()`` finds at most one cycle per call and aborts its youngest member where it waits;
    call it until it returns None, or let ``start(interval)`` call it on a background thread.
    Counted: ``checks`` (graphs merged) and ``deadlocks`` (victims chosen)."""

    def __init__(self, managers: Sequence[LockManager]):
        self.managers = list(managers)
        self.checks = 0
        self.deadlocks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def graph(self) -> tuple[Graph, dict[tuple[int, int], str]]:
        """The merged graph, and for every edge why it is there (which lock on which node)."""
        why: dict[tuple[int, int], str] = {}
        graphs = []
        for m in self.managers:
            edges = m.wait_for_edges()
            g: Graph = {}
            for waiter, holder, reason in edges:
                g.setdefault(waiter, set()).add(holder)
                why.setdefault((waiter, holder), f"{reason} on {m.name}")
            graphs.append(g)
        return merge_graphs(graphs), why

    def check(self) -> list[int] | None:
        """Find one global cycle; if there is one, abort its youngest transaction where it waits
        and return the cycle (None when there is no deadlock)."""
        graph, why = self.graph()
        self.checks += 1
        cycle = find_cycle(graph)
        if cycle is None:
            return None
        victim = youngest(cycle)
        message = (f"global deadlock found by the scheduler: {describe_cycle(cycle, why)}; "
                   f"T{victim}, the youngest in the cycle, is the victim and was aborted; retry it")
        refused = [m.refuse_waiter(victim, message) for m in self.managers]
        if any(refused):
            self.deadlocks += 1
        return cycle

    def start(self, interval: float = 0.05) -> None:
        """Run ``check`` every ``interval`` seconds on a daemon thread until ``stop``."""
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(interval):
                while self.check() is not None:
                    pass

        self._thread = threading.Thread(target=loop, name="global-deadlock-detector", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the background thread (and wait for it, at most ``timeout`` seconds)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"the global deadlock detector did not stop within {timeout} s")
        self._thread = None

    def __enter__(self) -> GlobalDeadlockDetector:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
