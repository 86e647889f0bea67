"""Tests of minidb.index.clustered: key-ordered storage under a sparse B+ tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minidb.buffer import BufferManager
from minidb.index.clustered import ClusteredFile
from minidb.storage.disk import Disk
from minidb.storage.schema import Schema, char_column, int_column

SCHEMA = Schema([int_column("k"), int_column("id", "int64"), char_column("pad", 48)])  # 64 bytes


def make_records(keys, first_id=0) -> np.ndarray:
    out = np.zeros(len(keys), dtype=SCHEMA.dtype)
    out["k"] = keys
    out["id"] = np.arange(first_id, first_id + len(keys))
    out["pad"] = np.char.add(b"row", out["id"].astype("S20"))
    return out


def build(tmp_path, keys, page_size=4096, frames=64, name="c"):
    disk = Disk(tmp_path / f"node-{name}", page_size)
    buf = BufferManager(disk, frames)
    recs = make_records(keys)
    return disk, buf, recs, ClusteredFile.build(disk, buf, name, SCHEMA, recs, "k")


def ranged(cf: ClusteredFile, low=None, high=None):
    parts = list(cf.range_scan(low, high))
    if not parts:
        return np.empty(0, dtype=SCHEMA.dtype), np.empty(0, dtype=np.int64)
    return np.concatenate([r for r, _ in parts]), np.concatenate([i for _, i in parts])


def rid_map(cf: ClusteredFile) -> dict[int, int]:
    """id -> current record id, from a full scan."""
    out = {}
    for recs, rids in cf.scan():
        out.update(zip(recs["id"].tolist(), rids.tolist(), strict=True))
    return out


def assert_range_matches(cf: ClusteredFile, live: np.ndarray, low, high) -> None:
    got, rids = ranged(cf, low, high)
    mask = np.ones(len(live), dtype=bool)
    if low is not None:
        mask &= live["k"] >= low
    if high is not None:
        mask &= live["k"] <= high
    assert sorted(got["id"].tolist()) == sorted(live["id"][mask].tolist()), (low, high)
    assert np.all(np.diff(got["k"]) >= 0)  # in key order
    np.testing.assert_array_equal(cf.fetch(rids), got)


# -- build and range scans --------------------------------------------------------------------
def test_build_stores_the_relation_in_key_order(tmp_path):
    keys = np.random.default_rng(1).integers(0, 10_000, 20_000)
    disk, buf, recs, cf = build(tmp_path, keys)
    assert cf.num_records == 20_000 and cf.key == "k" and cf.schema == SCHEMA
    assert cf.num_pages == -(-20_000 // cf.capacity)
    assert cf.tree.num_entries == cf.num_pages  # sparse: one entry per data page
    cf.tree.check()
    scanned = np.concatenate([r for r, _ in cf.scan()])
    np.testing.assert_array_equal(scanned["k"], np.sort(keys))


@pytest.mark.parametrize("low,high", [(None, None), (100, 199), (0, 0), (5000, 5000), (9_990, None),
                                      (None, 12), (-50, 3), (20_000, 30_000), (7, 3), (2.5, 2.5)])
def test_range_scan_returns_exactly_the_records_in_range(tmp_path, low, high):
    keys = np.random.default_rng(2).integers(0, 10_000, 20_000)
    _, _, recs, cf = build(tmp_path, keys)
    assert_range_matches(cf, recs, low, high)


def test_range_scan_reads_far_fewer_pages_than_a_full_scan(tmp_path):
    n = 100_000
    keys = np.random.default_rng(3).permutation(n)
    disk, buf, recs, cf = build(tmp_path, keys, frames=256)
    before_b, before_d = buf.counters.snapshot(), disk.io.snapshot()
    got, _ = ranged(cf, 40_000, 40_999)  # 1%
    used_b, used_d = buf.counters.minus(before_b), disk.io.minus(before_d)
    np.testing.assert_array_equal(got["k"], np.arange(40_000, 41_000))
    data_pages = -(-1000 // cf.capacity) + 1
    assert used_b.misses <= cf.tree.height + data_pages + 1
    assert used_b.misses * 20 < cf.num_pages
    assert used_d.rand_reads <= cf.tree.height + 1  # the data pages come as one sequential run
    before_b = buf.counters.snapshot()
    assert sum(len(r) for r, _ in cf.scan()) == n
    assert buf.counters.minus(before_b).misses + buf.counters.minus(before_b).hits == cf.num_pages


def test_char_key(tmp_path):
    schema = Schema([char_column("name", 10), int_column("id", "int64")])
    disk = Disk(tmp_path / "n", 2048)
    buf = BufferManager(disk, 32)
    recs = np.zeros(3000, dtype=schema.dtype)
    recs["id"] = np.arange(3000)
    recs["name"] = np.char.add(b"n", (recs["id"] * 7919 % 3000).astype("S6"))
    cf = ClusteredFile.build(disk, buf, "names", schema, recs, "name")
    got = np.concatenate([r for r, _ in cf.range_scan("n100", "n199")])
    want = recs[(recs["name"] >= b"n100") & (recs["name"] <= b"n199")]
    assert sorted(got["id"].tolist()) == sorted(want["id"].tolist())
    new, _, _ = cf.insert(np.array([(b"a", -1), (b"n150x", -2)], dtype=schema.dtype))
    got = np.concatenate([r for r, _ in cf.range_scan(None, "n151")])
    assert {-1, -2} <= set(got["id"].tolist())


# -- inserts, splits, moved records -----------------------------------------------------------
def test_inserts_that_split_pages_report_moved_records(tmp_path):
    keys = np.arange(0, 20_000, 2)  # even keys; inserts of odd keys land between them
    disk, buf, recs, cf = build(tmp_path, keys, frames=32)
    pages_before = cf.num_pages
    live = recs
    next_id = len(recs)
    rng = np.random.default_rng(4)
    for _ in range(6):
        where = rng.integers(0, 20_000, 1)[0]
        new_keys = np.concatenate([rng.integers(where, where + 300, 400), rng.integers(0, 20_000, 100)])
        new = make_records(new_keys, next_id)
        next_id += len(new)
        before = rid_map(cf)
        new_rids, moved_old, moved_new = cf.insert(new)
        after = rid_map(cf)
        np.testing.assert_array_equal(cf.fetch(new_rids), new)
        # fetch(moved_new) are exactly the records that were at moved_old before
        moved = cf.fetch(moved_new)
        assert [before[i] for i in moved["id"].tolist()] == moved_old.tolist()
        # ... and every old record whose id changed is reported, and nothing else
        changed = {i for i, r in before.items() if after[i] != r}
        assert set(moved["id"].tolist()) == changed
        assert len(set(moved_new.tolist())) == len(moved_new)
        live = np.concatenate([live, new])
        cf.tree.check()
        for lo, hi in [(where, where + 299), (None, None), (0, 10), (where - 1000, where)]:
            assert_range_matches(cf, live, lo, hi)
    assert cf.num_pages > pages_before and cf.num_records == len(live)


def test_long_runs_of_equal_keys_split_correctly(tmp_path):
    keys = np.repeat(np.arange(5), 900)  # every key spans several pages
    disk, buf, recs, cf = build(tmp_path, keys, page_size=2048, frames=16)
    live, next_id = recs, len(recs)
    for rnd in range(4):
        new = make_records(np.random.default_rng(rnd).integers(0, 6, 700), next_id)
        next_id += 700
        cf.insert(new)
        live = np.concatenate([live, new])
        cf.tree.check()
        for v in range(7):
            assert_range_matches(cf, live, v, v)
        assert_range_matches(cf, live, 1, 3)


def test_delete_and_update_in_place(tmp_path):
    keys = np.random.default_rng(5).integers(0, 1000, 5000)
    disk, buf, recs, cf = build(tmp_path, keys)
    got, rids = ranged(cf, 100, 300)
    doomed = rids[::2]
    assert cf.delete(doomed) == len(doomed)
    assert cf.num_records == 5000 - len(doomed)
    kept = np.setdiff1d(recs["id"], got["id"][::2])
    assert_range_matches(cf, recs[np.isin(recs["id"], kept)], 0, 400)
    # an emptied page stays usable
    everything = np.concatenate([i for _, i in cf.scan()])
    cf.delete(everything)
    assert ranged(cf)[0].size == 0
    new_rids, _, _ = cf.insert(make_records([500, 7], 10**6))
    assert ranged(cf)[0]["k"].tolist() == [7, 500]
    upd = cf.fetch(new_rids)
    upd["pad"] = b"changed"
    cf.update_in_place(new_rids, upd)
    assert cf.fetch(new_rids)["pad"].tolist() == [b"changed", b"changed"]


def test_build_of_an_empty_relation_then_insert(tmp_path):
    disk, buf, recs, cf = build(tmp_path, np.array([], dtype=np.int32))
    assert ranged(cf)[0].size == 0 and cf.num_pages == 1
    rng = np.random.default_rng(6)
    new = make_records(rng.integers(-100, 100, 1000))
    cf.insert(new)
    assert_range_matches(cf, new, -10, 10)
    assert_range_matches(cf, new, None, None)
    cf.tree.check()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), domain=st.sampled_from([3, 50, 5000]),
       ops=st.lists(st.sampled_from(["insert", "delete", "range"]), min_size=1, max_size=8))
def test_random_inserts_deletes_ranges(tmp_path_factory, seed, domain, ops):
    rng = np.random.default_rng(seed)
    disk = Disk(tmp_path_factory.mktemp("cl"), 2048)
    buf = BufferManager(disk, 16)
    live = make_records(rng.integers(0, domain, int(rng.integers(0, 800))))
    cf = ClusteredFile.build(disk, buf, "h", SCHEMA, live, "k")
    next_id = 10**6
    for op in ops:
        if op == "insert":
            new = make_records(rng.integers(-2, domain + 2, int(rng.integers(1, 400))), next_id)
            next_id += len(new)
            before = rid_map(cf)
            new_rids, moved_old, moved_new = cf.insert(new)
            np.testing.assert_array_equal(cf.fetch(new_rids), new)
            assert [before[i] for i in cf.fetch(moved_new)["id"].tolist()] == moved_old.tolist()
            live = np.concatenate([live, new])
        elif op == "delete":
            ids = rid_map(cf)
            victims = rng.choice(live["id"], len(live) // 3, replace=False) if len(live) else []
            assert cf.delete(np.array([ids[i] for i in victims], dtype=np.int64)) == len(victims)
            live = live[~np.isin(live["id"], victims)]
        else:
            lo, hi = np.sort(rng.integers(-3, domain + 3, 2))
            assert_range_matches(cf, live, int(lo), int(hi))
    cf.tree.check()
    assert cf.num_records == len(live)
    assert_range_matches(cf, live, None, None)
    disk.close()
