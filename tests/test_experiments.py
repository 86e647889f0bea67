"""Experiments: registry and parameters, rows that name real reference cells, results that agree
with DuckDB, the paper's findings on reduced relations, and runs recorded in the results store."""

from __future__ import annotations

import itertools

import duckdb
import pytest

from minidb.datagen import generate
from minidb.experiments import ExperimentError, experiments, get_experiment, run_experiment
from minidb.experiments import gamma as g
from minidb.experiments.findings import check_findings
from minidb.experiments.machines import build, measure, scaled_fixed_costs
from minidb.experiments.reproduce import build_report, run_and_store
from minidb.results import ResultsStore, load_reference

# the paper's 100,000 tuples (about 4 s inline): at much smaller sizes operator startup, a fixed
# cost, takes a larger share and the speedup findings are no longer about the paper's setup
FAST_SPEEDUP = {"nodes": [1, 2, 4, 8]}


@pytest.fixture(scope="module")
def speedup_rows():
    return run_experiment("gamma.selection_speedup", **FAST_SPEEDUP)


@pytest.fixture(scope="module")
def selection_rows():
    return run_experiment("gamma.selection", sizes=[1000, 10_000], systems=["gamma", "teradata"])


@pytest.fixture(scope="module")
def page_rows():
    # the paper's 100,000 tuples; the four page sizes the page-size findings compare
    return run_experiment("gamma.page_size", page_sizes=[2048, 4096, 8192, 32768])


@pytest.fixture(scope="module")
def tandem_rows():
    return (run_experiment("tandem.speedup", quick=True, machines=["vlx"])
            + run_experiment("tandem.scaleup", quick=True, machines=["clx"]))


def test_registry_lists_the_papers_experiments():
    names = {e.name for e in experiments()}
    assert {"gamma.selection", "gamma.selection_speedup", "gamma.page_size", "gamma.aggregates",
            "gamma.updates", "tandem.speedup", "tandem.scaleup"} <= names
    assert all(e.paper == "gamma" for e in experiments("gamma"))


def test_unknown_names_and_bad_parameters_are_one_line_errors():
    with pytest.raises(ExperimentError, match="unknown experiment 'gamma.nope'.*gamma.selection"):
        get_experiment("gamma.nope")
    with pytest.raises(ExperimentError, match="unknown paper"):
        experiments("bubba")
    exp = get_experiment("gamma.selection_speedup")
    with pytest.raises(ExperimentError, match="no parameter 'colour'"):
        exp.parameters({"colour": "red"})
    with pytest.raises(ExperimentError, match="scale must be like"):
        exp.parameters({"scale": "big"})
    assert exp.parameters({"nodes": "1, 2,4", "scale": "0.5"})["nodes"] == [1, 2, 4]
    assert exp.parameters(quick=True)["nodes"] == [1, 2, 4, 8]
    with pytest.raises(ExperimentError, match="unknown system"):
        run_experiment("gamma.selection", systems=["bubba"], sizes=[100])


def test_wisconsin_ranges_select_the_stated_fraction():
    assert g.selection_range(10_000, 1) == (0, 99)
    assert g.selection_range(10_000, 10) == (792, 1791)  # the benchmark's 10% query
    assert g.selected(100_000, 10) == 10_000 and g.selected(100_000, 0) == 0


@pytest.mark.parametrize("system", ["gamma", "teradata"])
def test_selections_store_exactly_what_duckdb_selects(system):
    tuples = 3000
    data = generate("wisconsin", tuples, seed=5)
    con = duckdb.connect()
    con.register("heap", data)
    con.register("indexed", data)
    db = build(4, g.SYSTEMS[system]["profile"])
    try:
        g.load_wisconsin(db, tuples, 5, system)
        for query in g.SELECTIONS:
            m = measure(db, g.select_into(query, tuples))
            stored = sorted(db.sql("SELECT unique1, unique2 FROM result").to_pylist())
            relation, attribute, percent = g.SELECTIONS[query]
            low, high = g.selection_range(tuples, percent)
            expected = con.execute(f"SELECT unique1, unique2 FROM {relation} WHERE {attribute} "
                                   f"BETWEEN {low} AND {high} ORDER BY ALL").fetchall()
            assert stored == sorted(expected), query
            assert m.rows == len(expected) == g.selected(tuples, percent)
            sizes = [len(f) for f in db.fragments("result")]
            assert sum(sizes) == m.rows and max(sizes) - min(sizes) <= 4  # round-robin
            db.drop_table("result")
    finally:
        db.close()


def test_rows_name_only_published_cells(selection_rows, speedup_rows, tandem_rows):
    """Every row that claims to reproduce a published cell uses slugs the reference data knows
    (a typo would silently compare nothing): a table's row, column and metric; for a figure, a
    query slug the figures' statements use. A table cell may be one the paper left blank
    (Teradata's single-tuple select at 10,000 tuples); most figure points have no number."""
    ref = load_reference().to_pylist()
    table_rows = {(r["paper"], r["reference"], r["row"]) for r in ref}
    table_columns = {(r["paper"], r["reference"], r["column"], r["metric"]) for r in ref}
    figure_rows = {(r["paper"], r["row"]) for r in ref if r["reference"].startswith("Figure")}
    claimed = [r for r in selection_rows + speedup_rows + tandem_rows if r["reference"]]
    assert {r["reference"] for r in claimed} >= {"Table 1", "Table 2", "Figure 2", "Figure 5"}

    def known(r):
        if not r["reference"].startswith("Figure"):  # a table, or a section's prose numbers
            return ((r["paper"], r["reference"], r["row"]) in table_rows
                    and (r["paper"], r["reference"], r["column"], r["metric"]) in table_columns)
        return (r["paper"], r["row"]) in figure_rows  # the figures' statements use the same slugs

    assert not [(r["reference"], r["row"], r["column"], r["metric"]) for r in claimed
                if not known(r)]


def test_table2_is_derived_as_the_paper_did(selection_rows):
    """Adjusted time = time - selected tuples x the average (10% - 1%) insertion rate, the
    average taken over the paper's sizes in the run (here 10,000; not the 1,000 it never ran)."""
    t = {(r["row"], r["column"]): r["value"] for r in selection_rows
         if r["metric"] == "response_time" and r["clock"] == "modeled"}
    c = "gamma_10000"
    rate = ((t[("select_10pct_nonindexed", c)] - t[("select_1pct_nonindexed", c)])
            / (g.selected(10_000, 10) - g.selected(10_000, 1)))
    adjusted = {(r["row"], r["column"]): r["value"] for r in selection_rows
                if r["metric"] == "adjusted_response_time"}
    assert adjusted[("select_10pct_clustered_index", c)] == pytest.approx(
        t[("select_10pct_clustered_index", c)] - 1000 * rate)


def test_teradata_has_no_clustered_index_rows(selection_rows):
    assert not [r for r in selection_rows if r["parameters"].get("system") == "teradata"
                and "_clustered_index" in r["row"] and "single" not in r["row"]]


def test_gamma_selection_findings_hold_on_reduced_relations(selection_rows, speedup_rows):
    results = {f.name: f for f in check_findings(selection_rows + speedup_rows, "gamma")}
    for name in ("gamma.optimizer_scans_for_10pct", "gamma.nonindexed_speedup_near_linear",
                 "gamma.10pct_speeds_up_less", "gamma.0pct_indexed_slower_with_nodes",
                 "gamma.nonclustered_1pct_best_indexed_speedup"):
        assert results[name].status == "pass", (name, results[name].detail)
    # the page-size findings need gamma.page_size rows, which these runs do not have
    assert results["gamma.page_size_levels_off"].status == "not checked"


def test_gamma_page_size_findings_hold(page_rows):
    results = {f.name: f for f in check_findings(page_rows, "gamma")}
    for name in ("gamma.page_size_levels_off", "gamma.page_size_hurts_nonclustered",
                 "gamma.network_share_grows_with_page_size"):
        assert results[name].status == "pass", (name, results[name].detail)


def test_page_size_runs_keep_the_buffer_pages_constant_and_fetch_in_index_order():
    """§1: the page-size tests keep the number of buffer pages constant; 0.6 MB (§6.1) holds
    19 pages of 32 KB, and that count is used at every page size."""
    frames = set()
    for size in (2048, 32768):
        with g.paper_machine("gamma", "inline", 2, size, buffer_page_size=32768) as db:
            node = db.backend.nodes[0].db
            frames.add(node.buffer.num_frames)
            assert node.ctx.rid_fetch == "index_order"
    assert frames == {19}
    with g.paper_machine("gamma", "inline", 2) as db:  # Table 1's machine: 0.6 MB of 4 KB pages
        assert db.backend.nodes[0].db.buffer.num_frames == 153


def test_speedup_rows_are_consistent_with_times(speedup_rows):
    t = {(r["row"], r["column"]): r["value"] for r in speedup_rows
         if r["metric"] == "response_time" and r["clock"] == "modeled"}
    s = {(r["row"], r["column"]): r["value"] for r in speedup_rows if r["metric"] == "speedup"}
    for (query, column), value in s.items():
        assert value == pytest.approx(t[(query, "nodes_1")] / t[(query, column)])


def test_tandem_findings_at_quick_scale(tandem_rows):
    results = {f.name: f for f in check_findings(tandem_rows, "tandem")}
    assert results["tandem.scaleup_near_one"].status == "pass"
    # speedup grows with every doubling of the partitions; whether it is near enough to linear
    # is the finding's verdict (reported, not asserted: minidb's VLX reaches about 0.8 of ideal)
    assert results["tandem.speedup_near_linear"].status in ("pass", "fail")
    s = {(r["row"], r["parameters"]["partitions"]): r["value"] for r in tandem_rows
         if r["metric"] == "speedup"}
    for query in {q for q, _ in s}:
        curve = [s[(query, n)] for n in (2, 4, 8, 16)]
        assert all(b > 1.5 * a for a, b in itertools.pairwise(curve)), (query, curve)


def test_similarity_scaling_only_shrinks_fixed_costs():
    full = scaled_fixed_costs("tandem_vlx", 1.0)
    small = scaled_fixed_costs("tandem_vlx", 0.01)
    assert small.operator_startup_ms == pytest.approx(full.operator_startup_ms / 100)
    assert small.disk_transfer_mb_s == full.disk_transfer_mb_s and small.mips == full.mips
    assert "similarity scaling" in small.sources["operator_startup_ms"]


def test_findings_judge_the_rows_they_are_given():
    def row(q, nodes, speedup):
        return {"experiment": "gamma.selection_speedup", "metric": "speedup", "clock": "modeled",
                "row": q, "column": f"nodes_{nodes}", "parameters": {}, "value": speedup}

    linear = [row(q, n, float(n)) for q in ("select_0pct_nonindexed", "select_1pct_nonindexed")
              for n in (1, 8)]
    flat = [row(q, n, 1.0 + n / 10) for q in ("select_0pct_nonindexed", "select_1pct_nonindexed")
            for n in (1, 8)]
    pick = "gamma.nonindexed_speedup_near_linear"
    assert {f.name: f.status for f in check_findings(linear, "gamma")}[pick] == "pass"
    assert {f.name: f.status for f in check_findings(flat, "gamma")}[pick] == "fail"
    assert {f.name: f.status for f in check_findings([], "gamma")}[pick] == "not checked"


def test_runs_are_recorded_and_failures_keep_no_rows(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path / "r.duckdb")
    run_id, rows = run_and_store("gamma.selection_speedup", store,
                                 {"scale": 0.02, "nodes": [1, 2]})
    assert len(store.rows(run_id=run_id)) == len(rows) > 0
    run = store.run(run_id)
    assert run["status"] == "ok" and run["scale"] == 0.02 and list(run["nodes"]) == [1, 2]

    exp = get_experiment("gamma.page_size")

    def broken(params, progress):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(type(exp), "function", property(lambda self: broken), raising=False)
    with pytest.raises(RuntimeError):
        run_and_store(exp, store, {"scale": 0.02})
    failed = store.runs(status="failed")
    assert len(failed) == 1 and "disk on fire" in failed[0]["error"]
    assert not store.rows(run_id=failed[0]["run_id"])

    # at the paper's size the rows meet the published cells: Figure 5's 0% indexed selection
    monkeypatch.undo()
    run_and_store("gamma.selection_speedup", store, {"nodes": [1, 8]})
    report = build_report(store, "gamma")[0]
    cells = {(c["reference"], c["row"], c["column"]): c for c in report.cells}
    for column, published in (("nodes_1", 0.25), ("nodes_8", 0.58)):
        cell = cells[("Figure 5", "select_0pct_nonclustered_index", column)]
        assert cell["published"] == published and cell["reproduced"] > 0
        assert cell["ratio"] == pytest.approx(cell["reproduced"] / published)
    assert "findings:" in report.summary()


def test_calibration_cells_are_shown_but_not_counted_as_reproduced():
    from minidb.experiments.reproduce import PaperReport, mark_calibration

    cells = [{"paper": "gamma", "reference": "Table 7", "row": "min_scalar", "column": column,
              "ratio": 1.0, "within_2x": True, "reproduced": 1.0, "published": 1.0}
             for column in ("gamma_100000", "gamma_1000000")]
    marked = mark_calibration(cells)
    assert [c.get("calibration", False) for c in marked] == [False, True]
    assert marked[1]["within_2x"] is None and marked[1]["ratio"] == 1.0
    report = PaperReport("gamma", "", marked)
    assert report.within_2x == 1 and len(report.compared) == 1


@pytest.mark.ray
def test_modeled_rows_are_the_same_on_ray_and_inline(ray_session):
    """The modeled clock comes from counted work only, so the backend must not change it (each
    producer routes with its own copy of the split table's partitioner)."""
    params = {"sizes": [2000], "systems": ["gamma"], "seed": 3}
    rows = {b: run_experiment("gamma.selection", backend=b, **params) for b in ("inline", "ray")}

    def modeled(rs):
        return {(r["row"], r["column"], r["metric"]): r["value"] for r in rs
                if r["clock"] == "modeled"}

    assert modeled(rows["inline"]) == modeled(rows["ray"])
