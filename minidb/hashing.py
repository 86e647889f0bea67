"""Stable 64-bit hashing of numpy columns, shared by every part of minidb that hashes.

Hash partitioning (Gamma's hashed declustering, spilled aggregate partitions), the Teradata
hash-organized files and the counter-based random generator all need a hash that is the same in
every process and every run, so Python's own ``hash`` (randomized per process) will not do.

The building block is the finalizer of SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): xor-shift,
multiply, xor-shift, multiply, xor-shift. It spreads every input bit over the whole 64-bit word,
so the low bits that pick a bucket or a node depend on all of the key. All arithmetic is numpy
``uint64`` and wraps modulo 2**64 on purpose.
"""

from __future__ import annotations

import numpy as np

from minidb.errors import MinidbError

GOLDEN = 0x9E3779B97F4A7C15  # 2**64 / golden ratio, SplitMix64's increment
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_NAN_BITS = np.array([np.nan]).view(np.uint64)[0]


def mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on a uint64 array (a new array)."""
    z = z ^ (z >> np.uint64(30))
    z = z * _M1
    z = z ^ (z >> np.uint64(27))
    z = z * _M2
    return z ^ (z >> np.uint64(31))


def hash_keys(keys: np.ndarray) -> np.ndarray:
    """A stable 64-bit hash of each key of one column.

    Integers are widened to int64 (so int32 and int64 columns hash alike); floats hash their bits
    (with -0.0 folded into 0.0, and every NaN given the same bits); bytes go through FNV-1a one byte column at a time. The result
    then goes through ``mix64``.
    """
    keys = np.asarray(keys)
    if keys.dtype.kind in "iub":
        x = keys.astype(np.int64).view(np.uint64)
    elif keys.dtype.kind == "f":
        f = keys.astype(np.float64) + 0.0
        x = f.view(np.uint64)
        if f.size and np.isnan(f.max()):  # every NaN alike: NaN = NaN in DuckDB
            x[np.isnan(f)] = _NAN_BITS
    elif keys.dtype.kind == "S":
        width = keys.dtype.itemsize
        cols = np.ascontiguousarray(keys).view(np.uint8).reshape(len(keys), width)
        x = np.full(len(keys), _FNV_OFFSET, dtype=np.uint64)
        for j in range(width):
            x ^= cols[:, j]
            x *= _FNV_PRIME
    else:
        raise MinidbError(f"cannot hash keys of type {keys.dtype}")
    return mix64(x + np.uint64(GOLDEN))


def hash_columns(batch: np.ndarray, names: list[str], seed: int = 0) -> np.ndarray:
    """A 64-bit hash of the values of ``names`` in each row (several columns, seedable).

    Different seeds give unrelated hashes of the same rows, which is what re-partitioning a
    partition that is still too big needs.

    Equal values hash alike whatever their column's type, because the two sides of a parallel
    join route their tuples with this function and SQL joins ``int = float`` and ``char(9) =
    char(5)`` by value:

    * numbers hash by value (``canonical_number_bits``): 5 (int32), 5 (int64) and 5.0 give the
      same hash;
    * text hashes only up to its last non-NUL byte, so ``'abc'`` in char(5) and in char(9) agree.
    """
    n = len(batch)
    h = np.full(n, (GOLDEN * (seed + 1)) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
    for name in names:
        h = _mix_column(h, batch[name])
    return h


def hash_column(col: np.ndarray, seed: int = 0) -> np.ndarray:
    """``hash_columns`` of one plain column (not a structured batch): equal values, whatever
    their numpy type, hash alike."""
    col = np.asarray(col)
    h = np.full(len(col), (GOLDEN * (seed + 1)) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
    return _mix_column(h, col)


def _mix_column(h: np.ndarray, col: np.ndarray) -> np.ndarray:
    if col.dtype.kind == "S":
        return _mix_text(h, col)
    return mix64(h ^ canonical_number_bits(col))


_EXACT_INT = 2**53  # every integer up to this magnitude is exactly a float64


def canonical_number_bits(col: np.ndarray) -> np.ndarray:
    """64 bits per number that depend on its value only, not on its numpy type.

    A number is taken as the float64 SQL compares it as (an int with a float is compared as a
    double in DuckDB and in numpy); a whole float64 within int64's range gives the bits of that
    int64, any other float its IEEE bits (with -0.0 folded into 0.0, and every NaN given the same
    bits). Integers up to 2**53 in magnitude are exact doubles, so the common case needs no
    conversion at all.
    """
    col = np.asarray(col)
    if col.dtype.kind in "iub":
        ints = col.astype(np.int64)
        if len(ints) == 0 or (int(ints.min()) >= -_EXACT_INT and int(ints.max()) <= _EXACT_INT):
            return ints.view(np.uint64)
        col = ints
    f = col.astype(np.float64) + 0.0
    with np.errstate(invalid="ignore"):
        whole = (np.floor(f) == f) & (np.abs(f) < 2.0**63)
    bits = f.view(np.uint64).copy()
    bits[whole] = f[whole].astype(np.int64).view(np.uint64)
    bits[np.isnan(f)] = _NAN_BITS  # every NaN alike (0/0 may set the sign bit): one group
    return bits


def _mix_text(h: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Mix fixed-width text into ``h`` 8 bytes at a time, up to the last non-NUL byte, then its
    length in words (so ``('', 'x')`` and ``('x', '')`` differ)."""
    n, width = len(col), col.dtype.itemsize
    words = -(-width // 8)
    raw = np.zeros((n, words * 8), dtype=np.uint8)
    raw[:, :width] = np.ascontiguousarray(col).view(np.uint8).reshape(n, width)
    nonzero = raw != 0
    length = np.where(nonzero.any(axis=1), words * 8 - np.argmax(nonzero[:, ::-1], axis=1), 0)
    used = -(-length // 8)
    for j, w in enumerate(raw.view("<u8").T):
        h = np.where(used > j, mix64(h ^ w), h)
    return mix64(h ^ used.astype(np.uint64))
