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


def test_diskless_processors_keep_their_overflow_files_on_disk_nodes():
    """Remote joins run on processors without disks: their overflow pages are written on a disk
    node over the network (minidb.cluster.diskless), so no diskless node counts a disk page,
    and every page it wrote or read crossed the network."""
    a, b = RELATIONS["unique keys"]
    res, _ = run(a, b, "remote", 8)
    io = ("pages_read_seq", "pages_read_random", "pages_written_seq", "pages_written_random")
    shipped = 0
    for phase in res.phases:
        for node, c in phase.items():
            if node >= 2:  # nodes 2 and 3 have no disk
                assert not any(c.get(f, 0) for f in io), (node, c)
                shipped += c.get("pages_shipped", 0)
    assert shipped > 0  # the overflow files did go somewhere
    assert sorted(tuple(r.values()) for r in res.to_arrow().to_pylist()) == oracle(a, b)


def test_shipping_a_diskless_nodes_pages_conserves_them():
    from minidb.cluster.diskless import IO_FIELDS, ship_diskless_io

    before = [{"pages_read_seq": 5}, {}, {"pages_written_seq": 3, "pages_read_random": 2},
              {"pages_written_random": 1}]
    after = ship_diskless_io(before, disk=[0, 1], diskless=[2, 3], page_size=4096,
                             packet_bytes=2048)
    assert before[2] == {"pages_written_seq": 3, "pages_read_random": 2}  # input untouched
    for f in IO_FIELDS:
        assert sum(c.get(f, 0) for c in after) == sum(c.get(f, 0) for c in before)
        assert after[2][f] == after[3][f] == 0
    assert after[0]["pages_written_seq"] == 3 and after[1]["pages_written_random"] == 1
    # node 2 sent its 3 written pages (6 packets) and received its 2 read pages (4 packets)
    assert after[2]["packets_sent_remote"] == 6 and after[2]["packets_received"] == 4
    assert after[0]["packets_received"] == 6 and after[0]["packets_sent_remote"] == 4
    assert after[2]["bytes_sent_remote"] == 3 * 4096 and after[2]["pages_shipped"] == 5
    assert ship_diskless_io(before, disk=[0, 1, 2, 3], diskless=[], page_size=4096,
                            packet_bytes=2048) is before


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
