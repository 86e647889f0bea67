"""The shared buffer of a Volcano machine: one or several pools, each behind its own lock.

Volcano's buffer is shared by every process (§2.1). A *pool lock* guards each pool's hash
tables and chains; it is held while a cluster is looked up, entered, unfixed or dropped, never
during I/O. §5 found it was the hot spot of the initial parallel sort, and §5.1 split the buffer
into several pools: a device's clusters go to pool ``device mod pools``.

``SharedBuffer`` counts every buffer-manager call: which process made it, on which pool (that is,
which lock it took) and what for:

``fix``     a cluster entered the buffer: read from disk, or allocated to be filled (an exchange
            packet, a run or output cluster). One call per cluster, with the count of records it
            holds, as Volcano's file scan fixes a cluster's load of records in one call (§5.2).
``release`` a whole cluster given up at once (a run cluster once written, a merge input cluster
            once consumed): one call per cluster.
``unfix``   records given back by an operator, as its ``unfix`` scheme groups them (§5.2).

The pool lock is a real ``threading.Lock`` per pool here (processes are threads), and the
counters are updated under it, so the counts are exact whatever the interleaving. Fixes and
unfixes are balanced: every record fixed is unfixed exactly once (``balanced``).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from minidb.errors import MinidbError
from minidb.volcano.unfix import GroupedUnfix, SimpleUnfix

DEVICE_SHIFT = 40
KINDS = ("fix", "release", "unfix")


def cluster_id(device: int, number: int | np.ndarray) -> np.ndarray | int:
    """A buffer-wide cluster id: the device (disk, or a process's private packet space) in the
    high bits, the cluster's number on it below."""
    return (device << DEVICE_SHIFT) + number


def device_of(clusters: np.ndarray) -> np.ndarray:
    return np.asarray(clusters, dtype=np.int64) >> DEVICE_SHIFT


@dataclass
class BufferCounters:
    """Buffer-manager calls by (process, pool, kind), and records fixed and unfixed."""

    calls: Counter = field(default_factory=Counter)
    records_fixed: int = 0
    records_unfixed: int = 0
    records_unfixed_by: Counter = field(default_factory=Counter)
    """Records unfixed per operator (``filter``, ``sort``, ``driver``)."""
    record_calls_by: Counter = field(default_factory=Counter)
    """``unfix`` calls per operator."""

    def total(self, kind: str | None = None, process: int | None = None,
              pool: int | None = None) -> int:
        return sum(n for (p, q, k), n in self.calls.items()
                   if (kind is None or k == kind) and (process is None or p == process)
                   and (pool is None or q == pool))

    def per_process(self, processes: int, pools: int, kind: str) -> np.ndarray:
        """(processes, pools) matrix of calls of ``kind``."""
        out = np.zeros((processes, pools), dtype=np.int64)
        for (p, q, k), n in self.calls.items():
            if k == kind:
                out[p, q] += n
        return out


class SharedBuffer:
    """The buffer pools shared by the processes of one sort (see the module docstring)."""

    def __init__(self, pools: int = 1, unfix: SimpleUnfix | GroupedUnfix | None = None):
        if pools < 1:
            raise MinidbError(f"the buffer needs at least one pool, not {pools}")
        self.pools = pools
        self.unfix_scheme = unfix or SimpleUnfix()
        self.locks = [threading.Lock() for _ in range(pools)]
        self.counters = BufferCounters()
        self._stats_lock = threading.Lock()  # guards the record tallies, not a pool
        self._gatherers: dict[tuple[int, str], object] = {}  # each one private to its operator

    def __getstate__(self) -> dict:
        """Locks do not travel between processes (a run sent back from a Ray worker): the
        counts do, and fresh locks are made on arrival."""
        state = dict(self.__dict__)
        for name in ("locks", "_stats_lock"):
            state.pop(name)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.locks = [threading.Lock() for _ in range(self.pools)]
        self._stats_lock = threading.Lock()

    def pool_of(self, device: int | np.ndarray) -> int | np.ndarray:
        """§5.1: "the device number modulo the total number of buffer pools"."""
        return device % self.pools

    def fix(self, process: int, device: int, clusters: int, records: int) -> None:
        """``clusters`` clusters of ``device`` enter the buffer holding ``records`` records."""
        self._count(process, device, "fix", clusters, records_fixed=records)

    def release(self, process: int, device: int, clusters: int) -> None:
        """``clusters`` whole clusters of ``device`` are given up at once."""
        self._count(process, device, "release", clusters)

    def unfix(self, process: int, operator: str, clusters: np.ndarray) -> None:
        """Operator ``operator`` of ``process`` is done with records of these clusters (in this
        order); its scheme, through the operator's private gatherer, decides how many calls
        that takes now."""
        key = (process, operator)
        gatherer = self._gatherers.get(key)
        if gatherer is None:
            gatherer = self._gatherers[key] = self.unfix_scheme.gatherer()
        self._calls(process, operator, *gatherer.unfix(clusters))

    def close(self, process: int, operator: str) -> None:
        """The operator's stream ended: flush what its gatherer still holds."""
        gatherer = self._gatherers.pop((process, operator), None)
        if gatherer is not None:
            self._calls(process, operator, *gatherer.close())

    def _calls(self, process: int, operator: str, ids: np.ndarray, counts: np.ndarray) -> None:
        if not len(ids):
            return
        if self.pools == 1:
            per_pool = {0: len(ids)}
        else:
            found = np.bincount(self.pool_of(device_of(ids)), minlength=self.pools)
            per_pool = {int(q): int(found[q]) for q in np.flatnonzero(found)}
        for pool, calls in per_pool.items():
            with self.locks[pool]:
                self.counters.calls[(process, pool, "unfix")] += calls
        records = int(counts.sum())
        with self._stats_lock:
            self.counters.records_unfixed += records
            self.counters.records_unfixed_by[operator] += records
            self.counters.record_calls_by[operator] += len(ids)

    def _count(self, process: int, device: int, kind: str, calls: int,
               records_fixed: int = 0) -> None:
        if calls <= 0:
            return
        pool = self.pool_of(device)
        with self.locks[pool]:
            self.counters.calls[(process, pool, kind)] += calls
        with self._stats_lock:
            self.counters.records_fixed += records_fixed

    def balanced(self) -> bool:
        """Every record fixed was unfixed exactly once (after every operator closed)."""
        return self.counters.records_fixed == self.counters.records_unfixed
