"""LEFT OUTER JOIN with every join plug-in: each probe tuple comes out with its matches, or once
padded with a build tuple of NULLs when no build tuple matched it in any pass, partition or
memory-load. Rows equal DuckDB's on one operator (budgets small enough to spill, one key filling
a partition so that ``join_by_memory_loads`` runs), through SQL on one node and on the parallel
engine; the planners run the hinted algorithm itself, and still fall back to the default hash
join (saying so) for a join class whose ``supports_outer`` is False."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minidb
from minidb.buffer.manager import BufferManager
from minidb.exec import ArrayScan, ExecContext
from minidb.exec.expr import Col, Compare
from minidb.exec.join.base import JoinAlgorithm, JoinPluginError
from minidb.exec.store import tuples_per_page
from minidb.plugins import lookup, register
from minidb.storage.disk import Disk
from minidb.storage.schema import Schema, char_column, int_column, set_null_mask

ALGORITHMS = ["hash_join", "simple_hash", "grace_hash", "hybrid_hash", "sort_merge",
              "teradata_merge", "block_nested_loops"]
NEWLY_OUTER = [a for a in ALGORITHMS if a != "hash_join"]


@pytest.fixture
def ctx(tmp_path):
    disk = Disk(tmp_path, 4096)
    return ExecContext(disk, BufferManager(disk, 64), batch_rows=1000)


def relation(prefix: str, keys, vals=None) -> tuple[Schema, np.ndarray]:
    """``{prefix}_id`` (0, 1, ...), a nullable ``{prefix}_key`` (None: NULL), ``{prefix}_v``
    and a 40-byte pad (about 60 tuples a page)."""
    keys = list(keys)
    vals = np.arange(len(keys)) % 11 if vals is None else np.asarray(vals)
    schema = Schema([int_column(f"{prefix}_id", "int64"), int_column(f"{prefix}_key", "int64"),
                     int_column(f"{prefix}_v", "int64"), char_column(f"{prefix}_pad", 40)]
                    ).nullable([f"{prefix}_key"])
    rows = schema.new_records(len(keys))
    rows[f"{prefix}_id"] = np.arange(len(keys))
    nulls = np.array([k is None for k in keys], dtype=bool)
    rows[f"{prefix}_key"] = [0 if k is None else k for k in keys]
    set_null_mask(rows, f"{prefix}_key", nulls)
    rows[f"{prefix}_v"] = vals
    rows[f"{prefix}_pad"] = b"x"
    return schema, rows


CONDITION = Compare(">", Col("a_v"), Col("b_v"))  # ON a.k = b.k AND a.v > b.v


def run_left(ctx, name, build, probe, memory, condition=None):
    (bs, b), (ps, p) = build, probe
    op = lookup("join", name)(ctx, ArrayScan(bs, b, 700), ArrayScan(ps, p, 900), "b_key", "a_key",
                              memory, outer=True, condition=condition)
    out = op.collect()
    b_ids = out["b_id"].tolist()
    padded = op.schema.null_mask(out, "b_id")
    if padded is not None:
        b_ids = [None if n else x for x, n in zip(b_ids, padded.tolist(), strict=True)]
    return op, sorted(zip(out["a_id"].tolist(), b_ids, strict=True), key=repr)


def duck_left(build, probe, condition=False):
    (bs, b), (ps, p) = build, probe
    con = duckdb.connect()
    con.register("a", ps.arrow_from_records(p))
    con.register("b", bs.arrow_from_records(b))
    on = "a_key = b_key" + (" AND a_v > b_v" if condition else "")
    return sorted(con.sql(f"SELECT a_id, b_id FROM a LEFT JOIN b ON {on}").fetchall(), key=repr)


def with_nulls(keys, every: int) -> list:
    return [None if i % every == 0 else int(k) for i, k in enumerate(keys)]


rng = np.random.default_rng(11)
CASES = {
    # NULLs on both sides, duplicate keys, probe keys with no partner (300..449)
    "duplicates and NULLs": (with_nulls(rng.integers(0, 300, 3000), 13),
                             with_nulls(rng.integers(0, 450, 4000), 7)),
    # several memory-loads of build input at 6 pages: overflow, spills, recursion
    "unique keys, mostly unmatched": (list(rng.permutation(3000)),
                                      with_nulls(rng.integers(0, 9000, 5000), 50)),
    # one key fills a partition: join_by_memory_loads, probe tuples spread over the loads
    "all one key": ([5] * 1500 + [None] * 20, [5] * 300 + list(range(300)) + [None] * 5),
    "empty build": ([], with_nulls(range(200), 9)),
    "empty probe": (list(range(200)), []),
    "only NULL keys": ([None] * 50, [None] * 80),
}


@pytest.mark.parametrize("name", ALGORITHMS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("memory", [6, 40])
@pytest.mark.parametrize("condition", [False, True], ids=["on-equality", "on-condition"])
def test_left_join_rows_equal_duckdb(ctx, name, case, memory, condition):
    bkeys, pkeys = CASES[case]
    build, probe = relation("b", bkeys), relation("a", pkeys, (np.arange(len(pkeys)) * 7) % 13)
    op, rows = run_left(ctx, name, build, probe, memory, CONDITION if condition else None)
    assert rows == duck_left(build, probe, condition)
    extra = op.stats.extra
    unmatched = sum(b is None for _, b in rows)
    assert extra["padded"] == unmatched  # each unmatched probe tuple padded once
    assert extra["matches"] == len(rows) - unmatched
    assert extra["peak_memory_pages"] <= memory


@pytest.mark.parametrize("name", ["simple_hash", "grace_hash", "hybrid_hash"])
@pytest.mark.parametrize("loads", [3.5, 3], ids=["partial last load", "exact loads"])
def test_left_join_pads_across_memory_loads(ctx, name, loads):
    """One key fills the build input: its probe file meets several memory-loads, and a probe
    tuple of that key matched in none of them (the ON condition fails) is padded once, during
    the last load (also when the build input fills the loads exactly)."""
    n = int(loads * 5 * tuples_per_page(4096, relation("b", [])[0]))  # 6 pages: loads of 5
    build = relation("b", [5] * n, np.arange(n) % 100)  # b_v 0..99
    pkeys = [5] * 200 + list(range(10, 200))
    probe = relation("a", pkeys, np.r_[np.arange(200) % 3 * 100, np.zeros(190, dtype=int)])
    op, rows = run_left(ctx, name, build, probe, 6, CONDITION)  # a_v 0 matches no b_v
    assert rows == duck_left(build, probe, True)
    assert op.stats.extra["memory_load_passes"] == int(np.ceil(loads))
    assert op.stats.extra["padded"] == sum(b is None for _, b in rows) == 200 // 3 + 1 + 190


@pytest.mark.parametrize("name", ALGORITHMS)
def test_an_inner_join_pads_nothing(ctx, name):
    """An inner join keeps no ``padded`` counter (nested loops: 0) and every pair, NULL keys out."""
    build, probe = relation("b", CASES["all one key"][0]), relation("a", CASES["all one key"][1])
    (bs, b), (ps, p) = build, probe
    op = lookup("join", name)(ctx, ArrayScan(bs, b, 700), ArrayScan(ps, p, 900), "b_key", "a_key",
                              6)
    out = op.collect()
    assert op.stats.extra.get("padded", 0) == 0
    assert len(out) == 300 * 1500 + 1500


@given(st.lists(st.one_of(st.none(), st.integers(-20, 20)), max_size=900),
       st.lists(st.one_of(st.none(), st.integers(-25, 25)), max_size=700),
       st.integers(6, 9), st.sampled_from(ALGORITHMS), st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_keys_any_memory_pad_exactly_the_unmatched(ctx, bkeys, pkeys, memory, name, on):
    """Random keys (NULLs, many duplicates) and budgets small enough to spill: each probe tuple
    comes with exactly its partners, or alone padded once (a brute-force comparison)."""
    bvals, pvals = np.arange(len(bkeys)) % 5, np.arange(len(pkeys)) % 7
    build, probe = relation("b", bkeys, bvals), relation("a", pkeys, pvals)
    _, rows = run_left(ctx, name, build, probe, memory, CONDITION if on else None)
    expected = []
    for i, k in enumerate(pkeys):
        partners = [j for j, kb in enumerate(bkeys)
                    if k is not None and kb == k and (not on or pvals[i] > bvals[j])]
        expected += [(i, j) for j in partners] or [(i, None)]
    assert rows == sorted(expected, key=repr)


# -- through SQL ------------------------------------------------------------------------------

N = 2500
A = pa.table({"id": np.arange(N),
              "k": pa.array(with_nulls(rng.integers(0, 1500, N), 19), pa.int64()),
              "v": rng.integers(0, 50, N)})
B = pa.table({"bid": np.arange(1200),
              "k": pa.array(with_nulls(rng.integers(0, 1000, 1200), 23), pa.int64()),
              "w": rng.integers(0, 50, 1200)})
SQL = {
    "equality": "SELECT a.id, b.bid FROM a LEFT JOIN b ON a.k = b.k",
    "on condition": "SELECT a.id, b.bid, b.w FROM a LEFT JOIN b ON a.k = b.k AND a.v > b.w",
    "where on b": "SELECT a.id, b.bid FROM a LEFT JOIN b ON a.k = b.k WHERE b.w > 10",
    "where b is null": "SELECT a.id, b.w FROM a LEFT JOIN b ON a.k = b.k AND a.v > b.w "
                       "WHERE b.bid IS NULL",
    "aggregate": "SELECT COUNT(*), COUNT(b.bid), SUM(b.w) FROM a LEFT JOIN b ON a.k = b.k",
}


def oracle(sql: str, b: pa.Table = B) -> list[tuple]:
    con = duckdb.connect()
    con.register("a", A)
    con.register("b", b)
    return sorted(con.sql(sql).fetchall(), key=repr)


def rows_of(res) -> list[tuple]:
    return sorted((tuple(r.values()) for r in res.to_arrow().to_pylist()), key=repr)


@pytest.mark.parametrize("name", ALGORITHMS)
@pytest.mark.parametrize("query", list(SQL))
def test_sql_left_join_runs_the_hinted_algorithm(name, query):
    with minidb.connect(memory_pages=6) as db:  # b does not fit: every algorithm overflows
        db.create_table("a", A)
        db.create_table("b", B)
        res = db.sql(SQL[query], hint=name)
        assert rows_of(res) == oracle(SQL[query])
        plan = res.explain()
        assert "cannot preserve" not in plan
        assert f"LEFT OUTER {lookup('join', name).__name__}(" in plan, plan


def test_sql_left_join_with_an_empty_right_table():
    with minidb.connect(memory_pages=6) as db:
        db.create_table("a", A)
        db.create_table("b", B.slice(0, 0))
        for name in ALGORITHMS:
            res = db.sql(SQL["on condition"], hint=name)
            assert rows_of(res) == oracle(SQL["on condition"], B.slice(0, 0)), name


@pytest.mark.parametrize("name", NEWLY_OUTER)
@pytest.mark.parametrize("placement", ["local", "remote"])
def test_parallel_left_join_equals_duckdb(name, placement):
    with minidb.connect(nodes=4, disk_nodes=2, memory_pages=6) as pdb:
        pdb.create_table("a", A, partition="hash(id)")
        pdb.create_table("b", B, partition="hash(bid)")
        for query in ("equality", "on condition", "where on b", "aggregate"):
            res = pdb.sql(SQL[query], hint=f"{placement} repartition {name}")
            assert rows_of(res) == oracle(SQL[query]), query
            plan = res.explain()
            assert "cannot preserve" not in plan
            assert f"build ({lookup('join', name).kind})" in plan, plan


@pytest.mark.parametrize("name", ["simple_hash", "hybrid_hash", "sort_merge"])
def test_parallel_left_join_in_place(name):
    """Co-located and broadcast joins run the hinted algorithm on the data's nodes."""
    with minidb.connect(nodes=4, disk_nodes=2, memory_pages=6) as pdb:
        pdb.create_table("a", A, partition="hash(k)")
        pdb.create_table("b", B, partition="hash(k)")
        for strategy in ("co_located", "broadcast"):
            res = pdb.sql(SQL["on condition"], hint=f"{strategy} {name}")
            assert rows_of(res) == oracle(SQL["on condition"]), strategy
            assert "cannot preserve" not in res.explain()


# -- a join that cannot preserve a side still falls back --------------------------------------

@register("join", "test_inner_only")
class InnerOnlyJoin(JoinAlgorithm):
    """A join written without LEFT JOIN support (``supports_outer`` stays False)."""

    priced_counters = {"build_tuples": "hash_build", "probe_tuples": "hash_probe"}

    def run(self, memory_pages):
        build = self.read_all(self.build_batches())
        self.count("build_tuples", len(build))
        for batch in self.probe_batches():
            self.count("probe_tuples", len(batch))
            probe_idx, build_idx = self.equal_pairs(batch, build)
            yield from self.emit(batch, build, probe_idx, build_idx)


def test_a_join_without_outer_support_is_refused_and_planners_fall_back(ctx):
    build, probe = relation("b", [1, 2]), relation("a", [1, 3])
    with pytest.raises(JoinPluginError, match="cannot run a LEFT OUTER JOIN"):
        InnerOnlyJoin(ctx, ArrayScan(*build), ArrayScan(*probe), "b_key", "a_key", 4, outer=True)
    sql = SQL["on condition"]
    with minidb.connect(memory_pages=6) as db:
        db.create_table("a", A)
        db.create_table("b", B)
        res = db.sql(sql, hint="test_inner_only")
        assert rows_of(res) == oracle(sql)
        assert "the test_inner_only join cannot preserve a side, so the default hash join" \
            in res.explain()
    with minidb.connect(nodes=4, disk_nodes=2, memory_pages=6) as pdb:
        pdb.create_table("a", A, partition="hash(id)")
        pdb.create_table("b", B, partition="hash(bid)")
        res = pdb.sql(sql, hint="remote test_inner_only")
        assert rows_of(res) == oracle(sql)
        plan = res.explain()
        assert plan.count("the test_inner_only join cannot preserve a side") == 1, plan
        assert "build (hash_join)" in plan


def test_the_lab2_student_join_still_falls_back():
    """Lab 2's template (and its reference) leaves LEFT JOIN out: its class keeps
    ``supports_outer`` False, so the planner runs a LEFT JOIN hinted with it by the default hash
    join, while the built-in Hybrid join (the model answer) runs it itself."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for path in ("labs/lab2_joins/hybrid_hash.py",
                 "autograder/assignments/lab2/reference/hybrid_hash.py"):
        spec = importlib.util.spec_from_file_location("outer_lab2_student", root / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # registers student_hybrid
        assert not module.StudentHybridHashJoin.supports_outer, path
        with minidb.connect(memory_pages=6) as db:
            db.create_table("a", A)
            db.create_table("b", B)
            res = db.sql(SQL["equality"], hint="student_hybrid")
            assert rows_of(res) == oracle(SQL["equality"])
            assert "the student_hybrid join cannot preserve a side" in res.explain()
    assert lookup("join", "hybrid_hash").supports_outer
