"""minidb/results/store.py: runs and rows in one DuckDB file, compared with the papers' cells."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import filelock
import numpy as np
import platformdirs
import pytest
from results_env import isolate, write_reference_csv

from minidb.errors import MinidbError
from minidb.results import (
    MissingReferenceError,
    ReferenceDataError,
    ResultsDataError,
    ResultsStore,
    RunStateError,
    StoreBusyError,
    StoreCorruptError,
    StoreLocationError,
    default_store_path,
    git_revision,
)


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


def row(name: str = "select_1pct", column: str = "gamma_10000", value: float = 1.0,
        reference: str = "Table 1", clock: str = "modeled", **extra) -> dict:
    return {"paper": "gamma", "experiment": "gamma.selection", "reference": reference,
            "row": name, "column": column, "parameters": {"rows": 10_000},
            "metric": "response_time", "value": value, "unit": "s", "clock": clock, **extra}


def visible_rows(store: ResultsStore) -> int:
    return store.sql("SELECT count(*) AS n FROM complete_rows").column("n")[0].as_py()


def all_rows(store: ResultsStore) -> int:
    return store.sql("SELECT count(*) AS n FROM rows").column("n")[0].as_py()


# ---------------------------------------------------------------------- where the store lives


def test_default_store_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert default_store_path() == tmp_path / "default-results.duckdb"
    monkeypatch.delenv("MINIDB_RESULTS")
    assert default_store_path() == Path(platformdirs.user_cache_dir("minidb")) / "results.duckdb"


def test_store_creates_its_directory(store_path: Path) -> None:
    store = ResultsStore(store_path)
    assert store_path.exists() and store.runs() == []
    assert ResultsStore().path.name == "default-results.duckdb"  # $MINIDB_RESULTS


def test_store_under_a_file_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a directory")
    with pytest.raises(StoreLocationError, match=r"cannot create directory .*afile"):
        ResultsStore(tmp_path / "afile" / "results.duckdb")
    with pytest.raises(StoreLocationError, match="is a directory"):
        ResultsStore(tmp_path)


def test_corrupt_file_is_named(store_path: Path) -> None:
    store_path.parent.mkdir(parents=True)
    store_path.write_bytes(b"these are not the pages of a DuckDB database\n" * 200)
    with pytest.raises(StoreCorruptError) as caught:
        ResultsStore(store_path)
    message = str(caught.value)
    assert str(store_path) in message and "move it away or delete it" in message
    assert isinstance(caught.value, MinidbError)


def test_foreign_duckdb_file_is_refused(store_path: Path) -> None:
    store_path.parent.mkdir(parents=True)
    con = duckdb.connect(str(store_path))
    con.execute("CREATE TABLE runs (x INTEGER)")
    con.close()
    with pytest.raises(StoreCorruptError, match="not a minidb results store"):
        ResultsStore(store_path)


def test_busy_store_times_out_with_a_clear_error(store_path: Path) -> None:
    store = ResultsStore(store_path, timeout=0.2)
    with filelock.FileLock(str(store_path) + ".lock"):  # another holder of the store's lock
        with pytest.raises(StoreBusyError, match=re.escape(f"results store {store_path} is busy")):
            store.runs()
    assert store.runs() == []


# ---------------------------------------------------------------------- runs and rows


def test_round_trip(store_path: Path) -> None:
    store = ResultsStore(store_path)
    run_id = store.begin_run("gamma.selection", "gamma", {"rows": np.int64(10_000)},
                             backend="inline", profile="gamma", scale=0.1, nodes=[1, 2, 4])
    (started,) = store.runs()
    assert started["status"] == "running" and started["duration_s"] is None
    assert store.finish_run(run_id, [row(value=1.5), row("select_10pct", value=np.float64(9))]) == 2
    (run,) = store.runs()
    assert run["run_id"] == run_id and run["status"] == "ok" and run["error"] is None
    assert run["parameters"] == {"rows": 10_000} and run["nodes"] == [1, 2, 4]
    assert (run["backend"], run["profile"], run["scale"]) == ("inline", "gamma", 0.1)
    assert run["duration_s"] >= 0 and run["hostname"] and run["minidb_version"]
    assert run["git_revision"] is None or re.fullmatch(r"[0-9a-f]{40}", run["git_revision"])
    assert store.run(run_id) == run
    assert store.rows() == [{"run_id": run_id, **row(value=1.5)},
                            {"run_id": run_id, **row("select_10pct", value=9.0)}]
    assert store.rows(run_id=run_id) == store.rows(paper="gamma", experiment="gamma.selection")
    assert ResultsStore(store_path).rows() == store.rows()  # it is all in the file


def test_paper_and_experiment_may_be_left_to_the_run(store_path: Path) -> None:
    store = ResultsStore(store_path)
    run_id = store.begin_run("gamma.selection", "gamma", nodes=8)
    bare = {k: v for k, v in row().items() if k not in ("paper", "experiment", "parameters")}
    store.finish_run(run_id, [bare])
    (stored,) = store.rows()
    assert (stored["paper"], stored["experiment"], stored["parameters"]) == \
        ("gamma", "gamma.selection", {})
    assert store.run(run_id)["nodes"] == [8]


def test_failed_run_keeps_no_rows(store_path: Path) -> None:
    store = ResultsStore(store_path)
    run_id = store.begin_run("gamma.selection", "gamma")
    store.fail_run(run_id, "node 2 died\n  in phase build")
    (run,) = store.runs(status="failed")
    assert run["error"] == "node 2 died in phase build"
    assert store.rows() == [] and store.rows(run_id=run_id) == [] and all_rows(store) == 0
    with pytest.raises(RunStateError, match="already failed"):
        store.finish_run(run_id, [row()])


def test_complete_rows_hide_running_and_failed_runs(store_path: Path) -> None:
    store = ResultsStore(store_path)
    ok = store.begin_run("gamma.selection", "gamma")
    store.finish_run(ok, [row()])
    running = store.begin_run("gamma.join", "gamma")  # never finished
    failed = store.begin_run("gamma.aggregate", "gamma")
    store.fail_run(failed, "boom")
    assert [r["status"] for r in store.runs()] == ["ok", "running", "failed"]
    assert [r["run_id"] for r in store.runs(status="running")] == [running]
    assert visible_rows(store) == 1
    assert {r["run_id"] for r in store.rows(latest=False)} == {ok}
    assert store.rows(experiment="gamma.join") == store.rows(run_id=running) == []


def test_finished_run_cannot_fail_or_finish_again(store_path: Path) -> None:
    store = ResultsStore(store_path)
    run_id = store.begin_run("gamma.selection", "gamma")
    store.finish_run(run_id, [row()])
    with pytest.raises(RunStateError, match="already finished ok"):
        store.fail_run(run_id, "late")
    with pytest.raises(RunStateError, match="already ok"):
        store.finish_run(run_id, [row()])
    with pytest.raises(RunStateError, match="no run 'nope'"):
        store.finish_run("nope", [])
    with pytest.raises(RunStateError, match="no run 'nope'"):
        store.rows(run_id="nope")
    assert visible_rows(store) == 1


@pytest.mark.parametrize(("bad", "message"), [
    (row(colour="red"), "unknown keys 'colour'"),
    ({k: v for k, v in row().items() if k != "value"}, "lacks value"),
    (row(clock="cpu"), "clock 'cpu' is not one of modeled, wall"),
    (row(paper="tandem"), "says paper 'tandem', but the run is 'gamma'"),
    (row(value="1.5"), "value must be a number, not str"),
    (row(name=""), "row is empty"),
    (row(parameters={"f": open}), "not JSON-serializable"),
])
def test_rows_outside_the_data_model_are_refused(store_path: Path, bad: dict,
                                                 message: str) -> None:
    store = ResultsStore(store_path)
    run_id = store.begin_run("gamma.selection", "gamma")
    with pytest.raises(ResultsDataError, match=re.escape(message)):
        store.finish_run(run_id, [row(), bad])
    assert store.run(run_id)["status"] == "running" and all_rows(store) == 0


def test_record_run_stores_rows(store_path: Path) -> None:
    store = ResultsStore(store_path)
    with store.record_run("gamma.selection", "gamma", {"rows": 10}, profile="gamma") as run:
        run.add(row())
        run.extend([row("select_10pct")])
    assert store.run(run.run_id)["status"] == "ok"
    assert [r["row"] for r in store.rows(run_id=run.run_id)] == ["select_1pct", "select_10pct"]


def test_record_run_marks_the_run_failed_and_reraises(store_path: Path) -> None:
    store = ResultsStore(store_path)
    with pytest.raises(ValueError, match="boom"):
        with store.record_run("gamma.selection", "gamma") as run:
            run.add(row())
            raise ValueError("boom\nwith a second line")
    failed = store.run(run.run_id)
    assert failed["status"] == "failed" and failed["error"] == "ValueError: boom with a second line"
    assert visible_rows(store) == 0 and all_rows(store) == 0


def test_record_run_fails_on_a_bad_row(store_path: Path) -> None:
    store = ResultsStore(store_path)
    with pytest.raises(ResultsDataError):
        with store.record_run("gamma.selection", "gamma") as run:
            run.add(row(clock="sundial"))
    assert "clock 'sundial'" in store.run(run.run_id)["error"]


def test_latest_is_the_last_begun_ok_run_per_experiment(store_path: Path) -> None:
    store = ResultsStore(store_path)
    first = store.begin_run("gamma.selection", "gamma", {"scale": 1})
    second = store.begin_run("gamma.selection", "gamma", {"scale": 0.1})
    other = store.begin_run("gamma.join", "gamma")
    store.finish_run(second, [row(value=2.0)])
    store.finish_run(first, [row(value=1.0)])  # finished last, but began first
    store.finish_run(other, [row("joinABprime", experiment="gamma.join", value=7.0)])
    later = store.begin_run("gamma.selection", "gamma")
    store.fail_run(later, "crashed")  # a failed run never becomes latest
    store.begin_run("gamma.selection", "gamma")  # nor does one still running
    assert [(r["run_id"], r["value"]) for r in store.rows()] == [(second, 2.0), (other, 7.0)]
    assert [r["value"] for r in store.rows(experiment="gamma.selection", latest=False)] == \
        [1.0, 2.0]
    latest = store.sql("SELECT run_id FROM latest_runs ORDER BY seq").column("run_id").to_pylist()
    assert latest == [second, other]


def test_sql_reads_but_does_not_write(store_path: Path) -> None:
    store = ResultsStore(store_path)
    store.finish_run(store.begin_run("gamma.selection", "gamma"), [row()])
    table = store.sql("SELECT parameters->>'rows' AS rows FROM rows WHERE clock = ?", ["modeled"])
    assert table.column("rows").to_pylist() == ["10000"]
    with pytest.raises(duckdb.Error):
        store.sql("DELETE FROM runs")
    assert len(store.runs()) == 1


def test_git_revision_without_git(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    assert git_revision.__wrapped__() is None


# ---------------------------------------------------------------------- reference and compare

REFERENCE = (
    "gamma,Table 1,select_1pct,gamma_10000,response_time,2.0,s,ok,p. 5,",
    "gamma,Table 1,select_10pct,gamma_10000,response_time,10.0,s,ok,p. 5,",
    "gamma,Table 1,select_1pct,gamma_100000,response_time,,s,unreadable,p. 5,smudged",
    "gamma,Figure 2,speedup,nodes_8,speedup,,,shape,p. 7,",
)


def test_compare_joins_latest_rows_with_the_papers(store_path: Path, write_csv) -> None:
    write_csv("gamma.csv", *REFERENCE)
    write_csv("tandem.csv", "tandem,Figure 3,debitcredit,cpus_8,throughput,52,tps,ok,p. 3,")
    store = ResultsStore(store_path)
    old = store.begin_run("gamma.selection", "gamma")
    store.finish_run(old, [row(value=100.0)])
    with store.record_run("gamma.selection", "gamma") as run:
        run.extend([
            row(value=3.0),                                     # ratio 1.5
            row(value=3.0, clock="wall"),                       # the same cell, other clock
            row("select_10pct", value=25.0),                    # ratio 2.5
            row(column="gamma_100000", value=4.0),              # published value unreadable
            row("select_2pct", reference="", value=5.0),        # reproduces no published cell
            row("select_1pct", reference="Table 9", value=6.0), # names a cell the paper lacks
        ])
    cells = store.compare("gamma")
    key = [(c["reference"], c["row"], c["column"], c["clock"]) for c in cells]
    assert key == [
        ("Figure 2", "speedup", "nodes_8", None),
        ("Table 1", "select_10pct", "gamma_10000", "modeled"),
        ("Table 1", "select_1pct", "gamma_10000", "modeled"),
        ("Table 1", "select_1pct", "gamma_10000", "wall"),
        ("Table 1", "select_1pct", "gamma_100000", "modeled"),
    ]
    missing, ten, one, one_wall, unreadable = cells
    assert (missing["reproduced"], missing["published"], missing["ratio"], missing["within_2x"],
            missing["status"]) == (None, None, None, None, "shape")
    assert (ten["reproduced"], ten["published"], ten["ratio"], ten["within_2x"]) == \
        (25.0, 10.0, 2.5, False)
    assert (one["reproduced"], one["ratio"], one["within_2x"], one["run_id"]) == \
        (3.0, 1.5, True, run.run_id)
    assert one["published_unit"] == one["reproduced_unit"] == "s"
    assert one["parameters"] == {"rows": 10_000} and one["experiment"] == "gamma.selection"
    assert one_wall["within_2x"] is True
    assert (unreadable["reproduced"], unreadable["published"], unreadable["ratio"]) == \
        (4.0, None, None)
    assert len(store.compare()) == len(cells) + 1  # tandem's cell, not reproduced
    extra = [c for c in store.compare("gamma", unmatched=True) if c["status"] is None]
    assert [(c["reference"], c["reproduced"]) for c in extra] == [("Table 9", 6.0)]


def test_reference_is_loaded_into_the_store(store_path: Path, write_csv) -> None:
    write_csv("gamma.csv", *REFERENCE)
    store = ResultsStore(store_path)
    cells = store.reference()
    assert [(c["file"], c["line"]) for c in cells] == [("gamma.csv", n) for n in range(2, 6)]
    assert store.reference("tandem") == []
    assert store.load_reference_tables() == 4
    count = store.sql("SELECT count(*) AS n FROM reference").column("n")[0].as_py()
    assert count == 4


def test_reference_reloads_when_a_csv_changes(store_path: Path, write_csv,
                                              reference_dir: Path) -> None:
    path = write_csv("gamma.csv", REFERENCE[0])
    store = ResultsStore(store_path)
    assert [c["value"] for c in store.reference()] == [2.0]
    write_csv("gamma.csv", REFERENCE[0].replace("2.0", "2.5"), REFERENCE[1])
    assert [c["value"] for c in store.reference()] == [2.5, 10.0]
    write_csv("volcano.csv", "volcano,Table 2,sort,procs_4,time,61,s,ok,p. 8,")
    assert len(ResultsStore(store_path).sql("SELECT * FROM reference")) == 3  # at creation too
    path.write_text(path.read_text() + "gamma,Table 1,x,y,z,?,s,ok,,\n")
    with pytest.raises(ReferenceDataError, match=r"gamma\.csv, line 4: value '\?'"):
        store.compare()
    path.unlink()
    (reference_dir / "volcano.csv").unlink()
    reference_dir.rmdir()  # the directory vanishes: the store keeps the cells it has
    assert len(store.reference()) == 3
    with pytest.raises(MissingReferenceError):
        store.load_reference_tables()


def test_store_works_without_a_reference_dir(store_path: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIDB_REFERENCE_DIR", str(tmp_path / "missing"))
    store = ResultsStore(store_path)
    with store.record_run("gamma.selection", "gamma") as run:
        run.add(row())
    assert store.reference() == [] and store.compare() == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_a_directory_that_takes_no_files_fails_at_once_not_as_busy():
    """As root, access() says /proc is writable; the store must still refuse it in one line
    instead of waiting out the lock timeout and calling the store busy."""
    with pytest.raises(StoreLocationError, match="cannot create files next to"):
        ResultsStore("/proc/minidb-results.duckdb", timeout=5)
