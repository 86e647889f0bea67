"""Volcano's shared buffer as a bounded buffer (minidb.volcano.pool, Volcano paper §2.1, §4.1,
§5.1): cluster frames per pool, LRU with keep / toss hints, pinned clusters never replaced, and
counters that add up; the parallel sort with a buffer small enough to force evictions still
sorts (numpy, DuckDB) and charges every read the pool makes."""

from __future__ import annotations

import threading

import duckdb
import numpy as np
import pytest

from minidb.errors import BufferPoolFullError, MinidbError
from minidb.volcano.pool import ClusterPool, SharedBuffer, cluster_id
from minidb.volcano.psort import SortSetup, parallel_sort
from minidb.volcano.records import sort_records, to_table

KB = 1024


def _touch(pool: ClusterPool, *clusters: int, hint: str | None = None) -> None:
    for c in clusters:
        pool.fix(c)
        pool.unfix(c, hint=hint)


def _resident(pool: ClusterPool) -> set[int]:
    return set(pool.where)


# -- replacement (§4.1: LRU with keep / toss hints) ----------------------------------------------

def test_lru_replaces_the_least_recently_used_cluster():
    pool = ClusterPool(3)
    _touch(pool, 1, 2, 3, 1)          # recency, oldest first: 2, 3, 1
    _touch(pool, 4)                   # 2 goes
    assert _resident(pool) == {1, 3, 4}
    _touch(pool, 5)                   # then 3
    assert _resident(pool) == {1, 4, 5}
    c = pool.counters
    assert (c.fixes, c.hits, c.misses, c.evictions) == (6, 1, 5, 2)


def test_toss_goes_first_and_keep_stays():
    toss = ClusterPool(3)
    _touch(toss, 1, 2)
    _touch(toss, 3, hint="toss")      # the newest, but tossed: the victim instead of 1
    _touch(toss, 4)
    assert _resident(toss) == {1, 2, 4}

    keep = ClusterPool(3)
    _touch(keep, 1, hint="keep")      # LRU's victim, but kept: 2 goes instead
    _touch(keep, 2, 3, 4)
    assert _resident(keep) == {1, 3, 4}
    _touch(keep, 5)                   # then 3, still not the kept 1
    assert _resident(keep) == {1, 4, 5}


def test_kept_clusters_go_only_when_nothing_else_can():
    pool = ClusterPool(2)
    _touch(pool, 1, 2, hint="keep")
    _touch(pool, 3)                   # every unpinned cluster is kept: LRU among them
    assert _resident(pool) == {2, 3}


def test_a_fixed_cluster_is_never_replaced():
    pool = ClusterPool(3)
    pool.fix(7, count=40)             # a scan's cluster, fixed with its 40 records (§5.2)
    for c in range(100):
        _touch(pool, c + 10)
        assert 7 in pool
    pool.unfix(7, n=39)
    _touch(pool, 200, 201, 202)
    assert 7 in pool                  # one record still fixed
    pool.unfix(7, n=1)
    _touch(pool, 203, 204, 205)
    assert 7 not in pool


def test_a_pool_with_every_cluster_fixed_is_a_clear_error():
    pool = ClusterPool(2, name="1")
    pool.fix(1)
    pool.fix(2)
    with pytest.raises(BufferPoolFullError, match="pool 1 holds 2 clusters and all 2 are fixed"):
        pool.fix(3)
    with pytest.raises(MinidbError, match="not fixed 2 times"):
        pool.unfix(1, n=2)
    with pytest.raises(MinidbError, match="unknown buffer hint"):
        pool.unfix(1, hint="later")


def test_dirty_clusters_are_written_when_replaced_or_flushed():
    pool = ClusterPool(2)
    for c in range(5):                # five output clusters, filled and written (dirty)
        pool.fix(c, new=True, dirty=True)
        pool.unfix(c, hint="toss")
    pool.fix(99)                      # a cluster read and still fixed: not flushed with them
    c = pool.counters
    assert c.allocations == 5 and c.evictions == 4 and c.dirty_writes == 4
    assert pool.flush() == 1 and c.flush_writes == 1
    assert c.dirty_writes + c.flush_writes == 5


def test_other_registered_policies_plug_in():
    mru = ClusterPool(3, policy="mru")
    _touch(mru, 1, 2, 3, 4)           # MRU replaces the newest (3)
    assert _resident(mru) == {1, 2, 4}
    with pytest.raises(MinidbError, match="unknown buffer policy"):
        ClusterPool(3, policy="fifo-nonexistent")


@pytest.mark.parametrize("policy", ["lru", "clock", "2q", "lru2"])
def test_counters_add_up_on_a_random_trace(policy):
    rng = np.random.default_rng(4)
    pool = ClusterPool(8, policy=policy)
    trace = rng.integers(0, 20, size=2000)
    for c in trace.tolist():
        misses = pool.counters.misses
        read = pool.fix(c)
        assert read == (pool.counters.misses == misses + 1)   # a read is a miss
        pool.unfix(c, hint=[None, "keep", "toss"][c % 3])
    c = pool.counters
    assert c.fixes == len(trace) and c.hits + c.misses == c.fixes
    assert c.evictions <= c.misses and c.misses - c.evictions == len(pool.where) == 8
    assert c.dirty_writes == 0 and pool.pinned == 0


# -- the shared buffer: pools, locks, reads charged -----------------------------------------------

def test_a_cluster_read_again_after_it_was_replaced_is_read_again():
    buffer = SharedBuffer(pools=1, clusters=2)
    ids = cluster_id(0, np.array([0, 1, 2, 0]))
    # three merge inputs through a two-cluster pool: cluster 0 is replaced, then needed again
    assert buffer.through(0, 0, ids) == 4
    assert buffer.through(0, 0, cluster_id(0, np.array([1]))) == 0   # still there: a hit
    c = buffer.pool_counters()
    assert (c.misses, c.hits, c.evictions) == (4, 1, 2)
    assert buffer.counters.total("fix") == buffer.counters.total("release") == 5


def test_a_buffer_split_over_pools_by_device():
    buffer = SharedBuffer(pools=2, clusters=[3, 5])
    buffer.through(0, 2, cluster_id(2, np.arange(10)))   # device 2 -> pool 0
    buffer.through(1, 3, cluster_id(3, np.arange(10)))   # device 3 -> pool 1
    assert len(buffer.pool[0].where) == 3 and len(buffer.pool[1].where) == 5
    assert buffer.pool_counters(0).evictions == 7 and buffer.pool_counters(1).evictions == 5
    assert buffer.pool_counters().misses == 20


def test_pool_locks_keep_the_counts_exact_under_threads():
    threads, rounds, shared = 8, 200, 12
    buffer = SharedBuffer(pools=2, clusters=16)
    errors = []

    def worker(t: int) -> None:
        rng = np.random.default_rng(t)
        try:
            for _ in range(rounds):
                device = int(rng.integers(0, 4))          # every thread on every pool
                ids = cluster_id(device, rng.integers(0, shared, size=3))
                buffer.through(t, device, ids)
                own = cluster_id(10 + t, np.arange(2))   # a scan of its own device
                buffer.stream(t, "filter", 10 + t, own, np.array([5, 5]),
                              np.repeat(own, 5))
            buffer.close(t, "filter")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    c = buffer.pool_counters()
    reads = threads * rounds * (3 + 2)
    assert c.fixes == reads and c.hits + c.misses == reads
    assert c.evictions <= c.misses
    assert all(p.pinned == 0 for p in buffer.pool)
    assert buffer.counters.total("fix") == reads
    assert buffer.counters.total("unfix") == threads * rounds * 10   # simple: one per record
    assert buffer.balanced()


# -- the parallel sort in a bounded buffer ---------------------------------------------------

def _duckdb_keys(records: np.ndarray) -> list[bytes]:
    con = duckdb.connect()
    con.register("input", to_table(records))
    return [k.encode() for (k,) in con.sql("SELECT key FROM input ORDER BY key").fetchall()]


@pytest.mark.parametrize("unfix,pools", [("simple", 1), ("macro_4", 2)])
def test_a_small_buffer_forces_evictions_and_the_sort_still_sorts(unfix, pools):
    records = sort_records(20_000, seed=6)
    config = dict(processes=4, cluster_bytes=4 * KB, sort_space_bytes=4 * 8 * 4 * KB,
                  unfix=unfix, pools=pools)
    small = SortSetup(**config, buffer_clusters=4 * SortSetup(**config).pinned_per_process)
    run = parallel_sort(records, small)
    out = run.output()
    assert np.array_equal(out["key"], np.sort(records["key"]))
    assert out["key"].tolist() == _duckdb_keys(records)
    assert np.array_equal(np.sort(out["payload"]), np.sort(records["payload"]))
    c, total = run.buffer_counters(), run.total()
    assert c.evictions > 0 and c.dirty_writes > 0
    assert c.hits + c.misses == c.fixes and c.evictions <= c.misses + c.allocations
    # every read the pool made is charged as disk I/O, so the modeled clock would see it
    assert c.misses == total.clusters_read_sequential + total.clusters_read_random
    # every output cluster is written once: when replaced, or by the flush at the end
    outputs = sum(small.layout.clusters(w.records_out) for w in run.work)
    assert c.dirty_writes + c.flush_writes == outputs
    assert all(p.pinned == 0 for p in run.buffer.pool) and run.buffer.balanced()
    # this sort never needs a cluster again once it let it go: no read more than the
    # paper-sized buffer's, so the same counts and the same modeled time
    roomy = parallel_sort(records, SortSetup(**config))
    assert [vars(w) for w in run.work] == [vars(w) for w in roomy.work]
    assert roomy.buffer_counters().evictions < c.evictions


def test_the_paper_buffer_reads_nothing_twice():
    """§3.2 sizes, scaled down: 12 MB of sort space within 15 MB of I/O buffer."""
    setup = SortSetup(processes=4, cluster_bytes=32 * KB, alignment=16,
                      sort_space_bytes=12 * 1024 * KB // 20)
    assert setup.buffer_size == -(-setup.sort_space_bytes * 5 // 4 // setup.cluster_bytes)
    run = parallel_sort(sort_records(50_000, seed=1), setup)
    c, total = run.buffer_counters(), run.total()
    assert c.hits == 0
    assert c.misses == total.clusters_read_sequential + total.clusters_read_random
    assert c.misses == c.fixes   # every cluster read once


def test_a_buffer_smaller_than_what_the_sort_fixes_is_a_clear_error():
    with pytest.raises(MinidbError, match=r"a buffer of 5 clusters gives pool 0 5 clusters, "
                                          r"but its 4 processes may fix 8 at once"):
        SortSetup(processes=4, buffer_clusters=5)
    with pytest.raises(MinidbError, match="at least 24"):
        SortSetup(processes=4, unfix="macro_4", buffer_clusters=20)
    with pytest.raises(MinidbError, match="unknown buffer policy"):
        SortSetup(processes=2, buffer_policy="fifo-nonexistent")


def test_the_sort_runs_with_another_policy():
    records = sort_records(5000, seed=2)
    setup = SortSetup(processes=2, sort_space_bytes=2 * 4 * 4 * KB, buffer_policy="clock",
                      buffer_clusters=8)
    run = parallel_sort(records, setup)
    assert np.array_equal(run.output()["key"], np.sort(records["key"]))
    assert run.buffer.pool[0].policy.name == "clock" and run.buffer_counters().evictions > 0
