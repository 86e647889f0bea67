"""External merge sort as an iterator (Volcano, Graefe and Thakkar 1992, Section 2.2).

The algorithm is Volcano's: quicksort in memory, then merging.

* **Run generation.** ``open`` consumes the input into a sort space of ``memory_pages`` pages
  (``memory_pages * tuples_per_page`` tuples). Each time the space is full its contents are
  sorted and written to a temporary heap file as one *level-0 run*. If the whole input fits, no
  run is written at all: ``next`` hands out the sorted array.
* **Merging.** With ``F = memory_pages - 1`` (one page of the space stays for output), runs are
  merged ``F`` at a time into level-1 runs, level-1 runs into level-2 runs and so on, until at
  most ``F`` runs remain. As in Volcano, ``open`` performs every merge level but the last; the
  last merge happens in ``next``, as the consumer asks for tuples, and is never written.

Counters (``stats.extra``): ``runs`` (level-0 runs), ``merge_passes`` (merge levels, the final
one included), ``pages_written`` and ``pages_read`` (run pages, one write and one read per page
per pass: with n tuples and c tuples a page that is ``ceil(n / c)`` pages per pass, since every
run but the last holds whole pages).

Vectorized merge. A per-tuple heap of run heads would cost a Python step per tuple, so merging is
done a block at a time: each run being merged gets ``(memory_pages - 1) // fan_in`` pages of the
space and has a block of its next tuples loaded. The smallest *last* key among the blocks of runs
that still have unread pages is a safe bound: no unread tuple of any run can sort before it. All
loaded tuples up to that bound are taken, sorted together (they are sorted pieces, which a
stable sort merges cheaply) and output, and the runs whose block emptied are refilled. Ties are
broken by run number, so the merge is stable and the whole sort keeps equal keys in input order.

Sort keys. Each key column is turned into an array whose ascending order is the requested order:
integers are complemented (``~x``, which reverses the order without overflow), floats of a
descending key become int64s in the reverse of DuckDB's order (``_descending_floats``), and text
bytes complemented (``255 - b``), which reverses bytewise order and puts a longer string
before its prefix, as descending order should. Several keys are sorted with ``np.lexsort``.
A nullable key column is preceded by its null mask (False before True), so NULLs come last in
both directions, DuckDB's default order (``NULLS LAST``); a key ``ORDER BY x NULLS FIRST`` gets
the negated mask instead. NaN is ordered as DuckDB orders it,
after every other number: last ascending (numpy's own order of floats, which its sorts and
``searchsorted`` follow) and first descending; the merge compares keys in that order too.

Every level reads and writes every page, even a lone run left over at the end of a level (it is
copied rather than carried up), so the page counts follow the textbook formula exactly.

Simplifications: no replacement selection (runs are exactly the size of the sort space, as in
Volcano); the run that is still in memory when the input ends is written like the others; a run is
read in blocks of several pages per request rather than in Volcano's fixed-size clusters; no
parallel (range-partitioned) sort, which belongs to the exchange operator.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.errors import SchemaError
from minidb.exec.expr import compare, has_nan
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.store import SpoolWriter, read_pages, tuples_per_page
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, null_mask

MIN_PAGES = 3


def sort_keys(batch: np.ndarray, keys: list[tuple[str, bool, bool]], schema: Schema,
              ) -> list[np.ndarray]:
    """One array per key whose ascending order is the requested order of that key; ``keys``
    are (column, ascending, nulls_first)."""
    out = []
    for name, ascending, nulls_first in keys:
        col = schema.column(name)
        values = batch[col.name]
        if col.nullable:  # NULLs after every value (DuckDB's default), or before with NULLS FIRST
            nulls = null_mask(batch, col.name)
            if nulls is None:
                nulls = np.zeros(len(batch), dtype=bool)
            out.append(~nulls if nulls_first else nulls)
        if ascending:
            out.append(values)
        elif col.kind == "char":
            flipped = 255 - np.ascontiguousarray(values).view(np.uint8)
            out.append(flipped.view(values.dtype))
        elif col.kind == "float64":
            out.append(_descending_floats(values))
        else:
            out.append(~values)
    return out


_INT64_MAX = np.int64(2**63 - 1)


def _descending_floats(values: np.ndarray) -> np.ndarray:
    """int64 keys whose ascending order is DuckDB's descending order of the floats ``values``:
    NaN first (DuckDB's largest number; negating would leave it last, as numpy sorts NaN), then
    inf down to -inf, with -0.0 and 0.0 tied. The IEEE bits of a float, its 63 low bits flipped
    where the sign is set, order as the float does; their complement reverses that order."""
    bits = (values + 0.0).view(np.int64)  # + 0.0 turns -0.0 into 0.0
    key = ~(bits ^ ((bits >> 63) & _INT64_MAX))
    if has_nan(values):
        key[np.isnan(values)] = np.iinfo(np.int64).min
    return key


def sort_order(keys: list[np.ndarray]) -> np.ndarray:
    """Stable permutation that sorts rows by ``keys`` (first key most significant)."""
    if len(keys) == 1:
        return np.argsort(keys[0], kind="stable")
    return np.lexsort(tuple(reversed(keys)))


def count_before(keys: list[np.ndarray], bound: tuple, inclusive: bool) -> int:
    """Rows at the front of sorted ``keys`` whose key is < ``bound`` (or <= when inclusive)."""
    if len(keys) == 1:
        return int(np.searchsorted(keys[0], bound[0], side="right" if inclusive else "left"))
    n = len(keys[0])
    less = np.zeros(n, dtype=bool)
    equal = np.ones(n, dtype=bool)
    for k, v in zip(keys, bound, strict=True):  # NaN after every number, as the sort put it
        less |= equal & compare("<", k, v)
        equal &= compare("=", k, v)
    return int(np.count_nonzero(less | equal if inclusive else less))


def _ranked(bound: tuple) -> tuple:
    """A merge bound ``(key values, run)`` that Python compares in the sort's order, where a
    float NaN comes after every number (a bare NaN compares as neither less nor greater)."""
    keys, run = bound
    return tuple((1, 0) if v != v else (0, v) for v in keys), run


class _RunCursor:
    """One run being merged: its file, the next page to read, and the loaded block."""

    def __init__(self, heap: HeapFile, index: int):
        self.heap = heap
        self.index = index
        self.next_page = 0
        self.records: np.ndarray | None = None
        self.keys: list[np.ndarray] = []

    @property
    def unread(self) -> bool:
        return self.next_page < self.heap.num_pages

    @property
    def loaded(self) -> int:
        return 0 if self.records is None else len(self.records)


class ExternalSort(Operator):
    """Sort the input on ``keys`` = [(column, ascending), ...] within ``memory_pages`` pages; a
    key may have a third element, nulls_first (``ORDER BY x NULLS FIRST``; NULLs last if absent)."""

    kind = "sort"

    def __init__(self, ctx: ExecContext, child: Operator, keys: list[tuple],
                 memory_pages: int):
        super().__init__(child, memory_pages=memory_pages)
        if not keys:
            raise SchemaError("a sort needs at least one key column")
        self.ctx = ctx
        self.schema = child.schema
        self.keys = [(self.schema.column(k[0]).name, bool(k[1]), len(k) > 2 and bool(k[2]))
                     for k in keys]
        self._output: Iterator[np.ndarray] | None = None
        self._temps: list[HeapFile] = []

    # -- open: run generation and all merge levels but the last --------------------------------
    def _open(self) -> None:
        memory = self.require_memory(MIN_PAGES)
        super()._open()
        for key in ("runs", "merge_passes", "pages_written", "pages_read"):
            self.stats.extra.setdefault(key, 0)
        self.capacity = tuples_per_page(self.ctx.page_size, self.schema)
        self.fan_in = memory - 1
        space = memory * self.capacity

        child = self.children[0]
        runs: list[HeapFile] = []
        held: list[np.ndarray] = []
        held_rows = 0
        while (batch := self._pull(child)) is not None:
            held.append(batch)
            held_rows += len(batch)
            # a full sort space becomes a run only once we know more input follows it
            while held_rows > space:
                data = np.concatenate(held) if len(held) > 1 else held[0]
                runs.append(self._write_run(self._sorted(data[:space])))
                held, held_rows = [data[space:]], held_rows - space
        data = (np.concatenate(held) if len(held) > 1 else held[0]) if held else None

        if not runs:  # everything fits in the sort space: no run is written
            self._output = self._rechunk([self._sorted(data)] if data is not None else [])
            return
        if data is not None and len(data):
            runs.append(self._write_run(self._sorted(data)))
        self.stats.add("runs", len(runs))
        while len(runs) > self.fan_in:
            runs = self._merge_pass(runs)
        self.stats.add("merge_passes")
        self._output = self._rechunk(self._merge(runs))

    def _sorted(self, data: np.ndarray) -> np.ndarray:
        return data[sort_order(sort_keys(data, self.keys, self.schema))]

    def _new_writer(self, purpose: str) -> SpoolWriter:
        heap = self.ctx.temp_heap(self.schema, purpose)
        self._temps.append(heap)
        return SpoolWriter(heap)

    def _write_run(self, records: np.ndarray) -> HeapFile:
        writer = self._new_writer("sort-run")
        writer.write(records)
        heap = writer.close()
        self.stats.add("pages_written", writer.pages_written)
        return heap

    def _merge_pass(self, runs: list[HeapFile]) -> list[HeapFile]:
        """One intermediate merge level: every group of ``fan_in`` runs becomes one run."""
        self.stats.add("merge_passes")
        out = []
        for start in range(0, len(runs), self.fan_in):
            group = runs[start : start + self.fan_in]
            writer = self._new_writer("sort-run")
            for chunk in self._merge(group):
                writer.write(chunk)
            out.append(writer.close())
            self.stats.add("pages_written", writer.pages_written)
        return out

    # -- merging -----------------------------------------------------------------------------
    def _merge(self, runs: list[HeapFile]) -> Iterator[np.ndarray]:
        """Merge sorted runs block by block; yields sorted chunks; drops the runs at the end."""
        cursors = [_RunCursor(heap, i) for i, heap in enumerate(runs)]
        block_pages = max(1, (self.memory_pages - 1) // len(cursors))
        try:
            while True:
                for c in cursors:
                    if c.loaded == 0 and c.unread:
                        self._refill(c, block_pages)
                live = [c for c in cursors if c.loaded]
                if not live:
                    return
                bound = None  # (last key, run index) of the run whose block ends lowest
                for c in live:
                    if c.unread:
                        last = (tuple(k[-1] for k in c.keys), c.index)
                        if bound is None or _ranked(last) < _ranked(bound):
                            bound = last
                pieces, piece_keys = [], []
                for c in live:
                    if bound is None:
                        take = c.loaded
                    else:
                        take = count_before(c.keys, bound[0], inclusive=c.index <= bound[1])
                    if not take:
                        continue
                    pieces.append(c.records[:take])
                    piece_keys.append([k[:take] for k in c.keys])
                    c.records = c.records[take:]
                    c.keys = [k[take:] for k in c.keys]
                if len(pieces) == 1:
                    yield pieces[0]
                    continue
                merged = np.concatenate(pieces)
                keys = [np.concatenate(ks) for ks in zip(*piece_keys, strict=True)]
                yield merged[sort_order(keys)]
        finally:
            for heap in runs:
                self._drop(heap)

    def _refill(self, c: _RunCursor, block_pages: int) -> None:
        n = min(block_pages, c.heap.num_pages - c.next_page)
        c.records = read_pages(c.heap, c.next_page, n)
        c.keys = sort_keys(c.records, self.keys, self.schema)
        c.next_page += n
        self.stats.add("pages_read", n)

    # -- next / close ------------------------------------------------------------------------
    def _rechunk(self, chunks) -> Iterator[np.ndarray]:
        """The sorted output in batches of at most ``ctx.batch_rows`` tuples."""
        step = self.ctx.batch_rows
        for chunk in chunks:
            for start in range(0, len(chunk), step):
                yield chunk[start : start + step]

    def _next(self) -> np.ndarray | None:
        return next(self._output, None)

    def _close(self) -> None:
        if self._output is not None:
            self._output.close()  # a merge stopped early drops its runs here
            self._output = None
        for heap in list(self._temps):
            self._drop(heap)
        super()._close()

    def _drop(self, heap: HeapFile) -> None:
        if heap in self._temps:
            self._temps.remove(heap)
            self.ctx.drop_temp(heap)

    def describe(self) -> str:
        keys = ", ".join(f"{n} {'ASC' if a else 'DESC'}{' NULLS FIRST' if f else ''}"
                         for n, a, f in self.keys)
        return f"ExternalSort({keys}; {self.memory_pages} pages)"

