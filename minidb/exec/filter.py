"""Selection: pass on the tuples of the input that satisfy a predicate.

The filter iterator of Volcano (Graefe and Thakkar 1992, Section 2): ``open`` opens the input,
``next`` pulls input until some tuple qualifies and returns those, ``close`` closes the input.
The predicate is a support function in Volcano's terms; here it is an ``Expr`` tree evaluated on
a whole batch (one numpy comparison per column, not a call per tuple), and a batch in which no
tuple qualifies is skipped rather than returned empty.

The predicate follows SQL's three-valued logic: a tuple qualifies only where it is TRUE, so a
comparison with NULL (which is NULL, "unknown") drops the tuple (see ``exec/expr.py``).
"""

from __future__ import annotations

import numpy as np

from minidb.exec.expr import Expr
from minidb.exec.iterator import Operator
from minidb.exec.scan import apply_predicate
from minidb.storage.schema import take_records


class Filter(Operator):
    """Keep the input tuples for which ``predicate`` is true."""

    kind = "filter"

    def __init__(self, child: Operator, predicate: Expr):
        super().__init__(child)
        self.predicate = predicate
        self.schema = child.schema

    def _next(self) -> np.ndarray | None:
        child = self.children[0]
        while (batch := self._pull(child)) is not None:
            kept = take_records(batch, apply_predicate(self.predicate, batch))
            if len(kept):
                return kept
        return None

    def describe(self) -> str:
        return f"Filter({self.predicate})"
