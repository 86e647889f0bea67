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
the number of distinct values, computed when the table is loaded. Later inserts and updates only
widen them (min/max grow; values outside the old range count as new distinct values; deletes are
ignored), which is enough for the range-width selectivity estimate the planner makes.

Simplifications: one node (partitioning across nodes comes with the parallel runtime); a table's
statistics are never recomputed after load except by widening; no NULLs.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.errors import MinidbError, SchemaError, UnknownTableError
from minidb.storage.disk import Disk
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema

ORGANIZATIONS = ("heap", "clustered", "hash")

_file_ids = itertools.count()


def file_name(table: str, what: str) -> str:
    """A fresh, file-system safe name for one file of ``table`` (``what``: data, idx-col, ...)."""
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", table.lower())[:40] or "t"
    return f"{safe}-{what}-{next(_file_ids)}"


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
        else:
            if key is None:
                raise MinidbError(
                    f"table {name!r}: organization {organization!r} needs a key column (key=...)"
                )
            key = schema.column(key, name).name
        records = np.asarray(records, dtype=schema.dtype)
        storage = _build_storage(disk, buffer, name, schema, records, organization, key)
        table = cls(name, schema, disk, buffer, organization, key, storage)
        table._num_records = len(records)
        table.stats = {c.name.lower(): _stats_of(records[c.name]) for c in schema.columns}
        return table

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
        return ix

    def drop(self) -> None:
        """Remove every file of this table from disk and from the buffer pool."""
        for ix in self.indexes.values():
            _drop_structure(self.disk, self.buffer, ix.index)
        self.indexes = {}
        _drop_storage(self.disk, self.buffer, self.storage)

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

    def fetch(self, rids: np.ndarray) -> np.ndarray:
        return self.storage.fetch(np.asarray(rids, dtype=np.int64))

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


class Catalog:
    """The tables of a database, by case-insensitive name."""

    def __init__(self) -> None:
        self._tables: dict[str, Table] = {}

    def add(self, table: Table) -> Table:
        if table.name.lower() in self._tables:
            raise MinidbError(f"table {table.name!r} already exists; drop it first or pick another name")
        self._tables[table.name.lower()] = table
        return table

    def get(self, name: str) -> Table:
        try:
            return self._tables[name.lower()]
        except KeyError:
            known = ", ".join(sorted(t.name for t in self._tables.values())) or "none yet"
            raise UnknownTableError(f"no table named {name!r}; the tables are: {known}") from None

    def has(self, name: str) -> bool:
        return name.lower() in self._tables

    def remove(self, name: str) -> Table:
        table = self.get(name)
        del self._tables[name.lower()]
        return table

    def names(self) -> list[str]:
        return [t.name for t in self._tables.values()]

    def __iter__(self):
        return iter(list(self._tables.values()))

    def __len__(self) -> int:
        return len(self._tables)
