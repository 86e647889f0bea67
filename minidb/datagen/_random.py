"""A counter-based random number generator: the random value of row i is a pure function of i.

An ordinary generator (``numpy.random.default_rng``) produces a *sequence*: to know the value
of row 900,000 you must draw the 899,999 before it. A data generator that builds the partition
of one node at a time cannot afford that, so minidb uses a counter-based scheme instead: the
64 random bits for (seed, stream, counter) are ``mix(key(seed, stream) + counter * GAMMA)``,
where ``mix`` is the SplitMix64 finalizer (Steele, Lea and Flood, "Fast splittable
pseudorandom number generators", OOPSLA 2014). Any row's values can be computed on their own,
in any order, on any node, and the whole relation is the same whichever way it was cut up.

NonStop SQL's benchmark generator used a similar idea to build table partitions in parallel
(Englert et al., cited in the NonStop SQL 1989 paper, Section 4); its exact scheme is not
reproduced here.

A *stream* is a small integer naming one column (or one use) so that two columns of the same
row get independent values. All arithmetic is numpy ``uint64`` and wraps modulo 2**64 on
purpose.
"""

from __future__ import annotations

import numpy as np

from minidb.hashing import mix64

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15  # the golden-ratio increment of SplitMix64


def mix64_int(x: int) -> int:
    """SplitMix64's finalizer on one Python integer (used for keys and seeds)."""
    z = (x + GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def stream_key(seed: int, stream: int) -> int:
    """The 64-bit key of one (seed, stream) pair; different pairs give unrelated keys."""
    return mix64_int(mix64_int(seed & MASK64) ^ (stream & MASK64))


def random_u64(seed: int, stream: int, counters: np.ndarray) -> np.ndarray:
    """64 random bits for each counter (usually a global row number), as a uint64 array."""
    c = np.asarray(counters, dtype=np.uint64)
    z = c * np.uint64(GAMMA)  # wraps modulo 2**64
    z += np.uint64((stream_key(seed, stream) + GAMMA) & MASK64)
    return mix64(z)


def rows(start: int, stop: int) -> np.ndarray:
    """The global row numbers start..stop-1 as a uint64 array (the counters of a slice)."""
    return np.arange(start, stop, dtype=np.uint64)


def uniform_int(seed: int, stream: int, counters: np.ndarray, low: int, high: int) -> np.ndarray:
    """A random integer in [low, high] (both included) for each counter, as int64.

    Uses the top 32 random bits scaled to the range (Lemire's multiply-shift), so the range may
    hold at most 2**32 values; the bias is below 2**-32 * range, far too small to matter here.
    """
    span = high - low + 1
    if not 1 <= span <= 1 << 32:
        raise ValueError(f"uniform_int range [{low}, {high}] must hold 1 to 2**32 values")
    top = random_u64(seed, stream, counters) >> np.uint64(32)
    scaled = (top * np.uint64(span)) >> np.uint64(32)
    return scaled.astype(np.int64) + low


def random_bytes(seed: int, stream: int, counters: np.ndarray, width: int) -> np.ndarray:
    """A (len(counters), width) uint8 matrix of random bytes, each row a function of its counter.

    Each row needs ceil(width / 8) 64-bit draws; draw j of row r uses counter r * words + j, so
    rows stay independent of each other and of how the relation is sliced.
    """
    c = np.asarray(counters, dtype=np.uint64)
    words = -(-width // 8)
    sub = c[:, None] * np.uint64(words) + np.arange(words, dtype=np.uint64)[None, :]
    bits = random_u64(seed, stream, sub).astype("<u8", copy=False)  # fixed byte order
    return bits.view(np.uint8).reshape(len(c), words * 8)[:, :width]


def random_chars(
    seed: int, stream: int, counters: np.ndarray, width: int, first: int, count: int
) -> np.ndarray:
    """A (len(counters), width) uint8 matrix of character codes drawn from first..first+count-1.

    A random byte b becomes ``first + (b * count >> 8)``; with 26 letters the most and least
    frequent letters differ by 1/256 in probability, which is fine for filler text and keys.
    """
    if not 1 <= count <= 256 or not 0 <= first <= 256 - count:
        raise ValueError("random_chars: the codes first..first+count-1 must lie in 0..255")
    scaled = np.multiply(random_bytes(seed, stream, counters, width), count, dtype=np.uint16)
    scaled >>= 8
    out = scaled.astype(np.uint8)
    out += first
    return out
