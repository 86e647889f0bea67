"""Statement atomicity and restart recovery of one node (``minidb.txn``), on real files.

A child process opens a data directory, runs one statement and is killed (``SIGKILL``, no
clean-up of any kind) at a chosen point: after N page writes of the statement, just before its
commit record, just after it, or after the catalog is written. The directory is then reopened and
compared with DuckDB running the same statement on the same rows: it must hold exactly the state
before the statement (killed before the commit point) or exactly the state after it (killed
after), every index agreeing with its table. Also here: a crash *during* recovery (recovery is
idempotent), a statement that fails with an error (rolled back, the database goes on), the
directory lock, and the log's torn tail.
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
from minidb.datagen import wisconsin
from minidb.errors import MinidbError
from minidb.txn.log import LogFile
from minidb.txn.undo import BEFORE, COMMIT

REPO = Path(__file__).resolve().parents[1]
ROWS = 6000
BUFFER = 16  # far fewer frames than the table's pages: the statement writes pages as it goes

STATEMENTS = {
    "update": "UPDATE t SET unique2 = unique2 + 100000, ten = 7 WHERE unique1 % 3 = 0",
    "update_key": "UPDATE t SET unique1 = unique1 + 50000 WHERE unique1 < 2500",
    "delete": "DELETE FROM t WHERE unique1 % 2 = 1",
    "insert": "INSERT INTO t SELECT unique1 + 10000, unique2 + 10000, two, four, ten, twenty, "
              "onepercent, tenpercent, twentypercent, fiftypercent, unique3, evenonepercent, "
              "oddonepercent, stringu1, stringu2, string4 FROM t WHERE unique1 < 3000",
    "ctas": "CREATE TABLE u AS SELECT * FROM t WHERE unique1 < 4000",
}

CHILD = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.storage.disk import PagedFile
    from minidb.txn.undo import UndoJournal
    path, point, action = sys.argv[1], sys.argv[2], sys.argv[3]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if point.startswith("write:"):  # killed after this many pages of the statement are written
        limit, real, done = int(point[6:]), PagedFile.write_pages, [0]
        def write_pages(self, first, pages):
            real(self, first, pages)
            done[0] += len(pages)
            if done[0] >= limit:
                die()
        PagedFile.write_pages = write_pages
    elif point == "before_commit":
        UndoJournal.commit = lambda self, catalog: die()
    elif point == "after_commit":
        real_commit = UndoJournal.commit
        def commit(self, catalog):
            real_commit(self, catalog)
            die()
        UndoJournal.commit = commit
    elif point == "after_catalog":
        UndoJournal.finish = lambda self: die()
    db = minidb.connect(data_dir=path, buffer_pages=int(sys.argv[4]))
    if action.startswith("sql:"):
        db.sql(action[4:])
    elif action == "index":
        db.create_index("t", "ten")
    elif action == "cluster":
        db.create_index("t", "unique1", clustered=True)
    elif action == "drop":
        db.drop_table("t")
    print("finished", flush=True)
""")


def _load(path: Path) -> pa.Table:
    data = wisconsin(ROWS, seed=3)
    with minidb.connect(data_dir=path) as db:
        db.create_table("t", data)
        db.create_index("t", "unique2")
        assert db.table("t").num_pages > BUFFER * 10
    return data


def _state(path: Path) -> dict:
    """Every table's rows (sorted) and, for t, what its index on unique2 finds."""
    with minidb.connect(data_dir=path) as db:
        assert db.damaged_tables() == {}
        out = {}
        for name in sorted(db.tables()):
            out[name] = sorted(db.sql(f"SELECT * FROM {name}").to_pylist())
        if "t" in out:
            via_index = db.sql("SELECT unique1, unique2 FROM t WHERE unique2 >= 0",
                               hint="index").to_pylist()
            assert sorted(via_index) == sorted((r[0], r[1]) for r in out["t"])
        return out


def _oracle(data: pa.Table, statement: str | None) -> dict:
    """The tables DuckDB holds after ``statement`` (None: before any), in ``_state``'s form."""
    con = duckdb.connect()
    con.register("src", data)
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    if statement:
        con.execute(statement)
    names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    return {n: sorted(con.execute(f"SELECT * FROM {n}").fetchall()) for n in sorted(names)}


def _kill_at(path: Path, point: str, action: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", CHILD, str(path), point, action, str(BUFFER)], env=env,
                          capture_output=True, text=True, timeout=300)


POINTS = ["write:1", "write:40", "before_commit", "after_commit", "after_catalog"]
#: the default run: every statement at one point, every point on one statement
DEFAULT = {("update", "write:40"), ("delete", "write:1"), ("insert", "write:40"),
           ("ctas", "write:40"), ("update_key", "before_commit"), ("update", "after_commit"),
           ("delete", "after_catalog")}


@pytest.mark.parametrize("kind,point", [
    pytest.param(k, p, marks=() if (k, p) in DEFAULT else pytest.mark.slow)
    for k in STATEMENTS for p in POINTS])
def test_a_statement_killed_at_any_point_is_all_or_nothing(tmp_path, kind, point):
    data = _load(tmp_path)
    child = _kill_at(tmp_path, point, "sql:" + STATEMENTS[kind])
    assert child.returncode == -signal.SIGKILL, child.stderr
    after = _state(tmp_path)
    committed = point in ("after_commit", "after_catalog")
    assert after == _oracle(data, STATEMENTS[kind] if committed else None)


@pytest.mark.parametrize("action,point", [("index", "write:3"), ("cluster", "write:40"),
                                          ("drop", "before_commit"), ("drop", "after_commit"),
                                          pytest.param("cluster", "after_commit", marks=pytest.mark.slow)])
def test_catalog_changes_killed_half_way_are_all_or_nothing(tmp_path, action, point):
    data = _load(tmp_path)
    before = _state(tmp_path)
    child = _kill_at(tmp_path, point, action)
    assert child.returncode == -signal.SIGKILL, child.stderr
    state = _state(tmp_path)
    if action == "drop":
        assert state == ({} if point == "after_commit" else before)
        # committed, the dropped files are gone; undone, they are all there again
        assert bool(list(tmp_path.glob("*.pages"))) == (point != "after_commit")
    else:
        assert state == _oracle(data, None)
        with minidb.connect(data_dir=tmp_path) as db:  # the index is there only if committed
            t = db.table("t")
            built = "ten" in t.indexes if action == "index" else t.organization == "clustered"
            assert built == (point == "after_commit")


def test_no_page_file_is_left_behind_by_an_undone_statement(tmp_path):
    _load(tmp_path)
    files = sorted(p.name for p in tmp_path.glob("*.pages"))
    child = _kill_at(tmp_path, "write:40", "sql:" + STATEMENTS["ctas"])
    assert child.returncode == -signal.SIGKILL
    with minidb.connect(data_dir=tmp_path) as db:
        assert "undone" in db.recovery
    assert sorted(p.name for p in tmp_path.glob("*.pages")) == files
    assert not (tmp_path / "orphaned-pages").exists()


RECOVERY_KILLER = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.txn import undo
    real, done = os.pwrite, [0]
    def pwrite(fd, data, offset):  # killed after a few before-images are written back
        n = real(fd, data, offset)
        done[0] += 1
        if done[0] >= int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
        return n
    undo.os.pwrite = pwrite
    minidb.connect(data_dir=sys.argv[1])
    print("finished", flush=True)
""")


def test_a_crash_during_recovery_is_recovered_again(tmp_path):
    data = _load(tmp_path)
    child = _kill_at(tmp_path, "write:60", "sql:" + STATEMENTS["update"])
    assert child.returncode == -signal.SIGKILL
    records = list(LogFile(tmp_path / "wal.log").records())
    assert sum(r.type == BEFORE for r in records) >= 20 and not any(r.type == COMMIT for r in records)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for k in (3, 11):  # twice, at two points of the write-back
        again = subprocess.run([sys.executable, "-c", RECOVERY_KILLER, str(tmp_path), str(k)],
                               env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == -signal.SIGKILL, again.stderr
    assert _state(tmp_path) == _oracle(data, None)


def test_a_failing_statement_is_rolled_back_and_the_database_goes_on(tmp_path, monkeypatch):
    data = _load(tmp_path)
    from minidb.storage.disk import PagedFile

    real, done = PagedFile.write_pages, [0]

    def failing_write(self, first, pages):
        real(self, first, pages)
        done[0] += len(pages)
        if done[0] >= 30:
            raise MinidbError("disk full (simulated)")

    with minidb.connect(data_dir=tmp_path, buffer_pages=BUFFER) as db:
        monkeypatch.setattr(PagedFile, "write_pages", failing_write)
        with pytest.raises(MinidbError, match="simulated"):
            db.sql(STATEMENTS["update"])
        monkeypatch.setattr(PagedFile, "write_pages", real)
        assert db.journal.counters.rollbacks == 1
        in_process = {n: sorted(db.sql(f"SELECT * FROM {n}").to_pylist()) for n in db.tables()}
        assert in_process == _oracle(data, None)
        db.sql(STATEMENTS["delete"])  # the database goes on, and commits
    assert _state(tmp_path) == _oracle(data, STATEMENTS["delete"])


def test_a_data_directory_is_open_in_one_database_at_a_time(tmp_path):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("t", wisconsin(100))
        with pytest.raises(MinidbError, match=rf"open in another minidb database \(process {os.getpid()}\)"):
            minidb.connect(data_dir=tmp_path)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        opener = ("import sys, minidb\ntry:\n    minidb.connect(data_dir=sys.argv[1])\n"
                  "except minidb.MinidbError as e:\n    sys.exit(str(e))")
        other = subprocess.run([sys.executable, "-c", opener, str(tmp_path)], env=env,
                               capture_output=True, text=True, timeout=300)
        assert other.returncode == 1
        assert f"open in another minidb database (process {os.getpid()})" in other.stderr
    with minidb.connect(data_dir=tmp_path) as db:  # closed: free again
        assert db.sql("SELECT COUNT(*) FROM t").to_pylist() == [(100,)]


def test_the_log_ignores_a_torn_or_damaged_tail(tmp_path):
    log = LogFile(tmp_path / "wal.log")
    for i in range(3):
        log.append(BEFORE, bytes([i]) * 100)
    log.force()
    log.close()
    raw = (tmp_path / "wal.log").read_bytes()
    (tmp_path / "wal.log").write_bytes(raw[:-30])  # the third record torn
    assert [r.payload[0] for r in LogFile(tmp_path / "wal.log").records()] == [0, 1]
    damaged = bytearray(raw)
    damaged[len(raw) // 2] ^= 0xFF  # a flipped byte in the second record
    (tmp_path / "wal.log").write_bytes(bytes(damaged))
    log = LogFile(tmp_path / "wal.log")
    assert [r.lsn for r in log.records()] == [1]
    assert log.append(COMMIT, b"{}") == 2  # appends go after the last good record
    assert [r.lsn for r in log.records()] == [1, 2]


def test_queries_leave_the_log_empty(tmp_path):
    _load(tmp_path)
    with minidb.connect(data_dir=tmp_path, buffer_pages=BUFFER, memory_pages=4) as db:
        for _ in range(3):  # a sort bigger than its memory writes temporary runs
            db.sql("SELECT * FROM t ORDER BY stringu1")
        assert db.journal.log.counters.records > 0  # the runs' files were logged as made
        assert (tmp_path / "wal.log").stat().st_size == 0  # and forgotten with them
        assert db.journal.counters.before_images == 0
