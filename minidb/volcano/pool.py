"""The shared buffer of a Volcano machine: bounded pools of clusters, each behind its own lock.

Volcano's buffer is shared by every process (§2.1). Its unit is the *cluster* (§2.1, §4.1): a
cluster comes in when it is *fixed* (read from disk, or allocated to be filled), stays while it
is fixed, and once every fix is given back it may be replaced. When a new cluster needs room,
the buffer manager replaces clusters "from the bottom of its LRU list" (§4.1), and the
operators' *hints* bend the order (§4.1 footnote): a tossed cluster goes first, a kept one only
when nothing else can. A *pool lock* guards each pool's tables; it is held while a cluster is
looked up, entered, unfixed or dropped, never during I/O. §5 found it was the hot spot of the
initial parallel sort, and §5.1 split the buffer into several pools: a device's clusters go to
pool ``device mod pools``.

What is modeled here. ``ClusterPool`` is one pool: a fixed number of cluster frames, a fix
count per frame (a scan fixes a cluster once with a count of its records, §5.2, and every
record unfix gives one back), a dirty bit, a keep / toss hint, and a replacement policy, LRU by
default. The policy is any registered ``buffer_policy`` (``minidb.buffer``), and the hints are
applied by the same function as in the single-node ``BufferManager`` (``choose_victim``), so
there is one LRU in minidb. A fixed cluster is never replaced; a pool whose every frame is
fixed refuses the next cluster with an error that names its size. Counters per pool
(``PoolCounters``): hits, misses (a cluster read from disk), allocations (a new cluster to be
filled), evictions, dirty clusters written when replaced, and writes of the final flush.

``SharedBuffer`` holds the pools (``clusters``: their sizes; None: no frames, calls counted
only) and counts every buffer-manager call: which process made it, on which pool (that is,
which lock it took) and what for:

``fix``     a cluster entered the buffer: read from disk, or allocated to be filled (an exchange
            packet, a run or output cluster). One call per cluster, with the count of records it
            holds, as Volcano's file scan fixes a cluster's load of records in one call (§5.2).
``release`` a whole cluster given up at once (a run cluster once written, a merge input cluster
            once consumed): one call per cluster.
``unfix``   records given back by an operator, as its ``unfix`` scheme groups them (§5.2);
            records a gatherer still holds keep their cluster fixed (§5.2's warning that
            grouping "may increase buffer contention").
``flush``   a process's flush at the end (§6.1): one call on the pool of its disk, to sweep that
            pool's hash table for the disk's dirty clusters (§4.3 "sweeping the hash table
            during a buffer flush"); the writes themselves are I/O, done without the pool lock.

The pool lock is a real ``threading.Lock`` per pool here (processes are threads); the counters
and the frames are updated under it, so the counts are exact whatever the interleaving. Fixes
and unfixes are balanced: every record fixed is unfixed exactly once (``balanced``).

Left out on purpose: no bytes are held (a frame is a cluster id; the records live in numpy
arrays), so clusters of one size per buffer, not the variable-sized segments of §4.1; no
descriptor locks (the pool lock covers a frame's fix count); no read-ahead or write-behind
daemon (§7: Volcano did not use it either). Exchange packets are counted as calls but take no
frames: they live in the port's memory. The sort's space is the sort's own array, beside the
pools (the pools get the paper's 15 MB of I/O buffer, see ``SortSetup.buffer_size``).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from minidb.buffer.manager import _HINTS, _NO_HINT, choose_victim
from minidb.buffer.policy import ReplacementPolicy
from minidb.errors import BufferPoolFullError, MinidbError
from minidb.plugins import lookup
from minidb.volcano.unfix import GroupedUnfix, SimpleUnfix

DEVICE_SHIFT = 40
KINDS = ("fix", "release", "unfix", "flush")


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


@dataclass
class PoolCounters:
    """What one bounded pool did with clusters (§2.1, §4.1)."""

    fixes: int = 0
    """Fixes of clusters that exist on disk: ``hits + misses``."""
    hits: int = 0
    """The cluster was in the pool."""
    misses: int = 0
    """The cluster was read from disk into a frame."""
    allocations: int = 0
    """New clusters given a frame to be filled (an output cluster): nothing read."""
    evictions: int = 0
    """Unpinned clusters replaced to make room."""
    dirty_writes: int = 0
    """Evicted clusters that were changed and so written to disk first."""
    flush_writes: int = 0
    """Dirty clusters written when the pool was flushed at the end."""
    drops: int = 0
    """Clusters given up at once (a run cluster once written), no write."""

    def add(self, other: PoolCounters) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class ClusterPool:
    """One bounded pool of ``frames`` cluster frames with a replacement policy and Volcano's
    keep / toss hints (see the module docstring). Not thread safe: ``SharedBuffer`` calls it
    under the pool's lock."""

    def __init__(self, frames: int, policy: str | type[ReplacementPolicy] = "lru", name: str = "0"):
        if frames < 0:
            raise MinidbError(f"a buffer pool holds zero or more clusters, not {frames}")
        self.name = name
        self.frames = int(frames)
        policy_cls = lookup("buffer_policy", policy) if isinstance(policy, str) else policy
        self.policy: ReplacementPolicy = policy_cls(max(1, self.frames))
        self.cluster = np.full(self.frames, -1, dtype=np.int64)
        self.pins = np.zeros(self.frames, dtype=np.int64)
        self.hint = np.zeros(self.frames, dtype=np.int8)
        self.dirty = np.zeros(self.frames, dtype=bool)
        self.where: dict[int, int] = {}
        self._empty = list(range(self.frames - 1, -1, -1))  # a stack: frame 0 is used first
        self.counters = PoolCounters()

    def __contains__(self, cluster: int) -> bool:
        return int(cluster) in self.where

    @property
    def pinned(self) -> int:
        """Clusters fixed now (they cannot be replaced)."""
        return int((self.pins > 0).sum())

    def fix(self, cluster: int, count: int = 1, new: bool = False, dirty: bool = False) -> bool:
        """Pin ``cluster`` ``count`` times (once per record it holds, §5.2); ``new``: a cluster
        to be filled, not read. Returns whether it was read from disk (a miss)."""
        cluster = int(cluster)
        frame = self.where.get(cluster)
        read = False
        if frame is not None:
            if new:
                raise MinidbError(f"cluster {cluster:#x} is allocated while it is in pool {self.name}")
            self.counters.fixes += 1
            self.counters.hits += 1
            self.policy.page_hit(frame)
        else:
            frame = self._frame_for(cluster)
            if new:
                self.counters.allocations += 1
            else:
                self.counters.fixes += 1
                self.counters.misses += 1
                read = True
            self.cluster[frame] = cluster
            self.where[cluster] = frame
            self.policy.page_loaded(frame)
        self.pins[frame] += count
        self.hint[frame] = _NO_HINT
        self.dirty[frame] |= dirty
        return read

    def unfix(self, cluster: int, n: int = 1, hint: str | None = None, dirty: bool = False) -> None:
        """Give back ``n`` pins of ``cluster``; the hint (``keep`` / ``toss``) says how soon it
        should leave once unpinned."""
        frame = self.where.get(int(cluster))
        if frame is None or self.pins[frame] < n:
            raise MinidbError(f"pool {self.name}: unfix of cluster {int(cluster):#x} that is not "
                              f"fixed {n} times")
        if hint not in _HINTS:
            raise MinidbError(f"unknown buffer hint {hint!r}; use 'keep', 'toss' or None")
        self.pins[frame] -= n
        self.dirty[frame] |= dirty
        self.hint[frame] = _HINTS[hint]

    def drop(self, cluster: int) -> None:
        """``cluster`` (fixed once) is given up at once: unpinned and forgotten, not written
        (a run cluster its writer has just written, §4.1's "toss it immediately")."""
        frame = self.where.get(int(cluster))
        if frame is None or self.pins[frame] != 1:
            raise MinidbError(f"pool {self.name}: drop of cluster {int(cluster):#x} that is not "
                              "fixed exactly once")
        self.pins[frame] = 0
        self.dirty[frame] = False
        self.counters.drops += 1
        self._forget(frame)

    def flush(self, device: int | None = None) -> int:
        """Write every dirty unpinned cluster (end of the query), or only ``device``'s; returns
        how many."""
        write = self.dirty & (self.pins == 0)
        if device is not None:
            write &= device_of(self.cluster) == device
        frames = np.flatnonzero(write)
        self.dirty[frames] = False
        self.counters.flush_writes += len(frames)
        return len(frames)

    def _frame_for(self, cluster: int) -> int:
        if self._empty:
            return self._empty.pop()
        victim = choose_victim(self.policy, self.pins, self.hint) if self.frames else -1
        if victim < 0:
            raise BufferPoolFullError(
                f"buffer pool {self.name} holds {self.frames} clusters and all {self.frames} are "
                f"fixed, so cluster {cluster:#x} cannot come in: give the buffer more clusters "
                "(SortSetup.buffer_clusters) or fix fewer at once")
        self.counters.evictions += 1
        if self.dirty[victim]:
            self.counters.dirty_writes += 1
            self.dirty[victim] = False
        self._forget(victim)
        return self._empty.pop()

    def _forget(self, frame: int) -> None:
        del self.where[int(self.cluster[frame])]
        self.cluster[frame] = -1
        self.hint[frame] = _NO_HINT
        self.policy.page_evicted(frame)
        self._empty.append(frame)


class SharedBuffer:
    """The buffer pools shared by the processes of one sort (see the module docstring).

    ``clusters``: None counts calls only (no frames); an int is the buffer's size in clusters,
    split evenly over the pools; a list gives each pool's size. ``policy`` names a registered
    ``buffer_policy`` (LRU by default, §4.1)."""

    def __init__(self, pools: int = 1, unfix: SimpleUnfix | GroupedUnfix | None = None,
                 clusters: int | list[int] | None = None,
                 policy: str | type[ReplacementPolicy] = "lru"):
        if pools < 1:
            raise MinidbError(f"the buffer needs at least one pool, not {pools}")
        self.pools = pools
        self.unfix_scheme = unfix or SimpleUnfix()
        self.locks = [threading.Lock() for _ in range(pools)]
        self.counters = BufferCounters()
        self._stats_lock = threading.Lock()  # guards the record tallies, not a pool
        self._gatherers: dict[tuple[int, str], object] = {}  # each one private to its operator
        self._hints: dict[tuple[int, str], str | None] = {}
        self.pool: list[ClusterPool] | None = None
        if clusters is not None:
            sizes = ([clusters // pools] * pools if isinstance(clusters, int | np.integer)
                     else [int(c) for c in clusters])
            if len(sizes) != pools:
                raise MinidbError(f"{len(sizes)} pool sizes given for {pools} pools")
            self.pool = [ClusterPool(size, policy, name=str(q)) for q, size in enumerate(sizes)]

    def __getstate__(self) -> dict:
        """Locks do not travel between processes (a run sent back from a Ray worker): the
        counts and the pools' contents do, and fresh locks are made on arrival."""
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

    def fix(self, process: int, device: int, clusters: int, records: int,
            ids: np.ndarray | None = None, new: bool = False, dirty: bool = False) -> int:
        """``clusters`` clusters of ``device`` enter the buffer holding ``records`` records.
        With ``ids`` (and frames) each cluster is fixed once in its pool: read from disk unless
        it is there, or allocated when ``new`` (``dirty``: it will be written). Returns how
        many were read from disk (misses), the I/O the caller must charge."""
        self._count(process, device, "fix", clusters, records_fixed=records)
        if self.pool is None or ids is None:
            return 0
        q = int(self.pool_of(device))
        pool = self.pool[q]
        with self.locks[q]:
            return sum(pool.fix(c, 1, new, dirty) for c in np.asarray(ids).tolist())

    def release(self, process: int, device: int, clusters: int, ids: np.ndarray | None = None,
                drop: bool = False, hint: str | None = "toss") -> None:
        """``clusters`` whole clusters of ``device`` are given up at once: unpinned with
        ``hint`` (a consumed merge input: ``toss``), or forgotten at once when ``drop`` (a run
        cluster just written)."""
        self._count(process, device, "release", clusters)
        if self.pool is None or ids is None:
            return
        q = int(self.pool_of(device))
        pool = self.pool[q]
        with self.locks[q]:
            for c in np.asarray(ids).tolist():
                if drop:
                    pool.drop(c)
                else:
                    pool.unfix(c, 1, hint)

    def through(self, process: int, device: int, ids: np.ndarray, new: bool = False,
                hint: str | None = "toss") -> int:
        """Clusters ``ids`` of ``device`` pass one after another, each fixed and given up before
        the next: one fix and one release call per cluster. Read and consumed (a merge's input,
        §2.2) they are released with ``hint``; ``new`` (a run being written) each is allocated,
        filled, written and dropped at once. Returns how many were read from disk."""
        ids = np.asarray(ids, dtype=np.int64)
        self._count(process, device, "fix", len(ids))
        self._count(process, device, "release", len(ids))
        if self.pool is None or not len(ids):
            return 0 if new or self.pool is not None else len(ids)
        q = int(self.pool_of(device))
        pool = self.pool[q]
        read = 0
        with self.locks[q]:
            for c in ids.tolist():
                read += pool.fix(c, 1, new)
                if new:
                    pool.drop(c)
                else:
                    pool.unfix(c, 1, hint)
        return read

    def stream(self, process: int, operator: str, device: int, ids: np.ndarray,
               counts: np.ndarray, records: np.ndarray, new: bool = False, dirty: bool = False,
               hint: str | None = "toss") -> int:
        """Clusters ``ids`` of ``device`` come in one after another, cluster ``ids[k]`` fixed
        with a count of ``counts[k]`` records (one call each, §5.2), and ``operator`` unfixes
        its records (``records``: the cluster of each, in order) as its scheme groups the calls.
        A cluster is fixed just before its first record is unfixed, so a scan pins one cluster
        plus what its gatherer holds. Returns the clusters read from disk."""
        ids = np.asarray(ids, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        key = (process, operator)
        self._hints[key] = hint
        gatherer = self._gatherers.get(key)
        if gatherer is None:
            gatherer = self._gatherers[key] = self.unfix_scheme.gatherer()
        call_ids, call_counts = gatherer.unfix(records)
        self._count(process, device, "fix", len(ids), records_fixed=int(counts.sum()))
        misses = 0 if self.pool is not None or new else len(ids)  # no frames: every one read
        if self.pool is not None and len(ids):
            q = int(self.pool_of(device))
            pool = self.pool[q]
            at = {c: k for k, c in enumerate(ids.tolist())}
            ids_l, counts_l = ids.tolist(), counts.tolist()
            k = 0
            with self.locks[q]:
                for cid, n in _runs(call_ids, call_counts):
                    j = at.get(cid, -1)
                    while k <= j:  # fix the clusters up to this one as the stream reaches them
                        misses += pool.fix(ids_l[k], counts_l[k], new, dirty)
                        k += 1
                    pool.unfix(cid, n, hint)
                while k < len(ids_l):
                    misses += pool.fix(ids_l[k], counts_l[k], new, dirty)
                    k += 1
        self._calls(process, operator, call_ids, call_counts, apply=False)
        return misses

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

    def flush(self, process: int | None = None, device: int | None = None) -> int:
        """End of the query: write the dirty unpinned clusters; returns how many. Without
        ``process``, every pool writes all of its own (nothing counted). With ``process``, that
        process's flush of ``device``'s clusters (§6.1): one ``flush`` call on the device's pool,
        whose lock it takes to sweep the pool's table."""
        if process is not None:
            self._count(process, device, "flush", 1)
            if self.pool is None:
                return 0
            q = int(self.pool_of(device))
            with self.locks[q]:
                return self.pool[q].flush(device)
        if self.pool is None:
            return 0
        written = 0
        for q, pool in enumerate(self.pool):
            with self.locks[q]:
                written += pool.flush()
        return written

    def pool_counters(self, pool: int | None = None) -> PoolCounters:
        """One pool's cluster counters, or their sum over the pools (all zero without frames)."""
        out = PoolCounters()
        for q, p in enumerate(self.pool or []):
            if pool is None or q == pool:
                out.add(p.counters)
        return out

    def _calls(self, process: int, operator: str, ids: np.ndarray, counts: np.ndarray,
               apply: bool = True) -> None:
        if not len(ids):
            return
        if self.pools == 1:
            per_pool = {0: len(ids)}
        else:
            found = np.bincount(self.pool_of(device_of(ids)), minlength=self.pools)
            per_pool = {int(q): int(found[q]) for q in np.flatnonzero(found)}
        hint = self._hints.get((process, operator))
        for pool, calls in per_pool.items():
            with self.locks[pool]:
                self.counters.calls[(process, pool, "unfix")] += calls
                if apply and self.pool is not None:
                    frames = self.pool[pool]
                    for cid, n in _runs(ids, counts):
                        # clusters without frames (exchange packets) are counted, not held
                        if cid in frames.where and (self.pools == 1
                                                    or self.pool_of(cid >> DEVICE_SHIFT) == pool):
                            frames.unfix(cid, n, hint)
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


def _runs(ids: np.ndarray, counts: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive calls on one cluster merged into one pin decrement: (cluster, records)."""
    ids = np.asarray(ids, dtype=np.int64)
    if not len(ids):
        return []
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    return list(zip(ids[starts].tolist(),
                    np.add.reduceat(np.asarray(counts, dtype=np.int64), starts).tolist(),
                    strict=True))
