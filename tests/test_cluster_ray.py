"""The parallel engine with Ray actors: same rows as DuckDB, same counters as inline, faults."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from cluster_checks import check_against_duckdb, check_load, check_packets, load, oracle

import minidb
from minidb.errors import MinidbError

pytestmark = pytest.mark.ray


@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_ray_matches_duckdb_and_inline(nodes, ray_session, wisconsin_pair):
    spec = "hash(unique1)" if nodes != 2 else "range_uniform(unique1)"
    with minidb.connect(nodes=nodes, backend="ray", timeout=60) as rdb, \
            minidb.connect(nodes=nodes, backend="inline", timeout=60) as idb:
        load(rdb, wisconsin_pair, spec)
        load(idb, wisconsin_pair, spec)
        check_load(rdb, wisconsin_pair)
        check_load(idb, wisconsin_pair)  # reads every page: keeps both buffer pools alike
        got = check_against_duckdb(rdb, oracle(wisconsin_pair))
        want = check_against_duckdb(idb, oracle(wisconsin_pair))
        for g, w in zip(got, want, strict=True):
            check_packets(g)
            assert g.counters == w.counters, g.statement
            assert g.phases == w.phases


def test_dead_node_gives_an_error_naming_it(ray_session, wisconsin_pair):
    db = minidb.connect(nodes=2, backend="ray", timeout=3)
    try:
        db.create_table("a", wisconsin_pair[0], partition="hash(unique1)")
        ray_session.kill(db.backend.actors[1])
        start = time.monotonic()
        with pytest.raises(MinidbError, match="node 1"):
            db.sql("SELECT onePercent, MIN(unique1) FROM a GROUP BY onePercent")
        assert time.monotonic() - start < 15
    finally:
        db.close()


@pytest.mark.multinode
def test_nodes_spread_over_a_ray_cluster():
    script = textwrap.dedent("""
        import ray
        from ray.cluster_utils import Cluster
        import minidb
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                          "include_dashboard": False})
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()  # both Ray nodes registered before minidb places its nodes
        try:
            ray.init(address=cluster.address, log_to_driver=False)
            with minidb.connect(nodes=2, backend="ray", address=cluster.address) as db:
                where = {db.backend.call(i, "ping")["ray_node"] for i in range(2)}
                db.create_table("a", "wisconsin:2000", partition="hash(unique1)")
                assert db.sql("SELECT COUNT(*) FROM a").to_pylist() == [(2000,)]
            ray.shutdown()
        finally:
            cluster.shutdown()
        print("PLACED", len(where))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert "PLACED 2" in out.stdout, out.stdout + out.stderr[-3000:]
