"""Experiments: registry and parameters, rows that name real reference cells, results that agree
with DuckDB, the paper's findings on reduced relations, and runs recorded in the results store."""

from __future__ import annotations

import dataclasses
import itertools

import duckdb
import pytest
from shared_runs import tandem_speedup_quick_vlx

from minidb.datagen import generate
from minidb.experiments import ExperimentError, experiments, get_experiment, run_experiment
from minidb.experiments import findings as fd
from minidb.experiments import gamma as g
from minidb.experiments.findings import check_findings
from minidb.experiments.machines import build, measure, scaled_fixed_costs
from minidb.experiments.reproduce import build_report, run_and_store
from minidb.plugins import _REGISTRY
from minidb.results import ResultsStore, load_reference
from minidb.results.reference import ReferenceDataError, load_prose_facts
from minidb.sql import planner

# the paper's 100,000 tuples (about 4 s inline): at much smaller sizes operator startup, a fixed
# cost, takes a larger share and the speedup findings are no longer about the paper's setup
FAST_SPEEDUP = {"nodes": [1, 2, 4, 8]}


@pytest.fixture(scope="module")
def speedup_rows(computed_once):
    return computed_once("gamma_selection_speedup_1_to_8",
                         lambda: run_experiment("gamma.selection_speedup", **FAST_SPEEDUP))


@pytest.fixture(scope="module")
def selection_rows(computed_once):
    return computed_once("gamma_selection_1k_10k",
                         lambda: run_experiment("gamma.selection", sizes=[1000, 10_000],
                                                systems=["gamma", "teradata"]))


@pytest.fixture(scope="module")
def page_rows(computed_once):
    # the paper's 100,000 tuples at the paper's five page sizes (every step is judged)
    return computed_once("gamma_page_size_default", lambda: run_experiment("gamma.page_size"))


@pytest.fixture
def break_profile(monkeypatch):
    """``break_profile(name, **changes)``: replace the registered hardware profile ``name`` by a
    copy with ``changes`` for one test (a deliberately wrong machine a finding must catch)."""

    def apply(name: str, **changes):
        broken = dataclasses.replace(_REGISTRY["hardware_profile"][name], **changes)
        monkeypatch.setitem(_REGISTRY["hardware_profile"], name, broken)
        return broken

    return apply


@pytest.fixture
def break_planner(monkeypatch):
    """``break_planner(access)``: make the planner take access hint ``access`` ("scan" or
    "index") for every table, whatever the cost rule says (a deliberately wrong optimizer)."""

    def apply(access: str):
        real = planner.choose_access
        monkeypatch.setattr(planner, "choose_access",
                            lambda table, terms, hint: real(table, terms, access))

    return apply


def _verdict(rows, name):
    return {f.name: f for f in check_findings(rows, name.split(".")[0])}[name]


@pytest.fixture(scope="module")
def tandem_rows(computed_once):
    return (tandem_speedup_quick_vlx(computed_once)
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
    for name in ("gamma.nonindexed_speedup_near_linear", "gamma.10pct_speeds_up_less",
                 "gamma.0pct_indexed_slower_with_nodes",
                 "gamma.nonclustered_1pct_best_indexed_speedup"):
        assert results[name].status == "pass", (name, results[name].detail)
    # the page-size findings need gamma.page_size rows, which these runs do not have
    assert results["gamma.page_size_levels_off"].status == "not checked"


def test_gamma_page_size_findings_hold(page_rows):
    results = {f.name: f for f in check_findings(page_rows, "gamma")}
    assert results["gamma.page_size_levels_off"].status == "pass", \
        results["gamma.page_size_levels_off"].detail


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


# the paper's smallest gain from doubling the partitions (Table 2: VLX update 2.00 -> 3.67 from 4
# to 8 partitions, 1.835), less the findings' 10% margin for a bar set from a paper's spread
TANDEM_LEAST_DOUBLING_GAIN = 3.67 / 2.00 * (1 - fd.SPREAD_MARGIN)


def test_tandem_findings_at_quick_scale(tandem_rows):
    results = {f.name: f for f in check_findings(tandem_rows, "tandem")}
    assert results["tandem.scaleup_near_one"].status == "pass"
    # every doubling of the partitions gains at least what the paper's weakest doubling gained
    # (a 16-partition speedup of 3.4, or 4.4, fails this)
    s = {(r["row"], r["parameters"]["partitions"]): r["value"] for r in tandem_rows
         if r["metric"] == "speedup"}
    for query in {q for q, _ in s}:
        curve = [s[(query, n)] for n in (2, 4, 8, 16)]
        assert all(b >= TANDEM_LEAST_DOUBLING_GAIN * a for a, b in itertools.pairwise(curve)), \
            (query, curve)


def test_tandem_least_doubling_gain_is_the_papers():
    table = [r for r in load_reference("tandem").to_pylist()
             if r["reference"] == "Table 2" and r["metric"] == "speedup"]
    value = {(r["row"], r["column"]): r["value"] for r in table}
    gains = []
    for (row, column), v in value.items():
        machine, n = column.split("_f")
        before = value.get((row, f"{machine}_f{int(n) // 2}"))
        if before:
            gains.append(v / before)
    assert min(gains) * (1 - fd.SPREAD_MARGIN) == pytest.approx(TANDEM_LEAST_DOUBLING_GAIN)


@pytest.mark.slow
def test_tandem_speedup_finding_fails_when_startup_dominates(break_profile):
    """A VLX whose executors take 50 times longer to start (a broken profile) falls far short of
    linear speedup, and the finding says so (about 20 s at 10% scale; in the default run
    tests/test_tandem_fidelity.py breaks the startup at 1% scale)."""
    vlx = _REGISTRY["hardware_profile"]["tandem_vlx"]
    break_profile("tandem_vlx", operator_startup_ms=50 * vlx.operator_startup_ms)
    rows = run_experiment("tandem.speedup", quick=True, machines=["vlx"])
    verdict = {f.name: f for f in check_findings(rows, "tandem")}["tandem.speedup_near_linear"]
    assert verdict.status == "fail", verdict.detail


def test_tandem_speedup_finding_passes_ideal_rows():
    def row(n, value):
        return {"experiment": "tandem.speedup", "metric": "speedup", "clock": "modeled",
                "row": "table_scan", "column": f"vlx_f{n}", "value": value,
                "parameters": {"partitions": n, "baseline_partitions": 2}}

    ideal = [row(n, n / 2) for n in (2, 4, 8, 16)]
    assert {f.name: f.status for f in check_findings(ideal, "tandem")}[
        "tandem.speedup_near_linear"] == "pass"


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

    queries = ("select_0pct_nonindexed", "select_1pct_nonindexed", "select_10pct_nonindexed")
    linear = [row(q, n, float(n)) for q in queries
              for n in (1, 8)]
    flat = [row(q, n, 1.0 + n / 10) for q in queries
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

    # at the paper's (quick) configuration the rows meet the published cells: Figure 5's 0%
    # indexed selection; the runs above, at another scale, are not what the report compares
    monkeypatch.undo()
    run_and_store("gamma.selection_speedup", store, quick=True)
    report = build_report(store, "gamma")[0]
    assert [r["experiment"] for r in report.runs] == ["gamma.selection_speedup"]
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


# -- findings that must be able to fail: each on the paper's own numbers or ideal rows (pass), on a
# deliberately broken model (fail), and on minidb's model (pass, or a known failure marked xfail)


KNOWN_FAILURE = {"strict": True, "raises": AssertionError}
"""A finding minidb's model fails today, for the reason given: the test passes once it holds."""


def _paper_rows(reference: str, experiment: str) -> list[dict]:
    """The published Gamma cells of ``reference`` as if a run had produced them."""
    return [{"experiment": experiment, "metric": "response_time", "clock": "modeled",
             "row": r["row"], "column": r["column"], "value": r["value"],
             "parameters": {"system": r["column"].split("_")[0]}}
            for r in load_reference("gamma").to_pylist()
            if r["reference"] == reference and r["value"] is not None]


def test_the_bars_are_the_papers_numbers():
    ref = {(r["reference"], r["row"], r["column"]): r["value"]
           for r in load_reference("gamma").to_pylist()}
    t1 = [ref[("Table 1", q, f"gamma_{b}")] / ref[("Table 1", q, f"gamma_{a}")]
          for q in ("select_1pct_nonindexed", "select_10pct_nonindexed")
          for a, b in ((10_000, 100_000), (100_000, 1_000_000))]
    assert sorted(t1) == pytest.approx(sorted(fd.PAPER_SELECTION_GROWTH))
    t7 = [ref[("Table 7", q, f"gamma_{b}")] / ref[("Table 7", q, f"gamma_{a}")]
          for q in ("min_scalar", "sum_100_partitions")
          for a, b in ((10_000, 100_000), (100_000, 1_000_000))]
    assert sorted(t7) == pytest.approx(sorted(fd.PAPER_AGGREGATE_GROWTH))
    t8 = {q: [v for (table, row, c), v in ref.items() if table == "Table 8" and row == q
              and c.startswith("gamma_")] for (table, q, _) in ref if table == "Table 8"}
    assert sorted(max(v) / min(v) for v in t8.values()) == pytest.approx(
        sorted(fd.PAPER_UPDATE_SPREAD))
    gap = {c: ref[("Figure 6", "select_10pct_vs_0pct_nonindexed", c)] / 100
           for c in ("page_2kb", "page_32kb")}
    assert gap == pytest.approx(fd.PAPER_NETWORK_GAP)


def test_size_findings_pass_on_the_papers_own_numbers():
    """The bars were set from the paper's spread: the paper's numbers themselves pass."""
    rows = (_paper_rows("Table 1", "gamma.selection") + _paper_rows("Table 7", "gamma.aggregates")
            + _paper_rows("Table 8", "gamma.updates"))
    for name in ("gamma.selection_time_linear_in_size", "gamma.aggregates_linear_in_size",
                 "gamma.single_tuple_updates_independent_of_size"):
        assert _verdict(rows, name).status == "pass", _verdict(rows, name).detail


@pytest.fixture(scope="module")
def size_rows():
    """minidb's Gamma at the paper's two smaller sizes (the report's --quick has these too)."""
    sizes = {"sizes": [10_000, 100_000], "systems": ["gamma"]}
    return (run_experiment("gamma.selection", **sizes) + run_experiment("gamma.aggregates", **sizes)
            + run_experiment("gamma.updates", **sizes))


def test_linear_findings_fail_when_a_fixed_cost_dominates(break_profile):
    """Three seconds to start each operator (a broken Gamma) flattens growth with size."""
    break_profile("gamma", operator_startup_ms=3000.0)
    sizes = {"sizes": [10_000, 100_000], "systems": ["gamma"]}
    rows = run_experiment("gamma.selection", **sizes) + run_experiment("gamma.aggregates", **sizes)
    for name in ("gamma.selection_time_linear_in_size", "gamma.aggregates_linear_in_size"):
        assert _verdict(rows, name).status == "fail", _verdict(rows, name).detail


def test_aggregates_grow_like_the_papers(size_rows):
    verdict = _verdict(size_rows, "gamma.aggregates_linear_in_size")
    assert verdict.status == "pass", verdict.detail


@pytest.mark.xfail(**KNOWN_FAILURE, reason="known: from 10,000 to 100,000 tuples minidb's "
                   "nonindexed selections grow 7.4-7.8 times, below the paper's 8.3-10.4 less 10%")
def test_selections_grow_like_the_papers(size_rows):
    verdict = _verdict(size_rows, "gamma.selection_time_linear_in_size")
    assert verdict.status == "pass", verdict.detail


def test_update_finding_fails_when_updates_scan_the_relation(break_planner):
    """An optimizer that never uses an index (broken) makes each update read the whole
    relation, so its time grows with the relation and the finding fails."""
    break_planner("scan")
    rows = run_experiment("gamma.updates", sizes=[10_000, 100_000], systems=["gamma"])
    verdict = _verdict(rows, "gamma.single_tuple_updates_independent_of_size")
    assert verdict.status == "fail", verdict.detail


@pytest.mark.xfail(**KNOWN_FAILURE, reason="known: minidb's modify of the key attribute costs 1.7 "
                   "times more at 100,000 than at 10,000 tuples; the paper's spread is 1.39")
def test_single_tuple_updates_cost_the_same_at_every_size(size_rows):
    verdict = _verdict(size_rows, "gamma.single_tuple_updates_independent_of_size")
    assert verdict.status == "pass", verdict.detail


def test_optimizer_finding_fails_when_the_index_is_always_used(break_planner):
    break_planner("index")
    rows = (run_experiment("gamma.selection", sizes=[10_000], systems=["gamma"])
            + run_experiment("gamma.access_paths", scale=0.2, page_sizes=[4096, 8192]))
    verdict = _verdict(rows, "gamma.optimizer_scans_for_10pct")
    assert verdict.status == "fail"
    assert "select_10pct_nonclustered_index at gamma_10000 (index chosen)" in verdict.detail


def test_optimizer_chooses_as_the_paper_up_to_16kb(selection_rows):
    rows = selection_rows + run_experiment("gamma.access_paths", scale=0.2,
                                           page_sizes=[2048, 4096, 8192, 16384])
    verdict = _verdict(rows, "gamma.optimizer_scans_for_10pct")
    assert verdict.status == "pass", verdict.detail
    # without the page-size choices the finding is not checked rather than passed
    assert _verdict(selection_rows, "gamma.optimizer_scans_for_10pct").status == "not checked"


@pytest.mark.xfail(**KNOWN_FAILURE, reason="known: at 32 KB pages a fragment's 1% matches "
                   "outnumber its data pages, so minidb's planner scans; Gamma used the index (Figure 8)")
def test_optimizer_uses_the_index_at_32kb_as_gamma_did(selection_rows):
    rows = selection_rows + run_experiment("gamma.access_paths", scale=0.2,
                                           page_sizes=[16384, 32768])
    verdict = _verdict(rows, "gamma.optimizer_scans_for_10pct")
    assert verdict.status == "pass", verdict.detail


def test_page_size_finding_judges_every_step(break_profile, page_rows):
    """With a disk that transfers pages for free (broken), a bigger page no longer costs the
    non-clustered selection anything, and the step from 16 to 32 KB fails; minidb's real disk
    passes that step (the finding fails on any step that is not slower)."""
    break_profile("gamma", disk_transfer_mb_s=1e6)
    rows = run_experiment("gamma.page_size", page_sizes=[16384, 32768])
    verdict = _verdict(rows, "gamma.page_size_hurts_nonclustered")
    assert verdict.status == "fail" and "page_16kb -> page_32kb" in verdict.detail
    real = _verdict(page_rows, "gamma.page_size_hurts_nonclustered")
    assert "page_16kb -> page_32kb" not in real.detail and "page_8kb -> page_16kb" not in \
        real.detail


@pytest.mark.xfail(**KNOWN_FAILURE, reason="known: minidb's 1% non-clustered selection is a little "
                   "faster at 4 KB than at 2 KB pages; the paper says any increase hurts")
def test_every_larger_page_slows_the_nonclustered_selection(page_rows):
    verdict = _verdict(page_rows, "gamma.page_size_hurts_nonclustered")
    assert verdict.status == "pass", verdict.detail


def _gap_rows(gaps: dict[str, float]) -> list[dict]:
    rows = []
    for column, gap in gaps.items():
        for query, value in (("select_0pct_nonindexed", 10.0),
                             ("select_10pct_nonindexed", 10.0 * (1 + gap))):
            rows.append({"experiment": "gamma.page_size", "metric": "response_time",
                         "clock": "modeled", "row": query, "column": column, "value": value,
                         "parameters": {}})
    return rows


def test_network_share_is_judged_by_the_papers_magnitude(break_profile):
    name = "gamma.network_share_grows_with_page_size"
    assert _verdict(_gap_rows({"page_2kb": 0.19, "page_32kb": 0.50}), name).status == "pass"
    # growing, but a tenth of the paper's gap at 32 KB: the old check (it grows) passed this
    assert _verdict(_gap_rows({"page_2kb": 0.01, "page_32kb": 0.05}), name).status == "fail"
    # a network interface that costs nothing (broken): results never queue behind it
    break_profile("gamma", net_mbit_s=1e6, packet_latency_ms=0.0, instr_packet=0.0)
    rows = run_experiment("gamma.page_size", page_sizes=[2048, 32768])
    assert _verdict(rows, name).status == "fail", _verdict(rows, name).detail


@pytest.mark.xfail(**KNOWN_FAILURE, reason="known: minidb's 10% selection is 18% slower than "
                   "the 0% one at 32 KB pages, the paper's 50%: its network interface queues less")
def test_network_share_at_32kb_is_near_the_papers(page_rows):
    verdict = _verdict(page_rows, "gamma.network_share_grows_with_page_size")
    assert verdict.status == "pass", verdict.detail


def test_a_nan_fails_the_finding_that_reads_it_and_names_the_cell():
    """A NaN compares false with every bar, so without a guard a check passes or fails on it by
    accident (``nan < bar`` is False either way round): a finding that reads one fails and says
    which cell, even where its check would skip a missing row."""
    def row(q, nodes, speedup):
        return {"experiment": "gamma.selection_speedup", "metric": "speedup", "clock": "modeled",
                "row": q, "column": f"nodes_{nodes}", "parameters": {}, "value": speedup}

    rows = [row(f"select_{q}_nonindexed", 8, 8.0) for q in ("0pct", "1pct", "10pct")]
    assert _verdict(rows, "gamma.nonindexed_speedup_near_linear").status == "pass"
    rows[1]["value"] = float("nan")
    verdict = _verdict(rows, "gamma.nonindexed_speedup_near_linear")
    assert verdict.status == "fail", verdict.detail
    assert "NaN" in verdict.detail and "select_1pct_nonindexed at nodes_8" in verdict.detail


def test_nonindexed_speedup_finding_includes_the_10pct_query(break_profile):
    def row(q, nodes, speedup):
        return {"experiment": "gamma.selection_speedup", "metric": "speedup", "clock": "modeled",
                "row": q, "column": f"nodes_{nodes}", "parameters": {}, "value": speedup}

    linear = [row("select_0pct_nonindexed", 8, 8.0), row("select_1pct_nonindexed", 8, 8.0)]
    name = "gamma.nonindexed_speedup_near_linear"
    assert _verdict(linear, name).status == "not checked"  # the 10% curve is needed too
    assert _verdict([*linear, row("select_10pct_nonindexed", 8, 5.0)], name).status == "fail"
    # a network interface a hundred times slower than the Unibus's 4 Mbit/s (broken) holds
    # back the 10% selection's results once they leave the node
    break_profile("gamma", net_mbit_s=0.04)
    rows = run_experiment("gamma.selection_speedup", nodes=[1, 8])
    verdict = _verdict(rows, name)
    assert verdict.status == "fail" and "select_10pct_nonindexed" in verdict.detail


def test_prose_facts_load_and_each_has_a_source(tmp_path):
    facts = load_prose_facts()
    assert facts and all(f["source"] and f["paper"] and f["description"] for f in facts)
    by_name = {(f["paper"], f["quantity"]): f["value"] for f in facts}
    assert by_name[("gamma", "tuples_per_page_4kb")] == 17
    assert by_name[("gamma", "data_pages_10000_tuples")] == 588
    assert by_name[("gamma", "teradata_ios_per_inserted_tuple")] == 3
    assert by_name[("volcano", "system_bus_bandwidth")] == 53
    assert by_name[("lhstar", "messages_per_lookup")] == 2
    assert {f["paper"] for f in facts} == {"gamma", "tandem", "volcano", "lhstar", "ingres"}
    broken = tmp_path / "prose"
    broken.mkdir()
    (broken / "prose_facts.csv").write_text(
        "paper,section,quantity,value,unit,source,description\n"
        "gamma,5.1,tuples_per_page_4kb,17,tuples,,no source given\n")
    with pytest.raises(ReferenceDataError, match="'source' is empty"):
        load_prose_facts(tmp_path)


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
