"""Block nested-loops join: any join predicate, in bounded memory.

The nested-loops join is the fallback every engine keeps for predicates that are not equalities
(the Gamma paper, Section 6, relies on hashing for equi-joins and mentions that its competitor
keeps special-case algorithms besides sort-merge; Volcano, Graefe and Thakkar 1992, Section 2,
builds every algorithm, this one included, as an iterator over anonymous inputs). The *block*
variant:

* ``open`` materializes the inner input once into a temporary heap file, because the inner
  stream has to be read many times and an arbitrary input cannot be re-run;
* the outer input is then read a block at a time, a block being ``memory_pages - 2`` pages of
  outer tuples (one page is left for reading the inner file, one for output);
* for each outer block the inner file is scanned once, and every pair (outer tuple of the block,
  inner tuple of the cluster read) is tested against the predicate.

So the inner file is read ``ceil(outer pages / (memory_pages - 2))`` times, the classic cost.

Vectorized pairing. The pairs of an outer block and an inner cluster are formed with index
arithmetic (``np.repeat`` for the outer side, ``np.tile`` for the inner side) in chunks of at
most ``ctx.batch_rows`` pairs; the predicate is evaluated on a narrow array holding only the
columns it reads, and full output tuples are built only for the pairs that qualify.

The output is the outer tuple followed by the inner tuple. Column names of the two inputs must be
different (the SQL layer qualifies them first); a shared name is a ``SchemaError``.

LEFT OUTER JOIN (``outer=True``): the outer input is the preserved side; an outer tuple that no
inner tuple matches comes out once, after its block has met the whole inner file, followed by
an inner tuple of NULLs (counter ``padded``).

Simplifications: the inner file is read in the scan's clusters (several pages per transfer)
rather than one page at a time, which changes the number of disk requests but not the number of
pages read; a join without a predicate is the cross product.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.errors import SchemaError
from minidb.exec.expr import Expr
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.scan import apply_predicate
from minidb.exec.store import SpoolWriter, tuples_per_page
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import NULLS, Schema, glue_records, null_mask, set_null_mask

MIN_PAGES = 3


def joined_schema(left: Schema, right: Schema, what: str) -> Schema:
    """``left``'s columns then ``right``'s; the names must not overlap."""
    shared = sorted({n.lower() for n in left.names} & {n.lower() for n in right.names})
    if shared:
        raise SchemaError(
            f"{what}: both inputs have a column named {', '.join(shared)}; rename or qualify "
            "the columns of one input before joining"
        )
    return Schema(list(left.columns) + list(right.columns))


def concat_rows(left: np.ndarray, right: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Glue row i of ``left`` to row i of ``right`` (two byte copies, any number of columns;
    the null bitmaps of the two sides, if any, are merged)."""
    return glue_records([left, right], dtype)


class NestedLoopsJoin(Operator):
    """Join ``outer`` and ``inner`` on any ``predicate`` (None: cross product)."""

    kind = "nested_loops_join"

    def __init__(self, ctx: ExecContext, outer: Operator, inner: Operator, predicate: Expr | None,
                 memory_pages: int, left_outer: bool = False):
        super().__init__(outer, inner, memory_pages=memory_pages)
        self.ctx = ctx
        self.predicate = predicate
        self.left_outer = left_outer
        padded = inner.schema.nullable() if left_outer else inner.schema
        self.schema = joined_schema(outer.schema, padded, "nested-loops join")
        self._padding = padded.new_records(1)
        if left_outer:
            self._padding[NULLS] = 0xFF  # every inner column NULL
        self._outer_names = outer.schema.names
        self._inner_names = inner.schema.names
        self._probe_schema = None
        if predicate is not None:
            wanted = {self.schema.column(c).name for c in predicate.columns()}
            self._probe_schema = Schema([c for c in self.schema.columns if c.name in wanted])
        self._inner_heap: HeapFile | None = None
        self._output: Iterator[np.ndarray] | None = None

    def _open(self) -> None:
        memory = self.require_memory(MIN_PAGES)
        super()._open()
        for key in ("outer_blocks", "inner_scans", "inner_pages_written", "inner_pages_read", "pairs") \
                + (("padded",) if self.left_outer else ()):
            self.stats.extra.setdefault(key, 0)
        outer, inner = self.children
        # materialize the inner input once so that it can be scanned once per outer block
        writer = SpoolWriter(self.ctx.temp_heap(inner.schema, "nlj-inner"))
        self._inner_heap = writer.heap
        while (batch := self._pull(inner)) is not None:
            writer.write(batch)
        writer.close()
        self.stats.add("inner_pages_written", writer.pages_written)
        self.block_rows = (memory - 2) * tuples_per_page(self.ctx.page_size, outer.schema)
        self._output = self._run()

    def _next(self) -> np.ndarray | None:
        return next(self._output, None)

    def _close(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None
        if self._inner_heap is not None:
            self.ctx.drop_temp(self._inner_heap)
            self._inner_heap = None
        super()._close()

    def describe(self) -> str:
        on = f" on {self.predicate}" if self.predicate is not None else " (cross product)"
        how = "LEFT OUTER " if self.left_outer else ""
        return f"{how}NestedLoopsJoin{on}; {self.memory_pages} pages"

    # -- the loops -------------------------------------------------------------------------------
    def _run(self) -> Iterator[np.ndarray]:
        if self._inner_heap.num_records == 0 and not self.left_outer:
            return  # nothing can match; the outer input need not be read
        outer = self.children[0]
        held: list[np.ndarray] = []
        held_rows = 0
        exhausted = False
        while True:
            while not exhausted and held_rows < self.block_rows:
                batch = self._pull(outer)
                if batch is None:
                    exhausted = True
                else:
                    held.append(batch)
                    held_rows += len(batch)
            if not held_rows:
                return
            data = np.concatenate(held) if len(held) > 1 else held[0]
            block, rest = data[: self.block_rows], data[self.block_rows :]
            held, held_rows = ([rest], len(rest)) if len(rest) else ([], 0)
            yield from self._join_block(block)

    def _join_block(self, block: np.ndarray) -> Iterator[np.ndarray]:
        self.stats.add("outer_blocks")
        self.stats.add("inner_scans")
        self.stats.add("inner_pages_read", self._inner_heap.num_pages)
        matched = np.zeros(len(block), dtype=bool)
        for cluster, _ in self._inner_heap.scan():
            c = len(cluster)
            rows_per_chunk = max(1, self.ctx.batch_rows // c)
            for start in range(0, len(block), rows_per_chunk):
                chunk = block[start : start + rows_per_chunk]
                out = self._pairs(chunk, cluster, matched[start : start + rows_per_chunk])
                if len(out):
                    yield out
        if self.left_outer and not matched.all():
            unmatched = block[~matched]
            self.stats.add("padded", len(unmatched))
            yield concat_rows(unmatched, np.repeat(self._padding, len(unmatched)), self.schema.dtype)

    def _pairs(self, outer: np.ndarray, inner: np.ndarray, matched: np.ndarray) -> np.ndarray:
        b, c = len(outer), len(inner)
        oi = np.repeat(np.arange(b), c)
        ii = np.tile(np.arange(c), b)
        self.stats.add("pairs", b * c)
        if self.predicate is not None:
            probe = self._probe_schema.new_records(b * c)
            for name in self._probe_schema.names:
                side, idx = (outer, oi) if name in self._outer_names else (inner, ii)
                probe[name] = side[name][idx]
                if (nulls := null_mask(side, name)) is not None:
                    set_null_mask(probe, name, nulls[idx])
            mask = apply_predicate(self.predicate, probe)
            oi, ii = oi[mask], ii[mask]
        matched[oi] = True
        return concat_rows(outer[oi], inner[ii], self.schema.dtype)

