"""Gamma's distributed overflow resolution (§6, §6.2.2; ``minidb/cluster/overflow.py``): the
Simple hash join's overflow partitions are joined as new distributed joins with new hash
functions; rows equal DuckDB's whatever the memory, placement and key distribution, the probe
producers keep the overflow tuples at home, and no overflow file outlives its statement."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb

rng = np.random.default_rng(5)
N = 12_000
PAD = pa.array(["p" * 40] * N)
RELATIONS = {
    "unique keys": (pa.table({"k": rng.permutation(N), "v": np.arange(N), "pad": PAD}),
                    pa.table({"k": rng.permutation(N // 2), "w": np.arange(N // 2),
                              "pad": PAD[: N // 2]})),
    "duplicate keys": (pa.table({"k": rng.integers(0, 500, N), "v": np.arange(N), "pad": PAD}),
                       pa.table({"k": rng.integers(0, 500, N // 4), "w": np.arange(N // 4),
                                 "pad": PAD[: N // 4]})),
    "one key": (pa.table({"k": np.r_[np.full(200, 7), np.arange(1000)], "v": np.arange(1200),
                          "pad": PAD[:1200]}),
                pa.table({"k": np.full(900, 7), "w": np.arange(900), "pad": PAD[:900]})),
}
SQL = "SELECT a.v, b.w, b.pad FROM a JOIN b ON a.k = b.k"


def oracle(a: pa.Table, b: pa.Table) -> list[tuple]:
    con = duckdb.connect()
    con.register("a", a)
    con.register("b", b)
    return sorted(con.sql(SQL).fetchall())


def run(a, b, placement: str, memory: int, **connect):
    with minidb.connect(nodes=4, memory_pages=memory, join="simple_hash",
                        **({"disk_nodes": 2} if placement == "remote" else {}), **connect) as db:
        db.create_table("a", a, partition="hash(v)")
        db.create_table("b", b, partition="hash(w)")
        res = db.sql(f"/*+ {placement} repartition */ {SQL}")  # Gamma's plan, as §6 ran it
        left = [n._spools for n in getattr(db.backend, "nodes", [])]
        return res, left


@pytest.mark.parametrize("case", list(RELATIONS))
@pytest.mark.parametrize("placement", ["local", "remote"])
@pytest.mark.parametrize("memory", [200, 8, 3])
def test_rows_equal_duckdb_whatever_the_overflow(case, placement, memory):
    a, b = RELATIONS[case]
    res, left = run(a, b, placement, memory)
    assert sorted(tuple(r.values()) for r in res.to_arrow().to_pylist()) == oracle(a, b)
    assert all(not spools for spools in left)  # every overflow file was dropped
    overflows = [n.get("join", {}).get("overflows", 0) for n in res.per_node.values()]
    if memory == 200:
        assert not any(overflows) and "overflow pass" not in res.explain()
    elif case != "one key":
        assert any(overflows) and "overflow pass 1: build" in res.explain()


def test_producers_keep_the_overflow_tuples_and_later_passes_send_them():
    a, b = RELATIONS["unique keys"]
    roomy, _ = run(a, b, "local", 200)
    tight, _ = run(a, b, "local", 8)
    names = tight.phase_names
    assert names[:2] == ["build", "probe"] and names[2] == "overflow pass 1: build"

    def sent(res, phase):
        counters = res.phases[res.phase_names.index(phase)].values()
        return sum(c["bytes_sent_remote"] + c["bytes_short_circuited"] for c in counters)

    # the first probe phase sends only what fell below the cuts; the rest goes out later
    assert sent(tight, "probe") < 0.8 * sent(roomy, "probe")
    assert sent(tight, "overflow pass 1: probe") > 0
    spooled = sum(c["tuples"].get("partition", 0) for c in tight.phases[1].values())
    assert spooled > sum(c["tuples"].get("partition", 0) for c in roomy.phases[1].values())


def test_a_key_no_hash_function_splits_ends_inside_the_nodes():
    a, b = RELATIONS["one key"]
    res, _ = run(a, b, "local", 3)
    text = res.explain()
    assert "this pass resolves any overflow itself" in text  # the pass after the last one
    assert sum(n.get("join", {}).get("memory_load_passes", 0) for n in res.per_node.values())


@pytest.mark.ray
def test_on_ray_actors_as_inline(ray_session):
    a, b = RELATIONS["duplicate keys"]
    inline, _ = run(a, b, "local", 8)
    ray_res, _ = run(a, b, "local", 8, backend="ray", timeout=60)
    assert sorted(tuple(r.values()) for r in ray_res.to_arrow().to_pylist()) == oracle(a, b)
    assert ray_res.phase_names == inline.phase_names
