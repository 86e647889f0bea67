"""The explorer on stores an instructor may really have: a damaged or busy file, a directory
named as the store, runs that stored NaN or infinite values. Each page says what is wrong in one
line, never a traceback, and never shows a stored value as a missing row."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import explorer
import pytest
from app_test import open_app
from streamlit.testing.v1 import AppTest

from minidb.results import ResultsStore

RUN = "pages/2_Run.py"
COMPARE = "pages/3_Compare_runs.py"


def _open(page: str | None) -> AppTest:
    """Like ``open_app``, but hands back the page even when it raised, for the assertion."""
    from app_test import APP

    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=30).run()
    if page is not None:
        at.switch_page(page).run()
    return at


@pytest.mark.parametrize("content", [b"not a database\n", b"DUCK" * 5000],
                         ids=["text", "garbage"])
def test_run_page_says_a_bad_store_in_one_line(tmp_path, monkeypatch, content):
    broken = tmp_path / "results.duckdb"
    broken.write_bytes(content)
    monkeypatch.setenv("MINIDB_RESULTS", str(broken))
    at = _open(RUN)
    assert not at.exception, at.exception
    assert "results store" in at.error[0].value
    assert at.dataframe  # the parameters table is still there to read


def test_a_directory_named_as_the_store_is_said_to_be_one(tmp_path, monkeypatch):
    folder = tmp_path / "results.duckdb"
    folder.mkdir()
    monkeypatch.setenv("MINIDB_RESULTS", str(folder))
    for page in (None, "pages/4_Findings.py", RUN):
        at = _open(page)
        assert not at.exception, at.exception
        assert "is a directory" in at.error[0].value, page
        assert not any("No results store" in i.value for i in at.info)


def _run(store: ResultsStore, label: str, values: list[float]) -> str:
    run_id = store.begin_run("gamma.selection_speedup", "gamma", {"scale": 0.05, "run": label},
                             scale=0.05, nodes=[1, 2])
    store.finish_run(run_id, [
        {"reference": "", "row": "select_1pct_nonindexed", "column": f"nodes_{n}",
         "metric": "response_time", "value": v, "unit": "s", "clock": "modeled"}
        for n, v in zip((1, 2, 4, 8), values, strict=True)])
    return run_id


def test_compare_runs_counts_a_stored_nan_as_a_row_of_both_runs(tmp_path, monkeypatch):
    path = tmp_path / "results.duckdb"
    store = ResultsStore(path)
    _run(store, "first", [2.0, 1.0, 0.5, math.nan])
    _run(store, "second", [2.0, math.nan, math.inf, math.nan])
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    at = open_app(COMPARE)
    summary = next(m.value for m in at.markdown if "rows in both runs" in m.value)
    # every row is in both runs; nodes_2 (a number became NaN) and nodes_4 (became inf) changed
    assert summary.startswith("4 rows in both runs, 0 only in A, 0 only in B")
    assert "**2 highlighted**" in summary
    rows = at.dataframe[1].value
    assert set(rows["in"]) == {"both"}
    # a stored NaN reads NaN in the table; "-" is kept for the run that lacks the row
    shown = explorer.style_comparison(rows, 0.1).to_html()
    line = rows.index[rows["column"] == "nodes_2"][0]
    assert re.search(rf'row{line}_col{rows.columns.get_loc("B")}"[^>]*>NaN<', shown)
    one_sided = rows.iloc[:1].assign(B=math.nan, **{"in": "A only"})
    assert re.search(rf'row0_col{rows.columns.get_loc("B")}"[^>]*>-<',
                     explorer.style_comparison(one_sided, 0.1).to_html())


def test_published_page_shows_a_stored_nan_as_reproduced_and_off(tmp_path, monkeypatch):
    path = tmp_path / "results.duckdb"
    store = ResultsStore(path)
    run_id = store.begin_run("gamma.selection_speedup", "gamma", {"nodes": [1, 8]}, scale=1.0,
                             nodes=[1, 8], profile="gamma")
    store.finish_run(run_id, [
        {"reference": "Figure 5", "row": "select_0pct_nonclustered_index", "column": column,
         "metric": "response_time", "value": value, "unit": "s", "clock": "modeled"}
        for column, value in (("nodes_1", 0.2), ("nodes_8", math.nan))])
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    at = open_app("pages/1_Published_vs_reproduced.py")
    at.selectbox(key="pvr_reference_gamma.selection_speedup").select("Figure 5").run()
    assert not at.exception, at.exception
    # the paper prints two cells for Figure 5 and the run stored both: one is NaN, not missing
    said = next(m.value for m in at.markdown if "within a factor of 2" in m.value)
    assert said.startswith("**1 of 2** reproduced cells") and "; 0 published cells not" in said
    cells = at.dataframe[0].value
    nan_cell = cells.index[cells["column"] == "nodes_8"][0]
    assert cells["within 2x"].tolist() == [True, False] and nan_cell == 1
    shown = explorer.style_cells(cells)
    html = shown.to_html()
    column = cells.columns.get_loc("reproduced")
    assert re.search(rf'row{nan_cell}_col{column}"[^>]*>NaN<', html)
    assert ("background-color", "#f8d7da") in shown._compute().ctx[(nan_cell, 0)]
    # the curve leaves the NaN point out, and says so
    assert any("1 NaN or infinite value(s) of the run not drawn" in c.value for c in at.caption)
    # the run's own table keeps the NaN's column (a pivot dropped it), shown as NaN, not "-"
    table = at.dataframe[-1].value
    assert list(table.columns) == ["nodes_1", "nodes_8"]
    assert "NaN" in explorer.style_pivot(explorer.pivot_frame(
        store.rows(run_id=run_id), "response_time")).to_html()


def test_a_run_that_stored_no_rows_is_said_so(tmp_path, monkeypatch):
    path = tmp_path / "results.duckdb"
    store = ResultsStore(path)
    for name, paper in (("gamma.selection_speedup", "gamma"), ("volcano.initial", "volcano")):
        store.finish_run(store.begin_run(name, paper, {"scale": 0.05}, scale=0.05), [])
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    at = open_app("pages/1_Published_vs_reproduced.py")
    at.selectbox(key="pvr_paper").select("gamma").run()
    assert not at.exception, at.exception
    assert "stored no rows" in at.warning[0].value  # not "no stored run yet": there is one
    at.switch_page("pages/7_Volcano_tuning.py").run()
    assert not at.exception, at.exception
    assert any("hold no rows" in i.value for i in at.info)
    assert at.button(key="volcano_small")  # and a way to get some


@pytest.fixture
def lock_after_open(monkeypatch):
    """Arms a lock taker: the next time a page has opened the store, another process takes
    DuckDB's write lock on the file (as ``minidb reproduce`` or a notebook would) and keeps it
    until the test ends, so the page's later reads meet a busy store."""
    holders: list[subprocess.Popen] = []
    armed = []
    opened = explorer.open_store

    def open_then_lock(path, create=False):
        store = opened(path, create=create)
        if armed and store is not None:
            armed.clear()
            holder = subprocess.Popen(
                [sys.executable, "-c", "import duckdb, sys, time\n"
                 "con = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(120)",
                 str(store.path)], stdout=subprocess.PIPE, text=True)
            holders.append(holder)
            assert holder.stdout.readline().strip() == "held"
        return store

    monkeypatch.setattr(explorer, "open_store", open_then_lock)
    yield lambda: armed.append(True)
    for holder in holders:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("page", [None, "pages/1_Published_vs_reproduced.py", RUN, COMPARE,
                                  "pages/4_Findings.py", "pages/7_Volcano_tuning.py"])
def test_a_store_locked_while_a_page_is_open_is_one_line(store_path, lock_after_open, page):
    at = open_app(page)
    lock_after_open()
    at.run()  # the page opens the store, then another program takes it before the page reads
    assert not at.exception, at.exception
    assert [e.value for e in at.error if "is busy" in e.value], page
    assert len(at.error) == 1, [e.value for e in at.error]


def test_findings_page_fails_a_nan_by_name(tmp_path, monkeypatch):
    """A NaN compares false with every bar, so a check on it would pass or fail by accident: the
    finding that reads it fails and says which cell held the NaN, on the page as in
    ``minidb report`` (both use ``check_findings``)."""
    path = tmp_path / "results.duckdb"
    store = ResultsStore(path)
    run_id = store.begin_run("gamma.selection_speedup", "gamma", {"nodes": [1, 8]}, scale=1.0,
                             nodes=[1, 8])
    store.finish_run(run_id, [
        {"reference": "", "row": f"select_{q}_nonindexed", "column": f"nodes_{n}",
         "metric": "speedup", "value": math.nan if (q, n) == ("1pct", 8) else float(n),
         "unit": "x", "clock": "modeled"}
        for q in ("0pct", "1pct", "10pct") for n in (1, 8)])
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    at = open_app("pages/4_Findings.py")
    at.selectbox(key="findings_paper").select("gamma").run()
    assert not at.exception, at.exception
    marks = [m.value for m in at.markdown if "gamma.nonindexed_speedup_near_linear" in m.value]
    assert len(marks) == 1 and "FAIL" in marks[0], marks
    said = [c.value for c in at.caption if "NaN" in c.value]
    assert any("select_1pct_nonindexed at nodes_8" in c for c in said), said


def test_compare_chart_leaves_out_nan_and_infinite_points(tmp_path, monkeypatch):
    path = tmp_path / "results.duckdb"
    store = ResultsStore(path)
    _run(store, "first", [2.0, 1.0, 0.5, 0.25])
    _run(store, "second", [2.0, math.nan, math.inf, 0.3])
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    at = open_app(COMPARE)
    assert any("2 NaN or infinite value(s) not drawn" in c.value for c in at.caption)
    rows_a, rows_b = (store.rows(run_id=r["run_id"]) for r in store.runs()[:2])
    chart = explorer.comparison_chart(explorer.comparison_curves(rows_a, rows_b, "response_time"),
                                      "response_time", "s").to_dict()
    drawn = [v for d in chart["datasets"].values() for v in (p["value"] for p in d)]
    assert len(drawn) == 6 and all(math.isfinite(v) for v in drawn)
    assert chart["encoding"]["y"]["scale"] == {"zero": True}  # inf does not make it log scale


def test_compare_page_says_when_no_point_can_be_drawn(tmp_path, monkeypatch):
    path = tmp_path / "results.duckdb"
    store = ResultsStore(path)
    _run(store, "first", [math.nan] * 4)
    _run(store, "second", [math.inf, math.nan, math.inf, math.nan])
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    at = open_app(COMPARE)
    assert any("is NaN or infinite: nothing to draw" in m.value for m in at.markdown)
    assert "4 rows in both runs" in next(m.value for m in at.markdown if "rows in both" in m.value)
