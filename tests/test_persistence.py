"""Data directories: the catalog is saved after every change and a directory reopens as it was.

Single node: heap, clustered and hash tables with secondary indexes come back with the same
rows (checked against DuckDB), the planner picks the same access paths, and changes keep
working. Parallel (inline nodes): every partitioner kind comes back with its fragments on the
same nodes and the same routing for new tuples.
"""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa
import pytest

import minidb
from minidb import catalog as catalog_module
from minidb.datagen import wisconsin
from minidb.errors import MinidbError, MinidbWarning

N = 3000

#: (query, hint): each reads one table through the access path the planner should pick
QUERIES = [
    ("SELECT unique1, unique2 FROM h WHERE unique2 BETWEEN 10 AND 40", None),
    ("SELECT * FROM h WHERE unique1 = 77", None),
    ("SELECT unique1, stringu1 FROM c WHERE unique1 BETWEEN 100 AND 180", None),
    ("SELECT unique1, unique2 FROM c WHERE unique2 < 25", None),
    ("SELECT unique1, unique2 FROM t WHERE unique2 BETWEEN 500 AND 520", None),
    ("SELECT unique1, unique2 FROM t WHERE stringu2 = 'AAAAAA' AND unique2 < 3", "scan"),
    ("SELECT COUNT(*), SUM(unique3), MIN(stringu1) FROM t", None),
    ("SELECT t.unique1, c.unique2 FROM t JOIN c ON t.unique1 = c.unique1 WHERE t.unique2 < 50",
     None),
]


@pytest.fixture(scope="module")
def tenk():
    return wisconsin(N)


def _load(db, data) -> None:
    db.create_table("t", data)
    db.create_index("t", "unique2")
    db.create_index("t", "stringu1")
    db.create_table("c", data, organization="clustered", key="unique1")
    db.create_index("c", "unique2")
    db.create_table("h", data, organization="hash", key="unique1")
    db.create_index("h", "unique2")


def _answers(db) -> list:
    out = []
    for q, hint in QUERIES:
        r = db.sql(q, hint=hint)
        out.append((sorted(r.to_pylist()), r.access_path))
    return out


def _duckdb(data):
    con = duckdb.connect()
    for name in ("t", "c", "h"):
        con.register(f"{name}_src", data)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_src")
    return con


def test_single_node_reopen_keeps_rows_paths_and_accepts_changes(tmp_path, tenk):
    con = _duckdb(tenk)
    with minidb.connect(data_dir=tmp_path, buffer_pages=64) as db:
        _load(db, tenk)
        before = _answers(db)
        described = [db.table(n).describe() for n in ("t", "c", "h")]
    assert (tmp_path / "catalog.json").exists()
    assert not list(tmp_path.glob("*.tmp-*"))  # the catalog was replaced, not left half written
    with minidb.connect(data_dir=tmp_path, buffer_pages=64) as db:
        assert sorted(db.tables()) == ["c", "h", "t"]
        assert [db.table(n).describe() for n in ("t", "c", "h")] == described
        after = _answers(db)
        assert after == before  # same rows, same access paths
        for (q, _), (rows, _) in zip(QUERIES, after, strict=True):
            assert rows == sorted(con.execute(q).fetchall()), q
        assert "clustered" in after[2][1] and "hash lookup" in after[1][1]
        assert "non-clustered B+ tree" in after[4][1] and "dense hash" in after[0][1]
        # changes after the reopen go through every index, and survive the next reopen
        changes = [
            "INSERT INTO t VALUES (9001, 9001, 0,0,0,0,0,0,0,0,0,0,0,'new1','new2','new4')",
            "INSERT INTO c SELECT * FROM t WHERE unique1 = 9001",
            "INSERT INTO h SELECT * FROM t WHERE unique1 = 9001",
            "UPDATE c SET unique1 = unique1 + 100000 WHERE unique2 < 40",
            "UPDATE h SET unique2 = unique2 + 100000 WHERE unique1 < 30",
            "DELETE FROM t WHERE unique2 BETWEEN 100 AND 199",
        ]
        for q in changes:
            db.sql(q)
            con.execute(q)
    checks = ["SELECT * FROM t WHERE unique2 > 2990", "SELECT * FROM c WHERE unique1 > 100000",
              "SELECT unique1 FROM c WHERE unique2 = 9001", "SELECT * FROM h WHERE unique1 = 9001",
              "SELECT unique1, unique2 FROM h WHERE unique2 > 100000",
              "SELECT COUNT(*) FROM t WHERE unique2 BETWEEN 0 AND 300"]
    with minidb.connect(data_dir=tmp_path) as db:
        for q in checks:
            assert sorted(db.sql(q).to_pylist()) == sorted(con.execute(q).fetchall()), q
        assert db.table("t").num_records == N + 1 - 100
        for name in ("t", "c", "h"):
            full = f"SELECT unique1, unique2, stringu1 FROM {name}"
            assert sorted(db.sql(full).to_pylist()) == sorted(con.execute(full).fetchall())


def test_catalog_format(tmp_path, tenk):
    with minidb.connect(data_dir=tmp_path, page_size=8192) as db:
        _load(db, tenk)
    doc = json.loads((tmp_path / "catalog.json").read_text())
    assert doc["format"] == "minidb-catalog" and doc["version"] == 2
    assert doc["page_size"] == 8192
    by_name = {t["name"]: t for t in doc["tables"]}
    t, c, h = by_name["t"], by_name["c"], by_name["h"]
    assert t["schema"][0] == {"name": "unique1", "kind": "int32", "width": 4}
    assert t["schema"][-1] == {"name": "string4", "kind": "char", "width": 52}
    assert (t["organization"], t["key"], t["records"]) == ("heap", None, N)
    assert [(ix["column"], ix["kind"]) for ix in t["indexes"]] == [("unique2", "btree"),
                                                                   ("stringu1", "btree")]
    assert c["organization"] == "clustered" and c["key"] == "unique1"
    assert set(c["storage"]["tree"]) >= {"file", "pages", "id", "versions", "root", "height",
                                         "entries"}
    # a freshly loaded file: every page written once, saved as one run of version 1
    assert t["storage"]["versions"] == [[1, t["storage"]["pages"]]]
    assert h["organization"] == "hash" and h["storage"]["buckets"] >= 1
    assert h["indexes"][0]["kind"] == "dense_hash"
    assert t["stats"]["unique1"] == {"min": 0, "max": N - 1, "distinct": N}
    names = {f.name[: -len(".pages")] for f in tmp_path.glob("*.pages")}
    assert t["storage"]["file"] in names and c["storage"]["tree"]["file"] in names
    # the stored page size is used when none is given, and a different one is refused
    with minidb.connect(data_dir=tmp_path) as db:
        assert db.disk.page_size == 8192
    with pytest.raises(MinidbError, match="8192-byte pages"):
        minidb.connect(data_dir=tmp_path, page_size=4096)


def test_close_keeps_a_users_directory_and_removes_a_temporary_one(tmp_path):
    data = pa.table({"a": pa.array([1, 2, 3], pa.int32())})
    with minidb.connect(data_dir=tmp_path / "mine") as db:
        db.create_table("x", data)
    kept = sorted(p.name for p in (tmp_path / "mine").iterdir())
    assert "catalog.json" in kept and any(n.endswith(".pages") for n in kept)
    db = minidb.connect()
    db.create_table("x", data)
    temporary = db.disk.path
    db.close()
    assert not temporary.exists()


def test_drop_table_and_ctas_are_saved(tmp_path, tenk):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("t", tenk)
        db.create_index("t", "unique2")
        db.sql("CREATE TABLE small AS SELECT unique1, stringu1 FROM t WHERE unique1 < 10")
        dropped = db.table("t").file_names()
        db.drop_table("t")
        assert not any((tmp_path / f"{n}.pages").exists() for n in dropped)
    with minidb.connect(data_dir=tmp_path) as db:
        assert db.tables() == ["small"]
        assert sorted(db.sql("SELECT unique1 FROM small").to_pylist()) == [(i,) for i in range(10)]


def test_reopen_moves_orphans_aside_and_rebuilds_a_missing_index(tmp_path, tenk, monkeypatch):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("t", tenk)
        db.create_index("t", "unique2")
        index_file = db.table("t").index_on("unique2").index.file.name
        want = sorted(db.sql("SELECT * FROM t WHERE unique2 < 20").to_pylist())
    (tmp_path / "tmp-sort-0.pages").write_bytes(b"\0" * 4096)  # left by a query cut off
    (tmp_path / f"{index_file}.pages").unlink()
    # a new process numbers files from 0 again: reopening must not reuse a file's name
    monkeypatch.setattr(catalog_module, "_next_file_id", 0)
    with pytest.warns(MinidbWarning, match="tmp-sort-0.pages.*moved to"):
        db = minidb.connect(data_dir=tmp_path)
    with db:
        assert not (tmp_path / "tmp-sort-0.pages").exists()
        assert (tmp_path / "orphaned-pages" / "tmp-sort-0.pages").exists()
        r = db.sql("SELECT * FROM t WHERE unique2 < 20")
        assert sorted(r.to_pylist()) == want and "B+ tree" in r.access_path
        db.create_table("u", tenk.slice(0, 10))
        db.create_index("u", "unique2")
        assert len(set(db.table("t").file_names()) & set(db.table("u").file_names())) == 0
    with minidb.connect(data_dir=tmp_path) as db:
        assert db.table("t").num_records == N and db.table("u").num_records == 10


def test_a_damaged_catalog_is_a_clear_error(tmp_path):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("x", pa.table({"a": pa.array([1], pa.int32())}))
    (tmp_path / "catalog.json").write_text("{not json")
    with pytest.raises(MinidbError, match="catalog.json is not a readable catalog"):
        minidb.connect(data_dir=tmp_path)
    (tmp_path / "catalog.json").write_text('{"format": "something else"}')
    with pytest.raises(MinidbError, match="not a minidb catalog"):
        minidb.connect(data_dir=tmp_path)


# -- parallel, inline nodes -------------------------------------------------------------------
PARALLEL = [
    (2, "round_robin"),
    (3, "hash(unique1)"),
    (3, "range(unique1: 1000, 2000)"),
    (2, "range_uniform(unique1)"),
    (3, "range_uniform(stringu1)"),
    (3, {0: "unique1 < 1000", 1: "unique1 >= 1000 AND unique1 < 2500", 2: "unique1 >= 2500"}),
]
PARALLEL_QUERIES = [
    "SELECT unique1, unique2 FROM a WHERE unique1 BETWEEN 900 AND 1100",
    "SELECT unique1, unique2 FROM a WHERE unique2 < 30",
    "SELECT ten, COUNT(*), SUM(unique1) FROM a GROUP BY ten",
    "SELECT a.unique1, b.unique2 FROM a JOIN b ON a.unique1 = b.unique1 WHERE b.unique2 < 100",
]


@pytest.mark.parametrize("nodes,spec", PARALLEL, ids=[f"{n}-{s}" for n, s in PARALLEL])
def test_parallel_inline_reopen(tmp_path, tenk, nodes, spec):
    other = wisconsin(N, seed=1)
    row = "(9000, 9000, 0,0,0,0,0,0,0,0,0,0,0,'zz','zz','zz')"
    with minidb.connect(nodes=nodes, data_dir=tmp_path) as db:
        db.create_table("a", tenk, partition=spec)
        db.create_index("a", "unique2")
        db.create_table("b", other, partition="hash(unique1)", organization="clustered",
                        key="unique1")
        db.sql(f"INSERT INTO a VALUES {row}")
        described = db.partitioner("a").describe()
        plans = [db.sql(q).explain() for q in PARALLEL_QUERIES]
        answers = [sorted(db.sql(q).to_pylist()) for q in PARALLEL_QUERIES]
        fragments = [sorted(f["unique1"].tolist()) for f in db.fragments("a")]
    assert (tmp_path / "cluster.json").exists()
    assert all((tmp_path / f"node-{i}" / "catalog.json").exists() for i in range(nodes))
    with minidb.connect(nodes=nodes, data_dir=tmp_path) as db:
        assert sorted(db.tables()) == ["a", "b"]
        assert db.partitioner("a").describe() == described
        assert [sorted(f["unique1"].tolist()) for f in db.fragments("a")] == fragments
        assert [db.sql(q).explain() for q in PARALLEL_QUERIES] == plans
        assert [sorted(db.sql(q).to_pylist()) for q in PARALLEL_QUERIES] == answers
        # a new tuple goes where the same partitioner would have sent it before the reopen
        db.sql("INSERT INTO a VALUES (9001, 9001, 0,0,0,0,0,0,0,0,0,0,0,'zz','zz','zz')")
        p = db.partitioner("a")
        for i, frag in enumerate(db.fragments("a")):
            if p.column is not None and len(frag):
                assert (p.route(frag) == i).all()
        assert db.sql("SELECT COUNT(*) FROM a").to_pylist() == [(N + 2,)]
        db.sql("DELETE FROM a WHERE unique1 >= 9000")
        db.sql("CREATE TABLE c AS SELECT unique1 FROM a WHERE unique1 < 5")
    with minidb.connect(nodes=nodes, data_dir=tmp_path) as db:
        assert sorted(db.tables()) == ["a", "b", "c"]
        assert db.sql("SELECT COUNT(*) FROM a").to_pylist() == [(N,)]
        assert sorted(db.sql("SELECT unique1 FROM c").to_pylist()) == [(i,) for i in range(5)]
        db.drop_table("c")
    with minidb.connect(nodes=nodes, data_dir=tmp_path) as db:
        assert sorted(db.tables()) == ["a", "b"]


def test_parallel_round_robin_turn_and_roles_are_saved(tmp_path, tenk):
    with minidb.connect(nodes=3, disk_nodes=2, data_dir=tmp_path) as db:
        db.create_table("a", tenk.slice(0, 11), partition="round_robin")
        turn = db.partitioner("a").next_node
    doc = json.loads((tmp_path / "cluster.json").read_text())
    assert doc["nodes"] == 3 and doc["disk_nodes"] == [0, 1] and doc["diskless_nodes"] == [2]
    assert doc["tables"][0]["partitioning"] == {"kind": "round_robin", "next_node": turn}
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:  # roles come from the catalog
        assert db.disk == [0, 1] and db.diskless == [2]
        assert db.partitioner("a").next_node == turn


def test_parallel_reopen_refusals(tmp_path):
    data = pa.table({"a": pa.array([1, 2, 3], pa.int32())})
    with minidb.connect(nodes=2, data_dir=tmp_path / "p") as db:
        db.create_table("x", data)
    with pytest.raises(MinidbError, match="parallel database of 2 nodes.*nodes=2"):
        minidb.connect(nodes=3, data_dir=tmp_path / "p")
    with pytest.raises(MinidbError, match="2 disk nodes"):
        minidb.connect(nodes=2, disk_nodes=1, data_dir=tmp_path / "p")
    with pytest.raises(MinidbError, match="holds a parallel database"):
        minidb.connect(data_dir=tmp_path / "p")
    with minidb.connect(data_dir=tmp_path / "s") as db:
        db.create_table("x", data)
    with pytest.raises(MinidbError, match="single-node database"):
        minidb.connect(nodes=2, data_dir=tmp_path / "s")


def test_parallel_reopen_drops_uncommitted_fragments(tmp_path):
    """A fragment the coordinator never recorded (a load cut off) is dropped on reopen; a
    recorded table missing on a node is an error naming both."""
    data = pa.table({"a": pa.array(range(10), pa.int32())})
    with minidb.connect(nodes=2, data_dir=tmp_path) as db:
        db.create_table("x", data, partition="hash(a)")
        schema = db.catalog.get("x").schema
        db.backend.call(0, "create_fragment", "ghost", schema, schema.records_from_arrow(data))
        assert sorted(db.backend.call(0, "tables")) == ["ghost", "x"]
    with minidb.connect(nodes=2, data_dir=tmp_path) as db:
        assert db.tables() == ["x"]
        assert db.backend.call(0, "tables") == ["x"]
        db.backend.call(1, "drop_table", "x")
    with pytest.raises(MinidbError, match="table 'x' has no fragment on node 1"):
        minidb.connect(nodes=2, data_dir=tmp_path)
