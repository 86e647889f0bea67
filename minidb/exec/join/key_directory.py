"""The in-memory hash table of a hash join's build input: which build tuples a probe key matches.

Gamma's join (Section 6) enters the building relation into a main-memory hash table and looks
each probing tuple up in it. Here the table is a bucket array: every build key goes to bucket
``hash(key)`` of ``2**bits`` buckets (at least two buckets a key: a load factor of 1/2), the
tuples are stored bucket after bucket (in build order within a bucket), and
``starts[b] .. starts[b + 1]`` are bucket b's tuples (a running count of the bucket sizes: a
counting sort on the bucket number, the way a radix-partitioned hash table is laid out, not a
sort on the keys). A probe batch hashes its keys, expands every probe tuple to the tuples of its
bucket (``np.repeat``), and keeps the candidates whose key is equal: about 1.5 candidates a
probe and two random reads, with no Python step per tuple. ``chain_lengths`` are the bucket
sizes (what a chained hash table would walk).

The hash depends on the keys:

* integer keys on both sides (the common case: Wisconsin's unique1, unique2, ...): Knuth's
  multiplicative hash (the key times 2**64 divided by the golden ratio, top ``bits`` bits), which
  spreads strided keys (multiples of a power of two) too;
* any other key (text, floating point, integers against floats): ``minidb.hashing.hash_column``,
  under which equal values hash alike whatever their numpy type (5, 5.0; ``'ab'`` in char(2)
  and in char(3)), then the top ``bits`` bits.

Keys are equal as SQL's ``=`` says, in DuckDB's NaN ordering (``minidb.exec.expr.compare``): a
NaN key matches a NaN key (every NaN hashes alike, ``canonical_number_bits``).

Pairs come out in the same order either way: for each probe tuple, in probe order, its matching
build tuples in build order. Counted work (pages, tuples, matches) is the join's, not the
directory's: the modeled clock does not see which hash was used.
"""

from __future__ import annotations

import numpy as np

from minidb.exec.expr import compare
from minidb.hashing import hash_column

#: Knuth's multiplier: 2**64 divided by the golden ratio, odd
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _hashable(dtype: np.dtype) -> bool:
    """Integer keys up to 64 bits that int64 holds exactly (not uint64)."""
    return np.issubdtype(dtype, np.integer) and dtype != np.dtype(np.uint64)


def _bucket(keys: np.ndarray, bits: int, integers: bool) -> np.ndarray:
    """The bucket of every key: the top ``bits`` bits of ``key * _GOLDEN`` (mod 2**64) for
    integer keys, of ``hash_column(key)`` for any other."""
    spread = keys.astype(np.int64).view(np.uint64) * _GOLDEN if integers else hash_column(keys)
    return (spread >> np.uint64(64 - bits)).astype(np.intp)


class KeyDirectory:
    """Where the matches of a probe key are among the build tuples (see the module docstring).

    ``order`` is the permutation to apply to the build table (``table[order]``) so that the
    positions ``matches`` returns index it."""

    def __init__(self, keys: np.ndarray, probe_dtype: np.dtype):
        self.integers = _hashable(keys.dtype) and _hashable(np.dtype(probe_dtype))
        self.bits = max(1, int(len(keys)).bit_length() + 1)  # 2**bits >= 2 * len(keys)
        buckets = _bucket(keys, self.bits, self.integers)
        counts = np.bincount(buckets, minlength=1 << self.bits)
        # 4 bytes a bucket while positions fit (about 16 bytes a build tuple)
        small = len(keys) < 2**31
        self.starts = np.zeros(len(counts) + 1, dtype=np.int32 if small else np.intp)
        np.cumsum(counts, out=self.starts[1:])
        self.order = _stable_order(buckets, self.bits)
        self.keys = keys[self.order]

    @property
    def chain_lengths(self) -> np.ndarray:
        """Tuples in each bucket (a chained table's chain lengths)."""
        return np.diff(self.starts)

    def matches(self, probe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(probe_index, build_index)`` of every pair with equal keys: probe tuples in order,
        each one's build tuples in build order; build indexes are positions in the reordered
        table."""
        if not len(self.keys) or not len(probe):
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
        bucket = _bucket(probe, self.bits, self.integers)
        first = self.starts[bucket]
        probe_idx, build_idx = _expand(first, self.starts[bucket + 1] - first)
        equal = compare("=", self.keys[build_idx], probe[probe_idx])  # a bucket holds other keys
        return probe_idx[equal], build_idx[equal]


def _stable_order(buckets: np.ndarray, bits: int) -> np.ndarray:
    """``np.argsort(buckets, kind="stable")``, computed as one sort of distinct int64 values
    ``bucket * 2**k + position`` (numpy's vectorized sort: several times faster than a stable
    argsort), when they fit in 63 bits."""
    shift = max(1, int(len(buckets)).bit_length())
    if bits + shift > 63:
        return np.argsort(buckets, kind="stable")
    tagged = np.sort((buckets.astype(np.int64) << shift) | np.arange(len(buckets), dtype=np.int64))
    return (tagged & ((1 << shift) - 1)).astype(np.intp)


def _expand(first: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probe tuple i paired with positions ``first[i] .. first[i] + counts[i] - 1``."""
    total = int(counts.sum())
    probe_idx = np.repeat(np.arange(len(counts)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return probe_idx, np.repeat(first, counts) + offsets
