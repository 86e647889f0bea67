"""minidb/results/store.py with several processes: writers at once, and processes that die.

Scenarios, in real processes (multiprocessing, spawn): four writers and a reader share one
store file; threads of one process (the explorer's case) share one store object; a process dies between ``begin_run`` and ``finish_run``; a process dies inside
``finish_run`` after its rows went in but before the commit. In every case each finished run
shows its rows exactly once, nothing unfinished shows, and the file stays readable.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from pathlib import Path

import duckdb
import pytest
from results_env import isolate, write_reference_csv

import minidb.results.store as store_module
from minidb.results import ResultsStore

SPAWN = multiprocessing.get_context("spawn")
WRITERS = 4
RUNS_PER_WRITER = 3
ROWS_PER_RUN = 5


@pytest.fixture(autouse=True)
def reference_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty reference directory named by MINIDB_REFERENCE_DIR; tests add CSVs to it."""
    return isolate(tmp_path, monkeypatch)


@pytest.fixture
def write_csv(reference_dir: Path):
    """``write_csv(name, *lines)``: a reference CSV in the test's reference directory."""
    return lambda name, *lines, **kw: write_reference_csv(reference_dir, name, *lines, **kw)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Where a test's store lives (its directory does not exist yet)."""
    return tmp_path / "store" / "results.duckdb"


def result_rows(worker: int, run: int) -> list[dict]:
    return [{"reference": "Table 1", "row": f"writer_{worker}", "column": f"run_{run}_item_{item}",
             "parameters": {"worker": worker, "run": run, "item": item}, "metric": "items",
             "value": float(1000 * worker + 10 * run + item), "unit": "count", "clock": "wall"}
            for item in range(ROWS_PER_RUN)]


def _writer(path: str, reference: str, worker: int, start) -> None:
    os.environ["MINIDB_REFERENCE_DIR"] = reference
    store = ResultsStore(path)
    start.wait(60)  # every process is up: go together
    for run in range(RUNS_PER_WRITER):
        with store.record_run(f"gamma.writer_{worker}", "gamma", {"worker": worker, "run": run},
                              nodes=[1, 2]) as record:
            record.extend(result_rows(worker, run))


def _reader(path: str, reference: str, start, stop) -> None:
    os.environ["MINIDB_REFERENCE_DIR"] = reference
    store = ResultsStore(path)
    start.wait(60)
    while not stop.wait(0.02):
        for cell in store.compare("gamma"):
            assert cell["reproduced"] is None or cell["run_id"]
        store.runs(status="ok")


def _begin_then_die(path: str, reference: str) -> None:
    os.environ["MINIDB_REFERENCE_DIR"] = reference
    store = ResultsStore(path)
    store.begin_run("gamma.selection", "gamma", {"doomed": "before finish"})
    os._exit(3)


def _die_before_commit(path: str, reference: str) -> None:
    os.environ["MINIDB_REFERENCE_DIR"] = reference
    store = ResultsStore(path)
    run_id = store.begin_run("gamma.selection", "gamma", {"doomed": "inside finish"})

    @contextlib.contextmanager
    def never_commits(con):
        con.begin()
        yield
        os._exit(4)  # the rows are in and the status is flipped, but nothing is committed

    store_module._transaction = never_commits
    store.finish_run(run_id, result_rows(9, 0))


def _run(target, *args) -> int:
    process = SPAWN.Process(target=target, args=args)
    process.start()
    process.join(60)
    return process.exitcode


@pytest.fixture
def gamma_reference(write_csv, reference_dir: Path) -> str:
    last = RUNS_PER_WRITER - 1  # the latest run of writer 1 reproduces this cell
    write_csv("gamma.csv", f"gamma,Table 1,writer_1,run_{last}_item_2,items,{1002 + 10 * last},"
                           "count,ok,test,",
              "gamma,Table 1,select_1pct,gamma_10000,items,5,count,ok,test,")
    return str(reference_dir)


def test_concurrent_writers_each_run_and_row_exactly_once(store_path: Path,
                                                          gamma_reference: str) -> None:
    ResultsStore(store_path)
    start, stop = SPAWN.Barrier(WRITERS + 2), SPAWN.Event()
    writers = [SPAWN.Process(target=_writer, args=(str(store_path), gamma_reference, w, start))
               for w in range(WRITERS)]
    reader = SPAWN.Process(target=_reader, args=(str(store_path), gamma_reference, start, stop))
    for process in (*writers, reader):
        process.start()
    start.wait(60)
    for process in writers:
        process.join(60)
    stop.set()
    reader.join(60)
    assert [p.exitcode for p in writers] == [0] * WRITERS and reader.exitcode == 0

    store = ResultsStore(store_path)
    runs = store.runs()
    assert len(runs) == WRITERS * RUNS_PER_WRITER and {r["status"] for r in runs} == {"ok"}
    assert sorted((r["parameters"]["worker"], r["parameters"]["run"]) for r in runs) == \
        [(w, r) for w in range(WRITERS) for r in range(RUNS_PER_WRITER)]
    rows = store.rows(latest=False)
    expected = sorted(row["value"] for w in range(WRITERS) for r in range(RUNS_PER_WRITER)
                      for row in result_rows(w, r))
    assert sorted(row["value"] for row in rows) == expected  # none lost, none doubled
    for row in rows:
        assert row["parameters"]["worker"] == int(row["experiment"].rsplit("_", 1)[1])
    assert len(store.rows()) == WRITERS * ROWS_PER_RUN  # latest run of each writer
    (missing, cell) = store.compare("gamma")  # ordered by row: select_1pct, writer_1
    assert (cell["reproduced"], cell["ratio"], missing["reproduced"]) == \
        (1002.0 + 10 * (RUNS_PER_WRITER - 1), 1.0, None)

    con = duckdb.connect(str(store_path), read_only=True)  # a plain DuckDB can read the file
    try:
        assert con.execute("SELECT count(*) FROM rows").fetchone() == (len(expected),)
    finally:
        con.close()


def test_process_killed_between_begin_and_finish(store_path: Path, gamma_reference: str) -> None:
    store = ResultsStore(store_path)
    assert _run(_begin_then_die, str(store_path), gamma_reference) == 3
    (run,) = store.runs()  # its process is gone: listed as interrupted, not running forever
    assert run["status"] == "interrupted" and run["parameters"] == {"doomed": "before finish"}
    assert store.rows() == [] and store.rows(latest=False) == []
    assert all(c["reproduced"] is None for c in store.compare())
    with store.record_run("gamma.selection", "gamma") as record:  # the store is not stuck
        record.extend(result_rows(0, 0))
    assert len(store.rows()) == ROWS_PER_RUN


def test_process_killed_inside_finish_commits_nothing(store_path: Path,
                                                      gamma_reference: str) -> None:
    store = ResultsStore(store_path)
    assert _run(_die_before_commit, str(store_path), gamma_reference) == 4
    (run,) = store.runs()
    assert run["status"] == "interrupted"
    assert store.sql("SELECT count(*) AS n FROM rows").column("n")[0].as_py() == 0
    assert store.rows(latest=False) == []
    with store.record_run("gamma.selection", "gamma") as record:
        record.extend(result_rows(1, 0))
    assert [r["status"] for r in store.runs()] == ["interrupted", "ok"]
    assert len(store.rows()) == ROWS_PER_RUN


def test_threads_share_one_store_object(store_path: Path) -> None:
    store = ResultsStore(store_path)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for run in range(3):
                with store.record_run(f"gamma.thread_{worker}", "gamma") as record:
                    record.extend(result_rows(worker, run))
                store.compare()
        except BaseException as err:  # reported below, in the test's thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(store.runs(status="ok")) == 9 and len(store.rows(latest=False)) == 9 * ROWS_PER_RUN
