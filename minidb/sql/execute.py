"""Running one translated statement: build its iterator tree, run it, measure it.

SELECT: the planner's tree is run to the end and its tuples are the result.

INSERT / UPDATE / DELETE: the tuples to change are found by the same access paths as a SELECT
(with their record ids), then *materialized* and checked before anything changes (see
``operators.Materialize``): every new value of an UPDATE is computed and converted to its
column's layout first, so a value that does not fit (text too long, number out of range, a
fraction for an integer column) fails the statement with every table as it was. minidb keeps no
log, so this is statement atomicity by construction, not by recovery; a crash in the middle of a
change is not covered. After the change the buffer pool is flushed, so the statement's counters
include the pages it wrote (force at the end of each statement, which is also what makes a change
survive without a log).

CREATE TABLE t AS SELECT: Gamma's "retrieve into" (Section 4). The result relation must not
exist; the SELECT is run into a ``Store`` over a new heap table, and if the statement fails the
new table's files are simply removed, which is all the recovery Gamma needed for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from minidb.catalog import Table
from minidb.errors import MinidbError, SchemaError
from minidb.exec.expr import Col, Expr
from minidb.exec.iterator import Operator
from minidb.exec.scan import RID, ArrayScan
from minidb.exec.store import Store
from minidb.sql.operators import Materialize
from minidb.sql.planner import Planner
from minidb.sql.translate import (
    CreateTableAsStatement,
    DeleteStatement,
    InsertStatement,
    SelectStatement,
    Statement,
    UpdateStatement,
    coerce,
)
from minidb.storage.schema import Column, Schema, int_column, null_mask, set_null_mask


@dataclass
class Outcome:
    """What running a statement gave: its tuples, its plan and the tuple count for ``rows``."""

    schema: Schema
    records: np.ndarray
    plan: Operator
    rows: int
    kind: str


def run(db, statement: Statement, planner: Planner) -> Outcome:
    """Plan and run ``statement`` against the database ``db``."""
    if isinstance(statement, SelectStatement):
        root = planner.select(statement.query)
        records = root.collect()
        return Outcome(root.schema, records, root, len(records), "select")
    if isinstance(statement, InsertStatement):
        return _insert(db, statement, planner)
    if isinstance(statement, UpdateStatement):
        return _update(db, statement, planner)
    if isinstance(statement, DeleteStatement):
        return _delete(db, statement, planner)
    if isinstance(statement, CreateTableAsStatement):
        return _create_as(db, statement, planner)
    raise MinidbError(f"internal error: no runner for {type(statement).__name__}")


def _count_outcome(root: Operator, count: int, kind: str, records: np.ndarray | None = None) -> Outcome:
    schema = Schema([int_column("count", "int64")])
    if records is None or records.dtype != schema.dtype:
        records = np.array([(count,)], dtype=schema.dtype)
    return Outcome(schema, records, root, int(count), kind)


def _drain_count(root: Operator) -> tuple[int, np.ndarray]:
    out = root.collect()
    if out.dtype.names and "count" in out.dtype.names and len(out):
        return int(out["count"].sum()), out
    stored = root.stats.extra.get("stored")
    return (int(stored) if stored is not None else len(out)), out


# -- INSERT -------------------------------------------------------------------------------------
def _insert(db, st: InsertStatement, planner: Planner) -> Outcome:
    from minidb.exec.modify import Insert

    table = st.table
    if st.records is not None:
        source: Operator = ArrayScan(table.schema, st.records)
    else:
        query_root = planner.select(st.query)
        convert = _converter(table, st.columns, query_root.schema)
        source = Materialize(query_root, convert, table.schema, what=f"checked for {table.name}")
    root = Insert(source, table)
    count, out = _drain_count(root)
    db.buffer.flush()
    return _count_outcome(root, count, "insert", out)


def _converter(table: Table, columns: list[str], source: Schema):
    """A function turning SELECT output (by position) into records of ``table``, checked."""

    def convert(batch: np.ndarray) -> np.ndarray:
        out = table.schema.new_records(len(batch))
        given = {dst.lower() for dst in columns}
        for src, dst in zip(source.names, columns, strict=True):
            nulls = null_mask(batch, src)
            if nulls is not None:
                _refuse_nulls(table, dst, nulls)
                if nulls.all():  # e.g. SELECT NULL: placeholders of no particular type
                    set_null_mask(out, dst, nulls)
                    continue
            out[dst] = coerce(batch[src], table.schema.column(dst), f"INSERT INTO {table.name}")
            set_null_mask(out, dst, nulls)
        for col in table.schema.columns:  # a column left out of INSERT INTO t(a, b) is NULL
            if col.name.lower() not in given:
                out[col.name] = np.zeros(1, dtype=col.numpy_dtype)[0]
                set_null_mask(out, col.name, np.ones(len(batch), dtype=bool))
        return out

    return convert


# -- UPDATE -------------------------------------------------------------------------------------
def _update(db, st: UpdateStatement, planner: Planner) -> Outcome:
    from minidb.exec.modify import Update

    table = st.ref.table
    scan, _, followed = planner.access(table, st.ref.filters, with_rids=True)
    planner.check_hint_followed([followed])
    assignments = dict(st.assignments)

    def check(batch: np.ndarray) -> np.ndarray:
        # compute every new value and convert it to its column now, before any page changes
        for name, e in assignments.items():
            values, _ = _assigned_values(e, batch, table.schema.column(name))
            coerce(values, table.schema.column(name), f"UPDATE {table.name}")
        return batch

    source = Materialize(scan, check, what="rows to update, new values checked")
    root = Update(source, table, assignments)
    count, out = _drain_count(root)
    db.buffer.flush()
    return _count_outcome(root, count, "update", out)


def new_records(table: Table, batch: np.ndarray, assignments: dict) -> tuple[np.ndarray, np.ndarray]:
    """(record ids, full new records) of an UPDATE over ``batch`` (records + ``_rid``)."""
    records = table.schema.gather(batch)
    if records is batch:
        records = batch.copy()
    for name, e in assignments.items():
        values, nulls = _assigned_values(e, batch, table.schema.column(name))
        if nulls is not None and nulls.any():
            if not table.schema.column(name).nullable:
                raise SchemaError(f"UPDATE {table.name}: column {name!r} is NOT NULL; it cannot be set to NULL")
        records[name] = coerce(values, table.schema.column(name), f"UPDATE {table.name}")
        set_null_mask(records, name, nulls)
    return np.asarray(batch[RID], dtype=np.int64), records


def _assigned_values(e: Expr, batch: np.ndarray, column: Column) -> tuple[np.ndarray, np.ndarray | None]:
    """The values ``SET column = e`` gives the rows of ``batch``, NULLs stored as zeros of the
    column's layout, and the null mask. With no rows at all the placeholders are replaced too:
    ``SET s = NULL`` evaluates to int64 zeros, which a text column would refuse even when the
    WHERE clause matches nothing."""
    values = np.asarray(e.evaluate(batch))
    if values.ndim == 0:
        values = np.broadcast_to(values, (len(batch),))
    nulls = e.null_mask(batch)
    if nulls is not None and (nulls.any() or not len(batch)):
        values = _zero_where(nulls, values, column)
    return values, nulls


def _refuse_nulls(table: Table, column: str, nulls: np.ndarray) -> None:
    if nulls.any() and not table.schema.column(column).nullable:
        raise SchemaError(f"INSERT INTO {table.name}: column {column!r} is NOT NULL and the "
                          "SELECT gives NULL for it")


def _zero_where(nulls: np.ndarray, values: np.ndarray, column) -> np.ndarray:
    """``values`` with the zero of ``column``'s layout where ``nulls`` (NULL stores zero bytes)."""
    if nulls.all():  # e.g. SET c = NULL: the values are placeholders of no particular type
        return np.zeros(len(values), dtype=column.numpy_dtype)
    return np.where(nulls, np.zeros(1, values.dtype)[0], values)


# -- DELETE -------------------------------------------------------------------------------------
def _delete(db, st: DeleteStatement, planner: Planner) -> Outcome:
    from minidb.exec.modify import Delete

    table = st.ref.table
    scan, _, followed = planner.access(table, st.ref.filters, with_rids=True)
    planner.check_hint_followed([followed])
    root = Delete(Materialize(scan, what="rows to delete"), table)
    count, out = _drain_count(root)
    db.buffer.flush()
    return _count_outcome(root, count, "delete", out)


# -- CREATE TABLE AS SELECT ---------------------------------------------------------------------
def _create_as(db, st: CreateTableAsStatement, planner: Planner) -> Outcome:
    query_root = planner.select(st.query)
    columns = [c for c in query_root.schema.columns if c.name != RID]
    schema = Schema(columns)
    if len(columns) != len(query_root.schema.columns):
        from minidb.exec.project import Project

        query_root = Project(query_root, [(c.name, Col(c.name)) for c in columns])
    table = Table.create(db.disk, db.buffer, st.name, schema, np.empty(0, dtype=schema.dtype))
    root = Store(query_root, table)
    try:
        count, _ = _drain_count(root)
        db.buffer.flush()
    except BaseException:
        table.drop()
        raise
    db.catalog.add(table)
    return _count_outcome(root, count, "create_table_as")


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start
