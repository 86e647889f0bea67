"""Distributed INGRES (Stonebraker et al. 1983): the counted benchmarks of Tables 1, 3 and 4, their
pricing on the VAX profiles, and the paper's findings.

The engine runs at quick scale (0.1: 3,000 EMP, 150 DEPT, 100 updates); the counts are cached,
so a broken profile only re-prices them. Rows are checked against DuckDB; each finding passes on
the paper's own numbers and fails on a deliberately broken profile; one fails on minidb's model
and is marked as a known failure. The join also runs with EMP replicated instead of DEPT (§5):
its rows are the same, its scans are counted, and its extrapolation to the paper's size is
checked against a run at twice the scale.
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


@pytest.mark.parametrize("n", [2, 3])
def test_emp_moved_join_returns_the_same_tuples_as_dept_moved_and_duckdb(n):
    emp, dept = _tables()
    con = duckdb.connect()
    con.register("emp", emp)
    con.register("dept", dept)
    expected = con.execute("SELECT e.*, d.* FROM emp e JOIN dept d ON e.dept = d.dname").fetchall()
    got = ix.join_result(SCALE, SEED, n, "emp")
    assert Counter(got) == Counter(ix.join_result(SCALE, SEED, n, "dept")) == Counter(expected)


@pytest.mark.parametrize("n", [2, 3])
def test_emp_moved_join_counts_one_complete_heap_scan_per_dept_tuple(n):
    """Each site iterates over its own DEPT fragment; each substituted query scans the whole EMP
    copy (every fragment, its own and the received ones): scanned = substituted x |EMP|."""
    emp, dept = _tables()
    con = duckdb.connect()
    con.register("emp", emp)
    con.register("dept", dept)
    sites = ix.count_join(SCALE, SEED, n, "emp")
    assert sum(q.dept_rows for q in sites) == dept.num_rows
    assert sum(q.emp_rows for q in sites) == emp.num_rows  # the fragments partition EMP
    dept_frags = ix._uniform(dept, n)
    for s, q in enumerate(sites):
        assert q.emp_rows + q.emp_received_rows == emp.num_rows  # a complete copy
        assert q.substituted == q.dept_rows == dept_frags[s].num_rows
        assert q.scanned == q.substituted * emp.num_rows
        assert q.tuples == q.dept_rows and q.blocks_random == 0  # the outer scan, no hash access
        per_scan, rest = divmod(q.scanned_pages, q.substituted)
        assert rest == 0  # every scan requests every page of the heap
        assert 1000 <= per_scan * ix.PAGE_KB / SCALE <= 1400  # the 1,200-block EMP of §4
        con.register("frag", dept_frags[s])
        ((joined,),) = con.execute("SELECT count(*) FROM emp JOIN frag ON emp.dept = frag.dname"
                                   ).fetchall()
        assert q.joined == q.results == joined
    assert sum(q.joined for q in sites) == emp.num_rows  # no tuple lost or duplicated


def test_extrapolation_rule_scans_grow_with_the_square_of_the_scale():
    """``query_work``: counts of tuples grow by factor, the per-DEPT-tuple scans by factor^2."""
    q = ix.SiteQuery(tuples=3, joined=5, pages_seq=7, blocks_random=2, scanned=11,
                     scanned_pages=13)
    w = ix.query_work(q, 10.0)
    assert w.tuples == 3 * 10 + 11 * 100
    assert w.joined == 5 * 10
    assert w.kb_seq == pytest.approx((7 * 10 + 13 * 100) * ix.PAGE_KB)
    assert w.blocks_random == 2 * 10


@pytest.mark.parametrize("n", [2, 3])
def test_extrapolation_rule_is_exact_between_two_scales_run_both_ways(n):
    """Run the EMP-moved join at 0.1 and at 0.2 (both small enough to run) and take both to the
    paper's size: the scans' tuples agree exactly, their pages to rounding, the priced times to
    1%. A linear factor (what the DEPT-moved join uses) would be off by the ratio of the scales."""
    small, large = (ix.count_join(scale, SEED, n, "emp") for scale in (0.1, 0.2))
    for a, b in zip(small, large, strict=True):
        scans_a = dataclasses.replace(a, tuples=0, joined=0, pages_seq=0, blocks_random=0)
        scans_b = dataclasses.replace(b, tuples=0, joined=0, pages_seq=0, blocks_random=0)
        wa, wb = ix.query_work(scans_a, 1 / 0.1), ix.query_work(scans_b, 1 / 0.2)
        assert wa.tuples == pytest.approx(wb.tuples, rel=1e-12)
        assert wa.kb_seq == pytest.approx(wb.kb_seq, rel=0.02)
        assert (a.scanned / 0.1) / (b.scanned / 0.2) == pytest.approx(0.5)  # linear: wrong
    rows = {s: {(r["row"], r["column"]): r["value"] for r in run_experiment(
        "ingres.join", scale=s, moved="dept,emp") if r["row"].startswith("emp_moved")}
        for s in (0.1, 0.2)}
    assert rows[0.1] and rows[0.1].keys() == rows[0.2].keys()
    for key, v in rows[0.1].items():
        assert rows[0.2][key] == pytest.approx(v, rel=0.01), key


def test_moved_parameter():
    only_emp = run_experiment("ingres.join", quick=True, moved="emp")
    assert not [r for r in only_emp if r["row"].startswith(("dist_2", "dist_3"))]
    assert [r for r in only_emp if r["row"].startswith("emp_moved_dist_3_sites")]
    assert not [r for r in only_emp if r["metric"] == "slowdown_factor"]  # needs both
    with pytest.raises(ix.ExperimentError, match="moved"):
        run_experiment("ingres.join", quick=True, moved="salary")


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
    assert ("Section 5", "move_emp_instead_of_dept", "na") in compared  # §5's "about 20 times"


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
    # §5: "the two and three site versions ... about 20 times slower": one number for both
    for column in ("na", "dist_3_sites"):
        rows.append({"paper": "ingres", "experiment": "ingres.join", "reference": "Section 5",
                     "row": "move_emp_instead_of_dept", "column": column, "parameters": {},
                     "metric": "slowdown_factor", "value": 20.0, "unit": "ratio",
                     "clock": "modeled"})
    return rows


FINDINGS = ["ingres.local_db_overhead", "ingres.updates_finish_sooner_on_more_sites",
            "ingres.three_sites_respond_faster", "ingres.total_cpu_constant_with_sites",
            "ingres.foreign_db_slower_than_local", "ingres.moving_emp_is_an_order_slower"]
KNOWN_FAILURES = {
    # ingres.updates_finish_sooner_on_more_sites was a known failure while each site's script
    # added all the CPU it served to other sites on top of its own waits (2 sites 12.1% sooner
    # at --quick, under the 12.5% bar; 12.8% at the paper's size). Letting served work fill the
    # time a site waits on a remote slave (ingres_model.served_elapsed) gives 17.3% at --quick
    # and 17.4% at the paper's size, and it passes. That mechanism was chosen after the failure
    # had been seen, so the pass is weaker evidence than a prediction would be.
    # the model prices every EMP tuple a scan examines like a tuple the retrieve returns
    # (instr_query_tuple, calibrated on Table 3: ~3.5 ms of 11/780): 750 x 30,000 of them per
    # site make the EMP-moved join ~230x (2 sites) and ~215x (3 sites) slower, not ~20x; with
    # that CPU at 0 the rereading of the heap alone gives ~15x
    "ingres.moving_emp_is_an_order_slower": (
        "known failure: EMP moved is x233 (2 sites) and x217 (3 sites) slower on the model, not "
        "about 20: a scanned tuple that fails the qualification costs as much as one the "
        "retrieve returns"),
}


@pytest.mark.parametrize("name", FINDINGS)
def test_findings_pass_on_the_papers_numbers(name):
    verdict = _verdict(_published_rows(), name)
    assert verdict.status == "pass", verdict.detail


@pytest.mark.parametrize("name", [
    n if n not in KNOWN_FAILURES else pytest.param(n, marks=pytest.mark.xfail(
        strict=True, raises=AssertionError, reason=KNOWN_FAILURES[n]))
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
    # scanning costs nothing (no CPU per tuple examined, no OS or disk time per KiB read): a scan
    # of the EMP heap per DEPT tuple is no dearer than a hashed access
    "ingres.moving_emp_is_an_order_slower": (VAXES, {"instr_query_tuple": 0.0, "instr_os_kb": 0.0,
                                                     "disk_transfer_mb_s": 1e9}),
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


def test_moving_emp_fails_on_rows_with_the_ratio_set_to_2():
    rows = _published_rows()
    for r in rows:
        if r["metric"] == "slowdown_factor" and r["column"] == "na":
            r["value"] = 2.0
    assert _verdict(rows, "ingres.moving_emp_is_an_order_slower").status == "fail"


def test_moving_emp_bar_is_a_factor_of_2_around_the_papers_20():
    from minidb.experiments.ingres_findings import MOVE_EMP_BAR

    (cell,) = [c for c in load_reference("ingres").to_pylist()
               if c["row"] == "move_emp_instead_of_dept"]
    assert MOVE_EMP_BAR == (float(cell["value"]) / 2, float(cell["value"]) * 2) == (10, 40)


# -- the update scripts' elapsed time: served work fills a site's waits ---------------------------

@pytest.mark.parametrize("latency, served", [(100.0, 0.0), (100.0, 40.0), (5.0, 300.0)])
def test_served_elapsed_without_idle_time_adds_the_served_work(latency, served):
    assert ingres_model.served_elapsed(latency, served, 0.0) == pytest.approx(latency + served)


@pytest.mark.parametrize("latency, idle", [(100.0, 0.0), (100.0, 60.0), (100.0, 100.0)])
def test_served_elapsed_without_served_work_is_the_script_alone(latency, idle):
    assert ingres_model.served_elapsed(latency, 0.0, idle) == pytest.approx(latency)


@pytest.mark.parametrize("latency, served", [(100.0, 40.0), (100.0, 100.0), (100.0, 400.0),
                                             (1.0, 0.5)])
def test_served_elapsed_lies_between_full_overlap_and_none_and_falls_with_idle_time(latency,
                                                                                    served):
    previous = None
    for k in range(11):
        idle = latency * k / 10
        e = ingres_model.served_elapsed(latency, served, idle)
        assert latency <= e <= latency + served
        # never sooner than perfect overlap: served work packed into the idle time
        assert e >= latency + max(0.0, served - idle) - 1e-9
        # the fixed point it solves: the served work that finds the site busy is added
        assert e == pytest.approx(latency + served * (1 - idle / e))
        if previous is not None:
            assert e < previous  # more idle time: more of the served work is hidden
        previous = e


def test_served_elapsed_refuses_idle_time_beyond_the_script():
    with pytest.raises(ValueError, match="idle <= latency"):
        ingres_model.served_elapsed(10.0, 5.0, 11.0)


def test_two_site_scripts_finish_before_the_no_overlap_sum(monkeypatch):
    """Each site of the 2-site run waits on the other machine for half of its updates, so its
    elapsed time is now below latency + served (the old rule); the one-script rows (normal
    INGRES, local and foreign data base) serve nobody and do not move."""
    now = _elapsed_rows(run_experiment("ingres.updates", quick=True))
    monkeypatch.setattr(ingres_model, "served_elapsed", lambda latency, served, idle:
                        latency + served)
    old = _elapsed_rows(run_experiment("ingres.updates", quick=True))
    for row in ("dist_2_sites_11_780", "dist_2_sites_11_750"):
        assert now[row] < old[row] * 0.99, row
    for row in ("normal_ingres_11_780", "dist_local_db_11_780", "dist_foreign_db_11_750"):
        assert now[row] == pytest.approx(old[row], rel=1e-12), row


# -- the commit protocol and the master/slave split of a command (§2) ------------------------------

def _elapsed_rows(rows) -> dict[str, float]:
    return {r["row"]: r["value"] for r in rows if r["metric"] == "elapsed"}


def test_two_phase_commit_is_counted_not_assumed():
    """The update's commit is what the registered 2PC does on the simulated network with one
    participant: four messages (the model's paper work assumes the same four), one forced record
    at the master (COMMIT) and two at the slave (PREPARED, COMMIT)."""
    cost = ix.commit_cost("2pc")
    assert (cost.messages, cost.master_forces, cost.slave_forces) == (4, 1, 2)
    assert cost.messages == ingres_model.UPDATE_MESSAGES


def test_a_dearer_commit_protocol_slows_only_the_distributed_updates():
    """Three-phase commit sends more messages and forces more records than 2PC: every
    distributed configuration of Table 1 takes longer; normal INGRES has no commit protocol."""
    two = _elapsed_rows(run_experiment("ingres.updates", quick=True))
    three = _elapsed_rows(run_experiment("ingres.updates", quick=True, commit_protocol="3pc"))
    assert three["normal_ingres_11_780"] == two["normal_ingres_11_780"]
    for row in two:
        if row != "normal_ingres_11_780":
            assert three[row] > two[row], row
    # each extra force is one random 1 KiB write on the 11/780 (local data base: all on one site)
    c2, c3 = ix.commit_cost("2pc"), ix.commit_cost("3pc")
    extra_forces = (c3.master_forces + c3.slave_forces) - (c2.master_forces + c2.slave_forces)
    vax = get_profile("vax780_ethernet")
    floor = ix.UPDATES * extra_forces * vax.random_page_s(ingres_model.KIB)
    gain = three["dist_local_db_11_780"] - two["dist_local_db_11_780"]
    assert gain >= floor


def test_a_students_commit_protocol_runs_in_table_1(monkeypatch):
    """A protocol registered under a new name prices Table 1 without touching another file: one
    whose participant does not force its COMMIT record saves one random write per update."""
    from minidb.txn.commit.two_pc import TwoPhaseCommit

    class LazyParticipant(TwoPhaseCommit):
        name = "test_lazy_2pc"

        def participant_commit_forced(self) -> bool:
            return False

    monkeypatch.setitem(_REGISTRY["commit"], "test_lazy_2pc", LazyParticipant)
    assert ix.commit_cost("test_lazy_2pc").slave_forces == ix.commit_cost("2pc").slave_forces - 1
    lazy = _elapsed_rows(run_experiment("ingres.updates", quick=True,
                                        commit_protocol="test_lazy_2pc"))
    plain = _elapsed_rows(run_experiment("ingres.updates", quick=True))
    saved = plain["dist_local_db_11_780"] - lazy["dist_local_db_11_780"]
    vax = get_profile("vax780_ethernet")
    assert saved == pytest.approx(ix.UPDATES * vax.random_page_s(ingres_model.KIB)
                                  + ix.UPDATES * vax.instr_os_kb / (vax.mips * 1e6), rel=1e-6)


def test_an_unknown_commit_protocol_is_a_clear_error():
    from minidb.experiments.registry import ExperimentError

    with pytest.raises(ExperimentError, match="unknown commit protocol 'nope'.*2pc"):
        run_experiment("ingres.updates", quick=True, commit_protocol="nope")


def test_the_slave_does_its_share_of_each_command_on_a_foreign_data_base():
    """§2: the master parses, the slave runs. With the master on an 11/750 and the data on the
    11/780, the 11/780's user time is the slaves' share of the commands (plus the tuples); on one
    machine the split changes nothing (normal INGRES and a local data base do both parts)."""
    rows = run_experiment("ingres.updates", quick=True)
    user = {r["row"]: r["value"] for r in rows if r["metric"] == "user_cpu_time"}
    vax = get_profile("vax780_ethernet")
    assert 0 < vax.instr_slave_command < vax.instr_command
    slave_s = ix.UPDATES * vax.instr_slave_command / (vax.mips * 1e6)
    assert user["dist_foreign_db_11_780"] == pytest.approx(slave_s, rel=0.05)
    # the split is a split: master's part on the 11/750 plus the slave's on the 11/780 add up to
    # the local data base's user time, in 11/780 seconds
    total = user["dist_foreign_db_11_750"] * 0.629 + user["dist_foreign_db_11_780"]
    assert total == pytest.approx(user["dist_local_db_11_780"], rel=1e-6)


def test_a_slave_share_above_the_whole_command_is_refused():
    vax = get_profile("vax780_ethernet")
    with pytest.raises(ValueError, match="instr_slave_command is part of instr_command"):
        dataclasses.replace(vax, instr_slave_command=vax.instr_command * 1.5)
