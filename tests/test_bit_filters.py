"""Gamma's bit-vector filters (§2; minidb/parallel/bitfilter.py), on joins that repartition (as
Gamma's do; a co-located or broadcast join sends no probe tuple to filter): a filter never drops
a tuple that joins, so rows equal DuckDB's for every join algorithm, placement and key distribution;
the counters add up (tested = sent + eliminated); the filters travel through the scheduler; the
finding fails on a broken filter."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minidb
from minidb.errors import MinidbError
from minidb.experiments.findings import check_findings
from minidb.experiments.registry import run_experiment
from minidb.parallel.bitfilter import BitFilter

rng = np.random.default_rng(11)
N = 4000
RELATIONS = {
    "unique keys": (pa.table({"k": rng.permutation(N), "v": np.arange(N)}),
                    pa.table({"k": rng.permutation(N)[: N // 10], "w": np.arange(N // 10)})),
    "duplicate keys": (pa.table({"k": rng.integers(0, 300, N), "v": np.arange(N)}),
                       pa.table({"k": rng.integers(0, 3000, 200), "w": np.arange(200)})),
    "one key": (pa.table({"k": np.r_[np.full(300, 7), np.arange(1000, 1700)], "v": np.arange(1000)}),
                pa.table({"k": np.full(50, 7), "w": np.arange(50)})),
    "float probe, int build": (pa.table({"k": rng.integers(0, 500, N).astype(float) / 2,
                                         "v": np.arange(N)}),
                               pa.table({"k": np.arange(0, 100, dtype=np.int32),
                                         "w": np.arange(100)})),
    "NULL keys": (pa.table({"k": pa.array([None if i % 5 == 0 else i % 400 for i in range(N)],
                                          pa.int64()), "v": np.arange(N)}),
                  pa.table({"k": pa.array([None if i % 3 == 0 else i for i in range(300)],
                                          pa.int64()), "w": np.arange(300)})),
    "empty build": (pa.table({"k": np.arange(N), "v": np.arange(N)}),
                    pa.table({"k": pa.array([], pa.int64()), "w": pa.array([], pa.int64())})),
}
SQL = "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k"


def oracle(a: pa.Table, b: pa.Table, sql: str = SQL) -> list[tuple]:
    con = duckdb.connect()
    con.register("a", a)
    con.register("b", b)
    return sorted(con.sql(sql).fetchall())


def rows_of(res) -> list[tuple]:
    return sorted(tuple(r.values()) for r in res.to_arrow().to_pylist())


# -- the filter itself -----------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2**62, 2**62), max_size=300), st.integers(1, 5000))
def test_a_value_added_is_always_found(values, bits):
    f = BitFilter(bits)
    f.add(np.array(values, dtype=np.int64))
    assert f.might_contain(np.array(values, dtype=np.int64)).all()


def test_values_hash_by_value_and_the_fill_predicts_false_positives():
    f = BitFilter(8 * 2048)
    f.add(np.arange(1000, dtype=np.int32))
    assert f.might_contain(np.arange(1000, dtype=np.float64)).all()  # 5 (int32) finds 5.0
    others = f.might_contain(np.arange(10_000, 110_000))
    assert abs(others.mean() - f.fill()) < 0.01  # a non-member hits a set bit at random
    assert 0.05 < f.fill() < 0.07  # 1000 values in 16,384 bits: 1 - e^(-1000/16384)


# -- rows with filters ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(RELATIONS))
@pytest.mark.parametrize("join,placement", [("hash_join", "local"), ("simple_hash", "remote"),
                                            ("hybrid_hash", "allnodes"),
                                            ("sort_merge", "local")])
def test_rows_equal_duckdb_and_the_counters_add_up(case, join, placement):
    a, b = RELATIONS[case]
    with minidb.connect(nodes=4, disk_nodes=2, join=join, bit_filters=True) as db:
        db.create_table("a", a, partition="hash(v)")
        db.create_table("b", b, partition="round_robin")
        res = db.sql(f"/*+ {placement} repartition */ {SQL}")
    assert rows_of(res) == oracle(a, b)
    c = res.counters
    tested = c["operators.apply_bit_filters"]
    assert tested == a.num_rows  # every probe tuple met the filters at its producer
    kept = tested - c.get("join.bit_filter_eliminated", 0)
    joining = oracle(a, b, "SELECT count(*) FROM a WHERE k IN (SELECT k FROM b)")[0][0]
    assert joining <= kept  # never fewer than the tuples that join
    if case == "empty build":
        assert kept == 0
    sites = {"local": 2, "remote": 2, "allnodes": 4}[placement]
    assert c["join.bit_filter_bits"] == sites * 8 * 2048  # one packet of bits per join site


def test_filters_with_gammas_distributed_overflow():
    pad = pa.array(["p" * 40] * 3000)
    a = pa.table({"k": rng.permutation(3 * N), "v": np.arange(3 * N)})
    b = pa.table({"k": rng.permutation(3 * N)[:3000], "w": np.arange(3000), "pad": pad})
    with minidb.connect(nodes=4, memory_pages=3, join="simple_hash", bit_filters=True) as db:
        db.create_table("a", a, partition="hash(v)")
        db.create_table("b", b, partition="hash(w)")
        res = db.sql(SQL, hint="repartition")
    assert rows_of(res) == oracle(a, b)
    assert "overflow pass 1: build" in res.explain()
    assert res.counters["join.bit_filter_eliminated"] > 0.5 * a.num_rows


def test_filters_cut_the_packets_and_cost_scheduler_messages():
    a, b = RELATIONS["unique keys"]
    out = {}
    for on in (False, True):
        with minidb.connect(nodes=4, disk_nodes=2) as db:
            db.create_table("a", a, partition="hash(v)")
            db.create_table("b", b, partition="round_robin")
            out[on] = db.sql(("/*+ remote bit_filters */ " if on else "/*+ remote */ ") + SQL)
    off, on = out[False], out[True]
    assert rows_of(off) == rows_of(on)
    probe = off.phase_names.index("probe")
    assert (sum(c["packets_sent_remote"] for c in on.phases[probe].values())
            < 0.3 * sum(c["packets_sent_remote"] for c in off.phases[probe].values()))
    # each of the 2 join sites sends its filter to the scheduler, which sends them to 2 producers
    assert on.scheduler_messages - off.scheduler_messages == 2 + 2
    assert "bit filters: join sites [2, 3] -> scheduler" in on.explain()
    assert "building a 16384-bit filter" in on.explain(fragments=True)
    assert "bit filters" not in off.explain()


def test_a_left_join_keeps_every_probe_tuple():
    a, b = RELATIONS["unique keys"]
    sql = "SELECT a.v, b.w FROM a LEFT JOIN b ON a.k = b.k"
    with minidb.connect(nodes=3, bit_filters=True) as db:
        db.create_table("a", a)
        db.create_table("b", b)
        res = db.sql(sql)
    assert rows_of(res) == oracle(a, b, sql)
    assert "operators.apply_bit_filters" not in res.counters


def test_bit_filters_option_is_checked():
    with pytest.raises(MinidbError, match="bit_filters must be True or False"):
        minidb.connect(nodes=2, bit_filters="yes")


# -- the experiment and its finding ----------------------------------------------------------------
NAME = "gamma.bit_filters_cut_probe_by_selectivity"


def verdict(rows):
    return next(r for r in check_findings(rows) if r.name == NAME)


@pytest.fixture(scope="module")
def filter_rows():
    return run_experiment("gamma.bit_filters", quick=True)


def test_the_finding_passes_on_the_engine(filter_rows):
    assert verdict(filter_rows).status == "pass", verdict(filter_rows).detail
    fills = [r["value"] for r in filter_rows if r["metric"] == "filter_fill"]
    assert fills and all(0 < f < 0.5 for f in fills)


def test_the_finding_fails_on_a_filter_that_drops_nothing(monkeypatch):
    monkeypatch.setattr(BitFilter, "might_contain", lambda self, v: np.ones(len(v), dtype=bool))
    rows = run_experiment("gamma.bit_filters", quick=True)
    assert verdict(rows).status == "fail", verdict(rows).detail


def test_the_finding_fails_on_rows_that_drop_joining_tuples(filter_rows):
    broken = [dict(r, value=0.05) if r["metric"] == "probe_sent_fraction"
              and r["row"].startswith("joinabprime") else r for r in filter_rows]
    assert verdict(broken).status == "fail"
    broken = [dict(r, value=0.9) if r["metric"] == "probe_sent_fraction"
              and r["row"].startswith("joinaselb") else r for r in filter_rows]
    assert verdict(broken).status == "fail"
