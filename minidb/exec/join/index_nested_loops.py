"""Index nested-loops join: each outer tuple looks up its partners through an index.

The joins of the Gamma paper (§6) build hash tables; the Teradata's sort-merge and NonStop SQL's
broadcast strategy are the other classics. NonStop SQL joins a small table sent to every node
with each node's fragment of the large one by a *nested join*: for every tuple of the small
(outer) table, the large (inner) table is searched through its index on the join column
(Englert et al. 1989, "Parallelism in NonStop SQL"). Distributed INGRES's tuple substitution is
the same idea (Stonebraker et al. 1983, §5: one hashed access to EMP per DEPT tuple). The inner
table is never read as a whole: the join costs one index probe per outer tuple plus the pages
those probes touch, which wins when the outer input is small and loses badly when it is not.

Here the inner input is a stored table read where it lies (``IndexLookup``): the planner gives
the join its table, its WHERE terms and the columns the query needs, and the join asks for the
tuples of one key value at a time through whichever keyed structure the table has on the join
column (a B+ tree index, a clustered file, a hash-organized file), exactly as a selection
``WHERE key = value`` would read it. The join's *build* input is that inner table (its operator
is never read); the *probe* input is the outer stream.

Counters: ``index_lookups`` (one per outer tuple with a non-NULL key; priced as ``hash_probe``,
the CPU of a descent), ``fetched_tuples`` (inner tuples the lookups returned; priced as
``index_scan``), ``distinct_keys`` (lookups actually run: an outer batch asks once per distinct
key, so a repeated key hits pages already in the buffer, as a real repeated probe would). The
pages the lookups read are counted by the disk like any index scan's.

A planner picks this join only when the hint ``index_nested_loops`` names it; a join whose inner
table has no keyed structure on the join column, or whose inner input is not a stored table (a
repartitioned stream), is refused with a message that says what would make it possible.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.errors import MinidbError
from minidb.exec.expr import Col, Compare, Const, Expr
from minidb.exec.iterator import Operator
from minidb.exec.join.base import BUILD_DONE, JoinAlgorithm, JoinPluginError
from minidb.plugins import register
from minidb.storage.schema import Schema

#: the keyed structures a lookup can use, cheapest first
KEYED_METHODS = ("hash_lookup", "clustered_index", "index", "dense_index")


class IndexLookup:
    """The inner table of an index nested-loops join: ``fetch(value)`` returns its tuples whose
    ``key`` column equals ``value`` (and that pass ``filters``), projected to ``outputs``
    (``(name, expression)`` pairs, e.g. ``("b.unique2", Col("unique2"))``)."""

    def __init__(self, ctx, table, filters: list[Expr], outputs: list, key: str):
        self.ctx, self.table, self.filters = ctx, table, list(filters)
        self.outputs, self.key = list(outputs), table.schema.column(key).name

    def require_index(self) -> None:
        """Refuse a table without a keyed structure on the join column (checked when the join
        runs, on the table it runs against)."""
        if keyed_path(self.table, self.key, self.filters) is None:
            raise MinidbError(
                f"index_nested_loops needs an index on {self.table.name}.{self.key} (or the table "
                f"hashed or clustered on it); create one with "
                f"create_index({self.table.name!r}, {self.key!r}), or choose another join")

    def as_input(self, schema: Schema) -> InnerTable:
        """The operator that stands for this table as the join's build input."""
        return InnerTable(schema, self)

    def fetch(self, value) -> tuple[np.ndarray, Schema]:
        """The inner tuples of one key value, through the table's keyed structure."""
        from minidb.exec.project import Project
        from minidb.sql.planner import access_operator

        path = keyed_path(self.table, self.key, self.filters, value)
        op = Project(access_operator(self.ctx, self.table, path), self.outputs)
        return op.collect(), op.schema


class InnerTable(Operator):
    """The inner input of an index nested-loops join, as it appears in the plan: a stored table
    that is never scanned (the join reads it through ``IndexLookup.fetch``)."""

    kind = "index_lookup"

    def __init__(self, schema: Schema, lookup: IndexLookup):
        super().__init__()
        self.schema, self.lookup = schema, lookup

    def _next(self) -> np.ndarray | None:
        return None  # never read as a stream

    def describe(self) -> str:
        where = f" where {' and '.join(map(str, self.lookup.filters))}" if self.lookup.filters else ""
        return (f"IndexLookup({self.lookup.table.name} by {self.lookup.key}{where}: one lookup "
                "per outer tuple)")


def keyed_path(table, key: str, filters: list[Expr], value=0):
    """The access path of ``key = value`` through a keyed structure of ``table``, or None."""
    from minidb.sql.planner import candidate_paths

    terms = list(filters) + [Compare("=", Col(key), Const(value))]
    paths = [p for p in candidate_paths(table, terms)
             if p.column is not None and p.column.lower() == key.lower()
             and p.low is not None and _same_value(p.low, p.high) and p.method in KEYED_METHODS]
    return min(paths, key=lambda p: KEYED_METHODS.index(p.method), default=None)


def _same_value(low, high) -> bool:
    """``low == high``, where NaN is the same value as NaN (DuckDB: a NaN key finds NaN keys)."""
    return low == high or (low != low and high != high)


@register("join", "index_nested_loops")
class IndexNestedLoopsJoin(JoinAlgorithm):
    """For every outer (probe) tuple, the inner (build) table's tuples of equal key, through the
    inner table's index (see the module docstring)."""

    kind = "index_nested_loops_join"
    priced_counters = {"index_lookups": "hash_probe", "fetched_tuples": "index_scan"}
    announces_build = True
    #: the planner must give this join its inner table as ``inner`` (an ``IndexLookup``)
    needs_inner_table = True

    @property
    def inner(self) -> IndexLookup | None:
        """The inner table's lookups, when the planner gave an ``InnerTable`` as build input."""
        build = self.children[0]
        return build.lookup if isinstance(build, InnerTable) else None

    def run(self, memory_pages: int) -> Iterator[np.ndarray]:
        if self.inner is None:
            raise JoinPluginError("index_nested_loops joins a stored table through its index: "
                                  "its inner input must be a table read where it lies")
        self.inner.require_index()
        for name in ("index_lookups", "fetched_tuples", "distinct_keys"):
            self.stats.extra.setdefault(name, 0)
        yield BUILD_DONE  # nothing to build: the index is the inner table's "hash table"
        self.note_memory(1)
        for batch in self.probe_batches():
            keys = batch[self.probe_key]
            self.count("index_lookups", len(batch))
            found = []
            for value in np.unique(keys):
                rows, schema = self.inner.fetch(value.item() if hasattr(value, "item") else value)
                self.count("distinct_keys")
                if len(rows):
                    found.append(rows.astype(self.build_schema.dtype, copy=False)
                                 if rows.dtype != self.build_schema.dtype else rows)
            if not found:
                continue
            inner = np.concatenate(found)
            self.count("fetched_tuples", len(inner))
            probe_idx, build_idx = self.equal_pairs(batch, inner)
            yield from self.emit(batch, inner, probe_idx, build_idx)
