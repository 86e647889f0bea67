"""minidb.connect / Database / Result, the catalog, and the planner's access-path choice.

The access-path tests replay Gamma's Section 5.1: on a 10,000-tuple Wisconsin relation a 1%
selection through a non-clustered index is cheaper than a scan (100 matches < the relation's
pages) and a 10% selection is not (1,000 matches > pages), a clustered index is always worth
using for a range, and the counters show it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import minidb
from minidb.catalog import Catalog
from minidb.datagen import wisconsin, write_parquet
from minidb.errors import MinidbError, SchemaError, UnknownColumnError, UnknownTableError
from minidb.storage.schema import Schema, char_column, int_column

N = 10_000


def kinds(result) -> set[str]:
    return {op.kind for op in result.plan.walk()}


def rows(result) -> list[tuple]:
    return sorted(result.to_pylist())


@pytest.fixture(scope="module")
def tenk():
    return wisconsin(N, seed=5)


@pytest.fixture
def db():
    database = minidb.connect(buffer_pages=256)
    yield database
    database.close()


# -- connect ---------------------------------------------------------------------------------
def test_connect_defaults_and_memory_budget():
    with minidb.connect() as d:
        assert d.buffer.num_frames == 1024
        assert d.disk.page_size == 4096
        assert d.memory_pages == 1024 - 8  # the pool minus the pages scans and probes fix
    with minidb.connect(buffer_pages=64, memory_pages=10, page_size=8192) as d:
        assert d.memory_pages == 10 and d.disk.page_size == 8192
    with minidb.connect(buffer_pages=4) as d:
        assert d.memory_pages == 3


def test_connect_chooses_the_engine_and_rejects_bad_arguments():
    with minidb.connect(nodes=2, backend="inline") as db:
        assert isinstance(db, minidb.ParallelDatabase)
    with minidb.connect() as db:
        assert isinstance(db, minidb.Database)
    with pytest.raises(MinidbError):
        minidb.connect(nodes=0)
    with pytest.raises(MinidbError, match="backend"):
        minidb.connect(nodes=2, backend="carrier-pigeon")
    with pytest.raises(MinidbError, match="memory_pages"):
        minidb.connect(memory_pages=1)


@pytest.mark.parametrize("arguments, words", [
    (dict(nodes=10**9), "nodes may be at most 256"),  # built nodes until memory ran out
    (dict(nodes=257), "nodes may be at most 256"),
    (dict(data_dir=""), "data_dir is empty"),  # opened the current directory as a database
    (dict(nodes=2, diskless_nodes=-1), "diskless_nodes must be between 0 and nodes - 1"),
    (dict(nodes=2, diskless_nodes=2), "diskless_nodes must be between 0 and nodes - 1"),
    (dict(nodes=2, packet_bytes=0), "packet_bytes must be a positive whole number"),
    (dict(nodes=2, packet_bytes=2048.5), "packet_bytes must be a positive whole number"),
])
def test_connect_refuses_a_bad_argument_in_one_line(arguments, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MinidbError, match=words):
        minidb.connect(**arguments)
    assert list(tmp_path.iterdir()) == []  # nothing was written where it was started


def test_exports():
    assert minidb.__version__
    assert minidb.Database is not None and minidb.Result is not None


def test_data_dir_and_close(tmp_path):
    d = minidb.connect(data_dir=tmp_path / "node0")
    d.create_table("t", pa.table({"a": pa.array([1, 2], pa.int32())}))
    assert any((tmp_path / "node0").iterdir())
    d.close()
    assert (tmp_path / "node0").exists()  # a directory the user gave is kept
    with pytest.raises(MinidbError, match="closed"):
        d.sql("SELECT * FROM t")


# -- create_table ----------------------------------------------------------------------------
def test_create_table_from_arrow(db, tenk):
    t = db.create_table("tenk", tenk)
    assert t.num_records == N
    assert t.schema.record_width == 208  # the Wisconsin tuple of Gamma, Section 4
    assert t.num_pages == -(-N // t.records_per_page)
    assert db.tables() == ["tenk"]
    assert db.table("TENK") is t  # names are case-insensitive
    out = db.sql("SELECT * FROM tenk").to_arrow()
    assert out.num_rows == N
    assert sorted(out["unique1"].to_pylist()) == list(range(N))
    assert out.schema.field("stringu1").metadata[b"minidb.width"] == b"52"


def test_create_table_from_parquet(db, tenk, tmp_path):
    path = write_parquet(tenk, tmp_path / "tenk.parquet")
    t = db.create_table("fromfile", str(path))
    assert t.num_records == N and t.schema == Schema.from_arrow(tenk.schema)
    back = db.sql("SELECT * FROM fromfile").to_arrow()
    assert sorted(back["unique2"].to_pylist()) == sorted(tenk["unique2"].to_pylist())
    # a Parquet file written by plain pyarrow (no width metadata) takes the widths from the data
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"k": pa.array([3, 1, 2], pa.int64()), "s": ["a", "bbb", "cc"]}), plain)
    t2 = db.create_table("plain", plain)
    assert t2.schema.column("s").width == 3


def test_create_table_from_generator_spec(db):
    t = db.create_table("g", "wisconsin:500:3")
    assert t.num_records == 500
    assert db.sql("SELECT COUNT(*) FROM g").to_pylist() == [(500,)]


def test_create_table_with_explicit_schema(db):
    data = pa.table({"a": pa.array([1, 2], pa.int32()), "s": ["x", "yy"]})
    layout = Schema([int_column("a", "int32"), char_column("s", 10)])
    t = db.create_table("wide", data, schema=layout)
    assert t.schema.column("s").width == 10
    db.sql("INSERT INTO wide VALUES (3, 'ten chars!')")
    with pytest.raises(SchemaError):
        db.sql("INSERT INTO wide VALUES (4, 'eleven char')")


def test_create_table_mistakes(db, tenk):
    db.create_table("tenk", tenk)
    with pytest.raises(MinidbError, match="already exists"):
        db.create_table("tenk", tenk)
    with pytest.raises(MinidbError, match="organization"):
        db.create_table("x", tenk, organization="btree")
    with pytest.raises(MinidbError, match="key"):
        db.create_table("x", tenk, organization="clustered")
    with pytest.raises(UnknownColumnError):
        db.create_table("x", tenk, organization="hash", key="nope")
    with pytest.raises(MinidbError, match="no file"):
        db.create_table("x", "/does/not/exist.parquet")
    with pytest.raises(MinidbError):
        db.create_table("x", [1, 2, 3])
    with pytest.raises(MinidbError, match="identifier"):
        db.create_table("bad name", tenk)
    assert db.tables() == ["tenk"]


def test_drop_table(db, tenk):
    db.create_table("a", tenk)
    db.create_index("a", "unique2")
    files_before = set(db.disk.path.iterdir())
    db.drop_table("A")
    assert db.tables() == []
    assert len(set(db.disk.path.iterdir())) < len(files_before)
    with pytest.raises(UnknownTableError):
        db.drop_table("a")


def test_catalog_unknown_table_lists_tables():
    cat = Catalog()
    with pytest.raises(UnknownTableError, match="none yet"):
        cat.get("x")


# -- indexes ---------------------------------------------------------------------------------
def test_create_index_both_kinds(db, tenk):
    t = db.create_table("tenk", tenk)
    db.create_index("tenk", "unique2")
    assert t.organization == "heap" and "unique2" in t.indexes
    db.create_index("tenk", "unique1", clustered=True)
    assert t.organization == "clustered" and t.key == "unique1"
    assert "unique2" in t.indexes  # rebuilt over the new record ids
    with pytest.raises(MinidbError, match="at most one clustered index"):
        db.create_index("tenk", "unique2", clustered=True)
    with pytest.raises(MinidbError, match="already has an index"):
        db.create_index("tenk", "unique2")
    with pytest.raises(UnknownColumnError):
        db.create_index("tenk", "nope")
    # the data is unchanged by the reorganization, and now in key order
    out = db.sql("SELECT unique1, unique2 FROM tenk").to_arrow()
    assert out["unique1"].to_pylist() == list(range(N))


def test_hash_organized_table(db, tenk):
    t = db.create_table("h", tenk, organization="hash", key="unique1")
    db.create_index("h", "unique2")
    assert t.indexes["unique2"].kind == "dense_hash"
    with pytest.raises(MinidbError, match="hash-organized"):
        db.create_index("h", "unique2", clustered=True)
    r = db.sql("SELECT unique1, unique2 FROM h WHERE unique1 = 1234")
    assert r.to_pylist() == [(1234, int(np.asarray(tenk["unique2"])[
        np.flatnonzero(np.asarray(tenk["unique1"]) == 1234)[0]]))]
    assert "hash lookup" in r.explain()


# -- access path choice (Gamma, Section 5.1) ---------------------------------------------------
@pytest.fixture
def indexed(tenk):
    d = minidb.connect(buffer_pages=256)
    d.create_table("heap", tenk)
    d.create_table("nci", tenk)
    d.create_index("nci", "unique2")
    d.create_table("ci", tenk)
    d.create_index("ci", "unique1", clustered=True)
    yield d
    d.close()


def test_one_percent_uses_the_non_clustered_index(indexed):
    r = indexed.sql("SELECT * FROM nci WHERE unique2 BETWEEN 1000 AND 1099")
    assert r.rows == 100
    assert "index_scan" in kinds(r) and "heap_scan" not in kinds(r)
    pages = indexed.table("nci").num_pages
    assert f"est. 100 matching tuples < {pages} data pages" in r.explain()
    assert r.access_path == "nci: non-clustered B+ tree index on unique2"


def test_ten_percent_scans_the_file(indexed):
    r = indexed.sql("SELECT * FROM nci WHERE unique2 BETWEEN 1000 AND 1999")
    assert r.rows == 1000
    assert "heap_scan" in kinds(r) and "index_scan" not in kinds(r)
    pages = indexed.table("nci").num_pages
    assert f"est. 1000 matching tuples >= {pages} data pages" in r.explain()
    assert r.access_path == "nci: file scan"


def test_clustered_index_is_used_for_a_range(indexed):
    for sql in ("SELECT * FROM ci WHERE unique1 BETWEEN 1000 AND 1999",
                "SELECT * FROM ci WHERE unique1 < 5000", "SELECT * FROM ci WHERE unique1 = 7"):
        r = indexed.sql(sql)
        assert "clustered_index_scan" in kinds(r), sql
        assert "clustered index" in r.explain()
    # a predicate on another column cannot use it
    assert "heap_scan" in kinds(indexed.sql("SELECT * FROM ci WHERE unique2 < 100"))


def test_hints_override_the_choice(indexed):
    ten = "SELECT * FROM nci WHERE unique2 BETWEEN 1000 AND 1999"
    one = "SELECT * FROM nci WHERE unique2 BETWEEN 1000 AND 1099"
    forced = indexed.sql(ten, hint="index")
    assert "index_scan" in kinds(forced) and forced.rows == 1000
    assert "hint 'index'" in forced.explain()
    assert "heap_scan" in kinds(indexed.sql(one, hint="scan"))
    assert "heap_scan" in kinds(indexed.sql("/*+ scan */ " + one))
    assert "index_scan" in kinds(indexed.sql("/*+ index */ " + ten))
    clustered = "SELECT * FROM ci WHERE unique1 BETWEEN 0 AND 99"
    assert "heap_scan" in kinds(indexed.sql(clustered, hint="scan"))
    assert "clustered_index_scan" in kinds(indexed.sql(clustered, hint="clustered_index"))
    with pytest.raises(MinidbError, match="cannot be followed"):
        indexed.sql("SELECT * FROM heap WHERE unique2 < 10", hint="index")
    with pytest.raises(MinidbError, match="cannot be followed"):
        indexed.sql(one, hint="clustered_index")
    # same answers whichever way the tuples are found
    assert rows(indexed.sql(one, hint="scan")) == rows(indexed.sql(one, hint="index"))
    assert rows(indexed.sql(clustered, hint="scan")) == rows(indexed.sql(clustered))


def test_statistics_follow_inserts(indexed):
    t = indexed.table("nci")
    assert (t.column_stats("unique2").min, t.column_stats("unique2").max) == (0, N - 1)
    indexed.sql("INSERT INTO nci SELECT unique1, unique2 + 90000, two, four, ten, twenty, "
                "onePercent, tenPercent, twentyPercent, fiftyPercent, unique3, evenOnePercent, "
                "oddOnePercent, stringu1, stringu2, string4 FROM nci WHERE unique2 < 10")
    assert t.column_stats("unique2").max == 90009
    assert t.num_records == N + 10
    # the index knows the new tuples
    r = indexed.sql("SELECT unique2 FROM nci WHERE unique2 >= 90000", hint="index")
    assert sorted(v for (v,) in r.to_pylist()) == list(range(90000, 90010))


# -- counters --------------------------------------------------------------------------------
def test_full_scan_reads_every_page_once(indexed):
    indexed.clear_buffer_pool()
    r = indexed.sql("SELECT * FROM heap WHERE unique1 < 0")
    pages = indexed.table("heap").num_pages
    assert r.rows == 0
    assert r.counters["pages_read"] == pages
    assert r.counters["buffer_hits"] + r.counters["buffer_misses"] == pages
    assert r.counters["pages_read_random"] <= 1 + pages // 64
    assert r.counters["pages_written"] == 0
    assert r.counters["tuples_in.heap_scan"] == N
    assert r.counters["tuples_out.heap_scan"] == 0


def test_clustered_one_percent_reads_far_fewer_pages(indexed):
    indexed.clear_buffer_pool()
    scan = indexed.sql("SELECT * FROM ci WHERE unique1 BETWEEN 3000 AND 3099", hint="scan")
    indexed.clear_buffer_pool()
    clustered = indexed.sql("SELECT * FROM ci WHERE unique1 BETWEEN 3000 AND 3099")
    assert scan.rows == clustered.rows == 100
    assert scan.counters["pages_read"] == indexed.table("ci").num_pages
    assert clustered.counters["pages_read"] * 20 < scan.counters["pages_read"]
    assert "clustered_index_scan" in kinds(clustered)


def test_non_clustered_index_reads_are_random(indexed):
    indexed.clear_buffer_pool()
    r = indexed.sql("SELECT * FROM nci WHERE unique2 BETWEEN 5000 AND 5049")
    assert r.rows == 50
    assert "index_scan" in kinds(r)
    assert r.counters["pages_read"] < indexed.table("nci").num_pages // 4
    assert r.counters["pages_read_random"] >= 10  # matches are scattered over the file


def test_counters_are_per_statement(indexed):
    indexed.clear_buffer_pool()
    first = indexed.sql("SELECT COUNT(*) FROM heap")
    second = indexed.sql("SELECT COUNT(*) FROM heap")
    assert first.counters["pages_read"] == indexed.table("heap").num_pages
    # a relation larger than half the pool is not kept by a scan: the second run reads it again
    assert second.counters["pages_read"] + second.counters["buffer_hits"] == \
        indexed.table("heap").num_pages
    keys = [k for k in first.counters if k.startswith("op")]
    assert any(k.endswith(".tuples_out") for k in keys)
    assert all(isinstance(v, int) for v in first.counters.values())


def test_update_counts_pages_written(db, tenk):
    db.create_table("w", tenk)
    r = db.sql("UPDATE w SET ten = ten + 1 WHERE unique1 < 100")
    assert r.rows == 100
    assert 0 < r.counters["pages_written"] <= 100
    assert r.counters["tuples_out.update"] == 1


# -- index maintenance through SQL --------------------------------------------------------------
@pytest.mark.parametrize("organization, key, clustered", [
    ("heap", None, None), ("heap", None, "unique1"), ("hash", "unique1", None)])
def test_indexes_stay_in_step_with_changes(tenk, organization, key, clustered):
    with minidb.connect(buffer_pages=128) as d:
        d.create_table("w", tenk, organization=organization, key=key)
        if clustered:
            d.create_index("w", clustered, clustered=True)
        d.create_index("w", "unique2")
        d.sql("UPDATE w SET unique1 = unique1 + 50000 WHERE unique2 < 300")  # moves on the key
        d.sql("UPDATE w SET unique2 = unique2 + 70000 WHERE unique1 BETWEEN 1000 AND 1200")
        d.sql("DELETE FROM w WHERE unique2 BETWEEN 400 AND 499")
        d.sql("INSERT INTO w SELECT unique1 + 200000, unique2 + 200000, two, four, ten, twenty, "
              "onePercent, tenPercent, twentyPercent, fiftyPercent, unique3, evenOnePercent, "
              "oddOnePercent, stringu1, stringu2, string4 FROM w WHERE unique2 < 1000")
        t = d.table("w")
        everything = rows(d.sql("SELECT * FROM w", hint="scan"))
        assert len(everything) == t.num_records
        for where in ("unique2 < 2000", "unique2 >= 70000", "unique2 BETWEEN 200100 AND 200500",
                      "unique1 >= 50000", "unique1 BETWEEN 900 AND 1300", "unique1 = 50007"):
            sql = f"SELECT * FROM w WHERE {where}"
            expected = rows(d.sql(sql, hint="scan"))
            assert rows(d.sql(sql)) == expected, where
            try:
                assert rows(d.sql(sql, hint="index")) == expected, where
            except MinidbError as e:
                assert "cannot be followed" in str(e)


# -- Result ----------------------------------------------------------------------------------
def test_result_explain_and_plan(indexed):
    r = indexed.sql("SELECT onePercent, SUM(unique2) FROM nci WHERE unique2 < 100 "
                    "GROUP BY onePercent ORDER BY 1")
    text = r.explain()
    assert "HashAggregate" in text and "access path for nci" in text
    assert r.plan.kind == "sort"
    assert r.rows == r.to_arrow().num_rows
    assert "Result(select" in repr(r)


def test_result_never_shows_record_ids(db, tenk):
    db.create_table("w", tenk)
    r = db.sql("DELETE FROM w WHERE unique1 < 10")
    assert r.to_arrow().column_names == ["count"]
    assert r.rows == 10


def test_selectivity_estimates(indexed):
    from minidb.sql.planner import range_selectivity

    t = indexed.table("nci")
    assert range_selectivity(t, "unique2", 1000, 1099) == pytest.approx(0.01)
    assert range_selectivity(t, "unique2", 1000, 1999) == pytest.approx(0.10)
    assert range_selectivity(t, "unique2", None, 99) == pytest.approx(0.01)
    assert range_selectivity(t, "unique2", 5, 5) == pytest.approx(1 / N)
    assert range_selectivity(t, "unique2", 20000, None) == 0.0
    assert range_selectivity(t, "unique2", 10, 5) == 0.0
    assert range_selectivity(t, "ten", 3, 3) == pytest.approx(0.1)


def test_hash_file_cannot_serve_a_range_on_its_key(db, tenk):
    db.create_table("h", tenk, organization="hash", key="unique1")
    r = db.sql("SELECT * FROM h WHERE unique1 BETWEEN 10 AND 19")
    assert r.rows == 10 and "heap_scan" in kinds(r)
    assert "only an exact match" in r.explain()


def test_join_falls_back_to_nested_loops_when_the_build_input_cannot_fit(tenk):
    with minidb.connect(buffer_pages=64, memory_pages=4) as d:
        d.create_table("a", tenk)
        d.create_table("b", tenk)
        sql = "SELECT * FROM a, b WHERE a.unique1 = b.unique2 AND b.ten = 1"
        r = d.sql(sql)
        assert "nested_loops_join" in kinds(r)
        assert "would not fit a hash table" in r.explain()
        assert r.rows == 1000
        small = d.sql("SELECT a.unique1 FROM a, b WHERE a.unique1 = b.unique2 AND b.unique1 < 20")
        assert "hash_join" in kinds(small) and small.rows == 20


@pytest.mark.parametrize("text", ["", "   ", ";", ";;", "-- a comment", "/* a comment */"])
def test_a_statement_with_nothing_to_run_is_called_empty(text):
    """Only blanks, comments or semicolons: "empty", not "several statements"."""
    with minidb.connect() as db, pytest.raises(MinidbError, match="empty SQL statement"):
        db.sql(text)
