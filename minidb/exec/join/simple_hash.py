"""Gamma's join: the Simple hash-partitioned join and its overflow resolution (Gamma paper, §6).

Gamma builds a main-memory hash table on the building relation and probes it with the other
one. When the table does not fit, Gamma uses the Simple hash algorithm of DeWitt and Gerber
(1985), as the paper describes it in §6 ("Join Algorithms"):

1. *Build.* Tuples enter the hash table until it is full. On overflow a second hash function
   ``h'`` splits the key space: the tuples whose ``h'`` value is above a cut are written to an
   overflow file (those already in the table and those still to come), the rest stay. The cut is
   chosen so that the table is full again (as many tuples as memory holds remain), so one pass
   handles one memory-load of the building relation; a later overflow in the same pass only
   lowers the cut further.
2. *Probe.* The cut and ``h'`` go to the producers of the probing relation: a probing tuple whose
   ``h'`` value is above the cut could only match a spilled building tuple, so it is written to a
   second overflow file; every other tuple probes the table.
3. *Recurse.* The two overflow files are joined by the same procedure with a *new* hash function
   (``level_hash(level + 1)``), until a pass ends with no overflow. §6.2.2 explains why Gamma
   switches functions after the first overflow: so the overflow tuples spread over every joining
   site instead of landing where they came from.

Counters (``stats.extra``): ``overflows`` (passes that spilled: Gamma's "partition overflow
resolutions", the x axis of Figure 14), ``overflow_events`` (every time the table filled),
``build_tuples`` and ``probe_tuples`` (entered into a table / looked up in one, every pass),
``spilled_tuples`` (written to an overflow file), ``spill_pages_written`` / ``spill_pages_read``,
``matches``. Each pass reads back every tuple the previous one spilled, probe tuples included,
which is why the algorithm is cheap for one or two overflows and steeply worse after (§6.2.2,
Figure 14; "deteriorates exponentially", §6.1).

Memory: the table holds ``memory_pages - 1`` pages of building tuples; one page buffers the
overflow file being written. A page of the table holds ``capacity()`` tuples: a heap page's worth
less the space the machine's hash table spends on each entry (``hash_entry_bytes`` of the
hardware profile; Gamma's, calibrated on §6.1's six overflows, makes 13 Wisconsin tuples a 4 KB
page where a heap page holds 19; see ``minidb.cost.profiles.gamma_hash_entry_bytes``).

LEFT OUTER JOIN (``outer=True``, the probe input preserved): a probe tuple is decided in the
pass where it probes a table, never in two: below the cut it meets every build tuple of its key
in that pass's table and, if none matched (or all failed the ON ``condition``), is padded with a
build tuple of NULLs at once (``probe_table``); at or above the cut it goes to the overflow file
and is decided by a later pass (or by ``join_by_memory_loads``, which tracks its matches across
the memory-loads and pads after the last). Counter ``padded``. In a parallel plan a LEFT JOIN
resolves its overflow inside each node; the distributed resolution
(``minidb.cluster.overflow``) runs for inner joins only.

Simplification: a pass whose keys all share one value cannot be split by any hash function; the
join then falls back to memory-loads (``join_by_memory_loads``) instead of recursing forever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from minidb.exec.join.base import BUILD_DONE, JoinAlgorithm
from minidb.plugins import register
from minidb.storage.schema import take_records

MAX_LEVELS = 32
"""Passes after which the join stops recursing and joins what is left by memory-loads."""


@register("join", "simple_hash")
class SimpleHashJoin(JoinAlgorithm):
    """Gamma's Simple hash-partitioned join with overflow resolution by a second hash function."""

    kind = "simple_hash_join"
    priced_counters = {"build_tuples": "hash_build", "probe_tuples": "hash_probe",
                       "spilled_tuples": "partition"}
    min_memory_pages = 2
    supports_outer = True
    announces_build = True

    #: set by a parallel plan (``minidb.cluster.overflow``): ``{"level": k, "spools": names}``
    #: makes this a processor of Gamma's *distributed* overflow resolution. It then records its
    #: cut (``cut``) after the build, keeps its overflow files (``overflow_heaps``) instead of
    #: joining them itself, and the coordinator runs the next pass across all processors.
    distributed: dict | None = None

    def run(self, memory_pages: int) -> Iterator[np.ndarray]:
        self.limit = (memory_pages - 1) * self.capacity()
        for name in ("overflows", "overflow_events", "spilled_tuples", "spill_pages_written",
                     "spill_pages_read"):
            self.stats.extra.setdefault(name, 0)
        if self.distributed is not None:
            yield from self._distributed_pass(self.distributed["level"])
        else:
            yield from self._pass(self.build_batches(), self.probe_batches, level=0)

    def _pass(self, builds: Iterator[np.ndarray], probes: Callable[[], Iterator[np.ndarray]],
              level: int) -> Iterator[np.ndarray]:
        table, cut, build_spill = self._build(builds, level)
        directory, table = self.table(table)
        yield BUILD_DONE
        probe_spill = yield from self._probe(probes(), level, cut, directory, table)
        if build_spill is None:
            return
        build_file, probe_file = self.close_spool(build_spill), self.close_spool(probe_spill)
        if not len(table) or level + 1 >= MAX_LEVELS:  # no hash function splits these keys
            yield from self.join_by_memory_loads(build_file, probe_file, self.limit)
            return
        del directory, table
        yield from self._pass(self.scan_spool(build_file), lambda: self.scan_spool(probe_file),
                              level + 1)

    def _distributed_pass(self, level: int) -> Iterator[np.ndarray]:
        """One processor's share of one pass of the distributed resolution: build, record the
        cut, probe with what the producers sent, keep both overflow files for the next pass."""
        self.cut = None
        self.overflow_heaps: dict[str, object] = {}
        table, cut, build_spill = self._build(self.build_batches(), level)
        self.cut = None if cut is None else int(cut)
        directory, table = self.table(table)
        yield BUILD_DONE
        # the producers kept the probe tuples above the cut; any that still come are spooled here
        probe_spill = yield from self._probe(self.probe_batches(), level, cut, directory, table)
        if build_spill is not None:
            self.overflow_heaps["build"] = self.close_spool(build_spill)
            self.overflow_heaps["probe"] = self.close_spool(probe_spill)

    def _build(self, builds: Iterator[np.ndarray], level: int):
        """Enter the build tuples into a table of at most ``limit``; on overflow, move the part
        of the key space above a cut of ``level_hash(level)`` to an overflow file. Returns the
        table's tuples, the cut (None: no overflow) and the overflow file's writer."""
        kept, rows, cut = [], 0, None
        build_spill = None
        for batch in builds:
            self.count("build_tuples", len(batch))
            if cut is not None:
                batch = self._route(batch, self.build_key, level, cut, build_spill)
            kept.append(batch)
            rows += len(batch)
            if rows > self.limit:  # overflow: lower the cut until the table is full, not over
                self.count("overflow_events")
                if build_spill is None:
                    self.count("overflows")
                    build_spill = self.spool(self.build_schema, "overflow-build")
                table = np.concatenate(kept)
                hashes = self.level_hash(table, self.build_key, level)
                cut = np.partition(hashes, self.limit)[self.limit]  # the limit-th smallest
                kept = [self._route(table, self.build_key, level, cut, build_spill, hashes)]
                rows = len(kept[0])
        table = np.concatenate(kept) if kept else np.empty(0, dtype=self.build_schema.dtype)
        self.note_memory(self.pages(len(table)) + (build_spill is not None))
        return table, cut, build_spill

    def _probe(self, probes: Iterator[np.ndarray], level: int, cut, directory, table):
        """Probe the table with every batch; tuples at or above the cut go to an overflow file
        (returned: its writer, or None without overflow). In a LEFT JOIN a probe tuple below the
        cut that matched nothing is padded here: the table holds every build tuple below the cut,
        and no other pass will see it."""
        probe_spill = None if cut is None else self.spool(self.probe_schema, "overflow-probe")
        for batch in probes:
            self.count("probe_tuples", len(batch))
            if cut is not None:
                batch = self._route(batch, self.probe_key, level, cut, probe_spill)
            # the table holds every build tuple below the cut: a LEFT JOIN pads the rest now
            yield from self.probe_table(batch, table, directory)
        return probe_spill

    def _route(self, batch: np.ndarray, key: str, level: int, cut: np.uint64, spill,
               hashes: np.ndarray | None = None) -> np.ndarray:
        """Write the tuples at or above the cut to ``spill``; return the others."""
        if hashes is None:
            hashes = self.level_hash(batch, key, level)
        out = hashes >= cut
        if out.any():
            spill.write(take_records(batch, out))
            self.count("spilled_tuples", int(out.sum()))
            return take_records(batch, ~out)
        return batch
