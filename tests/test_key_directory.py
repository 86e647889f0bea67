"""The hash join's in-memory table (``minidb/exec/join/key_directory.py``): every pair of equal
keys, in probe order and then build order, for integer keys and for every other key type."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from minidb.exec.join.key_directory import KeyDirectory, _stable_order


def brute_force(build: np.ndarray, probe: np.ndarray) -> list[tuple[int, int]]:
    """(probe position, build position) of every equal pair, probe order then build order."""
    return [(i, j) for i, p in enumerate(probe.tolist()) for j, b in enumerate(build.tolist())
            if p == b]


def pairs(build: np.ndarray, probe: np.ndarray) -> list[tuple[int, int]]:
    directory = KeyDirectory(build, probe.dtype)
    probe_idx, build_idx = directory.matches(probe)
    assert (directory.keys[build_idx] == probe[probe_idx]).all()
    return list(zip(probe_idx.tolist(), directory.order[build_idx].tolist(), strict=True))


small_ints = st.integers(-50, 50)
wide_ints = st.integers(-(2**63), 2**63 - 1)
strided = st.integers(-40, 40).map(lambda i: i * 2**40)  # multiples of a power of two


@given(st.lists(st.one_of(small_ints, wide_ints, strided), max_size=60),
       st.lists(st.one_of(small_ints, wide_ints, strided), max_size=60))
@settings(max_examples=200, deadline=None)
def test_integer_keys_are_hashed_and_match_like_brute_force(build, probe):
    b, p = np.array(build, dtype=np.int64), np.array(probe, dtype=np.int64)
    assert KeyDirectory(b, p.dtype).integers
    assert pairs(b, p) == brute_force(b, p)


@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=40),
       st.lists(st.integers(-(2**31), 2**31 - 1), max_size=40))
@settings(max_examples=60, deadline=None)
def test_int32_against_int64_keys(build, probe):
    b, p = np.array(build, dtype=np.int32), np.array(probe + build[:3], dtype=np.int64)
    assert pairs(b, p) == brute_force(b, p)


@given(st.lists(st.sampled_from([-1.5, -0.0, 0.0, 2.0, 1e300]), max_size=30),
       st.lists(st.sampled_from([-1.5, 0.0, 2.0, 7.0]), max_size=30))
@settings(max_examples=60, deadline=None)
def test_float_keys_hash_by_value(build, probe):
    b, p = np.array(build, dtype=np.float64), np.array(probe, dtype=np.float64)
    assert not KeyDirectory(b, p.dtype).integers
    assert pairs(b, p) == brute_force(b, p)


def test_text_keys_and_ints_against_floats_hash_by_value():
    b = np.array([b"ab", b"a", b"ab", b""], dtype="S2")
    p = np.array([b"ab", b"zz", b""], dtype="S3")
    assert pairs(b, p) == brute_force(b, p) == [(0, 0), (0, 2), (2, 3)]
    ints, floats = np.array([1, 2, 2], dtype=np.int64), np.array([2.0, 2.5], dtype=np.float64)
    assert not KeyDirectory(ints, floats.dtype).integers
    assert pairs(ints, floats) == [(0, 1), (0, 2)]


def test_empty_sides():
    empty = np.zeros(0, dtype=np.int64)
    assert pairs(empty, np.array([1, 2])) == [] and pairs(np.array([1, 2]), empty) == []


def test_a_million_distinct_keys_cost_about_one_and_a_half_candidates_a_probe():
    keys = np.random.default_rng(3).permutation(1_000_000)
    directory = KeyDirectory(keys, keys.dtype)
    sizes = np.diff(directory.starts)
    # a probe of a present key scans its bucket: the mean bucket size seen by a key
    assert (sizes**2).sum() / len(keys) < 1.7
    probe_idx, build_idx = directory.matches(keys[:5000])
    assert (directory.order[build_idx] == np.arange(5000)).all()


@given(st.lists(st.integers(0, 2**20), max_size=200))
def test_stable_order_is_a_stable_argsort(buckets):
    b = np.array(buckets, dtype=np.intp)
    assert (_stable_order(b, 21) == np.argsort(b, kind="stable")).all()
