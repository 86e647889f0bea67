"""Shared checks of the parallel engine against DuckDB (used by the inline and Ray tests)."""

from __future__ import annotations

import time

import duckdb
import numpy as np

ROWS = 20000  # tuples of the test relations (the wisconsin_pair fixture)


def partition_specs(disk_nodes: int) -> list[str]:
    bounds = ", ".join(str(ROWS * i // disk_nodes) for i in range(1, disk_nodes))
    specs = ["round_robin", "hash(unique1)", "range_uniform(unique1)"]
    if disk_nodes > 1:
        specs.append(f"range(unique1: {bounds})")
    return specs


QUERIES = [
    ("SELECT * FROM a WHERE unique2 BETWEEN 0 AND 199", "scan"),  # 1%, heap
    ("SELECT * FROM a WHERE unique2 BETWEEN 0 AND 199", "index"),  # 1%, non-clustered index
    ("SELECT unique1, unique2, stringu1 FROM a WHERE unique2 BETWEEN 792 AND 2791", None),  # 10%
    ("SELECT unique1, unique2 FROM b WHERE unique1 BETWEEN 1000 AND 2999", None),  # clustered
    ("SELECT MIN(unique2) FROM a", None),
    ("SELECT onePercent, SUM(unique3), MIN(unique3) FROM a GROUP BY onePercent", None),
    ("SELECT a.unique1, a.unique2, b.unique2 FROM a JOIN b ON a.unique1 = b.unique1 "
     "WHERE b.unique2 < 2000", None),
    # a three-table join pipeline and a cross product with a non-equality (broadcast)
    ("SELECT a.unique1, c.unique2 FROM a JOIN b ON a.unique1 = b.unique1 "
     "JOIN a AS c ON b.unique2 = c.unique1 WHERE a.unique2 < 300", None),
    ("SELECT COUNT(*), SUM(b.unique1) FROM a, b WHERE a.unique2 < 50 AND b.unique2 < 40 "
     "AND a.unique1 < b.unique1", None),
]


def load(db, data, spec: str) -> None:
    a, b = data
    db.create_table("a", a, partition=spec)
    db.create_table("b", b, partition=spec)
    db.create_index("a", "unique2")
    db.create_index("b", "unique1", clustered=True)


def oracle(data):
    con = duckdb.connect()
    a, b = data
    con.execute("CREATE TABLE a AS SELECT * FROM a")
    con.execute("CREATE TABLE b AS SELECT * FROM b")
    return con


def check_against_duckdb(db, con) -> list:
    """Every query of QUERIES, CTAS and an UPDATE of the partitioning attribute, against DuckDB.
    Returns the results (for comparing counters between backends)."""
    results = []
    for q, hint in QUERIES:
        r = db.sql(q, hint=hint)
        assert sorted(r.to_pylist()) == sorted(con.execute(q).fetchall()), q
        results.append(r)
    r = db.sql("CREATE TABLE c AS SELECT unique1, unique2 FROM a WHERE unique2 < 1000")
    assert r.rows == 1000
    assert sorted(db.sql("SELECT * FROM c").to_pylist()) == \
        sorted(con.execute("SELECT unique1, unique2 FROM a WHERE unique2 < 1000").fetchall())
    sizes = [len(f) for f in db.fragments("c")]
    # each selecting node deals its own results round-robin (its own split table, as in Gamma),
    # so fragments differ by at most one tuple per producer
    assert max(sizes) - min(sizes) <= len(sizes)
    assert sum(sizes) == 1000
    update = "UPDATE a SET unique1 = unique1 + 20000 WHERE unique2 < 3000"
    results.append(db.sql(update))
    con.execute(update)
    check_fragments(db, "a")
    assert sorted(db.sql("SELECT unique1, unique2, stringu1 FROM a").to_pylist()) == \
        sorted(con.execute("SELECT unique1, unique2, stringu1 FROM a").fetchall())
    return results


def check_fragments(db, table: str) -> None:
    """Every tuple is on the node its partitioner names (round robin: nothing to check)."""
    p = db.partitioner(table)
    if p.column is None:
        return
    for i, frag in enumerate(db.fragments(table)):
        assert (p.route(frag) == i).all() if len(frag) else True


def check_packets(result) -> None:
    c = result.counters
    assert c["packets_sent_remote"] + c["packets_short_circuited"] == c["packets_delivered"]
    assert c["packets_sent_remote"] == c["packets_received"]


def check_load(db, data) -> None:
    for name, table in zip(("a", "b"), data, strict=True):
        frags = db.fragments(name)
        got = np.sort(np.concatenate([f["unique1"] for f in frags]))
        assert np.array_equal(got, np.sort(table["unique1"].to_numpy()))  # none lost or doubled


def kill_actor(ray, actor) -> None:
    """Kill a node's Ray actor and wait until Ray reports it dead (``ray.kill`` does not wait)."""
    ray.kill(actor)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ping.remote(), timeout=1)
        except ray.exceptions.RayActorError as e:
            # Ray's frame that raised it refers to it: without the traceback no cycle (holding
            # object refs) is left for the garbage collector to free on another test's thread
            e.__traceback__ = None
            return
        except ray.exceptions.GetTimeoutError:
            pass
        time.sleep(0.05)
    raise AssertionError("the actor did not die")
