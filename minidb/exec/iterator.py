"""The iterator protocol every operator follows (Volcano, Graefe and Thakkar 1992, Section 2).

An operator is an object with three calls:

* ``open()`` prepares it to produce data (and opens its inputs);
* ``next()`` returns the next *batch* of tuples, or ``None`` at end of stream;
* ``close()`` releases what it holds (hash tables, temporary files) and closes its inputs.

Volcano's ``next`` returns one tuple. minidb's returns a batch: a numpy structured array in the
operator's output ``schema`` (the on-page record layout). The meaning is the same as the
tuple-at-a-time protocol, the cost in Python is paid per batch, and numpy does the per-tuple work.
An operator does not know what produces its input: a scan, another operator, or (later) an
exchange receiving batches from other nodes.

Every operator takes an explicit memory budget in pages (``memory_pages``) when its algorithm
needs memory (sort, hash join, hash aggregate) and refuses to run below its minimum. Every
operator counts what it did in ``stats``: tuples in and out, plus algorithm-specific counters
(sorted runs, merge passes, hash table size ...). The cost model and the tests read these.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.errors import MemoryBudgetError, MinidbError
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, concat_records

#: tuples per batch produced by operators that build their own batches (sort output, joins)
BATCH_ROWS = 16384


#: how a non-clustered index scan visits the data pages of the records it found in the index:
#: "sorted" gathers a batch of record ids and reads each page once, in page order (what a
#: modern system does); "index_order" fetches one record at a time in index-key order, so every
#: record costs a page fix and, unless the buffer pool still holds the page, a random read
#: (Gamma's WiSS, DeWitt et al. 1988 §5.1 "each tuple causes a page fault", §5.2.2)
RID_FETCH = ("sorted", "index_order")


def check_rid_fetch(value: str) -> str:
    """``value`` if it is one of ``RID_FETCH``; a one-line error naming them otherwise."""
    if value not in RID_FETCH:
        raise MinidbError(f"rid_fetch must be one of {', '.join(RID_FETCH)}, not {value!r}")
    return value


@dataclass
class ExecContext:
    """What operators of one node share: its disk, its buffer pool, and temporary files."""

    disk: Disk
    buffer: BufferManager
    batch_rows: int = BATCH_ROWS
    rid_fetch: str = "sorted"
    """How a non-clustered index scan fetches the records its index names (``RID_FETCH``)."""
    node_id: int | None = None
    """The parallel node these operators run on (None in a single-node database): an operator
    reading an exchange can then tell the tuples another node sent from its own."""
    hash_entry_bytes: int = 0
    """Bytes a main-memory hash table of this machine spends on each entry beyond the tuple
    (bucket pointer, chain link, hash value): a join's table holds fewer tuples per page than a
    heap page (``JoinAlgorithm.capacity``). Set from the hardware profile's ``hash_entry_bytes``
    on the nodes of a parallel database; 0 (a table page holds what a heap page holds) otherwise."""
    _temp_ids: Iterator[int] = field(default_factory=itertools.count)

    @property
    def page_size(self) -> int:
        return self.disk.page_size

    def temp_heap(self, schema: Schema, purpose: str) -> HeapFile:
        """A new, empty heap file for intermediate results (sorted runs, spilled partitions)."""
        name = f"tmp-{purpose}-{next(self._temp_ids)}"
        return HeapFile(self.disk.create(name), schema, self.buffer)

    def drop_temp(self, heap: HeapFile) -> None:
        self.buffer.discard(heap.file)
        self.disk.drop(heap.file)


@dataclass
class OperatorStats:
    """What one operator did: tuples consumed and produced, plus algorithm counters."""

    tuples_in: int = 0
    tuples_out: int = 0
    batches_out: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def add(self, key: str, amount: int = 1) -> None:
        self.extra[key] = self.extra.get(key, 0) + amount


class Operator:
    """Base class of all iterators. Subclasses set ``kind`` and ``schema`` and implement
    ``_open`` / ``_next`` / ``_close``; the base class keeps the counters and the state checks."""

    kind = "operator"

    def __init__(self, *children: Operator, memory_pages: int | None = None):
        self.children: tuple[Operator, ...] = children
        self.memory_pages = memory_pages
        self.stats = OperatorStats()
        self.schema: Schema  # set by the subclass
        self._is_open = False

    # -- protocol -----------------------------------------------------------------------------
    def open(self) -> None:
        if self._is_open:
            raise MinidbError(f"{self.kind} is already open")
        self._is_open = True
        self._open()

    def next(self) -> np.ndarray | None:
        if not self._is_open:
            raise MinidbError(f"{self.kind}.next() called before open()")
        while True:
            batch = self._next()
            if batch is None:
                return None
            if len(batch):  # never hand an empty batch downstream
                self.stats.tuples_out += len(batch)
                self.stats.batches_out += 1
                return batch

    def close(self) -> None:
        if self._is_open:
            self._is_open = False
            self._close()

    def __iter__(self) -> Iterator[np.ndarray]:
        """Open, yield every batch, close (also when the consumer stops early)."""
        self.open()
        try:
            while (batch := self.next()) is not None:
                yield batch
        finally:
            self.close()

    def collect(self) -> np.ndarray:
        """Run to completion and return all output tuples as one array."""
        return concat_records(list(self), self.schema.dtype)

    # -- hooks for subclasses -----------------------------------------------------------------
    def _open(self) -> None:
        for child in self.children:
            child.open()

    def _next(self) -> np.ndarray | None:
        raise NotImplementedError

    def _close(self) -> None:
        for child in self.children:
            child.close()

    def _pull(self, child: Operator) -> np.ndarray | None:
        """Next batch of ``child``, counted as input of this operator."""
        batch = child.next()
        if batch is not None:
            self.stats.tuples_in += len(batch)
        return batch

    def require_memory(self, minimum: int) -> int:
        """The memory budget in pages, checked against the algorithm's minimum."""
        if self.memory_pages is None:
            raise MemoryBudgetError(f"{self.kind} needs an explicit memory budget (memory_pages)")
        if self.memory_pages < minimum:
            raise MemoryBudgetError(
                f"{self.kind} needs at least {minimum} pages of memory, got {self.memory_pages}; "
                "raise memory_pages"
            )
        return self.memory_pages

    # -- explain --------------------------------------------------------------------------------
    def describe(self) -> str:
        """One line saying what this operator does (overridden to add its arguments)."""
        return self.kind

    def explain(self, indent: int = 0) -> str:
        line = "  " * indent + self.describe()
        if self.stats.tuples_out or self.stats.tuples_in:
            line += f"  [in={self.stats.tuples_in} out={self.stats.tuples_out}]"
        return "\n".join([line] + [c.explain(indent + 1) for c in self.children])

    def walk(self) -> Iterator[Operator]:
        """This operator and all operators below it, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()
