"""Tests of minidb.index.btree: bulk load, inserts with splits, deletes, range scans, counters."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minidb.buffer import BufferManager
from minidb.index.btree import BPlusTree
from minidb.storage.disk import Disk
from minidb.storage.page import BTREE_INNER, BTREE_LEAF, HEADER_SIZE, headers


def make(tmp_path, page_size=2048, frames=64, name="n"):
    disk = Disk(tmp_path / f"node-{page_size}-{name}", page_size)
    return disk, BufferManager(disk, frames)


def scan_all(tree: BPlusTree, low=None, high=None) -> tuple[np.ndarray, np.ndarray]:
    parts = list(tree.search_range(low, high))
    if not parts:
        return np.empty(0, dtype=tree.key_dtype), np.empty(0, dtype=np.int64)
    return np.concatenate([k for k, _ in parts]), np.concatenate([v for _, v in parts])


def pairs(keys, values) -> list[tuple]:
    return sorted(zip(np.asarray(keys).tolist(), np.asarray(values).tolist(), strict=True))


def expected_fanout(page_size: int, key_bytes: int) -> int:
    cap = (page_size - HEADER_SIZE) // (key_bytes + 8)
    while ((HEADER_SIZE + cap * key_bytes + 7) & ~7) + 8 * cap > page_size:
        cap -= 1
    return cap


# -- bulk load --------------------------------------------------------------------------------
def test_bulk_load_million_keys_fanout_grows_with_page_size(tmp_path):
    n = 1_000_000
    rng = np.random.default_rng(7)
    keys = rng.permutation(n).astype(np.int32)
    values = np.arange(n, dtype=np.int64) * 3
    shape = {}
    for page_size in (2048, 32768):
        disk, buf = make(tmp_path, page_size)
        tree = BPlusTree.bulk_load(disk, buf, "big", keys, values)
        assert tree.fanout == expected_fanout(page_size, 4)
        assert tree.leaf_capacity == expected_fanout(page_size, 4)
        leaves = -(-n // tree.leaf_capacity)
        levels, pages, width = 1, leaves, leaves
        while width > 1:
            width = -(-width // tree.fanout)
            pages += width
            levels += 1
        assert tree.height == levels and tree.num_pages == pages and tree.num_entries == n
        assert buf.counters.writes == pages == disk.io.writes  # one sequential write
        assert disk.io.rand_writes == 1
        tree.check()
        for k in (0, 1, 123_456, n - 1):
            np.testing.assert_array_equal(tree.lookup(k), values[keys == k])
        got_k, got_v = scan_all(tree)
        np.testing.assert_array_equal(got_k, np.arange(n))
        np.testing.assert_array_equal(got_v, values[np.argsort(keys)])
        shape[page_size] = (tree.fanout, tree.height)
        tree.drop()
        disk.close()
    assert shape[2048] == (169, 3)
    assert shape[32768] == (2729, 2)
    assert shape[32768][0] > shape[2048][0] and shape[32768][1] <= shape[2048][1]


def test_bulk_load_writes_correct_headers(tmp_path):
    disk, buf = make(tmp_path)
    keys = np.arange(1000, dtype=np.int64)[::-1]
    tree = BPlusTree.bulk_load(disk, buf, "h", keys, keys * 2, fill=0.5)
    pages = tree.file.read_pages(0, tree.num_pages)  # verifies checksums and page numbers
    h = headers(pages)
    leaves = h[h["kind"] == BTREE_LEAF]
    assert len(leaves) == -(-1000 // (tree.leaf_capacity // 2))
    assert leaves["count"].max() <= tree.leaf_capacity // 2
    assert leaves["count"].sum() == 1000
    np.testing.assert_array_equal(leaves["link"][:-1], np.arange(1, len(leaves)))
    assert leaves["link"][-1] == -1
    assert set(h["kind"][len(leaves):]) == {BTREE_INNER}
    assert tree.root == tree.num_pages - 1
    tree.check()


def test_fanout_depends_on_key_width(tmp_path):
    disk, buf = make(tmp_path, 4096)
    narrow = BPlusTree.create(disk, buf, "a", np.int32)
    wide = BPlusTree.create(disk, buf, "b", "S52")
    assert narrow.fanout == expected_fanout(4096, 4) == 340
    assert wide.fanout == expected_fanout(4096, 52) < narrow.fanout


# -- counted I/O --------------------------------------------------------------------------------
def test_one_percent_range_reads_one_percent_of_leaves_plus_the_path(tmp_path):
    disk, buf = make(tmp_path, 4096, frames=128)
    n = 1_000_000
    keys = np.random.default_rng(3).permutation(n).astype(np.int32)
    tree = BPlusTree.bulk_load(disk, buf, "r", keys, np.arange(n))
    num_leaves = -(-n // tree.leaf_capacity)
    before_b, before_d = buf.counters.snapshot(), disk.io.snapshot()
    got_k, _ = scan_all(tree, 500_000, 509_999)  # 1% of the keys
    used_b, used_d = buf.counters.minus(before_b), disk.io.minus(before_d)
    np.testing.assert_array_equal(got_k, np.arange(500_000, 510_000))
    span = 10_000 / tree.leaf_capacity
    assert int(span) <= used_b.misses - (tree.height - 1) <= int(span) + 2
    assert used_b.misses <= 0.012 * num_leaves + tree.height + 2
    assert used_b.hits == 0 and used_d.reads == used_b.misses
    assert used_d.seq_reads >= int(span) - 1  # consecutive leaves are read sequentially
    # a second descent into the same range finds its pages in the pool
    before_b = buf.counters.snapshot()
    assert len(tree.lookup(505_000)) == 1
    assert buf.counters.minus(before_b).misses == 0


def test_point_lookup_touches_height_pages(tmp_path):
    disk, buf = make(tmp_path, 2048)
    tree = BPlusTree.bulk_load(disk, buf, "p", np.arange(100_000, dtype=np.int32), np.arange(100_000))
    before = buf.counters.snapshot()
    np.testing.assert_array_equal(tree.lookup(54_321), [54_321])
    used = buf.counters.minus(before)
    assert used.hits + used.misses == tree.height


# -- inserts, deletes, duplicates -------------------------------------------------------------
def test_inserts_split_leaves_and_inner_pages_and_grow_the_root(tmp_path):
    disk, buf = make(tmp_path, 2048, frames=32)
    tree = BPlusTree.create(disk, buf, "g", np.int32)
    rng = np.random.default_rng(11)
    all_k, all_v = [], []
    for batch in range(40):
        k = rng.integers(0, 20_000, 1500).astype(np.int32)
        v = np.arange(1500) + batch * 1500
        tree.insert(k, v)
        all_k.append(k)
        all_v.append(v)
    k, v = np.concatenate(all_k), np.concatenate(all_v)
    assert tree.height >= 3  # 60,000 entries at 169 per page need three levels
    tree.check()
    got_k, got_v = scan_all(tree)
    assert pairs(got_k, got_v) == pairs(k, v)
    for q in (0, 5, 19_999, 12_345):
        assert sorted(tree.lookup(q).tolist()) == sorted(v[k == q].tolist())
    got_k, got_v = scan_all(tree, 1000, 1100)
    m = (k >= 1000) & (k <= 1100)
    assert pairs(got_k, got_v) == pairs(k[m], v[m])
    assert np.all(np.diff(got_k) >= 0)


def test_one_key_repeated_across_many_leaves(tmp_path):
    disk, buf = make(tmp_path, 2048, frames=16)
    tree = BPlusTree.bulk_load(disk, buf, "d", np.full(2000, 5, np.int64), np.arange(2000))
    tree.insert(np.array([4, 5, 6] * 300), np.arange(900) + 10_000)
    tree.check()
    assert sorted(tree.lookup(5).tolist()) == list(range(2000)) + list(range(10_001, 10_900, 3))
    # delete pairs spread over the whole run, including some that are absent
    doomed = np.arange(0, 2000, 7)
    assert tree.delete(np.full(len(doomed) + 2, 5), np.append(doomed, [-1, 10_000])) == len(doomed)
    tree.check()
    assert len(tree.lookup(5)) == 2000 + 300 - len(doomed)
    assert len(tree.lookup(4)) == 300 and len(tree.lookup(6)) == 300


def test_delete_everything_leaves_empty_pages_that_still_work(tmp_path):
    disk, buf = make(tmp_path, 2048)
    k = np.arange(5000, dtype=np.int32)
    tree = BPlusTree.bulk_load(disk, buf, "e", k, k)
    pages = tree.num_pages
    assert tree.delete(k, k) == 5000
    assert tree.num_entries == 0 and tree.num_pages == pages  # no merging
    tree.check()
    assert list(tree.search_range()) == [] and len(tree.lookup(10)) == 0
    tree.insert(np.array([3000, 10, 10]), np.array([1, 2, 3]))
    tree.check()
    assert pairs(*scan_all(tree)) == [(10, 2), (10, 3), (3000, 1)]
    assert tree.delete(np.array([10]), np.array([99])) == 0


def test_char_keys_and_bounds(tmp_path):
    disk, buf = make(tmp_path, 2048)
    words = np.array([f"w{i:05d}" for i in range(3000)], dtype="S8")
    tree = BPlusTree.bulk_load(disk, buf, "c", words[::-1], np.arange(3000))
    assert tree.key_dtype == np.dtype("S8")
    np.testing.assert_array_equal(tree.lookup("w00042"), [2999 - 42])
    got_k, _ = scan_all(tree, "w00100", "w00199")
    assert len(got_k) == 100 and got_k[0] == b"w00100"
    got_k, _ = scan_all(tree, "w01000xyzzy", "w01003")  # a longer low bound excludes w01000
    assert got_k.tolist() == [b"w01001", b"w01002", b"w01003"]
    tree.insert(np.array(["a", "zz"]), np.array([-1, -2]))
    tree.check()
    assert scan_all(tree, None, "b")[1].tolist() == [-1]


def test_integer_bounds_outside_the_key_type(tmp_path):
    disk, buf = make(tmp_path, 2048)
    k = np.arange(-50, 50, dtype=np.int32)
    tree = BPlusTree.bulk_load(disk, buf, "i", k, k)
    assert len(scan_all(tree, -(10**12), 10**12)[0]) == 100
    assert len(scan_all(tree, 10**12, None)[0]) == 0
    assert scan_all(tree, 2.5, 5.5)[0].tolist() == [3, 4, 5]
    assert len(scan_all(tree, 10, 5)[0]) == 0
    assert len(tree.lookup(10**12)) == 0 and len(tree.lookup(3.5)) == 0


def test_drop_removes_the_file(tmp_path):
    disk, buf = make(tmp_path)
    tree = BPlusTree.bulk_load(disk, buf, "x", np.arange(10), np.arange(10))
    path = tree.file.path
    assert path.exists()
    tree.drop()
    assert not path.exists()


# -- against an oracle ------------------------------------------------------------------------
@st.composite
def operations(draw):
    kind = draw(st.sampled_from(["int", "bytes"]))
    domain = draw(st.sampled_from([8, 60, 3000]))  # few keys = long runs of duplicates
    ops = draw(st.lists(
        st.one_of(
            st.tuples(st.just("insert"), st.sampled_from([1, 7, 90, 400, 700]), st.integers(0, 2**31)),
            st.tuples(st.just("delete"), st.floats(0, 1), st.integers(0, 2**31)),
            st.tuples(st.just("range"), st.integers(-5, domain + 5), st.integers(0, domain)),
        ),
        min_size=1, max_size=12))
    bulk = draw(st.sampled_from([0, 1, 60, 500, 1500]))
    fill = draw(st.sampled_from([1.0, 0.6]))
    return kind, domain, bulk, fill, ops


def _as_keys(ints: np.ndarray, kind: str) -> np.ndarray:
    if kind == "int":
        return ints.astype(np.int32)
    return np.array([f"k{i:06d}" for i in ints.tolist()], dtype="S7")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=operations())
def test_matches_a_multiset_oracle(tmp_path_factory, case):
    kind, domain, bulk, fill, ops = case
    disk = Disk(tmp_path_factory.mktemp("oracle"), 2048)
    buf = BufferManager(disk, 24)
    rng = np.random.default_rng(bulk)
    ints = rng.integers(0, domain, bulk)
    oracle = Counter(zip(_as_keys(ints, kind).tolist(), range(bulk), strict=True))
    tree = BPlusTree.bulk_load(disk, buf, "o", _as_keys(ints, kind), np.arange(bulk), fill=fill)
    next_value = bulk
    for op, a, b in ops:
        r = np.random.default_rng(b)
        if op == "insert":
            ints = r.integers(0, domain, a)
            keys, values = _as_keys(ints, kind), np.arange(next_value, next_value + a) % 997
            next_value += a
            tree.insert(keys, values)
            oracle.update(zip(keys.tolist(), values.tolist(), strict=True))
        elif op == "delete":
            present = sorted(oracle.elements())
            take = [present[i] for i in r.permutation(len(present))[: int(a * len(present))]]
            junk = [(_as_keys(np.array([i]), kind)[0], 5000) for i in r.integers(0, domain, 3)]
            batch = take + junk
            if not batch:
                continue
            keys = np.array([p[0] for p in batch], dtype=tree.key_dtype)
            values = np.array([p[1] for p in batch], dtype=np.int64)
            expect = sum((Counter(batch) & oracle).values())
            assert tree.delete(keys, values) == expect
            oracle -= Counter(batch)
        else:
            lo, hi = sorted((a, b))
            lo_k, hi_k = _as_keys(np.array([lo, hi]), kind) if lo >= 0 else (None, None)
            got_k, got_v = scan_all(tree, lo_k, hi_k)
            assert np.all(got_k[1:] >= got_k[:-1])
            want = sorted(p for p in oracle.elements()
                          if lo_k is None or lo_k <= p[0] <= hi_k)
            assert pairs(got_k, got_v) == want
    tree.check()
    assert tree.num_entries == sum(oracle.values())
    got = pairs(*scan_all(tree))
    assert got == sorted(oracle.elements())
    if got:
        key = got[len(got) // 2][0]
        assert sorted(tree.lookup(key).tolist()) == sorted(v for k, v in got if k == key)
    disk.close()


@pytest.mark.parametrize("page_size", [2048, 8192])
def test_random_ops_keep_invariants_at_scale(tmp_path, page_size):
    disk, buf = make(tmp_path, page_size, frames=48)
    rng = np.random.default_rng(page_size)
    k = rng.integers(0, 50_000, 40_000)
    v = np.arange(40_000)
    tree = BPlusTree.bulk_load(disk, buf, "s", k, v, fill=0.7)
    live = np.ones(40_000, dtype=bool)
    for _ in range(5):
        extra = rng.integers(0, 50_000, 8_000)
        ev = np.arange(len(v), len(v) + 8_000)
        tree.insert(extra, ev)
        k, v = np.concatenate([k, extra]), np.concatenate([v, ev])
        live = np.append(live, np.ones(8_000, dtype=bool))
        doomed = rng.choice(np.flatnonzero(live), 6_000, replace=False)
        assert tree.delete(k[doomed], v[doomed]) == 6_000
        live[doomed] = False
    tree.check()
    got_k, got_v = scan_all(tree, 10_000, 20_000)
    m = live & (k >= 10_000) & (k <= 20_000)
    assert pairs(got_k, got_v) == pairs(k[m], v[m])
