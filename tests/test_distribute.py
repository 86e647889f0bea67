"""DISTRIBUTE: Distributed INGRES's statement (Stonebraker et al. 1983, §2) on the parallel engine.

A stored table is re-declustered by predicates: its rows are those of before (as multisets,
against DuckDB), each node's fragment is exactly the rows DuckDB finds with that node's predicate,
the table keeps its organization, key and indexes, and later INSERTs and UPDATEs route by the
new predicates (an UPDATE that changes a tuple's fragment moves it, as in the paper's example).
Every mistake is a one-line ``MinidbError`` and leaves the table as it was; in a data directory
the new distribution survives reopening, and a failure or a crash part way leaves it as before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minidb
from minidb.cluster.node import Node
from minidb.datagen.ingres import emp
from minidb.errors import (
    FragmentCoverageError,
    MinidbError,
    UnknownColumnError,
    UnknownTableError,
)
from minidb.parallel.partitioners import PredicateFragments
from minidb.sql.distribute import DistributeStatement, Site, is_distribute, parse_distribute

REPO = Path(__file__).resolve().parents[1]
ROWS = 600
EMP = emp(ROWS, departments=6, seed=3)  # depts 'shoe', 'toy' and four others
PAPER = {0: "dept = 'shoe'", 1: "dept = 'toy'", 2: "dept <> 'toy' AND dept <> 'shoe'"}
PAPER_SQL = ("DISTRIBUTE emp AT 0 WHERE dept = 'shoe' AT 1 WHERE dept = 'toy' "
             "AT 2 WHERE dept <> 'toy' AND dept <> 'shoe'")


# -- helpers ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.register("src", EMP)
    con.execute("CREATE TABLE emp AS SELECT * FROM src")
    return con


def _load(db, partition="hash(name)") -> None:
    db.create_table("emp", EMP, partition=partition, organization="clustered", key="salary")
    db.create_index("emp", "age")


def _tuples(db, records) -> list[tuple]:
    schema = db.catalog.get("emp").schema
    return sorted(tuple(r.values()) for r in schema.arrow_from_records(records).to_pylist())


def _fragments(db) -> list[list[tuple]]:
    return [_tuples(db, f) for f in db.fragments("emp")]


def _duck_rows(con, where: str = "TRUE") -> list[tuple]:
    return sorted(con.execute(f"SELECT * FROM emp WHERE {where}").fetchall())


def _layout(db) -> list[tuple]:
    """Each disk node's file organization, key and indexed columns of emp."""
    out = []
    for node in db.backend.nodes:
        t = node.db.catalog.get("emp")
        out.append((t.organization, t.key, sorted(t.indexes)))
    return out


def _state(db) -> tuple:
    """Everything DISTRIBUTE may change: the fragments, the partitioning, the layout."""
    return _fragments(db), db.partitioner("emp").describe(), _layout(db), \
        db.catalog.get("emp").num_records


def _check_distributed(db, con, fragments: dict[int, str]) -> None:
    """Every node holds exactly DuckDB's rows for its predicate; none lost or doubled."""
    got = _fragments(db)
    for node, frag in enumerate(got):
        assert frag == _duck_rows(con, fragments.get(node, "FALSE")), node
    assert sum(len(f) for f in got) == con.execute("SELECT COUNT(*) FROM emp").fetchone()[0]
    assert sorted(r for f in got for r in f) == _duck_rows(con)
    assert sorted(db.sql("SELECT * FROM emp").to_pylist()) == _duck_rows(con)


# -- the statement ------------------------------------------------------------------------------
def test_the_papers_example_matches_duckdb(duck):
    with minidb.connect(nodes=3) as db:
        _load(db)
        old = _fragments(db)
        before = [len(f) for f in old]
        layout = _layout(db)
        r = db.sql(PAPER_SQL)
        _check_distributed(db, duck, PAPER)
        p = db.partitioner("emp")
        assert isinstance(p, PredicateFragments) and p.texts == PAPER
        assert _layout(db) == layout == [("clustered", "salary", ["age"])] * 3
        # the secondary index and the clustered key still find every tuple
        by_index = db.sql("SELECT * FROM emp WHERE age >= 30", hint="index")
        assert sorted(by_index.to_pylist()) == _duck_rows(duck, "age >= 30")
        by_key = db.sql("SELECT * FROM emp WHERE salary BETWEEN 10000 AND 20000",
                        hint="clustered_index")
        assert sorted(by_key.to_pylist()) == _duck_rows(duck, "salary BETWEEN 10000 AND 20000")
        # what moved: the count, and explain() before -> after per node
        after = [len(f) for f in db.fragments("emp")]
        stayed = sum(len(set(o) & set(_duck_rows(duck, PAPER[n]))) for n, o in enumerate(old))
        assert r.kind == "distribute" and r.rows == r.to_pylist()[0][0] == ROWS - stayed
        text = r.explain()
        assert "check the new fragments" in text and "move tuples" in text
        shown = ", ".join(f"node {n}: {b} -> {a}" for n, (b, a) in enumerate(zip(before, after, strict=True)))
        assert f"before -> after: {shown}; {r.rows} moved" in text
        assert db.catalog.get("emp").num_records == ROWS


def test_what_moved_is_what_changed_node(duck):
    with minidb.connect(nodes=3) as db:
        _load(db)
        old = _fragments(db)
        r = db.sql(PAPER_SQL)
        new = _fragments(db)
        stayed = sum(len(set(o) & set(n)) for o, n in zip(old, new, strict=True))  # names unique
        assert r.rows == ROWS - stayed
        assert [len(f) for f in new] == [len(_duck_rows(duck, PAPER[n])) for n in range(3)]
        again = db.sql(PAPER_SQL)  # already distributed so: nothing moves, no move phase
        assert again.rows == 0 and "move tuples" not in again.explain()
        assert _fragments(db) == new


@pytest.mark.parametrize("text", ["DISTRIBUTE emp AT 1", "distribute emp at node 1",
                                  "Distribute EMP At NODE1;", "DISTRIBUTE emp AT node 1 WHERE TRUE"])
def test_one_site_holds_the_whole_table(duck, text):
    with minidb.connect(nodes=3) as db:
        _load(db)
        r = db.sql(text)
        assert [len(f) for f in db.fragments("emp")] == [0, ROWS, 0]
        _check_distributed(db, duck, {1: "TRUE"})
        assert "node 1: " in r.explain() and f"-> {ROWS}" in r.explain()
        # an INSERT goes to node 1 too; the nodes no site named stay empty
        db.sql("INSERT INTO emp VALUES ('new', 10, 'emp0000001', 30, 'shoe')")
        assert [len(f) for f in db.fragments("emp")] == [0, ROWS + 1, 0]


def test_a_later_update_moves_a_tuple_to_its_new_fragment(duck):
    con = duck.cursor()
    con.execute("CREATE TEMP TABLE emp AS SELECT * FROM main.emp")
    with minidb.connect(nodes=3) as db:
        _load(db, partition="round_robin")
        db.sql(PAPER_SQL)
        update = "UPDATE emp SET dept = 'toy' WHERE salary > 40000 AND dept = 'shoe'"
        moving = con.execute("SELECT COUNT(*) FROM emp WHERE salary > 40000 AND dept = 'shoe'")
        assert moving.fetchone()[0] > 0
        r = db.sql(update)
        con.execute(update)
        assert "move to it" in r.explain()
        _check_distributed(db, con, PAPER)
        insert = "INSERT INTO emp VALUES ('x1', 1, 'x', 20, 'shoe'), ('x2', 2, 'x', 21, 'pen')"
        db.sql(insert)
        con.execute(insert)
        _check_distributed(db, con, PAPER)


def test_an_empty_table_and_a_diskless_node(duck):
    with minidb.connect(nodes=3, disk_nodes=2) as db:
        db.create_table("emp", EMP.slice(0, 0), partition="hash(name)")
        r = db.sql("DISTRIBUTE emp AT 0 WHERE salary < 10000 AT 1 WHERE salary >= 10000")
        assert r.rows == 0 and [len(f) for f in db.fragments("emp")] == [0, 0]
        db.sql("INSERT INTO emp VALUES ('a', 5000, 'a', 20, 'toy'), ('b', 20000, 'b', 30, 'toy')")
        assert [len(f) for f in db.fragments("emp")] == [1, 1]
        with pytest.raises(MinidbError, match="there is no disk node 2; this database stores "
                                              r"tables on nodes 0\.\.1"):
            db.sql("DISTRIBUTE emp AT 2")


# -- mistakes: a clear error, and nothing changed ---------------------------------------------
ERRORS = [
    ("DISTRIBUTE emp AT 0 WHERE dept = 'shoe' AT 1 WHERE dept = 'toy'", FragmentCoverageError,
     r"DISTRIBUTE emp: fragments must cover every tuple exactly once, but a tuple on node \d "
     r"\(name='emp\d+', salary=\d+, manager='emp\d+', age=\d+, dept='dept\d+'\) satisfies none "
     r"of the predicates of nodes 0, 1 and 2 \(a gap\).*\(nodes no site names have the predicate "
     r"FALSE\); nothing was moved"),
    ("DISTRIBUTE emp AT 0 WHERE dept = 'shoe' OR dept = 'toy' AT 1 WHERE dept <> 'shoe' "
     "AT 2 WHERE FALSE", FragmentCoverageError,
     r"a tuple on node \d \(name='emp\d+', .*dept='(shoe|toy)'\) satisfies the predicates of "
     r"nodes 0 and 1 \(an overlap\)"),
    ("DISTRIBUTE emp AT 3", MinidbError,
     r"DISTRIBUTE emp AT 3: there is no disk node 3; this database stores tables on nodes 0\.\.2"),
    ("DISTRIBUTE emp AT node 7 WHERE salary > 0", MinidbError, "there is no disk node 7"),
    ("DISTRIBUTE staff AT 1", UnknownTableError, "no table named 'staff'; the tables are: emp"),
    ("DISTRIBUTE emp AT 0 WHERE colour = 'red' AT 1 WHERE colour <> 'red'", UnknownColumnError,
     "DISTRIBUTE emp: fragment of node 0: relation has no column 'colour'"),
    ("DISTRIBUTE emp AT 0 WHERE dept = \"shoe\" AT 1 WHERE dept <> 'shoe'", UnknownColumnError,
     "no column 'shoe'"),  # QUEL's double-quoted strings are names in SQL
    ("DISTRIBUTE emp AT 0 WHERE dept = 5 AT 1 WHERE dept <> 5", MinidbError, "DISTRIBUTE emp: "),
    ("DISTRIBUTE emp", MinidbError, "DISTRIBUTE emp names no site; write DISTRIBUTE emp AT 0"),
    ("DISTRIBUTE emp AT 1 WHERE salary > 5 AT 1 WHERE salary <= 5", MinidbError,
     "DISTRIBUTE emp names node 1 twice"),
    ("DISTRIBUTE emp AT Berkeley WHERE dept = 'shoe'", MinidbError,
     "DISTRIBUTE emp AT Berkeley: a site is a disk node's number, written 2, node 2 or node2"),
    ("DISTRIBUTE emp AT 0 WHERE dept = 'shoe' AT 1", MinidbError,
     "DISTRIBUTE emp AT 1 has no WHERE: with several sites, each needs a condition"),
    ("DISTRIBUTE emp AT 0 WHERE", MinidbError, "DISTRIBUTE emp AT 0 WHERE needs a condition"),
    ("DISTRIBUTE emp AT 0 WHERE dept = 'shoe AT 1", MinidbError, "unclosed quote"),
    ("DISTRIBUTE AT 1", MinidbError, "DISTRIBUTE needs a table name"),
    ("DISTRIBUTE emp, dept AT 1", MinidbError, "expected one table name and then AT"),
    ("DISTRIBUTE emp AT 0 WHERE salary > 1 WHERE age > 2", MinidbError, "one WHERE per site"),
]


@pytest.mark.parametrize("text, error, message", ERRORS)
def test_a_mistake_is_a_clear_error_and_changes_nothing(text, error, message):
    with minidb.connect(nodes=3) as db:
        _load(db)
        before = _state(db)
        with pytest.raises(error, match=message) as info:
            db.sql(text)
        assert "\n" not in str(info.value)
        assert _state(db) == before
        db.sql(PAPER_SQL)  # and the database goes on


def test_the_partition_hint_does_not_apply():
    with minidb.connect(nodes=2) as db:
        _load(db)
        with pytest.raises(MinidbError, match="only applies to CREATE TABLE"):
            db.sql("/*+ partition=hash(age) */ DISTRIBUTE emp AT 1")


def test_the_single_node_database_refuses_it():
    db = minidb.connect()  # nodes=1: the single-node Database
    assert isinstance(db, minidb.Database)
    try:
        db.create_table("emp", EMP)
        with pytest.raises(MinidbError, match="DISTRIBUTE places a table's fragments on the nodes "
                                              r"of the parallel engine; .*minidb\.connect\(nodes=N\)"):
            db.sql("distribute emp at 0")
        assert db.sql("SELECT COUNT(*) FROM emp").to_pylist() == [(ROWS,)]
    finally:
        db.close()
    with minidb.connect(nodes=1, timeout=60) as one:  # a one-node parallel engine takes it
        _load(one)
        assert one.sql("DISTRIBUTE emp AT 0").rows == 0


# -- a data directory ---------------------------------------------------------------------------
def test_the_distribution_survives_reopening(tmp_path, duck):
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        _load(db)
        db.sql(PAPER_SQL)
        state = _state(db)
        with pytest.raises(FragmentCoverageError):  # a failing one is undone: no trace left
            db.sql("DISTRIBUTE emp AT 0 WHERE dept = 'shoe'")
        assert _state(db) == state
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        assert _state(db) == state
        _check_distributed(db, duck, PAPER)
        assert sorted(db.sql("SELECT * FROM emp WHERE age < 25", hint="index").to_pylist()) == \
            _duck_rows(duck, "age < 25")
        db.sql("UPDATE emp SET dept = 'shoe' WHERE dept = 'toy'")  # routes by the predicates
        assert len(db.fragments("emp")[1]) == 0


def test_a_node_failing_part_way_undoes_the_move_everywhere(tmp_path, monkeypatch):
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        _load(db)
        before = _state(db)
    real = Node.insert_held

    def fail_on_node_2(self, *args):
        out = real(self, *args)
        if self.node_id == 2:  # its moved tuples are written, not committed
            raise MinidbError("node 2: disk full (simulated)")
        return out

    monkeypatch.setattr(Node, "insert_held", fail_on_node_2)
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        with pytest.raises(MinidbError, match="simulated"):
            db.sql(PAPER_SQL)
        monkeypatch.setattr(Node, "insert_held", real)
        assert db.two_phase.counters.aborts == 1
        assert _state(db) == before
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        assert _state(db) == before


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
    else:  # "decided": the decision is forced, cluster.json not written yet
        import minidb.catalog
        minidb.catalog.write_json_atomically = lambda path, doc: die()
    db.sql(statement)
""")


@pytest.mark.parametrize("point, committed", [("one_prepared", False), ("decided", True)])
def test_a_crash_part_way_reopens_before_or_after_never_half(tmp_path, point, committed):
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        _load(db)
        before = _state(db)
        db.sql(PAPER_SQL)
        after = _state(db)
        db.sql("DISTRIBUTE emp AT 0 WHERE salary >= 0 AT 1 WHERE FALSE AT 2 WHERE salary < 0")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), point, PAPER_SQL],
                           env=env, capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr
    with minidb.connect(nodes=3, data_dir=tmp_path) as db:
        state = _state(db)
    if committed:
        assert state == after
    else:
        assert state[0] == [sorted(r for f in before[0] for r in f), [], []]
        assert state[1] == "predicates(0: salary >= 0; 1: FALSE; 2: salary < 0)"


# -- the statement's text -----------------------------------------------------------------------
def test_the_parser_reads_the_statement():
    st = parse_distribute("  distribute E at node 2 where E.dept = 'shoe at paris' "
                          "AT node0 WHERE (dept <> 'x' AND age > 3) at 1 where \"at\" = 1 ;")
    assert st == DistributeStatement("E", (Site(2, "E.dept = 'shoe at paris'"),
                                           Site(0, "(dept <> 'x' AND age > 3)"),
                                           Site(1, "\"at\" = 1")))
    assert st.fragments(4) == {0: "(dept <> 'x' AND age > 3)", 1: "\"at\" = 1",
                               2: "E.dept = 'shoe at paris'", 3: "FALSE"}
    assert parse_distribute("DISTRIBUTE one_site AT 3").fragments(4) == \
        {0: "FALSE", 1: "FALSE", 2: "FALSE", 3: "TRUE"}
    assert is_distribute("/* a comment */ Distribute emp at 1")
    assert is_distribute("-- note\ndistribute emp at 1")
    assert not is_distribute("SELECT * FROM t DISTRIBUTE BY x")
    assert not is_distribute("distributed")


def test_predicates_may_use_qualifiers_and_bang_equals(duck):
    with minidb.connect(nodes=3) as db:
        _load(db)
        db.sql("DISTRIBUTE emp AT 0 WHERE emp.dept = 'shoe' AT 1 WHERE E.dept = 'toy' "
               "AT 2 WHERE dept != 'toy' and dept != 'shoe'")
        _check_distributed(db, duck, PAPER)


# -- a property: random split points on salary, over random sites -----------------------------
@pytest.fixture(scope="module")
def shared_db():
    with minidb.connect(nodes=4) as db:
        _load(db)
        yield db


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_split_points_match_duckdb(shared_db, duck, data):
    sites = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True))
    cuts = sorted(data.draw(st.lists(st.integers(4000, 52000), min_size=len(sites) - 1,
                                     max_size=len(sites) - 1, unique=True)))
    bounds = [None, *cuts, None]
    fragments = {}
    for node, low, high in zip(sites, bounds[:-1], bounds[1:], strict=True):
        terms = ([f"salary >= {low}"] if low is not None else []) + \
                ([f"salary < {high}"] if high is not None else [])
        fragments[node] = " AND ".join(terms) or "TRUE"
    text = "DISTRIBUTE emp " + " ".join(
        f"AT {n}" + ("" if len(sites) == 1 else f" WHERE {fragments[n]}") for n in sites)
    before = [len(f) for f in shared_db.fragments("emp")]
    r = shared_db.sql(text)
    _check_distributed(shared_db, duck, fragments)
    after = [len(f) for f in shared_db.fragments("emp")]
    assert sum(before) == sum(after) == ROWS
    assert r.rows >= sum(max(0, a - b) for a, b in zip(after, before, strict=True))


# -- Ray ----------------------------------------------------------------------------------------
@pytest.mark.ray
def test_distribute_on_ray_actors(ray_session, duck):
    with minidb.connect(nodes=3, backend="ray", timeout=60) as db:
        db.create_table("emp", EMP, partition="hash(name)")
        db.create_index("emp", "age")
        r = db.sql(PAPER_SQL)
        assert r.rows > 0
        for node, frag in enumerate(db.fragments("emp")):
            assert _tuples(db, frag) == _duck_rows(duck, PAPER[node])
        with pytest.raises(FragmentCoverageError, match="a tuple on node .* nothing was moved"):
            db.sql("DISTRIBUTE emp AT 0 WHERE dept = 'shoe'")
        db.sql("UPDATE emp SET dept = 'toy' WHERE dept = 'shoe'")
        assert len(db.fragments("emp")[0]) == 0
