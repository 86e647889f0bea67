"""Audit of the single-node storage layer: differential tests of the buffer pool, B+ trees, hash
files and indices, heap files and the external sort against trivial Python models, with
adversarial inputs (tiny pools, NaN keys, duplicates across pages, reopened data directories)."""

from __future__ import annotations

import contextlib
import math
import signal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minidb
from minidb.buffer import BufferManager
from minidb.errors import BufferPoolFullError, MinidbError
from minidb.index._util import match_pairs
from minidb.index.btree import BPlusTree
from minidb.index.hashfile import DenseHashIndex
from minidb.storage.disk import Disk

FEW = settings(max_examples=25, deadline=None)


@contextlib.contextmanager
def time_limit(seconds: int):
    """Fail (instead of hanging the run) when the body takes longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"took more than {seconds} s (an endless loop?)")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def make(tmp_path, page_size=2048, frames=8, name="n"):
    disk = Disk(tmp_path / f"node-{name}", page_size)
    return disk, BufferManager(disk, frames)


def as_model(keys, values) -> list[tuple]:
    """(key, value) pairs in a canonical order; a NaN key as (1, 0) so that NaNs compare equal."""
    return sorted((((1, 0.0) if math.isnan(k) else (0, float(k) + 0.0)), int(v))
                  for k, v in zip(np.asarray(keys).tolist(), np.asarray(values).tolist(), strict=True))


def tree_pairs(tree: BPlusTree) -> list[tuple]:
    parts = list(tree.search_range())
    if not parts:
        return []
    return as_model(np.concatenate([k for k, _ in parts]), np.concatenate([v for _, v in parts]))


# -- NaN keys in index deletes ----------------------------------------------------------------

def test_match_pairs_matches_nan_keys():
    remove, matched = match_pairs(np.array([1.0, np.nan, np.nan]), np.array([1, 2, 3]),
                                  np.array([np.nan]), np.array([3]))
    assert remove.tolist() == [False, False, True]
    assert matched.tolist() == [True]


float_keys = st.lists(st.sampled_from([np.nan, 0.0, -0.0, 1.5, -np.inf, np.inf, 7.0]),
                      min_size=1, max_size=400)


@FEW
@given(keys=float_keys, data=st.data())
def test_btree_delete_nan_keys_matches_model(tmp_path_factory, keys, data):
    """Many NaN duplicates spanning several leaves: every (key, value) pair deleted, present or
    not, leaves exactly the model's entries (the old delete looped for ever on a NaN key)."""
    disk, buf = make(tmp_path_factory.mktemp("bt"), frames=3)
    keys = np.array(keys)
    values = np.arange(len(keys))
    tree = BPlusTree.create(disk, buf, "t", np.float64)
    tree.insert(keys, values)
    pick = data.draw(st.lists(st.integers(0, len(keys) - 1), unique=True, max_size=len(keys)))
    dk, dv = keys[pick], values[pick]
    dk = np.concatenate([dk, [np.nan, 1.5]])  # and two pairs that are not there
    dv = np.concatenate([dv, [10**6, 10**6]])
    with time_limit(20):
        removed = tree.delete(dk, dv)
    assert removed == len(pick)
    keep = np.setdiff1d(values, values[pick])
    assert tree_pairs(tree) == as_model(keys[keep], values[keep])
    nan_left = sorted(values[keep][np.isnan(keys[keep])].tolist())
    assert sorted(tree.lookup(np.nan).tolist()) == nan_left
    tree.check()


def test_dense_hash_index_deletes_nan_entry(tmp_path):
    disk, buf = make(tmp_path)
    ix = DenseHashIndex.build(disk, buf, "h", np.array([1.0, np.nan, np.nan]), np.array([1, 2, 3]))
    assert ix.delete(np.array([np.nan]), np.array([2])) == 1
    assert ix.lookup(np.nan).tolist() == [3]
    assert ix.num_entries == 2


@pytest.mark.parametrize("organization", ["heap", "hash"])
def test_sql_delete_on_indexed_float_column_with_nan(organization):
    """DELETE of a row whose indexed float key is NaN ends, and the index forgets the row."""
    db = minidb.connect(buffer_pages=4)
    t = pa.table({"id": pa.array(range(6), pa.int64()),
                  "k": pa.array([1.0, math.nan, math.nan, 2.0, -0.0, 0.0])})
    db.create_table("t", t, organization=organization, key="id" if organization == "hash" else None)
    db.create_index("t", "k")
    with time_limit(20):
        db.sql("DELETE FROM t WHERE id = 1")
    assert db.sql("SELECT id FROM t WHERE k = 'NaN'::DOUBLE").to_pylist() == [(2,)]
    assert sorted(db.sql("SELECT id FROM t WHERE k >= 2").to_pylist()) == [(2,), (3,)]
    db.close()


# -- user mistakes are one-line MinidbErrors --------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"buffer_pages": True},  # a bool is not a frame count (it used to give a 1-frame pool)
    {"buffer_pages": 10**15},  # numpy's MemoryError before
    {"buffer_policy": None},  # TypeError: 'NoneType' object is not callable before
    {"buffer_policy": 3},
])
def test_bad_buffer_arguments_are_minidb_errors(kwargs):
    with pytest.raises(MinidbError, match="buffer_pages|buffer_policy"):
        minidb.connect(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {"organization": "hash", "key": 3},  # AttributeError: 'int' object has no attribute 'lower'
    {"organization": 3, "key": "id"},
])
def test_non_string_organization_or_key_is_a_minidb_error(kwargs):
    db = minidb.connect(buffer_pages=4)
    t = pa.table({"id": pa.array(range(3), pa.int64())})
    with pytest.raises(MinidbError, match="must be"):
        db.create_table("t", t, **kwargs)
    assert "t" not in db.catalog.names()
    db.close()


# -- a failed split leaves no frame pinned -----------------------------------------------------

def test_btree_split_without_a_free_frame_unpins_the_page(tmp_path):
    """A one-frame pool cannot split a leaf (the leaf and the new page need two frames): a clear
    BufferPoolFullError, after which the leaf is unpinned and the tree reads as before. The leaf
    used to stay pinned for good, so every later statement found the pool full."""
    disk, buf = make(tmp_path, frames=1)
    tree = BPlusTree.create(disk, buf, "t", np.int64)
    cap = tree.leaf_capacity
    tree.insert(np.arange(cap), np.arange(cap))  # a full leaf, no split yet
    with pytest.raises(BufferPoolFullError):
        tree.insert(np.array([5]), np.array([99]))
    assert buf.pinned_frames == 0
    assert tree.lookup(5).tolist() == [5]
    assert tree_pairs(tree) == as_model(np.arange(cap), np.arange(cap))
    assert tree.num_entries == cap


def test_failed_insert_in_a_one_frame_pool_does_not_pin_for_good():
    db = minidb.connect(buffer_pages=1, page_size=2048)
    t = pa.table({"id": pa.array(range(600), pa.int64()), "k": pa.array([i % 7 for i in range(600)])})
    db.create_table("t", t)
    db.create_index("t", "k")
    with pytest.raises(BufferPoolFullError):
        db.sql("INSERT INTO t VALUES " + ", ".join(f"({1000 + i}, 3)" for i in range(300)))
    assert db.buffer.pinned_frames == 0
    db.close()


# -- an integer key against a double literal compares as doubles -------------------------------

BIG = 2**63 - 1  # as a double it is 9.223372036854775808e18 = 2**63


@pytest.mark.parametrize("organization,key,index", [
    ("heap", None, "k"), ("clustered", "k", None), ("hash", "id", "k")])
def test_int64_key_against_a_double_literal_matches_the_scan(organization, key, index):
    """DuckDB (and minidb's own scan filter) compare BIGINT with DOUBLE as doubles, so
    ``k = 9.223372036854775808e18`` holds for k = 2**63 - 1 and ``k = 9.007199254740992e15`` for
    k = 2**53 + 1 (DuckDB gives these counts for these DOUBLE literals). The index bounds were
    exact integers (ceil / floor), so an index path missed those rows."""
    db = minidb.connect(buffer_pages=4, page_size=2048)
    ks = [0, 5, BIG, BIG - 1, -BIG - 1, 2**53, 2**53 + 1] * 40
    t = pa.table({"id": pa.array(range(len(ks)), pa.int64()), "k": pa.array(ks, pa.int64())})
    db.create_table("t", t, organization=organization, key=key)
    if index:
        db.create_index("t", index)

    def count(where):
        return db.sql(f"SELECT count(*) FROM t WHERE {where}").to_pylist()[0][0]

    assert count("k = 9.223372036854775808e18") == 80
    assert count("k >= 9.223372036854775808e18") == 80
    assert count("k < 9.223372036854775808e18") == 200
    assert count("k = 9.007199254740992e15") == 80
    assert count("k > 9.007199254740992e15") == 80
    assert count("k BETWEEN 1e0 AND 9.007199254740992e15") == 120
    db.close()


def test_btree_float_bound_on_int_keys_compares_as_doubles(tmp_path):
    disk, buf = make(tmp_path)
    keys = np.array([BIG, BIG - 1, 2**53, 2**53 + 1, 7], dtype=np.int64)
    tree = BPlusTree.bulk_load(disk, buf, "t", keys, np.arange(5))
    found = sorted(int(v) for _, vs in tree.search_range(2.0**63, None) for v in vs)
    assert found == [0, 1]
    found = sorted(int(v) for _, vs in tree.search_range(None, 2.0**53) for v in vs)
    assert found == [2, 3, 4]
