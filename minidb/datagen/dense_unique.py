"""Dense-unique permutations: the numbers 0..N-1, each exactly once, in scrambled order.

The Wisconsin relation needs key columns (unique1, unique2) that hold every value from 0 to
N-1 once and in no particular order. Shuffling an array of N numbers works, but it needs all N
in memory on one machine. Gray, Sundaresan, Englert, Baclawski and Weinberger ("Quickly
Generating Billion-Record Synthetic Databases", SIGMOD 1994) use number theory instead:

* choose a prime P larger than N and a *primitive root* G modulo P (a number whose powers
  G, G^2, ..., G^(P-1) mod P run through every value 1..P-1 exactly once);
* walk x <- G * x mod P from x = G; skip every x greater than N; emit x - 1.

The walk visits 1..P-1 once each, so the values it keeps are exactly 1..N, and the output is a
permutation of 0..N-1. The (G, P) pairs below are those of the benchmark's generators, as
recorded in the project's docs/facts.md (each P checked prime and each G checked primitive).

Slices. Step e of the walk is simply G^e mod P, so any block of exponents can be computed on
its own with one modular power and a vectorized multiply. Because values above N are skipped,
output position k is *not* exponent k; to produce positions [start, stop) we walk exponent
blocks from e = 1, counting the values kept, until ``stop`` values are kept, and return the
requested part. That is O(stop) work, but vectorized (a million exponents take under 10 ms
on a laptop core), and it makes every slice independent of the others: the concatenation of
slices is the whole permutation, whoever computes them.

Seeds. If G is a primitive root and k is coprime to P - 1 then G^k is a primitive root too, so
a seed picks k (seed 0 on stream 0 keeps k = 1, the published G) and each seed gives a
different permutation. A *stream* number does the same for several columns of one relation
(unique1 and unique2 use streams 0 and 1, so they are unrelated permutations).

Beyond 100,000,000 values the table ends; the module then finds the next prime above N and a
primitive root of it itself (trial division is enough while P < 2**32, which also keeps every
product G * x below 2**64 so numpy's uint64 arithmetic is exact).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from minidb.datagen._common import check_int, check_seed
from minidb.datagen._random import mix64_int, stream_key
from minidb.errors import MinidbError

# (largest N, generator G, prime P), from docs/facts.md, "Dense-unique permutation".
PAIRS: tuple[tuple[int, int, int], ...] = (
    (1_000, 279, 1_009),
    (10_000, 2_969, 10_007),
    (100_000, 21_395, 100_003),
    (1_000_000, 2_107, 1_000_003),
    (10_000_000, 211, 10_000_019),
    (100_000_000, 21, 100_000_007),
)

MAX_N = (1 << 32) - 6  # the largest N whose next prime is still below 2**32 (4294967291)
_BLOCK = 1 << 20  # exponents per vectorized step


# -- number theory on Python ints (small, run once per call) -------------------------------------
def _is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin, exact for every n < 3.3e24."""
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while p * p <= n:
        if n % p == 0:
            factors.append(p)
            while n % p == 0:
                n //= p
        p += 1 if p == 2 else 2
    if n > 1:
        factors.append(n)
    return factors


def is_primitive_root(g: int, p: int) -> bool:
    """True when the powers of g modulo the prime p run through all of 1..p-1."""
    if not 1 <= g < p:
        return False
    if p == 2:
        return g == 1
    return all(pow(g, (p - 1) // q, p) != 1 for q in _prime_factors(p - 1))


@lru_cache(maxsize=64)
def find_pair(n: int) -> tuple[int, int]:
    """(G, P): the benchmark's pair for n up to 1e8, else the next prime above n and its least
    primitive root."""
    for limit, g, p in PAIRS:
        if n <= limit:
            return g, p
    if n > MAX_N:
        raise MinidbError(
            f"dense-unique permutations go up to {MAX_N:,} values, not {n:,}; use fewer rows"
        )
    p = n + 1
    while not _is_prime(p):
        p += 1
    g = 2
    while not is_primitive_root(g, p):
        g += 1
    return g, p


def root_for(n: int, seed: int = 0, stream: int = 0) -> tuple[int, int]:
    """(G', P) for this seed and stream: G' = G^k mod P with gcd(k, P - 1) = 1.

    Seed 0 on stream 0 gives k = 1, i.e. the published generator; every other (seed, stream)
    derives k from a hash, avoiding k = 1 so it never repeats the published order by accident
    (on small primes two seeds can still land on the same k; there are only phi(P - 1) roots).
    """
    g, p = find_pair(n)
    if p <= 3 or (seed == 0 and stream == 0):
        return g, p
    order = p - 1
    k = 2 + mix64_int(stream_key(seed, stream)) % (order - 2)  # k in [2, P-2)
    while math.gcd(k, order) != 1:
        k = k + 1 if k + 1 < order else 2
    return pow(g, k, p), p


# -- vectorized walk ------------------------------------------------------------------------------
@lru_cache(maxsize=16)
def _powers(g: int, p: int, count: int) -> np.ndarray:
    """g^0, g^1, ..., g^(count-1) mod p as a read-only uint64 array (by repeated doubling)."""
    out = np.empty(count, dtype=np.uint64)
    out[0] = 1
    filled, g_filled = 1, g % p  # g_filled = g^filled mod p
    up = np.uint64(p)
    while filled < count:
        m = min(filled, count - filled)
        np.multiply(out[:m], np.uint64(g_filled), out=out[filled : filled + m])
        out[filled : filled + m] %= up
        filled += m
        g_filled = g_filled * g_filled % p
    out.flags.writeable = False
    return out


def walk(n: int, g: int, p: int, start: int, stop: int) -> np.ndarray:
    """Output positions [start, stop) of the walk x <- g*x mod p (x from g), values <= n kept,
    each minus one, as int64."""
    out = np.empty(stop - start, dtype=np.int64)
    if stop <= start:
        return out
    block = min(_BLOCK, p - 1)
    steps = _powers(g, p, block)
    up = np.uint64(p)
    kept = 0  # output positions produced before the current block
    filled = 0
    e0 = 1
    while kept < stop:
        if e0 > p - 1:  # cannot happen for n < p: the walk keeps exactly n values
            raise AssertionError("dense-unique walk ran out of exponents")
        length = min(block, p - e0)
        x = steps[:length] * np.uint64(pow(g, e0, p))
        x %= up
        values = x[x <= np.uint64(n)]
        lo, hi = max(start, kept), min(stop, kept + len(values))
        if lo < hi:
            out[filled : filled + hi - lo] = values[lo - kept : hi - kept]
            filled += hi - lo
        kept += len(values)
        e0 += length
    out -= 1
    return out


def dense_unique(
    n: int, seed: int = 0, start: int = 0, stop: int | None = None, stream: int = 0
) -> np.ndarray:
    """Positions [start, stop) of a permutation of 0..n-1 (int64), fixed by (seed, stream).

    Any slice can be computed on its own; concatenating slices gives the whole permutation.
    """
    n = check_int(n, "dense_unique: n")
    if n < 1:
        raise MinidbError(f"dense_unique: n must be at least 1, got {n}")
    seed, stream = check_seed(seed), check_int(stream, "dense_unique: stream")
    start = check_int(start, "dense_unique: start")
    stop = n if stop is None else check_int(stop, "dense_unique: stop")
    if not 0 <= start <= stop <= n:
        raise MinidbError(
            f"dense_unique: need 0 <= start <= stop <= n, got start={start}, stop={stop}, n={n}"
        )
    g, p = root_for(n, seed, stream)
    return walk(n, g, p, start, stop)
