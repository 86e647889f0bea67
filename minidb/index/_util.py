"""Pieces shared by the index structures: entry pages, key coercion, pair matching, hashing.

An *entry page* holds ``capacity`` fixed-width keys followed by ``capacity`` int64 values, after
the common 16-byte page header (``count`` says how many slots are in use, ``link`` chains pages).
B+ tree leaves and inner pages and the buckets of a dense hash index all use it. The capacity is
``(page_size - header) // (key bytes + 8)``, lowered by one if aligning the value array on 8 bytes
needs the room, so it grows with the page size and shrinks with the key width.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from minidb.errors import MinidbError
from minidb.exec.expr import compare, int_bound_of_double
from minidb.hashing import hash_keys
from minidb.storage.page import HEADER_SIZE

VALUE_DTYPE = np.dtype("<i8")


def _align8(n: int) -> int:
    return (n + 7) & ~7


def key_dtype_of(key_dtype) -> np.dtype:
    """Normalize a key type: little-endian signed integers or floats, or fixed bytes ``S{n}``."""
    dt = np.dtype(key_dtype)
    if dt.kind in "if":
        return dt.newbyteorder("<")
    if dt.kind == "S" and dt.itemsize >= 1:
        return dt
    raise MinidbError(f"an index key must be an integer, float or char(n) column, not {dt}")


def as_keys(keys, dtype: np.dtype) -> np.ndarray:
    """``keys`` as an array of the index's key type; refuses values that would be altered."""
    arr = np.asarray(keys)
    if arr.dtype == dtype:
        return arr
    if arr.size == 0:
        return np.empty(0, dtype=dtype)
    if dtype.kind == "S" and arr.dtype.kind == "U":
        arr = np.char.encode(arr, "utf-8")
    if (dtype.kind == "S") != (arr.dtype.kind == "S"):
        raise MinidbError(f"keys of type {arr.dtype} do not match an index on {dtype}")
    out = arr.astype(dtype)
    if len(out) and not np.array_equal(out, arr):
        raise MinidbError(f"some keys do not fit the index key type {dtype}")
    return out


def min_key(dtype: np.dtype):
    """The smallest value of a key type (used as an 'unbounded below' sentinel)."""
    if dtype.kind == "i":
        return dtype.type(np.iinfo(dtype).min)
    if dtype.kind == "f":
        return dtype.type(-np.inf)
    return np.array(b"", dtype=dtype)[()]


class Bound(NamedTuple):
    value: object  # numpy scalar of the key type, or None for unbounded
    exclusive: bool  # only for char keys given a longer bound
    empty: bool  # no key of this type can satisfy the bound


def coerce_bound(dtype: np.dtype, value, is_low: bool) -> Bound:
    """Turn a query bound (Python or numpy value) into a key-typed inclusive bound.

    Integer keys: a float bound is rounded inward, as an integer compares with a double (see
    ``minidb.exec.expr.int_bound_of_double``); a bound beyond the type's range becomes unbounded
    (or makes the range empty). Char keys: a bound longer than the column is cut; a
    cut low bound becomes exclusive (``'abcdeX'`` excludes the stored ``'abcde'``).
    """
    if value is None:
        return Bound(None, False, False)
    if dtype.kind == "i":
        if isinstance(value, float | np.floating):
            if math.isnan(value):  # NaN is above every integer (DuckDB's order)
                return Bound(None, False, is_low)
            if math.isinf(value):
                return Bound(None, False, (value > 0) == is_low)
            value = int_bound_of_double(float(value), ">=" if is_low else "<=")
        v = int(value)
        info = np.iinfo(dtype)
        if is_low:
            if v < info.min:
                return Bound(None, False, False)
            if v > info.max:
                return Bound(None, False, True)
        else:
            if v > info.max:
                return Bound(None, False, False)
            if v < info.min:
                return Bound(None, False, True)
        return Bound(dtype.type(v), False, False)
    if dtype.kind == "f":
        return Bound(dtype.type(float(value)), False, False)
    if isinstance(value, str):
        value = value.encode("utf-8")
    value = bytes(value)
    n = dtype.itemsize
    if len(value) > n and value[n:].strip(b"\x00"):
        cut = np.array(value[:n], dtype=dtype)[()]
        return Bound(cut, is_low, False)
    return Bound(np.array(value[:n], dtype=dtype)[()], False, False)


def coerce_exact(dtype: np.dtype, value):
    """``value`` as a key of this type, or None when no stored key can equal it."""
    lo = coerce_bound(dtype, value, True)
    hi = coerce_bound(dtype, value, False)
    if lo.empty or hi.empty or lo.value is None or hi.value is None or lo.exclusive:
        return None
    return lo.value if compare("=", lo.value, hi.value) else None  # NaN equals NaN (DuckDB)


def range_mask(keys: np.ndarray, lo: Bound, hi: Bound) -> np.ndarray:
    """Which of ``keys`` lie within the bounds; a NaN key or bound is the largest number, as in
    DuckDB (and in the sorted order of the index's keys)."""
    mask = np.ones(len(keys), dtype=bool)
    if lo.value is not None:
        mask &= compare(">" if lo.exclusive else ">=", keys, lo.value)
    if hi.value is not None:
        mask &= compare("<=", keys, hi.value)
    return mask


def bounds_empty(lo: Bound, hi: Bound) -> bool:
    if lo.empty or hi.empty:
        return True
    if lo.value is None or hi.value is None:
        return False
    return bool(compare(">", lo.value, hi.value)  # NaN the largest, as in ``range_mask``
                or (compare("=", lo.value, hi.value) and lo.exclusive))


class EntryLayout:
    """Where keys and values sit on an entry page for one page size and key type."""

    def __init__(self, page_size: int, key_dtype: np.dtype):
        self.page_size = page_size
        self.key_dtype = key_dtype
        k = key_dtype.itemsize
        cap = (page_size - HEADER_SIZE) // (k + VALUE_DTYPE.itemsize)
        while cap > 0 and _align8(HEADER_SIZE + cap * k) + cap * 8 > page_size:
            cap -= 1
        if cap < 3:
            raise MinidbError(f"a {page_size}-byte page cannot hold index entries of {k}-byte keys")
        self.capacity = cap
        self.key_off = HEADER_SIZE
        self.key_end = HEADER_SIZE + cap * k
        self.val_off = _align8(self.key_end)
        self.val_end = self.val_off + cap * 8

    # -- one page (a 1-D uint8 frame) ---------------------------------------------------------
    def keys(self, page: np.ndarray) -> np.ndarray:
        return page[self.key_off : self.key_end].view(self.key_dtype)

    def values(self, page: np.ndarray) -> np.ndarray:
        return page[self.val_off : self.val_end].view(VALUE_DTYPE)

    def write(self, page: np.ndarray, keys: np.ndarray, values: np.ndarray) -> None:
        n = len(keys)
        self.keys(page)[:n] = keys
        self.values(page)[:n] = values
        set_count(page, n)

    # -- many pages at once (bulk loads) ------------------------------------------------------
    def pack(self, keys: np.ndarray, values: np.ndarray, page_of: np.ndarray, slot_of: np.ndarray,
             npages: int) -> np.ndarray:
        """Pages (without headers) holding entry i at (page_of[i], slot_of[i])."""
        cap = self.capacity
        karr = np.zeros((npages, cap), dtype=self.key_dtype)
        varr = np.zeros((npages, cap), dtype=VALUE_DTYPE)
        karr[page_of, slot_of] = keys
        varr[page_of, slot_of] = values
        pages = np.zeros((npages, self.page_size), dtype=np.uint8)
        pages[:, self.key_off : self.key_end] = karr.view(np.uint8).reshape(npages, -1)
        pages[:, self.val_off : self.val_end] = varr.view(np.uint8).reshape(npages, -1)
        return pages


# -- header fields of one page ----------------------------------------------------------------
def get_count(page: np.ndarray) -> int:
    return int(page[10:12].view("<u2")[0])


def set_count(page: np.ndarray, n: int) -> None:
    page[10:12] = np.array([n], dtype="<u2").view(np.uint8)


def get_link(page: np.ndarray) -> int:
    return int(page[12:16].view("<i4")[0])


def set_link(page: np.ndarray, link: int) -> None:
    page[12:16] = np.array([link], dtype="<i4").view(np.uint8)


def get_kind(page: np.ndarray) -> int:
    return int(page[8:10].view("<u2")[0])


def get_page_no(page: np.ndarray) -> int:
    return int(page[4:8].view("<u4")[0])


def init_header(page: np.ndarray, page_no: int, kind: int, count: int = 0, link: int = -1) -> None:
    """Write a fresh header (checksum left to the disk) on a page obtained from new_page."""
    page[4:8] = np.array([page_no], dtype="<u4").view(np.uint8)
    page[8:10] = np.array([kind], dtype="<u2").view(np.uint8)
    set_count(page, count)
    set_link(page, link)


# -- pairs ------------------------------------------------------------------------------------
def match_pairs(keys: np.ndarray, values: np.ndarray, bkeys: np.ndarray,
                bvalues: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Match (key, value) pairs of a batch against the entries of a page, vectorized.

    Returns ``(remove, matched)``: which page entries to remove and which batch pairs found an
    entry. Each batch pair removes at most one entry (a pair given twice removes two copies).
    Keys are equal as SQL (DuckDB) compares them: a NaN key matches a NaN key, so the entry of
    a row whose key is NaN can be removed (with IEEE ``!=`` it never matched, and a B+ tree
    delete then walked the same leaf for ever).
    """
    n, m = len(keys), len(bkeys)
    if not n or not m:
        return np.zeros(n, dtype=bool), np.zeros(m, dtype=bool)
    allk = np.concatenate([keys, bkeys])
    allv = np.concatenate([values, bvalues])
    tag = np.concatenate([np.zeros(n, np.int8), np.ones(m, np.int8)])
    order = np.lexsort((tag, allv, allk))
    sk, sv, st = allk[order], allv[order], tag[order]
    new = np.ones(n + m, dtype=bool)
    new[1:] = compare("<>", sk[1:], sk[:-1]) | (sv[1:] != sv[:-1])  # NaN = NaN
    gid = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    in_page = np.bincount(gid, weights=(st == 0)).astype(np.int64)
    in_batch = np.bincount(gid, weights=(st == 1)).astype(np.int64)
    take = np.minimum(in_page, in_batch)
    rank = np.arange(n + m) - starts[gid]
    hit = np.where(st == 0, rank < take[gid], (rank - in_page[gid]) < take[gid])
    flags = np.empty(n + m, dtype=bool)
    flags[order] = hit
    return flags[:n], flags[n:]


# -- hashing ----------------------------------------------------------------------------------
def bucket_of(keys: np.ndarray, num_buckets: int) -> np.ndarray:
    return (hash_keys(keys) % np.uint64(num_buckets)).astype(np.int64)


def chain_layout(bucket: np.ndarray, num_buckets: int, capacity: int):
    """Place entries in bucket chains: primary page b for bucket b, overflow pages after them.

    Returns ``(order, page_of, slot_of, counts, links, total_pages)`` where ``order`` sorts the
    entries by bucket and ``page_of`` / ``slot_of`` are for the entries in that order.
    """
    n = len(bucket)
    counts_b = np.bincount(bucket, minlength=num_buckets)
    pages_b = np.maximum(1, -(-counts_b // capacity))
    over_b = pages_b - 1
    over_start = num_buckets + np.cumsum(over_b) - over_b
    total = int(num_buckets + over_b.sum())
    order = np.argsort(bucket, kind="stable")
    sb = bucket[order]
    bstart = np.cumsum(counts_b) - counts_b
    rank = np.arange(n, dtype=np.int64) - bstart[sb]
    k = rank // capacity
    slot_of = rank % capacity
    page_of = np.where(k == 0, sb, over_start[sb] + k - 1)
    counts = np.bincount(page_of, minlength=total)
    links = np.full(total, -1, dtype=np.int64)
    has = over_b > 0
    links[np.flatnonzero(has)] = over_start[has]
    owner = np.repeat(np.arange(num_buckets), over_b)
    overflow = np.arange(num_buckets, total)
    not_last = overflow < over_start[owner] + over_b[owner] - 1
    links[overflow[not_last]] = overflow[not_last] + 1
    return order, page_of, slot_of, counts, links, total
