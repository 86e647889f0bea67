"""A parallel statement commits on every node or on none (two-phase commit, ``minidb.txn.two_phase``).

* A node that fails part way through an UPDATE (an error, or its Ray actor killed): the statement
  raises, and the table, at once or after reopening, is as before it (checked against DuckDB).
* The whole process killed (``SIGKILL``) at each step of the protocol: after one node prepared,
  after the decision was forced but before the coordinator catalog was written, after one node
  committed but not the other. Reopened, the table is exactly the state before (killed before the
  decision) or after (killed after it), on every node.
* The same with a statement that changes a row of node 1 only: nodes 0 and 2 vote READ and
  leave (presumed abort's read-only optimization, R*), and reopened, nothing committed is lost
  and nothing uncommitted kept.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from cluster_checks import kill_actor

import minidb
from minidb.cluster.node import Node
from minidb.datagen import wisconsin
from minidb.errors import MinidbError

REPO = Path(__file__).resolve().parents[1]
ROWS = 3000
UPDATE = "UPDATE t SET ten = ten + 100, unique2 = unique2 + 100000 WHERE unique1 % 4 = 1"
MOVING = "UPDATE t SET unique1 = unique1 + 100000 WHERE unique1 < 1000"  # tuples change node
DELETE = "DELETE FROM t WHERE unique1 < 100"


def _load(path: Path, backend: str = "inline", **kw) -> pa.Table:
    data = wisconsin(ROWS, seed=5)
    with minidb.connect(nodes=3, backend=backend, data_dir=path, **kw) as db:
        db.create_table("t", data, partition="hash(unique1)")
        db.create_index("t", "unique2")
    return data


def _rows(db) -> list:
    return sorted(db.sql("SELECT * FROM t").to_pylist())


def _oracle(data: pa.Table, *statements: str | None) -> list:
    """DuckDB's rows of t after ``statements`` (None: no statement)."""
    con = duckdb.connect()
    con.register("src", data)
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    for statement in filter(None, statements):
        con.execute(statement)
    return sorted(con.execute("SELECT * FROM t").fetchall())


def _reopened(path: Path, backend: str = "inline", **kw) -> list:
    with minidb.connect(nodes=3, backend=backend, data_dir=path, **kw) as db:
        rows = _rows(db)
        by_index = db.sql("SELECT unique1 FROM t WHERE unique2 >= 0", hint="index").to_pylist()
        assert sorted(r[0] for r in by_index) == sorted(r[0] for r in rows)
        return rows


@pytest.mark.parametrize("statement", [UPDATE, MOVING])
def test_a_node_failing_part_way_undoes_the_statement_everywhere(tmp_path, monkeypatch, statement):
    data = _load(tmp_path)
    real_update, real_insert = Node.update, Node.insert_held

    def fail_on_node_2(self, *args, **kwargs):
        out = (real_update if len(args) > 2 else real_insert)(self, *args, **kwargs)
        if self.node_id == 2:  # after doing its part: its pages are written, not committed
            raise MinidbError("node 2: disk full (simulated)")
        return out

    monkeypatch.setattr(Node, "update", fail_on_node_2)
    monkeypatch.setattr(Node, "insert_held", fail_on_node_2)
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        with pytest.raises(MinidbError, match="simulated"):
            db.sql(statement)
        monkeypatch.setattr(Node, "update", real_update)
        monkeypatch.setattr(Node, "insert_held", real_insert)
        assert db.two_phase.counters.aborts == 1
        assert _rows(db) == _oracle(data, None)
        assert db.sql("SELECT COUNT(*) FROM t").to_pylist() == [(ROWS,)]  # the host's count too
        commits = db.two_phase.counters.commits
        db.sql(statement)  # and the database goes on
        assert db.two_phase.counters.commits == commits + 1
    assert _reopened(tmp_path) == _oracle(data, statement)


CHILD = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.cluster.node import Node
    path, point, statement = sys.argv[1], sys.argv[2], sys.argv[3]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    db = minidb.connect(nodes=3, data_dir=path)
    if point == "one_prepared":
        real = Node.prepare
        def prepare(self, txn):
            real(self, txn)
            if self.node_id == 1:
                die()
            return True
        Node.prepare = prepare
    elif point == "decided":
        import minidb.catalog
        minidb.catalog.write_json_atomically = lambda path, doc: die()  # after the decision
    elif point == "one_committed":
        real = Node.commit
        def commit(self, txn):
            if self.node_id == 1:
                die()
            real(self, txn)
        Node.commit = commit
    db.sql(statement)
    print("finished", flush=True)
""")

POINTS = {"one_prepared": False, "decided": True, "one_committed": True}  # committed?


@pytest.mark.parametrize("point", list(POINTS))
def test_the_process_killed_at_each_step_of_two_phase_commit(tmp_path, point):
    data = _load(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), point, MOVING], env=env,
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert _reopened(tmp_path) == _oracle(data, MOVING if POINTS[point] else None)
    assert not (tmp_path / "wal.log").stat().st_size  # settled: the coordinator forgot it


@pytest.mark.parametrize("point", list(POINTS))
def test_killed_at_each_step_while_the_other_nodes_are_read_only(tmp_path, point):
    data = _load(tmp_path)
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        key = int(db.backend.nodes[1].fragment("t")["unique1"][0])
        assert db.sql("SELECT COUNT(*) FROM t WHERE unique1 = 5").to_pylist()  # warm: no change
    statement = f"UPDATE t SET ten = ten + 100, unique2 = unique2 + 100000 WHERE unique1 = {key}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), point, statement],
                           env=env, capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    assert _reopened(tmp_path) == _oracle(data, statement if POINTS[point] else None)
    assert not (tmp_path / "wal.log").stat().st_size


@pytest.mark.ray
def test_a_ray_node_killed_during_an_update_loses_nothing_committed(ray_session, tmp_path):
    data = _load(tmp_path, "ray", timeout=5)
    db = minidb.connect(nodes=3, backend="ray", data_dir=tmp_path, timeout=5)
    try:
        db.sql(DELETE)  # committed: must survive
        backend, original = db.backend, db.backend.call_many

        def kill_after_the_update_phase(calls, phase=""):
            if phase == "insert moved tuples":  # every node has updated its fragment
                kill_actor(ray_session, backend.actors[1])
            return original(calls, phase)

        backend.call_many = kill_after_the_update_phase
        with pytest.raises(MinidbError, match="node 1"):
            db.sql(MOVING)
    finally:
        db.close()
    assert _reopened(tmp_path, "ray", timeout=5) == _oracle(data, DELETE)
