"""Modification iterators: INSERT, DELETE and UPDATE as the roots of a plan.

The Gamma paper's update queries (Section 8) append tuples, delete tuples found through a
selection, and modify attributes of selected tuples; Volcano (Graefe and Thakkar 1992, Section 2)
treats every such step as an iterator like any other. Here the child of each modification
iterator finds the tuples (a scan with a predicate, an index scan, a join ...) and the iterator
applies the change to a *table*: any object with

    insert(records) -> record ids
    delete(rids) -> number of tuples removed
    update(rids, records) -> None
    schema

(the catalog's table, which also maintains its indexes, or a thin wrapper around a heap file).

Every modification first reads its whole input and checks every new value, and only then
changes the table, in one call. Reading everything first avoids the *Halloween problem* (a scan
that meets tuples the same statement has already inserted or moved, and processes them again),
and checking first means a type error or an over-long text value leaves the table untouched.
Each iterator then produces one tuple with one int64 column ``count``: the number of tuples
inserted, deleted or updated.

* ``Insert``: the child's columns are matched to the table's by position (as in
  ``INSERT INTO t SELECT ...``) and converted to the table's layout.
* ``Delete``: the child must produce the ``_rid`` column (a scan built with ``with_rids=True``).
* ``Update``: the child produces whole tuples of the table plus ``_rid``; ``assignments`` maps a
  column to the expression giving its new value, evaluated on the old tuple.

Value checks: text goes only into text columns and must fit their width; numbers go only into
numeric columns; floats do not go into integer columns, and integers must fit the column's kind.
Simplification: the whole input is held in memory between reading and applying it (no spooling to
a temporary file), and there is no transaction: a failure inside the table's own call is not
undone.
"""

from __future__ import annotations

import numpy as np

from minidb.errors import SchemaError
from minidb.exec.expr import Expr
from minidb.exec.iterator import Operator
from minidb.exec.scan import RID
from minidb.storage.schema import Column, Schema, int_column, null_mask, set_null_mask

COUNT_SCHEMA = Schema([int_column("count", "int64")])


def coerce_values(values: np.ndarray, column: Column, what: str) -> np.ndarray:
    """``values`` converted to ``column``'s layout, or a SchemaError saying why they do not fit."""
    values = np.asarray(values)
    kind = values.dtype.kind
    if column.kind == "char":
        if kind == "U":
            values = np.char.encode(values, "utf-8")
            kind = "S"
        if kind != "S":
            raise SchemaError(f"{what}: column {column.name!r} stores text, not {values.dtype}")
        if values.dtype.itemsize > column.width and len(values):
            longest = int(np.strings.str_len(values).max())
            if longest > column.width:
                raise SchemaError(
                    f"{what}: a value for {column.name!r} is {longest} bytes long, "
                    f"but the column holds {column.width}"
                )
        return values.astype(column.numpy_dtype)
    if kind in "SU":
        raise SchemaError(f"{what}: column {column.name!r} stores {column.kind}, not text")
    if kind == "b":
        raise SchemaError(f"{what}: column {column.name!r} stores {column.kind}, not true/false values")
    if column.kind == "float64":
        return values.astype(np.float64)
    if kind == "f":
        raise SchemaError(f"{what}: column {column.name!r} stores {column.kind}, not floats")
    if len(values):
        info = np.iinfo(column.numpy_dtype)
        if values.min() < info.min or values.max() > info.max:
            raise SchemaError(f"{what}: a value for {column.name!r} does not fit in {column.kind}")
    return values.astype(column.numpy_dtype)


def _count_batch(n: int) -> np.ndarray:
    out = np.empty(1, dtype=COUNT_SCHEMA.dtype)
    out["count"] = n
    return out


class _Modify(Operator):
    """Shared shape: do everything on the first ``next``, return the one-row count, then end."""

    def __init__(self, child: Operator, table):
        super().__init__(child)
        self.table = table
        self.schema = COUNT_SCHEMA
        self._done = False

    def _open(self) -> None:
        self._done = False
        super()._open()

    def _next(self) -> np.ndarray | None:
        if self._done:
            return None
        self._done = True
        affected = self._apply()
        self.stats.add("affected", affected)
        return _count_batch(affected)

    def _apply(self) -> int:
        raise NotImplementedError

    def _read_all(self) -> list[np.ndarray]:
        child = self.children[0]
        batches = []
        while (batch := self._pull(child)) is not None:
            batches.append(batch)
        return batches

    def describe(self) -> str:
        name = getattr(self.table, "name", type(self.table).__name__)
        return f"{type(self).__name__}({name})"


def _set_nulls(out: np.ndarray, col, nulls: np.ndarray | None, what: str) -> None:
    """Mark ``nulls`` NULL in ``col`` of ``out``; a NOT NULL column refuses them."""
    if nulls is not None and nulls.any() and not col.nullable:
        raise SchemaError(f"{what}: column {col.name!r} is NOT NULL; it cannot be set to NULL")
    set_null_mask(out, col.name, nulls)


class Insert(_Modify):
    """Insert the child's tuples into ``table`` (columns matched by position)."""

    kind = "insert"

    def __init__(self, child: Operator, table):
        super().__init__(child, table)
        source, target = child.schema.columns, table.schema.columns
        if len(source) != len(target):
            raise SchemaError(
                f"INSERT gives {len(source)} values per row but the table has {len(target)} "
                f"columns ({', '.join(table.schema.names)})"
            )
        self._same_layout = [(c.kind, c.width) for c in source] == [(c.kind, c.width) for c in target] \
            and child.schema.dtype.itemsize == table.schema.dtype.itemsize

    def _apply(self) -> int:
        target = self.table.schema
        converted = []
        for batch in self._read_all():
            if self._same_layout:
                converted.append(np.ascontiguousarray(batch).view(target.dtype))
                continue
            out = target.new_records(len(batch))
            for src, col in zip(self.children[0].schema.columns, target.columns, strict=True):
                out[col.name] = coerce_values(batch[src.name], col, "INSERT")
                set_null_mask(out, col.name, null_mask(batch, src.name))
            converted.append(out)
        if not converted:
            return 0
        records = np.concatenate(converted) if len(converted) > 1 else converted[0]
        insert = getattr(self.table, "insert", None) or self.table.append
        insert(records)
        return len(records)


class Delete(_Modify):
    """Delete the tuples whose record ids (column ``_rid``) the child produces."""

    kind = "delete"

    def __init__(self, child: Operator, table):
        super().__init__(child, table)
        if not child.schema.has_column(RID):
            raise SchemaError(f"DELETE needs the record ids of its input (a {RID!r} column)")

    def _apply(self) -> int:
        batches = self._read_all()
        if not batches:
            return 0
        rids = np.unique(np.concatenate([b[RID] for b in batches]).astype(np.int64))
        return int(self.table.delete(rids))


class Update(_Modify):
    """Set ``assignments`` = {column: expression} in every tuple the child produces (with ``_rid``)."""

    kind = "update"

    def __init__(self, child: Operator, table, assignments: dict[str, Expr]):
        super().__init__(child, table)
        if not assignments:
            raise SchemaError("UPDATE needs at least one column to set")
        if not child.schema.has_column(RID):
            raise SchemaError(f"UPDATE needs the record ids of its input (a {RID!r} column)")
        self.assignments = {table.schema.column(name, "the table").name: expr
                            for name, expr in assignments.items()}
        for col in table.schema.columns:
            if col.name not in self.assignments:
                child.schema.column(col.name, "the UPDATE input")

    def _apply(self) -> int:
        target = self.table.schema
        rids, records = [], []
        for batch in self._read_all():
            out = target.new_records(len(batch))
            for col in target.columns:
                expr = self.assignments.get(col.name)
                if expr is None:
                    source = self.children[0].schema.column(col.name).name
                    out[col.name] = batch[source]
                    set_null_mask(out, col.name, null_mask(batch, source))
                    continue
                values = np.asarray(expr.evaluate(batch))
                if values.ndim == 0:
                    values = np.broadcast_to(values, (len(batch),))
                nulls = expr.null_mask(batch)
                if nulls is not None and nulls.all():  # SET c = NULL: placeholder values
                    values = np.zeros(len(values), dtype=col.numpy_dtype)
                elif nulls is not None:
                    values = np.where(nulls, np.zeros(1, values.dtype)[0], values)
                out[col.name] = coerce_values(values, col, "UPDATE")
                _set_nulls(out, col, nulls, "UPDATE")
            rids.append(batch[RID].astype(np.int64))
            records.append(out)
        if not records:
            return 0
        all_rids = np.concatenate(rids)
        self.table.update(all_rids, np.concatenate(records))
        return len(all_rids)

    def describe(self) -> str:
        sets = ", ".join(f"{c} = {e}" for c, e in self.assignments.items())
        return f"Update({getattr(self.table, 'name', type(self.table).__name__)} SET {sets})"
