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
            # messages_sent is how the tuples were grouped into transport messages (larger on
            # Ray, where each is an actor call); every counter the cost model prices is equal
            assert _priced(g.counters) == _priced(w.counters), g.statement
            assert [{n: _priced(c) for n, c in p.items()} for p in g.phases] == \
                [{n: _priced(c) for n, c in p.items()} for p in w.phases]


def _priced(counters: dict) -> dict:
    return {k: (_priced(v) if isinstance(v, dict) else v) for k, v in counters.items()
            if k != "messages_sent"}


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


# -- one pool of node actors, reused across the machines of an experiment (issue 17) -----------
POOL_MACHINES = [(4, 4096), (2, 8192), (4, 4096)]  # (nodes, page size): the last reuses actors


def _measure_machine(nodes: int, page_size: int, relation) -> tuple:
    """Load ``relation`` on a Ray machine, run a few cold statements; what they gave and did,
    and the process id of each node's actor."""
    from minidb.experiments.machines import build, measure

    with build(nodes, "gamma", page_size, backend="ray", buffer_pages=64) as db:
        pids = [db.backend.call(i, "ping")["pid"] for i in range(nodes)]
        db.create_table("a", relation, partition="hash(unique1)")
        db.create_index("a", "unique2")
        out = []
        for statement, drop in [
                ("SELECT * FROM a WHERE unique2 BETWEEN 0 AND 199", None),
                ("SELECT onePercent, MIN(unique3) FROM a GROUP BY onePercent", None),
                ("CREATE TABLE r AS SELECT * FROM a WHERE unique1 < 2000", "r")]:
            m = measure(db, statement, drop)
            out.append((m.rows, m.modeled_s, m.counters, m.bottleneck, m.access_paths))
        rows = sorted(db.sql("SELECT unique1, unique2 FROM a WHERE unique2 < 50").to_pylist())
    return out, rows, pids


def test_a_reused_node_pool_gives_what_a_fresh_start_gives(ray_session, wisconsin_pair):
    """Machines built inside ``node_pool`` reuse the actors of the machines closed before them
    (renewed in between); their rows, counters and modeled times are a fresh start's."""
    from minidb.cluster.backends import node_pool

    relation = wisconsin_pair[0]
    fresh = [_measure_machine(n, size, relation) for n, size in POOL_MACHINES]
    with node_pool("test") as pool:
        pooled = [_measure_machine(n, size, relation) for n, size in POOL_MACHINES]
        assert len(pool) == 4  # node slots 0-3, kept for a next machine
    for (want, want_rows, _), (got, got_rows, _) in zip(fresh, pooled, strict=True):
        assert got == want
        assert got_rows == want_rows
    first, second, third = (pids for _, _, pids in pooled)
    assert second == first[:2] and third == first  # the same actor processes, renewed
    assert set(fresh[0][2]).isdisjoint(first)  # outside the pool every machine starts anew


def _load(monkeypatch, load: float, cores: int) -> None:
    from minidb.cluster import backends, machine

    for module in (backends, machine):
        monkeypatch.setattr(module, "machine_load", lambda: (load, cores))


def test_start_timeouts_grow_with_actors_and_load_to_a_bound(monkeypatch):
    from minidb.cluster import backends

    _load(monkeypatch, 0.5, 2)  # idle, 2 cores
    assert backends.start_timeout(0) == backends.start_timeout(2) == backends.START_TIMEOUT_S
    assert backends.start_timeout(8) == 4 * backends.START_TIMEOUT_S  # 4 rounds of 2
    _load(monkeypatch, 6.0, 2)  # 3x busier than idle
    assert backends.start_timeout(2) == 3 * backends.START_TIMEOUT_S
    assert backends.start_timeout(40) == backends.START_LIMIT_S  # generous, but a bound


def test_rays_wait_for_its_gcs_server_grows_with_load_unless_the_user_set_it(monkeypatch):
    import os

    from minidb.cluster import backends

    name = "RAY_gcs_server_port_wait_time_s"
    monkeypatch.delenv(name, raising=False)
    _load(monkeypatch, 6.0, 2)
    with backends.gcs_wait():
        assert os.environ[name] == "90"  # Ray's 30 s, x3 for a machine 3x busier than idle
    assert name not in os.environ
    monkeypatch.setenv(name, "0")
    with backends.gcs_wait():
        assert os.environ[name] == "0"


def test_a_failed_start_is_retried_once_then_names_experiment_and_node(ray_session,
                                                                       monkeypatch, caplog):
    from minidb.cluster import backends
    from minidb.cluster.backends import node_pool

    original, tries = backends.RayBackend._await_start, []

    def fails_first(self, calls, timeout, what=""):
        tries.append(len(calls))
        if len(tries) == 1:
            raise backends._StartFailed(MinidbError("node 1 did not start within 9 s"), True)
        return original(self, calls, timeout, what)

    monkeypatch.setattr(backends.RayBackend, "_await_start", fails_first)
    with node_pool("gamma.example"), caplog.at_level("WARNING", logger="minidb.cluster"):
        with minidb.connect(nodes=2, backend="ray") as db:
            db.create_table("a", "wisconsin:200", partition="hash(unique1)")
            assert db.sql("SELECT COUNT(*) FROM a").to_pylist() == [(200,)]
    assert tries == [2, 2]
    assert "experiment gamma.example: node 1 did not start within 9 s; retrying once" \
        in caplog.text

    def always_fails(self, calls, timeout, what=""):
        raise backends._StartFailed(MinidbError("node 1 did not start within 9 s"), True)

    monkeypatch.setattr(backends.RayBackend, "_await_start", always_fails)
    with node_pool("gamma.example"), pytest.raises(MinidbError) as err:
        minidb.connect(nodes=2, backend="ray")
    assert str(err.value) == ("experiment gamma.example: node 1 did not start within 9 s; it "
                              "failed again when retried")


def test_a_long_start_says_which_nodes_are_still_starting(ray_session, monkeypatch, caplog):
    from minidb.cluster import backends

    monkeypatch.setattr(backends, "START_NOTE_EVERY_S", 0.01)  # new actors take longer
    with caplog.at_level("WARNING", logger="minidb.cluster"):
        with minidb.connect(nodes=2, backend="ray"):
            pass
    assert "still starting Ray nodes 0, 1 of 2 after" in caplog.text


def test_nodes_that_do_not_start_in_time_are_one_line_that_explains_the_bound(ray_session,
                                                                              monkeypatch):
    from minidb.cluster import backends

    monkeypatch.setattr(backends, "start_timeout", lambda new: 0.0)  # no actor starts that fast
    with pytest.raises(MinidbError) as err:
        minidb.connect(nodes=2, backend="ray", timeout=0.001)
    message = str(err.value)
    assert message.startswith("node 0 did not start within 0 s (2 of 2 nodes still starting; "
                              "the time allowed grows with the nodes to start")
    assert message.endswith("; it failed again when retried") and "\n" not in message
