"""Projection: compute the output columns of each tuple from the input columns.

Volcano's project iterator (Graefe and Thakkar 1992, Section 2) builds a new record per input
record with a support function. Here each output column is an ``Expr`` (a column reference, a
constant or arithmetic) evaluated on the whole input batch, and the results are stored into a new
batch whose layout comes from ``Expr.output_column``: a column reference keeps its input layout,
integer arithmetic gives int64, division and anything with a float gives float64, a text constant
gives ``char(len)``. An output column is nullable when its expression can be NULL, and the
output's null bitmap is computed with the values.

Simplification: projection does not remove duplicates (SQL's bag semantics; DISTINCT would be
an aggregate over all columns).
"""

from __future__ import annotations

import numpy as np

from minidb.errors import SchemaError
from minidb.exec.expr import Expr
from minidb.exec.iterator import Operator
from minidb.storage.schema import Schema, set_null_mask


class Project(Operator):
    """Output one tuple per input tuple with the columns ``outputs`` = [(name, expr), ...]."""

    kind = "project"

    def __init__(self, child: Operator, outputs: list[tuple[str, Expr]]):
        super().__init__(child)
        if not outputs:
            raise SchemaError("a projection needs at least one output column")
        self.outputs = list(outputs)
        columns = []
        for name, expr in self.outputs:
            try:
                column = expr.output_column(name, child.schema)
                columns.append(column.with_nullable(column.nullable or expr.nullable(child.schema)))
            except NotImplementedError:
                raise SchemaError(
                    f"cannot compute {expr} as output column {name!r}: only columns, constants "
                    "and arithmetic can be projected"
                ) from None
        self.schema = Schema(columns)

    def _next(self) -> np.ndarray | None:
        batch = self._pull(self.children[0])
        if batch is None:
            return None
        out = self.schema.new_records(len(batch))
        for (_, expr), col in zip(self.outputs, self.schema.columns, strict=True):
            out[col.name] = expr.evaluate(batch)
            if col.nullable:
                set_null_mask(out, col.name, expr.null_mask(batch))
        return out

    def describe(self) -> str:
        cols = ", ".join(name if str(e) == name else f"{e} AS {name}" for name, e in self.outputs)
        return f"Project({cols})"
