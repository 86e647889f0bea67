"""The catalog: which relations exist, how each is stored, and which indexes it has.

A ``Table`` is one relation of one node. It owns its data file in one of three *file
organizations*, the ones the Gamma paper compares (Section 5.1):

``heap``
    an unordered heap file; only scans and non-clustered B+ trees can find tuples.
``clustered``
    a ``ClusteredFile``: the tuples are kept in key order and a B+ tree on the key sits on top of
    the data pages (Gamma's clustered index: index order = key order).
``hash``
    a ``HashFile``: the tuples are placed by a hash of the key, Teradata's only organization
    (Section 3). An exact match on the key finds its bucket directly; a range on the key cannot
    use it.

On top of the data file a table can have *secondary* (non-clustered) indexes, one per column:
a B+ tree whose values are record ids (Gamma), or, on a hash-organized table, a dense hash index
that must be read in full for a range (Teradata, Section 3).

``insert``, ``delete`` and ``update`` keep every index in step with the data file. A record id
names a slot of a data page; it changes only when a tuple *moves*: when an update changes the
clustering (or hash) key, the tuple is deleted and inserted at its new place, and when an insert
into a clustered file splits a page, the tuples that slide over get new ids. The clustered file
reports those moves and the secondary indexes are corrected with them (Gamma, Section 8: the
"modify the key attribute" query relocates the tuple and must fix the secondary index).

Each table also keeps cheap statistics for the planner: per column the minimum, the maximum and
the number of distinct values, computed when the table is loaded (batch by batch,
``StatsBuilder``, with the values a pass over whole columns gives). Later inserts and updates only
widen them (min/max grow; values outside the old range count as new distinct values; deletes are
ignored), which is enough for the range-width selectivity estimate the planner makes.

Persistence. A database opened on a data directory keeps a small JSON catalog next to its page
files (``catalog.json``, written by ``minidb.database``): per table its schema (column kinds and
widths), organization and key, record count, statistics, and for every file its name and page
count, plus what the B+ trees and hash files keep only in memory (root page, height, entry count,
bucket count), and per file its id and the version of each of its pages (``minidb.storage.disk``:
they are folded into the pages' checksums, so a page of another file, an old copy of a page (a
lost write) or a page written after the catalog (a change cut off by a crash) fails its check).
``Table.reopen`` builds the table again from such an entry: the files are opened (their page
counts come from their sizes and must agree with the catalog), nothing is read until a statement
needs it, and pages are checked against their checksums as they are read. A secondary index whose
file is missing is rebuilt from the data, the one structure that can be derived again cheaply; a
missing data file or tree makes the table *damaged*: the database opens with its other tables,
and a ``DamagedTable`` stands in the catalog for this one, so that any statement naming it fails
with what is wrong, until it is dropped (its catalog entry is kept as it was meanwhile).

Loading. ``TableLoader`` builds a table from batches of records as they come (the bulk load of
``create_table``), holding a few batches: a heap file's full pages are written batch by batch,
a clustered file's records go through an external merge sort
(``minidb.storage.external_sort``), a hash file's through an external sort by bucket. The
result is the table ``Table.create`` makes from all the records at once, page for page.

Simplifications: partitioning across nodes is the parallel runtime's (``minidb.cluster``); a
table's statistics are never recomputed after load except by widening, and count a NULL as the
zero value it is stored as; the catalog is rewritten whole after each change; a change cut off
half way is undone by the log of ``minidb.txn.undo`` before the catalog is read.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.errors import DamagedTableError, MinidbError, SchemaError, UnknownTableError
from minidb.storage.disk import Disk, versions_from_json, versions_to_json
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema

ORGANIZATIONS = ("heap", "clustered", "hash")

_file_ids_lock = threading.Lock()
_next_file_id = 0


def file_name(table: str, what: str) -> str:
    """A fresh, file-system safe name for one file of ``table`` (``what``: data, idx-col, ...)."""
    global _next_file_id
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", table.lower())[:40] or "t"
    with _file_ids_lock:
        number, _next_file_id = _next_file_id, _next_file_id + 1
    return f"{safe}-{what}-{number}"


def reserve_file_names(names) -> None:
    """Make ``file_name`` number new files past every number used by ``names`` (files of a
    reopened database), so a new file never takes the name of an existing one."""
    global _next_file_id
    numbers = [int(m.group(1)) for n in names if (m := re.search(r"-(\d+)(?:\.\w+)?$", n))]
    if numbers:
        with _file_ids_lock:
            _next_file_id = max(_next_file_id, max(numbers) + 1)


@dataclass
class ColumnStats:
    """What the planner knows about one column: its smallest and largest value, distinct count."""

    min: Any
    max: Any
    distinct: int

    def widen(self, values: np.ndarray) -> None:
        """Take new values into account: min/max grow, values outside the old range are new."""
        if not len(values):
            return
        if self.min is None:
            outside = values
        else:
            low, high = _scalar(values, self.min), _scalar(values, self.max)
            outside = values[(values < low) | (values > high)]
        self.distinct += int(len(np.unique(outside))) if len(outside) else 0
        lo, hi = _min_max(values)
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)


def _scalar(values: np.ndarray, v: Any):
    """A statistic as a value comparable with ``values`` (text statistics are bytes)."""
    return np.array(v, dtype=values.dtype)[()]


def _min_max(values: np.ndarray) -> tuple[Any, Any]:
    """Smallest and largest value as Python scalars (argmin also works on text)."""
    return values[np.argmin(values)].item(), values[np.argmax(values)].item()


#: text columns estimate their number of distinct values from a sample of this many values
DISTINCT_SAMPLE = 10_000


def _stats_of(values: np.ndarray) -> ColumnStats:
    if not len(values):
        return ColumnStats(None, None, 0)
    lo, hi = _min_max(values)
    return ColumnStats(lo, hi, _distinct(values))


def _distinct(values: np.ndarray) -> int:
    """Distinct values: exact for numbers (by counting when the values are dense, as the
    benchmark columns are); for text, estimated from an evenly spread sample
    (hashing every long string is the slowest part of a load, and the planner only needs the
    order of magnitude): a sample whose values are all different is taken as a key, otherwise
    the sample's count stands for the column's, which is exact for few-valued columns."""
    if len(values) <= DISTINCT_SAMPLE:
        return int(len(np.unique(values)))
    if values.dtype.kind in "iu":
        lo = int(values.min())
        span = int(values.max()) - lo + 1
        if span <= 8 * len(values):  # dense integers: count occupied slots, no hashing
            return int(np.count_nonzero(np.bincount(values - lo, minlength=span)))
        return int(len(np.unique(values)))
    sample = values[:: len(values) // DISTINCT_SAMPLE]
    seen = len(np.unique(sample))
    return len(values) if seen == len(sample) else seen



# -- statistics of a load, a batch at a time -------------------------------------------------------
#: a dense-integer bitmap may cover this many values before it must also be within 8 x the rows
BITMAP_FLOOR = 1 << 22


class StatsBuilder:
    """Column statistics computed batch by batch, equal to ``_stats_of`` on the whole column.

    ``add(records)`` takes the next batch of a load, ``finish()`` gives ``{column: ColumnStats}``.
    ``num_rows``, when known before the load, makes the text distinct estimate the very one
    ``_distinct`` makes (the same evenly spread sample); without it the sample is thinned as
    the load goes (see ``_TextSample``), an estimate of the same kind but not the same values.
    """

    def __init__(self, schema: Schema, num_rows: int | None = None):
        self.columns = [c.name for c in schema.columns]
        self.builders = {c.name: _ColumnBuilder(schema.dtype[c.name], num_rows)
                         for c in schema.columns}

    def add(self, records: np.ndarray) -> None:
        for name in self.columns:
            self.builders[name].add(records[name])

    def finish(self) -> dict[str, ColumnStats]:
        return {name.lower(): self.builders[name].finish() for name in self.columns}


class _ColumnBuilder:
    """One column's running minimum, maximum and distinct count."""

    def __init__(self, dtype: np.dtype, num_rows: int | None):
        self.dtype = dtype
        self.rows = 0
        self.lo = self.hi = None  # numpy scalars of ``dtype``: ties keep the first, like argmin
        # as ``_distinct``: integers exactly, floats and text from a sample
        self.distinct: Any = _IntDistinct() if dtype.kind in "iu" else _TextSample(num_rows)

    def add(self, values: np.ndarray) -> None:
        if not len(values):
            return
        lo, hi = values[np.argmin(values)], values[np.argmax(values)]
        if self.lo is None:
            self.lo, self.hi = lo, hi
        else:
            both = np.array([self.lo, lo], dtype=self.dtype)
            self.lo = both[np.argmin(both)]
            both = np.array([self.hi, hi], dtype=self.dtype)
            self.hi = both[np.argmax(both)]
        self.distinct.add(values, self.rows)
        self.rows += len(values)

    def finish(self) -> ColumnStats:
        if not self.rows:
            return ColumnStats(None, None, 0)
        return ColumnStats(self.lo.item(), self.hi.item(), self.distinct.count(self.rows))


class _SortedDistinct:
    """Exact distinct count: sorted unique runs, merged when two are about the same size (so
    each value is re-sorted O(log n) times). Memory: the distinct values themselves."""

    def __init__(self) -> None:
        self.runs: list[np.ndarray] = []

    def add(self, values: np.ndarray, offset: int = 0) -> None:
        self.runs.append(np.unique(values))
        while len(self.runs) > 1 and len(self.runs[-2]) <= 2 * len(self.runs[-1]):
            last = self.runs.pop()
            self.runs[-1] = np.unique(np.concatenate([self.runs[-1], last]))

    def count(self, rows: int = 0) -> int:
        if len(self.runs) > 1:
            self.runs = [np.unique(np.concatenate(self.runs))]
        return int(len(self.runs[0])) if self.runs else 0


class _IntDistinct:
    """Exact distinct count of integers: a bitmap (one byte a value) over the range seen so far
    while that range stays within ``max(BITMAP_FLOOR, 8 x rows)`` values, as the benchmark's
    dense columns do; sorted unique runs (``_SortedDistinct``) once it does not."""

    def __init__(self) -> None:
        self.lo = self.hi = 0  # the smallest and largest value seen
        self.base = 0  # the value bit 0 of ``seen`` stands for
        self.seen: np.ndarray | None = None
        self.sorted: _SortedDistinct | None = None

    def add(self, values: np.ndarray, offset: int) -> None:
        if self.sorted is not None:
            self.sorted.add(values)
            return
        lo, hi = int(values.min()), int(values.max())
        if self.seen is not None:
            lo, hi = min(lo, self.lo), max(hi, self.hi)
        if hi - lo + 1 > max(BITMAP_FLOOR, 8 * (offset + len(values))):
            self._to_sorted()
            self.sorted.add(values)
            return
        self._cover(lo, hi)
        self.seen[values.astype(np.int64) - self.base] = True

    def _cover(self, lo: int, hi: int) -> None:
        """Make the bitmap reach lo..hi, with a quarter more room (growing is rare: a column's
        first batch usually spans most of its range already)."""
        if self.seen is None or lo < self.base or hi >= self.base + len(self.seen):
            span = hi - lo + 1
            grown = np.zeros(span + span // 4 + 1, dtype=bool)
            base = lo - span // 8
            if self.seen is not None:
                old = self.seen[self.lo - self.base : self.hi - self.base + 1]
                grown[self.lo - base : self.lo - base + len(old)] = old
            self.base, self.seen = base, grown
        self.lo, self.hi = lo, hi

    def _to_sorted(self) -> None:
        self.sorted = _SortedDistinct()
        if self.seen is not None:
            self.sorted.add(np.flatnonzero(self.seen).astype(np.int64) + self.base)
        self.seen = None

    def count(self, rows: int = 0) -> int:
        if self.sorted is not None:
            return self.sorted.count()
        return int(np.count_nonzero(self.seen)) if self.seen is not None else 0


class _TextSample:
    """The float and text distinct estimate of ``_distinct``, from the values at rows 0, s, 2s, ... with
    s = rows // DISTINCT_SAMPLE (every value when there are at most DISTINCT_SAMPLE rows).

    With the row count known in advance the sample holds exactly ``_distinct``'s values. Without
    it, rows are kept at a stride that doubles whenever more than 2 x DISTINCT_SAMPLE are held
    (every other kept value is dropped); the estimate then uses that sample."""

    def __init__(self, num_rows: int | None):
        self.known = num_rows
        self.step = max(1, num_rows // DISTINCT_SAMPLE) if num_rows and num_rows > DISTINCT_SAMPLE \
            else 1
        self.parts: list[np.ndarray] = []
        self.held = 0

    def add(self, values: np.ndarray, offset: int) -> None:
        first = -(-offset // self.step) * self.step - offset  # the first sampled row in this batch
        part = values[first :: self.step].copy()
        self.parts.append(part)
        self.held += len(part)
        if self.known is None and self.held > 2 * DISTINCT_SAMPLE:
            kept = np.concatenate(self.parts)[::2]  # rows 0, 2s, 4s, ...: stride 2s
            self.parts, self.held, self.step = [kept], len(kept), 2 * self.step

    def count(self, rows: int) -> int:
        sample = np.concatenate(self.parts) if self.parts else np.empty(0)
        if rows <= DISTINCT_SAMPLE:
            return int(len(np.unique(sample)))
        if self.known is None:  # thinned on the way: the stride _distinct would use is unknown
            step = max(1, rows // DISTINCT_SAMPLE)
            sample = sample[:: max(1, step // self.step)] if step > self.step else sample
        seen = len(np.unique(sample))
        return rows if seen == len(sample) else seen

@dataclass
class SecondaryIndex:
    """A non-clustered index on one column: ``kind`` is "btree" (Gamma) or "dense_hash" (Teradata)."""

    column: str
    kind: str
    index: Any

    @property
    def num_pages(self) -> int:
        return int(getattr(self.index, "num_pages", 0))

    @property
    def height(self) -> int:
        return int(getattr(self.index, "height", 1))

    def insert(self, keys: np.ndarray, rids: np.ndarray) -> None:
        if len(rids):
            self.index.insert(keys, rids)

    def delete(self, keys: np.ndarray, rids: np.ndarray) -> None:
        if len(rids):
            self.index.delete(keys, rids)

    def describe(self) -> str:
        what = "non-clustered B+ tree" if self.kind == "btree" else "dense hash index"
        return f"{what} on {self.column}"


class Table:
    """One relation: its schema, its data file (heap / clustered / hash) and its indexes."""

    def __init__(self, name: str, schema: Schema, disk: Disk, buffer: BufferManager,
                 organization: str, key: str | None, storage: Any):
        self.name = name
        self.schema = schema
        self.disk = disk
        self.buffer = buffer
        self.organization = organization
        self.key = key
        self.storage = storage  # HeapFile | ClusteredFile | HashFile
        self.indexes: dict[str, SecondaryIndex] = {}  # lower-case column name -> index
        self.stats: dict[str, ColumnStats] = {}
        self._num_records = 0

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def create(cls, disk: Disk, buffer: BufferManager, name: str, schema: Schema,
               records: np.ndarray, organization: str = "heap", key: str | None = None) -> Table:
        """Load ``records`` into a new table stored with the given file organization."""
        organization, key = check_organization(name, schema, organization, key)
        records = np.asarray(records, dtype=schema.dtype)
        storage = _build_storage(disk, buffer, name, schema, records, organization, key)
        table = cls(name, schema, disk, buffer, organization, key, storage)
        table._num_records = len(records)
        table.stats = {c.name.lower(): _stats_of(records[c.name]) for c in schema.columns}
        table.claim_files()
        return table

    def claim_files(self) -> None:
        """Mark every page file of this table as its own, so a damaged page names the table."""
        files = _paged_files(self.storage)
        for ix in self.indexes.values():
            files += _paged_files(ix.index)
        for f in files:
            f.owner = self.name

    def reorganize(self, organization: str, key: str | None) -> None:
        """Rebuild the data file in another organization; secondary indexes are rebuilt too."""
        records = self.read_all()
        columns = [ix.column for ix in self.indexes.values()]
        old = self.storage
        key = None if key is None else self.schema.column(key, self.name).name
        self.storage = _build_storage(self.disk, self.buffer, self.name, self.schema, records,
                                      organization, key)
        self.organization, self.key = organization, key
        for ix in self.indexes.values():
            _drop_structure(self.disk, self.buffer, ix.index)
        self.indexes = {}
        _drop_storage(self.disk, self.buffer, old)
        for column in columns:
            self.create_index(column)
        self.claim_files()

    def create_index(self, column: str) -> SecondaryIndex:
        """Build a non-clustered index on ``column`` over the tuples now in the table."""
        col = self.schema.column(column, self.name).name
        if col.lower() in self.indexes:
            raise MinidbError(f"table {self.name!r} already has an index on {col!r}")
        records, rids = self.read_all_with_rids()
        keys = np.ascontiguousarray(records[col])
        name = file_name(self.name, f"idx-{col}")
        if self.organization == "hash":
            from minidb.index.hashfile import DenseHashIndex

            index = DenseHashIndex.build(self.disk, self.buffer, name, keys, rids)
            ix = SecondaryIndex(col, "dense_hash", index)
        else:
            from minidb.index.btree import BPlusTree

            index = BPlusTree.bulk_load(self.disk, self.buffer, name, keys, rids)
            ix = SecondaryIndex(col, "btree", index)
        self.indexes[col.lower()] = ix
        self.claim_files()
        return ix

    def drop(self) -> None:
        """Remove every file of this table from disk and from the buffer pool."""
        for ix in self.indexes.values():
            _drop_structure(self.disk, self.buffer, ix.index)
        self.indexes = {}
        _drop_storage(self.disk, self.buffer, self.storage)

    # -- persistence --------------------------------------------------------------------------
    def to_json(self) -> dict:
        """This table's catalog entry (see the module docstring); its pages must be on disk."""
        return {
            "name": self.name,
            "organization": self.organization,
            "key": self.key,
            "schema": schema_to_json(self.schema),
            "records": int(self._num_records),
            "storage": _storage_to_json(self.storage),
            "indexes": [{"column": ix.column, "kind": ix.kind, **_index_to_json(ix.index)}
                        for ix in self.indexes.values()],
            "stats": {k: stats_to_json(v) for k, v in self.stats.items()},
        }

    @classmethod
    def reopen(cls, disk: Disk, buffer: BufferManager, entry: dict) -> Table:
        """The table a catalog entry describes, over the files already in ``disk``'s directory."""
        try:
            name = entry["name"]
            organization, key = entry["organization"], entry["key"]
            schema = schema_from_json(entry["schema"])
            storage = _storage_from_json(disk, buffer, name, schema, organization, key,
                                         entry["storage"])
            table = cls(name, schema, disk, buffer, organization, key, storage)
            table._num_records = int(entry["records"])
            table.stats = {k: stats_from_json(v) for k, v in entry["stats"].items()}
            missing = []
            for ix in entry["indexes"]:
                if not (disk.path / f"{ix['file']}.pages").exists():
                    missing.append(ix["column"])  # derived from the data: build it again below
                    continue
                index = _index_from_json(disk, buffer, name, ix)
                table.indexes[ix["column"].lower()] = SecondaryIndex(ix["column"], ix["kind"], index)
        except (KeyError, TypeError, ValueError) as e:
            raise MinidbError(f"the catalog entry of table {entry.get('name', '?')!r} is damaged "
                              f"({type(e).__name__}: {e})") from None
        table.claim_files()
        for column in missing:
            table.create_index(column)
        return table

    def file_names(self) -> list[str]:
        """The names of every page file of this table (data, trees, indexes)."""
        files = _paged_files(self.storage)
        for ix in self.indexes.values():
            files += _paged_files(ix.index)
        return [f.name for f in files]

    # -- shape --------------------------------------------------------------------------------
    @property
    def heap(self) -> HeapFile:
        """The heap file holding the data pages (for a clustered / hash file, its data pages)."""
        return self.storage if isinstance(self.storage, HeapFile) else self.storage.heap

    @property
    def num_records(self) -> int:
        return self._num_records

    @property
    def num_pages(self) -> int:
        """Data pages of the relation (indexes not included)."""
        return int(self.heap.num_pages)

    @property
    def records_per_page(self) -> int:
        return int(self.heap.capacity)

    @property
    def index_pages(self) -> int:
        pages = sum(ix.num_pages for ix in self.indexes.values())
        tree = getattr(self.storage, "tree", None)
        return pages + int(getattr(tree, "num_pages", 0) or 0)

    def index_on(self, column: str) -> SecondaryIndex | None:
        return self.indexes.get(column.lower())

    def column_stats(self, column: str) -> ColumnStats:
        return self.stats[column.lower()]

    def describe(self) -> str:
        org = self.organization if self.key is None else f"{self.organization} on {self.key}"
        extra = "".join(f", {ix.describe()}" for ix in self.indexes.values())
        return f"{self.name} ({org}{extra}; {self.num_records} tuples, {self.num_pages} pages)"

    # -- reading ------------------------------------------------------------------------------
    def read_all_with_rids(self) -> tuple[np.ndarray, np.ndarray]:
        parts = list(self.heap.scan())
        if not parts:
            return np.empty(0, dtype=self.schema.dtype), np.empty(0, dtype=np.int64)
        return (np.concatenate([p[0] for p in parts]),
                np.concatenate([p[1] for p in parts]).astype(np.int64))

    def read_all(self) -> np.ndarray:
        return self.read_all_with_rids()[0]

    def fetch(self, rids: np.ndarray, order: str = "sorted") -> np.ndarray:
        return self.storage.fetch(np.asarray(rids, dtype=np.int64), order)

    # -- changing -----------------------------------------------------------------------------
    def check_records(self, records: np.ndarray) -> np.ndarray:
        records = np.asarray(records)
        if records.dtype != self.schema.dtype:
            try:
                records = records.astype(self.schema.dtype)
            except (TypeError, ValueError) as exc:
                raise SchemaError(f"records do not fit the layout of table {self.name!r}: {exc}") from None
        return records

    def insert(self, records: np.ndarray) -> np.ndarray:
        """Add tuples; every index learns them. Returns their record ids."""
        records = self.check_records(records)
        if not len(records):
            return np.empty(0, dtype=np.int64)
        if self.organization == "heap":
            rids = np.asarray(self.storage.append(records), dtype=np.int64)
        else:
            rids = self._insert_into_file(records)
        for ix in self.indexes.values():
            ix.insert(np.ascontiguousarray(records[ix.column]), rids)
        self._num_records += len(records)
        self._widen(records)
        return rids

    def _insert_into_file(self, records: np.ndarray) -> np.ndarray:
        """Insert into a clustered / hash file, fixing secondary indexes for tuples it moved."""
        out = self.storage.insert(records)
        if isinstance(out, tuple):
            new_rids, moved_old, moved_new = out
            moved_old = np.asarray(moved_old, dtype=np.int64)
            moved_new = np.asarray(moved_new, dtype=np.int64)
            if len(moved_old) and self.indexes:
                moved = self.storage.fetch(moved_new)
                for ix in self.indexes.values():
                    keys = np.ascontiguousarray(moved[ix.column])
                    ix.delete(keys, moved_old)
                    ix.insert(keys, moved_new)
            return np.asarray(new_rids, dtype=np.int64)
        return np.asarray(out, dtype=np.int64)

    def delete(self, rids: np.ndarray) -> int:
        """Remove the tuples with these record ids from the file and every index."""
        rids = np.unique(np.asarray(rids, dtype=np.int64))
        if not len(rids):
            return 0
        old = self.storage.fetch(rids) if self.indexes else None
        removed = self.storage.delete(rids)
        removed = len(rids) if removed is None else int(removed)
        for ix in self.indexes.values():
            ix.delete(np.ascontiguousarray(old[ix.column]), rids)
        self._num_records -= removed
        return removed

    def update(self, rids: np.ndarray, records: np.ndarray) -> None:
        """Replace the tuples ``rids`` by ``records`` (same order), keeping every index in step.

        A tuple whose clustering / hash key changes must move: it is deleted and inserted again.
        Other tuples are overwritten in place; a secondary index whose column changed gets the
        old entry removed and the new one added.
        """
        rids = np.asarray(rids, dtype=np.int64)
        records = self.check_records(records)
        if len(np.unique(rids)) != len(rids):
            raise MinidbError(f"update of {self.name!r}: a record id appears twice")
        if not len(rids):
            return
        old = self.storage.fetch(rids)
        if self.key is not None:
            moves = old[self.key] != records[self.key]
        else:
            moves = np.zeros(len(rids), dtype=bool)
        stay = ~moves
        if stay.any():
            s_rids, s_new, s_old = rids[stay], records[stay], old[stay]
            if self.organization == "heap":
                self.storage.update(s_rids, s_new)
            else:
                self.storage.update_in_place(s_rids, s_new)
            for ix in self.indexes.values():
                changed = s_old[ix.column] != s_new[ix.column]
                if changed.any():
                    ix.delete(np.ascontiguousarray(s_old[ix.column][changed]), s_rids[changed])
                    ix.insert(np.ascontiguousarray(s_new[ix.column][changed]), s_rids[changed])
            self._widen(s_new)
        if moves.any():
            # delete first, then insert: the insert may move other tuples and reports it
            self.delete(rids[moves])
            self.insert(records[moves])

    def _widen(self, records: np.ndarray) -> None:
        for c in self.schema.columns:
            self.stats[c.name.lower()].widen(records[c.name])



def check_organization(name: str, schema: Schema, organization: str | None,
                       key: str | None) -> tuple[str, str | None]:
    """The organization (lower case) and key column name, or a one-line error (also for an
    organization or key that is not a string)."""
    if organization is not None and not isinstance(organization, str):
        raise MinidbError(f"table {name!r}: organization must be a string, not {organization!r}")
    if key is not None and not isinstance(key, str):
        raise MinidbError(f"table {name!r}: key must be a column name, not {key!r}")
    organization = (organization or "heap").lower()
    if organization not in ORGANIZATIONS:
        raise MinidbError(
            f"unknown organization {organization!r} for table {name!r}; "
            f"use one of: {', '.join(ORGANIZATIONS)}"
        )
    if organization == "heap":
        if key is not None:
            raise MinidbError(
                f"table {name!r}: a key only makes sense for organization 'clustered' or 'hash'"
            )
        return organization, None
    if key is None:
        raise MinidbError(
            f"table {name!r}: organization {organization!r} needs a key column (key=...)"
        )
    return organization, schema.column(key, name).name


# -- bulk loading, a batch at a time --------------------------------------------------------------
class TableLoader:
    """Build a new table from batches of records, holding a constant number of batches.

    ``add(records)`` stores the next batch, ``finish()`` returns the ``Table``, ``abort()``
    removes what was written. The table is the one ``Table.create`` makes from all the records
    at once: the same pages, tree and statistics (``StatsBuilder``), for any batch sizes.

    * heap: ``HeapLoader`` writes the full pages of each batch as it comes;
    * clustered: the batches go through an ``ExternalSorter`` (sorted runs of ``run_rows``
      records in temporary files, then a merge) into ``ClusteredFile.build_sorted``;
    * hash: ``HashLoader`` (``minidb.index.hash_load``) spills the batches to a temporary file,
      then, knowing the record count and so the bucket count, sorts them by bucket externally
      and writes the bucket chains in page order.
    """

    def __init__(self, disk: Disk, buffer: BufferManager, name: str, schema: Schema,
                 organization: str = "heap", key: str | None = None, num_rows: int | None = None,
                 run_rows: int = 2 * 65_536):
        self.disk, self.buffer, self.name, self.schema = disk, buffer, name, schema
        self.organization, self.key = check_organization(name, schema, organization, key)
        self.stats = StatsBuilder(schema, num_rows)
        self.rows = 0
        self.fname = file_name(name, self.organization)
        self.heap_loader = None
        self.sorter = None
        self.hash_loader = None
        self.storage: Any = None
        if self.organization == "heap":
            from minidb.storage.heapfile import HeapLoader

            self.heap_loader = HeapLoader(HeapFile(disk.create(self.fname), schema, buffer))
        elif self.organization == "clustered":
            from minidb.storage.external_sort import ExternalSorter

            self.sorter = ExternalSorter(schema.dtype, self.key, run_rows)
        else:
            from minidb.index.hash_load import HashLoader

            self.hash_loader = HashLoader(disk, buffer, self.fname, schema, self.key, run_rows,
                                          num_rows)

    def add(self, records: np.ndarray) -> None:
        """Store (or, for a sorted or hashed file, take in) the next batch of records."""
        records = np.asarray(records, dtype=self.schema.dtype)
        self.stats.add(records)
        self.rows += len(records)
        if self.heap_loader is not None:
            self.heap_loader.add(records)
        elif self.sorter is not None:
            self.sorter.add(records)
        else:
            self.hash_loader.add(records)

    def finish(self) -> Table:
        """Write what is left and give the new table (its files claimed, statistics set)."""
        if self.heap_loader is not None:
            self.storage = self.heap_loader.finish()
        elif self.sorter is not None:
            from minidb.index.clustered import ClusteredFile

            try:
                self.storage = ClusteredFile.build_sorted(
                    self.disk, self.buffer, self.fname, self.schema, self.sorter.sorted_batches(),
                    self.key)
            finally:
                self.sorter.close()
        else:
            self.storage = self.hash_loader.finish()
        table = Table(self.name, self.schema, self.disk, self.buffer, self.organization, self.key,
                      self.storage)
        table._num_records = self.rows
        table.stats = self.stats.finish()
        table.claim_files()
        return table

    def abort(self) -> None:
        """Remove every file this load wrote (after an error part way)."""
        if self.sorter is not None:
            self.sorter.close()
        if self.hash_loader is not None:
            self.hash_loader.close()
        for f in self.disk.open_files():
            if f.name == self.fname or f.name.startswith(f"{self.fname}."):
                self.buffer.discard(f)
                self.disk.drop(f)

def load_table(disk: Disk, buffer: BufferManager, name: str, schema: Schema, batches,
               organization: str = "heap", key: str | None = None, num_rows: int | None = None,
               what: str | None = None) -> Table:
    """A new table from ``batches`` (Arrow record batches, converted one at a time with
    ``schema.records_from_arrow``); on any error the files written so far are removed."""
    loader = TableLoader(disk, buffer, name, schema, organization, key, num_rows)
    try:
        for batch in batches:
            loader.add(schema.records_from_arrow(batch, what=what or f"table {name!r}"))
        return loader.finish()
    except BaseException:
        loader.abort()
        raise

# -- storage helpers ----------------------------------------------------------------------------
def _build_storage(disk: Disk, buffer: BufferManager, name: str, schema: Schema,
                   records: np.ndarray, organization: str, key: str | None) -> Any:
    fname = file_name(name, organization)
    if organization == "heap":
        heap = HeapFile(disk.create(fname), schema, buffer)
        heap.append(records)
        return heap
    if organization == "clustered":
        from minidb.index.clustered import ClusteredFile

        return ClusteredFile.build(disk, buffer, fname, schema, records, key)
    from minidb.index.hashfile import HashFile

    return HashFile.build(disk, buffer, fname, schema, records, key)


def _paged_files(obj: Any, seen: set[int] | None = None) -> list:
    """Every PagedFile reachable from a storage structure (a heap, a tree, a hash file ...)."""
    from minidb.storage.disk import PagedFile

    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, PagedFile):
        return [obj]
    found = []
    for attr in ("file", "heap", "tree", "index", "data", "overflow", "directory", "meta", "files"):
        child = getattr(obj, attr, None)
        if child is None:
            continue
        if isinstance(child, list | tuple):
            for c in child:
                found += _paged_files(c, seen)
        elif hasattr(child, "__dict__") or isinstance(child, PagedFile):
            found += _paged_files(child, seen)
    return found


def _drop_structure(disk: Disk, buffer: BufferManager, obj: Any) -> None:
    drop = getattr(obj, "drop", None)
    if callable(drop):
        drop()
        return
    for f in _paged_files(obj):
        buffer.discard(f)
        disk.drop(f)


def _drop_storage(disk: Disk, buffer: BufferManager, storage: Any) -> None:
    _drop_structure(disk, buffer, storage)


@dataclass
class DamagedTable:
    """A table of a reopened database that could not be opened: its catalog entry, kept as it
    was (and saved again as it was), and the reason, which every use of the table reports."""

    name: str
    entry: dict
    reason: str

    def error(self) -> DamagedTableError:
        return DamagedTableError(f"table {self.name!r} is damaged and cannot be used: "
                                 f"{self.cause()}; drop it (drop_table) and load it again")

    def cause(self) -> str:
        """The reason without the table's name in front or the advice at the end (``error``
        says both once)."""
        cause = self.reason.removeprefix(f"table {self.name!r}: ")
        for advice in ("; reload the table", ": load it again in a new directory"):
            cause = cause.removesuffix(advice)
        return cause.rstrip(".")

    def file_names(self) -> list[str]:
        """The page files the damaged entry names (they stay on disk until it is dropped)."""
        return files_named(self.entry)

    def to_json(self) -> dict:
        return self.entry


def files_named(entry: Any) -> list[str]:
    """Every ``"file"`` value anywhere in a catalog entry."""
    if isinstance(entry, dict):
        out = [entry["file"]] if isinstance(entry.get("file"), str) else []
        for v in entry.values():
            out += files_named(v)
        return out
    if isinstance(entry, list):
        return [name for v in entry for name in files_named(v)]
    return []


class Catalog:
    """The tables of a database, by case-insensitive name; a table that could not be reopened
    is held as a ``DamagedTable``, listed by ``names`` and refused by ``get``."""

    def __init__(self) -> None:
        self._tables: dict[str, Table] = {}
        self._damaged: dict[str, DamagedTable] = {}

    def add(self, table: Table) -> Table:
        if self.has(table.name):
            raise MinidbError(f"table {table.name!r} already exists; drop it first or pick another name")
        self._tables[table.name.lower()] = table
        return table

    def add_damaged(self, damaged: DamagedTable) -> None:
        self._damaged[damaged.name.lower()] = damaged

    def get(self, name: str) -> Table:
        try:
            return self._tables[name.lower()]
        except KeyError:
            if name.lower() in self._damaged:
                raise self._damaged[name.lower()].error() from None
            known = ", ".join(sorted(self.names())) or "none yet"
            raise UnknownTableError(f"no table named {name!r}; the tables are: {known}") from None

    def has(self, name: str) -> bool:
        return name.lower() in self._tables or name.lower() in self._damaged

    def remove(self, name: str) -> Table:
        table = self.get(name)
        del self._tables[name.lower()]
        return table

    def damaged(self) -> list[DamagedTable]:
        """The tables that could not be reopened, with what is wrong with each."""
        return list(self._damaged.values())

    def clear(self) -> None:
        """Forget every table (a rollback reads the committed catalog again)."""
        self._tables.clear()
        self._damaged.clear()

    def remove_damaged(self, name: str) -> DamagedTable | None:
        return self._damaged.pop(name.lower(), None)

    def entries(self) -> list[dict]:
        """The catalog entries of every table, damaged ones as they were read."""
        return [t.to_json() for t in self] + [d.to_json() for d in self._damaged.values()]

    def names(self) -> list[str]:
        return [t.name for t in self._tables.values()] + [d.name for d in self._damaged.values()]

    def __iter__(self):
        return iter(list(self._tables.values()))

    def __len__(self) -> int:
        return len(self._tables)


# -- catalog files ------------------------------------------------------------------------------
CATALOG_FILE = "catalog.json"  # a node's catalog, in its data directory
CLUSTER_FILE = "cluster.json"  # a parallel database's coordinator catalog, in its directory
#: 2: every file has an id and page versions, folded into its pages' checksums (version 1 pages
#: have neither, so they cannot be read by this minidb)
CATALOG_VERSION = 2


def write_json_atomically(path: Path, doc: dict) -> None:
    """Replace ``path`` by ``doc`` all at once: write a temporary file, fsync it, rename it over
    the old one (``os.replace`` is atomic), then fsync the directory so the rename lasts too.
    A crash leaves the old catalog or the new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    data = json.dumps(doc, indent=1, sort_keys=False).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:  # some systems cannot open a directory; the rename is still atomic
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def read_json(path: Path, what: str, format_name: str) -> dict | None:
    """The catalog document at ``path`` (None when there is none), checked for its format."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise MinidbError(f"{path} is not a readable {what} ({e}); the file is damaged") from None
    if not isinstance(doc, dict) or doc.get("format") != format_name:
        raise MinidbError(f"{path} is not a minidb {what}")
    if doc.get("version") == 1:
        raise MinidbError(f"{path} was written by an older minidb (catalog version 1, whose pages "
                          f"carry no file ids or page versions); this minidb reads version "
                          f"{CATALOG_VERSION}: load the data again into a new directory")
    if doc.get("version") != CATALOG_VERSION:
        raise MinidbError(f"{path} has catalog version {doc.get('version')!r}; this minidb reads "
                          f"version {CATALOG_VERSION}")
    return doc


def schema_to_json(schema: Schema) -> list[dict]:
    return [{"name": c.name, "kind": c.kind, "width": c.width, **({"nullable": True} if c.nullable else {})}
            for c in schema.columns]


def schema_from_json(columns: list[dict]) -> Schema:
    from minidb.storage.schema import Column, char_column, float_column, int_column

    out: list[Column] = []
    for c in columns:
        if c["kind"] == "char":
            out.append(char_column(c["name"], int(c["width"])))
        elif c["kind"] == "float64":
            out.append(float_column(c["name"]))
        else:
            out.append(int_column(c["name"], c["kind"]))
        out[-1] = out[-1].with_nullable(bool(c.get("nullable", False)))
        if out[-1].width != int(c["width"]):
            raise ValueError(f"column {c['name']!r}: width {c['width']} does not fit {c['kind']}")
    return Schema(out)


def _value_to_json(v: Any) -> Any:
    """A statistic as JSON: numbers as they are, text (bytes) tagged and in hex."""
    if isinstance(v, bytes | np.bytes_):
        return {"bytes": bytes(v).hex()}
    if isinstance(v, np.generic):
        return v.item()
    return v


def _value_from_json(v: Any) -> Any:
    return bytes.fromhex(v["bytes"]) if isinstance(v, dict) else v


def stats_to_json(st: ColumnStats) -> dict:
    return {"min": _value_to_json(st.min), "max": _value_to_json(st.max), "distinct": int(st.distinct)}


def stats_from_json(d: dict) -> ColumnStats:
    return ColumnStats(_value_from_json(d["min"]), _value_from_json(d["max"]), int(d["distinct"]))


def _file_to_json(f) -> dict:
    return {"file": f.name, "pages": int(f.num_pages), "id": int(f.uid),
            "versions": versions_to_json(f.versions)}


def _open_file(disk: Disk, table: str, entry: dict):
    uid, versions = entry["id"], versions_from_json(entry["versions"])
    if not isinstance(uid, int) or len(versions) != int(entry["pages"]):
        raise ValueError(f"the id or page versions of {entry['file']} do not fit its "
                         f"{entry['pages']} pages")
    f = disk.open(entry["file"], uid, versions)
    if f.num_pages != int(entry["pages"]):
        raise MinidbError(
            f"table {table!r}: {entry['file']}.pages holds {f.num_pages} pages but the catalog "
            f"recorded {entry['pages']}; the file was changed outside minidb (a change of minidb's own "
            "is undone by its log), so the table cannot be trusted: load it again in a new directory"
        )
    return f


def _storage_to_json(storage: Any) -> dict:
    heap = storage if isinstance(storage, HeapFile) else storage.heap
    out = {**_file_to_json(heap.file), "heap_records": int(heap.num_records)}
    tree = getattr(storage, "tree", None)
    if tree is not None:
        out["tree"] = _btree_to_json(tree)
    if hasattr(storage, "num_buckets"):
        out["buckets"] = int(storage.num_buckets)
    return out


def _storage_from_json(disk: Disk, buffer: BufferManager, table: str, schema: Schema,
                       organization: str, key: str | None, entry: dict) -> Any:
    if organization not in ORGANIZATIONS:
        raise ValueError(f"unknown organization {organization!r}")
    heap = HeapFile(_open_file(disk, table, entry), schema, buffer)
    heap.num_records = int(entry["heap_records"])
    if organization == "heap":
        return heap
    if organization == "clustered":
        from minidb.index.clustered import ClusteredFile

        return ClusteredFile(heap, _btree_from_json(disk, buffer, table, entry["tree"]), key)
    from minidb.index.hashfile import HashFile

    return HashFile(heap, key, int(entry["buckets"]))


def _btree_to_json(tree: Any) -> dict:
    return {**_file_to_json(tree.file), "key_dtype": tree.key_dtype.str, "root": int(tree.root),
            "height": int(tree.height), "entries": int(tree.num_entries)}


def _btree_from_json(disk: Disk, buffer: BufferManager, table: str, entry: dict) -> Any:
    from minidb.index.btree import BPlusTree

    return BPlusTree(disk, buffer, _open_file(disk, table, entry), np.dtype(entry["key_dtype"]),
                     int(entry["root"]), int(entry["height"]), int(entry["entries"]))


def _index_to_json(index: Any) -> dict:
    if hasattr(index, "num_buckets"):  # DenseHashIndex
        return {**_file_to_json(index.file), "key_dtype": index.key_dtype.str,
                "buckets": int(index.num_buckets), "entries": int(index.num_entries)}
    return _btree_to_json(index)


def _index_from_json(disk: Disk, buffer: BufferManager, table: str, entry: dict) -> Any:
    if entry["kind"] == "dense_hash":
        from minidb.index.hashfile import DenseHashIndex

        return DenseHashIndex(disk, buffer, _open_file(disk, table, entry),
                              np.dtype(entry["key_dtype"]), int(entry["buckets"]),
                              int(entry["entries"]))
    if entry["kind"] != "btree":
        raise ValueError(f"unknown index kind {entry['kind']!r}")
    return _btree_from_json(disk, buffer, table, entry)
