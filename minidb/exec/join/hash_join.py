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

Memory. The build input must fit in ``memory_pages`` pages (counted in pages of the build
relation; the probe side streams through and is not charged). When it does not, the operator reads the rest of the
build input only to count it and raises ``MemoryBudgetError`` saying how many pages it would
have needed. Counters: ``build_tuples``, ``build_pages``, ``probe_tuples``, ``matches``.

Simplification: no overflow handling. Gamma, on overflow, spools part of the building relation
to a file with a second hash function and later joins the overflow partitions (Section 6.2.2,
whose cost grows quickly with the number of overflows); here the planner must pick a build
input that fits, or another join method.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.errors import MemoryBudgetError, SchemaError
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.join.nested_loops import concat_rows, joined_schema
from minidb.exec.store import tuples_per_page

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
        for key in ("build_tuples", "build_pages", "probe_tuples", "matches"):
            self.stats.extra.setdefault(key, 0)
        build = self.children[0]
        capacity = tuples_per_page(self.ctx.page_size, build.schema)
        limit = memory * capacity
        parts, rows = [], 0
        while (batch := self._pull(build)) is not None:
            rows += len(batch)
            if rows <= limit:
                parts.append(batch)
            else:
                parts = []  # past the budget: only count the rest, to report what was needed
        needed = -(-rows // capacity)
        self.stats.add("build_tuples", rows)
        self.stats.add("build_pages", needed)
        if rows > limit:
            raise MemoryBudgetError(
                f"hash join: the build input has {rows} tuples ({needed} pages) but the hash table "
                f"may use only {memory} pages; raise memory_pages to at least {needed} or build on "
                "the smaller input"
            )
        table = np.concatenate(parts) if parts else np.empty(0, dtype=build.schema.dtype)
        order = np.argsort(table[self.build_key], kind="stable")
        self._table = table[order]
        self._keys = self._table[self.build_key]
        self._output = self._run()

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
        step = self.ctx.batch_rows
        while (batch := self._pull(probe)) is not None:
            self.stats.add("probe_tuples", len(batch))
            if not len(self._keys):
                continue
            keys = batch[self.probe_key]
            low = np.searchsorted(self._keys, keys, side="left")
            high = np.searchsorted(self._keys, keys, side="right")
            counts = high - low
            total = int(counts.sum())
            if not total:
                continue
            self.stats.add("matches", total)
            probe_idx = np.repeat(np.arange(len(batch)), counts)
            # position of each match inside its probe tuple's run of equal build keys
            offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            build_idx = np.repeat(low, counts) + offsets
            for start in range(0, total, step):
                sl = slice(start, start + step)
                yield concat_rows(batch[probe_idx[sl]], self._table[build_idx[sl]], self.schema.dtype)
