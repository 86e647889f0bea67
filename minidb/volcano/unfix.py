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
prices.

Gatherers as plug-ins (Lab 3). A class registered under plugin kind ``unfix_gatherer`` is a
gatherer written record by record: ``Gatherer(entries, call)``, then ``unfix(cluster)`` for each
record and ``close()`` at end of stream, calling ``call(cluster, count)`` for every
buffer-manager call it makes (``UnfixGatherer`` is the contract). The scheme name
``NAME_K`` (``grouped_4``, ``student_grouped_1``...) runs plug-in ``NAME`` with ``K`` entries
inside the parallel sort. ``grouped`` is minidb's own, the lab's model answer. The calls a scheme makes are what matters for the lock: ``minidb.volcano.pool`` counts
them against the pool of each cluster's device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from minidb.errors import MinidbError
from minidb.plugins import lookup, names, register

FORMS = ("procedure", "macro")
HASH_MULTIPLIER = 0x9E3779B97F4A7C15  # Fibonacci hashing: 2**64 divided by the golden ratio


def slot_of(cluster: int, entries: int) -> int:
    """The slot of ``cluster`` in a gathering table of ``entries`` slots: the cluster id times
    ``HASH_MULTIPLIER`` (modulo 2**64), its high 32 bits, modulo ``entries``."""
    if entries == 1:
        return 0
    return (((cluster * HASH_MULTIPLIER) % 2**64) >> 32) % entries


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
        mixed = (clusters.astype(np.uint64) * np.uint64(HASH_MULTIPLIER)) >> np.uint64(32)
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
        if isinstance(self.scheme, SimpleUnfix):  # one call per record
            return clusters, np.ones(len(clusters), dtype=np.int64)
        if not len(clusters):
            return clusters, np.zeros(0, dtype=np.int64)
        # BEGIN SOLUTION: Lab 3 (grouped unfix): the built-in grouped unfix is the lab's model answer, left out of the student release; write yours in labs/lab3_volcano/unfix.py and use it as student_grouped
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
        # END SOLUTION

    def close(self) -> tuple[np.ndarray, np.ndarray]:
        held = sorted(self.pending.items())
        self.pending = {}
        return (np.array([c for _, (c, _) in held], dtype=np.int64),
                np.array([k for _, (_, k) in held], dtype=np.int64))


def _whole_stream(scheme, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    g = scheme.gatherer()
    ids, counts = g.unfix(clusters)
    rest_ids, rest_counts = g.close()
    return np.r_[ids, rest_ids].astype(np.int64), np.r_[counts, rest_counts].astype(np.int64)


class UnfixGatherer:
    """The contract of an ``unfix_gatherer`` plug-in: one operator's private gathering table,
    fed one record at a time (see the module docstring)."""

    def __init__(self, entries: int, call: Callable[[int, int], None]):
        self.entries = entries
        self.call = call
        """``call(cluster, count)``: the buffer-manager call unfixing ``count`` records."""

    def unfix(self, cluster: int) -> None:
        """The operator is done with one record of cluster ``cluster``."""
        raise NotImplementedError

    def close(self) -> None:
        """End of stream: make the calls for whatever is still gathered, in slot order."""
        raise NotImplementedError


@register("unfix_gatherer", "grouped")
class GroupedGatherer(UnfixGatherer):
    """Grouped unfixing written record by record (§5.2): the table holds at most one
    (cluster, count) entry per slot; a record of another cluster in an occupied slot flushes
    that entry with one call."""

    def __init__(self, entries: int, call: Callable[[int, int], None]):
        super().__init__(entries, call)
        self.table: dict[int, list[int]] = {}

    def unfix(self, cluster: int) -> None:
        # BEGIN SOLUTION: Lab 3 (grouped unfix): the built-in grouped unfix is the lab's model answer, left out of the student release; write yours in labs/lab3_volcano/unfix.py and use it as student_grouped
        slot = slot_of(cluster, self.entries)
        entry = self.table.get(slot)
        if entry is not None and entry[0] != cluster:
            self.call(*entry)
            entry = None
        if entry is None:
            self.table[slot] = [cluster, 1]
        else:
            entry[1] += 1
        # END SOLUTION

    def close(self) -> None:
        # BEGIN SOLUTION: Lab 3 (grouped unfix): the built-in grouped unfix is the lab's model answer, left out of the student release; write yours in labs/lab3_volcano/unfix.py and use it as student_grouped
        for slot in sorted(self.table):
            self.call(*self.table[slot])
        self.table.clear()
        # END SOLUTION


@dataclass(frozen=True)
class PluginUnfix:
    """A scheme whose gatherer is an ``unfix_gatherer`` plug-in, fed record by record (slower
    than the built-in schemes: one Python call per record). Priced as a procedure."""

    plugin: str
    entries: int = 1
    form: str = "procedure"

    @property
    def name(self) -> str:
        return f"{self.plugin}_{self.entries}"

    def gatherer(self) -> RecordGatherer:
        return RecordGatherer(lookup("unfix_gatherer", self.plugin), self.entries)

    def calls(self, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _whole_stream(self, clusters)


class RecordGatherer:
    """Adapts a record-by-record plug-in to the engine's interface (arrays in, calls out)."""

    def __init__(self, plugin: type, entries: int):
        self.made: list[tuple[int, int]] = []
        self.plugin = plugin(entries, lambda cluster, count: self.made.append((cluster, count)))

    def _taken(self) -> tuple[np.ndarray, np.ndarray]:
        made, self.made = self.made, []
        ids = np.array([int(c) for c, _ in made], dtype=np.int64)
        counts = np.array([int(k) for _, k in made], dtype=np.int64)
        return ids, counts

    def unfix(self, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        for cluster in np.asarray(clusters, dtype=np.int64).tolist():
            self.plugin.unfix(cluster)
        return self._taken()

    def close(self) -> tuple[np.ndarray, np.ndarray]:
        self.plugin.close()
        return self._taken()


def scheme(name: str) -> SimpleUnfix | GroupedUnfix | PluginUnfix:
    """A scheme by name: Table II's ``simple``, ``procedure_K``, ``macro_K`` (``K`` table
    entries), or ``PLUGIN_K`` for an ``unfix_gatherer`` plug-in (``grouped_4``,
    ``student_grouped_1``)."""
    if name == "simple":
        return SimpleUnfix()
    form, _, entries = name.rpartition("_")
    if entries.isdigit() and int(entries) >= 1:
        if form in FORMS:
            return GroupedUnfix(int(entries), form)
        if form.lower() in names("unfix_gatherer"):
            return PluginUnfix(form.lower(), int(entries))
    raise MinidbError(
        f"unknown unfix scheme {name!r}: use simple, procedure_K or macro_K with K table "
        "entries (procedure_1, macro_1, macro_4, macro_16 in Table II), or PLUGIN_K for an "
        f"unfix_gatherer plug-in ({', '.join(names('unfix_gatherer'))})")
