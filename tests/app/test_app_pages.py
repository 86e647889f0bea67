"""Every page of the explorer, driven in-process by Streamlit's AppTest: no page raises, and
changing a widget changes what the page shows (another experiment, another figure, a new run).

The store is a private copy of the session's seeded store (see conftest.py), named through
$MINIDB_RESULTS as an instructor would.
"""

from __future__ import annotations

import explorer
import pyarrow as pa
import pytest
from app_test import open_app
from streamlit.testing.v1 import AppTest

from minidb.experiments.findings import FINDINGS as ALL_FINDINGS
from minidb.experiments.reproduce import run_and_store
from minidb.results import ResultsStore

PUBLISHED = "pages/1_Published_vs_reproduced.py"
RUN = "pages/2_Run.py"
COMPARE = "pages/3_Compare_runs.py"
FINDINGS = "pages/4_Findings.py"
LHSTAR = "pages/5_LH_star.py"
JOINS = "pages/6_Joins.py"


def texts(at: AppTest) -> str:
    """Everything the page wrote as text, in one string."""
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning",
                 "error", "success", "code"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def chart_tables(at: AppTest) -> list[pa.Table]:
    """The data sets of the page's first Altair chart."""
    # the element's name changed across Streamlit versions
    chart = (at.get("vega_lite_chart") or at.get("arrow_vega_lite_chart"))[0]
    return [pa.ipc.open_stream(d.data.data).read_all() for d in chart.proto.datasets]


# ------------------------------------------------------------------------------------- Home


def test_home_names_the_store_and_the_papers_with_runs(store_path):
    at = open_app()
    assert at.title[0].value == "minidb explorer"
    assert str(store_path) in texts(at)
    summary = at.dataframe[0].value
    assert summary["paper"].tolist() == ["gamma"] and summary["ok runs"].tolist() == [3]
    assert "minidb reproduce gamma --quick" in texts(at)


def test_home_without_a_store_says_how_to_make_one(empty_store_path):
    at = open_app()
    assert any("No results store" in i.value for i in at.info)
    assert not empty_store_path.exists()  # reading never creates a store


def test_home_reproduce_button_stores_runs_with_progress(store_path, monkeypatch):
    """The button runs ``reproduce`` (replaced here by one tiny experiment, the real one takes
    30 s) with a progress bar per experiment, and the new run appears in the store."""
    calls = []

    def tiny_reproduce(paper, store, quick, progress_for):
        calls.append((paper, quick))
        exp_name = "gamma.selection_speedup"
        from minidb.experiments import get_experiment

        progress = progress_for(get_experiment(exp_name))
        run_id, rows = run_and_store(exp_name, store, {"scale": 0.02, "nodes": [1]},
                                     progress=progress)
        assert progress.done == progress.total == 1
        return [(exp_name, run_id, len(rows))]

    monkeypatch.setattr(explorer, "reproduce", tiny_reproduce)
    at = open_app()
    at.selectbox(key="home_paper").set_value("gamma")
    at.button(key="home_reproduce").click().run()
    assert not at.exception, at.exception
    assert calls == [("gamma", True)]
    assert "Stored 1 run(s) of gamma" in at.success[0].value
    assert at.dataframe[0].value["ok runs"].tolist() == [4]  # the table was redrawn


# ------------------------------------------------------------------------------ Published


def test_published_page_follows_the_chosen_experiment(store_path):
    at = open_app(PUBLISHED)
    assert at.selectbox(key="pvr_experiment_gamma").value == "gamma.selection_speedup"
    assert list(at.dataframe[-1].value.columns) == ["nodes_1", "nodes_2"]
    curves = chart_tables(at)[0].to_pandas()
    assert set(curves["column"]) == {"nodes_1", "nodes_2"}
    assert "scale 0.05" in texts(at)

    at.selectbox(key="pvr_experiment_gamma").set_value("gamma.page_size").run()
    assert not at.exception, at.exception
    assert list(at.dataframe[-1].value.columns) == ["page_4kb", "page_8kb"]
    assert chart_tables(at)[0].to_pandas()["x"].tolist()[:2] == [4.0, 8.0]
    assert "What the paper says about Figure 6" in [e.label for e in at.expander]


def test_figure_6_says_the_numbers_the_paper_prints(store_path):
    """Figure 6's text gives two numbers (the 10% selection 19% and 50% slower than the 0% one);
    the page says so from the reference data, and lists them as cells."""
    at = open_app(PUBLISHED)
    at.selectbox(key="pvr_experiment_gamma").set_value("gamma.page_size").run()
    assert at.selectbox(key="pvr_reference_gamma.page_size").value == "Figure 6"
    assert "prints no numbers for Figure 6" not in texts(at)
    assert "The paper prints 2 numbers for Figure 6" in texts(at)
    cells = at.dataframe[0].value
    assert sorted(cells["published"]) == [19.0, 50.0]
    assert set(cells["row"]) == {"select_10pct_vs_0pct_nonindexed"}


def test_published_speedup_figure_draws_the_ideal_line(store_path):
    at = open_app(PUBLISHED)
    at.selectbox(key="pvr_reference_gamma.selection_speedup").set_value("Figure 3").run()
    metric = at.selectbox(key="pvr_metric_gamma.selection_speedup_Figure 3_modeled")
    assert metric.value == "speedup"
    ideal = next(t for t in chart_tables(at) if "kind" in t.column_names).to_pydict()
    assert ideal["kind"][0] == "ideal (linear)" and ideal["value"] == [1.0, 2.0]
    # the wall clock measured times only: the metric follows, and no paper point is drawn
    at.radio(key="pvr_clock").set_value("wall").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="pvr_metric_gamma.selection_speedup_Figure 3_wall").value == (
        "response_time")
    assert len(chart_tables(at)) == 1


def test_published_cells_at_the_papers_configuration(paper_store):
    """At 100,000 tuples on 1 and 8 nodes the run meets the paper's cells: Figure 4 has no
    number the text ties to a configuration (its "2 seconds" is a shape), Figure 5's two prose
    points are within a factor of 2 (and drawn)."""
    at = open_app(PUBLISHED)
    reference = at.selectbox(key="pvr_reference_gamma.selection_speedup")
    reference.set_value("Figure 4").run()
    assert not at.exception, at.exception
    assert "prints no numbers for Figure 4" in texts(at)

    at.selectbox(key="pvr_reference_gamma.selection_speedup").set_value("Figure 5").run()
    assert at.dataframe[0].value["within 2x"].tolist() == [True, True]
    at.selectbox(key="pvr_metric_gamma.selection_speedup_Figure 5_modeled").set_value(
        "response_time").run()
    published = next(t for t in chart_tables(at) if "reference" in t.column_names).to_pydict()
    assert sorted(published["value"]) == [0.25, 0.58]


# ------------------------------------------------------------------------------------ Run


def test_run_page_shows_the_parameters_of_the_chosen_experiment(store_path):
    at = open_app(RUN)
    at.selectbox(key="run_experiment").set_value("gamma.page_size").run()
    assert not at.info or "takes no partitioner" not in at.info[0].value
    assert at.selectbox(key="run_gamma.page_size_partitioner").value == "hash(unique1)"
    assert "range_uniform(unique1)" in at.selectbox(key="run_gamma.page_size_partitioner").options
    assert "page_sizes" in at.dataframe[0].value["parameter"].tolist()
    assert at.multiselect(key="run_gamma.page_size_page_sizes").value == [
        2048, 4096, 8192, 16384, 32768]
    at.selectbox(key="run_experiment").set_value("tandem.speedup").run()
    assert "takes no partitioner" in at.info[0].value
    params = at.dataframe[0].value["parameter"].tolist()
    assert "machines" in params and "page_sizes" not in params
    assert at.checkbox(key="run_tandem.speedup_similar").value is True


def test_run_page_runs_a_tiny_experiment_into_the_store(store_path):
    before = len(ResultsStore(store_path).runs())
    at = open_app(RUN, timeout=60)
    at.selectbox(key="run_experiment").set_value("gamma.selection_speedup").run()
    at.number_input(key="run_gamma.selection_speedup_scale").set_value(0.05)
    at.multiselect(key="run_gamma.selection_speedup_nodes").set_value([1, 2])
    at.button(key="run_submit").click().run()
    assert not at.exception, at.exception
    assert not at.error
    runs = ResultsStore(store_path).runs()
    assert len(runs) == before + 1
    new = runs[-1]
    assert new["status"] == "ok" and new["nodes"] == [1, 2] and new["scale"] == 0.05
    assert new["run_id"] in at.success[0].value
    shown = at.dataframe[1].value
    assert set(shown["column"]) == {"nodes_1", "nodes_2"}
    assert new["run_id"] in at.dataframe[-1].value["run"].tolist()  # recent runs table


def test_run_page_refuses_an_empty_list(store_path):
    before = len(ResultsStore(store_path).runs())
    at = open_app(RUN)
    at.selectbox(key="run_experiment").set_value("gamma.selection_speedup").run()
    at.multiselect(key="run_gamma.selection_speedup_nodes").set_value([])
    at.button(key="run_submit").click().run()
    assert "Choose at least one value for nodes" in at.error[0].value
    assert len(ResultsStore(store_path).runs()) == before


# -------------------------------------------------------------------------------- Compare


def test_compare_runs_opens_on_the_two_latest_runs_of_one_experiment(store_path):
    """The newest run (page size) has no twin: the page opens on the experiment run twice
    (selection speedup), its two latest runs, and draws their curves."""
    runs = ResultsStore(store_path).runs()
    teradata, gamma = runs[0]["run_id"], runs[1]["run_id"]
    at = open_app(COMPARE)
    assert at.selectbox(key="cmp_experiment").value == "gamma.selection_speedup"
    assert at.selectbox(key="cmp_a_gamma.selection_speedup_False").value == teradata
    assert at.selectbox(key="cmp_b_gamma.selection_speedup_False").value == gamma
    assert not at.warning
    curves = chart_tables(at)[0].to_pandas()
    assert set(curves["run"]) == {"A", "B"} and set(curves["column"]) == {"nodes_1", "nodes_2"}
    assert "rows in both runs" in texts(at) and "0 rows in both runs" not in texts(at)


def test_compare_runs_of_any_experiment_warns(store_path):
    at = open_app(COMPARE)
    at.checkbox(key="cmp_any").check().run()
    assert not at.exception, at.exception
    page_size = ResultsStore(store_path).runs()[2]["run_id"]
    at.selectbox(key="cmp_b_gamma.selection_speedup_True").set_value(page_size).run()
    assert "different experiments" in at.warning[0].value


def test_compare_runs_highlights_what_differs(store_path):
    at = open_app(COMPARE)
    params = at.dataframe[0].value
    assert params.loc[params["differs"], "parameter"].tolist() == ["profile"]
    rows = at.dataframe[1].value
    assert set(rows["clock"]) == {"modeled"}
    times = rows[rows["metric"] == "response_time"]
    assert len(times) == 14 and times["A"].notna().all() and times["B"].notna().all()
    # Teradata's profile moves some bottlenecks: those flags are in one run only
    assert rows["B"].isna().any() and "only in A" in texts(at)

    at.checkbox(key="cmp_only_changed").check()
    at.number_input(key="cmp_threshold").set_value(1000.0).run()
    left = at.dataframe[1].value  # no value moved by more than 10x: only one-sided rows stay
    assert len(left) < len(rows) and (left["A"].isna() | left["B"].isna()).all()
    at.selectbox(key="cmp_clock").set_value("both")
    at.number_input(key="cmp_threshold").set_value(0.0).run()
    assert set(at.dataframe[1].value["clock"]) == {"modeled", "wall"}


def test_compare_runs_of_different_experiments_only_on_request(empty_store_path):
    """No experiment ran twice: the page says so instead of pairing two experiments' rows."""
    store = ResultsStore(empty_store_path)
    run_and_store("gamma.selection_speedup", store, {"scale": 0.02, "nodes": [1]})
    run_and_store("gamma.page_size", store, {"scale": 0.02, "page_sizes": [4096]})
    at = open_app(COMPARE)
    assert "no experiment of this store has two" in at.info[0].value
    assert not at.dataframe  # no comparison of unrelated rows
    at.checkbox(key="cmp_any").check().run()
    assert not at.exception, at.exception
    assert "different experiments" in at.warning[0].value


def test_compare_needs_two_runs(empty_store_path):
    ResultsStore(empty_store_path)  # an empty store
    at = open_app(COMPARE)
    assert "needs two finished runs" in at.info[0].value


# ------------------------------------------------------------------------------- Findings


def test_findings_page_shows_each_finding_and_filters_by_status(store_path):
    at = open_app(FINDINGS)
    assert at.header[0].value.startswith("gamma:")
    counts = {m.label: int(m.value) for m in at.metric}
    gamma_findings = sum(f.paper == "gamma" for f in ALL_FINDINGS)  # all, whatever their status
    assert sum(counts.values()) == gamma_findings and counts["not checked"] > 0
    cards = [m.value for m in at.markdown if "**" in m.value and "·" in m.value]
    assert len(cards) == gamma_findings
    assert any("gamma.0pct_indexed_slower_with_nodes" in c for c in cards)

    at.multiselect(key="findings_status").set_value(["not checked"]).run()
    cards = [m.value for m in at.markdown if "**" in m.value and "·" in m.value]
    assert len(cards) == counts["not checked"]
    assert all("not checked" in c for c in cards)


# ------------------------------------------------------------------------------------ LH*


def test_lhstar_page_steps_through_splits_and_routes_a_request(empty_store_path):
    at = open_app(LHSTAR)
    assert at.title[0].value == "LH*: splits and forwarding"
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["buckets"]) > 1  # 60 keys in buckets of 4 have split the file
    at.selectbox(key="lh_order").set_value("ascending").run()
    at.slider(key="lh_step").set_value(5).run()  # the 5th ascending key overflows bucket 0
    assert "split bucket 0 into 0 and 1" in texts(at)
    assert {m.label: m.value for m in at.metric}["buckets"] == "2"
    at.slider(key="lh_step").set_value(60).run()
    at.number_input(key="lh_key").set_value(59).run()
    shown = texts(at)
    assert "sends the request to bucket 0" in shown and "forwards to bucket" in shown
    assert "the key is home" in shown and "sends an IAM" in shown
    at.number_input(key="lh_image_level").set_value(1).run()
    at.number_input(key="lh_image_split").set_value(5).run()
    assert "n' must be below 2**i' x N0 = 2" in texts(at)


# ---------------------------------------------------------------------------------- joins


def test_joins_page_shows_the_algorithms_pay_for_less_memory(empty_store_path):
    at = open_app(JOINS, timeout=120)
    assert at.title[0].value == "Joins: memory and overflow"
    at.select_slider(key="joins_rows").set_value(5_000).run()
    at.slider(key="joins_share").set_value(150).run()
    roomy = {m.label: int(m.value.split()[0].replace(",", "")) for m in at.metric}
    assert set(roomy) == set(explorer.JOIN_PAGE_ALGORITHMS)
    assert roomy["simple_hash"] == roomy["hybrid_hash"] == 0  # Bprime fits: nothing spilled
    at.slider(key="joins_share").set_value(25).run()
    assert not at.exception and not at.error
    tight = {m.label: int(m.value.split()[0].replace(",", "")) for m in at.metric}
    assert tight["simple_hash"] > tight["hybrid_hash"] > 0  # Hybrid degrades gracefully
    assert all(tight[a] >= roomy[a] for a in tight)


def test_join_memory_frame_checks_its_share():
    with pytest.raises(explorer.MinidbError, match="between 1 and 400"):
        explorer.join_memory_frame(0, rows=100)


# ------------------------------------------------------------------------------ all pages


@pytest.mark.parametrize("page", [None, PUBLISHED, RUN, COMPARE, FINDINGS, LHSTAR, JOINS])
def test_every_page_opens_on_a_missing_store(empty_store_path, page):
    at = open_app(page)
    assert at.title
    if page not in (None, RUN, LHSTAR, JOINS):  # the LH* and joins pages need no store
        assert "No results store" in at.info[0].value
    assert not empty_store_path.exists()


def test_the_sidebar_path_is_kept_across_pages(store_path, tmp_path):
    at = open_app(FINDINGS)
    assert at.header  # the seeded store
    elsewhere = tmp_path / "other.duckdb"
    at.sidebar.text_input[0].set_value(str(elsewhere)).run()
    assert "No results store" in at.info[0].value
    at.switch_page(PUBLISHED).run()
    assert at.sidebar.text_input[0].value == str(elsewhere)
    assert "No results store" in at.info[0].value


def test_a_file_that_is_no_store_is_one_red_line(tmp_path, monkeypatch):
    broken = tmp_path / "notes.duckdb"
    broken.write_text("not a database")
    monkeypatch.setenv("MINIDB_RESULTS", str(broken))
    at = open_app(FINDINGS)
    assert "not a readable minidb results database" in at.error[0].value
