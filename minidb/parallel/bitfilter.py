"""Bit-vector filters on a parallel join's split tables (DeWitt et al. 1988, Section 2).

Gamma puts an array of bit-vector filters into the split table of the operators that produce
the outer (probe) relation of a join. Each join process sets one bit per inner (build) tuple,
at a hash of its join value, while it builds its hash table; when the build is done it sends
its filter to the scheduler, which, once it has every site's filter, hands the whole array to
the producers of the probe relation. A producer routes a tuple to its join site as before, but
first looks up the tuple's bit in *that site's* filter: a clear bit means no build tuple at the
site has that join value, so the tuple cannot join and is dropped instead of being sent.

A filter never drops a tuple that would join (every build value set its bit); it lets some
non-joining tuples through (two values sharing a bit: false positives). So the probe tuples
sent are at least the ones that join and at most all of them.

Here:

* ``BitFilter``: ``bits`` bits, set and tested at ``hash_column(value, seed=FILTER_SEED) %
  bits``. Values hash by value (``minidb.hashing``), so an int key finds a float build value.
* ``BuildBitFilter``: an operator between a join's build input and the join; it passes every
  tuple on and sets its bit (a NULL key sets none: it joins nothing); it counts the filter's
  ``bit_filter_bits`` and ``bit_filter_bits_set``.
* ``ApplyBitFilters``: the test a probe producer runs before its split table; it counts the
  tuples it tested (``tuples_in``) and ``bit_filter_eliminated``.

The filter size is not given in the paper. minidb sizes a site's filter to one network packet
(``8 * packet_bytes`` bits), so sending it to the scheduler is one message: this is our choice,
stated here, not Gamma's figure.
"""

from __future__ import annotations

import numpy as np

from minidb.exec.iterator import Operator
from minidb.hashing import hash_column
from minidb.storage.schema import null_mask, take_records

FILTER_SEED = 77  # a hash unrelated to the split tables' routing hash (seed 0)


class BitFilter:
    """A bit vector of ``bits`` bits over join values."""

    def __init__(self, bits: int, words: np.ndarray | None = None):
        if bits < 1:
            raise ValueError(f"a bit filter needs at least one bit, not {bits}")
        self.bits = int(bits)
        self.words = np.zeros((bits + 7) // 8, dtype=np.uint8) if words is None else words

    def _positions(self, values: np.ndarray) -> np.ndarray:
        return (hash_column(values, seed=FILTER_SEED) % np.uint64(self.bits)).astype(np.int64)

    def add(self, values: np.ndarray) -> None:
        """Set the bit of each value."""
        if len(values):
            pos = self._positions(values)
            np.bitwise_or.at(self.words, pos >> 3, (1 << (pos & 7)).astype(np.uint8))

    def might_contain(self, values: np.ndarray) -> np.ndarray:
        """True where the value's bit is set (it may join), False where it cannot join."""
        if not len(values):
            return np.zeros(0, dtype=bool)
        pos = self._positions(values)
        return (self.words[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1 == 1

    def fill(self) -> float:
        """The fraction of bits set (about the false-positive rate of a non-joining value)."""
        return float(np.unpackbits(self.words)[:self.bits].mean())

    def __repr__(self) -> str:
        return f"BitFilter({self.bits} bits, {self.fill():.0%} set)"


class BuildBitFilter(Operator):
    """Pass the build input of a join through, setting the bit of each tuple's ``key``."""

    kind = "build_bit_filter"

    def __init__(self, child: Operator, key: str, bits: int):
        super().__init__(child)
        self.schema = child.schema
        self.key = child.schema.column(key).name
        self.filter = BitFilter(bits)

    def _next(self) -> np.ndarray | None:
        batch = self._pull(self.children[0])
        if batch is not None and len(batch):
            keys = batch[self.key]
            if (nulls := null_mask(batch, self.key)) is not None:
                keys = keys[~nulls]
            self.filter.add(keys)
        return batch

    def _close(self) -> None:
        self.stats.extra["bit_filter_bits"] = self.filter.bits
        self.stats.extra["bit_filter_bits_set"] = int(np.unpackbits(self.filter.words).sum())
        super()._close()

    def describe(self) -> str:
        return f"BuildBitFilter({self.key}, {self.filter.bits} bits)"


class ApplyBitFilters(Operator):
    """At a producer of the probe relation: drop each tuple whose bit is clear in the filter
    of the site it is routed to (``partitioner.route`` gives the site's position). A NULL key
    joins nothing and is dropped too."""

    kind = "apply_bit_filters"

    def __init__(self, child: Operator, key: str, partitioner, filters: list[BitFilter]):
        super().__init__(child)
        self.schema = child.schema
        self.key = child.schema.column(key).name
        self.partitioner, self.filters = partitioner, filters

    def _open(self) -> None:
        super()._open()
        self.stats.extra.setdefault("bit_filter_eliminated", 0)

    def _next(self) -> np.ndarray | None:
        while True:
            batch = self._pull(self.children[0])
            if batch is None or not len(batch):
                return batch
            where = self.partitioner.route(batch)
            keep = np.zeros(len(batch), dtype=bool)
            for site, f in enumerate(self.filters):
                at = where == site
                if at.any():
                    keep[at] = f.might_contain(batch[self.key][at])
            if (nulls := null_mask(batch, self.key)) is not None:
                keep &= ~nulls
            self.stats.add("bit_filter_eliminated", int((~keep).sum()))
            if keep.any():
                return take_records(batch, keep)

    def describe(self) -> str:
        return f"ApplyBitFilters({self.key}, {len(self.filters)} sites)"


__all__ = ["ApplyBitFilters", "BitFilter", "BuildBitFilter", "FILTER_SEED"]
