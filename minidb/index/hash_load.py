"""A hash file (``HashFile``) bulk-loaded in bounded memory: the same pages as ``HashFile.build``.

``HashFile.build`` places every record at once: bucket ``b = hash(key) % num_buckets`` (the
bucket count follows from the number of records), records in input order within a bucket, the
first page of bucket b at page b and its overflow pages, in bucket order, after all the primary
pages (``chain_layout``). ``HashLoader`` gets there in three passes over temporary files, holding
a few batches:

1. ``add`` appends each batch to a temporary file as it comes, when the record count, and so
   the bucket count, is known only at the end (a source that says its row count skips this);
2. ``finish`` reads it back in chunks, computes each record's bucket, counts the buckets, and
   sorts (bucket, record) pairs by bucket with an ``ExternalSorter`` (stable: input order within
   a bucket);
3. the sorted stream is laid out on pages: a record's rank within its bucket gives its page and
   slot as in ``chain_layout``. Both regions fill in page order, so a page is written once the
   stream has passed it: primary pages straight into the file, overflow pages into a temporary
   file appended after the last primary page.

Headers (record counts, chain links) come from the bucket counts alone, computed up front: one
entry per page, like a clustered file's list of first keys.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.errors import MinidbError
from minidb.index._util import bucket_of
from minidb.storage.disk import Disk
from minidb.storage.external_sort import ExternalSorter
from minidb.storage.heapfile import HeapFile
from minidb.storage.page import HASH_BUCKET, HEADER_SIZE, HeapPageFormat, set_headers
from minidb.storage.schema import Schema


class HashLoader:
    """Bulk-load a new ``HashFile`` on ``key`` a batch at a time (see the module docstring).

    With ``num_rows`` given (the source said how many rows it has), the bucket count is known
    from the start and pass 1 is skipped: each batch goes to the sorter as it comes; a source
    that then yields another number of rows is an error."""

    def __init__(self, disk: Disk, buffer: BufferManager, name: str, schema: Schema, key: str,
                 run_rows: int, num_rows: int | None = None):
        from minidb.index.hashfile import _num_buckets

        self.disk, self.buffer, self.name, self.schema, self.key = disk, buffer, name, schema, key
        self.run_rows = max(1, int(run_rows))
        self.expected = num_rows
        self.rows = 0
        self.pair = np.dtype([("b", "<i8"), ("r", schema.dtype)])
        self.dir = Path(tempfile.mkdtemp(prefix="minidb-hashload-"))
        self.input = self.dir / "input.bin"
        self.sorter = self.counts = None
        if num_rows is not None:  # the bucket count is known: sort as the batches come
            capacity = HeapPageFormat(disk.page_size, schema.dtype).capacity
            self._start_sort(_num_buckets(num_rows, capacity))
        else:
            self.input.write_bytes(b"")

    def add(self, records: np.ndarray) -> None:
        records = np.ascontiguousarray(records, dtype=self.schema.dtype)
        self.rows += len(records)
        if self.sorter is not None:
            self._sort(records)
            return
        with open(self.input, "ab") as f:
            records.tofile(f)

    def finish(self):
        """Lay the records out and give the ``HashFile``."""
        from minidb.index.hashfile import HashFile, _num_buckets

        try:
            if self.expected is not None and self.rows != self.expected:
                raise MinidbError(f"the source said it has {self.expected:,} rows but gave "
                                  f"{self.rows:,}; its num_rows is wrong")
            heap = HeapFile(self.disk.create(self.name), self.schema, self.buffer)
            if self.sorter is None:  # pass 2: now that the bucket count is known
                self._start_sort(_num_buckets(self.rows, heap.capacity))
                for chunk in self._input_chunks():
                    self._sort(chunk)
            writer = _ChainWriter(heap, self.counts, self.dir / "overflow.bin")
            for batch in self.sorter.sorted_batches():
                writer.add(batch["b"], batch["r"])
            writer.finish()
            heap.num_records = self.rows
            return HashFile(heap, self.key, len(self.counts))
        finally:
            self.close()

    def close(self) -> None:
        if self.sorter is not None:
            self.sorter.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _start_sort(self, num_buckets: int) -> None:
        self.sorter = ExternalSorter(self.pair, "b", self.run_rows)
        self.counts = np.zeros(num_buckets, dtype=np.int64)

    def _sort(self, records: np.ndarray) -> None:
        pairs = np.empty(len(records), dtype=self.pair)
        pairs["b"] = bucket_of(records[self.key], len(self.counts))
        pairs["r"] = records
        self.counts += np.bincount(pairs["b"], minlength=len(self.counts))
        self.sorter.add(pairs)

    def _input_chunks(self):
        size = self.schema.dtype.itemsize
        for start in range(0, self.rows, self.run_rows):
            n = min(self.run_rows, self.rows - start)
            yield np.fromfile(self.input, dtype=self.schema.dtype, count=n, offset=start * size)


class _ChainWriter:
    """Write the pages of bucket chains from records arriving in bucket order."""

    def __init__(self, heap: HeapFile, counts_b: np.ndarray, overflow: Path):
        cap, nb = heap.capacity, len(counts_b)
        self.heap, self.cap, self.nb = heap, cap, nb
        pages_b = np.maximum(1, -(-counts_b // cap))
        over_b = pages_b - 1
        self.over_start = nb + np.cumsum(over_b) - over_b
        self.total = int(nb + over_b.sum())
        self.bstart = np.cumsum(counts_b) - counts_b  # where each bucket starts in the stream
        # per page: records and link, as chain_layout gives them
        self.counts = np.zeros(self.total, dtype=np.int64)
        self.counts[:nb] = np.minimum(counts_b, cap)
        full_over = np.repeat(np.arange(nb), over_b)  # the bucket of each overflow page
        k = np.arange(nb, self.total) - self.over_start[full_over]  # its place in the chain
        self.counts[nb:] = np.minimum(cap, counts_b[full_over] - cap * (k + 1))
        self.links = np.full(self.total, -1, dtype=np.int64)
        has = over_b > 0
        self.links[np.flatnonzero(has)] = self.over_start[has]
        not_last = k < over_b[full_over] - 1
        overflow_pages = np.arange(nb, self.total)
        self.links[overflow_pages[not_last]] = overflow_pages[not_last] + 1
        self.seen = 0
        self.primary = _Region(self, 0, nb, None)
        self.overflow = _Region(self, nb, self.total, overflow)

    def add(self, buckets: np.ndarray, records: np.ndarray) -> None:
        rank = np.arange(self.seen, self.seen + len(records), dtype=np.int64) - self.bstart[buckets]
        self.seen += len(records)
        k = rank // self.cap
        page = np.where(k == 0, buckets, self.over_start[buckets] + k - 1)
        first = k == 0
        self.primary.add(page[first], (rank % self.cap)[first], records[first])
        self.overflow.add(page[~first], (rank % self.cap)[~first], records[~first])

    def finish(self) -> None:
        self.primary.finish()
        self.overflow.finish()
        self.overflow.copy_into_file()
        self.heap.buffer.counters.writes += self.total


class _Region:
    """Pages first..end-1 of the file, filled in page order: complete pages are written (to the
    file, or for the overflow region to a temporary file), the last page that got records waits
    for more. Runs of empty pages (empty buckets) are written a chunk at a time."""

    def __init__(self, chain: _ChainWriter, first: int, end: int, spill: Path | None):
        self.chain, self.first, self.end, self.spill = chain, first, end, spill
        self.next = first  # the first page not written yet
        self.waiting: int | None = None  # the page that may get more records
        self.waiting_body = np.zeros(chain.cap, dtype=chain.heap.schema.dtype)
        if spill is not None:
            spill.write_bytes(b"")

    def add(self, pages: np.ndarray, slots: np.ndarray, records: np.ndarray) -> None:
        if not len(pages):
            return
        cap = self.chain.cap
        numbers, where = np.unique(pages, return_inverse=True)
        body = np.zeros(len(numbers) * cap, dtype=self.waiting_body.dtype)
        if self.waiting is not None and numbers[0] == self.waiting:
            body[:cap] = self.waiting_body
        elif self.waiting is not None:
            self._emit(np.array([self.waiting]), self.waiting_body)
        body[where * cap + slots] = records
        self._emit(numbers[:-1], body[:-cap])
        self.waiting, self.waiting_body = int(numbers[-1]), body[-cap:].copy()

    def finish(self) -> None:
        """Write the waiting page and the empty pages after it."""
        if self.waiting is not None:
            self._emit(np.array([self.waiting]), self.waiting_body)
            self.waiting = None
        self._empty_until(self.end)

    def _emit(self, numbers: np.ndarray, body: np.ndarray) -> None:
        """Write pages ``numbers`` (increasing) holding ``body``, and the empty pages between."""
        cap = self.chain.cap
        if not len(numbers):
            return
        starts = np.r_[0, np.flatnonzero(np.diff(numbers) != 1) + 1, len(numbers)]
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            self._empty_until(int(numbers[a]))
            self._write(int(numbers[a]), body[a * cap : b * cap])
            self.next = int(numbers[b - 1]) + 1

    def _empty_until(self, page: int) -> None:
        step = max(1, (4 << 20) // self.chain.heap.file.page_size)
        while self.next < page:
            n = min(step, page - self.next)
            self._write(self.next, np.zeros(n * self.chain.cap, dtype=self.waiting_body.dtype))
            self.next += n

    def _write(self, first: int, body: np.ndarray) -> None:
        pages = _pages(self.chain, first, body)
        if self.spill is None:
            self.chain.heap.file.append_pages(pages)
        else:
            with open(self.spill, "ab") as f:
                pages.tofile(f)

    def copy_into_file(self) -> None:
        """Append the overflow pages kept in the temporary file, a chunk at a time."""
        if self.spill is None:
            return
        file, size = self.chain.heap.file, self.chain.heap.file.page_size
        step = max(1, (16 << 20) // size)
        done, count = 0, self.end - self.first
        while done < count:
            n = min(step, count - done)
            pages = np.fromfile(self.spill, dtype=np.uint8, count=n * size, offset=done * size)
            file.append_pages(pages.reshape(n, size))
            done += n


def _pages(chain: _ChainWriter, first: int, body: np.ndarray) -> np.ndarray:
    """Pages first.. holding ``body`` (``cap`` slots each), with headers and live bits."""
    fmt, cap = chain.heap.format, chain.cap
    n = len(body) // cap
    numbers = np.arange(first, first + n)
    counts = chain.counts[numbers]
    pages = np.zeros((n, chain.heap.file.page_size), dtype=np.uint8)
    set_headers(pages, numbers, HASH_BUCKET, counts, chain.links[numbers])
    live = np.arange(cap)[None, :] < counts[:, None]
    pages[:, HEADER_SIZE : fmt.records_offset] = np.packbits(live, axis=1, bitorder="little")
    end = fmt.records_offset + cap * fmt.width
    pages[:, fmt.records_offset : end] = body.view(np.uint8).reshape(n, cap * fmt.width)
    return pages
