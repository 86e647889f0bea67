"""Gamma's clustered index: a relation stored in key order under a sparse B+ tree.

What it rebuilds. Gamma (DeWitt et al. 1988, Section 5.1) keeps a relation with a *clustered*
index sorted on the key attribute, with a B-tree "built on top of the data": index order equals
key order, so a range selection reads only the part of the file that holds the range, page after
page, instead of one random page per qualifying tuple as a non-clustered index does. Section 5.2.2
adds that a larger page raises the fan-out of that tree as well as the tuples per data page.

Structure. The data pages form an ordinary heap file (``HeapFile``: record ids are
``page * capacity + slot`` and never change while a record stays on its page). A *sparse* B+ tree
holds one entry per data page: (lower bound of the page's keys, page number). The entries, in
tree order, list the data pages in key order, and page p's keys lie between its own entry key and
the next entry's key (closed at both ends, so runs of equal keys may span pages). The first page's
entry is the smallest value of the key type, so keys below everything else still have a home.

* ``build`` sorts the records, packs them onto full pages in key order and bulk-loads the tree
  with one entry per page.
* ``range_scan`` descends the tree once to the last entry below ``low``, then walks the leaf level;
  the page numbers it lists are read in key order, consecutive numbers as one ``read_run`` (so they
  count as sequential reads; a run that reaches the end of a leaf waits for the next leaf, which
  may continue it), and it stops at the first entry above ``high``: that page's records
  all exceed ``high`` by construction, so it is not even read. Each batch comes back sorted by key.
* ``insert`` routes each record to the page whose key range covers it (the last entry <= key). If
  the page is full it is split: the records of the page and the newcomers are sorted by key, the
  lower part stays, the upper part moves to new page(s) at the end of the file, and each new page's
  first key is inserted into the tree right after the old page's entry. The records that moved get
  new record ids; ``insert`` reports (old id, new id) pairs so the table can fix its secondary
  indexes (Gamma, Section 8: a key update relocates the tuple and must update the other index).

Simplified on purpose:

* delete only clears slots; an emptied page stays in the file and in the tree (no merging, no
  reorganization), and within a page records are not kept sorted (a scan sorts each batch);
* pages split by moving records to the end of the file, so after many inserts the key order of
  the file is no longer its physical order and a range scan does more random reads; a real system
  would reorganize (reload) the file now and then;
* ``update_in_place`` trusts the caller that keys do not change (a key change is delete + insert).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.errors import MinidbError
from minidb.index._util import bounds_empty, coerce_bound, min_key, range_mask
from minidb.index.btree import BPlusTree
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, take_records

_EMPTY_RIDS = np.empty(0, dtype=np.int64)


class ClusteredFile:
    """A relation kept in key order, indexed by a sparse B+ tree of (first key, page) entries."""

    def __init__(self, heap: HeapFile, tree: BPlusTree, key: str):
        self.heap = heap
        self.tree = tree
        self.key = key
        self.schema: Schema = heap.schema
        self.buffer: BufferManager = heap.buffer

    @classmethod
    def build(cls, disk: Disk, buffer: BufferManager, name: str, schema: Schema,
              records: np.ndarray, key: str) -> ClusteredFile:
        key = schema.column(key, name).name
        records = np.asarray(records, dtype=schema.dtype)
        records = records[np.argsort(records[key], kind="stable")]
        heap = HeapFile(disk.create(name), schema, buffer)
        pages = heap.format.pack(records, 0)  # one page even when there are no records
        heap.file.append_pages(pages)
        buffer.counters.writes += len(pages)
        heap.num_records = len(records)
        first_keys = records[key][:: heap.capacity].copy()
        if not len(first_keys):
            first_keys = np.empty(1, dtype=schema.dtype[key])
        first_keys[0] = min_key(first_keys.dtype)
        tree = BPlusTree.bulk_load(disk, buffer, f"{name}.sparse", first_keys,
                                   np.arange(len(pages), dtype=np.int64))
        return cls(heap, tree, key)

    @classmethod
    def build_sorted(cls, disk: Disk, buffer: BufferManager, name: str, schema: Schema,
                     batches, key: str) -> ClusteredFile:
        """``build`` from ``batches`` already in key order (an ``ExternalSorter``'s output),
        a batch at a time: the same pages and tree as ``build`` of all the records."""
        from minidb.storage.heapfile import HeapLoader

        key = schema.column(key, name).name
        heap = HeapFile(disk.create(name), schema, buffer)
        loader, cap = HeapLoader(heap), heap.capacity
        first_keys, seen = [], 0
        for batch in batches:
            first_keys.append(batch[key][-seen % cap :: cap].copy())  # rows 0, cap, 2 cap ...
            seen += len(batch)
            loader.add(batch)
        loader.finish()
        if not heap.num_pages:  # one page even when there are no records
            heap.file.append_pages(heap.format.pack(np.empty(0, dtype=schema.dtype), 0))
            buffer.counters.writes += 1
        first_keys = np.concatenate(first_keys) if seen else np.empty(1, dtype=schema.dtype[key])
        first_keys[0] = min_key(first_keys.dtype)
        tree = BPlusTree.bulk_load(disk, buffer, f"{name}.sparse", first_keys,
                                   np.arange(heap.num_pages, dtype=np.int64))
        return cls(heap, tree, key)

    # -- shape --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.heap.name

    @property
    def num_records(self) -> int:
        return self.heap.num_records

    @property
    def num_pages(self) -> int:
        return self.heap.num_pages

    @property
    def capacity(self) -> int:
        return self.heap.capacity

    def __repr__(self) -> str:
        return (f"ClusteredFile({self.name!r} on {self.key}, {self.num_records} records, "
                f"{self.num_pages} pages, index height {self.tree.height})")

    # -- reading ------------------------------------------------------------------------------
    def range_scan(self, low=None, high=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(records, rids) with low <= key <= high, in key order, a run of pages at a time."""
        dtype = self.schema.dtype[self.key]
        lo, hi = coerce_bound(dtype, low, True), coerce_bound(dtype, high, False)
        if bounds_empty(lo, hi):
            return
        if lo.value is None:
            _, leaf_no, _ = self.tree._descend(None, "left")
            start = 0
        else:
            leaf_no, start, _ = self.tree._floor(lo.value, strict=True)
        keep = self.heap.num_pages <= self.buffer.num_frames // 2
        step = self.heap.cluster_pages()
        held = _EMPTY_RIDS  # the last run of a leaf may go on in the next leaf: read it then
        for entry_keys, page_nos in self.tree._walk(leaf_no, start):
            stop = False
            if hi.value is not None:
                cut = int(np.searchsorted(entry_keys, hi.value, "right"))
                stop = cut < len(entry_keys)
                page_nos = page_nos[:cut]
            runs = list(_runs(np.concatenate([held, page_nos]), step))
            held = _EMPTY_RIDS
            if not stop and runs:
                first, n = runs.pop()
                held = np.arange(first, first + n, dtype=np.int64)
            for first, n in runs:
                yield from self._read_run(first, n, keep, lo, hi)
            if stop:
                return
        for first, n in _runs(held, step):
            yield from self._read_run(first, n, keep, lo, hi)

    def _read_run(self, first: int, n: int, keep: bool, lo, hi):
        pages = self.buffer.read_run(self.heap.file, first, n, keep=keep)
        records, rids = self.heap.format.unpack(pages, first)
        mask = range_mask(records[self.key], lo, hi)
        records, rids = take_records(records, mask), rids[mask]
        if len(records):
            order = np.argsort(records[self.key], kind="stable")
            yield take_records(records, order), rids[order]

    def scan(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every record in file order (key order until pages have been split)."""
        yield from self.heap.scan()

    def fetch(self, rids: np.ndarray, order: str = "sorted") -> np.ndarray:
        return self.heap.fetch(rids, order)

    def read_all(self) -> np.ndarray:
        return self.heap.read_all()

    # -- writing ------------------------------------------------------------------------------
    def insert(self, records: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Insert records where their keys belong; return (new_rids, moved_old_rids, moved_new_rids).

        ``new_rids`` are in the order of ``records``. A record moved by a page split appears once
        in the moved arrays with its id before this call and its id after it. A slot vacated by a
        move may be taken by a new record of the same call, so an id can be both in
        ``moved_old_rids`` (the record that left) and in ``new_rids`` (the record that arrived).
        """
        records = np.asarray(records, dtype=self.schema.dtype)
        n = len(records)
        order = np.argsort(records[self.key], kind="stable")
        recs = take_records(records, order)
        keys = recs[self.key]
        new_rids = np.empty(n, dtype=np.int64)
        moved_old = _EMPTY_RIDS
        moved_new = _EMPTY_RIDS
        i = 0
        while i < n:
            entry_key, page_no, next_key = self._route(keys[i])
            j = n if next_key is None else max(i + 1, int(np.searchsorted(keys, next_key, "left")))
            rids, old, new = self._place(page_no, entry_key, recs[i:j])
            new_rids[i:j] = rids
            if len(old):
                # a record placed or moved earlier in this call may move again: keep ids final
                was_placed = np.isin(old, new_rids[:i])
                was_moved = np.isin(old, moved_new)
                again = np.flatnonzero(np.isin(new_rids[:i], old))
                new_rids[again] = new[_index_in(old, new_rids[again])]
                again = np.flatnonzero(np.isin(moved_new, old))
                moved_new = moved_new.copy()
                moved_new[again] = new[_index_in(old, moved_new[again])]
                fresh = ~was_placed & ~was_moved
                moved_old = np.concatenate([moved_old, old[fresh]])
                moved_new = np.concatenate([moved_new, new[fresh]])
            i = j
        out = np.empty(n, dtype=np.int64)
        out[order] = new_rids
        return out, moved_old, moved_new

    def _route(self, key):
        """The entry whose page takes ``key``: (entry key, page number, next entry's key)."""
        leaf_no, idx, found = self.tree._floor(key, strict=False)
        if not found:
            idx = 0
        entry = nxt = None
        for keys, pages in self.tree._walk(leaf_no, idx):
            for k, p in zip(keys[:2], pages[:2], strict=False):
                if entry is None:
                    entry = (k, int(p))
                elif nxt is None:
                    nxt = k
            if nxt is not None:
                break
        if entry is None:
            raise MinidbError(f"{self.name}: the sparse index is empty")
        return entry[0], entry[1], nxt

    def _place(self, page_no: int, entry_key, recs: np.ndarray):
        """Put records (sorted by key, all within this page's range) on ``page_no``, splitting
        it if they do not fit. Returns (rids of recs, moved old rids, their new rids)."""
        fmt, cap, f = self.heap.format, self.heap.capacity, self.heap.file
        page = self.buffer.fix(f, page_no)
        free = fmt.free_slots(page)
        if len(free) >= len(recs):
            slots = free[: len(recs)]
            fmt.slot_view(page)[slots] = recs
            fmt.set_live(page, slots, True)
            self.buffer.unfix(f, page_no, dirty=True)
            self.heap.num_records += len(recs)
            return page_no * cap + slots.astype(np.int64), _EMPTY_RIDS, _EMPTY_RIDS
        # split: sort old and new records together by key; the lower part stays on this page
        live = np.flatnonzero(fmt.live_mask(page[None, :])[0])
        old = fmt.slot_view(page)[live].copy()
        combined = np.concatenate([old, recs])
        is_old = np.arange(len(combined)) < len(old)
        m = len(combined)
        pieces = max(2, -(-m // cap))
        bounds = (np.arange(pieces + 1) * m) // pieces
        by_key = np.argsort(combined[self.key], kind="stable")
        piece_of = np.empty(m, dtype=np.int64)
        piece_of[by_key] = np.searchsorted(bounds, np.arange(m), "right") - 1
        rid_of = np.empty(m, dtype=np.int64)
        old_slots = np.full(m, -1, dtype=np.int64)
        old_slots[: len(old)] = live
        stay = is_old & (piece_of == 0)
        move = is_old & (piece_of > 0)
        rid_of[stay] = page_no * cap + old_slots[stay]
        fmt.set_live(page, old_slots[move], False)
        arrive = ~is_old & (piece_of == 0)
        slots = fmt.free_slots(page)[: int(arrive.sum())]
        fmt.slot_view(page)[slots] = combined[arrive]
        fmt.set_live(page, slots, True)
        rid_of[arrive] = page_no * cap + slots
        self.buffer.unfix(f, page_no, dirty=True)
        seps, new_pages = [], []
        for p in range(1, pieces):
            members = by_key[bounds[p] : bounds[p + 1]]
            no, frame = self.buffer.new_page(f)
            frame[:] = fmt.pack(combined[members], no)[0]
            self.buffer.unfix(f, no, dirty=True)
            rid_of[members] = no * cap + np.arange(len(members), dtype=np.int64)
            seps.append(combined[self.key][members[0]])
            new_pages.append(no)
        sep_keys = np.array(seps, dtype=self.schema.dtype[self.key])
        self.tree._insert_after(entry_key, page_no, sep_keys, np.array(new_pages, dtype=np.int64))
        self.heap.num_records += len(recs)
        return rid_of[~is_old], page_no * cap + old_slots[move], rid_of[move]

    def delete(self, rids: np.ndarray) -> int:
        """Remove records by id; their pages stay (possibly empty) in the file and the tree."""
        return self.heap.delete(np.unique(np.asarray(rids, dtype=np.int64)))

    def update_in_place(self, rids: np.ndarray, records: np.ndarray) -> None:
        """Overwrite records whose key does not change (the caller guarantees it)."""
        self.heap.update(rids, records)

    def drop(self) -> None:
        for f in (self.heap.file, self.tree.file):
            self.buffer.discard(f)
            self.heap.file.disk.drop(f)


def _index_in(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """Positions of ``needles`` in ``haystack`` (all present, haystack without duplicates)."""
    order = np.argsort(haystack)
    return order[np.searchsorted(haystack, needles, sorter=order)]


def _runs(page_nos: np.ndarray, step: int) -> Iterator[tuple[int, int]]:
    """Split page numbers (in the order given) into runs of consecutive pages, at most ``step``."""
    if not len(page_nos):
        return
    page_nos = np.asarray(page_nos, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(page_nos) != 1) + 1
    for run in np.split(page_nos, breaks):
        first = int(run[0])
        for offset in range(0, len(run), step):
            yield first + offset, min(step, len(run) - offset)
