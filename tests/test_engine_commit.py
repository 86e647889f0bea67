"""The registered commit protocols commit the parallel engine's statements
(``minidb.txn.commit.enginenet``, ``connect(commit=...)``).

* Each protocol the engine takes commits a parallel UPDATE, DELETE and CREATE TABLE AS; the rows
  equal DuckDB's, after reopening too.
* A node failing part way through a statement, or voting no, leaves every node as before.
* The process killed between prepare and decision, and after a decision a node never heard of,
  is settled on reopening by the protocol's presumption (presumed abort: no record = abort;
  presumed commit: no record = commit).
* The messages and log forces of a statement equal the simulator's for the same protocol and
  number of participants.
* A student's protocol registered here commits a real UPDATE; an unknown name, or 3PC, is a
  clear error.
* R*'s read-only optimization under presumed abort: a node whose part changed nothing votes
  READ, forces nothing and is not told the outcome; its data and journal are untouched.
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

import minidb
from minidb.cluster.node import Node
from minidb.datagen import wisconsin
from minidb.errors import MinidbError
from minidb.plugins import register
from minidb.txn.commit.enginenet import CommitAborted
from minidb.txn.commit.matrix import one_run
from minidb.txn.commit.presumed_commit import PresumedCommit

REPO = Path(__file__).resolve().parents[1]
ROWS = 2000
NODES = 3
UPDATE = "UPDATE t SET ten = ten + 100, unique2 = unique2 + 100000 WHERE unique1 % 4 = 1"
MOVING = "UPDATE t SET unique1 = unique1 + 100000 WHERE unique1 < 700"  # tuples change node
DELETE = "DELETE FROM t WHERE unique1 < 100"
CTAS = "CREATE TABLE s AS SELECT unique1, ten FROM t WHERE unique1 % 3 = 0"
ENGINE = ["2pc", "presumed_abort", "presumed_commit", "group_commit"]


def _load(path: Path, commit: str) -> pa.Table:
    data = wisconsin(ROWS, seed=5)
    with minidb.connect(nodes=NODES, data_dir=path, commit=commit) as db:
        db.create_table("t", data, partition="hash(unique1)")
    return data


def _rows(db, table: str = "t") -> list:
    return sorted(db.sql(f"SELECT * FROM {table}").to_pylist())


def _oracle(data: pa.Table, *statements: str | None, table: str = "t") -> list:
    con = duckdb.connect()
    con.register("src", data)
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    for statement in filter(None, statements):
        con.execute(statement)
    return sorted(con.execute(f"SELECT * FROM {table}").fetchall())


@pytest.mark.parametrize("protocol", ENGINE)
def test_each_protocol_commits_update_delete_and_create_table_as(tmp_path, protocol):
    data = _load(tmp_path, protocol)
    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
        assert db.two_phase.protocol_name == protocol
        for statement in (UPDATE, DELETE, CTAS):
            r = db.sql(statement)
            assert r.counters["commit.participants"] == NODES
            assert r.counters["commit.messages"] > 0
        assert _rows(db) == _oracle(data, UPDATE, DELETE)
        assert _rows(db, "s") == _oracle(data, UPDATE, DELETE, CTAS, table="s")
    assert not (tmp_path / "wal.log").stat().st_size  # every statement settled: forgotten
    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
        assert _rows(db) == _oracle(data, UPDATE, DELETE)
        assert _rows(db, "s") == _oracle(data, UPDATE, DELETE, CTAS, table="s")


@pytest.mark.parametrize("protocol", ["2pc", "presumed_abort", "presumed_commit"])
@pytest.mark.parametrize("statement", [UPDATE, DELETE])
def test_messages_and_forces_equal_the_simulators(tmp_path, protocol, statement):
    _load(tmp_path, protocol)
    sim = one_run(protocol, NODES)
    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
        c = db.sql(statement).counters
    assert c["commit.messages"] == sim.messages
    assert c["commit.forces"] == sum(sim.log_forces)
    assert c["commit.coordinator_forces"] == sim.log_forces[0]
    assert c["commit.participant_forces"] == sum(sim.log_forces[1:])
    assert c["commit.log_records"] == sum(sim.log_records)


def test_the_presumptions_show_in_the_counts(tmp_path):
    """Presumed commit: a COLLECTING force more at the coordinator, no commit force and no
    acknowledgement at the nodes (R*): 3N messages against presumed abort's 4N."""
    _load(tmp_path, "presumed_commit")
    counts = {}
    for protocol in ("presumed_abort", "presumed_commit"):
        with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
            counts[protocol] = db.sql(UPDATE).counters
    pa_, pc = counts["presumed_abort"], counts["presumed_commit"]
    assert (pa_["commit.messages"], pc["commit.messages"]) == (4 * NODES, 3 * NODES)
    assert (pa_["commit.coordinator_forces"], pc["commit.coordinator_forces"]) == (1, 2)
    assert (pa_["commit.participant_forces"], pc["commit.participant_forces"]) == (2 * NODES, NODES)


ONE_ROW = "UPDATE t SET ten = ten + 100, unique2 = unique2 + 100000 WHERE unique1 = {key}"
NO_ROW = "UPDATE t SET ten = ten + 100 WHERE unique1 < 0"


def _fragments(db) -> list:
    return [sorted(map(tuple, n.fragment("t").tolist())) for n in db.backend.nodes]


def test_nodes_whose_part_changed_nothing_vote_read_and_are_released(tmp_path):
    """Presumed abort on 3 nodes. An UPDATE of every node costs 12 messages and 7 forces. One
    that changes a row of one node only: the two others vote READ and leave, so 3 PREPAREs +
    3 votes + 1 COMMIT + 1 ACK = 8 messages and 1 + 2 = 3 forces (the coordinator's COMMIT,
    the changed node's PREPARED and COMMIT), as the simulator counts with two read-only
    participants. One that changes nothing: 6 messages, no force, no record anywhere."""
    data = _load(tmp_path, "presumed_abort")
    with minidb.connect(nodes=NODES, data_dir=tmp_path) as db:
        everywhere = db.sql(UPDATE).counters
        before = _fragments(db)
        owner = next(i for i, f in enumerate(before) if f)
        key = before[owner][0][0]  # unique1 is the first column: a row of that node
        one = ONE_ROW.format(key=key)
        c = db.sql(one).counters
        after = _fragments(db)
        sim = one_run("presumed_abort", NODES,
                      read_only=tuple(p + 1 for p in range(NODES) if p != owner))
        nothing = db.sql(NO_ROW).counters
        assert _fragments(db) == after
    assert (everywhere["commit.messages"], everywhere["commit.forces"]) == (12, 7)
    assert (c["commit.messages"], c["commit.forces"], c["commit.read_only"]) == (8, 3, 2)
    assert (c["commit.messages"], c["commit.forces"]) == (sim.messages, sum(sim.log_forces))
    assert c["commit.participant_log_records"] == 2  # the changed node's PREPARED and COMMIT
    assert (nothing["commit.messages"], nothing["commit.forces"], nothing["commit.log_records"],
            nothing["commit.read_only"]) == (6, 0, 0, NODES)
    assert [after[i] == before[i] for i in range(NODES)] == [i != owner for i in range(NODES)]
    for i in range(NODES):  # every journal empty: the read-only nodes were released
        assert not (tmp_path / f"node-{i}" / "wal.log").stat().st_size
    assert not (tmp_path / "wal.log").stat().st_size
    with minidb.connect(nodes=NODES, data_dir=tmp_path) as db:
        assert _rows(db) == _oracle(data, UPDATE, one, NO_ROW)


def test_without_read_only_votes_every_node_takes_part(tmp_path):
    """2PC and presumed commit ignore R*'s read-only votes: a one-node UPDATE costs what an
    UPDATE of every node costs."""
    data = _load(tmp_path, "2pc")
    for protocol in ("2pc", "presumed_commit"):
        with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
            key = next(f for f in _fragments(db) if f)[0][0]
            c = db.sql(ONE_ROW.format(key=key)).counters
            sim = one_run(protocol, NODES)
            assert (c["commit.messages"], c["commit.forces"], c["commit.read_only"]) == \
                (sim.messages, sum(sim.log_forces), 0)
            statement = ONE_ROW.format(key=key)
            data_after = _oracle(data, statement) if protocol == "2pc" else \
                _oracle(data, statement, statement)
            assert _rows(db) == data_after


@pytest.mark.parametrize("protocol", ENGINE)
def test_a_node_failing_part_way_leaves_every_node_as_before(tmp_path, monkeypatch, protocol):
    data = _load(tmp_path, protocol)
    real_update, real_insert = Node.update, Node.insert_held

    def fail_on_node_2(self, *args, **kwargs):
        out = (real_update if len(args) > 2 else real_insert)(self, *args, **kwargs)
        if self.node_id == 2:
            raise MinidbError("node 2: disk full (simulated)")
        return out

    monkeypatch.setattr(Node, "update", fail_on_node_2)
    monkeypatch.setattr(Node, "insert_held", fail_on_node_2)
    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
        with pytest.raises(MinidbError, match="simulated"):
            db.sql(MOVING)
        monkeypatch.undo()
        assert _rows(db) == _oracle(data)
        db.sql(MOVING)  # and the database goes on
    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
        assert _rows(db) == _oracle(data, MOVING)


@pytest.mark.parametrize("protocol", ENGINE)
def test_a_no_vote_aborts_the_statement_on_every_node(tmp_path, monkeypatch, protocol):
    """A node that cannot force its pages votes no; the protocol aborts everywhere."""
    data = _load(tmp_path, protocol)
    from minidb.database import Database

    real = Database.force_pages

    def full_disk(self):
        if self.disk.path.name == "node-1":
            raise OSError("no space left on device (simulated)")
        real(self)

    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
        monkeypatch.setattr(Database, "force_pages", full_disk)
        with pytest.raises(CommitAborted, match="node 1: OSError: no space left"):
            db.sql(UPDATE)
        monkeypatch.undo()
        assert _rows(db) == _oracle(data)
        assert db.two_phase.counters.aborts == 1
    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=protocol) as db:
        assert _rows(db) == _oracle(data)
        db.sql(UPDATE)
        assert _rows(db) == _oracle(data, UPDATE)


CHILD = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.cluster.node import Node
    path, protocol, point, statement = sys.argv[1:5]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    db = minidb.connect(nodes=3, data_dir=path, commit=protocol)
    if point == "one_prepared":  # between node 1's prepare and the decision
        real = Node.prepare
        def prepare(self, txn):
            real(self, txn)
            if self.node_id == 1:
                die()
            return True
        Node.prepare = prepare
    elif point == "decided":  # the decision forced, the catalog not written
        import minidb.catalog
        minidb.catalog.write_json_atomically = lambda path, doc: die()
    elif point in ("commit_lost", "abort_lost"):
        # node 1 never hears the outcome (its link fails), then the process dies: node 1 is
        # left prepared, and the coordinator may have forgotten the transaction (presumption)
        real_events = Node.commit_events
        def events(self, protocol, ctx, seq, batch):
            if self.node_id == 1 and any(e[0] == "receive" and e[1].kind in ("commit", "abort")
                                         for _, e in batch):
                raise ConnectionError("node 1 unreachable (simulated)")
            return real_events(self, protocol, ctx, seq, batch)
        Node.commit_events = events
        if point == "abort_lost":  # node 2 votes no
            from minidb.database import Database
            real_force = Database.force_pages
            def force_pages(self):
                if self.disk.path.name == "node-2":
                    raise OSError("no space left (simulated)")
                real_force(self)
            Database.force_pages = force_pages
    try:
        db.sql(statement)
    except Exception as e:
        print(type(e).__name__, e, flush=True)
        print("wal.log bytes", os.path.getsize(os.path.join(path, "wal.log")), flush=True)
        die()
    print("finished", flush=True)
""")

#: point -> (committed?, the wal.log emptied before the crash under (presumed_abort, presumed_commit))
POINTS = {"one_prepared": (False, (False, False)), "decided": (True, (False, False)),
          "commit_lost": (True, (False, True)), "abort_lost": (False, (True, False))}


@pytest.mark.parametrize("protocol", ["presumed_abort", "presumed_commit"])
@pytest.mark.parametrize("point", list(POINTS))
def test_a_crash_in_doubt_is_settled_by_the_presumption(tmp_path, protocol, point):
    data = _load(tmp_path, protocol)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), protocol, point, MOVING],
                           env=env, capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    committed, forgotten = POINTS[point]
    if point in ("commit_lost", "abort_lost"):
        emptied = forgotten[protocol == "presumed_commit"]
        assert ("wal.log bytes 0" in child.stdout) == emptied, child.stdout
        assert ("CommitUnfinished" if committed else "CommitAborted") in child.stdout
    # reopened with the other protocol: the node's PREPARE record carries the presumption
    other = "presumed_commit" if protocol == "presumed_abort" else "presumed_abort"
    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit=other) as db:
        assert _rows(db) == _oracle(data, MOVING if committed else None)
    assert not (tmp_path / "wal.log").stat().st_size


@register("commit", "student_engine_pc")
class StudentPresumedCommit(PresumedCommit):
    """A student's protocol: presumed commit under another name, registered here only."""

    name = "student_engine_pc"


def test_a_students_registered_protocol_commits_a_real_update(tmp_path):
    data = _load(tmp_path, "student_engine_pc")
    with minidb.connect(nodes=NODES, data_dir=tmp_path, commit="student_engine_pc") as db:
        r = db.sql(UPDATE)
        assert db.two_phase.protocol_name == "student_engine_pc"
        assert r.counters["commit.messages"] == one_run("student_engine_pc", NODES).messages
    with minidb.connect(nodes=NODES, data_dir=tmp_path) as db:
        assert _rows(db) == _oracle(data, UPDATE)


def test_an_unknown_protocol_is_an_error_naming_the_registered_ones(tmp_path):
    with pytest.raises(MinidbError, match=r"unknown commit protocol 'nope'.*presumed_abort.*"
                                          r"presumed_commit"):
        minidb.connect(nodes=2, data_dir=tmp_path / "db", commit="nope")
    assert not (tmp_path / "db").exists()


def test_three_phase_commit_is_refused_with_the_reason(tmp_path):
    with pytest.raises(MinidbError, match="'3pc' cannot commit.*no answer.*termination protocol"):
        minidb.connect(nodes=2, data_dir=tmp_path, commit="3pc")



@pytest.mark.ray
def test_on_ray_a_students_protocol_runs_on_the_actors_and_a_killed_node_aborts(ray_session,
                                                                                 tmp_path):
    """The participant role runs in each node's actor (the student's class travels by value);
    a node killed after the work phase stops answering: presumed commit aborts the statement,
    and reopened, every node is as before it."""
    from cluster_checks import kill_actor

    data = wisconsin(ROWS, seed=5)
    opts = dict(nodes=NODES, backend="ray", data_dir=tmp_path, timeout=5,
                commit="student_engine_pc")
    with minidb.connect(**opts) as db:
        db.create_table("t", data, partition="hash(unique1)")
        r = db.sql(UPDATE)
        assert r.counters["commit.messages"] == one_run("student_engine_pc", NODES).messages
    db = minidb.connect(**opts)
    try:
        backend, original = db.backend, db.backend.call_all

        def kill_before_the_commit(method, args, phase=""):
            if method == "commit_events" and phase == "commit" and 2 in args:
                kill_actor(ray_session, backend.actors[2])
            return original(method, args, phase)

        backend.call_all = kill_before_the_commit
        with pytest.raises(MinidbError):
            db.sql(DELETE)
    finally:
        db.close()
    with minidb.connect(**opts) as db:
        assert _rows(db) == _oracle(data, UPDATE)
