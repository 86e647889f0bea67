"""The Volcano tuning page (app/pages/7_Volcano_tuning.py) and its logic in app/explorer.py.

The logic is tested on rows of a real, small run of the seven tuning experiments (scale 0.05:
50,000 records and a twentieth of the memory, 2 and 4 disks, about 3 s) and on hand-made rows
at the paper's scale, where the paper's numbers meet ours. The page is driven by Streamlit's
AppTest, with $MINIDB_RESULTS naming a copy of the small store, as in test_app_pages.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import explorer
import pandas as pd
import pytest
from app_test import open_app
from streamlit.testing.v1 import AppTest

from minidb.experiments.reproduce import run_and_store
from minidb.results import ResultsStore

VOLCANO = "pages/7_Volcano_tuning.py"

#: the small sequence the tests run: every step at scale 0.05 on 2 and 4 disks (32 KB
#: clusters need at least three per process: 8 disks do not fit in a twentieth of 12 MB)
SMALL = {"scale": 0.05, "disks": [2, 4]}
SMALL_EXTRA = {"volcano.clusters": {"cluster_kb": [4, 32]},
               "volcano.pools_simple": {"pools": [1, 2, 4]},
               "volcano.final": {"initial_disks": [2, 4]}}


@pytest.fixture(scope="module")
def small_store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results store with one small run of each of the eight steps."""
    path = tmp_path_factory.mktemp("volcano") / "results.duckdb"
    store = ResultsStore(path)
    for step in explorer.VOLCANO_STEPS:
        run_and_store(step.experiment, store, {**SMALL, **SMALL_EXTRA.get(step.experiment, {})})
    return path


@pytest.fixture(scope="module")
def small_frame(small_store_path: Path) -> pd.DataFrame:
    rows = explorer.volcano_stored_rows(ResultsStore(small_store_path))
    return explorer.volcano_steps_frame(rows)


def row(experiment: str, variant: str, column: str, metric: str, value: float,
        scale: float = 1.0, clock: str = "modeled") -> dict:
    """A hand-made result row as a Volcano experiment writes it."""
    return {"paper": "volcano", "experiment": experiment, "reference": "", "row": variant,
            "column": column, "metric": metric, "value": value, "unit": "s", "clock": clock,
            "parameters": {"scale": scale}}


# ------------------------------------------------------------------------------- the steps


def test_the_steps_follow_the_paper_and_name_their_experiments():
    numbers = [s.number for s in explorer.VOLCANO_STEPS]
    assert numbers == list(range(1, 9))
    experiments = [s.experiment for s in explorer.VOLCANO_STEPS]
    assert experiments == ["volcano.initial", "volcano.clusters", "volcano.alignment",
                           "volcano.buffer_size", "volcano.pools_simple", "volcano.unfix",
                           "volcano.pools", "volcano.final"]
    # §4.1, §4.2, §4.3, §5.1 (pools), §5.2 (unfix), §5.3, §6.3
    assert explorer.volcano_step("grouped unfix").kept == "macro_1"
    assert explorer.volcano_step("volcano.final").number == 8
    with pytest.raises(explorer.MinidbError, match="no Volcano tuning step 9"):
        explorer.volcano_step(9)


@pytest.mark.parametrize(("column", "disks"), [
    ("disks_8", 8), ("disks_16_time", 16), ("disks_8_total_lock", 8),
    ("disks_16_total_wait", 16), ("disks_2_to_8", None), ("curve", None), ("all_disks", None),
])
def test_disk_counts_are_read_from_both_column_shapes(column, disks):
    assert explorer.volcano_disks(column) == disks


# ------------------------------------------------------------------- on a real small run


def test_a_small_run_gives_a_line_per_step_variant_and_disk_count(small_frame):
    frame = small_frame
    assert sorted(frame["step"].unique()) == list(range(1, 9))
    assert set(frame["disks"]) == {2, 4}
    assert set(frame["scale"]) == {0.05}
    assert not frame.duplicated(["step", "variant", "disks"]).any()
    assert "sort_final" not in set(frame["variant"])  # a summary row, repeats align_4_bytes
    # the kept variant of every step, at both disk counts
    kept = frame[frame["kept"]]
    assert kept.groupby("step")["disks"].nunique().tolist() == [2] * 8
    assert set(kept["variant"]) == {s.kept for s in explorer.VOLCANO_STEPS}
    # every line has a time and the counters behind it; shares are percents
    assert frame["elapsed (s)"].gt(0).all()
    assert frame["unfix calls"].gt(0).all() and frame["cluster calls"].gt(0).all()
    assert frame["lock hold share (%)"].between(0, 100).all()
    # the paper's numbers are shown at any scale, the ratio only at the paper's
    assert frame.loc[frame["step"] == 6, "paper (s)"].isna().all()  # 2 and 4 disks: not in II
    assert frame["elapsed / paper"].isna().all()
    initial = frame[(frame["step"] == 1) & (frame["disks"] == 2)].iloc[0]
    assert initial["paper (s)"] == 1346.0 and initial["paper source"] == "Figure 1 (text)"


def test_grouped_unfixing_cuts_calls_and_lock_waits(small_frame):
    unfix = small_frame[(small_frame["step"] == 6) & (small_frame["disks"] == 4)].set_index(
        "variant")
    assert list(unfix.index) == ["simple", "procedure_1", "macro_1", "macro_4", "macro_16"]
    simple, macro = unfix.loc["simple"], unfix.loc["macro_1"]
    assert macro["unfix calls"] * 100 < simple["unfix calls"]
    assert macro["lock hold (s)"] < simple["lock hold (s)"] / 5
    assert macro["lock wait (s)"] < simple["lock wait (s)"]
    assert macro["elapsed (s)"] < simple["elapsed (s)"]


def test_a_step_table_keeps_the_papers_columns_only_where_it_prints_numbers(small_frame):
    clusters = explorer.volcano_step_table(small_frame, "clusters")
    assert "paper (s)" not in clusters and "paper source" not in clusters
    assert clusters["variant"].tolist() == ["cluster_4kb"] * 2 + ["cluster_32kb"] * 2
    assert {"unfix calls", "cluster calls", "lock hold (s)", "lock wait (s)",
            "lock wait share (%)", "merge levels"} <= set(clusters.columns)
    assert "step" not in clusters and "run" not in clusters
    # at 2 and 4 disks Table V prints times, Table II does not
    assert "paper (s)" in explorer.volcano_step_table(small_frame, 8)
    assert "paper (s)" not in explorer.volcano_step_table(small_frame, 6)


def test_the_sequence_at_one_disk_count(small_frame):
    options, start = explorer.volcano_progress_disks(small_frame)
    assert options == [2, 4] and start == 4  # every step has both: the larger one
    progress = explorer.volcano_progress_frame(small_frame, 4)
    assert progress["step"].tolist() == list(range(1, 9))
    assert progress["label"].iloc[5] == "6 grouped unfix"
    assert progress["elapsed (s)"].notna().all()
    assert (progress["best elapsed (s)"] <= progress["elapsed (s)"] + 1e-9).all()
    # Figure 5: more pools were faster, but the paper kept one
    pools = progress.iloc[4]
    assert pools["kept variant"] == "pools_1" and pools["best variant"] != "pools_1"
    # the tuned sort beats the initial one, and grouped unfixing is the big step
    assert progress["elapsed (s)"].iloc[-1] < progress["elapsed (s)"].iloc[0]
    assert progress["unfix calls"].iloc[5] * 100 < progress["unfix calls"].iloc[4]
    # a disk count no step measured gives empty numbers, not an error
    assert explorer.volcano_progress_frame(small_frame, 16)["elapsed (s)"].isna().all()


def test_a_steps_headline_numbers_compare_with_the_step_before(small_frame):
    summary = {label: (value, before) for label, value, before in
               explorer.volcano_step_summary(small_frame, 6, 4)}
    assert list(summary) == ["elapsed", "unfix calls", "lock hold", "lock wait"]
    value, before = summary["unfix calls"]
    assert before is not None and value * 100 < before
    first = explorer.volcano_step_summary(small_frame, 1, 4)
    assert all(before is None for _, _, before in first)  # nothing before the first step
    assert explorer.volcano_step_summary(small_frame, 1, 16) == []  # not measured there


def test_the_charts_of_a_small_run(small_frame):
    for step in explorer.VOLCANO_STEPS:
        spec = explorer.volcano_step_chart(small_frame, step.number).to_dict()
        assert spec["width"] == explorer.PANEL_WIDTH and spec["height"] == explorer.PANEL_HEIGHT
        kinds = {layer["mark"]["type"] for layer in spec["layer"]}
        assert kinds <= {"line", "bar", "rule", "point"}
        fields = [channel.get("field", "") for layer in spec["layer"]
                  for channel in layer["encoding"].values() if isinstance(channel, dict)]
        assert not any("'" in field for field in fields)  # Vega cannot read a quote in a field
    progress = explorer.volcano_progress_frame(small_frame, 4)
    spec = explorer.volcano_progress_chart(progress, 3, 4).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]][:2] == ["bar", "tick"]
    assert spec["layer"][0]["encoding"]["opacity"]["condition"]["test"] == "datum.step <= 3"


# ----------------------------------------------------------------------- on hand-made rows


def test_table_ii_columns_meet_the_papers_times_and_lock_totals():
    rows = [row("volcano.unfix", "simple", "disks_8_time", "elapsed", 250.0),
            row("volcano.unfix", "simple", "disks_8_time", "elapsed", 1.5, clock="wall"),
            row("volcano.unfix", "simple", "disks_8_total_lock", "lock_hold_time", 110.0),
            row("volcano.unfix", "simple", "disks_8_total_wait", "lock_wait_time", 400.0),
            row("volcano.unfix", "simple", "disks_8", "lock_wait_share", 0.2),
            row("volcano.unfix", "simple", "disks_8", "unfix_calls", 3_000_000)]
    frame = explorer.volcano_steps_frame(rows)
    assert len(frame) == 1
    line = frame.iloc[0]
    assert (line["step"], line["variant"], line["disks"], bool(line["kept"])) == (
        6, "simple", 8, False)
    assert line["elapsed (s)"] == 250.0  # the modeled clock, not the wall clock
    assert line["paper (s)"] == 258.31 and line["paper source"] == "Table II"
    assert line["elapsed / paper"] == pytest.approx(250.0 / 258.31)
    assert (line["paper lock hold (s)"], line["paper lock wait (s)"]) == (120.0, 452.0)
    assert (line["lock hold (s)"], line["lock wait (s)"]) == (110.0, 400.0)
    assert line["lock wait share (%)"] == pytest.approx(20.0)
    assert line["unfix calls"] == 3_000_000


def test_figure_5_pools_do_not_take_table_iii_numbers():
    """Both name a variant ``pools_1``: one unfix call per record in Figure 5, grouped
    unfixing in Table III. Only the latter's numbers are printed."""
    rows = [row("volcano.pools_simple", "pools_1", "disks_8", "elapsed", 180.0),
            row("volcano.pools", "pools_1", "disks_8_time", "elapsed", 160.0)]
    frame = explorer.volcano_steps_frame(rows).set_index("step")
    assert pd.isna(frame.loc[5, "paper (s)"])
    assert frame.loc[7, "paper (s)"] == 166.1


def test_summaries_curves_and_other_experiments_are_left_out():
    rows = [row("volcano.final", "align_4_bytes", "disks_16", "elapsed", 80.0),
            row("volcano.final", "sort_final", "disks_16", "elapsed", 80.0),
            row("volcano.final", "sort_final", "disks_16", "throughput", 1.2),
            row("volcano.initial", "sort_initial", "curve", "elapsed_floor", 190.0),
            row("volcano.initial", "sort_initial", "disks_2_to_8", "parallel_efficiency", 90.0),
            row("gamma.selection_speedup", "select_1pct", "nodes_2", "elapsed", 1.0)]
    frame = explorer.volcano_steps_frame(rows)
    assert frame[["step", "variant", "disks"]].values.tolist() == [[8, "align_4_bytes", 16]]
    assert frame["paper (s)"].tolist() == [83.66] and frame["kept"].tolist() == [True]
    assert explorer.volcano_steps_frame([]).empty


def test_the_step_before_counts_only_at_the_same_scale():
    rows = [row("volcano.buffer_size", "sort12_io3_work15_mb", "disks_8", "elapsed", 190.0),
            row("volcano.pools_simple", "pools_1", "disks_8", "elapsed", 19.0, scale=0.1)]
    frame = explorer.volcano_steps_frame(rows)
    assert explorer.volcano_step_summary(frame, 5, 8) == [("elapsed", 19.0, None)]
    assert explorer.volcano_scales(frame) == {4: 1.0, 5: 0.1}
    # one disk count only: bars per variant, and no 'before' line from another scale
    spec = explorer.volcano_step_chart(frame, 5).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["bar"]
    same = explorer.volcano_steps_frame(rows[:1] + [
        row("volcano.pools_simple", "pools_1", "disks_8", "elapsed", 188.0)])
    assert explorer.volcano_step_summary(same, 5, 8) == [("elapsed", 188.0, 190.0)]
    spec = explorer.volcano_step_chart(same, 5).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["bar", "rule"]


def test_the_paper_in_words_and_the_hint():
    first = "\n".join(explorer.volcano_step_notes(1))
    assert "150-180 s" in first and "3,000,000" in first  # Figure 4's lock, §5's unfix calls
    assert "3.6 times" in "\n".join(explorer.volcano_step_notes(8))
    assert "appreciable" in "\n".join(explorer.volcano_step_notes(3))  # Figure 3: words only
    hint = explorer.volcano_hint("/tmp/x.duckdb")
    assert "MINIDB_RESULTS=/tmp/x.duckdb minidb reproduce volcano --quick" in hint


# ------------------------------------------------------------------------------- the page


def open_page(timeout: float = 60) -> AppTest:
    return open_app(VOLCANO, timeout)


def texts(at: AppTest) -> str:
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning",
                 "error", "success", "code"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


@pytest.fixture
def volcano_store(small_store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                  ) -> Path:
    """A private copy of the small store, named by $MINIDB_RESULTS."""
    copy = tmp_path / "results.duckdb"
    shutil.copyfile(small_store_path, copy)
    monkeypatch.setenv("MINIDB_RESULTS", str(copy))
    return copy


def test_page_without_a_store_says_to_reproduce_volcano(tmp_path, monkeypatch):
    missing = tmp_path / "nothing" / "results.duckdb"
    monkeypatch.setenv("MINIDB_RESULTS", str(missing))
    at = open_page()
    assert at.title[0].value == "Volcano: tuning a parallel sort"
    assert "minidb reproduce volcano --quick" in at.info[0].value
    assert at.button(key="volcano_small")
    assert not at.header and not at.dataframe
    assert not missing.exists()  # reading never creates a store


def test_page_steps_through_the_tuning_sequence(volcano_store):
    at = open_page()
    assert at.header[0].value == "1. The initial software"
    assert at.selectbox(key="volcano_disks").value == 4
    assert "scale 0.05" in texts(at)  # heights are not the paper's
    table = at.dataframe[0].value
    assert table["variant"].tolist() == ["sort_initial", "sort_initial"]
    assert table["paper (s)"].tolist()[0] == 1346.0
    labels = [m.label for m in at.metric]
    assert labels == ["elapsed, 4 disks", "unfix calls, 4 disks", "lock hold, 4 disks",
                      "lock wait, 4 disks"]

    at.select_slider(key="volcano_step").set_value(6).run()
    assert not at.exception, at.exception
    assert at.header[0].value == "6. Grouped unfixing"
    table = at.dataframe[0].value
    assert set(table["variant"]) == {"simple", "procedure_1", "macro_1", "macro_4", "macro_16"}
    calls = {m.label: m for m in at.metric}["unfix calls, 4 disks"]
    assert calls.delta.startswith("-")  # far fewer calls than the step before
    assert len(at.get("vega_lite_chart") or at.get("arrow_vega_lite_chart")) == 2

    at.selectbox(key="volcano_disks").set_value(2).run()
    assert [m.label for m in at.metric][0] == "elapsed, 2 disks"
    at.select_slider(key="volcano_step").set_value(8).run()
    assert not at.exception, at.exception
    assert "paper (s)" in at.dataframe[0].value  # Table V prints 2-disk times


def test_page_runs_the_small_sequence_into_an_empty_store(tmp_path, monkeypatch):
    """The button stores one run per step (here at the tests' small size, not the page's
    tenth of the paper, to stay quick) and the page then shows the first step."""
    path = tmp_path / "results.duckdb"
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    monkeypatch.setattr(explorer, "VOLCANO_SMALL", {"scale": 0.05, "disks": [2]})
    monkeypatch.setattr(explorer, "VOLCANO_SMALL_EXTRA", SMALL_EXTRA | {
        "volcano.final": {"initial_disks": [2]}})
    at = open_page(timeout=120)
    at.button(key="volcano_small").click().run()
    assert not at.exception, at.exception
    assert "Stored 8 runs" in at.success[0].value
    runs = ResultsStore(path).runs(paper="volcano", status="ok")
    assert sorted(r["experiment"] for r in runs) == sorted(
        s.experiment for s in explorer.VOLCANO_STEPS)
    assert at.header[0].value == "1. The initial software"
    assert at.selectbox(key="volcano_disks").options == ["2"]
