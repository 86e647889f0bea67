"""Heap files: unordered relations of fixed-width records on a node's disk.

A heap file is a ``PagedFile`` whose pages use the heap layout of ``page.py``. It offers what the
access methods above it need, always over whole batches of records:

* ``append`` fills the free slots of the last page through the buffer pool, then packs the rest
  onto new pages written straight to disk in one sequential transfer (a bulk load does not pass
  every page through the pool);
* ``scan`` yields the live records cluster by cluster (several pages per disk transfer, Volcano's
  clusters), each batch with its record ids;
* ``fetch``, ``update`` and ``delete`` work on record ids, visiting each page involved once
  (fix, change, unfix dirty), in page order so the disk arm moves one way.

A record id is ``page_no * capacity + slot``; ids never change while a record lives.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.storage.disk import PagedFile
from minidb.storage.page import HeapPageFormat, Predicate
from minidb.storage.schema import Schema, concat_records, take_records

#: bytes moved per disk transfer by a scan; the same for every page size, so a 4 KB page costs
#: no more Python work than a 32 KB one. Volcano's tuned runs used 32 KB clusters; a megabyte
#: keeps the per-transfer Python work small next to copying and checking the bytes themselves.
CLUSTER_BYTES = 1024 * 1024


class HeapFile:
    """An unordered file of fixed-width records, read and written in batches."""

    def __init__(self, file: PagedFile, schema: Schema, buffer: BufferManager):
        self.file = file
        self.schema = schema
        self.buffer = buffer
        self.format = HeapPageFormat(file.page_size, schema.dtype)
        self.num_records = 0

    # -- shape --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.file.name

    @property
    def capacity(self) -> int:
        """Records per page."""
        return self.format.capacity

    @property
    def num_pages(self) -> int:
        return self.file.num_pages

    def cluster_pages(self) -> int:
        return max(1, CLUSTER_BYTES // self.file.page_size)

    # -- writing ------------------------------------------------------------------------------
    def append(self, records: np.ndarray) -> np.ndarray:
        """Add records at the end of the file; return their record ids."""
        records = np.asarray(records, dtype=self.schema.dtype)
        rids = []
        if len(records) and self.num_pages:
            last = self.num_pages - 1
            page = self.buffer.fix(self.file, last)
            free = self.format.free_slots(page)
            free = free[free >= _highest_used(self.format, page)]  # keep appends in order
            take = min(len(free), len(records))
            if take:
                slots = free[:take]
                self.format.slot_view(page)[slots] = records[:take]
                self.format.set_live(page, slots, True)
                rids.append(last * self.capacity + slots.astype(np.int64))
                records = records[take:]
            self.buffer.unfix(self.file, last, dirty=bool(take))
        if len(records):
            first = self.num_pages
            pages = self.format.pack(records, first)
            self.buffer.flush(self.file)  # pages of this file in the pool reach disk first
            self.file.append_pages(pages)
            self.buffer.counters.writes += len(pages)
            rids.append(first * self.capacity + np.arange(len(records), dtype=np.int64))
        out = np.concatenate(rids) if rids else np.empty(0, dtype=np.int64)
        self.num_records += len(out)
        return out

    def delete(self, rids: np.ndarray) -> int:
        """Remove the records with these ids; return how many were removed."""
        removed = 0
        # _by_page needs sorted ids; unique also keeps a repeated id from counting twice
        for page_no, slots in _by_page(np.unique(np.asarray(rids, dtype=np.int64)), self.capacity):
            page = self.buffer.fix(self.file, page_no)
            live = self.format.live_mask(page[None, :])[0]
            slots = slots[live[slots]]
            self.format.set_live(page, slots, False)
            self.buffer.unfix(self.file, page_no, dirty=bool(len(slots)), n=1)
            removed += len(slots)
        self.num_records -= removed
        return removed

    def update(self, rids: np.ndarray, records: np.ndarray) -> None:
        """Overwrite the records with ids ``rids`` (in the same order) by ``records``."""
        rids = np.asarray(rids, dtype=np.int64)
        records = np.asarray(records, dtype=self.schema.dtype)
        order = np.argsort(rids, kind="stable")
        rids, records = rids[order], take_records(records, order)
        start = 0
        for page_no, slots in _by_page(rids, self.capacity):
            page = self.buffer.fix(self.file, page_no)
            self.format.slot_view(page)[slots] = records[start : start + len(slots)]
            start += len(slots)
            self.buffer.unfix(self.file, page_no, dirty=True)

    # -- reading ------------------------------------------------------------------------------
    def scan(self, first_page: int = 0, last_page: int | None = None, keep: bool | None = None,
             where: Predicate | None = None,
             columns: list[str] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(records, rids)`` for pages ``first_page .. last_page`` a cluster at a time.

        ``keep`` decides whether the pages stay in the buffer pool; by default they do only when
        the file fits in half the pool (a larger scan would just push everything else out).
        ``where`` filters the records before they are copied out of the pages and ``columns``
        keeps only some fields (see ``HeapPageFormat.unpack``).
        """
        last_page = self.num_pages - 1 if last_page is None else min(last_page, self.num_pages - 1)
        if keep is None:
            keep = self.num_pages <= self.buffer.num_frames // 2
        step = self.cluster_pages()
        projected = None if columns is None or not self.schema.has_nulls else self.schema.project(columns)
        # one cluster buffer for the whole scan: unpack copies the records out of it
        cluster = np.empty((min(step, max(0, last_page + 1 - first_page)), self.file.page_size), dtype=np.uint8)
        for first in range(first_page, last_page + 1, step):
            n = min(step, last_page + 1 - first)
            pages = self.buffer.read_run(self.file, first, n, keep=keep, out=cluster)
            records, rids = self.format.unpack(pages, first, where, columns)
            yield (records if projected is None else projected.gather(records)), rids

    def fetch(self, rids: np.ndarray, order: str = "sorted") -> np.ndarray:
        """The records with these ids, returned in the order given.

        ``order`` says how the pages are visited. ``"sorted"``: by page number, one fix per
        distinct page (a page holding several of the records costs one fix). ``"given"``: one fix
        per record in the order of ``rids``, as a record-at-a-time access method does (Gamma's
        non-clustered index scan, DeWitt et al. 1988 §5.1 and §5.2.2): a page wanted again is
        read from disk again unless the buffer pool still holds it.
        """
        rids = np.asarray(rids, dtype=np.int64)
        out = np.empty(len(rids), dtype=self.schema.dtype)
        if order == "given":
            slots = self.format.slot_view
            for i, rid in enumerate(rids.tolist()):
                page_no, slot = divmod(rid, self.capacity)
                out[i] = slots(self.buffer.fix(self.file, page_no))[slot]
                self.buffer.unfix(self.file, page_no)
            return out
        if order != "sorted":
            raise ValueError(f"fetch order must be 'sorted' or 'given', not {order!r}")
        order = np.argsort(rids, kind="stable")
        start = 0
        for page_no, slots in _by_page(rids[order], self.capacity):
            page = self.buffer.fix(self.file, page_no)
            out[order[start : start + len(slots)]] = self.format.slot_view(page)[slots]
            self.buffer.unfix(self.file, page_no, n=1)
            start += len(slots)
        return out

    def read_all(self) -> np.ndarray:
        """Every live record (a convenience for tests and small relations)."""
        return concat_records([records for records, _ in self.scan()], self.schema.dtype)



class HeapLoader:
    """Bulk-load a new, empty heap file a batch at a time, with the same pages as one
    ``HeapFile.append`` of all the records: full pages are packed and written straight to disk
    as each batch comes; the records of a last, partly filled page wait in memory for the next
    batch (fewer than one page's worth), and ``finish`` writes them. No page passes through the
    buffer pool, so the pool holds after the load exactly what it held before."""

    def __init__(self, heap: HeapFile):
        if heap.num_pages:
            raise ValueError("HeapLoader fills a new, empty heap file")
        self.heap = heap
        self.held = np.empty(0, dtype=heap.schema.dtype)

    def add(self, records: np.ndarray) -> None:
        """Store the next batch (full pages now, the rest with the next batch)."""
        records = np.asarray(records, dtype=self.heap.schema.dtype)
        cap = self.heap.capacity
        if len(self.held):  # complete the page begun by the last batch
            need = cap - len(self.held)
            self.held = concat_records([self.held, records[:need]], self.heap.schema.dtype)
            records = records[need:]
            if len(self.held) < cap:
                return
            self._write(self.held)
            self.held = self.held[:0]
        full = len(records) // cap * cap
        self._write(records[:full])
        self.held = records[full:].copy()

    def finish(self) -> HeapFile:
        """Write the last, partly filled page and give the loaded file."""
        self._write(self.held)
        self.held = self.held[:0]
        return self.heap

    def _write(self, records: np.ndarray) -> None:
        if not len(records):
            return
        heap = self.heap
        pages = heap.format.pack(records, heap.num_pages)
        heap.file.append_pages(pages)
        heap.buffer.counters.writes += len(pages)
        heap.num_records += len(records)

def _by_page(sorted_rids: np.ndarray, capacity: int) -> Iterator[tuple[int, np.ndarray]]:
    """Group sorted record ids by page: yields ``(page_no, slots)``."""
    if not len(sorted_rids):
        return
    pages = sorted_rids // capacity
    breaks = np.flatnonzero(np.diff(pages)) + 1
    for chunk in np.split(sorted_rids, breaks):
        yield int(chunk[0] // capacity), chunk % capacity


def _highest_used(fmt: HeapPageFormat, page: np.ndarray) -> int:
    live = np.flatnonzero(fmt.live_mask(page[None, :])[0])
    return int(live[-1]) + 1 if len(live) else 0
