"""Volcano's tuning study: the cost model, its calibration rule, the experiments and the
paper's findings. Each checkable finding passes on the paper's own numbers, fails on a
deliberately broken model, and passes on minidb's model (or is a known failure marked xfail).

The sorts run at the paper's size (1,000,000 records), on the disk counts each finding needs;
the experiments remember each configuration's counts, so the broken models only re-price them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from minidb.cost import volcano_model
from minidb.cost.profiles import (
    get_profile,
    volcano_lock_calibration,
    volcano_next_call_calibration,
    volcano_spin_calibration,
)
from minidb.cost.volcano_model import lock_handoffs, price, solve, spin_handoff_s
from minidb.experiments import ExperimentError, run_experiment
from minidb.experiments import volcano as vx
from minidb.experiments.findings import check_findings
from minidb.plugins import _REGISTRY
from minidb.results import load_reference
from minidb.volcano.psort import SortSetup, parallel_sort
from minidb.volcano.records import sort_records

KNOWN_FAILURE = {"strict": True, "raises": AssertionError}

# The disk counts and variants each finding needs, at the paper's size.
PARAMS = {
    "volcano.initial": {"disks": [8, 16]},
    "volcano.clusters": {"disks": [8, 16], "cluster_kb": [4, 32]},
    "volcano.alignment": {"disks": [8, 16]},
    "volcano.buffer_size": {"disks": [8]},
    "volcano.unfix": {"disks": [8, 16]},
    "volcano.pools_simple": {"pools": [1, 2, 4]},
    "volcano.pools": {"disks": [8, 16]},
    "volcano.staggering": {"disks": [8, 16]},
    "volcano.affinity": {"disks": [8, 16]},
    "volcano.final": {"disks": [2, 8, 16], "initial_disks": [2, 8, 16]},
}


def _rows(only: tuple[str, ...] = ()) -> list[dict]:
    rows = []
    for name, params in PARAMS.items():
        if not only or name in only:
            rows += run_experiment(name, **params)
    return rows


@pytest.fixture(scope="module")
def model_rows(computed_once):
    """Every experiment's rows on minidb's model, sorted once per session (about 45 s): the
    worker that sorts keeps the sorts' counts in ``vx._sorted``'s cache; another worker gets
    the rows and the counts, which it looks up before sorting again, so that there too the
    broken models below only re-price them."""

    def compute():
        sorts = {}
        sort = vx._sorted

        def recording(data, setup):
            sorts[(data, setup)] = run = sort(data, setup)
            return run

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(vx, "_sorted", recording)
            return _rows(), sorts

    rows, sorts = computed_once("volcano_model_rows", compute)
    sort = vx._sorted
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vx, "_sorted", lambda data, setup: sorts.get((data, setup))
                      or sort(data, setup))
        yield rows


@pytest.fixture
def break_profile(monkeypatch):
    def apply(**changes):
        broken = dataclasses.replace(_REGISTRY["hardware_profile"]["sequent"], **changes)
        monkeypatch.setitem(_REGISTRY["hardware_profile"], "sequent", broken)
        return broken

    return apply


def _verdict(rows, name):
    return {f.name: f for f in check_findings(rows, "volcano")}[name]


def _row(experiment, row, column, metric, value):
    return {"paper": "volcano", "experiment": experiment, "reference": "", "row": row,
            "column": column, "parameters": {"scale": 1.0}, "metric": metric,
            "value": float(value), "unit": "", "clock": "modeled"}


def _published(reference: str) -> dict[tuple[str, str], float]:
    cells = load_reference("volcano").to_pylist()
    return {(c["row"], c["column"]): c["value"] for c in cells if c["reference"] == reference
            and c["value"] is not None}


def paper_rows() -> list[dict]:
    """The paper's own numbers as experiment rows, where it prints them."""
    rows = []
    table2 = _published("Table II")
    metric = {"time": "elapsed", "total_lock": "lock_hold_time", "total_wait": "lock_wait_time"}
    for (row, column), v in table2.items():
        rows.append(_row("volcano.unfix", row, column, metric[column.split("_", 2)[2]], v))
    for (row, column), v in _published("Table III").items():
        rows.append(_row("volcano.pools", row, column, metric[column.split("_", 2)[2]], v))
    for (row, column), v in _published("Table I").items():
        rows.append(_row("volcano.buffer_size", row, column, "elapsed", v))
        rows.append(_row("volcano.buffer_size", row, column, "merge_levels", 1))
    for (row, column), v in _published("Table V").items():
        rows.append(_row("volcano.final", row, column, "elapsed", v))
    # Figure 1 / §3.3 / §7: 379 s at 8 disks, about 300 s at 16; Figure 4's 150-180 s of hold
    # (taken as 165 s) and Table II's simple waits as the growth of the wait.
    for disks, elapsed, wait in ((8, 379, 452), (16, 300, 2062)):
        rows += [_row("volcano.initial", "sort_initial", f"disks_{disks}", "elapsed", elapsed),
                 _row("volcano.initial", "sort_initial", f"disks_{disks}", "lock_hold_time", 165),
                 _row("volcano.initial", "sort_initial", f"disks_{disks}", "lock_wait_time",
                      wait)]
    # Figure 2: 4 KB clusters (Figure 1's times) against 32 KB ones (Table II's simple row)
    for disks, small, large in ((8, 379, 258.31), (16, 300, 242.62)):
        rows += [_row("volcano.clusters", "cluster_4kb", f"disks_{disks}", "elapsed", small),
                 _row("volcano.clusters", "cluster_32kb", f"disks_{disks}", "elapsed", large)]
    # Figure 6 has no printed numbers: the elapsed times around the step are Table III's two pools
    # (no delay) and Table IV's affinity off (2 ms delays); the flush contention is §6.1's words,
    # a peak without delay and "almost entirely removed" with it.
    table3, table4 = _published("Table III"), _published("Table IV")
    for disks in (8, 16):
        for row, elapsed, wait in (
                ("delay_0ms", table3[("pools_2", f"disks_{disks}_time")], 1.0),
                ("delay_2ms", table4[("affinity_off", f"disks_{disks}")], 0.0)):
            rows += [_row("volcano.staggering", row, f"disks_{disks}", "elapsed", elapsed),
                     _row("volcano.staggering", row, f"disks_{disks}", "flush_lock_wait_time",
                          wait)]
    for (row, column), v in table4.items():
        rows.append(_row("volcano.affinity", row, column, "elapsed", v))
    # Figure 7: initial over final (Figure 1 and Table V; 300 s for the initial 16 disks)
    for disks, initial in ((2, 1346), (8, 379), (16, 300)):
        final = _published("Table V")[("align_4_bytes", f"disks_{disks}")]
        rows.append(_row("volcano.final", "sort_final_vs_initial", f"disks_{disks}",
                         "improvement_factor", initial / final))
    return rows


CHECKABLE = ["volcano.pool_lock_is_the_barrier", "volcano.initial_speedup_stalls",
             "volcano.larger_clusters_help", "volcano.bigger_buffer_no_faster",
             "volcano.grouped_unfix_breaks_barrier", "volcano.unfix_variants_alike",
             "volcano.two_pools_enough", "volcano.staggering_flushes_little_effect",
             "volcano.align_4_beats_16", "volcano.affinity_small_effect",
             "volcano.final_speedup_near_linear", "volcano.tuning_gain_at_16",
             "volcano.tuning_gain_low_parallelism"]


@pytest.mark.parametrize("name", CHECKABLE)
def test_findings_pass_on_the_papers_numbers(name):
    verdict = _verdict(paper_rows(), name)
    assert verdict.status == "pass", verdict.detail


def test_findings_the_model_cannot_show_are_not_checked_and_say_why(model_rows):
    verdict = _verdict(model_rows, "volcano.sixteen_pools_slightly_worse")
    assert verdict.status == "not checked" and "model" in verdict.detail


def test_without_a_cache_the_affinity_finding_is_not_checked(model_rows, break_profile):
    break_profile(cpu_cache_bytes=0.0)
    rows = run_experiment("volcano.affinity", **PARAMS["volcano.affinity"])
    verdict = _verdict(rows, "volcano.affinity_small_effect")
    assert verdict.status == "not checked" and "cpu_cache_bytes" in verdict.detail


# -- on minidb's model ----------------------------------------------------------------------------

# Figure 3 prints no numbers (§4.2 only says the differences were not appreciable), so this one is
# checked on the model alone.
MODEL_ONLY = ["volcano.alignment_cancels_at_first"]


KNOWN_MODEL_FAILURES = {
    "volcano.initial_speedup_stalls": (
        "known: the initial software on 16 disks takes 256 s in the model, where the paper "
        "measured above 300 s, so 16 disks gain x1.54 over 8 (bar 1.39). The model spreads each "
        "process's lock calls evenly over its run; it has no phases in which all sixteen hit the "
        "pool lock at once, which is where a spin lock hurts most (the 8-disk simple wait, 134 s "
        "against 452 s, is short for the same reason). The cache refills of unbound processes "
        "(one full 64 KB cache per I/O, 4 KB clusters: many I/Os) made it worse, x1.44 -> x1.54: "
        "they load 8 disks' bus more than they relieve 16 disks' lock"),
    "volcano.affinity_small_effect": (
        "known: unbound processes are x1.015 (8 disks) and x1.022 (16 disks) slower than bound "
        "ones in the model, the paper x1.007 and x1.009 (bar 1.0175): each wake-up on another "
        "CPU refills a whole 64 KB cache, an upper bound on what a process touches before its "
        "next I/O"),
}


@pytest.mark.parametrize("name", [n for n in CHECKABLE + MODEL_ONLY
                                  if n not in KNOWN_MODEL_FAILURES])
def test_findings_pass_on_minidbs_model(model_rows, name):
    verdict = _verdict(model_rows, name)
    assert verdict.status == "pass", verdict.detail


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(**KNOWN_FAILURE, reason=why))
    for n, why in KNOWN_MODEL_FAILURES.items()])
def test_known_failures_on_minidbs_model(model_rows, name):
    verdict = _verdict(model_rows, name)
    assert verdict.status == "pass", verdict.detail


def test_a_cache_four_times_larger_breaks_the_affinity_finding(model_rows, break_profile):
    break_profile(cpu_cache_bytes=4 * get_profile("sequent").cpu_cache_bytes)
    rows = run_experiment("volcano.affinity", **PARAMS["volcano.affinity"])
    assert _verdict(rows, "volcano.affinity_small_effect").status == "fail"


def test_bound_processes_refill_no_cache_and_unbound_ones_refill_per_io(model_rows):
    """The refills are counted: (C - 1) / C of every cluster a process reads or writes, and none
    when it is bound; the bound run is Table V's 16-byte row (the same sort, same price)."""
    rows = [r for r in model_rows if r["experiment"] == "volcano.affinity"]
    refills = {(r["row"], r["column"]): r["value"] for r in rows if r["metric"] == "cache_refills"}
    run = vx.counted_sort(16, **vx.STAGGER, flush_stagger_ms=2.0)
    ios = sum(w.clusters_read_sequential + w.clusters_read_random + w.clusters_written_sequential
              for w in run.work)
    assert refills[("affinity_on", "disks_16")] == 0
    assert refills[("affinity_off", "disks_16")] == pytest.approx(ios * 15 / 16)
    elapsed = {(r["experiment"], r["row"], r["column"]): r["value"] for r in model_rows
               if r["metric"] == "elapsed" and r["clock"] == "modeled"}
    assert elapsed[("volcano.affinity", "affinity_on", "disks_16")] == pytest.approx(
        elapsed[("volcano.final", "align_16_bytes", "disks_16")])


def test_slow_disks_make_the_padding_appreciable(model_rows, break_profile):
    # with disks a fifth as fast, the 12% more clusters of 16-byte alignment show in the time
    real = get_profile("sequent")
    break_profile(disk_transfer_mb_s=real.disk_transfer_mb_s / 5)
    rows = _rows(("volcano.alignment",))
    assert _verdict(rows, "volcano.alignment_cancels_at_first").status == "fail"


def test_without_the_iterator_cost_tuning_gains_too_much_at_low_parallelism(model_rows,
                                                                           break_profile):
    # the model as it was before instr_next_call: the tuned sort is a third too fast, and
    # 2-8 disks gain about 3x from tuning where the paper measured 2.2-2.4
    break_profile(instr_next_call=0.0)
    rows = _rows(("volcano.final",))
    assert _verdict(rows, "volcano.tuning_gain_low_parallelism").status == "fail"


# -- on deliberately broken models ----------------------------------------------------------------

def test_without_a_pool_lock_cost_the_lock_findings_fail(model_rows, break_profile):
    break_profile(lock_hold_unfix_us=0.0, lock_hold_cluster_us=0.0)
    rows = _rows(("volcano.initial", "volcano.unfix", "volcano.pools_simple"))
    for name in ("volcano.pool_lock_is_the_barrier", "volcano.grouped_unfix_breaks_barrier",
                 "volcano.pools_cut_simple_wait", "volcano.initial_speedup_stalls"):
        assert _verdict(rows, name).status == "fail", name


def test_without_the_spin_lock_handoff_the_initial_speedup_does_not_stall(model_rows,
                                                                          break_profile):
    # a queue-only pool lock (the model before §6.1's handoff): 16 disks gain 1.7x over 8
    break_profile(spin_transfers=0.0)
    rows = _rows(("volcano.initial",))
    assert _verdict(rows, "volcano.initial_speedup_stalls").status == "fail"


def test_a_lock_twenty_times_slower_breaks_the_tuning_gain(model_rows, break_profile):
    real = get_profile("sequent")
    break_profile(lock_hold_unfix_us=20 * real.lock_hold_unfix_us)
    rows = _rows(("volcano.final",))
    assert _verdict(rows, "volcano.tuning_gain_at_16").status == "fail"
    assert _verdict(rows, "volcano.tuning_gain_low_parallelism").status == "fail"


def test_free_clusters_break_the_cluster_finding(model_rows, break_profile):
    # nothing per cluster costs anything: no positioning, no buffer call, no packet, no lock
    # (neither its hold nor its handoff, which every call pays, cluster calls included), no cache
    # refill after the I/O
    break_profile(disk_seq_gap_ms=0.0, disk_seek_ms=0.0, disk_rotation_ms=0.0,
                  instr_buffer_call=0.0, instr_packet=0.0, lock_hold_cluster_us=0.0,
                  spin_transfers=0.0, cpu_cache_bytes=0.0)
    rows = _rows(("volcano.clusters",))
    assert _verdict(rows, "volcano.larger_clusters_help").status == "fail"


def test_a_sort_space_too_small_for_one_merge_level_breaks_table_one(model_rows, monkeypatch):
    monkeypatch.setattr(vx, "SORT_SPACE", int(1.5 * 2**20))
    rows = _rows(("volcano.buffer_size",))
    assert _verdict(rows, "volcano.bigger_buffer_no_faster").status == "fail"


def test_an_expensive_gathering_procedure_breaks_the_variants_finding(model_rows, monkeypatch):
    monkeypatch.setitem(volcano_model.GATHER_INSTRUCTIONS, "procedure", 3000.0)
    rows = _rows(("volcano.unfix",))
    assert _verdict(rows, "volcano.unfix_variants_alike").status == "fail"


def test_slow_cluster_calls_break_two_pools_enough(model_rows, break_profile):
    break_profile(lock_hold_cluster_us=100 * get_profile("sequent").lock_hold_cluster_us)
    rows = _rows(("volcano.pools",))
    assert _verdict(rows, "volcano.two_pools_enough").status == "fail"


def test_a_cpu_ten_times_slower_hides_the_alignment_gain(model_rows, break_profile):
    break_profile(mips=0.4)
    rows = _rows(("volcano.final",))
    assert _verdict(rows, "volcano.align_4_beats_16").status == "fail"


def test_a_narrow_bus_breaks_the_near_linear_speedup(model_rows, break_profile):
    break_profile(interconnect_mbit_s=2 * 8.0)
    rows = _rows(("volcano.final",))
    assert _verdict(rows, "volcano.final_speedup_near_linear").status == "fail"


def test_a_flush_sweep_longer_than_the_delays_keeps_the_contention(model_rows, break_profile):
    # every cluster-level call, the flush's sweep included, 100 times slower (28 ms): a 2 ms step
    # no longer lets one process have the lock before the next one asks (§6.1)
    break_profile(lock_hold_cluster_us=100 * get_profile("sequent").lock_hold_cluster_us)
    rows = _rows(("volcano.staggering",))
    verdict = _verdict(rows, "volcano.staggering_flushes_little_effect")
    assert verdict.status == "fail", verdict.detail
    waits = {(r["row"], r["column"]): r["value"] for r in rows
             if r["metric"] == "flush_lock_wait_time"}
    assert waits[("delay_2ms", "disks_16")] > 0.1 * waits[("delay_0ms", "disks_16")]


def test_delays_as_long_as_the_sort_break_the_elapsed_bar(model_rows):
    # seconds where the paper has milliseconds: the last process's flush starts a minute late
    rows = run_experiment("volcano.staggering", disks=[16], delays_ms=[0, 2, 4000])
    verdict = _verdict(rows, "volcano.staggering_flushes_little_effect")
    assert verdict.status == "fail", verdict.detail
    # the contention is gone as before: the elapsed time is what fails
    waits = {r["row"]: r["value"] for r in rows if r["metric"] == "flush_lock_wait_time"}
    assert waits["delay_2ms"] == waits["delay_4000ms"] == 0.0 < waits["delay_0ms"]


# -- the model and its calibration ---------------------------------------------------------------

def test_calibration_rule_gives_the_profiles_constants():
    """The two lock-hold constants are what their rule gives on the two Table II cells."""
    profile = get_profile("sequent")
    derived = volcano_lock_calibration()
    assert derived["lock_hold_unfix_us"] == pytest.approx(profile.lock_hold_unfix_us, abs=0.01)
    assert derived["lock_hold_cluster_us"] == pytest.approx(profile.lock_hold_cluster_us,
                                                            abs=0.1)
    assert set(profile.calibration_cells) == {
        ("volcano", "Table II", "simple", "disks_8_total_lock"),
        ("volcano", "Table II", "procedure_1", "disks_8_total_lock"),
        ("volcano", "Table II", "simple", "disks_16_total_wait"),
        ("volcano", "Table V", "align_4_bytes", "disks_2")}
    assert all(profile.sources[f].startswith("calibrated:")
               for f in ("lock_hold_unfix_us", "lock_hold_cluster_us", "spin_transfers",
                         "instr_next_call"))


def test_next_call_calibration_rule_gives_the_profiles_constant():
    """instr_next_call is what its rule gives on Table V's 4-byte, 2-disk time."""
    assert volcano_next_call_calibration() == pytest.approx(
        get_profile("sequent").instr_next_call, abs=0.01)


def test_spin_calibration_rule_gives_the_profiles_constant():
    """spin_transfers is what its rule gives on Table II's simple 16-disk total wait."""
    profile = get_profile("sequent")
    assert volcano_spin_calibration() == pytest.approx(profile.spin_transfers, abs=0.01)
    assert profile.cache_line_bytes == 16 and "§4" in profile.sources["cache_line_bytes"]


def test_spin_handoff_is_line_transfers_over_the_bus():
    sequent = get_profile("sequent")
    line_s = 16 / 53e6                         # one 16-byte cache line over the 53 MB/s bus
    assert spin_handoff_s(sequent) == pytest.approx(sequent.spin_transfers * line_s)
    assert spin_handoff_s(sequent.replace(spin_transfers=0.0)) == 0.0
    assert spin_handoff_s(get_profile("gamma")) == 0.0   # no shared lock on that machine


def test_handoff_costs_nothing_without_waiters_and_grows_with_them():
    # one process alone: nobody spins, its lock time is its hold time
    alone = solve(np.array([10.0]), np.array([[5.0]]), handoff=np.array([[1.0]]))
    assert np.allclose(alone, [[5.0]])
    # nobody at the lock (no calls): no handoff either
    assert np.allclose(solve(np.full(4, 10.0), np.zeros((4, 1)), handoff=np.zeros((4, 1))), 0)

    def lock_time(processes, handoff):
        own = np.full(processes, 10.0)
        return solve(own, np.full((processes, 1), 1.0),
                     handoff=np.full((processes, 1), handoff))[0, 0]

    # with others queued, each handoff costs more the more of them spin
    assert lock_time(4, 0.1) > lock_time(4, 0.0)
    assert lock_time(8, 0.1) - lock_time(8, 0.0) > lock_time(4, 0.1) - lock_time(4, 0.0)


def test_the_handoff_is_wait_not_hold_and_grows_from_8_to_16_disks():
    records = sort_records(100_000, seed=1)
    sequent = get_profile("sequent")
    queue_only = sequent.replace(spin_transfers=0.0)
    handoff = {}
    for disks in (8, 16):
        run = parallel_sort(records, SortSetup(processes=disks, sort_space_bytes=1 << 21))
        with_spin, without = price(run, sequent), price(run, queue_only)
        assert with_spin.lock_hold_s == pytest.approx(without.lock_hold_s)  # Table II's hold
        assert with_spin.lock_wait_s > without.lock_wait_s
        assert all(p["lock_handoff_s"] > 0 for p in with_spin.per_process)
        assert all(p["lock_handoff_s"] == 0 for p in without.per_process)
        assert lock_handoffs(run, sequent, 3)[:, 1:].sum() == 0  # only the pool lock hands off
        handoff[disks] = sum(p["lock_handoff_s"] for p in with_spin.per_process)
    assert handoff[16] > handoff[8]


def test_mean_value_analysis_basics():
    own = np.array([10.0, 10.0, 10.0, 10.0])
    # one customer alone never waits
    assert np.allclose(solve(own[:1], np.array([[5.0]])), [[5.0]])
    # the more the others need the centre, the longer each one stays there
    light = solve(own, np.full((4, 1), 1.0))[0, 0]
    heavy = solve(own, np.full((4, 1), 8.0))[0, 0]
    assert 1.0 < light and heavy / 8.0 > light / 1.0
    # nobody waits at a centre nobody needs
    assert np.allclose(solve(own, np.zeros((4, 2))), 0.0)
    # a saturated centre: the slowest process needs at least the centre's total demand
    time_at = solve(np.zeros(4), np.full((4, 1), 2.0))
    assert time_at[0, 0] + 1e-6 >= 0.5 * 8.0


def test_price_splits_the_time_and_more_pools_wait_less():
    records = sort_records(30_000, seed=1)
    profile = get_profile("sequent")
    one = price(parallel_sort(records, SortSetup(processes=8, sort_space_bytes=1 << 20)),
                profile)
    four = price(parallel_sort(records, SortSetup(processes=8, sort_space_bytes=1 << 20,
                                                  pools=4)), profile)
    assert one.lock_hold_s == pytest.approx(four.lock_hold_s, rel=0.01)
    assert four.lock_wait_s < one.lock_wait_s
    assert four.elapsed_s < one.elapsed_s
    for p in one.per_process:
        assert p["elapsed_s"] >= p["own_s"] + p["lock_hold_s"]
    assert one.elapsed_s >= one.lock_hold_s  # one pool: its lock is a floor (§5)


def test_experiment_parameters_are_checked():
    with pytest.raises(ExperimentError, match="1-16"):
        run_experiment("volcano.unfix", disks=[32])
    with pytest.raises(ExperimentError, match="4 KB pages"):
        run_experiment("volcano.clusters", cluster_kb=[6])
    with pytest.raises(ExperimentError, match="unknown unfix scheme|under 3 clusters"):
        run_experiment("volcano.unfix", schemes=["lazy"], disks=[2], scale=0.01)


def test_reduced_runs_name_no_published_cell():
    rows = run_experiment("volcano.unfix", scale=0.05, disks=[2], schemes=["simple"])
    assert rows and all(r["reference"] == "" for r in rows)
    assert {r["clock"] for r in rows} == {"modeled", "wall"}


def test_the_ray_backend_gives_the_same_modeled_rows(ray_session):
    kw = {"scale": 0.05, "disks": [2, 4], "schemes": ["simple", "macro_1"]}
    inline = run_experiment("volcano.unfix", **kw)
    ray_rows = run_experiment("volcano.unfix", backend="ray", **kw)

    def modeled(rows):
        return {(r["row"], r["column"], r["metric"]): r["value"] for r in rows
                if r["clock"] == "modeled"}

    assert modeled(ray_rows) == modeled(inline)
    assert {r["parameters"]["backend"] for r in ray_rows} == {"ray"}
