# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 5: commit, crash, recover
#
# Every earlier lab measured how fast a statement runs. This one asks what is left of it when
# something dies half way. Distributed INGRES (Stonebraker et al. 1983, "Performance Analysis of
# Distributed Data Base Systems") updates fragments of a relation on several sites at once, even
# moving tuples from one site to another, and makes the sites agree with **two-phase commit**,
# with **three-phase commit** as an option "for added reliability". This lab takes both apart,
# starting from a single node.
#
# You will
#
# 1. kill a process (`kill -9`) in the middle of an UPDATE and watch the undo log put the table
#    back, exactly, and then kill it again while it is recovering;
# 2. make one of three nodes fail during a parallel UPDATE and watch two-phase commit undo the
#    statement everywhere; kill the whole process before and after the commit decision;
# 3. distribute the paper's EMP relation by predicates, move tuples between sites with an UPDATE,
#    and run the paper's three benchmarks on modeled VAXes against its Tables 1, 3 and 4;
# 4. run 2PC, presumed abort, presumed commit, 3PC and group commit on a simulated network and
#    count what each costs: messages and log forces;
# 5. break the network: crash the coordinator for good at every step, cut the network in two, and
#    break one rule of the protocol on purpose;
# 6. (assignment) write two-phase commit yourself and put it through the fault matrix.
#
# The rules are in `docs/facts.md` ("Commit protocols"); the lecture notes are
# `lectures/lecture5_commit/lecture5_commit.md`.

# %% [markdown]
# ## Parameters
#
# `SCALE = 1.0` loads 10,000 Wisconsin tuples into the tables of Parts A and B and 6,000 EMP
# tuples into Part C's; the whole lab then runs in well under a minute (most of it in the
# processes it kills). Part C's benchmarks (at a tenth of the paper's sizes) and Parts D to F do
# not depend on it. The test suite runs it with `MINIDB_LAB_SCALE=0.2`.

# %% tags=["parameters"]
import os

SCALE = float(os.environ.get("MINIDB_LAB_SCALE", "1.0"))  # 1.0: 10,000 tuples in A, B; 6,000 in C
SEED = 1

# %%
# ruff: noqa: E402  (a notebook imports in more than one cell)
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path

import commit  # noqa: F401  (your assignment, labs/lab5_commit/commit.py: registers student_2pc)
import duckdb
import helpers  # printing and drawing only: labs/lab5_commit/helpers.py
import matplotlib.pyplot as plt

import minidb
from minidb.datagen import wisconsin
from minidb.errors import MinidbError, NotImplementedYet
from minidb.txn.log import read_log
from minidb.txn.txn_log import END, WRITE
from minidb.txn.undo import BEFORE, BEGIN, COMMIT, CREATE, PREPARE

ROWS = max(2000, int(10_000 * SCALE))
WORK = tempfile.TemporaryDirectory(prefix="minidb-lab5-")  # the lab's data directories
REPO = Path(minidb.__file__).resolve().parents[1]
RECORD = {BEGIN: "BEGIN", BEFORE: "BEFORE", CREATE: "CREATE", COMMIT: "COMMIT",
          PREPARE: "PREPARE"}
TXN_RECORDS = {WRITE: "WRITE", END: "END"}  # the transaction log's (minidb/txn/txn_log.py)


def log_contents(path: Path, kinds: dict[int, str] = RECORD) -> str:
    """The records a log file holds, counted by type (read without touching it)."""
    counts = Counter(kinds[r.type] for r in read_log(path))
    return ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "empty"


def duckdb_rows(data, *statements: str) -> list[tuple]:
    """The rows of t in DuckDB, loaded with ``data``, after ``statements``: the oracle."""
    con = duckdb.connect()
    con.register("src", data)
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    for statement in statements:
        con.execute(statement)
    return sorted(con.execute("SELECT * FROM t").fetchall())


def rows_of(db) -> list[tuple]:
    return sorted(db.sql("SELECT * FROM t").to_pylist())


def changes(before: dict, after: dict) -> dict:
    """The counters that moved between two ``as_dict()`` snapshots, and by how much."""
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


def kill_9(child: str, *args) -> str:
    """Run ``child`` (Python source) in a fresh process that kills itself with SIGKILL; return
    what it printed before it died."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", child, *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != -signal.SIGKILL:
        raise RuntimeError(f"the child was not killed (exit {done.returncode}): "
                           f"{done.stdout}{done.stderr[-2000:]}")
    print(f"the process was killed by {signal.Signals(-done.returncode).name}")
    return done.stdout


# %% [markdown]
# ## Part A: one node, killed in the middle of a statement
#
# A data directory makes minidb durable: `minidb.connect(data_dir=...)` keeps each table in a
# `.pages` file, the catalog in `catalog.json`, and an **undo log** in `wal.log`. Every statement
# that changes data is a transaction of its own, and it is atomic, whatever happens:
#
# * before a page that was committed is overwritten in place, its old contents (a *before-image*)
#   go into the log, and the log is **forced** (fsync) before the page is written: the
#   *write-ahead rule*;
# * at commit, every changed page is forced to its file (**FORCE**), then a `COMMIT` record is
#   forced: that force is the commit point; then the catalog is replaced and the log emptied;
# * when a directory is opened, a log that ends without `COMMIT` is **undone** (the images are
#   written back), one that holds `COMMIT` is finished (**redone**: only the catalog is left to
#   write, since FORCE put the pages on disk before the commit point).
#
# First a table, and one UPDATE that nobody interrupts, on a copy: what does it cost in the log?
# The buffer pool has only 16 frames, so the UPDATE writes pages back while it runs.

# %%
data = wisconsin(ROWS, seed=SEED)
UPDATE = "UPDATE t SET unique2 = unique2 + 1000000, ten = 7 WHERE unique1 % 3 = 0"
one = Path(WORK.name) / "one-node"
for path in (one, Path(WORK.name) / "copy"):
    with minidb.connect(data_dir=path) as db:
        db.create_table("t", data)
        pages = db.table("t").num_pages
print(f"t: {ROWS:,} tuples in {pages} pages; files {sorted(p.name for p in one.iterdir())}")

with minidb.connect(data_dir=Path(WORK.name) / "copy", buffer_pages=16) as db:
    db.sql(UPDATE)
    print(f"one UPDATE of every page: {db.journal.counters.before_images} before-images, "
          f"{db.journal.log.counters.forces} log forces, "
          f"{db.journal.log.counters.bytes / 1e6:.1f} MB of log")

# %% [markdown]
# **Question A1.** The UPDATE logged one before-image per page but forced the log far fewer
# times than it wrote pages. When exactly must the log be forced, and why would forcing it
# *after* the page is written be wrong? What did minidb batch to force less often (read
# `before_write` in `minidb/txn/undo.py`)?
#
# Now the same UPDATE on the real directory, in a child process that kills itself with SIGKILL
# after a third of the table's pages have been written: no exception, no `finally`, no clean-up.

# %%
KILL_ONE_NODE = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.storage.disk import PagedFile
    from minidb.txn.undo import UndoJournal
    path, statement, point = sys.argv[1], sys.argv[2], sys.argv[3]

    def die():  # kill -9: nothing after this line runs, nothing is flushed
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "after_commit":  # just after the COMMIT record was forced
        real_commit = UndoJournal.commit
        def commit(self, catalog):
            real_commit(self, catalog)
            die()
        UndoJournal.commit = commit
    else:  # after this many pages of the statement were written in place
        real_write, written = PagedFile.write_pages, [0]
        def write_pages(self, first, pages):
            real_write(self, first, pages)
            written[0] += len(pages)
            if written[0] >= int(point):
                print(written[0], flush=True)  # the pages it wrote, for the notebook
                die()
        PagedFile.write_pages = write_pages
    db = minidb.connect(data_dir=path, buffer_pages=16)
    db.sql(statement)
""")

written = kill_9(KILL_ONE_NODE, one, UPDATE, pages // 3)
print(f"it had written {int(written)} of the table's {pages} pages in place")
print("the log left behind:", log_contents(one / "wal.log"))
with minidb.connect(data_dir=one) as db:
    print("recovery:", db.recovery)
    print("t equals DuckDB's table before the UPDATE:", rows_of(db) == duckdb_rows(data))

# %% [markdown]
# **Question A2.** Compare the `BEFORE` records in the log with the pages the child had written
# when it died. Which pages have a before-image without having been overwritten yet, why were
# their images logged already, and why is writing such a page back during recovery harmless?
#
# Now kill the child just *after* its `COMMIT` record was forced, before the catalog file was
# replaced. The statement is committed: the recovery must finish it, not undo it.

# %%
kill_9(KILL_ONE_NODE, one, UPDATE, "after_commit")
print("the log left behind:", log_contents(one / "wal.log"))
with minidb.connect(data_dir=one) as db:
    print("recovery:", db.recovery)
    print("t equals DuckDB's table after the UPDATE:", rows_of(db) == duckdb_rows(data, UPDATE))

# %% [markdown]
# A recovery can crash too (the machine may fail again while it restarts). The next cell kills a
# DELETE half way, then opens the directory in a process that dies after writing back three
# pages, and again after eleven; only the third opening is allowed to finish.

# %%
DELETE = "DELETE FROM t WHERE unique1 % 2 = 1"
KILL_RECOVERY = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.txn import undo
    real_pwrite, done = os.pwrite, [0]
    def pwrite(fd, data, offset):  # recovery writes each before-image back with pwrite
        n = real_pwrite(fd, data, offset)
        done[0] += 1
        if done[0] >= int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
        return n
    undo.os.pwrite = pwrite
    minidb.connect(data_dir=sys.argv[1])
""")

kill_9(KILL_ONE_NODE, one, DELETE, pages // 4)
print("the log left behind:", log_contents(one / "wal.log"))
for after in (3, 11):
    kill_9(KILL_RECOVERY, one, after)
    print(f"  ... during recovery, after {after} pages written back; the log now:",
          log_contents(one / "wal.log"))
with minidb.connect(data_dir=one) as db:
    print("recovery:", db.recovery)
    print("t equals DuckDB's table after the UPDATE, without the DELETE:",
          rows_of(db) == duckdb_rows(data, UPDATE))

# %% [markdown]
# **Question A3.** The log was exactly the same after each interrupted recovery. Why must undo be
# *idempotent* (doing it twice is the same as doing it once), and what would go wrong if the
# recovery emptied the log first and wrote the pages back afterwards?
#
# A *transaction* runs several statements, and the journal above commits each one on its own. So
# a transaction keeps a second log, `txn.log` (`minidb/txn/txn_log.py`): before each write it
# forces the rows the write may change, as they are, and `commit` forces an `END` record. The
# child below moves 500 from one tuple's `unique2` to another's, deletes a third tuple, and is
# killed before it commits.

# %%
KILL_TRANSACTION = textwrap.dedent("""
    import os, signal, sys
    import minidb
    db = minidb.connect(data_dir=sys.argv[1])
    tx = db.begin()
    tx.sql("UPDATE t SET unique2 = unique2 - 500 WHERE unique1 = 10")
    tx.sql("UPDATE t SET unique2 = unique2 + 500 WHERE unique1 = 20")
    tx.sql("DELETE FROM t WHERE unique1 = 30")
    os.kill(os.getpid(), signal.SIGKILL)  # before tx.commit()
""")

kill_9(KILL_TRANSACTION, one)
print("the transaction log left behind:", log_contents(one / "txn.log", TXN_RECORDS))
with minidb.connect(data_dir=one) as db:
    print("recovery:", db.recovery)
    print("t equals DuckDB's table after the UPDATE, without the transaction:",
          rows_of(db) == duckdb_rows(data, UPDATE))

# %% [markdown]
# **Question A4.** Each of the three statements had been committed by the journal, yet none of
# them survived. What made the restart undo them, and at which moment would they have become
# permanent? An `abort` puts the rows back while the transaction still holds its locks and then
# forces an `END` record too: what could a restart do wrong if that `END` were not forced before
# the locks are released?
#
# ## Part B: three nodes, one statement
#
# Distributed INGRES runs a multi-site update as one *master* and a *slave* per site: each slave
# applies its part, says it is ready, and commits when the master says so. minidb's parallel
# engine does the same (`minidb/txn/two_phase.py`): each node's undo log makes its own part
# atomic, and **two-phase commit with presumed abort** makes the parts agree. Here `t` is hashed
# on `unique1` over 3 nodes, and the UPDATE changes `unique1`, so tuples move from node to node,
# as in the paper's example.
#
# First node 2 fails after doing its part (a simulated "disk full", raised by a patched
# `Node.update`, as the engine's own tests do). Its pages are written, the other nodes' too.

# %%
from minidb.cluster.node import Node

MOVING = "UPDATE t SET unique1 = unique1 + 100000 WHERE unique1 < 1000"
data3 = wisconsin(ROWS, seed=SEED + 1)
three = Path(WORK.name) / "three-nodes"
with minidb.connect(nodes=3, data_dir=three) as db:
    db.create_table("t", data3, partition="hash(unique1)")
print("directories:", sorted(p.name for p in three.iterdir() if p.is_dir()),
      "+ the coordinator's", sorted(p.name for p in three.iterdir() if p.is_file()))

real_update, real_insert = Node.update, Node.insert_held


def fail_on_node_2(self, *args, **kwargs):
    out = (real_update if len(args) > 2 else real_insert)(self, *args, **kwargs)
    if self.node_id == 2:  # after doing its part: its pages are written, not committed
        raise MinidbError("node 2: disk full (simulated)")
    return out


with minidb.connect(nodes=3, data_dir=three) as db:
    before = db.two_phase.counters.as_dict()
    Node.update, Node.insert_held = fail_on_node_2, fail_on_node_2
    try:
        db.sql(MOVING)
    except MinidbError as error:
        print("the UPDATE failed:", error)
    finally:
        Node.update, Node.insert_held = real_update, real_insert
    print("aborted by two-phase commit:",
          changes(before, db.two_phase.counters.as_dict())["aborts"], "statement")
    print("statements each node undid:", [n.db.journal.counters.rollbacks
                                          for n in db.backend.nodes])
    print("t equals DuckDB's table before the UPDATE:", rows_of(db) == duckdb_rows(data3))
    before = db.two_phase.counters.as_dict()
    db.sql(MOVING)  # the database goes on
    print("two-phase commit, the same UPDATE again:",
          changes(before, db.two_phase.counters.as_dict()))
with minidb.connect(nodes=3, data_dir=three) as db:
    print("reopened, t equals DuckDB's table after the UPDATE:",
          rows_of(db) == duckdb_rows(data3, MOVING))

# %% [markdown]
# **Question B1.** Count the messages of the committed UPDATE: how many per node, and which are
# they? Why did the coordinator force its log once for the commit and never for the abort?
#
# Now kill the whole process (coordinator and nodes together) twice while it runs another UPDATE:
# first just after node 1 has prepared, before any decision; then just after the coordinator
# forced its `COMMIT` record (the decision), before anyone was told. Each node's log, and the
# coordinator's, are shown as the crash left them.

# %%
SECOND = "UPDATE t SET ten = ten + 100, unique2 = unique2 + 100000 WHERE unique1 % 4 = 1"
KILL_PARALLEL = textwrap.dedent("""
    import os, signal, sys
    import minidb, minidb.catalog
    from minidb.cluster.node import Node
    path, statement, point = sys.argv[1], sys.argv[2], sys.argv[3]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    db = minidb.connect(nodes=3, data_dir=path)
    if point == "one_prepared":
        real_prepare = Node.prepare
        def prepare(self, txn):
            real_prepare(self, txn)
            if self.node_id == 1:
                die()
            return True
        Node.prepare = prepare
    else:  # decided: the COMMIT record is forced, the catalog file is written next
        minidb.catalog.write_json_atomically = lambda path, doc: die()
    db.sql(statement)
""")


def show_logs(directory: Path) -> None:
    for log in sorted(directory.glob("node-*/wal.log")):
        print(f"  {log.parent.name}: {log_contents(log)}")
    print(f"  coordinator: {log_contents(directory / 'wal.log')}")


for point, committed in (("one_prepared", False), ("decided", True)):
    print(f"--- killed at {point}")
    kill_9(KILL_PARALLEL, three, SECOND, point)
    show_logs(three)
    with minidb.connect(nodes=3, data_dir=three) as db:
        for node in db.backend.nodes:
            print(f"  node-{node.node_id} recovery: {node.db.recovery}")
        expected = [MOVING, SECOND] if committed else [MOVING]
        print(f"  t equals DuckDB's table {'with' if committed else 'without'} the second "
              f"UPDATE: {rows_of(db) == duckdb_rows(data3, *expected)}")

# %% [markdown]
# **Question B2.** After the first kill, a node that had prepared found a `PREPARE` record and no
# `COMMIT` in its log: it was *in doubt*. Whom did it ask, what did it find there, and why does
# "no record" safely mean abort (*presumed abort*)? After the second kill, why must the
# coordinator keep its `COMMIT` record until every node has committed?
#
# ## Part C: Distributed INGRES: fragments, a site-changing update, the paper's benchmarks
#
# The paper's system stores a relation in **fragments**, one per site, each defined by a
# predicate (§2): the `distribute` command says which tuples live where. The example splits
# `EMP(name, salary, manager, age, dept)` by department: "shoe" at Berkeley, "toy" at Paris,
# every other department at Boston. A command runs as a *master* (where it was typed) and a
# *slave* at every site that holds data for it. minidb's parallel engine has the same statement
# in SQL: `DISTRIBUTE emp AT 0 WHERE ... AT 1 WHERE ...` (`docs/sql.md`), a site being a node's
# number. Here nodes 0, 1 and 2 play Berkeley, Paris and Boston.
#
# EMP comes from minidb's generator for the paper's relations (`minidb/datagen/ingres.py`): 38
# bytes a tuple, salaries 5,000 to 50,000, ages 18 to 65. The paper's DEPT has 1,500
# departments, which would leave "shoe" and "toy" with 20 employees each; the lab uses 6, so
# every fragment has something in it. The table is loaded hashed on `name`, then distributed.

# %%
from minidb.datagen.ingres import emp
from minidb.errors import FragmentCoverageError

EMP_ROWS = max(1200, int(6_000 * SCALE))
emp_data = emp(EMP_ROWS, seed=SEED, departments=6)  # 'shoe', 'toy' and four other departments
PAPER_SITES = {0: "dept = 'shoe'", 1: "dept = 'toy'", 2: "dept <> 'toy' AND dept <> 'shoe'"}
DISTRIBUTE = "DISTRIBUTE emp " + " ".join(f"AT {n} WHERE {p}" for n, p in PAPER_SITES.items())
oracle = duckdb.connect()  # DuckDB holds the same EMP: the oracle of this part
oracle.register("src", emp_data)
oracle.execute("CREATE TABLE emp AS SELECT * FROM src")


def per_node(db) -> list[int]:
    """How many tuples of emp each node stores."""
    return [len(records) for records in db.fragments("emp")]


def fragment(db, node: int) -> list[tuple]:
    """The tuples of emp that ``node`` stores (read from that node alone), sorted."""
    schema = db.catalog.get("emp").schema
    table = schema.arrow_from_records(db.fragments("emp")[node])
    return sorted(tuple(row.values()) for row in table.to_pylist())


def duckdb_where(predicate: str) -> list[tuple]:
    return sorted(oracle.execute(f"SELECT * FROM emp WHERE {predicate}").fetchall())


ingres = minidb.connect(nodes=3)
ingres.create_table("emp", emp_data, partition="hash(name)")
print(f"EMP: {EMP_ROWS:,} tuples, hashed on name: tuples per node {per_node(ingres)}")
print(DISTRIBUTE)
moved = ingres.sql(DISTRIBUTE)
print(moved.explain())
print("emp is now partitioned by", ingres.partitioner("emp").describe())
for node, predicate in PAPER_SITES.items():
    print(f"node {node} holds exactly DuckDB's rows WHERE {predicate}: "
          f"{fragment(ingres, node) == duckdb_where(predicate)}")

# %% [markdown]
# The fragments must **cover** the relation: every tuple satisfies exactly one predicate. A
# classic mistake is an off-by-one between two ranges. The next cell distributes by age with
# `age < 30` and `age > 30`: employees aged exactly 30 belong nowhere. Then a distribution
# without such a gap, and an employee who is hired later.

# %%
GAP = "DISTRIBUTE emp AT 0 WHERE age < 30 AT 1 WHERE age > 30 AND age < 50 AT 2 WHERE age >= 50"
try:
    ingres.sql(GAP)
except FragmentCoverageError as error:
    print("refused:", error)
print("still", ingres.partitioner("emp").describe(), "with tuples per node", per_node(ingres))

BY_AGE = "DISTRIBUTE emp AT 0 WHERE age < 30 AT 1 WHERE age >= 30 AND age < 50 " \
         "AT 2 WHERE age >= 50 AND age <= 65"
moved = ingres.sql(BY_AGE)
print(f"\n{BY_AGE}\n  accepted: {moved.rows:,} tuples moved, tuples per node {per_node(ingres)}")
try:
    ingres.sql("INSERT INTO emp VALUES ('emp9999999', 20000, 'emp0000001', 66, 'toy')")
except FragmentCoverageError as error:
    print("an employee aged 66:", error)
print("emp still holds", ingres.sql("SELECT COUNT(*) FROM emp").to_pylist()[0][0], "tuples")
ingres.close()

# %% [markdown]
# **Question C1.** The paper's three predicates give very unequal fragments here (count them).
# Which node does the most work for `SELECT * FROM emp`, and why did the paper's benchmarks
# (§3-§5) not fragment EMP by department? Then explain the two answers about age: the gap was
# refused with no tuple moved, yet `BY_AGE`, which leaves every age above 65 uncovered, was
# accepted. What does DISTRIBUTE check, what does it not, and what happened to the employee aged
# 66? How would you make sure that predicates cover every *possible* tuple?
#
# Now the paper's update that changes a tuple's site: `replace E (dept = "toy") where E.salary >
# 10000` moves every well-paid employee of the shoe department from Berkeley to Paris (and
# those of every other department from Boston). The table lives in a data directory, so each
# statement is committed on the three nodes by two-phase commit, as in Part B. First only the
# shoe department's employees, the paper's example; then the whole command, in a process
# killed just after the coordinator forced its decision (Part B's `KILL_PARALLEL`).

# %%
INGRES_DIR = Path(WORK.name) / "ingres"
SHOE_TO_TOY = "UPDATE emp SET dept = 'toy' WHERE salary > 10000 AND dept = 'shoe'"
PAPER_UPDATE = "UPDATE emp SET dept = 'toy' WHERE salary > 10000"
with minidb.connect(nodes=3, data_dir=INGRES_DIR) as db:
    db.create_table("emp", emp_data, partition="hash(name)")
    db.sql(DISTRIBUTE)
    before = per_node(db)
    r = db.sql(SHOE_TO_TOY)
    c = r.counters
    print(f"{SHOE_TO_TOY}\n  {r.rows} tuples updated; tuples per node {before} -> {per_node(db)}")
    print("\n".join("  " + line for line in r.explain().splitlines()))
    print(f"  moved to their new node through an exchange: {c['bytes_sent_remote']:,} bytes "
          f"({c['bytes_sent_remote'] / 38:.0f} tuples of 38 bytes)")
    print(f"  the commit ({db.two_phase.protocol_name}, {c['commit.participants']} nodes): "
          f"{c['commit.messages']} messages, {c['commit.forces']} log forces "
          f"({c['commit.coordinator_forces']} at the coordinator, "
          f"{c['commit.participant_forces']} at the nodes)")
oracle.execute(SHOE_TO_TOY)

print(f"\n{PAPER_UPDATE}, killed just after the decision:")
kill_9(KILL_PARALLEL, INGRES_DIR, PAPER_UPDATE, "decided")
show_logs(INGRES_DIR)
oracle.execute(PAPER_UPDATE)
with minidb.connect(nodes=3, data_dir=INGRES_DIR) as db:
    for node in db.backend.nodes:
        print(f"  node-{node.node_id} recovery: {node.db.recovery}")
    print(f"  tuples per node {per_node(db)}")
    for node, predicate in PAPER_SITES.items():
        print(f"  node {node} holds exactly DuckDB's rows WHERE {predicate}: "
              f"{fragment(db, node) == duckdb_where(predicate)}")
    print("  emp equals DuckDB's table after both UPDATEs:",
          sorted(db.sql("SELECT * FROM emp").to_pylist()) == duckdb_where("TRUE"))

# %% [markdown]
# **Question C2.** Read the UPDATE's `explain()`: on which nodes did it run, and why only
# there? The paper's slaves send the tuples that change site with their "ready" message, and the
# master passes them on *with the commit message*; minidb moves them through an exchange during
# the statement, before the first `PREPARE`, so moved tuples add no message to its commit. What
# must a site that receives tuples on the commit message be able to do after the decision, and
# what does minidb's order buy? (The paper's 3PC moves them in its second phase instead: why is
# that better?) The commit cost 10 messages, not 12: which node took no part in phase two, and
# why may it? In the killed run, which nodes logged before-images, of which pages, and why is
# node 0's log empty? What did the recovery do?
#
# ### The paper's benchmarks, on the modeled VAXes
#
# The paper measured three benchmarks on a VAX 11/780 and up to two 11/750s (0.629 times as
# fast) on a 3 Mbit Ethernet: 1,000 single-tuple updates (Table 1), a retrieve of all 30,000
# EMP tuples (Table 3), and the EMP-DEPT join by fragment-and-replicate (Table 4), each on
# normal INGRES, Distributed INGRES on a local and on a foreign data base, and on 2 and 3
# sites. minidb reruns them (`minidb/experiments/ingres.py`): it builds every fragment, runs
# every update and query on real relations, counts the work per site (tuples, pages, messages,
# packets), and prices the counts as user CPU, system CPU and elapsed time on the modeled
# machines (`minidb/cost/ingres_model.py`). Seven of the model's constants were fitted to seven
# cells of normal and local INGRES; every other cell is a prediction. The lab runs them at a
# tenth of the paper's sizes; the counts are scaled up to the paper's before pricing.
#
# **Question C3 (before you run the next cell).** Write down your predictions. (a) The update
# benchmark on 2 and on 3 sites, each site running its own third of the script: how much
# sooner than normal INGRES does it finish? (b) Does the total CPU time (11/750 time counted at
# 0.629) grow, shrink or stay the same from 2 to 3 sites? (c) §5: replicating EMP instead of
# DEPT in the join is "about 20 times slower". Will the model agree?

# %%
from minidb.experiments import run_experiment
from minidb.experiments.findings import check_findings
from minidb.results import load_reference

BENCH_SCALE = 0.1  # of the paper's sizes: 3,000 EMP, 150 DEPT, 100 updates (at every SCALE)
INGRES_PAPER = {(c["reference"], c["row"], c["column"], c["metric"]): c["value"]
                for c in load_reference("ingres").to_pylist() if c["value"] is not None}
bench = [row for name in ("ingres.updates", "ingres.retrieve", "ingres.join")
         for row in run_experiment(name, scale=BENCH_SCALE)]
TIMES = (("user_time", "user_cpu_time"), ("system_time", "system_cpu_time"),
         ("elapsed_time", "elapsed"))


def mmss(seconds) -> str:
    if seconds is None:
        return "-"
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


for table in ("Table 1", "Table 3", "Table 4"):
    got = {(r["row"], r["column"]): r["value"] for r in bench if r["reference"] == table}
    print(f"{table}, minutes:seconds, minidb's model / the paper")
    print(f"  {'row':32} {'user':>13} {'system':>13} {'elapsed':>13}")
    for row in dict.fromkeys(row for row, _ in got):
        cells = [f"{mmss(got[row, col])} / {mmss(INGRES_PAPER.get((table, row, col, metric)))}"
                 if (row, col) in got else "" for col, metric in TIMES]
        print(f"  {row:32} " + " ".join(f"{cell:>13}" for cell in cells))
slowdown = {r["column"]: r["value"] for r in bench if r["metric"] == "slowdown_factor"}
print(f"§5, the join with EMP replicated instead of DEPT: {slowdown['na']:.0f} times slower on 2 "
      f"sites, {slowdown['dist_3_sites']:.0f} on 3 (the paper: about 20)")

fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
for ax, table in zip(axes, ("Table 1", "Table 3", "Table 4"), strict=True):
    cells = [(r["row"], r["value"], INGRES_PAPER.get((table, r["row"], "elapsed_time", "elapsed")))
             for r in bench if r["reference"] == table and r["column"] == "elapsed_time"]
    x = range(len(cells))
    ax.bar([v - 0.2 for v in x], [c[1] / 60 for c in cells], 0.4, label="minidb (model)")
    ax.bar([v + 0.2 for v in x], [c[2] / 60 for c in cells], 0.4, label="paper")
    ax.set_xticks(list(x), [c[0].replace("_11_", " 11/").replace("dist_", "")
                            for c in cells], rotation=35, ha="right", fontsize=7)
    ax.set(ylabel="elapsed, minutes", title=table)
axes[0].legend(fontsize=8)
fig.tight_layout()
plt.show()

print("The paper's findings, checked on the model's rows:")
for verdict in check_findings(bench, "ingres"):
    print(f"  {verdict.status.upper():5} {verdict.name}: {verdict.detail}")

# %% [markdown]
# Five of the six findings pass: on a local data base Distributed INGRES runs the updates about
# 19% slower than normal INGRES (the paper: 19%), and on a foreign one 12% slower than on a
# local one (the paper: 6%); the update benchmark finishes 17.3% sooner on 2 sites and 43.0%
# sooner on 3 (the paper: 25.7% and 39.9%); the retrieve and the join respond faster on 3 sites
# than on 2; and the total CPU time stays about the same from 2 to 3 sites. One fails, and it is
# kept failing rather than tuned away (minidb's own tests record it as a known failure; each
# finding's bar and its source in the paper are in `minidb/experiments/ingres_findings.py`):
# `ingres.moving_emp_is_an_order_slower`: replicating EMP makes the model's join more than 200
# times slower, not about 20.
#
# `ingres.updates_finish_sooner_on_more_sites` failed too until the model changed how a site's
# script shares its CPU. Each site also runs, as a slave, the updates other sites send it; the
# model used to add all that CPU on top of its own script (no overlap), and 2 sites finished
# only 12.1% sooner, under the bar of 12.5%. But while a script waits on a remote slave and the
# wire, its own CPU is idle and can serve the other site's requests. The model now assumes those
# requests arrive independently of the script, so the share of them that finds the site idle is
# the share of the run it spends waiting (`served_elapsed` in `minidb/cost/ingres_model.py`, a
# mean-value estimate between perfect overlap and none). That mechanism was chosen *after* the
# failure had been seen, so its pass is weaker evidence than a prediction would be; and it
# moves the 3-site rows below the paper's (the 11/780's 11:10 against 12:43).
#
# Two things in the model make the update rows what they are. Each distributed update is
# committed by the registered commit protocol (2PC here, the paper's), and the model prices what
# that protocol does on the simulated network of Part D with one participant: 4 messages, one
# forced log record at the master and two at the slave, each a random 1 KiB write. And a command's
# fixed work is split between the master, which parses it, and the slave, which runs it (§2);
# the slave's share is derived from one cell, the foreign data base's 11/780 user time, where
# the 11/780 runs nothing but slaves. Rerun the updates with `commit_protocol="3pc"` and see
# which rows move.
#
# **Question C4.** Compare your predictions with the model and with the paper. Then explain
# the failing finding from the model (`minidb/cost/ingres_model.py`: each time is a sum of
# counted work times a constant; print the rows of `bench` you need): which work does the model
# count or price differently from what the paper's INGRES did, and which rows of the table show
# it? Would fitting a constant to that cell fix the finding without breaking another? Last,
# the update finding that now passes: which rows of Table 1 did the overlap move, and which of
# them moved away from the paper?
#
# ## Part D: the protocols on a simulated network
#
# The engine's commit runs in one process, where nothing is lost on the way. To see what a
# protocol does when messages are late, lost or duplicated and sites die at any moment, minidb
# runs commit protocols over a **seeded simulated network** (`minidb/txn/commit/simnet.py`): a
# coordinator (site 0) and participants 1..n exchange messages that take 1 to 3 time units; a
# site writes log records (only forced ones survive a crash) and decides. Each protocol is a
# plug-in of four handlers (`start`, `receive`, `timeout`, `recover`), one file each in
# `minidb/txn/commit/`. `one_run` runs one transaction; the same seed replays the same run.
#
# First what each costs when nothing fails: three participants, one transaction that commits,
# one that aborts (participant 1 votes no).

# %%
from minidb.txn.commit.matrix import fault_matrix, one_run, summarize
from minidb.txn.commit.simnet import Crash, Partition
from minidb.txn.commit.two_pc import TwoPhaseCommit

PROTOCOLS = ["2pc", "presumed_abort", "presumed_commit", "3pc", "group_commit"]
print(f"{'protocol':>16} | {'commit: messages':>16} {'forces':>6} {'(coordinator)':>13} | "
      f"{'abort: messages':>15} {'forces':>6}")
costs = {}
for name in PROTOCOLS:
    yes, no = one_run(name), one_run(name, votes={(1, 0): False})
    assert yes.outcome(0, 0) == "commit" and no.outcome(0, 0) == "abort"
    costs[name] = (yes.messages, sum(yes.log_forces), no.messages, sum(no.log_forces))
    print(f"{name:>16} | {yes.messages:>16} {sum(yes.log_forces):>6} {yes.log_forces[0]:>13} | "
          f"{no.messages:>15} {sum(no.log_forces):>6}")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
for ax, (label, i) in zip(axes, (("messages", 0), ("log forces", 1)), strict=True):
    x = range(len(PROTOCOLS))
    ax.bar([v - 0.2 for v in x], [costs[p][i] for p in PROTOCOLS], 0.4, label="commit")
    ax.bar([v + 0.2 for v in x], [costs[p][i + 2] for p in PROTOCOLS], 0.4, label="abort")
    ax.set_xticks(list(x), PROTOCOLS, rotation=20, fontsize=8)
    ax.set(ylabel=label, title=f"{label}, 3 participants, no failure")
axes[0].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# One 2PC commit, event by event (`one_run(..., trace=True)` records every send, delivery, log
# write and decision), and the same run drawn as a message-sequence diagram beside a 3PC commit.
# Squares are forced log records, stars decisions.

# %%
run_2pc = one_run("2pc", trace=True)
print("\n".join(helpers.listing(run_2pc.trace)))

fig, axes = plt.subplots(1, 2, figsize=(10, 5), sharey=True)
helpers.draw_sequence(axes[0], run_2pc.trace, 4, "2PC: one commit")
helpers.draw_sequence(axes[1], one_run("3pc", trace=True).trace, 4, "3PC: one commit")
fig.tight_layout()
plt.show()

# %% [markdown]
# **Question D1.** Read the cost table. With `N` participants, how many messages and forces does
# a 2PC commit take? Why is an abort under presumed abort cheaper than under 2PC, and a commit
# under presumed commit cheaper still, yet presumed commit's *coordinator* forces twice per
# commit? What record is that extra force, and what would go wrong without it?
#
# Group commit (Tandem) spends forces differently: at every site, a record that must be durable
# before the site goes on (the coordinator's `COMMIT`, a participant's `PREPARED` and `COMMIT`)
# waits until four of them are waiting or three time units have passed, and one force makes the
# whole group durable. Sixteen transactions now arrive one every `gap` time units.

# %%
gaps = [0, 0.5, 1, 2, 5]
print(f"{'gap':>5} | {'presumed abort: coordinator forces/commit':>41} {'all sites':>9} "
      f"{'time to decide':>14} | {'group commit: coordinator':>25} {'all sites':>9} "
      f"{'time to decide':>14}")
load = {}
for gap in gaps:
    line = f"{gap:>5} |"
    for name in ("presumed_abort", "group_commit"):
        r = one_run(name, txns=16, start_every=gap)
        decided = {t: time for time, site, t, o in r.decisions if site == 0 and o == "commit"}
        per_commit = r.log_forces[0] / len(decided)
        everywhere = sum(r.log_forces) / len(decided)
        wait = sum(decided[t] - t * gap for t in decided) / len(decided)
        load.setdefault(name, []).append((per_commit, wait))
        width = 41 if name == "presumed_abort" else 25
        line += f" {per_commit:>{width}.2f} {everywhere:>9.2f} {wait:>14.2f} |"
    print(line)

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3))
for name, values in load.items():
    left.plot(gaps, [v[0] for v in values], marker="o", label=name)
    right.plot(gaps, [v[1] for v in values], marker="o", label=name)
left.set(xlabel="time between transactions", ylabel="coordinator forces per commit")
right.set(xlabel="time between transactions", ylabel="time from start to decision")
left.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# **Question D2.** Group commit saves forces only when transactions arrive close together. What
# does each transaction pay for it, and why is a `COMMIT` record that was appended but not yet
# forced still safe if the coordinator crashes before the group's force?
#
# ## Part E: break the network
#
# A **crash at step k** kills a site just before its k-th step (a log write or a message sent).
# Here the coordinator crashes *for good* (`Crash(0, step, None)`) at every step of a commit, and
# we look at the participants when the run ends (at time 5,000). A participant
# that voted yes and has not heard the outcome is **blocked**: in doubt, it may neither commit
# (someone may have voted no) nor abort (the coordinator may have told the client "committed").
# `RunResult.blocked(0)` lists them.

# %%
def crash_coordinator(name: str) -> list[tuple[str, str, list[int], list]]:
    """For each step of the coordinator: (what it was about to do, its outcome, the blocked
    participants, every participant's outcome), crashed there for good."""
    labels = helpers.steps(one_run(name, trace=True).trace, 0)
    rows = []
    for step, label in enumerate(labels, start=1):
        r = one_run(name, crash=Crash(0, step, None))
        assert not r.violations(everyone_recovers=False)
        rows.append((label, r.outcome(0, 0) or "-", r.blocked(0),
                     [r.outcome(p, 0) or "-" for p in (1, 2, 3)]))
    return rows


blocked = {}
for name in ("2pc", "3pc"):
    print(f"{name}: the coordinator crashes for good just before it would ...")
    print(f"{'step':>6}  {'...':<22} {'coordinator':>11}  {'participants':<24} blocked")
    rows = crash_coordinator(name)
    for step, (label, mine, stuck, theirs) in enumerate(rows, start=1):
        print(f"{step:>6}  {label:<22} {mine:>11}  {' '.join(theirs):<24} {stuck or ''}")
    blocked[name] = [len(r[2]) for r in rows]

fig, ax = plt.subplots(figsize=(6, 3))
for name in ("2pc", "3pc"):
    ax.plot(range(1, len(blocked[name]) + 1), blocked[name], marker="o", label=name)
ax.set(xlabel="coordinator crashes for good before its step", ylabel="participants in doubt",
       title="3 participants, the coordinator never comes back")
ax.legend()
plt.show()

# %% [markdown]
# Step 5 is the cruel one for 2PC: the coordinator has forced `COMMIT` (and told its client),
# then dies before anyone hears it. Here is what the participants do about it, and what
# 3PC's participants do when its coordinator dies after forcing its own `COMMIT`: one of them
# becomes a *backup coordinator*, asks the others for their states and finishes (the
# *termination protocol*).

# %%
stuck = one_run("2pc", crash=Crash(0, 5, None), trace=True)
lines = helpers.listing(stuck.trace)
print("\n".join(lines[:18]))
print(f"... and {len(lines) - 18} more lines like these: every participant asks every "
      f"20 units until the run ends; in doubt at the end: {stuck.blocked(0)}")
print()
terminated = helpers.listing(one_run("3pc", crash=Crash(0, 9, None), trace=True).trace)
crash = next(i for i, line in enumerate(terminated) if "CRASHES" in line)
print("\n".join(["3PC, from the coordinator's last record on:"] + terminated[crash - 2:]))

# %% [markdown]
# **Question E1.** Why can't 2PC's participants do what 3PC's do: ask each other, and commit if
# all of them voted yes? Look at step 4 of the 2PC table. Then explain what 3PC's extra round
# buys: at the moment any site commits, in which state must every other site be?
#
# Next, no crash at all but a **partition**: from time 4 on, messages between the coordinator
# and participant 1 on one side and participants 2 and 3 on the other are lost, first until time
# 200 (the network heals), then for good.

# %%
side = frozenset({0, 1})
for name in ("2pc", "3pc"):
    for end in (200, 5000):
        r = one_run(name, partitions=[Partition(4, end, side)])
        when = {site: f"{o} at t={t:g}" for t, site, _, o in r.decisions}
        healed = "heals at t=200" if end == 200 else "never heals   "
        print(f"{name}, partition {healed}: "
              + ", ".join(f"{helpers.site_name(s)} {when.get(s, 'undecided')}" for s in range(4))
              + f"; in doubt at the end: {r.blocked(0)}; broken promises: "
              + f"{len(r.violations(everyone_recovers=end == 200))}")

# %% [markdown]
# **Question E2.** Under this partition 3PC blocks too: participants 2 and 3 wait for the
# network like 2PC's. Its termination protocol aborts only when *every* participant answered
# "waiting". Why must it not abort with the answers of 2 and 3 alone, although both are only
# waiting? (What may the other side of the partition have done?)
#
# Last, break a *rule* instead of the network. Two 2PC variants, each one line away from
# the real thing: a coordinator that sends its decision before forcing it, and a participant that
# votes yes before its `PREPARED` record is forced. The **fault matrix**
# (`minidb/txn/commit/matrix.py`) crashes the coordinator, then participant 1, at each of their
# steps, restarting them 30 units later, over reliable links and over links that drop 20% of the
# messages and deliver 10% twice, three seeds each; and checks every run's promises.

# %%
class TellsFirst(TwoPhaseCommit):
    name = "tells_first"

    def decide_at_coordinator(self, c, txn, outcome):
        self.send_outcome(c, txn, outcome, c.participants)  # the mistake: before the force
        super().decide_at_coordinator(c, txn, outcome)


class UnforcedVote(TwoPhaseCommit):
    name = "unforced_vote"

    def participant_receive(self, p, m):
        first = m.kind == "prepare" and p.decided(m.txn) is None and p.state.get(m.txn) is None
        if first and p.vote(m.txn):
            p.log("prepared", m.txn)  # the mistake: not forced before the vote
            p.state[m.txn] = "prepared"
            p.send(m.src, "yes", m.txn)
            p.set_timer(m.txn, "outcome")
        else:  # a no vote, or any other message: as 2PC does it
            super().participant_receive(p, m)


for broken in (TellsFirst, UnforcedVote):
    rows = fault_matrix([broken])
    bad = [r for r in rows if r.violations]
    print(f"{broken.name}: {len(bad)} of {len(rows)} runs broke a promise")
    first = bad[0]
    print(f"  e.g. {first.crashed} crashed before step {first.step} (drop {first.drop}, seed "
          f"{first.seed}): {first.violations[0]}")

# %% [markdown]
# **Question E3.** For each variant, say which rule was broken and tell the story of the first
# bad run: who crashed, what the others knew, and how the sites came to disagree (or to commit
# work that was gone). Replay it with `one_run(TellsFirst, crash=Crash(0, 5, 30), trace=True)`
# and `helpers.listing`.
#
# ## Part F (assignment): your two-phase commit
#
# Write the coordinator and the participants of 2PC in `labs/lab5_commit/commit.py`, as one
# `CommitProtocol` with the four handlers (the contract is
# [`autograder/assignments/lab5/README.md`](../../autograder/assignments/lab5/README.md)). The
# cell below runs the fault matrix on your protocol and on minidb's 2PC and prints both
# summaries: runs, runs that broke a promise (must be 0), runs where a coordinator that never came
# back left someone in doubt, and the cost of a fault-free commit and abort (at most 4 messages
# per participant). `pytest tests/release` (in the student release) runs the grader's public
# cases, and `python -m autograder submit lab5 --out submission.zip` hands the file in.

# %%
try:
    matrix = fault_matrix(["student_2pc", "2pc"])
    print(f"{'protocol':>12} {'runs':>5} {'violations':>10} {'blocked runs':>12} "
          f"{'commit msgs':>11} {'forces':>6} {'abort msgs':>10} {'forces':>6}")
    for s in summarize(matrix):
        print(f"{s.protocol:>12} {s.runs:>5} {s.violations:>10} {s.blocked_runs:>12} "
              f"{s.commit_messages:>11} {s.commit_forces:>6} {s.abort_messages:>10} "
              f"{s.abort_forces:>6}")
    mine = [r for r in matrix if r.protocol == "student_2pc"]
    wrong = [r for r in mine if r.violations]
    print(f"your protocol: {len(wrong)} of {len(mine)} runs broke a promise; a fault-free "
          f"commit sent {mine[0].messages / 3:g} messages per participant (at most 4)")
    for r in wrong[:3]:
        print(f"  {r.crashed} crashed before step {r.step} (drop {r.drop}, seed {r.seed}):",
              r.violations[0])
except NotImplementedYet as missing:
    print("not written yet:", missing)

# %% [markdown]
# **Question F1.** Your protocol (like minidb's 2PC) leaves participants in doubt in some of the
# runs where the coordinator never comes back. Could any change to `commit.py` that keeps it
# two-phase bring that number to zero? Which of the blocked runs, if any, could a participant
# end safely on its own?
