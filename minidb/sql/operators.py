"""Two small iterators only the SQL layer needs: ``Limit`` and ``Materialize``.

``Limit`` passes on the first n tuples of its input and then stops pulling (it closes its input
early, so a scan under it reads no further).

``Materialize`` reads its whole input when it is opened and hands it on as one batch. The
statements that change a table put it between the scan that finds the tuples and the operator
that changes them, for two reasons:

* the scan must not see the changes it causes (an UPDATE that moves tuples to the end of the file
  would otherwise meet them again: the "Halloween problem");
* minidb has no log (Gamma had none either for these operators, Section 8), so a statement is
  atomic *by construction*: every new value is computed and checked (``transform``) before the
  first page changes. If anything is wrong, the statement fails with the table untouched.
  One batch also means one call to ``Table.update`` / ``Table.delete``, whose record ids are all
  valid at that moment (a clustered insert may move other tuples and change their ids).

Simplification: the materialized input lives in memory, not in a temporary file; the statements
that use it touch at most one relation's worth of tuples.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minidb.exec.iterator import Operator
from minidb.storage.schema import Schema


class Limit(Operator):
    """The first ``count`` tuples of the input."""

    kind = "limit"

    def __init__(self, child: Operator, count: int):
        super().__init__(child)
        self.count = int(count)
        self.schema = child.schema
        self._left = self.count

    def _open(self) -> None:
        self._left = self.count
        super()._open()

    def _next(self) -> np.ndarray | None:
        if self._left <= 0:
            return None
        batch = self._pull(self.children[0])
        if batch is None:
            return None
        batch = batch[: self._left]
        self._left -= len(batch)
        return batch

    def describe(self) -> str:
        return f"Limit({self.count})"


class Materialize(Operator):
    """Read the whole input at ``open``, optionally ``transform`` it, and return it as one batch."""

    kind = "materialize"

    def __init__(self, child: Operator, transform: Callable[[np.ndarray], np.ndarray] | None = None,
                 schema: Schema | None = None, what: str = ""):
        super().__init__(child)
        self.transform = transform
        self.schema = schema or child.schema
        self.what = what
        self._batch: np.ndarray | None = None

    def _open(self) -> None:
        super()._open()
        child = self.children[0]
        parts = []
        while (batch := self._pull(child)) is not None:
            parts.append(batch)
        data = np.concatenate(parts) if parts else np.empty(0, dtype=child.schema.dtype)
        if self.transform is not None:
            data = self.transform(data)
        self._batch = data

    def _next(self) -> np.ndarray | None:
        batch, self._batch = self._batch, None
        return batch

    def _close(self) -> None:
        self._batch = None
        super()._close()

    def describe(self) -> str:
        return f"Materialize({self.what})" if self.what else "Materialize"
