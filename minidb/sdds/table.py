"""Tables declared ``partition="lh_star(key)"``: a parallel table placed like an LH* file.

The LH* paper stores Monet's tables in LH* files so that a table grows over more servers as it
grows (Sections 3 and 5). Here a table of ``ParallelDatabase`` can be declustered the same way:
its rows live in LH* buckets, bucket ``b`` on disk node ``b mod nodes`` (the logical-to-physical
mapping of Section 3.3), and the coordinator plays LH*'s split coordinator. It holds the file
state ``(i, n)`` and the size of every bucket; when rows make a bucket overflow its
``capacity`` it splits bucket ``n`` (uncontrolled splitting, at most one split per row
admitted), and the rows whose new bucket lives on another node move there
(``ParallelDatabase``'s INSERT runs a "rehome" phase).

Written ``lh_star(key)`` (capacity 1,000 rows per bucket) or ``lh_star(key: 200)``. The key
must be an integer column; it is hashed as the LH* files of ``minidb.sdds`` hash it, so a table
and an ``LHStarFile`` with the same state put a key in the same bucket.

What the coordinator knows of the bucket sizes is what it routed: a split halves its
bucket's count, as the hash spreads a bucket's keys evenly over the two halves, and DELETE is not
subtracted (the file never merges). The counts only decide *when* to split; where a row lives
follows from the file state alone, so every row is always in its bucket's node (the tests check
this against the state after every statement, and the rows against DuckDB).
"""

from __future__ import annotations

import numpy as np

from minidb.errors import PartitioningError
from minidb.hashing import hash_keys
from minidb.parallel.partitioners import Partitioner, _field
from minidb.plugins import register
from minidb.sdds.addressing import FileState
from minidb.sdds.servers import pseudokey

DEFAULT_CAPACITY = 1_000
"""Rows per bucket when the spec gives none."""


@register("partitioner", "lh_star")
class LHStarPartitioner(Partitioner):
    """Rows in LH* buckets on an integer key; buckets on nodes ``address mod nodes``."""

    name = "lh_star"

    def __init__(self, column: str, capacity: int = DEFAULT_CAPACITY) -> None:
        if not isinstance(column, str):
            raise PartitioningError("lh_star needs its key column: write lh_star(key)")
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise PartitioningError(f"an LH* bucket's capacity is a positive number of rows, "
                                    f"not {capacity!r}")
        super().__init__(column)
        self.capacity = capacity
        self.state = FileState(0, 0, 1)
        self.sizes: list[int] = [0]
        """Rows the coordinator has routed to each bucket (see the module docstring)."""
        self.splits = 0

    # -- addressing -----------------------------------------------------------------------------
    def _pseudokeys(self, batch: np.ndarray) -> np.ndarray:
        keys = batch[_field(batch, self.column)]
        if keys.dtype.kind not in "iu":
            raise PartitioningError(f"lh_star keys are integers; column {self.column!r} holds "
                                    f"{keys.dtype}")
        return hash_keys(keys)

    def addresses(self, batch: np.ndarray) -> np.ndarray:
        """The bucket of every row under the current file state (LH*'s h_i, then h_(i+1) for
        the buckets already split this round)."""
        c = self._pseudokeys(batch)
        low = np.uint64(self.state.n0 << self.state.level)
        a = c % low
        split = a < np.uint64(self.state.split)
        a[split] = c[split] % (low * np.uint64(2))
        return a.astype(np.int64)

    def route(self, batch: np.ndarray) -> np.ndarray:
        return self.addresses(batch) % self._nodes()

    def nodes_for_range(self, low, high):
        """One node for an exact match on the key; otherwise all (None)."""
        if low is None or high is None or low != high or isinstance(low, bool):
            return None
        if isinstance(low, float) and low.is_integer():
            low = int(low)
        if not isinstance(low, int) or not -(1 << 63) <= low < 1 << 63:
            return None
        return [self.state.address(pseudokey(low)) % self._nodes()]

    # -- growth ---------------------------------------------------------------------------------
    def fit(self, batch: np.ndarray | None, num_nodes: int) -> None:
        """Set the number of nodes; rows given here are admitted (a bulk load grows the file
        to its final state before routing, which places every row where row-by-row inserts
        with their splits would have left it)."""
        super().fit(None, num_nodes)
        if batch is not None and len(batch):
            self.grow(batch)

    def grow(self, batch: np.ndarray) -> list[int]:
        """Admit ``batch``: count its rows into their buckets and split while a bucket holds more
        than ``capacity``, at most once per row admitted (a collision per insert, one split per
        collision, as in LH*): rows of one key never part, so without that bound a key repeated
        beyond a bucket's capacity made the file double again and again (every insert of it
        "overflowed" a bucket that the halved count said had room). A bucket left over its
        capacity splits on at the next admission. Returns the nodes whose stored rows may now
        belong to another node (the sources of the buckets split across nodes), for the caller
        to rehome."""
        if not len(batch):
            return []
        counts = np.bincount(self.addresses(batch), minlength=self.state.buckets)
        for a, k in enumerate(counts.tolist()):
            self.sizes[a] += k
        sources = set()
        nodes = self._nodes()
        # buckets over capacity, kept up to date split by split (not max() over every bucket
        # per split, which made a load of n rows into small buckets take time n**2)
        over = sum(size > self.capacity for size in self.sizes)
        allowed = len(batch)
        while over and allowed:
            allowed -= 1
            old, new = self.state.split, self.state.split + (self.state.n0 << self.state.level)
            moving = self.sizes[old] // 2
            over -= self.sizes[old] > self.capacity
            self.sizes[old] -= moving
            self.sizes.append(moving)
            over += (self.sizes[old] > self.capacity) + (moving > self.capacity)
            self.state = self.state.after_split()
            self.splits += 1
            if old % nodes != new % nodes:
                sources.add(old % nodes)
        return sorted(sources)

    def describe(self) -> str:
        return f"lh_star({self.column})"

    def explain_state(self) -> str:
        """One line: the file state, buckets and splits so far."""
        return (f"lh_star({self.column}): i={self.state.level}, n={self.state.split}, "
                f"{self.state.buckets} buckets of {self.capacity} rows, {self.splits} splits")

    @classmethod
    def from_spec(cls, columns, values, schema):
        if len(columns) != 1 or (values is not None and len(values) != 1):
            raise PartitioningError("lh_star takes its key column and optionally a bucket "
                                    "capacity: write lh_star(key) or lh_star(key: 200)")
        column = schema.column(columns[0], "the partitioned relation")
        if column.numpy_dtype.kind not in "iu":
            raise PartitioningError(f"lh_star keys are integers; column {column.name!r} is "
                                    f"{column.numpy_dtype}")
        if values is None:
            return cls(column.name)
        capacity = values[0]
        if isinstance(capacity, float) and capacity.is_integer():
            capacity = int(capacity)
        return cls(column.name, capacity)
