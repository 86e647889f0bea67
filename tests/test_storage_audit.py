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
from minidb.index.clustered import ClusteredFile
from minidb.index.hash_load import HashLoader
from minidb.index.hashfile import DenseHashIndex, HashFile
from minidb.storage.disk import Disk
from minidb.storage.external_sort import ExternalSorter
from minidb.storage.schema import Schema, char_column, float_column, int_column

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


def test_update_of_rows_with_nan_keys_leaves_one_index_entry_each():
    """An UPDATE re-indexes a NaN key (NaN <> NaN in numpy, so it looks changed): the old entry
    must go. It stayed, so after two UPDATEs a range through the dense index gave every NaN row
    three times."""
    db = minidb.connect(buffer_pages=4)
    t = pa.table({"id": pa.array(range(6), pa.int64()),
                  "k": pa.array([1.0, math.nan, math.nan, 2.0, -0.0, 0.0]),
                  "v": pa.array(range(6), pa.int64())})
    db.create_table("t", t, organization="hash", key="id")
    db.create_index("t", "k")
    db.sql("UPDATE t SET v = v + 1")
    db.sql("UPDATE t SET v = v + 1")
    assert sorted(db.sql("SELECT id, v FROM t WHERE k >= 3", hint="index").to_pylist()) == [(1, 3), (2, 4)]
    assert db.catalog.get("t").indexes["k"].index.num_entries == 6
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


# -- differential property tests (each against a trivial Python model) -------------------------

@FEW
@given(frames=st.integers(1, 3), policy=st.sampled_from(["lru", "mru", "clock", "lru2", "2q"]),
       ops=st.lists(st.tuples(st.sampled_from(["fix", "unfix", "dirty", "toss", "keep", "new",
                                               "flush", "run", "run_keep"]),
                              st.integers(0, 6)), max_size=60))
def test_buffer_pool_matches_model(frames, policy, ops):
    """Page contents as a dict, pins as counts and (for LRU) the victim as the least recently
    fixed unpinned page; all frames pinned is a BufferPoolFullError; a flush writes each dirty
    page once; everything survives on disk at the end."""
    disk = Disk(None, 2048)
    f = disk.create("f")
    buf = BufferManager(disk, frames, policy)
    content, pins, last_use, hints, clock = {}, {}, {}, {}, [0]

    def touched(p):
        clock[0] += 1
        last_use[p] = clock[0]

    for _ in range(3):
        p, frame = buf.new_page(f)
        frame[100] = p
        content[p] = p
        touched(p)
        buf.unfix(f, p, dirty=True)
    stamp = 10
    for op, a in ops:
        p = a % f.num_pages
        resident = {int(buf.frame_page[i]) for i in range(frames) if buf.frame_page[i] >= 0}
        full = len(resident) == frames and all(pins.get(q, 0) for q in resident)
        if op in ("fix", "new"):
            if full and (op == "new" or p not in resident):
                with pytest.raises(BufferPoolFullError):
                    buf.fix(f, p) if op == "fix" else buf.new_page(f)
                continue
            lru_victim = None
            if policy == "lru" and len(resident) == frames and (op == "new" or p not in resident):
                free = [q for q in resident if not pins.get(q)]  # Volcano's hints, then LRU
                tossed = sorted((buf.frame_of(f, q), q) for q in free if hints.get(q) == "toss")
                plain = [q for q in free if hints.get(q) is None] or free
                lru_victim = tossed[0][1] if tossed else min(plain, key=last_use.__getitem__)
            if op == "fix":
                frame = buf.fix(f, p)
                assert frame[100] == content[p] % 256
            else:
                p, frame = buf.new_page(f)
                frame[100] = p % 256
                content[p] = p
            pins[p] = pins.get(p, 0) + 1
            hints[p] = None
            touched(p)
            if lru_victim is not None:
                assert buf.frame_of(f, lru_victim) < 0
        elif op in ("unfix", "dirty", "toss", "keep"):
            if not pins.get(p):
                with pytest.raises(MinidbError):
                    buf.unfix(f, p)
                continue
            if op == "dirty":
                stamp += 1
                buf.frames[buf.frame_of(f, p)][100] = stamp % 256
                content[p] = stamp
            buf.unfix(f, p, dirty=op == "dirty", hint=op if op in ("toss", "keep") else None)
            if op in ("toss", "keep"):
                hints[p] = op
            pins[p] -= 1
        elif op == "flush":
            before, dirty = buf.counters.writes, int(buf.dirty.sum())
            buf.flush()
            assert buf.counters.writes == before + dirty and not buf.dirty.any()
        else:
            n = min(3, f.num_pages - p)
            try:
                out = buf.read_run(f, p, n, keep=op == "run_keep")
            except BufferPoolFullError:
                assert full
                continue
            for i in range(n):
                assert out[i][100] == content[p + i] % 256
                touched(p + i)
                if op == "run_keep":  # a fix and an unfix: the page's hint is gone
                    hints[p + i] = None
        assert int(buf.pins.sum()) == sum(pins.values())
    for p, n in pins.items():
        if n:
            buf.unfix(f, p, n=n)
    buf.flush()
    on_disk = f.read_pages(0, f.num_pages)
    assert [int(page[100]) for page in on_disk] == [content[p] % 256 for p in range(f.num_pages)]
    disk.close()


SORT_DTYPE = np.dtype([("f", "<f8"), ("s", "S3"), ("i", "<i8")])


@FEW
@given(keys=st.lists(st.sampled_from([0.0, -0.0, 1.0, 1.0, 2.0, np.nan, -np.inf, np.inf]), max_size=60),
       run_rows=st.integers(1, 7), batch=st.integers(1, 9), key=st.sampled_from(["f", "s", "i"]))
def test_external_sort_matches_stable_argsort(keys, run_rows, batch, key):
    """Tiny runs (1..7 records) and many equal keys: exactly a stable sort of the input."""
    n = len(keys)
    records = np.zeros(n, SORT_DTYPE)
    records["f"] = keys
    records["s"] = [b"x" if math.isnan(k) else str(k).encode()[:3] for k in keys]
    records["i"] = np.where(np.arange(n) % 3 == 0, np.iinfo(np.int64).min, np.arange(n) % 4)
    sorter = ExternalSorter(SORT_DTYPE, key, run_rows)
    for start in range(0, n, batch):
        sorter.add(records[start : start + batch])
    out = list(sorter.sorted_batches())
    sorter.close()
    got = np.concatenate(out) if out else records[:0]
    assert got.tobytes() == records[np.argsort(records[key], kind="stable")].tobytes()


INT_KEYS = st.sampled_from([0, 1, 1, 5, -3, 2**63 - 1, -(2**63), 7, 7, 7])
CHAR_KEYS = st.sampled_from([b"", b"a", b"a", b"ab", b"abcd", b"b", b"zz"])


def _in_range(key, low, high) -> bool:
    if isinstance(key, bytes):  # char(n): trailing NULs are padding
        low = None if low is None else (low.encode() if isinstance(low, str) else low).rstrip(b"\0")
        high = None if high is None else (high.encode() if isinstance(high, str) else high).rstrip(b"\0")
    return (low is None or key >= low) and (high is None or key <= high)


@FEW
@given(data=st.data(), char=st.booleans())
def test_btree_and_dense_hash_index_match_model(data, char):
    """Inserts, deletes and range searches (bounds equal to, between and outside the keys, int64
    extremes, fractional and over-long bounds) on a 2-frame pool, against a dict."""
    disk = Disk(None, 2048)
    buf = BufferManager(disk, 2)
    keys_st = CHAR_KEYS if char else INT_KEYS
    dtype = np.dtype("S4") if char else np.dtype(np.int64)
    bounds = (keys_st | st.sampled_from(["abcde", "abcdX", "a"]) if char else
              keys_st | st.sampled_from([0.5, -0.5, 2**64, -(2**64), 7.0]))
    first = data.draw(st.lists(keys_st, max_size=300))
    tree = BPlusTree.bulk_load(disk, buf, "t", np.array(first, dtype=dtype), np.arange(len(first)))
    index = DenseHashIndex.build(disk, buf, "h", np.array(first, dtype=dtype), np.arange(len(first)))
    model = dict(enumerate(first))
    for round_no in range(2):
        more = data.draw(st.lists(keys_st, max_size=300))
        ids = np.arange(len(more)) + 1000 * (round_no + 1)
        tree.insert(np.array(more, dtype=dtype), ids)
        index.insert(np.array(more, dtype=dtype), ids)
        model.update(zip(ids.tolist(), more, strict=True))
        gone = data.draw(st.lists(st.sampled_from(sorted(model)), unique=True, max_size=80)) if model else []
        gone_keys = np.array([model[i] for i in gone], dtype=dtype)
        assert tree.delete(gone_keys, np.array(gone, dtype=np.int64)) == len(gone)
        assert index.delete(gone_keys, np.array(gone, dtype=np.int64)) == len(gone)
        for i in gone:
            del model[i]
        tree.check()
        for _ in range(4):
            low, high = data.draw(bounds | st.none()), data.draw(bounds | st.none())
            want = sorted(i for i, k in model.items() if _in_range(k, low, high))
            assert sorted(int(v) for _, vs in tree.search_range(low, high) for v in vs) == want
            assert sorted(index.range_rids(low, high).tolist()) == want
    disk.close()


@FEW
@given(data=st.data())
def test_clustered_file_matches_model(data):
    """Records with many duplicate keys inserted in batches (page splits) and deleted, on a
    2..4-frame pool; every range scan is in key order and returns the model's records."""
    schema = Schema([int_column("k", "int64"), int_column("id", "int64"), char_column("pad", 200)])
    disk = Disk(None, 2048)
    buf = BufferManager(disk, data.draw(st.integers(2, 4)))

    def records(keys, first_id):
        out = np.zeros(len(keys), schema.dtype)
        out["k"], out["id"] = keys, np.arange(first_id, first_id + len(keys))
        return out

    first = data.draw(st.lists(INT_KEYS, max_size=40))
    cf = ClusteredFile.build(disk, buf, "c", schema, records(first, 0), "k")
    model = dict(enumerate(first))
    for round_no in range(3):
        new = records(data.draw(st.lists(INT_KEYS, max_size=30)), 1000 * (round_no + 1))
        rids, _, _ = cf.insert(new)
        assert cf.fetch(rids)["id"].tolist() == new["id"].tolist()
        model.update(zip(new["id"].tolist(), new["k"].tolist(), strict=True))
        stored, stored_rids = (np.concatenate(x) for x in zip(*cf.scan(), strict=True))
        assert sorted(stored["id"].tolist()) == sorted(model)
        gone = data.draw(st.lists(st.integers(0, len(stored) - 1), max_size=10)) if len(stored) else []
        cf.delete(stored_rids[gone])
        for i in set(gone):
            del model[int(stored["id"][i])]
        cf.tree.check()
        for _ in range(4):
            low, high = data.draw(INT_KEYS | st.none()), data.draw(INT_KEYS | st.none())
            parts = list(cf.range_scan(low, high))
            got = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, schema.dtype)
            assert got["k"].tolist() == sorted(got["k"].tolist())
            assert sorted(got["id"].tolist()) == sorted(i for i, k in model.items()
                                                        if _in_range(k, low, high))
    disk.close()


@FEW
@given(keys=st.lists(st.sampled_from([0.0, -0.0, 1.0, np.nan, 3.0]) | st.floats(-5, 5), max_size=300),
       run_rows=st.integers(1, 40), batch=st.integers(1, 90), told=st.booleans())
def test_hash_loader_matches_build(keys, run_rows, batch, told):
    """The bounded-memory hash load writes the pages ``HashFile.build`` writes (NaN, -0.0 and
    many duplicates making overflow chains); every key is found by a lookup."""
    schema = Schema([float_column("k"), int_column("id", "int64"), char_column("pad", 300)])
    records = np.zeros(len(keys), schema.dtype)
    records["k"], records["id"] = keys, np.arange(len(keys))
    disk1, disk2 = Disk(None, 2048), Disk(None, 2048)
    built = HashFile.build(disk1, BufferManager(disk1, 3), "h", schema, records, "k")
    loader = HashLoader(disk2, BufferManager(disk2, 3), "h", schema, "k", run_rows,
                        len(keys) if told else None)
    for start in range(0, len(keys), batch):
        loader.add(records[start : start + batch])
    loaded = loader.finish()
    assert (loaded.num_pages, loaded.num_buckets) == (built.num_pages, built.num_buckets)
    pages1 = built.heap.file.read_pages(0, built.num_pages)
    pages2 = loaded.heap.file.read_pages(0, loaded.num_pages)
    assert (pages1[:, 4:] == pages2[:, 4:]).all()  # all but the checksum (file ids differ)
    for key in set(keys[:4]):
        found, _ = loaded.lookup(key)
        want = [i for i, k in enumerate(keys) if k == key or (math.isnan(k) and math.isnan(key))]
        assert sorted(found["id"].tolist()) == want
    disk1.close()
    disk2.close()


# -- end to end: SQL on one node against DuckDB, through a close and reopen --------------------

def _canonical(rows) -> list[tuple]:
    def value(v):
        if isinstance(v, float):
            return ("nan",) if math.isnan(v) else (v + 0.0,)
        return (v,)
    return sorted((tuple(value(v) for v in row) for row in rows), key=repr)


def _literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return f"'{v}'"
    if isinstance(v, float) and not math.isfinite(v):
        return f"'{v}'::DOUBLE"
    return repr(v)


SQL_VALUES = {
    "int": (pa.int64(), [0, 1, 1, 2, -1, 2**63 - 1, -(2**63), 5, 7, None]),
    "float": (pa.float64(), [0.0, -0.0, 1.5, 1.5, math.nan, math.inf, -math.inf, 2.0, None]),
    "str": (pa.string(), ["", "a", "a", "ab", "abc", "b" * 20, "zz", None]),
}


@pytest.mark.parametrize("organization", ["heap", "hash", "clustered"])
@pytest.mark.parametrize("kind", ["int", "float", "str"])
def test_sql_matches_duckdb_through_changes_and_reopen(tmp_path, organization, kind):
    """Index lookups and range predicates on every file organization (with secondary indexes,
    a 3-page pool) agree with DuckDB after INSERT / UPDATE / DELETE and after reopening."""
    import random

    import duckdb

    rng = random.Random(f"{organization}-{kind}")
    arrow_type, values = SQL_VALUES[kind]
    n = 400
    ks = [values[-2] if i == 0 else rng.choice(values) for i in range(n)]  # the widest string first
    t = pa.table({"id": pa.array(range(n), pa.int64()), "k": pa.array(ks, arrow_type),
                  "v": pa.array([rng.random() for _ in range(n)], pa.float64())})
    db = minidb.connect(buffer_pages=3, data_dir=tmp_path, page_size=2048)
    db.create_table("t", t, organization=organization, key=None if organization == "heap" else "k")
    db.create_index("t", "id")
    if organization == "heap":
        db.create_index("t", "k")
    duck = duckdb.connect()
    duck.register("src", t)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    keys = values[:-1]
    statements = [
        "INSERT INTO t VALUES " + ", ".join(
            f"({n + i}, {_literal(rng.choice(values))}, 0.5)" for i in range(150)),
        f"DELETE FROM t WHERE k = {_literal(keys[1])}",
        "DELETE FROM t WHERE id % 7 = 0",
        f"UPDATE t SET k = {_literal(keys[3])} WHERE id % 5 = 1",
        "REOPEN",
        "INSERT INTO t VALUES " + ", ".join(
            f"({2 * n + i}, {_literal(rng.choice(values))}, 0.25)" for i in range(20)),
    ]
    for statement in [None, *statements]:
        with time_limit(60):  # the old B+ tree delete of a NaN key never ended
            db = _run_and_compare(db, duck, statement, tmp_path, rng, keys)
    db.close()


def _run_and_compare(db, duck, statement, tmp_path, rng, keys):
    """Run ``statement`` on both engines (or reopen minidb), then compare the queries; returns
    the (possibly reopened) minidb database."""
    if statement == "REOPEN":
        db.close()
        db = minidb.connect(buffer_pages=3, data_dir=tmp_path)
    elif statement is not None:
        db.sql(statement)
        duck.execute(statement)
    queries = ["SELECT id, k, v FROM t", "SELECT id FROM t WHERE id = 42",
               "SELECT id FROM t WHERE id BETWEEN 100 AND 130"]
    for a in rng.sample(keys, 3):
        b = rng.choice(keys)
        queries += [f"SELECT id FROM t WHERE k = {_literal(a)}",
                    f"SELECT id FROM t WHERE k > {_literal(a)}",
                    f"SELECT id FROM t WHERE k <= {_literal(a)}",
                    f"SELECT id FROM t WHERE k BETWEEN {_literal(a)} AND {_literal(b)}"]
    for q in queries:
        assert _canonical(db.sql(q).to_pylist()) == _canonical(duck.execute(q).fetchall()), \
            (statement, q)
    return db
