"""Speedup and scaleup (minidb.cluster.scaling), and two of Gamma's findings from counters alone.

Gamma (DeWitt et al. 1988, Section 5.2.1) ran its selections on a 100,000 tuple Wisconsin
relation over 1 to 8 processors with disks. Figures 2 and 3: a 1% selection without an index
speeds up almost linearly. Figure 5: a 0% selection through an index gets slower as processors
are added (0.25 s to 0.58 s), because starting the operators on every processor costs more than
the one or two index pages each of them reads. Here both come out of the work the inline nodes
counted, priced by the unchanged ``gamma`` hardware profile (``clock="modeled"``); nothing in
these tests depends on the speed of the machine running them.
"""

from __future__ import annotations

import pytest

import minidb
from minidb.cluster.scaling import format_rows, scaleup, speedup
from minidb.datagen import wisconsin
from minidb.errors import MinidbError

ROWS = 100_000  # Gamma's relation for Figures 2-5
NODES = [1, 2, 4, 8]
ONE_PERCENT = f"unique2 BETWEEN 0 AND {ROWS // 100 - 1}"  # no index on unique2: a file scan


@pytest.fixture(scope="module")
def relation():
    return wisconsin(ROWS)


def gamma_db(data, index: tuple[str, bool] | None = None):
    """A ``make_db``: the relation hashed on unique1 over ``nodes`` disk nodes, Gamma profile,
    4 KB pages (Gamma's page size in Section 5.2.1)."""

    def make(nodes: int):
        db = minidb.connect(nodes=nodes, backend="inline", profile="gamma", page_size=4096)
        db.create_table("a", data, partition="hash(unique1)")
        if index is not None:
            db.create_index("a", index[0], clustered=index[1])
        return db

    return make


@pytest.mark.parametrize("query", [
    f"SELECT * FROM a WHERE {ONE_PERCENT}",  # result tuples returned to the host
    f"CREATE TABLE r AS SELECT * FROM a WHERE {ONE_PERCENT}",  # stored, as Gamma did
], ids=["to-host", "stored"])
def test_one_percent_nonindexed_selection_speeds_up_near_linearly(relation, query):
    rows = speedup(query, NODES, gamma_db(relation), clock="modeled", rows=ROWS)
    print("\n" + format_rows(rows))
    assert [r["nodes"] for r in rows] == NODES
    assert rows[0]["speedup"] == 1.0
    ups = [r["speedup"] for r in rows]
    assert all(a < b for a, b in zip(ups, ups[1:], strict=False)), ups  # monotone increasing
    assert ups[-1] >= 6.0, ups  # near-linear: at least 6 on 8 nodes
    assert all(r["speedup"] <= r["ideal"] for r in rows)  # and not better than linear
    assert [r["ideal"] for r in rows] == [1.0, 2.0, 4.0, 8.0]


@pytest.mark.parametrize("column,clustered", [("unique1", True), ("unique2", False)],
                         ids=["clustered", "non-clustered"])
def test_zero_percent_indexed_selection_does_not_speed_up(relation, column, clustered):
    """A range below every key: each node descends its index and finds nothing."""
    results = {}

    def query(db):
        r = db.sql(f"SELECT * FROM a WHERE {column} BETWEEN -10 AND -1")
        results[db.num_nodes] = r
        return r

    rows = speedup(query, NODES, gamma_db(relation, (column, clustered)), clock="modeled")
    print("\n" + format_rows(rows))
    times = {r["nodes"]: r["elapsed_s"] for r in rows}
    assert times[8] >= times[1], times  # more nodes, slower
    assert rows[-1]["speedup"] < 1.0
    # ... and that comes from counted work, not from a constant: every node ran the selection,
    # started its operators (each costing the scheduler's control messages), read only a few
    # index pages through its index and scanned nothing.
    one = results[1].counters
    for n, r in results.items():
        c = r.counters
        assert r.rows == 0 and sorted(r.per_node) == list(range(n))
        assert c["operators_started"] == n * one["operators_started"]
        assert c["scheduler_messages"] == n * one["scheduler_messages"]
        assert c["pages_read_seq"] == 0
        assert all(0 < pn["pages_read"] <= one["pages_read"] <= 4 for pn in r.per_node.values())


def small_db(rows: int = 2000, seed: int = 0):
    def make(nodes: int):
        db = minidb.connect(nodes=nodes, backend="inline", profile="gamma", page_size=4096)
        db.create_table("a", wisconsin(rows, seed=seed), partition="hash(unique1)")
        return db

    return make


def test_different_rows_raise_naming_both_configurations():
    def fake(nodes: int):  # a make_db that loads other data for 2 nodes
        return small_db(seed=0 if nodes == 1 else 1)(nodes)

    query = "SELECT unique1, stringu1 FROM a WHERE unique2 < 20"
    with pytest.raises(MinidbError, match=r"configuration 1 \(nodes=1\) and configuration 2 "
                                          r"\(nodes=2\).*different rows"):
        speedup(query, [1, 2], fake)

    def fewer(nodes: int):  # and one that loads fewer tuples for 4 nodes
        return small_db(rows=2000 if nodes < 4 else 1990)(nodes)

    with pytest.raises(MinidbError, match=r"configuration 3 \(nodes=4\): 20 rows vs 10 rows"):
        speedup("SELECT unique1 FROM a WHERE unique1 >= 1980", [1, 2, 4], fewer)


def test_speedup_of_a_configuration_with_itself_is_one():
    query = "SELECT * FROM a WHERE unique2 < 20"
    rows = speedup(query, [2, 2], small_db())
    assert [r["speedup"] for r in rows] == [1.0, 1.0]
    assert [r["ideal"] for r in rows] == [1.0, 1.0]
    assert rows[0]["elapsed_s"] == rows[1]["elapsed_s"] == rows[0]["modeled_s"]
    wall = speedup(query, [3], small_db(), clock="wall", repeat=2)
    assert wall[0]["speedup"] == 1.0 and wall[0]["clock"] == "wall"
    assert wall[0]["elapsed_s"] == wall[0]["wall_s"] > 0


def test_several_queries_share_one_load_per_configuration():
    built = []

    def make(nodes: int):
        built.append(nodes)
        return small_db()(nodes)

    rows = speedup({"few": "SELECT unique1 FROM a WHERE unique2 < 20",
                    "count": "SELECT COUNT(*) FROM a"}, [1, 2], make)
    assert built == [1, 2]
    assert [(r["query"], r["nodes"], r["result_rows"]) for r in rows] == \
        [("few", 1, 20), ("few", 2, 20), ("count", 1, 1), ("count", 2, 1)]
    assert rows[0]["speedup"] == rows[2]["speedup"] == 1.0


def test_batch_scaleup_is_new_elapsed_over_old_elapsed():
    """Tandem: BatchScaleup = NewElapsedTime / OldElapsedTime as problem and system grow."""

    def make(nodes: int, rows: int):
        db = minidb.connect(nodes=nodes, backend="inline", profile="gamma", page_size=4096)
        db.create_table("a", wisconsin(rows), partition="hash(unique1)")
        return db

    rows = scaleup(lambda n: f"SELECT * FROM a WHERE unique2 < {n // 100}",
                   [(1, 5000), (2, 10000), (4, 20000)], make)
    print("\n" + format_rows(rows))
    assert [(r["nodes"], r["rows"], r["result_rows"]) for r in rows] == \
        [(1, 5000, 50), (2, 10000, 100), (4, 20000, 200)]
    base = rows[0]["elapsed_s"]
    for r in rows:
        assert r["scaleup"] == pytest.approx(r["elapsed_s"] / base)
        assert r["ideal"] == 1.0
    assert rows[0]["scaleup"] == 1.0
    # each node scans the same number of tuples; only the fixed costs per node add up
    assert all(1.0 <= r["scaleup"] < 1.25 for r in rows), rows


def test_bad_arguments():
    query = "SELECT * FROM a WHERE unique2 < 20"
    with pytest.raises(MinidbError, match="clock"):
        speedup(query, [1], small_db(), clock="cpu")
    with pytest.raises(MinidbError, match="node_counts"):
        speedup(query, [], small_db())
    with pytest.raises(MinidbError, match="node_counts"):
        speedup(query, [0, 2], small_db())
    with pytest.raises(MinidbError, match="pair"):
        scaleup(lambda n: query, [(1, 2, 3)], lambda n, r: None)

    def no_profile(nodes: int):
        db = minidb.connect(nodes=nodes, backend="inline", page_size=4096)
        db.create_table("a", "wisconsin:1000", partition="round_robin")
        return db

    with pytest.raises(MinidbError, match="profile"):
        speedup(query, [2], no_profile)
    assert speedup(query, [2], no_profile, clock="wall")[0]["modeled_s"] is None


def test_format_rows():
    text = format_rows([{"nodes": 1, "elapsed_s": 2.5, "speedup": 1.0, "x": None},
                        {"nodes": 8, "elapsed_s": 0.25, "speedup": 10.0, "x": "y"}])
    lines = text.splitlines()
    assert lines[0].split() == ["nodes", "elapsed_s", "speedup", "x"]
    assert lines[1].split() == ["1", "2.500", "1.000", "-"]
    assert lines[2].split() == ["8", "0.250", "10.000", "y"]
    assert len({len(line) for line in lines}) == 1
    assert format_rows([]) == "(no rows)"
