"""Index scans: the access paths of Gamma's Table 1 (and Teradata's) as iterators.

Gamma (DeWitt et al. 1988, Section 5.1) ran its selections three ways: a file scan, a *clustered*
B-tree scan (read only the pages that hold the range, in key order) and a *non-clustered* B-tree
scan (one index entry per qualifying tuple, then a fetch of the tuple's page). Teradata (Section 3)
offered hash-key lookups on the primary key and dense secondary hash indices that must be read in
full for a range. Each of those is one iterator here:

* ``ClusteredIndexScan``: ``ClusteredFile.range_scan``;
* ``IndexScan``: record ids from a ``BPlusTree`` range, gathered from the leaves a batch at a
  time, then fetched. By default each batch is sorted by record id and each data page fixed once
  (a page holding several qualifying tuples costs one fix, not one per tuple); with the
  context's ``rid_fetch="index_order"`` every record is fetched on its own in index-key order,
  as Gamma did (§5.1 counts one page fault per qualifying tuple; §5.2.2 explains why larger
  pages then make the scan slower);
* ``HashLookupScan``: exact match on a ``HashFile``'s key (one bucket chain);
* ``DenseIndexScan``: a ``DenseHashIndex`` range (the whole index read sequentially; an exact
  match reads one bucket chain), then fetches as above.

Every scan produces batches in the relation's schema, plus an int64 ``_rid`` column when asked
(``with_rids=True``, for updates and deletes through an index), and applies an optional residual
predicate (the terms of the WHERE clause the index did not handle) to each batch.

Simplified on purpose: with sorted fetches a non-clustered scan's output is in record-id order
within each batch, not in key order (only the clustered scan's is); a sort above it restores the
order when a plan needs it.
"""

from __future__ import annotations

import numpy as np

from minidb.exec.expr import Expr
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.scan import RID, apply_predicate, with_rid_column
from minidb.index.btree import BPlusTree
from minidb.index.clustered import ClusteredFile
from minidb.index.hashfile import DenseHashIndex, HashFile
from minidb.storage.schema import Schema, glue_records


def _bounds_text(column: str, low, high) -> str:
    if low is not None and low == high:
        return f"{column} = {low!r}"
    lo = "-inf" if low is None else repr(low)
    hi = "+inf" if high is None else repr(high)
    return f"{column} in [{lo} .. {hi}]"


class _IndexScanBase(Operator):
    """Common output handling: optional residual predicate, optional ``_rid`` column."""

    kind = "index_scan"

    def __init__(self, ctx: ExecContext, base_schema: Schema, predicate: Expr | None,
                 with_rids: bool):
        super().__init__()
        self.ctx = ctx
        self.base_schema = base_schema
        self.predicate = predicate
        self.with_rids = with_rids
        self.schema = with_rid_column(base_schema) if with_rids else base_schema

    def _emit(self, records: np.ndarray, rids: np.ndarray) -> np.ndarray:
        self.stats.tuples_in += len(records)
        mask = apply_predicate(self.predicate, records)
        if mask is not None:
            records, rids = records[mask], rids[mask]
        if not self.with_rids:
            return records
        # widen each record by its 8-byte id: byte copies, no loop over columns
        rid_column = np.ascontiguousarray(rids, dtype="<i8").view([(RID, "<i8")])
        return glue_records([records, rid_column], self.schema.dtype)

    def _suffix(self) -> str:
        where = f" where {self.predicate}" if self.predicate is not None else ""
        rids = " with rids" if self.with_rids else ""
        return where + rids


class _FetchingScan(_IndexScanBase):
    """Shared by the non-clustered scans: fetch sorted record ids a batch at a time."""

    def __init__(self, ctx: ExecContext, heap_or_file, predicate: Expr | None, with_rids: bool):
        super().__init__(ctx, heap_or_file.schema, predicate, with_rids)
        self.source = heap_or_file

    @property
    def in_index_order(self) -> bool:
        """True when records are fetched one at a time in index order (``ExecContext.rid_fetch``)."""
        return self.ctx.rid_fetch == "index_order"

    def _fetch(self, rids: np.ndarray) -> np.ndarray:
        rids = np.asarray(rids, dtype=np.int64)
        self.stats.add("rids", len(rids))
        if self.in_index_order:
            return self._emit(self.source.fetch(rids, "given"), rids)
        rids = np.sort(rids, kind="stable")
        return self._emit(self.source.fetch(rids), rids)


class ClusteredIndexScan(_IndexScanBase):
    """Range selection through a clustered index: only the pages holding the range are read."""

    kind = "clustered_index_scan"

    def __init__(self, ctx: ExecContext, cfile: ClusteredFile, low, high,
                 predicate: Expr | None = None, with_rids: bool = False):
        super().__init__(ctx, cfile.schema, predicate, with_rids)
        self.cfile, self.low, self.high = cfile, low, high
        self._batches = None

    def _open(self) -> None:
        self._batches = self.cfile.range_scan(self.low, self.high)

    def _next(self) -> np.ndarray | None:
        batch = next(self._batches, None)
        return None if batch is None else self._emit(*batch)

    def _close(self) -> None:
        if self._batches is not None:
            self._batches.close()
        self._batches = None

    def describe(self) -> str:
        return (f"ClusteredIndexScan({self.cfile.name}, "
                f"{_bounds_text(self.cfile.key, self.low, self.high)}{self._suffix()})")


class IndexScan(_FetchingScan):
    """Range selection through a non-clustered B+ tree: rids from the leaves, then fetches."""

    kind = "index_scan"

    def __init__(self, ctx: ExecContext, heap_or_file, tree: BPlusTree, low, high,
                 predicate: Expr | None = None, with_rids: bool = False):
        super().__init__(ctx, heap_or_file, predicate, with_rids)
        self.tree, self.low, self.high = tree, low, high
        self._leaves = None

    def _open(self) -> None:
        self._leaves = self.tree.search_range(self.low, self.high)

    def _next(self) -> np.ndarray | None:
        if self._leaves is None:
            return None
        parts, n = [], 0
        while n < self.ctx.batch_rows:  # gather a batch of rids leaf by leaf
            leaf = next(self._leaves, None)
            if leaf is None:
                self._leaves = None
                break
            parts.append(leaf[1])
            n += len(leaf[1])
        if not parts:
            return None
        return self._fetch(np.concatenate(parts))

    def _close(self) -> None:
        if self._leaves is not None:
            self._leaves.close()
        self._leaves = None

    def describe(self) -> str:
        return (f"IndexScan({self.source.name} via {self.tree.name}, "
                f"{_bounds_text('key', self.low, self.high)}{self._suffix()})")


class HashLookupScan(_IndexScanBase):
    """Exact match on a hash file's key: one bucket page (plus its overflow chain)."""

    kind = "hash_lookup"

    def __init__(self, ctx: ExecContext, hfile: HashFile, value, predicate: Expr | None = None,
                 with_rids: bool = False):
        super().__init__(ctx, hfile.schema, predicate, with_rids)
        self.hfile, self.value = hfile, value
        self._done = False

    def _open(self) -> None:
        self._done = False

    def _next(self) -> np.ndarray | None:
        if self._done:
            return None
        self._done = True
        return self._emit(*self.hfile.lookup(self.value))

    def describe(self) -> str:
        return (f"HashLookupScan({self.hfile.name}, "
                f"{_bounds_text(self.hfile.key, self.value, self.value)}{self._suffix()})")


class DenseIndexScan(_FetchingScan):
    """Selection through a dense secondary hash index: the whole index for a range, one bucket
    chain for an exact match, then fetches of the qualifying records."""

    kind = "dense_index_scan"

    def __init__(self, ctx: ExecContext, heap_or_file, index: DenseHashIndex, low, high,
                 predicate: Expr | None = None, with_rids: bool = False):
        super().__init__(ctx, heap_or_file, predicate, with_rids)
        self.index, self.low, self.high = index, low, high
        self._rids: np.ndarray | None = None
        self._pos = 0

    @property
    def exact(self) -> bool:
        return self.low is not None and self.low == self.high

    def _open(self) -> None:
        self._rids = None
        self._pos = 0

    def _next(self) -> np.ndarray | None:
        if self._rids is None:
            if self.exact:
                rids = self.index.lookup(self.low)
            else:
                rids = self.index.range_rids(self.low, self.high)
                # every entry of the index is compared with the range, as a file scan compares
                # every tuple (Gamma paper §5.1 on Teradata's dense indexes); the cluster
                # node prices these comparisons with the fetched tuples
                self.stats.add("entries_compared", self.index.num_entries)
            self._rids = np.asarray(rids) if self.in_index_order else np.sort(rids)
        if self._pos >= len(self._rids):
            return None
        chunk = self._rids[self._pos : self._pos + self.ctx.batch_rows]
        self._pos += len(chunk)
        return self._fetch(chunk)

    def _close(self) -> None:
        self._rids = None

    def describe(self) -> str:
        how = "one bucket" if self.exact else "whole index"
        return (f"DenseIndexScan({self.source.name} via {self.index.name}, "
                f"{_bounds_text('key', self.low, self.high)}, {how}{self._suffix()})")
