"""GRACE and Hybrid hash joins: partition both inputs so each piece of the build input fits.

The Gamma paper closes (§7) by announcing the fix for its Simple hash join's overflows: a
parallel Hybrid hash join (DeWitt et al. 1984, DeWitt and Gerber 1985), which "recognizes memory
limitations and repartitions the source relations such that no partition of the smaller
relation should exceed available memory". Both joins here split the build and the probe input
by the same hash function into ``P`` partitions and then join partition i of one with partition
i of the other, so every pair of equal keys meets in exactly one partition pair.

* **GRACE** (Kitsuregawa et al. 1983) writes every partition of both inputs to disk, then reads
  back each pair and joins it in memory: every tuple is written once and read once, even when
  the build input would have fit.
* **Hybrid** keeps partitions in memory for as long as they fit, and only spills one when memory
  runs out (the largest one still in memory). Probe tuples of an in-memory partition are joined
  at once, with no I/O; only the spilled partitions pay a write and a read. With memory for
  the whole build input nothing is spilled (an in-memory hash join); with a quarter of it,
  about three quarters of both inputs go round the disk. The cost therefore grows gradually as
  memory shrinks, where Simple hash re-reads its overflow files on every pass.

The number of partitions. The textbook Hybrid takes ``B = ceil((|R| F - M) / (M - 1))`` spilled
partitions from the size of the build input ``|R|``, which is only known once it has been
read. Here the join does not know it beforehand, so it partitions ``P = min(FANOUT,
2 sqrt(memory_pages))`` ways (enough partitions that some fit in memory, few enough that their
output buffers leave room for them) and lets memory decide which partitions stay: when memory
runs out the largest partition still held goes to disk (a "dynamic" Hybrid hash join).
A partition pair whose build side is still bigger than memory is joined by the same algorithm
one level down, with a new hash function; one that no function can split (every build tuple
has the same key) is joined by memory-loads.

LEFT OUTER JOIN (``outer=True``, the probe input preserved): every probe tuple is decided in
exactly one partition pair, the one its key hashes to, so it is padded with a build tuple of
NULLs (counter ``padded``) once that pair is joined and nothing in it matched (or every match
failed the ON ``condition``): at once for a partition held in memory (``probe_table``), when a
spilled pair is joined in memory (``join_in_memory``), never before its last memory-load when
the pair is joined by memory-loads (``join_by_memory_loads`` keeps a flag per probe tuple), one
level down when the pair is partitioned again; a spilled pair whose build side is empty has its
probe file read once to pad it (an inner join skips it unread). Lab 2's student join
(``labs/lab2_joins/hybrid_hash.py``) leaves this out: it keeps ``supports_outer`` False.

Memory accounting (``peak_memory_pages``): the pages of the partitions held in memory plus one
output buffer page for each partition being written to disk, at most ``memory_pages``. A page of
memory holds ``capacity()`` tuples of a hash table, which is fewer than a heap page on a machine
whose profile sets ``hash_entry_bytes`` (Gamma's): Hybrid and GRACE build the same kind of
main-memory table as Simple hash and pay the same space per entry. (A spilled pair that fits is
noted as its file's pages plus one, Lab 2's rule; with ``hash_entry_bytes`` its table takes more
pages than the file, still within the budget since its tuples are at most ``limit``.)

Counters (``stats.extra``): ``partitions_spilled``, ``levels`` (deepest recursion),
``build_tuples`` / ``probe_tuples`` (entered into or looked up in a hash table),
``partitioned_tuples`` (hashed to a partition, every level), ``spill_pages_written`` /
``spill_pages_read``, ``memory_load_passes``, ``matches``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from minidb.exec.expr import compare
from minidb.exec.join.base import BUILD_DONE, JoinAlgorithm
from minidb.plugins import register
from minidb.storage.schema import take_records

FANOUT = 16
"""Most partitions per level: enough that a build input 16 times memory needs one level."""

MAX_LEVELS = 8
"""Recursion depth after which a partition pair is joined by memory-loads."""


class PartitionedHashJoin(JoinAlgorithm):
    """Hash-partition both inputs; join each partition pair in memory. ``keep_in_memory`` is
    what separates Hybrid (True) from GRACE (False)."""

    keep_in_memory = True
    priced_counters = {"build_tuples": "hash_build", "probe_tuples": "hash_probe",
                       "partitioned_tuples": "partition"}
    min_memory_pages = 3
    supports_outer = True
    announces_build = True

    def run(self, memory_pages: int) -> Iterator[np.ndarray]:
        # BEGIN SOLUTION: Lab 2 (Hybrid hash join): the built-in hybrid_hash and grace_hash joins are the lab's model answer, left out of the student release; write yours in labs/lab2_joins/hybrid_hash.py and use it as student_hybrid
        self.memory = memory_pages
        self.limit = (memory_pages - 1) * self.capacity()  # one page reads the probe input
        self.fanout = max(2, min(memory_pages - 1, FANOUT, 2 * math.isqrt(memory_pages)))
        for name in ("partitions_spilled", "levels", "partitioned_tuples", "spill_pages_written",
                     "spill_pages_read", "memory_load_passes"):
            self.stats.extra.setdefault(name, 0)
        yield from self._level(self.build_batches(), self.probe_batches, level=0)
        # END SOLUTION

    def _level(self, builds: Iterator[np.ndarray], probes: Callable[[], Iterator[np.ndarray]],
               level: int) -> Iterator[np.ndarray]:
        # BEGIN SOLUTION: Lab 2 (Hybrid hash join): the built-in hybrid_hash and grace_hash joins are the lab's model answer, left out of the student release; write yours in labs/lab2_joins/hybrid_hash.py and use it as student_hybrid
        stats = self.stats.extra
        stats["levels"] = max(stats["levels"], level)
        parts: list[list[np.ndarray]] = [[] for _ in range(self.fanout)]
        sizes = np.zeros(self.fanout, dtype=np.int64)
        spills: dict[int, object] = {}
        if not self.keep_in_memory:
            spills = {i: self.spool(self.build_schema, f"build-{i}") for i in range(self.fanout)}
        keys = _KeyTracker(self.build_key)
        for batch in builds:
            self.count("partitioned_tuples", len(batch))
            where = self._partition_of(batch, self.build_key, level)
            for i in np.unique(where):
                rows = take_records(batch, where == i)
                if i in spills:
                    spills[i].write(rows)
                    keys.saw(i, rows)
                else:
                    parts[i].append(rows)
                    sizes[i] += len(rows)
            while self._pages_held(sizes, spills) > self.memory:  # spill the largest held one
                held = [i for i in range(self.fanout) if i not in spills]
                victim = max(held, key=lambda i: sizes[i])
                spills[victim] = self.spool(self.build_schema, f"build-{victim}")
                for rows in parts[victim]:
                    spills[victim].write(rows)
                    keys.saw(victim, rows)
                parts[victim], sizes[victim] = [], 0
            self.note_memory(self._pages_held(sizes, spills))
        self.count("partitions_spilled", len(spills))
        held = [i for i in range(self.fanout) if i not in spills]
        in_memory = [rows for i in held for rows in parts[i]]
        table_rows = (np.concatenate(in_memory) if in_memory
                      else np.empty(0, dtype=self.build_schema.dtype))
        self.count("build_tuples", len(table_rows))
        directory, table = self.table(table_rows)
        yield BUILD_DONE
        del parts, in_memory
        build_files = {i: self.close_spool(w) for i, w in spills.items()}
        probe_spills = {i: self.spool(self.probe_schema, f"probe-{i}") for i in spills}
        spilled = np.zeros(self.fanout, dtype=bool)
        spilled[list(spills)] = True
        for batch in probes():
            if spills:
                self.count("partitioned_tuples", len(batch))
                where = self._partition_of(batch, self.probe_key, level)
                out = spilled[where]
                for i in np.unique(where[out]):
                    probe_spills[i].write(take_records(batch, where == i))
                batch = take_records(batch, ~out)
            self.count("probe_tuples", len(batch))
            # the table holds the whole of these tuples' partitions: a LEFT JOIN pads them now
            yield from self.probe_table(batch, table, directory)
        del directory, table
        for i in sorted(build_files):
            build_file, probe_file = build_files[i], self.close_spool(probe_spills[i])
            if not probe_file.num_pages or not build_file.num_pages:
                # nothing can match: skip the pair (a LEFT JOIN pads its probe tuples)
                yield from self.pad_all(self.scan_spool(probe_file, drop=False))
                self.ctx.drop_temp(build_file)
                self.ctx.drop_temp(probe_file)
                continue
            if build_file.num_pages * build_file.capacity <= self.limit:  # fits: join it now
                self.note_memory(build_file.num_pages + 1)
                build_rows = np.concatenate(list(self.scan_spool(build_file)))
                yield from self.join_in_memory(build_rows, self.scan_spool(probe_file))
            elif level + 1 >= MAX_LEVELS or keys.one_key(i):
                yield from self.join_by_memory_loads(build_file, probe_file, self.limit)
            else:
                yield from self._level(self.scan_spool(build_file),
                                       lambda f=probe_file: self.scan_spool(f), level + 1)
        # END SOLUTION

    def _pages_held(self, sizes: np.ndarray, spills: dict) -> int:
        """Memory in use: the pages of the partitions held plus a buffer page per spilled one."""
        held = sum(int(n) for i, n in enumerate(sizes) if i not in spills)
        return self.pages(held) + len(spills)  # held partitions share one table's pages

    def _partition_of(self, rows: np.ndarray, key: str, level: int) -> np.ndarray:
        return (self.level_hash(rows, key, level) % np.uint64(self.fanout)).astype(np.intp)


class _KeyTracker:
    """Whether every build tuple written to a partition so far had the same key: such a
    partition cannot be split by any hash function, however many levels one tries."""

    def __init__(self, key: str):
        self.key, self.first, self.mixed = key, {}, set()

    def saw(self, part: int, rows: np.ndarray) -> None:
        if part in self.mixed or not len(rows):
            return
        keys = rows[self.key]
        first = self.first.setdefault(part, keys[0])
        if not compare("=", keys, first).all():  # NaN = NaN, as in DuckDB
            self.mixed.add(part)

    def one_key(self, part: int) -> bool:
        return part not in self.mixed


@register("join", "hybrid_hash")
class HybridHashJoin(PartitionedHashJoin):
    """Hybrid hash join: partitions stay in memory until memory runs out (DeWitt et al. 1984)."""

    kind = "hybrid_hash_join"
    keep_in_memory = True


@register("join", "grace_hash")
class GraceHashJoin(PartitionedHashJoin):
    """GRACE hash join: every partition of both inputs goes to disk first (Kitsuregawa 1983)."""

    kind = "grace_hash_join"
    keep_in_memory = False
