"""NonStop SQL fidelity: the VLX scan rate calibrated on one Table 2 cell, the CLX rate from the
paper's "twice as fast", Table 2 judged by relative error, and each Tandem finding shown to fail
on a deliberately broken profile (or on numbers that contradict the paper) and to pass on the
real one."""

from __future__ import annotations

import contextlib
import math

import pytest
from shared_runs import tandem_speedup_quick_vlx

from minidb.cost.profiles import get_profile, tandem_vlx_scan_rate
from minidb.experiments import get_experiment, run_experiment
from minidb.experiments import tandem as tandem_experiment
from minidb.experiments.findings import check_findings
from minidb.experiments.reproduce import PaperReport, judge_cells, mark_calibration
from minidb.results import load_reference
from minidb.storage.page import heap_capacity

CELL = ("tandem", "Table 2", "table_scan", "vlx_f16")
QUICK = 0.01
# The log's effect needs a 1% sample large enough that its skew between 16 partitions does not
# hide it: at 1% scale 41-69 rows change per partition, at 10% (`reproduce --quick`) 500 or so.
LOG_SCALE = 0.1


@contextlib.contextmanager
def profiles(**changes_by_machine):
    """Run the Tandem experiments on profiles with some constants changed (a broken model)."""
    saved = {m: spec["profile"] for m, spec in tandem_experiment.MACHINES.items()}
    try:
        for machine, changes in changes_by_machine.items():
            base = get_profile(saved[machine])
            tandem_experiment.MACHINES[machine]["profile"] = base.replace(**changes)
        yield
    finally:
        for machine, name in saved.items():
            tandem_experiment.MACHINES[machine]["profile"] = name


def tandem_rows(machines=("vlx",), partitions=(2, 16), scale=QUICK, **broken):
    with profiles(**broken):
        return (run_experiment("tandem.speedup", scale=scale, machines=list(machines),
                               partitions=list(partitions))
                + run_experiment("tandem.scaleup", scale=scale, machines=list(machines),
                                 partitions=list(partitions)))


def status(rows, name):
    return {f.name: f for f in check_findings(rows, "tandem")}[name]


@pytest.fixture(scope="module")
def real_rows(computed_once):
    return computed_once("tandem_fidelity_real_rows",
                         lambda: tandem_rows(machines=("vlx", "clx"), partitions=(2, 4, 8, 16)))


def broken(what: str) -> dict:
    """A deliberately wrong model of both machines: startup or scan rate ten times the real."""
    out = {}
    for m in ("vlx", "clx"):
        p = get_profile(tandem_experiment.MACHINES[m]["profile"])
        out[m] = ({"operator_startup_ms": p.operator_startup_ms * 10} if what == "startup"
                  else {"disk_transfer_mb_s": p.disk_transfer_mb_s * 10})
    return out


@pytest.fixture(scope="module", params=["startup", "scan_rate"])
def broken_rows(request, computed_once):
    return computed_once(f"tandem_fidelity_broken_{request.param}", lambda: tandem_rows(
        machines=("vlx",), partitions=(2, 16), **broken(request.param)))


# -- the calibration ----------------------------------------------------------------------------
def _scan_time(n: int, rate_mb_s: float, rows: int = 8_000_000) -> float:
    """The scan of the F table on n partitions, written out independently of the profile code."""
    pages = math.ceil(rows / n / heap_capacity(4096, 200))
    return n * 1.5 + pages * 4096 / (rate_mb_s * 1e6)


def test_vlx_scan_rate_is_solved_from_one_published_cell():
    vlx = get_profile("tandem_vlx")
    assert vlx.disk_transfer_mb_s == pytest.approx(tandem_vlx_scan_rate())
    assert vlx.sources["disk_transfer_mb_s"].startswith("calibrated:")
    assert "7.21" in vlx.sources["disk_transfer_mb_s"]
    assert CELL in vlx.calibration_cells
    # the rule gives back the cell it was solved on ...
    rate = vlx.disk_transfer_mb_s
    assert _scan_time(2, rate) / _scan_time(16, rate) == pytest.approx(7.21, rel=1e-9)
    # ... and another cell gives another rate (the rule is not a constant in disguise)
    assert tandem_vlx_scan_rate(published_speedup=7.5) < rate
    with pytest.raises(ValueError, match="not reachable"):
        tandem_vlx_scan_rate(published_speedup=8.0)


def test_startup_is_the_middle_of_the_stated_range_and_clx_runs_half_as_fast():
    vlx, clx = get_profile("tandem_vlx"), get_profile("tandem_clx")
    for p in (vlx, clx):
        assert p.operator_startup_ms == 1500.0
        assert "a second or two per process" in p.sources["operator_startup_ms"]
    assert clx.disk_transfer_mb_s == pytest.approx(vlx.disk_transfer_mb_s / 2)
    assert clx.sources["disk_transfer_mb_s"].startswith("derived:")
    assert "twice as fast" in clx.sources["disk_transfer_mb_s"]


def test_the_model_reproduces_the_calibration_cell(real_rows):
    got = {(r["row"], r["column"]): r["value"] for r in real_rows
           if r["metric"] == "speedup" and r["clock"] == "modeled"}
    # within 1.5%: at 1% scale the first page of each partition's scan pays a seek (a fixed
    # cost the similarity scaling does not shrink), about 1% of a 250-page partition
    assert got[("table_scan", "vlx_f16")] == pytest.approx(7.21, rel=0.015)


def test_a_few_minutes_at_full_speedup(real_rows):
    """The paper: "the job's elapsed time is only a few minutes at full speedup" (text under
    Figure 6). Bound used: more than one minute and less than ten ("a few minutes"; the paper
    also planned its seventy tests to fit in a day, "a few minutes" each)."""
    elapsed = [r for r in real_rows if r["metric"] == "elapsed" and r["clock"] == "modeled"
               and r["row"] == "table_scan" and r["column"] == "vlx_f16"]
    assert len(elapsed) == 1
    full_size_s = elapsed[0]["value"] / QUICK  # similarity scaling: times are scale x full size
    assert 60 < full_size_s < 600, full_size_s
    assert 60 < _scan_time(16, get_profile("tandem_vlx").disk_transfer_mb_s) < 600


# -- the report judges Table 2 by relative error ------------------------------------------------
def _cell(paper, reference, row, column, ratio):
    return {"paper": paper, "reference": reference, "row": row, "column": column,
            "metric": "speedup", "reproduced": ratio, "published": 1.0, "ratio": ratio,
            "within_2x": 0.5 <= ratio <= 2.0, "clock": "modeled", "status": "ok"}


def test_table2_cells_are_judged_within_10_percent_and_gamma_keeps_2x():
    cells = judge_cells(mark_calibration([
        _cell("tandem", "Table 2", "average", "vlx_f16", 1.09),
        _cell("tandem", "Table 2", "update_1pct", "clx_f8", 1.15),
        _cell("tandem", "Table 2", "update_1pct", "clx_g4", 0.85),
        _cell(*CELL, 1.5),
        _cell("gamma", "Table 1", "select_1pct_nonindexed", "gamma_10000", 1.9),
    ]))
    assert [c["within"] for c in cells] == [True, False, False, None, True]
    assert cells[3]["calibration"] and cells[4]["tolerance"] is None
    report = PaperReport("tandem", "t", cells[:4])
    assert report.within_bar == 1 and len(report.compared) == 3
    assert "1 of 3 reproduced cells within 10% of the paper" in report.summary()
    gamma = PaperReport("gamma", "g", cells[4:])
    assert "1 of 1 reproduced cells within a factor of 2 of the paper" in gamma.summary()


# -- findings: pass on the real profile, fail on a broken one -----------------------------------
def test_scaleup_finding_passes_on_the_real_profile(real_rows):
    assert status(real_rows, "tandem.scaleup_near_one").status == "pass"


def test_speedup_finding_on_the_real_profile(real_rows):
    assert status(real_rows, "tandem.speedup_near_linear").status == "pass"


def test_speedup_and_scaleup_findings_fail_on_a_broken_profile(broken_rows):
    assert status(broken_rows, "tandem.speedup_near_linear").status == "fail"
    scaleup = status(broken_rows, "tandem.scaleup_near_one")
    assert scaleup.status == "fail", scaleup.detail


def _paper_rows(swap: bool = False) -> list[dict]:
    """Table 2 as experiment rows (the paper's own numbers); ``swap`` exchanges the insert's and
    the scan's values, numbers that contradict the paper's Figure 7 discussion."""
    rows = []
    for c in load_reference("tandem").to_pylist():
        if c["reference"] != "Table 2" or c["row"] == "join":
            continue
        machine, rest = c["column"].split("_")
        row = c["row"]
        if swap and row in ("table_scan", "select_1pct_insert"):
            row = "table_scan" if row == "select_1pct_insert" else "select_1pct_insert"
        experiment = "tandem.speedup" if rest[0] == "f" else "tandem.scaleup"
        rows.append({"experiment": experiment, "metric": c["metric"], "clock": "modeled",
                     "row": row, "column": c["column"], "value": c["value"],
                     "parameters": {"machine": machine, "partitions": int(rest[1:]),
                                    "baseline_partitions": 2}})
    return rows


def test_insert_finding_passes_on_the_papers_numbers_and_fails_on_contrary_ones():
    assert status(_paper_rows(), "tandem.insert_less_distorted_by_startup").status == "pass"
    assert status(_paper_rows(swap=True),
                  "tandem.insert_less_distorted_by_startup").status == "fail"


@pytest.mark.xfail(strict=True, reason="known gap: minidb's insert adds a store phase of ~1% of "
                   "the scan's work, and at 1% scale each partition's few result pages pay a "
                   "full seek; the insert speeds up slightly less than the scan (7.06 vs 7.14)")
def test_insert_finding_on_the_real_profile(real_rows):
    assert status(real_rows, "tandem.insert_less_distorted_by_startup").status == "pass"


def test_update_finding_judges_the_papers_numbers():
    # the paper's numbers pass (7.00 is the lowest); numbers where the update is not the least
    # linear fail
    assert tandem_experiment.MODELS_AUDIT_LOG
    assert status(_paper_rows(), "tandem.update_least_linear").status == "pass"
    flat = [{**r, "value": 7.5} if r["row"] == "update_1pct" else r for r in _paper_rows()]
    assert status(flat, "tandem.update_least_linear").status == "fail"


@pytest.mark.xfail(strict=True, reason="known: the update is not the least linear query in the "
                   "model. Each partition's changed pages are now written in the pass that reads "
                   "them (as NonStop SQL's disc process does) and its pool scales with the data, "
                   "so the update speeds up 7.40 at VLX F16 at 10% scale (`reproduce --quick`) "
                   "against the paper's 7.00, above the insert's 7.19: the log on cpu 1 slows it "
                   "by only ~2% (the paper: the greatest non-linearity, 12.5%)")
def test_update_finding_on_the_real_profile(real_rows):
    verdict = status(real_rows, "tandem.update_least_linear")
    assert verdict.status == "pass", verdict.detail


@pytest.fixture(scope="module")
def log_variants(computed_once):
    """VLX speedup rows at 10% scale without the log, with it on cpu 1, and with it on a
    processor of its own (the paper's remedy: move the database discs off cpu 1). With it on
    cpu 1 (the model's default) they are those of `run tandem.speedup --quick` on the VLX,
    which tests/test_experiments.py checks too (each partition count is a run of its own)."""
    assert (tandem_experiment.MODELS_AUDIT_LOG, tandem_experiment.LOG_CPU) == (True, 1)
    assert get_experiment("tandem.speedup").parameters(quick=True)["scale"] == LOG_SCALE
    out = {"cpu1": [r for r in tandem_speedup_quick_vlx(computed_once)
                    if r["parameters"]["partitions"] in (2, 16)]}
    for name, models, cpu in (("none", False, 1), ("own", True, "log")):
        saved = tandem_experiment.MODELS_AUDIT_LOG, tandem_experiment.LOG_CPU
        tandem_experiment.MODELS_AUDIT_LOG, tandem_experiment.LOG_CPU = models, cpu
        try:
            out[name] = run_experiment("tandem.speedup", scale=LOG_SCALE, machines=["vlx"],
                                       partitions=[2, 16])
        finally:
            tandem_experiment.MODELS_AUDIT_LOG, tandem_experiment.LOG_CPU = saved
    return out


def _modeled(rows):
    return {(r["row"], r["column"], r["metric"]): r["value"] for r in rows
            if r["clock"] == "modeled"}


def test_the_log_slows_only_the_update_and_only_from_cpu_1(log_variants):
    none, cpu1, own = (_modeled(log_variants[k]) for k in ("none", "cpu1", "own"))
    for key, value in none.items():
        if key[0] != "update_1pct":  # scan, select & insert, average: cells unchanged
            assert cpu1[key] == value and own[key] == value, key
    top = ("update_1pct", "vlx_f16", "speedup")
    assert cpu1[top] < none[top]
    assert own[top] == pytest.approx(none[top], rel=1e-3)  # off cpu 1 the log costs ~nothing


def test_update_finding_fails_when_the_log_is_not_on_cpu_1(log_variants):
    assert status(log_variants["own"], "tandem.update_least_linear").status == "fail"
