"""The simple in-memory hash join (Gamma paper, Section 6, "Join Algorithms").

Gamma joins in two phases: the smaller input (the *building* relation) is read completely and
entered into a main-memory hash table on the join attribute, then the larger input (the
*probing* relation) is read and each of its tuples looks up its matches in that table, so
result tuples stream out while the probe input is still being read. The build phase is
therefore blocking and needs memory for the whole building relation; the probe phase needs only
a buffer.

Here ``open`` consumes the build input, and ``next`` probes one batch of the probe input at a
time. The "hash table" is the build input sorted on its key: a probe batch finds the range of
equal build keys of every probe tuple with two ``np.searchsorted`` calls, and the matching pairs
are expanded with ``np.repeat``, with no Python step per tuple. Output tuples are the probe tuple
followed by the build tuple (outer then inner, as in ``NestedLoopsJoin``); the two inputs'
column names must be different.

Memory. The hash table may hold ``memory_pages`` pages of the build relation (the probe side
streams through and is not charged). When the build input turns out bigger than that (the
planner's estimate was too low), the join does not fail: it keeps the first ``memory_pages``
pages in the table and spools the rest of the build input to a temporary file, probes with the
whole probe input while also spooling it, then joins the spooled build tuples one memory-load at
a time against the spooled probe tuples. Every build tuple meets every probe tuple exactly once,
so the result is the same; the price is one extra pass over the probe input per extra memory-load
(``overflow_passes``), which is why the planner builds on the smaller input. Counters:
``build_tuples``, ``build_pages``, ``probe_tuples``, ``matches``, ``overflow_passes``,
``spill_pages_written``.

Simplification: Gamma resolves an overflow differently, by spooling part of the building relation
with a second hash function and handing that function to the producers of the probing relation
(Section 6.2.2); this multi-pass fallback only keeps answers right when an estimate is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.errors import SchemaError
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.join.nested_loops import concat_rows, joined_schema
from minidb.exec.store import SpoolWriter, tuples_per_page

MIN_PAGES = 1


class HashJoin(Operator):
    """Equi-join ``probe.probe_key = build.build_key``; output = probe columns, then build columns."""

    kind = "hash_join"

    def __init__(self, ctx: ExecContext, build: Operator, probe: Operator, build_key: str,
                 probe_key: str, memory_pages: int):
        super().__init__(build, probe, memory_pages=memory_pages)
        self.ctx = ctx
        build_col = build.schema.column(build_key, "the build input")
        probe_col = probe.schema.column(probe_key, "the probe input")
        if (build_col.kind == "char") != (probe_col.kind == "char"):
            raise SchemaError(
                f"hash join compares {probe_col} with {build_col}: text can only be joined with text"
            )
        self.build_key, self.probe_key = build_col.name, probe_col.name
        self.schema = joined_schema(probe.schema, build.schema, "hash join")
        self._table: np.ndarray | None = None
        self._keys: np.ndarray | None = None
        self._output: Iterator[np.ndarray] | None = None

    def _open(self) -> None:
        memory = self.require_memory(MIN_PAGES)
        super()._open()
        for key in ("build_tuples", "build_pages", "probe_tuples", "matches", "overflow_passes"):
            self.stats.extra.setdefault(key, 0)
        build = self.children[0]
        capacity = tuples_per_page(self.ctx.page_size, build.schema)
        self._limit = memory * capacity
        parts, rows = [], 0
        self._overflow: SpoolWriter | None = None
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
        self.stats.add("build_pages", -(-rows // capacity))
        self._load(np.concatenate(parts) if parts else np.empty(0, dtype=build.schema.dtype))
        self._output = self._run()

    def _load(self, table: np.ndarray) -> None:
        """Make ``table`` the hash table (here: sorted on the build key)."""
        order = np.argsort(table[self.build_key], kind="stable")
        self._table = table[order]
        self._keys = self._table[self.build_key]

    def _next(self) -> np.ndarray | None:
        return next(self._output, None)

    def _close(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None
        self._table = self._keys = None
        super()._close()

    def describe(self) -> str:
        return f"HashJoin({self.probe_key} = {self.build_key}; {self.memory_pages} pages)"

    def _run(self) -> Iterator[np.ndarray]:
        probe = self.children[1]
        spooled = None
        if self._overflow is not None:
            spooled = SpoolWriter(self.ctx.temp_heap(probe.schema, "join-probe"))
        while (batch := self._pull(probe)) is not None:
            self.stats.add("probe_tuples", len(batch))
            if spooled is not None:
                spooled.write(batch)
            yield from self._probe(batch)
        if self._overflow is None:
            return
        build_file, probe_file = self._overflow.close(), spooled.close()
        self.stats.add("spill_pages_written", build_file.num_pages + probe_file.num_pages)
        try:
            loads = self._memory_loads(build_file)
            for table in loads:
                self.stats.add("overflow_passes")
                self._load(table)
                for batch, _ in probe_file.scan(keep=False):
                    yield from self._probe(batch)
        finally:
            self.ctx.drop_temp(build_file)
            self.ctx.drop_temp(probe_file)

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

    def _probe(self, batch: np.ndarray) -> Iterator[np.ndarray]:
        """The joined tuples of one probe batch against the hash table now in memory."""
        if not len(self._keys):
            return
        keys = batch[self.probe_key]
        low = np.searchsorted(self._keys, keys, side="left")
        high = np.searchsorted(self._keys, keys, side="right")
        counts = high - low
        total = int(counts.sum())
        if not total:
            return
        self.stats.add("matches", total)
        probe_idx = np.repeat(np.arange(len(batch)), counts)
        # position of each match inside its probe tuple's run of equal build keys
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        build_idx = np.repeat(low, counts) + offsets
        step = self.ctx.batch_rows
        for start in range(0, total, step):
            sl = slice(start, start + step)
            yield concat_rows(batch[probe_idx[sl]], self._table[build_idx[sl]], self.schema.dtype)
