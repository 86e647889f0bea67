"""Leaf iterators: a scan of a heap file with an optional predicate, and a scan of an array.

``HeapScan`` is Volcano's file scan with a predicate (Graefe and Thakkar 1992, Section 2: the
file system offers "scans with predicates", and the scan is the iterator that originates a
stream). Each ``next`` reads one cluster of pages from the heap file (one disk transfer through
the buffer pool's ``read_run``), applies the predicate to the whole cluster at once, straight on
the page bytes, and returns the qualifying live tuples as one batch. With ``with_rids=True`` every
tuple carries its record id in an extra ``_rid`` column (int64), which DELETE and UPDATE need
and which index maintenance can use.

A scan can also keep only some columns (``columns=[...]``, a projection pushed into the scan):
the planner asks for it when a query reads a few columns of a wide relation.

``ArrayScan`` feeds an in-memory structured array in slices; it stands in for a scan in tests
and is the input of ``INSERT ... VALUES``.

Simplifications: Volcano's scan hands out pinned records one at a time and unfixes them later;
here a cluster is copied out of the pool and the copy is the batch, so nothing stays pinned
between calls. Predicates are interpreted ``Expr`` trees evaluated on whole columns, not
compiled support functions.
"""

from __future__ import annotations

import numpy as np

from minidb.errors import SchemaError
from minidb.exec.expr import Expr, is_true
from minidb.exec.iterator import BATCH_ROWS, ExecContext, Operator
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import Schema, glue_records, int_column

RID = "_rid"


def with_rid_column(schema: Schema) -> Schema:
    """``schema`` plus the int64 record-id column ``_rid`` at the end."""
    if schema.has_column(RID):
        raise SchemaError(f"the relation already has a column named {RID!r}")
    return Schema(list(schema.columns) + [int_column(RID, "int64")])


def apply_predicate(predicate: Expr | None, batch: np.ndarray) -> np.ndarray | None:
    """Where ``predicate`` is TRUE over ``batch`` (not NULL); None when there is no predicate."""
    if predicate is None:
        return None
    mask = is_true(predicate, batch)
    if mask.dtype != np.bool_:
        raise SchemaError(f"the condition {predicate} is not true/false valued")
    return mask


class HeapScan(Operator):
    """Scan a heap file cluster by cluster, keeping the tuples that satisfy ``predicate``."""

    kind = "heap_scan"

    def __init__(self, ctx: ExecContext, heap: HeapFile, predicate: Expr | None = None,
                 with_rids: bool = False, columns: list[str] | None = None):
        super().__init__()
        self.ctx = ctx
        self.heap = heap
        self.predicate = predicate
        self.with_rids = with_rids
        self.columns = None if columns is None else [heap.schema.column(c).name for c in columns]
        schema = heap.schema if self.columns is None else heap.schema.project(self.columns)
        self.schema = with_rid_column(schema) if with_rids else schema
        self._clusters = None
        self.keep: bool | None = None
        """Whether the pages read stay in the buffer pool (``HeapFile.scan``'s default: only
        when the file fits in half of it). An UPDATE that changes each cluster right after reading
        it sets True, so that its changes find the pages there."""

    def _open(self) -> None:
        self._clusters = self.heap.scan(where=self.predicate, columns=self.columns,
                                        keep=self.keep)
        self.stats.add("pages", self.heap.num_pages)
        self.stats.tuples_in += self.heap.num_records  # every live tuple is examined

    def _next(self) -> np.ndarray | None:
        for records, rids in self._clusters:
            if not len(records):
                continue
            if not self.with_rids:
                return records
            return _attach_rids(records, rids, self.schema.dtype)
        return None

    def _close(self) -> None:
        if self._clusters is not None:
            self._clusters.close()
            self._clusters = None

    def describe(self) -> str:
        where = f" where {self.predicate}" if self.predicate is not None else ""
        rids = " with rids" if self.with_rids else ""
        cols = f" columns {', '.join(self.columns)}" if self.columns is not None else ""
        return f"HeapScan({self.heap.name}{cols}{where}{rids})"


def _attach_rids(records: np.ndarray, rids: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Widen each record by its 8-byte record id (two byte copies, no per-column loop)."""
    rid_column = np.ascontiguousarray(rids, dtype="<i8").view([(RID, "<i8")])
    return glue_records([records, rid_column], dtype)


class ArrayScan(Operator):
    """Produce the tuples of an in-memory structured array, ``batch_rows`` at a time."""

    kind = "array_scan"

    def __init__(self, schema: Schema, records: np.ndarray, batch_rows: int = BATCH_ROWS):
        super().__init__()
        self.schema = schema
        records = np.asarray(records)
        if records.dtype != schema.dtype:
            if records.dtype.names != schema.dtype.names:
                raise SchemaError(
                    f"the records have columns {records.dtype.names}, expected {tuple(schema.names)}"
                )
            records = records.astype(schema.dtype)
        self.records = records
        self.batch_rows = max(1, int(batch_rows))
        self._pos = 0

    def _open(self) -> None:
        self._pos = 0

    def _next(self) -> np.ndarray | None:
        if self._pos >= len(self.records):
            return None
        batch = self.records[self._pos : self._pos + self.batch_rows]
        self._pos += len(batch)
        self.stats.tuples_in += len(batch)
        return batch

    def describe(self) -> str:
        return f"ArrayScan({len(self.records)} tuples)"
