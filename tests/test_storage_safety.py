"""Reopening a data directory never destroys data and never reads a wrong page back silently.

Scenarios, each on real files in a real data directory:

* the catalog is lost: the directory is refused, naming its page files, and nothing is touched;
* a page file no catalog names: moved aside into ``orphaned-pages/`` with a warning, not deleted;
* one table is damaged: the others open and answer (checked against DuckDB), the damaged one
  fails every use with its name and the reason, until it is dropped;
* a page of another file written into a table's file (a misdirected write), an older copy of a
  page put back after an update (a lost write): the read fails, naming the table, the page and
  what is wrong;
* a writer killed with ``kill -9`` in the middle of UPDATE statements: the reopened table is the
  last committed state or the next one, never a mixture (the undo log of ``minidb.txn``; the
  finer crash points are in ``test_recovery.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import minidb
from minidb.datagen import wisconsin
from minidb.errors import CorruptPageError, DamagedTableError, MinidbError, MinidbWarning

REPO = Path(__file__).resolve().parents[1]
PAGE = 4096


def data_file(db, table: str):
    return db.table(table).heap.file


def snapshot(folder: Path) -> dict[str, bytes]:
    """The directory's data files (not the lock file, whose content is the holder's process id,
    nor the logs)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.is_file() and p.name not in ("minidb.lock", "wal.log", "txn.log")}


# -- item 8: a lost catalog, orphans ------------------------------------------------------------
def test_page_files_without_a_catalog_are_refused_and_kept(tmp_path):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("t", wisconsin(500))
        db.create_index("t", "unique2")
    (tmp_path / "catalog.json").unlink()
    before = snapshot(tmp_path)
    assert len(before) == 2 and all(n.endswith(".pages") for n in before)
    for _ in range(2):  # refused every time: no empty catalog is written in between
        with pytest.raises(MinidbError) as err:
            minidb.connect(data_dir=tmp_path)
        message = str(err.value)
        assert "\n" not in message and "no catalog.json" in message
        assert all(name in message for name in before)
        assert snapshot(tmp_path) == before


def test_parallel_directory_without_its_cluster_catalog_is_refused_and_kept(tmp_path):
    with minidb.connect(nodes=2, data_dir=tmp_path) as db:
        db.create_table("t", wisconsin(300), partition="hash(unique1)")
    (tmp_path / "cluster.json").unlink()
    before = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*.pages"))}
    assert before
    with pytest.raises(MinidbError, match=r"no cluster.json but its nodes hold tables .*node-0: t"):
        minidb.connect(nodes=2, data_dir=tmp_path)
    assert {p: p.read_bytes() for p in sorted(tmp_path.rglob("*.pages"))} == before


def test_orphan_page_files_are_moved_aside_and_reported(tmp_path):
    data = wisconsin(400)
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("t", data)
    (tmp_path / "stray.pages").write_bytes(b"not minidb's to delete" * 100)
    with pytest.warns(MinidbWarning, match=r"stray.pages\) were moved to .*orphaned-pages"):
        db = minidb.connect(data_dir=tmp_path)
    with db:
        assert db.sql("SELECT COUNT(*) FROM t").to_pylist() == [(400,)]
    assert not (tmp_path / "stray.pages").exists()
    assert (tmp_path / "orphaned-pages" / "stray.pages").read_bytes() == b"not minidb's to delete" * 100
    (tmp_path / "stray.pages").write_bytes(b"second")  # the same name again: nothing replaced
    with pytest.warns(MinidbWarning, match="moved to"):
        minidb.connect(data_dir=tmp_path).close()
    assert (tmp_path / "orphaned-pages" / "stray.pages.1").read_bytes() == b"second"
    assert (tmp_path / "orphaned-pages" / "stray.pages").read_bytes().startswith(b"not minidb")


# -- item 9: one damaged table ------------------------------------------------------------------
def test_one_damaged_table_leaves_the_others_working(tmp_path):
    data = wisconsin(2000)
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("good", data)
        db.create_index("good", "unique2")
        db.create_table("bad", data, organization="clustered", key="unique1")
        bad_file = data_file(db, "bad").path
    bad_file.write_bytes(bad_file.read_bytes()[: 3 * PAGE])  # cut short
    with pytest.warns(MinidbWarning, match=r"table 'bad' is damaged .*holds 3 pages but the catalog"):
        db = minidb.connect(data_dir=tmp_path)
    con = duckdb.connect()
    con.register("good", data)
    q = "SELECT unique1, stringu1 FROM good WHERE unique2 BETWEEN 100 AND 160"
    with db:
        assert sorted(db.sql(q).to_pylist()) == sorted(con.execute(q).fetchall())
        assert set(db.damaged_tables()) == {"bad"}
        assert sorted(db.tables()) == ["bad", "good"]
        for statement in ("SELECT COUNT(*) FROM bad",
                          "SELECT * FROM good JOIN bad ON good.unique1 = bad.unique1"):
            with pytest.raises(DamagedTableError) as err:
                db.sql(statement)
            message = str(err.value)
            assert "\n" not in message
            assert "table 'bad' is damaged" in message and "holds 3 pages" in message
        db.sql("INSERT INTO good SELECT * FROM good WHERE unique1 < 10")  # still writable
    with pytest.warns(MinidbWarning, match="'bad' is damaged"):  # its entry was kept
        db = minidb.connect(data_dir=tmp_path)
    with db:
        assert db.sql("SELECT COUNT(*) FROM good").to_pylist() == [(2010,)]
        db.drop_table("bad")
        assert db.tables() == ["good"] and not bad_file.exists()
    with minidb.connect(data_dir=tmp_path) as db:  # clean now: no warning (pytest -W error)
        assert db.damaged_tables() == {}


def test_a_missing_data_file_is_a_damaged_table(tmp_path):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("a", wisconsin(100))
        db.create_table("b", wisconsin(100))
        data_file(db, "a").path.unlink()
    with pytest.warns(MinidbWarning, match="'a' is damaged"):
        db = minidb.connect(data_dir=tmp_path)
    with db:
        assert db.sql("SELECT COUNT(*) FROM b").to_pylist() == [(100,)]
        with pytest.raises(DamagedTableError, match=r"table 'a' is damaged .*a-heap-\d+.pages is missing"):
            db.sql("SELECT * FROM a")


@pytest.mark.parametrize("spec", ["hash(unique1)", "range(unique1: 1500)", "round_robin"])
def test_a_damaged_fragment_leaves_the_parallel_database_working(tmp_path, spec):
    data = wisconsin(3000)
    with minidb.connect(nodes=2, data_dir=tmp_path) as db:
        db.create_table("a", data, partition=spec)
        db.create_table("b", data, partition=spec)
    fragment = next((tmp_path / "node-0").glob("a-heap-*.pages"))
    fragment.write_bytes(fragment.read_bytes()[:PAGE])
    with pytest.warns(MinidbWarning, match="'a' is damaged"):
        db = minidb.connect(nodes=2, data_dir=tmp_path)
    con = duckdb.connect()
    con.register("b", data)
    q = "SELECT ten, COUNT(*), SUM(unique2) FROM b GROUP BY ten"
    with db:
        assert sorted(db.sql(q).to_pylist()) == sorted(con.execute(q).fetchall())
        with pytest.raises(DamagedTableError, match=r"table 'a' is damaged .*holds 1 pages"):
            db.sql("SELECT COUNT(*) FROM a")
        db.drop_table("a")
        assert db.tables() == ["b"] and not fragment.exists()
    with minidb.connect(nodes=2, data_dir=tmp_path) as db:
        assert db.sql("SELECT COUNT(*) FROM b").to_pylist() == [(3000,)]


# -- item 9: misdirected and lost writes --------------------------------------------------------
def two_tables(tmp_path):
    """Tables a and b with the same layout (so a stray page would decode as plausible rows)."""
    data = wisconsin(2000)
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("a", data)
        db.create_table("b", data.slice(0, 1000))
        return data_file(db, "a").path, data_file(db, "b").path, data_file(db, "a").name


def test_a_page_of_another_file_is_caught_naming_table_page_and_file(tmp_path):
    a_path, b_path, a_name = two_tables(tmp_path)
    a_bytes = a_path.read_bytes()
    with open(b_path, "r+b") as fh:  # page 7 of a written where page 7 of b belongs
        fh.seek(7 * PAGE)
        fh.write(a_bytes[7 * PAGE : 8 * PAGE])
    with minidb.connect(data_dir=tmp_path) as db:
        with pytest.raises(CorruptPageError) as err:
            db.sql("SELECT COUNT(*), SUM(unique1) FROM b")
        message = str(err.value)
        assert "page 7 of" in message and "(table 'b')" in message
        assert f"holds page 7 of {a_name} (a write meant for another file" in message
        assert db.sql("SELECT COUNT(*) FROM a").to_pylist() == [(2000,)]


def test_a_page_written_at_another_page_number_is_caught(tmp_path):
    a_path, _, _ = two_tables(tmp_path)
    data = bytearray(a_path.read_bytes())
    data[9 * PAGE : 10 * PAGE] = data[4 * PAGE : 5 * PAGE]
    a_path.write_bytes(bytes(data))
    with minidb.connect(data_dir=tmp_path) as db:
        with pytest.raises(CorruptPageError, match=r"page 9 of a-heap-\d+ \(table 'a'\) holds page 4"):
            db.sql("SELECT * FROM a")


def test_an_old_copy_of_a_page_put_back_after_an_update_is_caught(tmp_path):
    """A lost write: the disk still holds the page as it was before the update."""
    a_path, _, _ = two_tables(tmp_path)
    old = a_path.read_bytes()
    with minidb.connect(data_dir=tmp_path) as db:
        db.sql("UPDATE a SET ten = 99 WHERE unique1 = 1234")
    new = a_path.read_bytes()
    changed = [p for p in range(len(new) // PAGE)
               if new[p * PAGE : (p + 1) * PAGE] != old[p * PAGE : (p + 1) * PAGE]]
    assert len(changed) == 1  # the one page holding that tuple
    p = changed[0]
    with open(a_path, "r+b") as fh:
        fh.seek(p * PAGE)
        fh.write(old[p * PAGE : (p + 1) * PAGE])
    with minidb.connect(data_dir=tmp_path) as db:
        with pytest.raises(CorruptPageError) as err:
            db.sql("SELECT COUNT(*) FROM a WHERE ten = 99")
        message = str(err.value)
        assert f"page {p} of" in message and "(table 'a')" in message
        assert ("is an old copy of the page (version 1, the catalog recorded version 2): "
                "a write was lost" in message)


def test_a_page_written_after_the_catalog_is_caught(tmp_path):
    """What a crash between a statement's page writes and its catalog leaves behind."""
    a_path, _, _ = two_tables(tmp_path)
    catalog = (tmp_path / "catalog.json").read_bytes()
    with minidb.connect(data_dir=tmp_path) as db:
        db.sql("UPDATE a SET ten = 99 WHERE unique2 = 5")
    (tmp_path / "catalog.json").write_bytes(catalog)  # as if the catalog write never happened
    with minidb.connect(data_dir=tmp_path) as db:
        with pytest.raises(CorruptPageError, match=r"page \d+ of .*is newer than the catalog "
                           r"\(version 2, the catalog recorded version 1\): a change was cut off"):
            db.sql("SELECT * FROM a")


def test_a_version_1_catalog_is_a_clear_error(tmp_path):
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("a", wisconsin(10))
    doc = json.loads((tmp_path / "catalog.json").read_text())
    doc["version"] = 1
    (tmp_path / "catalog.json").write_text(json.dumps(doc))
    with pytest.raises(MinidbError, match="written by an older minidb .*catalog version 1"):
        minidb.connect(data_dir=tmp_path)


def test_page_versions_cost_no_page_reads(tmp_path):
    """The versions live in the catalog and in memory: a cold scan reads each page once."""
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("a", wisconsin(3000))
        db.sql("UPDATE a SET ten = 1 WHERE unique1 < 100")
        pages = db.table("a").num_pages
    with minidb.connect(data_dir=tmp_path) as db:
        r = db.sql("SELECT COUNT(*) FROM a")
        assert r.counters["pages_read"] == pages == 158
        assert r.counters["pages_read_random"] == 1 and r.counters["pages_written"] == 0


# -- item 9: a writer killed with kill -9 -------------------------------------------------------
WRITER = textwrap.dedent("""
    import sys
    import minidb
    db = minidb.connect(data_dir=sys.argv[1], buffer_pages=16)
    k = int(sys.argv[2])
    while True:
        k += 1
        db.sql(f"UPDATE t SET v = {k}")
        print(k, flush=True)
""")

ROWS = 12_000


def _committed_state(path: Path) -> tuple[str, object]:
    """('rows', (min v, max v, count)) or ('error', message) for the reopened directory."""
    try:
        with minidb.connect(data_dir=path) as db:
            return "rows", db.sql("SELECT MIN(v), MAX(v), COUNT(*) FROM t").to_pylist()[0]
    except MinidbError as e:
        return "error", str(e)


# the kill lands at random points of the statements; three delays in the default run, three
# more with -m slow
@pytest.mark.parametrize("delay", [0.25, pytest.param(0.5, marks=pytest.mark.slow), 0.8,
                                   pytest.param(1.1, marks=pytest.mark.slow), 1.5,
                                   pytest.param(2.0, marks=pytest.mark.slow)])
def test_kill_9_during_updates_leaves_old_or_new_state_or_a_clear_report(tmp_path, delay):
    table = pa.table({"id": pa.array(np.arange(ROWS), pa.int32()),
                      "v": pa.array(np.zeros(ROWS, dtype=np.int64)),
                      "pad": pa.array(["x" * 180] * ROWS)})
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("t", table)
        assert db.table("t").num_pages > 16 * 20  # far bigger than the writer's buffer pool
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), "0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay + 1.0)  # + the writer's start-up (imports)
    os.kill(writer.pid, signal.SIGKILL)
    out, err = writer.communicate(timeout=30)
    assert writer.returncode == -signal.SIGKILL, err
    done = [int(x) for x in out.split()]
    last = done[-1] if done else 0  # the last statement that certainly committed
    kind, what = _committed_state(tmp_path)
    assert kind == "rows", f"not recovered: {what}"  # the undo log repairs a cut-off statement
    low, high, count = what
    assert count == ROWS
    assert low == high and low in (last, last + 1), f"a mixture of states: v in {low}..{high}"


SELF_KILLER = textwrap.dedent("""
    import os, signal, sys
    import minidb
    from minidb.storage.disk import PagedFile
    db = minidb.connect(data_dir=sys.argv[1], buffer_pages=16)
    db.sql("UPDATE t SET v = 1")
    print(1, flush=True)
    real_write, written = PagedFile.write_pages, []

    def write_then_die(self, first, pages):
        real_write(self, first, pages)
        written.append(len(pages))
        if sum(written) >= 100:  # half way through the next statement's page writes
            os.kill(os.getpid(), signal.SIGKILL)

    PagedFile.write_pages = write_then_die
    db.sql("UPDATE t SET v = 2")
    print("not reached", flush=True)
""")


def test_kill_9_half_way_through_a_statement_is_undone_on_reopen(tmp_path):
    """The same crash at a known point: 100 pages of the second UPDATE are on disk, the rest
    and its commit are not; reopening undoes those 100 pages (``minidb.txn.undo``)."""
    table = pa.table({"id": pa.array(np.arange(ROWS), pa.int32()),
                      "v": pa.array(np.zeros(ROWS, dtype=np.int64)),
                      "pad": pa.array(["x" * 180] * ROWS)})
    with minidb.connect(data_dir=tmp_path) as db:
        db.create_table("t", table)
        assert db.table("t").num_pages > 200
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    writer = subprocess.run([sys.executable, "-c", SELF_KILLER, str(tmp_path)], env=env,
                            capture_output=True, text=True, timeout=120)
    assert writer.returncode == -signal.SIGKILL and writer.stdout.split() == ["1"], writer.stderr
    kind, what = _committed_state(tmp_path)
    assert (kind, what) == ("rows", (1, 1, ROWS))
