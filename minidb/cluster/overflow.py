"""Gamma's distributed overflow resolution for the Simple hash join (Gamma paper, §6 and §6.2.2).

When a joining processor's hash table overflows, Gamma does not finish the join alone:

1. the processor spools build tuples above a cut of a second hash function ``h'`` to an overflow
   file (``SimpleHashJoin`` in distributed mode: it records the cut and keeps the file);
2. "the query scheduler then passes the function used to subpartition the hash table to the
   select operators producing the probing tuples": each producer tests every probe tuple against
   the cut of the processor it is routed to and spools the ones above it to an overflow file of
   its own (``OverflowSpool`` below), sending only the others;
3. "the overflow partitions are recursively joined using this same procedure": the build
   overflow files and the probe overflow files are read back (``SpoolScan``) and joined as a
   new distributed join, redistributed with a *new* hash function so that every joining
   processor takes part (§6.2.2), which also makes the join attribute a non-partitioning one for
   that pass (the Local / Remote crossover of Figure 14).

The coordinator (``minidb.cluster.coordinator``) runs the passes; a node keeps the overflow files
of a pass under the names the plan gives them (``Node.overflow_cut``, ``Node.drop_spools``). The
files are temporary heap files of the node, so their pages are counted like any other I/O, and
every pass's scans, messages and operator startups are counted like any other phase's.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.store import SpoolWriter
from minidb.hashing import hash_column
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, take_records

MAX_DISTRIBUTED_PASSES = 8
"""Overflow passes run as distributed joins; the next one, if any, finishes inside each joining
node (``SimpleHashJoin``'s own recursion, which also handles keys no hash function can split)."""

ROUTING_SEED = 1000
"""Pass k redistributes with ``Hash(key, seed=ROUTING_SEED + k)``, a function unrelated to the
cut functions of the passes (``level_hash``, seeds 1, 2, ...)."""


def spool_names(join_id: str, level: int) -> dict[str, str]:
    """The names under which the nodes keep a pass's build and probe overflow files."""
    return {"build": f"{join_id}-overflow-build-{level}", "probe": f"{join_id}-overflow-probe-{level}"}


class OverflowSpool(Operator):
    """At a producer of the probe relation: spool the tuples whose joining processor overflowed
    and whose ``h'`` value is at or above that processor's cut; pass the others on.

    ``test`` is the plan's ``minidb.cluster.plan.OverflowTest``: ``key`` (the join column),
    ``level`` (whose hash function ``h'`` is), ``cuts`` (one per consumer position, None where
    that processor did not overflow), ``partitioner`` (the split table's, which names each
    tuple's consumer) and ``name`` (the overflow file's)."""

    kind = "overflow_spool"

    def __init__(self, ctx: ExecContext, child: Operator, test, spools: dict):
        super().__init__(child)
        self.ctx, self.test, self.spools = ctx, test, spools
        self.schema = child.schema
        self.key = child.schema.column(test.key).name
        cuts = test.cuts
        self._has = np.array([c is not None for c in cuts], dtype=bool)
        self._cut = np.array([0 if c is None else int(c) for c in cuts], dtype=np.uint64)
        self._writer: SpoolWriter | None = None

    def _next(self) -> np.ndarray | None:
        batch = self._pull(self.children[0])
        if batch is None or not len(batch):
            return batch
        where = self.test.partitioner.route(batch)
        h = hash_column(batch[self.key], seed=self.test.level + 1)
        out = self._has[where] & (h >= self._cut[where])
        if not out.any():
            return batch
        if self._writer is None:
            self._writer = SpoolWriter(self.ctx.temp_heap(self.schema, "overflow-probe"),
                                       flush_pages=1)
        self._writer.write(take_records(batch, out))
        self.stats.add("spilled_tuples", int(out.sum()))
        return take_records(batch, ~out)

    def _close(self) -> None:
        if self._writer is not None:
            heap = self._writer.close()
            self.stats.add("spill_pages_written", self._writer.pages_written)
            self.spools.setdefault(self.test.name, []).append(heap)
            self._writer = None
        super()._close()

    def describe(self) -> str:
        return f"OverflowSpool({self.key} at or above the cut of h_{self.test.level})"


class SpoolScan(Operator):
    """Read back overflow files a node keeps under one name (none: no tuples)."""

    kind = "spool_scan"

    def __init__(self, schema: Schema, heaps: list[HeapFile]):
        super().__init__()
        self.schema, self.heaps = schema, list(heaps)
        self._batches: Iterator[np.ndarray] | None = None

    def _open(self) -> None:
        self._batches = (batch for heap in self.heaps for batch, _ in heap.scan(keep=False))

    def _next(self) -> np.ndarray | None:
        return next(self._batches, None)

    def describe(self) -> str:
        return f"SpoolScan({len(self.heaps)} overflow files)"


__all__ = ["MAX_DISTRIBUTED_PASSES", "OverflowSpool", "ROUTING_SEED", "SpoolScan", "spool_names"]
