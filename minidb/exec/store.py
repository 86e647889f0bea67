"""Writing a stream into a heap file: the ``Store`` iterator and the spool writer used for temp files.

``Store`` sits at the root of a plan whose result must be kept (``CREATE TABLE ... AS SELECT``,
or the step of storing a result relation whose cost the Gamma paper separates out in Sections 4
and 5.1): it drains its input, hands
every batch to the target, and produces no tuples of its own, only the count of tuples stored
(``stats.extra['stored']``).

``SpoolWriter`` is what the other iterators use to write intermediate data: sorted runs (Volcano,
Graefe and Thakkar 1992, Section 2.2), spilled aggregation partitions (Gamma, Sections 6.2.2 and
7) and the materialized inner input of a nested-loops join. It collects tuples and writes only
whole pages, each page once, straight to the end of the file, so a spool of n tuples costs
exactly ``ceil(n / tuples_per_page)`` page writes on the disk meter, the number a cost formula
predicts. (``HeapFile.append`` would first fix the last page of the file in the buffer pool to
fill its free slots, a read the formula does not expect.)

Simplification: a temp file never goes through the buffer pool on the way out; pages are packed
and written in one transfer per flush, like the bulk path of ``HeapFile.append``.
"""

from __future__ import annotations

import numpy as np

from minidb.exec.iterator import Operator
from minidb.storage.heapfile import HeapFile
from minidb.storage.page import HeapPageFormat, heap_capacity
from minidb.storage.schema import Schema


def tuples_per_page(page_size: int, schema: Schema) -> int:
    """How many tuples of ``schema`` one heap page of ``page_size`` bytes holds."""
    return HeapPageFormat(page_size, schema.dtype).capacity


def hash_table_capacity(page_size: int, schema: Schema, entry_bytes: int = 0) -> int:
    """How many tuples of ``schema`` one page of a main-memory hash table holds when each entry
    takes ``entry_bytes`` beyond its tuple (bucket pointer, chain link, hash value): a heap page
    of records that much wider. ``entry_bytes`` 0 gives ``tuples_per_page`` exactly."""
    if not entry_bytes:
        return tuples_per_page(page_size, schema)
    return heap_capacity(page_size, schema.dtype.itemsize + int(entry_bytes))


class SpoolWriter:
    """Appends tuples to a (temporary) heap file a whole page at a time.

    ``flush_pages`` is how many full pages are gathered before a write; the remainder (less than
    a page) waits for more tuples or for ``close``, which writes the last, partial page.
    """

    def __init__(self, heap: HeapFile, flush_pages: int = 64):
        self.heap = heap
        self.capacity = heap.capacity
        self.flush_rows = max(1, flush_pages) * self.capacity
        self._pending: list[np.ndarray] = []
        self._pending_rows = 0
        self.pages_written = 0
        self.tuples_written = 0

    def write(self, records: np.ndarray) -> None:
        if not len(records):
            return
        self._pending.append(records)
        self._pending_rows += len(records)
        if self._pending_rows >= self.flush_rows:
            self._flush(final=False)

    def close(self) -> HeapFile:
        self._flush(final=True)
        return self.heap

    def _flush(self, final: bool) -> None:
        if not self._pending_rows:
            return
        data = self._pending[0] if len(self._pending) == 1 else np.concatenate(self._pending)
        cut = len(data) if final else (len(data) // self.capacity) * self.capacity
        if cut:
            self._write_pages(data[:cut])
        rest = data[cut:]
        self._pending = [rest] if len(rest) else []
        self._pending_rows = len(rest)

    def _write_pages(self, records: np.ndarray) -> None:
        heap = self.heap
        pages = heap.format.pack(np.asarray(records, dtype=heap.schema.dtype), heap.num_pages)
        heap.file.append_pages(pages)
        heap.buffer.counters.writes += len(pages)
        heap.num_records += len(records)
        self.pages_written += len(pages)
        self.tuples_written += len(records)


def read_pages(heap: HeapFile, first: int, n: int) -> np.ndarray:
    """The live tuples of pages ``first .. first+n-1`` of a temp file (not kept in the pool)."""
    parts = [records for records, _ in heap.scan(first, first + n - 1, keep=False)]
    if not parts:
        return np.empty(0, dtype=heap.schema.dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class Store(Operator):
    """Append every input batch to ``target`` and produce no tuples.

    ``target`` is a table-like object with ``insert(records)`` or a ``HeapFile`` (``append``).
    The number of tuples stored is ``stats.extra['stored']``.
    """

    kind = "store"

    def __init__(self, child: Operator, target):
        super().__init__(child)
        self.target = target
        self.schema = child.schema
        self._write = getattr(target, "insert", None) or target.append

    def _next(self) -> np.ndarray | None:
        child = self.children[0]
        self.stats.extra.setdefault("stored", 0)
        while (batch := self._pull(child)) is not None:
            self._write(batch)
            self.stats.add("stored", len(batch))
        return None

    def describe(self) -> str:
        name = getattr(self.target, "name", type(self.target).__name__)
        return f"Store(into {name})"
