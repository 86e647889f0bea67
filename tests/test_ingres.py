"""Distributed INGRES (Stonebraker et al. 1983): the counted benchmarks of Tables 1, 3 and 4, their
pricing on the VAX profiles, and the paper's findings.

The engine runs at quick scale (0.1: 3,000 EMP, 150 DEPT, 100 updates); the counts are cached,
so a broken profile only re-prices them. Rows are checked against DuckDB; each finding passes on
the paper's own numbers and fails on a deliberately broken profile; two fail on minidb's model
and are marked as known failures.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import duckdb
import pytest

from minidb.cost import ingres_model
from minidb.cost.ingres_model import PAPER_WORK, times
from minidb.cost.profiles import NUMERIC_FIELDS, get_profile
from minidb.datagen import ingres as gen
from minidb.experiments import ingres as ix
from minidb.experiments import run_experiment
from minidb.experiments.findings import check_findings
from minidb.experiments.reproduce import build_report, run_and_store
from minidb.plugins import _REGISTRY
from minidb.results import ResultsStore, load_reference

SCALE, SEED = 0.1, 0
EXPERIMENTS = ("ingres.updates", "ingres.retrieve", "ingres.join")
VAXES = ("vax780_ethernet", "vax750_ethernet")


def _model_rows() -> list[dict]:
    return [r for name in EXPERIMENTS for r in run_experiment(name, quick=True)]


@pytest.fixture(scope="module")
def model_rows():
    return _model_rows()


@pytest.fixture
def break_profiles(monkeypatch):
    """Replace the VAX profiles in the registry with copies changed by ``changes``."""
    def apply(which=VAXES, **changes):
        for name in which:
            broken = dataclasses.replace(_REGISTRY["hardware_profile"][name], **changes)
            monkeypatch.setitem(_REGISTRY["hardware_profile"], name, broken)
    return apply


def _verdict(rows, name):
    return {f.name: f for f in check_findings(rows, "ingres")}[name]


def _tables():
    emp_rows, dept_rows, _ = ix._sizes(SCALE)
    return gen.emp(emp_rows, seed=SEED, departments=dept_rows), gen.dept(dept_rows, seed=SEED)


# -- the engine work, against DuckDB ---------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3])
def test_join_result_equals_duckdb(n):
    emp, dept = _tables()
    con = duckdb.connect()
    con.register("emp", emp)
    con.register("dept", dept)
    expected = con.execute("SELECT e.*, d.* FROM emp e JOIN dept d ON e.dept = d.dname").fetchall()
    got = ix.join_result(SCALE, SEED, n)
    assert len(got) == len(expected) == emp.num_rows  # every EMP.dept names a DEPT tuple
    assert Counter(got) == Counter(expected)  # no tuple lost or duplicated across sites
    sites = ix.count_join(SCALE, SEED, n)
    assert sum(q.joined for q in sites) == len(expected)
    assert all(q.tuples >= q.joined for q in sites)
    if n > 1:  # DEPT replicated: every site substitutes all of DEPT
        assert all(q.dept_rows + q.dept_received_rows == dept.num_rows for q in sites)
        assert sum(q.dept_rows for q in sites) == dept.num_rows


@pytest.mark.parametrize("n", [1, 2, 3])
def test_retrieve_returns_every_tuple_once(n):
    emp, _ = _tables()
    (count,) = duckdb.connect().execute("SELECT count(*) FROM emp").fetchone()
    sites = ix.count_retrieve(SCALE, SEED, n)
    assert sum(q.results for q in sites) == count == emp.num_rows
    assert max(q.results for q in sites) - min(q.results for q in sites) <= 1  # uniform
    # the 1,200-block EMP of §4, at scale: minidb's 2 KiB pages hold the same KiB
    kb = sum(q.pages_seq for q in sites) * ix.PAGE_KB / SCALE
    assert 1000 <= kb <= 1400


@pytest.mark.parametrize("n", [1, 2, 3])
def test_updates_split_evenly_and_each_changes_one_tuple(n):
    emp, _ = _tables()
    counted = ix.count_updates(SCALE, SEED, n)
    updates = len(counted.commands)
    assert updates == ix._sizes(SCALE)[2] - ix._sizes(SCALE)[2] % n
    assert counted.updated == updates  # every replace found its one tuple
    assert sum(counted.fragment_rows) == emp.num_rows  # fragments partition EMP
    assert Counter(u.target for u in counted.commands) == {s: updates // n for s in range(n)}
    assert Counter(u.origin for u in counted.commands) == {s: updates // n for s in range(n)}
    assert all(u.slave.tuples == 1 and u.slave.blocks_random >= 2 for u in counted.commands)
    # the fragments are the name ranges of §3: DuckDB counts the same tuples in each
    con = duckdb.connect()
    con.register("emp", emp)
    edges = [None, *counted.bounds, None]
    for s in range(n):
        lo, hi = edges[s], edges[s + 1]
        where = " AND ".join([f"name >= '{lo}'"] * (lo is not None) + [f"name < '{hi}'"] * (hi is not None)) or "true"
        (count,) = con.execute(f"SELECT count(*) FROM emp WHERE {where}").fetchone()
        assert count == counted.fragment_rows[s]


def test_experiments_store_rows_and_the_report_shows_the_cells(tmp_path):
    store = ResultsStore(tmp_path / "results.duckdb")
    for name in EXPERIMENTS:
        _, rows = run_and_store(name, store, quick=True)
        assert rows and all(r["clock"] == "modeled" and r["value"] >= 0 for r in rows)
    (report,) = build_report(store, "ingres")
    compared = {(c["reference"], c["row"], c["column"]) for c in report.compared}
    for table in ("Table 1", "Table 3", "Table 4"):
        published = [c for c in load_reference("ingres").to_pylist() if c["reference"] == table]
        calibration = [c for c in report.cells if c.get("calibration") and c["reference"] == table]
        reproduced = [c for c in published if (table, c["row"], c["column"]) in compared]
        assert len(reproduced) + len(calibration) == len(published)
    assert any(c.get("calibration") for c in report.cells)


def test_rows_at_two_scales_agree():
    """The counts are per-update and per-tuple: a run at 0.2 prices like one at 0.1."""
    quick = {(r["row"], r["column"]): r["value"] for r in run_experiment("ingres.retrieve",
                                                                          quick=True)}
    other = {(r["row"], r["column"]): r["value"] for r in run_experiment("ingres.retrieve",
                                                                          scale=0.2)}
    for key, v in quick.items():
        assert other[key] == pytest.approx(v, rel=0.1)


# -- the profiles -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", VAXES)
def test_every_vax_constant_has_a_source_and_calibrations_name_their_cell(name):
    p = get_profile(name)
    assert all(p.sources.get(f, "").strip() for f in NUMERIC_FIELDS)
    calibrated = [f for f in NUMERIC_FIELDS if p.sources[f].startswith("calibrated:")]
    assert sorted(calibrated) == sorted(c[0] for c in ingres_model.CALIBRATION)
    cells = {(c["paper"], c["reference"], c["row"], c["column"])
             for c in load_reference("ingres").to_pylist()}
    assert len(p.calibration_cells) == len(calibrated)
    assert set(p.calibration_cells) <= cells


def test_calibration_lands_each_constant_on_its_cell():
    """Each constant, with only the ones derived before it set, lands its work on its cell; the
    later ones move the earlier cells only a little (a command's parse in a retrieve...)."""
    full = get_profile("vax780_ethernet")
    p = dataclasses.replace(full, **{c[0]: 0.0 for c in ingres_model.CALIBRATION})
    for name, _, seconds, work, part in ingres_model.CALIBRATION:
        p = dataclasses.replace(p, **{name: getattr(full, name)})
        assert getattr(times(p, PAPER_WORK[work]), part) == pytest.approx(seconds, rel=1e-9)
    for _name, _, seconds, work, part in ingres_model.CALIBRATION:
        assert getattr(times(full, PAPER_WORK[work]), part) == pytest.approx(seconds, rel=0.01)
    # the 11/750 runs the same software 0.629 times as fast
    q = get_profile("vax750_ethernet")
    assert times(q, PAPER_WORK["retrieve"]).user == pytest.approx(
        times(full, PAPER_WORK["retrieve"]).user / 0.629)


# -- the findings -----------------------------------------------------------------------------------

def _published_rows() -> list[dict]:
    """The paper's own numbers as experiment rows."""
    experiment = {"Table 1": "ingres.updates", "Table 3": "ingres.retrieve",
                  "Table 4": "ingres.join"}
    rows = []
    for c in load_reference("ingres").to_pylist():
        if c["reference"] in experiment and c["value"] is not None:
            rows.append({"paper": "ingres", "experiment": experiment[c["reference"]],
                         "reference": c["reference"], "row": c["row"], "column": c["column"],
                         "parameters": {}, "metric": c["metric"], "value": float(c["value"]),
                         "unit": "s", "clock": "modeled"})
    return rows


FINDINGS = ["ingres.local_db_overhead", "ingres.updates_finish_sooner_on_more_sites",
            "ingres.three_sites_respond_faster", "ingres.total_cpu_constant_with_sites",
            "ingres.foreign_db_slower_than_local"]
KNOWN_FAILURES = {"ingres.local_db_overhead", "ingres.foreign_db_slower_than_local"}


@pytest.mark.parametrize("name", FINDINGS)
def test_findings_pass_on_the_papers_numbers(name):
    verdict = _verdict(_published_rows(), name)
    assert verdict.status == "pass", verdict.detail


@pytest.mark.parametrize("name", [
    n if n not in KNOWN_FAILURES else pytest.param(n, marks=pytest.mark.xfail(
        strict=True, raises=AssertionError, reason="known failure on the model's update benchmark: local "
        "overhead +9% of elapsed (paper +19%), foreign +26% (paper +6%)"))
    for n in FINDINGS])
def test_findings_on_minidbs_model(model_rows, name):
    verdict = _verdict(model_rows, name)
    assert verdict.status == "pass", verdict.detail


BROKEN = {
    # run-time checks twenty times dearer: the local overhead leaves its bar
    "ingres.local_db_overhead": (VAXES, {"instr_dist_command": 20 * 92_000.0}),
    # 11/750s twelve times slower than they are: extra sites no longer help the updates
    "ingres.updates_finish_sooner_on_more_sites": (("vax750_ethernet",), {"mips": 0.05}),
    # an 11/750 a hundred times an 11/780: two sites would beat the local retrieve by far more
    # than the 25% the paper says is possible
    "ingres.three_sites_respond_faster": (("vax750_ethernet",), {"mips": 100.0}),
    # packets a thousand times dearer: 3 sites send more of them than 2
    "ingres.total_cpu_constant_with_sites": (VAXES, {"instr_packet": 4_000_000.0}),
    # an 11/750 master a hundred times an 11/780: the foreign data base gets faster
    "ingres.foreign_db_slower_than_local": (("vax750_ethernet",), {"mips": 100.0}),
}


@pytest.mark.parametrize("name", FINDINGS)
def test_findings_fail_on_a_broken_profile(break_profiles, name):
    which, changes = BROKEN[name]
    break_profiles(which, **changes)
    verdict = _verdict(_model_rows(), name)
    assert verdict.status == "fail", verdict.detail


def test_findings_fail_on_broken_rows():
    """Swapping the paper's 2- and 3-site update times breaks the ordering the finding needs."""
    rows = _published_rows()
    for r in rows:
        if r["experiment"] == "ingres.updates" and r["metric"] == "elapsed":
            if r["row"].startswith("dist_3_sites"):
                r["value"] *= 1.5
    assert _verdict(rows, "ingres.updates_finish_sooner_on_more_sites").status == "fail"
