"""Issue 18, item 11: the results store tells damage from a busy file, has one lock however it is
reached, and does not leave a killed run "running" forever.

Scenarios: bytes flipped in a store file (block by block) and a truncated file are reported as a
damaged store, never as "busy"; a real second program holding the file is still "busy"; a store
reached through a symlink and by its real path waits on one lock; a process that began a run
and is killed with ``kill -9`` leaves a run listed as ``interrupted``; a version-1 file (before
processes were recorded) is upgraded and keeps its runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
from results_env import isolate

from minidb.results import ResultsStore, StoreBusyError, StoreCorruptError, StoreLocationError
from minidb.results.store import _VIEWS, process_gone, process_start

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def reference_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "results.duckdb"


def _rows(run: int, count: int) -> list[dict]:
    return [{"reference": "Table 1", "row": f"row_{i}", "column": f"run_{run}",
             "parameters": {"i": i}, "metric": "response_time", "value": float(i * run),
             "unit": "s", "clock": "wall"} for i in range(count)]


def _filled_store(path: Path) -> ResultsStore:
    store = ResultsStore(path)
    for run in range(3):
        with store.record_run("gamma.selection", "gamma", {"run": run}) as record:
            record.extend(_rows(run, 1500))
    return store


def _read_everything(path: Path) -> None:
    store = ResultsStore(path, timeout=2)
    store.runs()
    store.rows(latest=False)
    store.compare(unmatched=True)
    store.begin_run("gamma.after", "gamma")


def _python(script: str, *args: str) -> subprocess.Popen:
    """Start ``python -c script args`` on this checkout, reading its stdout line by line."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_line(process: subprocess.Popen, expected: str) -> str:
    line = process.stdout.readline()
    assert line.startswith(expected), line + process.stderr.read()
    return line


# -- damage is not "busy" --------------------------------------------------------------------
def _data_offsets(path: Path) -> list[int]:
    """File offsets of data the store's tables keep on disk. DuckDB's layout: three 4 KiB
    headers, then blocks of ``block_size`` bytes, each an 8-byte checksum and its payload."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        (block_size,) = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()
        segments = set()
        for table in ("meta", "runs", "rows"):
            segments |= set(con.execute(f"SELECT block_id, block_offset FROM "
                                        f"pragma_storage_info('{table}') WHERE block_id >= 0")
                            .fetchall())
    finally:
        con.close()
    return sorted(3 * 4096 + block * block_size + 8 + offset for block, offset in segments)


def _flipped_copy(source: Path, directory: Path, offset: int, length: int) -> Path:
    copy = directory / f"flip-{offset}" / "results.duckdb"
    copy.parent.mkdir()
    shutil.copy(source, copy)
    with open(copy, "r+b") as file:
        file.seek(offset)
        data = file.read(length)
        file.seek(offset)
        file.write(bytes(b ^ 0xFF for b in data))
    return copy


def _assert_damaged(err: StoreCorruptError, path: Path) -> None:
    message = str(err)
    assert "\n" not in message and "busy" not in message
    assert f"damaged results store at {path}" in message or \
        "not a readable minidb results database" in message


def test_flipped_blocks_are_reported_as_damage_never_as_busy(store_path: Path, tmp_path: Path):
    _filled_store(store_path)
    data = _data_offsets(store_path)
    assert len(data) >= 20
    for offset in data[:: max(1, len(data) // 40)]:  # about 40 flips, all in data in use
        copy = _flipped_copy(store_path, tmp_path, offset, 64)
        with pytest.raises(StoreCorruptError) as caught:  # not StoreBusyError, not duckdb's own
            _read_everything(copy)
        _assert_damaged(caught.value, copy)
    for offset in (0, 4096, 8192, 12288):  # the headers, and the first block's checksum
        copy = _flipped_copy(store_path, tmp_path, offset, 4096)
        try:
            _read_everything(copy)  # DuckDB keeps two database headers: one may be enough
        except StoreCorruptError as err:
            _assert_damaged(err, copy)


def test_a_truncated_store_is_reported_as_damaged(store_path: Path, tmp_path: Path):
    _filled_store(store_path)
    size = store_path.stat().st_size
    for eighth in range(1, 8):
        copy = tmp_path / f"cut-{eighth}" / "results.duckdb"
        copy.parent.mkdir()
        shutil.copy(store_path, copy)
        os.truncate(copy, size * eighth // 8)
        with pytest.raises(StoreCorruptError, match="damaged results store|not a readable"):
            _read_everything(copy)


def test_another_program_holding_the_file_is_busy(store_path: Path):
    _filled_store(store_path)
    holder = _python("""
        import sys, time, duckdb
        con = duckdb.connect(sys.argv[1])
        print("OPEN", flush=True)
        time.sleep(60)
    """, str(store_path))
    try:
        _wait_for_line(holder, "OPEN")
        with pytest.raises(StoreBusyError, match="another program has it open"):
            ResultsStore(store_path, timeout=2).runs()
    finally:
        holder.kill()
        holder.wait()


# -- one lock through a symlink --------------------------------------------------------------
HOLD_STORE = """
    import sys, time
    from minidb.results import ResultsStore
    store = ResultsStore(sys.argv[1])
    with store._connect():  # inside one store call: the lock and the file are held
        print("HOLDING", flush=True)
        time.sleep(float(sys.argv[2]))
    print("RELEASED", flush=True)
"""


def test_a_symlink_and_the_real_path_share_one_lock(store_path: Path, tmp_path: Path):
    ResultsStore(store_path).begin_run("gamma.selection", "gamma")
    link = tmp_path / "link.duckdb"
    link.symlink_to(store_path)
    assert ResultsStore(link).path == ResultsStore(store_path).path == store_path.resolve()

    holder = _python(HOLD_STORE, str(store_path), "2")
    try:
        _wait_for_line(holder, "HOLDING")
        start = time.monotonic()
        runs = ResultsStore(link, timeout=60).runs()  # waits for the lock, then reads
        waited = time.monotonic() - start
        assert holder.wait(30) == 0
    finally:
        holder.kill()
        holder.wait()
    assert [r["status"] for r in runs] == ["running"] and waited > 0.5

    holder = _python(HOLD_STORE, str(link), "30")  # and the other way round
    try:
        _wait_for_line(holder, "HOLDING")
        with pytest.raises(StoreBusyError, match="held it for more than 0.5 s"):
            ResultsStore(store_path, timeout=0.5)
    finally:
        holder.kill()
        holder.wait()


# -- a killed run ----------------------------------------------------------------------------
BEGIN_AND_WAIT = """
    import sys, time
    from minidb.results import ResultsStore
    run_id = ResultsStore(sys.argv[1]).begin_run("gamma.selection", "gamma", {"doomed": True})
    print("RUN", run_id, flush=True)
    time.sleep(120)
"""


def test_a_run_killed_with_sigkill_is_listed_as_interrupted(store_path: Path):
    store = ResultsStore(store_path)
    worker = _python(BEGIN_AND_WAIT, str(store_path))
    try:
        run_id = _wait_for_line(worker, "RUN").split()[1]
        assert store.run(run_id)["status"] == "running"  # alive: left alone
        assert store.run(run_id)["pid"] == worker.pid
        os.kill(worker.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while store.run(run_id)["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.05)  # not reaped yet: a zombie counts as gone
        (run,) = store.runs()
    finally:
        worker.kill()
        worker.wait()
    assert run["run_id"] == run_id and run["status"] == "interrupted"
    assert f"process {worker.pid}" in run["error"] and run["duration_s"] is not None
    assert store.rows(latest=False) == []
    with store.record_run("gamma.selection", "gamma") as record:  # the store goes on
        record.extend(_rows(1, 3))
    assert [r["status"] for r in ResultsStore(store_path).runs()] == ["interrupted", "ok"]


def test_a_run_of_a_process_this_machine_cannot_see_stays_running(store_path: Path):
    store = ResultsStore(store_path)
    run_id = store.begin_run("gamma.selection", "gamma")
    con = duckdb.connect(str(store_path))  # as if another machine had begun it
    con.execute("UPDATE runs SET pid = 999999999, pid_space = 'elsewhere' WHERE run_id = ?",
                [run_id])
    con.close()
    assert store.run(run_id)["status"] == "running"


def test_process_gone_tells_a_reused_pid():
    me = os.getpid()
    assert not process_gone(me, process_start(me))
    if process_start(me) is not None:  # Linux: a pid with another start time is another process
        assert process_gone(me, "0")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_gone(child.pid, None)


# -- an old store ----------------------------------------------------------------------------
def test_a_version_1_store_is_upgraded_and_keeps_its_runs(store_path: Path):
    store = _filled_store(store_path)
    running = store.begin_run("gamma.old", "gamma")
    con = duckdb.connect(str(store_path))  # turn the file back into the version-1 layout
    con.execute("DROP VIEW latest_rows")
    con.execute("DROP VIEW latest_runs")
    con.execute("DROP VIEW complete_rows")
    con.execute("ALTER TABLE runs RENAME TO runs_new")
    con.execute("""CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, seq BIGINT NOT NULL,
        experiment VARCHAR NOT NULL, paper VARCHAR NOT NULL, status VARCHAR NOT NULL
        CHECK (status IN ('running', 'ok', 'failed')), error VARCHAR, parameters VARCHAR NOT NULL,
        minidb_version VARCHAR, git_revision VARCHAR, backend VARCHAR, profile VARCHAR,
        scale DOUBLE, nodes INTEGER[], started_at TIMESTAMP NOT NULL, duration_s DOUBLE,
        hostname VARCHAR)""")
    con.execute("INSERT INTO runs SELECT * EXCLUDE (pid, process_start, pid_space) FROM runs_new")
    con.execute("DROP TABLE runs_new")
    for view in _VIEWS:  # the same in both versions
        con.execute(view)
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.close()

    upgraded = ResultsStore(store_path)
    runs = upgraded.runs()
    assert [r["status"] for r in runs] == ["ok", "ok", "ok", "running"]  # no pid: left alone
    assert runs[-1]["run_id"] == running and runs[-1]["pid"] is None
    assert len(upgraded.rows()) == 1500 and len(upgraded.rows(latest=False)) == 4500
    assert upgraded.sql("SELECT value FROM meta WHERE key = 'schema_version'") \
        .column(0).to_pylist() == ["2"]


# -- a file name that is not UTF-8 -----------------------------------------------------------
def test_a_store_name_that_is_not_utf8_is_one_line(tmp_path: Path):
    odd = os.fsdecode(os.fsencode(tmp_path) + b"/odd\xffname.duckdb")
    with pytest.raises(StoreLocationError, match="valid UTF-8"):
        ResultsStore(odd)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "minidb.cli", "report", "--store",
                           os.fsencode(odd)], capture_output=True, timeout=120, env=env)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2 and "Traceback" not in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and "valid UTF-8" in stderr
