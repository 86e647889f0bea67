"""Gamma's join experiment (Table 3): stored results equal DuckDB's, the machines run what §6.1
says they ran, every Table 3 cell is produced, and the join findings judge it.

Two findings pass on the model; four fail on it (run first on 2026-11-26, before any change to
the model for joins). They are marked ``xfail(strict=True)`` with the mechanism the model lacks,
so the suite says what is missing and notices when it is added; their bars are checked against
the paper's own numbers, which pass every one."""

from __future__ import annotations

import dataclasses

import duckdb
import pytest

import minidb.experiments.findings as fd
from minidb.datagen import generate
from minidb.experiments import gamma_joins
from minidb.experiments.findings import check_findings
from minidb.experiments.registry import run_experiment
from minidb.plugins import _REGISTRY
from minidb.results.reference import load_reference

JOIN_FINDINGS = ["gamma.joins_linear_until_overflow", "gamma.joins_overflow_breaks_linearity",
                 "gamma.teradata_joins_linear_in_size", "gamma.joins_beat_teradata_without_overflow",
                 "gamma.joinaselb_order_differs", "gamma.teradata_key_join_faster"]


def verdict(rows, name):
    return next(r for r in check_findings(rows) if r.name == name)


@pytest.fixture(scope="module")
def quick_rows(computed_once):
    return computed_once("gamma_joins_quick", lambda: run_experiment("gamma.joins", quick=True))


def paper_rows() -> list[dict]:
    """Table 3 as if a run had produced it, with §6.1's six overflows per processor at 1M."""
    rows = []
    for r in load_reference("gamma").to_pylist():
        if r["reference"] != "Table 3" or r["value"] is None:
            continue
        system = r["column"].split("_")[0]
        base = {"experiment": "gamma.joins", "clock": "modeled", "row": r["row"],
                "column": r["column"], "parameters": {"system": system}}
        rows.append({**base, "metric": "response_time", "value": r["value"]})
        overflows = 6 if r["column"] == "gamma_1000000" else 0
        rows.append({**base, "metric": "overflows", "value": overflows})
    return rows


@pytest.mark.parametrize("name", JOIN_FINDINGS)
def test_the_papers_own_numbers_pass_every_join_finding(name):
    assert verdict(paper_rows(), name).status == "pass", verdict(paper_rows(), name).detail


@pytest.mark.parametrize("table", ["Table 3", "Table 4"])
def test_every_table_cell_is_produced_at_quick_scale(quick_rows, table):
    published = {(r["row"], r["column"]) for r in load_reference("gamma").to_pylist()
                 if r["reference"] == table}
    produced = {(r["row"], r["column"]) for r in quick_rows
                if r["reference"] == table and r["clock"] == "modeled"}
    assert produced == published and len(published) == 36
    for r in quick_rows:
        assert r["parameters"]["tuples"] == round(r["parameters"]["paper_tuples"] * 0.1)


def test_table4_is_table3_less_the_stored_result_at_one_rate_per_machine(quick_rows):
    """§6.1 adjusts Table 3 "by the time to store the result relation", as Table 2 adjusted
    Table 1: one insertion rate per machine, measured on its selections, times the tuples each
    query stores (a tenth of A: every selected tuple joins once)."""
    t3 = {(r["row"], r["column"]): r["value"] for r in quick_rows
          if r["metric"] == "response_time" and r["clock"] == "modeled"}
    rates = {}
    for r in quick_rows:
        if r["metric"] != "adjusted_response_time":
            continue
        params = r["parameters"]
        rates.setdefault(params["system"], set()).add(params["insert_rate_s_per_tuple"])
        assert params["stored_tuples"] == params["paper_tuples"] // 10
        assert r["value"] == pytest.approx(
            t3[(r["row"], r["column"])] - params["stored_tuples"] * params["insert_rate_s_per_tuple"])
    assert set(rates) == {"gamma", "teradata"}
    assert all(len(v) == 1 and next(iter(v)) > 0 for v in rates.values())


def test_the_machines_run_what_section_6_1_describes(quick_rows):
    def value(metric, row, column):
        return next(r["value"] for r in quick_rows if r["metric"] == metric and r["row"] == row
                    and r["column"] == column and r["clock"] == "modeled")

    for r in quick_rows:
        system = r["parameters"]["system"]
        assert r["parameters"]["join"] == {"gamma": "simple_hash", "teradata": "teradata_merge"}[
            system]
        assert r["parameters"]["placement"] == {"gamma": "remote", "teradata": "local"}[system]
    # Gamma's hash tables hold the 10,000- and 100,000-tuple joins; the million-tuple ones
    # overflow on every joining processor (scaled memory and data keep that ratio)
    for row in fd.JOIN_ROWS:
        assert value("overflows", row, "gamma_100000") == 0
        assert value("overflows", row, "gamma_1000000") >= 2
    # the Teradata joins on the key keep every tuple on its AMP, so no AMP spools a tuple another
    # sent; on a non-key attribute they move. Both send their result tuples to be stored (§4)
    for q in fd.JOIN_QUERIES:
        assert value("spooled_tuples", f"{q}_key", "teradata_100000") == 0
        assert value("spooled_tuples", f"{q}_nonkey", "teradata_100000") > 0
        assert 0 < value("remote_bytes", f"{q}_key", "teradata_100000") < \
            value("remote_bytes", f"{q}_nonkey", "teradata_100000")
    # selection propagation: joinAselB sends a tenth of A where joinABprime sends all of it
    assert value("remote_bytes", "joinaselb_nonkey", "gamma_100000") < \
        0.4 * value("remote_bytes", "joinabprime_nonkey", "gamma_100000")


@pytest.mark.parametrize("system", ["gamma", "teradata"])
def test_stored_join_results_equal_duckdb(system):
    tuples = 2000
    with gamma_joins.machine(system, 0.02, "inline") as db:
        gamma_joins.load(db, system, tuples, seed=3)
        con = duckdb.connect()
        for i, name in enumerate(("A", "B", "Bprime", "C")):
            n = tuples if name in ("A", "B") else tuples // 10
            con.register(name, generate("wisconsin", n, seed=3 * 10 + i))
        spec = gamma_joins.MACHINES[system]
        for attribute in gamma_joins.ATTRIBUTES.values():
            for query in gamma_joins.QUERIES:
                sql = gamma_joins.statements(query, attribute, tuples)
                db.sql(f"/*+ {spec['placement']} {spec['join']} */ CREATE TABLE r AS {sql}")
                got = db.sql("SELECT * FROM r").to_arrow()
                want = con.sql(sql).fetchall()
                assert got.num_rows == len(want) == tuples // 10
                assert sorted(tuple(r.values()) for r in got.to_pylist()) == sorted(want)
                db.drop_table("r")


@pytest.mark.parametrize("name", ["gamma.joins_linear_until_overflow",
                                  "gamma.joins_beat_teradata_without_overflow",
                                  "gamma.joinaselb_order_differs",
                                  "gamma.teradata_key_join_faster"])
def test_findings_the_model_meets(quick_rows, name):
    assert verdict(quick_rows, name).status == "pass", verdict(quick_rows, name).detail


MISSING = {
    "gamma.joins_overflow_breaks_linearity": (
        "with Gamma's hash_entry_bytes (calibrated on §6.1's six overflows) the two-way joins "
        "resolve 6 overflows and joinABprime grows about 27 times from 100,000 to 1,000,000 "
        "tuples and joinCselAselB about 18, but joinAselB only about 15 times (bar 17.2), and "
        "the three-way join (a pipeline) resolves each of its two joins' overflows inside each "
        "node, 7 + 7 = 14 on a processor (bar 3 to 12)"),
    "gamma.teradata_joins_linear_in_size": (
        "the non-key joins pass; on the key, where nothing is redistributed, storing the result "
        "is most of the Teradata's time, and the model prices each stored tuple at the paper's "
        "lower bound of 3 I/Os (§4: 'at least 3'), where Tables 3 and 4 differ by about 6 per "
        "tuple, so the 100,000-tuple key joins come out too fast"),
}


@pytest.mark.parametrize("name", sorted(MISSING))
def test_findings_the_model_does_not_meet_yet(quick_rows, name):
    if verdict(quick_rows, name).status != "pass":
        pytest.xfail(MISSING[name])
    pytest.fail(f"{name} passes now: remove it from MISSING and say what changed")


def test_a_fixed_cost_that_dominates_breaks_the_linear_finding(monkeypatch):
    """Three seconds to start each operator (a broken Gamma) flattens growth with size."""
    broken = dataclasses.replace(_REGISTRY["hardware_profile"]["gamma"], operator_startup_ms=3000.0)
    monkeypatch.setitem(_REGISTRY["hardware_profile"], "gamma", broken)
    rows = run_experiment("gamma.joins", systems=["gamma"], sizes=[10_000, 100_000], scale=0.1)
    assert verdict(rows, "gamma.joins_linear_until_overflow").status == "fail"


def test_a_slow_gamma_breaks_the_comparison_with_teradata(monkeypatch):
    """A Gamma whose processors were ten times slower would lose to the Teradata."""
    broken = dataclasses.replace(_REGISTRY["hardware_profile"]["gamma"], mips=0.06)
    monkeypatch.setitem(_REGISTRY["hardware_profile"], "gamma", broken)
    rows = run_experiment("gamma.joins", sizes=[10_000, 100_000], scale=0.1)
    assert verdict(rows, "gamma.joins_beat_teradata_without_overflow").status == "fail"


def test_a_teradata_whose_redistribution_costs_nothing_breaks_the_key_finding(monkeypatch):
    """Without the per-tuple cost of the hash-ordered spool (§6), skipping the redistribution
    on the key saves the Teradata only a little network time: the key joins are not
    substantially faster, and the finding says so."""
    broken = dataclasses.replace(_REGISTRY["hardware_profile"]["teradata"],
                                 spool_ios_per_tuple=0.0)
    monkeypatch.setitem(_REGISTRY["hardware_profile"], "teradata", broken)
    rows = run_experiment("gamma.joins", systems=["teradata"], sizes=[10_000, 100_000],
                          scale=0.1)
    assert verdict(rows, "gamma.teradata_key_join_faster").status == "fail"


def test_the_teradata_joins_follow_section_6_1(quick_rows):
    """The Teradata reads all of A and B in joinAselB (no selection propagation, §6.1), and every
    tuple it receives from another AMP is spooled: on the key nothing moves."""
    def value(metric, row, column):
        return next(r["value"] for r in quick_rows if r["metric"] == metric and r["row"] == row
                    and r["column"] == column and r["clock"] == "modeled")

    for size in gamma_joins.PAPER_SIZES:
        column = f"teradata_{size}"
        # joinAselB redistributes all of A and a tenth of B; joinABprime all of A and Bprime
        assert value("spooled_tuples", "joinaselb_nonkey", column) == pytest.approx(
            value("spooled_tuples", "joinabprime_nonkey", column), rel=0.1)
        assert value("spooled_tuples", "joinaselb_key", column) == 0


def test_a_gamma_without_network_costs_breaks_the_order_finding(monkeypatch):
    """Gamma's joinAselB wins only because it sends a tenth of A (§6.1): on a Gamma whose
    packets cost nothing to send or receive, reading all of B makes it the slower one."""
    broken = dataclasses.replace(_REGISTRY["hardware_profile"]["gamma"], instr_packet=0.0,
                                 instr_short_circuit_kb=0.0, net_mbit_s=1e6,
                                 packet_latency_ms=0.0)
    monkeypatch.setitem(_REGISTRY["hardware_profile"], "gamma", broken)
    rows = run_experiment("gamma.joins", systems=["gamma", "teradata"], sizes=[10_000],
                          scale=0.1)
    assert verdict(rows, "gamma.joinaselb_order_differs").status == "fail"


# -- §6.2.1: 1 to 8 processors, Local / Remote / Allnodes (Figures 10-13) ----------------------
@pytest.fixture(scope="module")
def speedup_rows(computed_once):
    return computed_once("gamma_join_speedup_quick",
                         lambda: run_experiment("gamma.join_speedup", quick=True))


def test_speedup_rows_cover_every_placement_and_no_processor_overflows(speedup_rows):
    modeled = [r for r in speedup_rows if r["clock"] == "modeled"]
    curves = {r["row"] for r in modeled if r["metric"] == "response_time"}
    assert curves == {f"joinabprime_{v}_{m}" for v in ("key", "nonkey")
                      for m in ("local", "remote", "allnodes")}
    assert not any(r["value"] for r in modeled if r["metric"] == "overflows")
    speedups = {(r["row"], r["column"]): r["value"] for r in modeled if r["metric"] == "speedup"}
    assert all(speedups[(c, "nodes_2")] == 1.0 for c in curves)  # the paper's reference point
    cell = next(r for r in modeled if r["column"] == "nodes_4_to_8")
    assert cell["reference"] == "Figure 13" and 1.75 / 2 < cell["value"] < 1.75 * 2


@pytest.mark.parametrize("name", ["gamma.remote_not_twice_local",
                                  "gamma.join_attributes_coincide_on_one_processor",
                                  "gamma.join_modes_mirror", "gamma.join_speedup_near_linear"])
def test_placement_findings_the_model_meets(speedup_rows, name):
    assert verdict(speedup_rows, name).status == "pass", verdict(speedup_rows, name).detail


def test_a_gamma_whose_interface_works_alone_breaks_the_mirror(monkeypatch):
    """Local wins on the partitioning attribute only because a VAX that sends a packet cannot
    compute meanwhile (net_cpu_share, Gamma §5.2.1 and §9): with an interface that moves packets
    on its own, offloading the join makes Remote fastest on the key too."""
    broken = dataclasses.replace(_REGISTRY["hardware_profile"]["gamma"], net_cpu_share=0.0)
    monkeypatch.setitem(_REGISTRY["hardware_profile"], "gamma", broken)
    rows = run_experiment("gamma.join_speedup", quick=True, nodes=[2, 4])
    assert verdict(rows, "gamma.join_modes_mirror").status == "fail"


def _speedup_row(row, column, metric, value):
    return {"experiment": "gamma.join_speedup", "clock": "modeled", "row": row, "column": column,
            "metric": metric, "value": value, "parameters": {}}


def test_placement_findings_fail_on_wrong_rows():
    """Rows shaped as the paper describes pass; each finding fails when its property breaks."""
    def rows(local_key=30.0, remote=33.0, nonkey_one=None, slow8=1.0):
        out = []
        for n in (1, 2, 4, 8):
            scale = 2 / n
            for v in ("key", "nonkey"):
                local = 80.0 if n == 1 else (local_key if v == "key" else 44.0) * scale
                allnodes = (local + remote * scale) / 2
                for mode, t in (("local", local), ("remote", remote * scale),
                                ("allnodes", allnodes)):
                    if n == 1 and v == "nonkey" and nonkey_one is not None:
                        t *= nonkey_one
                    if n == 8:
                        t *= slow8
                    out.append(_speedup_row(f"joinabprime_{v}_{mode}", f"nodes_{n}",
                                            "response_time", t))
                    out.append(_speedup_row(f"joinabprime_{v}_{mode}", f"nodes_{n}", "speedup",
                                            {1: 0.5, 2: 1.0, 4: 2.0, 8: 4.0 / slow8}[n]))
        return out

    good = rows()
    for name in ("gamma.join_modes_mirror", "gamma.join_speedup_near_linear",
                 "gamma.remote_not_twice_local", "gamma.join_attributes_coincide_on_one_processor"):
        assert verdict(good, name).status == "pass", (name, verdict(good, name).detail)
    assert verdict(rows(local_key=40.0), "gamma.join_modes_mirror").status == "fail"
    # 4 -> 8 processors gains 2 / 1.3 = 1.54, under the 1.575 the paper's 1.75 gives
    assert verdict(rows(slow8=1.3), "gamma.join_speedup_near_linear").status == "fail"
    assert verdict(rows(local_key=70.0), "gamma.remote_not_twice_local").status == "fail"
    assert verdict(rows(nonkey_one=1.3),
                   "gamma.join_attributes_coincide_on_one_processor").status == "fail"


# -- §6.2.2: memory lowered (Figure 14) -----------------------------------------------------------
@pytest.fixture(scope="module")
def memory_rows(computed_once):
    return computed_once("gamma_join_memory_quick",
                         lambda: run_experiment("gamma.join_memory", quick=True))


def test_memory_rows_show_overflow_growing_as_memory_shrinks(memory_rows):
    modeled = [r for r in memory_rows if r["clock"] == "modeled"]

    def value(metric, row, share):
        return next(r["value"] for r in modeled if r["metric"] == metric and r["row"] == row
                    and r["column"] == f"memory_{share}")

    for placement in ("local", "remote"):
        simple = f"joinabprime_key_simple_hash_{placement}"
        overflows = [value("overflows", simple, s) for s in (100, 60, 35, 20)]
        assert overflows[0] == 0 and overflows == sorted(overflows) and overflows[-1] >= 2
        times = [value("response_time", simple, s) for s in (100, 60, 35, 20)]
        assert times == sorted(times)  # less memory never makes it faster
        grace = f"joinabprime_key_grace_hash_{placement}"
        assert all(value("spill_pages", grace, s) > 0 for s in (100, 60, 35, 20))
        hybrid = f"joinabprime_key_hybrid_hash_{placement}"
        assert value("spill_pages", hybrid, 100) == 0 < value("spill_pages", hybrid, 20)


def test_hybrid_finding_holds(memory_rows):
    v = verdict(memory_rows, "gamma.hybrid_beats_simple_under_overflow")
    assert v.status == "pass", v.detail


def test_crossover_finding_holds(memory_rows):
    v = verdict(memory_rows, "gamma.join_memory_local_remote_cross")
    assert v.status == "pass", v.detail


def test_memory_findings_fail_on_wrong_rows():
    def rows(local_most=30.0, hybrid_least=50.0):
        out = []
        for share, over, scale in ((100, 0, 1.0), (20, 4, 3.0)):
            for algorithm in ("simple_hash", "hybrid_hash"):
                for placement, t in (("local", local_most), ("remote", 33.0)):
                    if share == 20:
                        t = {"local": 100.0, "remote": 90.0}[placement]
                        if algorithm == "hybrid_hash":
                            t = hybrid_least
                    row = f"joinabprime_key_{algorithm}_{placement}"
                    base = {"experiment": "gamma.join_memory", "clock": "modeled", "row": row,
                            "column": f"memory_{share}", "parameters": {}}
                    out += [{**base, "metric": "response_time", "value": t * (scale > 0)},
                            {**base, "metric": "overflows", "value": over}]
        return out

    assert verdict(rows(), "gamma.join_memory_local_remote_cross").status == "pass"
    assert verdict(rows(), "gamma.hybrid_beats_simple_under_overflow").status == "pass"
    assert verdict(rows(local_most=40.0), "gamma.join_memory_local_remote_cross").status == "fail"
    assert verdict(rows(hybrid_least=120.0),
                   "gamma.hybrid_beats_simple_under_overflow").status == "fail"
