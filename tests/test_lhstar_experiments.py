"""The LH* paper's Section 5 on minidb (minidb.experiments.lhstar, minidb.cost.sdds_model):
the calibrations reproduce their cells, the counted work agrees with the operators' results and
with DuckDB, every published cell is reproduced, every finding passes on `--quick` runs and
fails on a deliberately broken machine, and `minidb report lhstar --strict` exits 0."""

from __future__ import annotations

import dataclasses

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner

from minidb.cli import main
from minidb.cost.profiles import (
    PROFILES,
    o2_operator_startup_ms,
    o2_page_fault_ms,
    o2_receive_ms_per_kb,
)
from minidb.cost.sdds_model import NodeWork, QueryWork, price
from minidb.experiments import lhstar as exp
from minidb.experiments.findings import check_findings, findings
from minidb.experiments.registry import run_experiment
from minidb.experiments.reproduce import build_report, reproduce
from minidb.plugins import _REGISTRY
from minidb.results import ResultsStore
from minidb.results.reference import load_reference

O2 = PROFILES["sgi_o2"]
LHSTAR_FINDINGS = [f.name for f in findings("lhstar")]


@pytest.fixture(scope="module")
def store(computed_once):
    """One `minidb reproduce lhstar --quick` into a fresh store (about half a minute), made once
    per session for every worker."""

    def run():
        path = computed_once.folder / "lhstar" / "results.duckdb"
        path.parent.mkdir()
        reproduce("lhstar", ResultsStore(path), quick=True)
        return path

    return ResultsStore(computed_once("lhstar_quick_store", run))


@pytest.fixture(scope="module")
def quick_rows(store):
    import json

    out = []
    for r in store.rows(paper="lhstar"):
        params = r["parameters"]
        out.append({**r, "parameters": json.loads(params) if isinstance(params, str) else params})
    return out


@pytest.fixture
def break_o2(monkeypatch):
    """Replace the registered sgi_o2 profile by a copy with some constants changed."""

    def apply(**changes):
        broken = dataclasses.replace(_REGISTRY["hardware_profile"]["sgi_o2"], **changes)
        monkeypatch.setitem(_REGISTRY["hardware_profile"], "sgi_o2", broken)
        return broken

    return apply


# -- the calibrations -------------------------------------------------------------------------------
def test_each_calibrated_constant_reproduces_its_cell_and_is_disclosed():
    pages = lambda entries: -(-entries * 8 // 4096)  # noqa: E731
    remote_scan = QueryWork((NodeWork(10**6, scanned=10**6, pages_touched=pages(10**6)),), True)
    remote_join = QueryWork((NodeWork(10**6, probes=10**5, results=10**5, received=10**5),),
                            True, broadcast=10**5, results=10**5)
    local_scan = QueryWork((NodeWork(6 * 10**6, scanned=6 * 10**6,
                                     pages_touched=pages(6 * 10**6)),), False)
    assert price(O2, remote_scan).total_ms == pytest.approx(781, rel=1e-9)
    assert price(O2, remote_join).total_ms == pytest.approx(5191, rel=1e-9)
    assert price(O2, local_scan).total_ms == pytest.approx(14874, rel=1e-9)
    assert O2.data_memory_bytes == 40e6
    for field in ("operator_startup_ms", "receive_ms_per_kb", "page_fault_ms",
                  "data_memory_bytes"):
        assert O2.sources[field].startswith("calibrated:"), field
    assert len(O2.calibration_cells) == 5  # four constants, one cell printed twice
    # each solution is a plain function of the profile: another published number moves it
    assert o2_operator_startup_ms(O2, published_ms=881) == pytest.approx(
        O2.operator_startup_ms + 100)
    assert o2_receive_ms_per_kb(O2, published_ms=6191) > O2.receive_ms_per_kb
    assert o2_page_fault_ms(O2, published_ms=20000) > O2.page_fault_ms


def test_a_calibration_that_cannot_be_met_is_refused():
    with pytest.raises(ValueError, match="already exceed"):
        o2_operator_startup_ms(O2, published_ms=100)


def test_a_scaled_run_prices_to_the_same_time_per_unit_of_data():
    full = QueryWork((NodeWork(10**6, scanned=10**6, probes=10**5, results=10**5,
                               received=10**5),), True, broadcast=10**5, results=10**5)
    small = QueryWork((NodeWork(10**4, scanned=10**4, probes=10**3, results=10**3,
                                received=10**3),), True, broadcast=10**3, results=10**3)
    assert price(O2, small, 0.01).total_ms / 0.01 == pytest.approx(price(O2, full).total_ms)


# -- the counted work is the work the results came from -----------------------------------------
def test_counted_results_match_duckdb_on_the_same_data():
    data = exp.workload(20_000, 0.01, seed=3)
    with exp.growing_file(data, 3, "inline") as grower:
        file = grower.grow_to(15_000)
        file.check()
        work = exp.count_queries(file, data.t5, remote=True)
        assert sum(w.entries for w in work["select_5"].nodes) == 15_000  # no entry lost
    con = duckdb.connect()
    con.register("big", {"head": data.keys[:15_000], "tail": data.values[:15_000]})
    con.register("t5", {"head": data.t5["head"], "tail": data.t5["tail"]})
    expected = {
        "select_5": "SELECT count(*) FROM big WHERE tail = 5",
        "select_1_10": "SELECT count(*) FROM big WHERE tail BETWEEN 1 AND 10",
        "join_t5_big": "SELECT count(*) FROM t5 JOIN big ON t5.tail = big.head",
        "join_big_t5": "SELECT count(*) FROM big JOIN t5 ON big.tail = t5.head",
    }
    for query, sql in expected.items():
        assert work[query].results == con.execute(sql).fetchone()[0], query
    # t5 was built to join completely with the first million (here 10,000) entries
    assert work["join_t5_big"].results == work["join_big_t5"].results == len(data.t5) == 1000
    # broadcast: every node receives all of t5 and looks every entry up
    assert all(w.received == w.probes == 1000 for w in work["join_t5_big"].nodes)


def test_the_ray_backend_gives_the_same_modeled_rows(ray_session):
    """On Ray the LH* servers are actors (one call per insert); the counted work, and so every
    modeled number, is the same as inline."""
    params = {"scale": 0.001, "millions": [1, 2]}
    rows = {backend: {(r["row"], r["column"], r["metric"]): r["value"]
                      for r in run_experiment("lhstar.remote_overhead", backend=backend, **params)
                      if r["clock"] == "modeled"}
            for backend in ("inline", "ray")}
    assert rows["inline"] == rows["ray"] and len(rows["ray"]) > 20


def test_sizes_must_be_positive():
    from minidb.experiments.registry import ExperimentError

    with pytest.raises(ExperimentError, match="millions must be positive"):
        run_experiment("lhstar.partition_size", millions=[0], scale=0.001)


# -- the published cells and the findings on `--quick` --------------------------------------------
NOT_MODELED = {"system_cpu_time"}  # the model prices no kernel time
NOT_CELLS = {"Section 5"}          # the study's facts (t5's size, the workstation's memory)


def test_every_published_section_5_cell_is_reproduced(quick_rows):
    produced = {(r["reference"], r["row"], r["column"], r["metric"]) for r in quick_rows
                if r["reference"]}
    published = [c for c in load_reference("lhstar").to_pylist()
                 if c["value"] is not None and c["metric"] not in NOT_MODELED
                 and c["reference"] not in NOT_CELLS]
    missing = [c for c in published
               if (c["reference"], c["row"], c["column"], c["metric"]) not in produced]
    assert len(published) > 140 and not missing


@pytest.mark.parametrize("name", LHSTAR_FINDINGS)
def test_finding_passes_on_quick_runs(quick_rows, name):
    result = {f.name: f for f in check_findings(quick_rows, "lhstar")}[name]
    assert result.status == "pass", result.detail


def test_report_strict_passes_and_shows_the_calibration_cells(store):
    out = CliRunner().invoke(main, ["report", "lhstar", "--strict", "--store", str(store.path)])
    assert out.exit_code == 0, out.output
    assert "calibration (a constant was derived from this cell)" in out.output
    report = build_report(store, "lhstar")[0]
    assert len(report.findings) == len(LHSTAR_FINDINGS)
    assert len(report.compared) > 140 and report.within_bar > len(report.compared) // 2


# -- each finding fails on a deliberately wrong machine ------------------------------------------
SMALL = {"scale": 0.01}
TINY_SCALABILITY = {"scale": 0.002, "nodes": [1, 2, 4, 8], "millions": [1, 8],
                    "ratio_nodes": [1, 8]}


def _status(rows, name):
    return {f.name: f for f in check_findings(rows, "lhstar")}[name]


@pytest.mark.parametrize(("name", "experiment", "params", "changes"), [
    # memory for everything: no knee at all
    ("lhstar.knee_between_40_and_48mb", "lhstar.partition_size", SMALL,
     {"data_memory_bytes": 200e6}),
    # 16 KB pages: a quarter of the faults the paper counted per 4 KB
    ("lhstar.faults_track_file_past_knee", "lhstar.partition_size", SMALL,
     {"vm_page_bytes": 16384}),
    # faults that cost nothing: the joins do not get dearer past the knee
    ("lhstar.joins_linear_then_dearer", "lhstar.partition_size", SMALL, {"page_fault_ms": 0.0}),
    # a remote operator that takes five seconds to start
    ("lhstar.remote_scan_overhead_low", "lhstar.remote_overhead", SMALL,
     {"operator_startup_ms": 5000.0}),
    # a free network: shipping t5 costs nothing, so joins lose no more than scans
    ("lhstar.remote_joins_lose", "lhstar.remote_overhead", SMALL,
     {"receive_ms_per_kb": 0.0, "net_mbit_s": 1e9}),
    # a second per control message: every added node costs more than its share of the scan saves
    ("lhstar.scans_speed_up_with_nodes", "lhstar.scalability", TINY_SCALABILITY,
     {"control_message_ms": 1000.0}),
    # a 0.5 Mbit/s interface: t5's copies to each node dominate
    ("lhstar.joins_moderately_dearer_on_more_nodes", "lhstar.scalability", TINY_SCALABILITY,
     {"net_mbit_s": 0.5}),
    # a scan a thousand times dearer: the joins grow with the file
    ("lhstar.join_cost_grows_slowly_with_size", "lhstar.scalability", TINY_SCALABILITY,
     {"instr_scan": 100_000.0}),
    ("lhstar.constant_load_per_node_constant_time", "lhstar.scalability", TINY_SCALABILITY,
     {"net_mbit_s": 0.5}),
])
def test_finding_fails_on_a_broken_machine(break_o2, name, experiment, params, changes):
    if params is not SMALL:  # at SMALL (the --quick scale) test_finding_passes_on_quick_runs
        assert _status(run_experiment(experiment, **params), name).status == "pass"
    break_o2(**changes)
    result = _status(run_experiment(experiment, **params), name)
    assert result.status == "fail", result.detail


def _algorithm_rows(**values):
    base = {"max_forwards": 2, "operations": 10**6, "per_insert": 1.01, "per_lookup": 2.01,
            "clients_converged": 1.0, "late_forwards": 0, "max_iams": 6, "uncontrolled": 0.6,
            "controlled": 0.7}
    base.update(values)
    metric = {"max_forwards": "forwards", "operations": "forwards", "per_insert": "messages",
              "per_lookup": "messages", "clients_converged": "convergence",
              "late_forwards": "convergence", "max_iams": "convergence",
              "uncontrolled": "load_factor", "controlled": "load_factor"}
    return [{"experiment": "lhstar.algorithm", "metric": metric[k], "clock": "modeled",
             "parameters": {}, "row": k, "column": "all", "value": float(v)}
            for k, v in base.items()]


@pytest.mark.parametrize(("name", "wrong"), [
    ("lhstar.at_most_two_forwards", {"max_forwards": 3}),
    ("lhstar.messages_per_operation", {"per_lookup": 2.5}),
    ("lhstar.messages_per_operation", {"per_insert": 0.9}),
    ("lhstar.images_converge", {"clients_converged": 0.9}),
    ("lhstar.images_converge", {"late_forwards": 4}),
    ("lhstar.controlled_load_factor", {"controlled": 0.55}),
])
def test_algorithm_findings_fail_on_wrong_numbers(name, wrong):
    assert _status(_algorithm_rows(), name).status == "pass"
    assert _status(_algorithm_rows(**wrong), name).status == "fail"


def test_a_client_without_image_adjustment_never_converges():
    """What images_converge guards against: a client that ignores IAMs keeps its (0, 0) image
    and pays a forward on most lookups of a grown file."""
    from minidb.sdds import LHStarFile
    from minidb.sdds.addressing import LHStarAddressing

    class NoIAM(LHStarAddressing):
        def adjust_image(self, image, address, level, n0):
            return image

    with LHStarFile(capacity=20, machines=2, addressing=NoIAM()) as f:
        keys = np.random.default_rng(0).choice(10**9, size=3000, replace=False).tolist()
        f.insert_many((k, k) for k in keys)
        client = f.client("fresh")
        forwarded = sum(client.request("lookup", k).forwards > 0 for k in keys[:500])
        assert (client.image.level, client.image.split) == (0, 0) and forwarded > 400


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_findings_hold_for_other_seeds(seed):
    rows = []
    for name in ("lhstar.partition_size", "lhstar.remote_overhead", "lhstar.scalability",
                 "lhstar.algorithm"):
        rows += run_experiment(name, quick=True, seed=seed)
    failed = [f for f in check_findings(rows, "lhstar") if f.status != "pass"]
    assert not failed, [(f.name, f.detail) for f in failed]
