"""Every registered join plug-in against DuckDB, its counters against its algorithm, its memory
budget, and the plug point itself (a join written inside this test runs everywhere)."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minidb
from minidb.buffer.manager import BufferManager
from minidb.errors import MinidbError
from minidb.exec import ArrayScan, ExecContext
from minidb.exec.join.base import JoinAlgorithm, JoinPluginError
from minidb.exec.store import tuples_per_page
from minidb.plugins import lookup, names, register
from minidb.storage.disk import Disk
from minidb.storage.schema import Schema, char_column, float_column, int_column

ALGORITHMS = ["hash_join", "simple_hash", "grace_hash", "hybrid_hash", "sort_merge",
              "block_nested_loops"]


def test_every_builtin_join_is_registered():
    assert set(ALGORITHMS) <= set(names("join"))


@pytest.fixture
def ctx(tmp_path):
    disk = Disk(tmp_path, 4096)
    return ExecContext(disk, BufferManager(disk, 64), batch_rows=1000)


def table(prefix: str, keys: np.ndarray, key_type: str = "int") -> tuple[Schema, np.ndarray]:
    key = {"int": lambda n: int_column(n, "int64"), "float": float_column}.get(key_type)
    kcol = key(f"{prefix}_key") if key else char_column(f"{prefix}_key", int(key_type[4:]))
    schema = Schema([int_column(f"{prefix}_id"), kcol, char_column(f"{prefix}_pad", 40)])
    rows = np.zeros(len(keys), dtype=schema.dtype)
    rows[f"{prefix}_id"] = np.arange(len(keys))
    rows[f"{prefix}_key"] = keys
    rows[f"{prefix}_pad"] = b"x"
    return schema, rows


def run_join(ctx, name, build, probe, memory):
    (bs, b), (ps, p) = build, probe
    op = lookup("join", name)(ctx, ArrayScan(bs, b, 700), ArrayScan(ps, p, 900), "b_key", "a_key",
                              memory)
    out = op.collect()
    return op, sorted(zip(out["a_id"].tolist(), out["b_id"].tolist(), strict=True))


def duck_pairs(build, probe):
    (bs, b), (ps, p) = build, probe
    con = duckdb.connect()
    con.register("a", ps.arrow_from_records(p))
    con.register("b", bs.arrow_from_records(b))
    return sorted(con.sql("SELECT a_id, b_id FROM a JOIN b ON a_key = b_key").fetchall())


rng = np.random.default_rng(7)
CASES = {
    "unique keys": (rng.permutation(3000), rng.integers(0, 6000, 5000)),
    "duplicate keys": (rng.integers(0, 300, 3000), rng.integers(0, 300, 4000)),
    "all one key (skew)": (np.full(400, 5), np.r_[np.full(300, 5), np.arange(300)]),
    "empty build": (np.zeros(0, dtype=np.int64), np.arange(100)),
    "empty probe": (np.arange(100), np.zeros(0, dtype=np.int64)),
    "negative and huge": (np.r_[-(2**62), -1, 0, 2**62, np.arange(1, 2000) * 2**40],
                          np.r_[-(2**62), 0, np.arange(1, 3000) * 2**39]),
}


@pytest.mark.parametrize("name", ALGORITHMS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("memory", [6, 40])
def test_rows_equal_duckdb(ctx, name, case, memory):
    bkeys, pkeys = CASES[case]
    build, probe = table("b", bkeys), table("a", pkeys)
    op, pairs = run_join(ctx, name, build, probe, memory)
    assert pairs == duck_pairs(build, probe)
    assert op.stats.extra["matches"] == len(pairs)
    assert op.stats.extra["peak_memory_pages"] <= memory  # the budget holds


@pytest.mark.parametrize("name", ALGORITHMS)
@pytest.mark.parametrize("types", [("int", "float"), ("float", "int"), ("text3", "text8")])
def test_keys_of_mixed_types_join_by_value(ctx, name, types):
    if types[0].startswith("text"):
        bkeys = np.array([b"k%d" % (i % 50) for i in range(2000)], dtype="S3")
        pkeys = np.array([b"k%d" % (i % 70) for i in range(2500)], dtype="S8")
    else:
        bkeys = (np.arange(2000) % 97).astype(np.float64 if types[0] == "float" else np.int64)
        pkeys = (np.arange(2500) % 120).astype(np.float64 if types[1] == "float" else np.int64)
        if types[1] == "float":
            pkeys = pkeys + np.where(np.arange(2500) % 2 == 0, 0.0, 0.5)  # half match nothing
    build, probe = table("b", bkeys, types[0]), table("a", pkeys, types[1])
    _, pairs = run_join(ctx, name, build, probe, 8)
    assert pairs == duck_pairs(build, probe) and pairs


def test_simple_hash_overflows_once_per_extra_memory_load(ctx):
    """Gamma §6: each pass of the Simple hash join handles one memory-load of the building
    relation, so a build input k memory-loads big overflows k - 1 times."""
    build, probe = table("b", rng.permutation(6000)), table("a", rng.integers(0, 6000, 8000))
    per_page = tuples_per_page(4096, build[0])
    for loads in (1, 2, 3, 5):
        memory = -(-6000 // (per_page * loads)) + 1  # (memory - 1) pages hold 1/loads of it
        op, pairs = run_join(ctx, "simple_hash", build, probe, memory)
        extra = op.stats.extra
        assert pairs == duck_pairs(build, probe)
        assert extra["overflows"] == loads - 1
        assert extra["spill_pages_written"] == extra["spill_pages_read"]
        # every pass re-reads what the previous passes spilled: probe tuples are looked up more
        # often the more overflows there are
        assert extra["probe_tuples"] >= 8000 * (1 + 0.4 * (loads - 1))


def test_hybrid_spills_less_than_grace_and_nothing_when_it_fits(ctx):
    build, probe = table("b", rng.permutation(6000)), table("a", rng.integers(0, 6000, 8000))
    pages = -(-6000 // tuples_per_page(4096, build[0]))
    roomy, tight = pages + 4, pages // 4
    hybrid, _ = run_join(ctx, "hybrid_hash", build, probe, roomy)
    grace, _ = run_join(ctx, "grace_hash", build, probe, roomy)
    assert hybrid.stats.extra["spill_pages_written"] == 0
    assert grace.stats.extra["spill_pages_written"] >= pages  # GRACE writes every partition
    tight_hybrid, _ = run_join(ctx, "hybrid_hash", build, probe, tight)
    tight_grace, _ = run_join(ctx, "grace_hash", build, probe, tight)
    assert 0 < tight_hybrid.stats.extra["partitions_spilled"]
    assert 0 < tight_hybrid.stats.extra["spill_pages_written"] \
        < tight_grace.stats.extra["spill_pages_written"]


def test_sort_merge_counts_runs_when_the_inputs_do_not_fit(ctx):
    build, probe = table("b", rng.permutation(6000)), table("a", rng.integers(0, 6000, 8000))
    small, _ = run_join(ctx, "sort_merge", build, probe, 8)
    large, _ = run_join(ctx, "sort_merge", build, probe, 400)
    assert small.stats.extra["runs"] > 2 and small.stats.extra["sort_pages_written"] > 0
    assert large.stats.extra["sort_pages_written"] == 0
    assert small.stats.extra["sort_comparisons"] > 0 and large.stats.extra["merge_tuples"] == 14000


def test_a_join_declaring_no_cost_is_refused(ctx):
    class Free(JoinAlgorithm):
        def run(self, memory_pages):
            yield from ()

    build, probe = table("b", np.arange(5)), table("a", np.arange(5))
    with pytest.raises(JoinPluginError, match="no priced_counters"):
        Free(ctx, ArrayScan(*build), ArrayScan(*probe), "b_key", "a_key", 4)

    class Unknown(Free):
        priced_counters = {"build_tuples": "teleport"}

    with pytest.raises(JoinPluginError, match="teleport"):
        Unknown(ctx, ArrayScan(*build), ArrayScan(*probe), "b_key", "a_key", 4)


@register("join", "test_nested_dict")
class DictJoin(JoinAlgorithm):
    """A student's join: a Python dict from key to build rows (slow, obviously right)."""

    priced_counters = {"build_tuples": "hash_build", "probe_tuples": "hash_probe"}

    def run(self, memory_pages):
        build = self.read_all(self.build_batches(), self.build_schema.dtype)
        self.count("build_tuples", len(build))
        where: dict = {}
        for i, k in enumerate(build[self.build_key].tolist()):
            where.setdefault(k, []).append(i)
        for batch in self.probe_batches():
            self.count("probe_tuples", len(batch))
            pairs = [(i, j) for i, k in enumerate(batch[self.probe_key].tolist())
                     for j in where.get(k, [])]
            if pairs:
                pi, bi = (np.array(x, dtype=np.intp) for x in zip(*pairs, strict=True))
                yield from self.emit(batch, build, pi, bi)


def wisconsin_like(n: int, seed: int) -> pa.Table:
    r = np.random.default_rng(seed)
    return pa.table({"unique1": r.permutation(n), "unique2": np.arange(n),
                     "two": np.arange(n) % 2, "ten": r.integers(0, 10, n)})


@pytest.mark.parametrize("join", ["test_nested_dict", "hybrid_hash", "sort_merge"])
def test_a_registered_join_runs_from_sql_by_hint_and_by_connect(join):
    big, small = wisconsin_like(3000, 1), wisconsin_like(800, 2)
    sql = ("SELECT a.unique2, b.unique2, a.ten FROM a JOIN b ON a.unique1 = b.unique1 "
           "WHERE b.ten < 7")
    con = duckdb.connect()
    con.register("a", big)
    con.register("b", small)
    expected = sorted(con.sql(sql).fetchall())
    with minidb.connect(memory_pages=8) as db:
        db.create_table("a", big)
        db.create_table("b", small)
        hinted = db.sql(sql, hint=join)
        assert sorted(tuple(r.values()) for r in hinted.to_arrow().to_pylist()) == expected
        assert f"{join} join" in hinted.explain()
    with minidb.connect(memory_pages=8, join=join) as db:
        db.create_table("a", big)
        db.create_table("b", small)
        rows = [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()]
        assert sorted(rows) == expected


def test_parallel_join_runs_the_chosen_algorithm_on_every_node():
    big, small = wisconsin_like(4000, 3), wisconsin_like(1000, 4)
    sql = "SELECT a.unique2, b.unique2 FROM a JOIN b ON a.unique1 = b.unique1"
    con = duckdb.connect()
    con.register("a", big)
    con.register("b", small)
    expected = sorted(con.sql(sql).fetchall())
    for join in ("test_nested_dict", "simple_hash", "hybrid_hash"):
        with minidb.connect(nodes=3, memory_pages=6, join=join) as pdb:
            pdb.create_table("a", big, partition="hash(unique2)")
            pdb.create_table("b", small, partition="hash(unique2)")
            res = pdb.sql(sql)
            assert sorted(tuple(r.values()) for r in res.to_arrow().to_pylist()) == expected
            kind = lookup("join", join).kind
            assert f"build ({kind})" in res.explain()
            ran = [n for n in res.phases[-1].values() if n["operators"].get(kind)]
            assert len(ran) == 3  # every join node ran it, and was charged its build and probe
            assert all(n["tuples"]["hash_probe"] for n in ran)



def test_unknown_join_names_fail_in_one_line():
    with pytest.raises(MinidbError, match="unknown join 'quantum'; choose one of: .*hybrid_hash"):
        minidb.connect(join="quantum")
    with minidb.connect() as db:
        db.create_table("a", wisconsin_like(10, 1))
        with pytest.raises(MinidbError, match="unknown hint 'quantum'.*sort_merge"):
            db.sql("/*+ quantum */ SELECT * FROM a")


@pytest.mark.ray
def test_a_join_defined_in_a_test_runs_on_ray_actors(ray_session):
    """The plan carries the join class itself, so a class Ray workers cannot import by name
    (defined in a notebook, a test, a student's file) still runs there."""
    big, small = wisconsin_like(3000, 5), wisconsin_like(700, 6)
    sql = "SELECT a.unique2, b.unique2 FROM a JOIN b ON a.unique1 = b.unique1"
    con = duckdb.connect()
    con.register("a", big)
    con.register("b", small)
    expected = sorted(con.sql(sql).fetchall())
    with minidb.connect(nodes=2, backend="ray", join="test_nested_dict", timeout=60) as rdb:
        rdb.create_table("a", big, partition="hash(unique2)")
        rdb.create_table("b", small, partition="hash(unique2)")
        res = rdb.sql(sql)
        assert sorted(tuple(r.values()) for r in res.to_arrow().to_pylist()) == expected
        assert "build (join)" in res.explain()  # DictJoin keeps the base class's kind


@given(st.lists(st.integers(-30, 30), max_size=1200), st.lists(st.integers(-30, 30), max_size=900),
       st.integers(6, 9), st.sampled_from(ALGORITHMS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_keys_any_memory_give_every_equal_pair_once(ctx, bkeys, pkeys, memory, name):
    """Random keys with many duplicates and budgets small enough to spill: each algorithm's
    pairs are exactly those of a brute-force comparison."""
    build = table("b", np.array(bkeys, dtype=np.int64))
    probe = table("a", np.array(pkeys, dtype=np.int64))
    _, pairs = run_join(ctx, name, build, probe, memory)
    b, p = np.array(bkeys, dtype=np.int64), np.array(pkeys, dtype=np.int64)
    pi, bi = np.nonzero(p[:, None] == b[None, :])
    assert pairs == sorted(zip(pi.tolist(), bi.tolist(), strict=True))


def test_a_join_that_announces_its_build_builds_when_opened(ctx):
    """``open`` consumes the whole build input (Gamma §6: the build phase builds) and none of
    the probe input; a join that does not announce it builds on its first ``next``."""
    build, probe = table("b", rng.permutation(3000)), table("a", rng.integers(0, 3000, 2000))
    for name in ("simple_hash", "hybrid_hash", "grace_hash", "sort_merge", "block_nested_loops",
                 "test_nested_dict"):
        bs, ps = ArrayScan(*build, 700), ArrayScan(*probe, 900)
        op = lookup("join", name)(ctx, bs, ps, "b_key", "a_key", 8)
        op.open()
        announces = lookup("join", name).announces_build
        assert (bs.stats.tuples_out == 3000) == announces, name
        assert ps.stats.tuples_out == 0 or name == "sort_merge", name  # sort-merge sorts it later
        out = 0
        while (batch := op.next()) is not None:
            out += len(batch)
        op.close()
        assert out == len(duck_pairs(build, probe)), name


def test_the_base_class_docstring_example_joins_empty_and_duplicate_inputs(ctx):
    """The join ``base.py`` shows students, run as written, on an empty build input and on
    repeated keys (``read_all`` of nothing is an empty array of the build input's type)."""
    class Example(JoinAlgorithm):
        priced_counters = {"build_tuples": "hash_build", "probe_tuples": "hash_probe"}

        def run(self, memory_pages):
            build = self.read_all(self.build_batches())
            self.count("build_tuples", len(build))
            for batch in self.probe_batches():
                self.count("probe_tuples", len(batch))
                probe_idx, build_idx = self.equal_pairs(batch, build)
                yield from self.emit(batch, build, probe_idx, build_idx)

    for bkeys, pkeys in (CASES["empty build"], CASES["duplicate keys"]):
        build, probe = table("b", bkeys), table("a", pkeys)
        op = Example(ctx, ArrayScan(*build, 700), ArrayScan(*probe, 900), "b_key", "a_key", 4)
        out = op.collect()
        assert sorted(zip(out["a_id"].tolist(), out["b_id"].tolist(), strict=True)) == \
            duck_pairs(build, probe)
