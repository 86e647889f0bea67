"""The parallel engine with inline nodes: rows equal DuckDB's, invariants, bad input."""

from __future__ import annotations

import pytest
from cluster_checks import (
    check_against_duckdb,
    check_fragments,
    check_load,
    check_packets,
    load,
    oracle,
    partition_specs,
)

import minidb
from minidb.errors import FragmentCoverageError, MinidbError, PartitioningError, UnsupportedSQLError

CASES = [(n, spec) for n in (1, 2, 4) for spec in partition_specs(n)]


@pytest.mark.parametrize("nodes,spec", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_queries_match_duckdb(nodes, spec, wisconsin_pair):
    with minidb.connect(nodes=nodes, backend="inline", timeout=60) as db:
        load(db, wisconsin_pair, spec)
        check_load(db, wisconsin_pair)
        check_fragments(db, "a")
        results = check_against_duckdb(db, oracle(wisconsin_pair))
        for r in results:
            check_packets(r)
            if nodes == 1:
                assert r.counters["packets_sent_remote"] == 0


def test_connect_routes_to_the_parallel_engine():
    with minidb.connect(nodes=2) as db:
        assert isinstance(db, minidb.ParallelDatabase)
    with minidb.connect() as db:
        assert isinstance(db, minidb.Database)


def test_counters_phases_and_control_messages(wisconsin_pair):
    with minidb.connect(nodes=4, backend="inline") as db:
        load(db, wisconsin_pair, "hash(unique1)")
        # Gamma's plan (hinted: the planner would join these co-located tables in place)
        r = db.sql("SELECT a.unique1, b.unique2 FROM a JOIN b ON a.unique1 = b.unique1",
                   hint="repartition")
        assert r.phase_names == ["build", "probe"]
        assert set(r.per_node) == {0, 1, 2, 3}
        # both relations hashed on the join key: every probe packet stays on its node
        assert sum(c["packets_sent_remote"] for c in r.phases[1].values()) == 0
        assert r.counters["scheduler_messages"] == 3 * r.counters["operators_started"]
        assert "phase 2: probe" in r.explain()
        assert r.modeled_s is None
        # a selection on the range attribute goes only to the nodes holding the range
        db.create_table("r", wisconsin_pair[0], partition="range(unique1: 5000, 10000, 15000)")
        one = db.sql("SELECT unique1 FROM r WHERE unique1 BETWEEN 6000 AND 6999")
        assert list(one.per_node) == [1] and one.rows == 1000


def test_data_moved_accounts_for_every_routed_byte(wisconsin_pair):
    with minidb.connect(nodes=3, backend="inline") as db:
        load(db, wisconsin_pair, "round_robin")
        r = db.sql("SELECT * FROM a JOIN b ON a.unique1 = b.unique2")
        moved = r.data_moved()
        assert [p["name"] for p in moved] == r.phase_names == ["build", "probe"]
        assert len(r.phase_wall_s) == 2 and all(t > 0 for t in r.phase_wall_s)
        routed = sum(r.counters[k] for k in ("bytes_sent_remote", "bytes_short_circuited",
                                             "bytes_to_host"))
        assert sum(p["bytes"] for p in moved) == routed > 0
        # round robin: both relations are repartitioned on the join key by all three nodes
        assert [p["senders"] for p in moved] == [3, 3]
        build = moved[0]
        assert build["bytes"] == len(wisconsin_pair[1]) * 208  # b's whole tuples hashed on unique2
        assert build["mb_s_per_node"] == pytest.approx(
            build["bytes"] / 3 / build["wall_s"] / 1e6)


def test_avg_order_limit_insert_delete(wisconsin_pair):
    with minidb.connect(nodes=3, backend="inline") as db:
        db.create_table("a", wisconsin_pair[0], partition="hash(unique1)")
        con = oracle(wisconsin_pair)
        for q in ("SELECT ten, AVG(unique1), COUNT(*) FROM a GROUP BY ten ORDER BY ten",
                  "SELECT unique1 FROM a WHERE unique2 < 100 ORDER BY unique1 DESC LIMIT 7",
                  "SELECT COUNT(*), AVG(unique2) FROM a"):
            assert db.sql(q).to_pylist() == [tuple(x) for x in con.execute(q).fetchall()], q
        assert db.sql("INSERT INTO a VALUES " + ", ".join(
            f"({-i}, {-i}" + ", 0" * 11 + ", 'x', 'y', 'z')" for i in range(1, 4))).rows == 3
        assert db.sql("SELECT COUNT(*) FROM a WHERE unique1 < 0").to_pylist() == [(3,)]
        check_fragments(db, "a")
        assert db.sql("DELETE FROM a WHERE unique1 < 500").rows == 503
        assert db.sql("SELECT COUNT(*) FROM a").to_pylist() == [(19500,)]
        with pytest.raises(UnsupportedSQLError):
            db.sql("INSERT INTO a SELECT * FROM a")


def test_bad_input():
    with pytest.raises(MinidbError, match="nodes"):
        minidb.connect(nodes=0)
    with pytest.raises(MinidbError, match="disk_nodes"):
        minidb.connect(nodes=2, disk_nodes=3)
    with minidb.connect(nodes=2) as db:
        with pytest.raises(MinidbError, match="unknown"):
            db.create_table("t", "wisconsin:100", partition="zigzag(unique1)")
        with pytest.raises(FragmentCoverageError, match="gap"):
            db.create_table("t", "wisconsin:100", partition={0: "unique1 < 10", 1: "unique1 > 20"})
        with pytest.raises(PartitioningError):
            db.create_table("t", "wisconsin:100", partition="range(unique1: 10, 20)")
        assert db.tables() == []  # nothing half-created
        db.create_table("t", "wisconsin:100", partition={0: "unique1 < 50", 1: "unique1 >= 50"})
        assert [len(f) for f in db.fragments("t")] == [50, 50]


def test_modeled_time_from_the_cost_model():
    with minidb.connect(nodes=2, profile="gamma") as db:
        db.create_table("a", "wisconsin:2000", partition="hash(unique1)")
        r = db.sql("SELECT onePercent, MIN(unique1) FROM a GROUP BY onePercent")
        assert r.modeled_s is not None and r.modeled_s > 0


def test_create_table_as_stores_round_robin_or_as_the_partition_hint_says():
    import duckdb
    import numpy as np

    from minidb import datagen

    data = datagen.wisconsin(3000, seed=4)
    with minidb.connect(nodes=3, backend="inline") as db:
        db.create_table("t", data)
        db.sql("CREATE TABLE rr AS SELECT unique1, unique2 FROM t WHERE unique2 < 1500")
        sizes = [len(f) for f in db.fragments("rr")]
        # Gamma's round-robin default: each of the 3 selecting nodes deals its own results
        # round-robin, so fragments differ by at most one tuple per producer
        assert sum(sizes) == 1500 and max(sizes) - min(sizes) <= 3
        db.sql("/*+ partition=range(unique1: 1000, 2000) */ "
               "CREATE TABLE r AS SELECT unique1, unique2 FROM t WHERE unique2 < 1500")
        frags = db.fragments("r")
        assert db.partitioner("r").describe() == "range(unique1: 1000, 2000)"
        assert frags[0]["unique1"].max() < 1000 <= frags[1]["unique1"].min()
        assert frags[1]["unique1"].max() < 2000 <= frags[2]["unique1"].min()
        got = sorted(np.concatenate(frags)["unique1"].tolist())
        expected = sorted(r[0] for r in duckdb.sql("SELECT unique1 FROM data WHERE unique2 < 1500").fetchall())
        assert got == expected
        with pytest.raises(MinidbError, match="only applies to CREATE TABLE"):
            db.sql("SELECT * FROM t", hint="partition=hash(unique1)")
