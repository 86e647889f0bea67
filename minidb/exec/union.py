"""UNION ALL: the tuples of several inputs, one after the other, in one common layout.

The iterator pulls its inputs in order and copies each batch into the output layout by column
*position* (SQL matches the columns of a UNION by position, and names them after the first
SELECT). The layout is the widest of the inputs, column by column (``widen``): integers of
different sizes give the larger one, an integer and a float give float64 (as DuckDB does), and
text columns give the longest width. Text and numbers never meet in one column.

``UNION`` without ALL is this followed by duplicate elimination (a hash aggregation grouping on
every column; see ``minidb.sql.planner``).
"""

from __future__ import annotations

import numpy as np

from minidb.errors import SchemaError
from minidb.exec.iterator import Operator
from minidb.storage.schema import Column, Schema, null_mask, set_null_mask


def widen(layouts: list[Schema], what: str = "UNION ALL") -> Schema:
    """The common layout of ``layouts`` (matched by position, named after the first)."""
    counts = {len(s.columns) for s in layouts}
    if len(counts) != 1:
        sizes = " and ".join(str(len(s.columns)) for s in layouts)
        raise SchemaError(f"{what}: the SELECTs give {sizes} columns; each must give the same number")
    out = []
    for i, first in enumerate(layouts[0].columns):
        column = [s.columns[i] for s in layouts]
        texts = [c.kind == "char" for c in column]
        if any(texts) and not all(texts):
            raise SchemaError(f"{what}: column {i + 1} ({first.name}) is text in one SELECT and a "
                              "number in another; make both text or both numbers")
        if all(texts):
            out.append(Column(first.name, "char", max(c.width for c in column)))
        elif any(c.kind == "float64" for c in column):
            out.append(Column(first.name, "float64", 8))
        else:
            widest = max(column, key=lambda c: c.width)
            out.append(Column(first.name, widest.kind, widest.width))
        out[-1] = out[-1].with_nullable(any(c.nullable for c in column))  # NULL in any input
    return Schema(out)


class UnionAll(Operator):
    """Every tuple of every input, converted to ``widen`` of the inputs' layouts."""

    kind = "union_all"

    def __init__(self, inputs: list[Operator]):
        super().__init__(*inputs)
        self.schema = widen([op.schema for op in inputs])
        self._current = 0

    def _open(self) -> None:
        self._current = 0
        super()._open()

    def _next(self) -> np.ndarray | None:
        while self._current < len(self.children):
            batch = self._pull(self.children[self._current])
            if batch is None:
                self._current += 1
                continue
            out = self.schema.new_records(len(batch))
            sources = self.children[self._current].schema.names
            for target, source in zip(self.schema.names, sources, strict=True):
                out[target] = batch[source]
                set_null_mask(out, target, null_mask(batch, source))
            return out
        return None

    def describe(self) -> str:
        return f"UnionAll({len(self.children)} inputs)"
