"""Teradata's file organization: relations in hash-key order, dense secondary hash indices.

What it rebuilds. The Teradata DBC/1012 that Gamma was measured against (DeWitt et al. 1988,
Section 3) stores every relation fragment in *hash-key order*: the key is hashed to a bucket, so
an exact-match lookup on the key costs one disk access, but no clustered index is possible. Its
only indices are *dense secondary* ones: one entry per tuple, and the entries themselves are hashed
on the indexed attribute, NOT sorted. Section 5.1 draws the consequence measured in Table 1: a
range selection through such an index must scan the *entire* index (then fetch each qualifying
tuple with a random access), which is why a 1% selection through Teradata's non-clustered index
took about as long as a full scan.

``HashFile``. B primary bucket pages, B chosen when the file is built so the buckets start about
80% full; bucket ``hash(key) mod B`` is page b, and records that do not fit go to overflow pages
chained through the header ``link`` (kind HASH_BUCKET). Each page uses the heap page layout (slot
bitmap, fixed-width records), so record ids are ``page * capacity + slot`` as in a ``HeapFile`` and
fetch / update / delete / scan are the heap file's.

``DenseHashIndex``. The same bucket-and-chain organization for (key, record id) entries on entry
pages (``_util.EntryLayout``). ``lookup`` reads one chain; ``range_rids`` reads every page of the
index in one sequential pass, because nothing about an entry's position says what its key is.

Hashing is stable across processes (no Python ``hash``): integers are widened to int64, char(n)
keys are folded with FNV-1a over their n bytes, and both are mixed by splitmix64's multiplicative
finalizer (``minidb.hashing.hash_keys``).

Simplified on purpose:

* static hashing: B never changes, long chains are not split (no linear or extendible hashing);
* one node's fragment only: Teradata first hashed to pick an AMP (node); that is partitioning's job;
* deleted records leave free slots (reused by later inserts into the same chain); overflow pages
  are never freed.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.errors import MinidbError
from minidb.exec.expr import compare
from minidb.index._util import (
    VALUE_DTYPE,
    EntryLayout,
    as_keys,
    bounds_empty,
    bucket_of,
    chain_layout,
    coerce_bound,
    coerce_exact,
    get_count,
    get_link,
    init_header,
    key_dtype_of,
    match_pairs,
    range_mask,
    set_link,
)
from minidb.storage.disk import Disk, PagedFile
from minidb.storage.heapfile import CLUSTER_BYTES, HeapFile
from minidb.storage.page import HASH_BUCKET, HEADER_SIZE, set_headers
from minidb.storage.schema import Schema, take_records

#: target fill of the primary bucket pages when a file or index is built
BUILD_FILL = 0.8


def _num_buckets(n: int, capacity: int) -> int:
    return max(1, -(-n // max(1, int(capacity * BUILD_FILL))))


class HashFile:
    """A relation stored in hash-key order: bucket pages plus overflow chains."""

    def __init__(self, heap: HeapFile, key: str, num_buckets: int):
        self.heap = heap
        self.key = key
        self.schema: Schema = heap.schema
        self.buffer: BufferManager = heap.buffer
        self.num_buckets = num_buckets
        self.key_dtype = key_dtype_of(self.schema.dtype[key])

    @classmethod
    def build(cls, disk: Disk, buffer: BufferManager, name: str, schema: Schema,
              records: np.ndarray, key: str) -> HashFile:
        key = schema.column(key, name).name
        records = np.asarray(records, dtype=schema.dtype)
        heap = HeapFile(disk.create(name), schema, buffer)
        fmt, cap = heap.format, heap.capacity
        nb = _num_buckets(len(records), cap)
        order, page_of, slot_of, counts, links, total = chain_layout(
            bucket_of(records[key], nb), nb, cap)
        body = np.zeros(total * cap, dtype=schema.dtype)
        live = np.zeros(total * cap, dtype=bool)
        body[page_of * cap + slot_of] = take_records(records, order)
        live[page_of * cap + slot_of] = True
        pages = np.zeros((total, disk.page_size), dtype=np.uint8)
        set_headers(pages, np.arange(total), HASH_BUCKET, counts, links)
        pages[:, HEADER_SIZE : fmt.records_offset] = np.packbits(
            live.reshape(total, cap), axis=1, bitorder="little")
        end = fmt.records_offset + cap * fmt.width
        pages[:, fmt.records_offset : end] = body.view(np.uint8).reshape(total, cap * fmt.width)
        heap.file.append_pages(pages)
        buffer.counters.writes += total
        heap.num_records = len(records)
        return cls(heap, key, nb)

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
        return (f"HashFile({self.name!r} on {self.key}, {self.num_records} records, "
                f"{self.num_buckets} buckets, {self.num_pages} pages)")

    def bucket(self, value) -> int:
        """The bucket (primary page) of a key value."""
        k = coerce_exact(self.key_dtype, value)
        if k is None:
            return -1
        return int(bucket_of(np.array([k], dtype=self.key_dtype), self.num_buckets)[0])

    # -- reading ------------------------------------------------------------------------------
    def lookup(self, value) -> tuple[np.ndarray, np.ndarray]:
        """(records, rids) with key == value: reads the value's bucket page and its overflow chain."""
        k = coerce_exact(self.key_dtype, value)
        if k is None:
            return np.empty(0, dtype=self.schema.dtype), np.empty(0, dtype=np.int64)
        page_no = int(bucket_of(np.array([k], dtype=self.key_dtype), self.num_buckets)[0])
        out_r, out_i = [], []
        f, fmt = self.heap.file, self.heap.format
        while page_no >= 0:
            page = self.buffer.fix(f, page_no)
            records, rids = fmt.unpack(page[None, :], page_no)
            link = get_link(page)
            self.buffer.unfix(f, page_no)
            mask = compare("=", records[self.key], k)  # NaN = NaN, as in DuckDB
            out_r.append(take_records(records, mask))
            out_i.append(rids[mask])
            page_no = link
        return np.concatenate(out_r), np.concatenate(out_i)

    def scan(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every record, in file (hash-key) order, a cluster of pages at a time."""
        yield from self.heap.scan()

    def fetch(self, rids: np.ndarray, order: str = "sorted") -> np.ndarray:
        return self.heap.fetch(rids, order)

    def read_all(self) -> np.ndarray:
        return self.heap.read_all()

    # -- writing ------------------------------------------------------------------------------
    def insert(self, records: np.ndarray) -> np.ndarray:
        """Add records to their buckets (free slots first, then new overflow pages); return rids."""
        records = np.asarray(records, dtype=self.schema.dtype)
        rids = np.empty(len(records), dtype=np.int64)
        buckets = bucket_of(records[self.key], self.num_buckets)
        order = np.argsort(buckets, kind="stable")
        breaks = np.flatnonzero(np.diff(buckets[order])) + 1
        for group in np.split(order, breaks) if len(order) else []:
            rids[group] = self._insert_chain(int(buckets[group[0]]), records[group])
        self.heap.num_records += len(records)
        return rids

    def _insert_chain(self, page_no: int, recs: np.ndarray) -> np.ndarray:
        f, fmt, cap = self.heap.file, self.heap.format, self.heap.capacity
        out = []
        while True:
            page = self.buffer.fix(f, page_no)
            free = fmt.free_slots(page)[: len(recs)]
            if len(free):
                fmt.slot_view(page)[free] = recs[: len(free)]
                fmt.set_live(page, free, True)
                out.append(page_no * cap + free.astype(np.int64))
                recs = recs[len(free) :]
            link = get_link(page)
            if len(recs) and link < 0:  # chain full: add overflow pages after its last page
                first_new = f.num_pages
                set_link(page, first_new)
                self.buffer.unfix(f, page_no, dirty=True)
                for start in range(0, len(recs), cap):
                    chunk = recs[start : start + cap]
                    no, frame = self.buffer.new_page(f)
                    frame[:] = fmt.pack(chunk, no)[0]
                    last = start + cap >= len(recs)
                    init_header(frame, no, HASH_BUCKET, len(chunk), -1 if last else no + 1)
                    self.buffer.unfix(f, no, dirty=True)
                    out.append(no * cap + np.arange(len(chunk), dtype=np.int64))
                break
            self.buffer.unfix(f, page_no, dirty=bool(len(free)))
            if not len(recs):
                break
            page_no = link
        return np.concatenate(out)

    def delete(self, rids: np.ndarray) -> int:
        """Remove records by id (each page fixed once); return how many were removed."""
        return self.heap.delete(np.unique(np.asarray(rids, dtype=np.int64)))

    def update_in_place(self, rids: np.ndarray, records: np.ndarray) -> None:
        """Overwrite records whose key does not change (a key change is delete + insert)."""
        self.heap.update(rids, records)

    def drop(self) -> None:
        self.buffer.discard(self.heap.file)
        self.heap.file.disk.drop(self.heap.file)


class DenseHashIndex:
    """A dense secondary index: one (key, rid) entry per tuple, entries hashed on key, unsorted."""

    def __init__(self, disk: Disk, buffer: BufferManager, file: PagedFile, key_dtype,
                 num_buckets: int, num_entries: int):
        self.disk = disk
        self.buffer = buffer
        self.file = file
        self.key_dtype = key_dtype_of(key_dtype)
        self.layout = EntryLayout(disk.page_size, self.key_dtype)
        self.num_buckets = num_buckets
        self.num_entries = num_entries

    @classmethod
    def build(cls, disk: Disk, buffer: BufferManager, name: str, keys: np.ndarray,
              rids: np.ndarray) -> DenseHashIndex:
        keys = np.asarray(keys)
        if keys.dtype.kind == "U":
            keys = np.char.encode(keys, "utf-8")
        key_dtype = key_dtype_of(keys.dtype)
        keys = keys.astype(key_dtype, copy=False)
        rids = np.asarray(rids, dtype=VALUE_DTYPE)
        if len(keys) != len(rids):
            raise MinidbError(f"DenseHashIndex.build: {len(keys)} keys but {len(rids)} rids")
        layout = EntryLayout(disk.page_size, key_dtype)
        nb = _num_buckets(len(keys), layout.capacity)
        order, page_of, slot_of, counts, links, total = chain_layout(
            bucket_of(keys, nb), nb, layout.capacity)
        pages = layout.pack(keys[order], rids[order], page_of, slot_of, total)
        set_headers(pages, np.arange(total), HASH_BUCKET, counts, links)
        file = disk.create(name)
        file.append_pages(pages)
        buffer.counters.writes += total
        return cls(disk, buffer, file, key_dtype, nb, len(keys))

    # -- shape --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.file.name

    @property
    def num_pages(self) -> int:
        return self.file.num_pages

    @property
    def capacity(self) -> int:
        """Entries per index page."""
        return self.layout.capacity

    def __repr__(self) -> str:
        return (f"DenseHashIndex({self.name!r}, key {self.key_dtype}, {self.num_entries} entries, "
                f"{self.num_buckets} buckets, {self.num_pages} pages)")

    def _bucket(self, keys: np.ndarray) -> np.ndarray:
        return bucket_of(keys, self.num_buckets)

    # -- reading ------------------------------------------------------------------------------
    def lookup(self, value) -> np.ndarray:
        """Record ids with key == value: reads one bucket chain."""
        k = coerce_exact(self.key_dtype, value)
        if k is None:
            return np.empty(0, dtype=VALUE_DTYPE)
        page_no = int(self._bucket(np.array([k], dtype=self.key_dtype))[0])
        out = []
        while page_no >= 0:
            page = self.buffer.fix(self.file, page_no)
            n = get_count(page)
            keys = self.layout.keys(page)[:n]
            out.append(self.layout.values(page)[:n][compare("=", keys, k)].copy())  # NaN = NaN
            link = get_link(page)
            self.buffer.unfix(self.file, page_no)
            page_no = link
        return np.concatenate(out)

    def range_rids(self, low=None, high=None) -> np.ndarray:
        """Record ids with low <= key <= high, in index order (not sorted).

        The entries are placed by hash, so every page of the index is read, in one sequential
        pass a cluster of pages at a time, whatever the range: Teradata's range query.
        """
        lo = coerce_bound(self.key_dtype, low, True)
        hi = coerce_bound(self.key_dtype, high, False)
        if bounds_empty(lo, hi):
            return np.empty(0, dtype=VALUE_DTYPE)
        n_pages = self.num_pages
        keep = n_pages <= self.buffer.num_frames // 2
        step = max(1, CLUSTER_BYTES // self.disk.page_size)
        cap = self.layout.capacity
        out = []
        for first in range(0, n_pages, step):
            n = min(step, n_pages - first)
            pages = self.buffer.read_run(self.file, first, n, keep=keep)
            counts = pages[:, 10:12].copy().view("<u2").reshape(-1)
            used = np.arange(cap)[None, :] < counts[:, None]
            keys = np.ascontiguousarray(pages[:, self.layout.key_off : self.layout.key_end])
            keys = keys.view(self.key_dtype).reshape(n, cap)[used]
            rids = np.ascontiguousarray(pages[:, self.layout.val_off : self.layout.val_end])
            rids = rids.view(VALUE_DTYPE).reshape(n, cap)[used]
            out.append(rids[range_mask(keys, lo, hi)])
        return np.concatenate(out) if out else np.empty(0, dtype=VALUE_DTYPE)

    # -- writing ------------------------------------------------------------------------------
    def insert(self, keys: np.ndarray, rids: np.ndarray) -> None:
        keys = as_keys(keys, self.key_dtype)
        rids = np.asarray(rids, dtype=VALUE_DTYPE)
        if len(keys) != len(rids):
            raise MinidbError(f"insert: {len(keys)} keys but {len(rids)} rids")
        for b, group in self._groups(keys):
            self._insert_chain(b, keys[group], rids[group])
        self.num_entries += len(keys)

    def _insert_chain(self, page_no: int, keys: np.ndarray, rids: np.ndarray) -> None:
        cap, f = self.layout.capacity, self.file
        while True:
            page = self.buffer.fix(f, page_no)
            n = get_count(page)
            take = min(cap - n, len(keys))
            if take:
                self.layout.keys(page)[n : n + take] = keys[:take]
                self.layout.values(page)[n : n + take] = rids[:take]
                page[10:12] = np.array([n + take], dtype="<u2").view(np.uint8)
                keys, rids = keys[take:], rids[take:]
            link = get_link(page)
            if len(keys) and link < 0:
                set_link(page, f.num_pages)
                self.buffer.unfix(f, page_no, dirty=True)
                for start in range(0, len(keys), cap):
                    no, frame = self.buffer.new_page(f)
                    last = start + cap >= len(keys)
                    init_header(frame, no, HASH_BUCKET, link=-1 if last else no + 1)
                    self.layout.write(frame, keys[start : start + cap], rids[start : start + cap])
                    self.buffer.unfix(f, no, dirty=True)
                return
            self.buffer.unfix(f, page_no, dirty=bool(take))
            if not len(keys):
                return
            page_no = link

    def delete(self, keys: np.ndarray, rids: np.ndarray) -> int:
        """Remove exact (key, rid) entries; return how many were removed."""
        keys = as_keys(keys, self.key_dtype)
        rids = np.asarray(rids, dtype=VALUE_DTYPE)
        if len(keys) != len(rids):
            raise MinidbError(f"delete: {len(keys)} keys but {len(rids)} rids")
        removed = 0
        for b, group in self._groups(keys):
            bk, br = keys[group], rids[group]
            pending = np.ones(len(group), dtype=bool)
            page_no = b
            while page_no >= 0 and pending.any():
                page = self.buffer.fix(self.file, page_no)
                n = get_count(page)
                pk, pv = self.layout.keys(page)[:n], self.layout.values(page)[:n]
                rm, hit = match_pairs(pk, pv, bk[pending], br[pending])
                if rm.any():
                    keep = ~rm
                    self.layout.write(page, pk[keep].copy(), pv[keep].copy())
                    removed += int(rm.sum())
                pending[np.flatnonzero(pending)[hit]] = False
                link = get_link(page)
                self.buffer.unfix(self.file, page_no, dirty=bool(rm.any()))
                page_no = link
        self.num_entries -= removed
        return removed

    def _groups(self, keys: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        if not len(keys):
            return
        buckets = self._bucket(keys)
        order = np.argsort(buckets, kind="stable")
        breaks = np.flatnonzero(np.diff(buckets[order])) + 1
        for group in np.split(order, breaks):
            yield int(buckets[group[0]]), group

    def drop(self) -> None:
        self.buffer.discard(self.file)
        self.disk.drop(self.file)
