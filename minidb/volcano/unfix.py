"""Unfixing records in Volcano's buffer, one call at a time or gathered (Volcano paper §5, §5.2).

Every record an operator receives is *fixed* (pinned) in the shared buffer, and the operator
that is done with it must *unfix* it. Volcano fixes a whole cluster at once (a file scan fixes a
cluster it has just read with a count of as many records as it holds) but at first unfixed one
record at a time: each unfix was a buffer-manager call that took the buffer pool's lock. With
1,000,000 records unfixed by three operators that made 3,000,000 calls (§5), and the pool lock
became the bottleneck.

A scheme here turns the cluster ids of the records an operator unfixes, in the order it unfixes
them, into the buffer-manager calls it makes: ``(cluster ids, counts)``, one entry per call, in
call order. Each operator of each process has its own ``Gatherer`` (the private space), which
keeps gathered entries between calls and flushes them when the operator closes.

``SimpleUnfix``
    one call per record, count 1 (the paper's "simple" row of Table II).
``GroupedUnfix(entries=1)``
    gather consecutive unfixes of the same cluster in process-private space and call the buffer
    manager once, with the count, when the next record belongs to another cluster (or at the
    end). Records that arrive cluster by cluster cost one call per cluster.
``GroupedUnfix(entries=k)``
    the same with a small table of ``k`` entries, the slot chosen by hashing the cluster id: a
    record whose slot holds another cluster flushes that entry (one call) and takes the slot.
    This helps when records of a few clusters arrive interleaved, e.g. from a merge.

Both groupings were written as a procedure and as a macro (§5.2); they make the same calls and
differ only in the instructions spent per record while gathering (``form``), which the cost model
prices. The calls a scheme makes are what matters for the lock: ``minidb.volcano.pool`` counts
them against the pool of each cluster's device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from minidb.errors import MinidbError

FORMS = ("procedure", "macro")


@dataclass(frozen=True)
class SimpleUnfix:
    """One buffer-manager call per record (Volcano's original scheme)."""

    name: str = "simple"
    entries: int = 0
    form: str = "none"

    def gatherer(self) -> Gatherer:
        return Gatherer(self)

    def calls(self, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The calls for unfixing these records, start to end of stream."""
        return _whole_stream(self, clusters)


@dataclass(frozen=True)
class GroupedUnfix:
    """Unfixes gathered per cluster in a private table of ``entries`` slots (§5.2)."""

    entries: int = 1
    form: str = "macro"

    def __post_init__(self) -> None:
        if self.entries < 1:
            raise MinidbError(f"a grouped unfix needs at least one entry, not {self.entries}")
        if self.form not in FORMS:
            raise MinidbError(f"grouped unfix is a {' or a '.join(FORMS)}, not {self.form!r}")

    @property
    def name(self) -> str:
        return f"{self.form}_{self.entries}"

    def slot(self, clusters: np.ndarray) -> np.ndarray:
        """The table slot of each cluster id (a multiplicative hash, then modulo the size)."""
        clusters = np.asarray(clusters, dtype=np.int64)
        if self.entries == 1:
            return np.zeros(len(clusters), dtype=np.int64)
        mixed = (clusters.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)
        return (mixed % np.uint64(self.entries)).astype(np.int64)

    def gatherer(self) -> Gatherer:
        return Gatherer(self)

    def calls(self, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The calls for unfixing these records, start to end of stream."""
        return _whole_stream(self, clusters)


class Gatherer:
    """One operator's process-private unfix table: ``unfix(clusters)`` returns the calls made
    while these records are unfixed (in order); ``close()`` flushes what is still gathered (at
    end of stream, in slot order). Calling ``unfix`` on pieces of a stream makes the same calls
    as calling it once on the whole stream."""

    def __init__(self, scheme: SimpleUnfix | GroupedUnfix):
        self.scheme = scheme
        self.pending: dict[int, tuple[int, int]] = {}
        """slot -> (cluster id, records gathered)"""

    def unfix(self, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        clusters = np.asarray(clusters, dtype=np.int64)
        if isinstance(self.scheme, SimpleUnfix) or not len(clusters):
            if isinstance(self.scheme, SimpleUnfix):
                return clusters, np.ones(len(clusters), dtype=np.int64)
            return clusters, np.zeros(0, dtype=np.int64)
        # The gathered entries go first, as if their records had just arrived again.
        held = sorted(self.pending.items())
        ids = np.r_[np.array([c for _, (c, _) in held], dtype=np.int64), clusters]
        weights = np.r_[np.array([k for _, (_, k) in held], dtype=np.int64),
                        np.ones(len(clusters), dtype=np.int64)]
        slots = self.scheme.slot(ids)
        len(ids)
        order = np.argsort(slots, kind="stable")
        s, c = slots[order], ids[order]
        starts = np.flatnonzero(np.r_[True, (s[1:] != s[:-1]) | (c[1:] != c[:-1])])
        counts = np.add.reduceat(weights[order], starts)
        # The last group of each slot stays gathered; every other group is flushed by the
        # record that starts the next group in its slot.
        last_of_slot = np.r_[s[starts[1:]] != s[starts[:-1]], True]
        self.pending = {int(s[i]): (int(c[i]), int(k))
                        for i, k in zip(starts[last_of_slot], counts[last_of_slot], strict=False)}
        flushed = ~last_of_slot
        flush_at = order[np.r_[starts[1:], 0]][flushed]
        call_order = np.argsort(flush_at, kind="stable")
        return c[starts][flushed][call_order], counts[flushed][call_order]

    def close(self) -> tuple[np.ndarray, np.ndarray]:
        held = sorted(self.pending.items())
        self.pending = {}
        return (np.array([c for _, (c, _) in held], dtype=np.int64),
                np.array([k for _, (_, k) in held], dtype=np.int64))


def _whole_stream(scheme, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    g = Gatherer(scheme)
    ids, counts = g.unfix(clusters)
    rest_ids, rest_counts = g.close()
    return np.r_[ids, rest_ids].astype(np.int64), np.r_[counts, rest_counts].astype(np.int64)


def scheme(name: str) -> SimpleUnfix | GroupedUnfix:
    """A scheme by its Table II name: ``simple``, ``procedure_1``, ``macro_4``..."""
    if name == "simple":
        return SimpleUnfix()
    form, _, entries = name.partition("_")
    if form in FORMS and entries.isdigit():
        return GroupedUnfix(int(entries), form)
    raise MinidbError(f"unknown unfix scheme {name!r}: use simple, or procedure_K / macro_K "
                      "with K table entries (procedure_1, macro_1, macro_4, macro_16 in Table II)")
