"""The simple in-memory hash join (Gamma paper, Section 6, "Join Algorithms").

Gamma joins in two phases: the smaller input (the *building* relation) is read completely and
entered into a main-memory hash table on the join attribute, then the larger input (the
*probing* relation) is read and each of its tuples looks up its matches in that table, so
result tuples stream out while the probe input is still being read. The build phase is
therefore blocking and needs memory for the whole building relation; the probe phase needs only
a buffer.

Here ``open`` consumes the build input, and ``next`` probes one batch of the probe input at a
time. The hash table is a ``KeyDirectory`` (``key_directory.py``): the build input reordered by
bucket of its key, with a directory of where each bucket starts; a probe batch finds every probe tuple's
matches at once and the pairs are expanded with ``np.repeat``, with no Python step per tuple.
Output tuples are the probe tuple followed by the build tuple (outer then inner, as in
``NestedLoopsJoin``); the two inputs' column names must be different.

Memory. The hash table may hold ``memory_pages`` pages of the build relation (the probe side
streams through and is not charged), ``capacity()`` tuples a page: on a machine whose hash table
spends space on each entry (the profile's ``hash_entry_bytes``, Gamma's) fewer than a heap page. When the build input turns out bigger than that (the
planner's estimate was too low), the join does not fail: it keeps the first ``memory_pages``
pages in the table and spools the rest of the build input to a temporary file, probes with the
whole probe input while also spooling it, then joins the spooled build tuples one memory-load at
a time against the spooled probe tuples. Every build tuple meets every probe tuple exactly once,
so the result is the same; the price is one extra pass over the probe input per extra memory-load
(``overflow_passes``), which is why the planner builds on the smaller input. Counters:
``build_tuples``, ``build_pages``, ``probe_tuples``, ``matches``, ``overflow_passes``,
``spill_pages_written``.

LEFT OUTER JOIN (``outer=True``): the probe input is the preserved (left) side; a probe tuple
with no match, or whose matches all fail ``condition`` (the rest of the ON clause, evaluated on
the joined tuple), comes out once, followed by a build tuple of NULLs (after the last pass when
the build input overflowed). Counter: ``padded``.

NULL join keys match nothing (a NULL = NULL comparison is not TRUE): they are left out of the
hash table and find no match when probing.

This is the default join (registered as ``hash_join``). Gamma resolves an overflow differently,
by spooling part of the building relation with a second hash function and handing that function
to the producers of the probing relation (§6): that is the ``simple_hash`` join
(``simple_hash.py``); this multi-pass fallback only keeps answers right when an estimate is
wrong. ``hybrid_hash`` and ``grace_hash`` (``partitioned.py``) partition instead.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.exec.expr import is_true
from minidb.exec.iterator import Operator
from minidb.exec.join.base import JoinAlgorithm
from minidb.exec.join.key_directory import KeyDirectory
from minidb.exec.join.nested_loops import concat_rows
from minidb.exec.store import SpoolWriter, tuples_per_page
from minidb.plugins import register
from minidb.storage.schema import null_mask, take_records

MIN_PAGES = 1


@register("join", "hash_join")
class HashJoin(JoinAlgorithm):
    """Equi-join ``probe.probe_key = build.build_key``; output = probe columns, then build columns."""

    kind = "hash_join"
    priced_counters = {"build_tuples": "hash_build", "probe_tuples": "hash_probe"}
    min_memory_pages = MIN_PAGES
    supports_outer = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._table: np.ndarray | None = None
        self._directory: KeyDirectory | None = None

    def _open(self) -> None:
        memory = self.require_memory(MIN_PAGES)
        Operator._open(self)  # this join runs its own phases rather than ``run`` (it predates it)
        counters = ("build_tuples", "build_pages", "probe_tuples", "matches", "overflow_passes")
        for key in counters + (("padded",) if self.outer else ()):
            self.stats.extra.setdefault(key, 0)
        build = self.children[0]
        capacity = self.capacity()  # tuples per page of the hash table (``hash_entry_bytes``)
        self._limit = memory * capacity
        parts, rows = [], 0
        self._overflow: SpoolWriter | None = None
        self._matched: list[np.ndarray] = []  # LEFT JOIN with overflow: matches, in spool order
        while (batch := self._pull(build)) is not None:
            room = max(0, self._limit - rows)
            if room:
                parts.append(batch[:room])
            if len(batch) > room:
                if self._overflow is None:
                    self._overflow = SpoolWriter(self.ctx.temp_heap(build.schema, "join-build"))
                self._overflow.write(batch[room:])
            rows += len(batch)
        self.stats.add("build_tuples", rows)
        self.note_memory(-(-min(rows, self._limit) // capacity))
        self.stats.add("build_pages", -(-rows // tuples_per_page(self.ctx.page_size, build.schema)))
        self._load(np.concatenate(parts) if parts else np.empty(0, dtype=build.schema.dtype))
        self._output = self._run()

    def _load(self, table: np.ndarray) -> None:
        """Make ``table`` the hash table: reordered as its ``KeyDirectory`` says."""
        if (nulls := null_mask(table, self.build_key)) is not None:
            table = take_records(table, ~nulls)  # a NULL key equals nothing, not even another NULL
        probe_dtype = self.children[1].schema.dtype[self.probe_key]
        self._directory = KeyDirectory(table[self.build_key], probe_dtype)
        self._table = take_records(table, self._directory.order)

    def _next(self) -> np.ndarray | None:
        return next(self._output, None)

    def _close(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None
        self._table = self._directory = None
        super()._close()

    def describe(self) -> str:
        how = "LEFT OUTER " if self.outer else ""
        extra = f" AND {self.condition}" if self.condition is not None else ""
        return f"{how}HashJoin({self.probe_key} = {self.build_key}{extra}; {self.memory_pages} pages)"

    def _run(self) -> Iterator[np.ndarray]:
        probe = self.children[1]
        spooled = None
        if self._overflow is not None:
            spooled = SpoolWriter(self.ctx.temp_heap(probe.schema, "join-probe"))
        while (batch := self._pull(probe)) is not None:
            self.stats.add("probe_tuples", len(batch))
            if spooled is not None:
                spooled.write(batch)
            matched = np.zeros(len(batch), dtype=bool)
            yield from self._probe(batch, matched)
            if self.outer and spooled is None and not matched.all():
                yield self.pad(take_records(batch, ~matched))
            elif self.outer:
                self._matched.append(matched)
        if self._overflow is None:
            return
        build_file, probe_file = self._overflow.close(), spooled.close()
        self.stats.add("spill_pages_written", build_file.num_pages + probe_file.num_pages)
        # a LEFT JOIN remembers, for every probe tuple in spool order, whether any pass matched it
        matched = np.concatenate(self._matched) if self._matched else np.zeros(0, dtype=bool)
        try:
            loads = self._memory_loads(build_file)
            for table in loads:
                self.stats.add("overflow_passes")
                self._load(table)
                yield from self._probe_spooled(probe_file, matched)
            if self.outer:
                at = 0
                for batch, _ in probe_file.scan(keep=False):
                    mine, at = matched[at : at + len(batch)], at + len(batch)
                    if not mine.all():
                        yield self.pad(take_records(batch, ~mine))
        finally:
            self.ctx.drop_temp(build_file)
            self.ctx.drop_temp(probe_file)

    def _probe_spooled(self, probe_file, matched: np.ndarray) -> Iterator[np.ndarray]:
        """One more pass of the spooled probe tuples against the hash table now in memory."""
        at = 0
        for batch, _ in probe_file.scan(keep=False):
            mine = matched[at : at + len(batch)] if self.outer else np.zeros(len(batch), dtype=bool)
            at += len(batch)
            yield from self._probe(batch, mine)  # ``mine`` is a view: matches are recorded in place

    def _memory_loads(self, heap) -> Iterator[np.ndarray]:
        """The spooled build tuples, ``memory_pages`` pages at a time."""
        held, rows = [], 0
        for batch, _ in heap.scan(keep=False):
            held.append(batch)
            rows += len(batch)
            while rows >= self._limit:
                table = np.concatenate(held)
                yield table[: self._limit]
                held, rows = [table[self._limit:]], rows - self._limit
        if rows:
            yield np.concatenate(held)

    def _probe(self, batch: np.ndarray, matched: np.ndarray) -> Iterator[np.ndarray]:
        """The joined tuples of one probe batch against the hash table now in memory; sets
        ``matched`` for the probe tuples that found a partner."""
        if not len(self._table):
            return
        keys = batch[self.probe_key]
        if (nulls := null_mask(batch, self.probe_key)) is not None:
            present = np.flatnonzero(~nulls)  # a NULL probe key matches nothing
            probe_idx, build_idx = self._directory.matches(keys[present])
            probe_idx = present[probe_idx]
        else:
            probe_idx, build_idx = self._directory.matches(keys)
        total = len(probe_idx)
        if not total:
            return
        step = self.ctx.batch_rows
        for start in range(0, total, step):
            sl = slice(start, start + step)
            pairs = concat_rows(take_records(batch, probe_idx[sl]),
                                take_records(self._table, build_idx[sl]), self.schema.dtype)
            if self.condition is not None:
                keep = is_true(self.condition, pairs)
                pairs, matched[probe_idx[sl][keep]] = take_records(pairs, keep), True
            else:
                matched[probe_idx[sl]] = True
            self.stats.add("matches", len(pairs))
            if len(pairs):
                yield pairs
