"""Gamma §6.2.3 (Figures 15 and 16): joinAselB with disk pages of 2 to 32 KB. Every placement
and attribute yields a curve, nothing overflows (the experiment checks it), and the finding
passes on the model, fails without per-page costs and fails on curves of the wrong shape."""

from __future__ import annotations

import dataclasses

import pytest

from minidb.experiments.findings import check_findings
from minidb.experiments.registry import run_experiment
from minidb.plugins import _REGISTRY, lookup

NAME = "gamma.join_page_size_levels_off"


def verdict(rows):
    return next(r for r in check_findings(rows) if r.name == NAME)


@pytest.fixture(scope="module")
def page_rows(computed_once):
    return computed_once("gamma_join_page_size_quick",
                         lambda: run_experiment("gamma.join_page_size", quick=True))


def test_every_curve_of_figures_15_and_16(page_rows):
    modeled = [r for r in page_rows if r["clock"] == "modeled"]
    curves = {r["row"] for r in modeled}
    assert curves == {f"joinaselb_{v}_{m}" for v in ("key", "nonkey")
                      for m in ("local", "remote", "allnodes")}
    for figure, metric in (("Figure 15", "response_time"), ("Figure 16", "speedup")):
        cells = {(r["row"], r["column"]) for r in modeled
                 if r["reference"] == figure and r["metric"] == metric}
        assert cells == {(c, f"page_{k}kb") for c in curves for k in (2, 4, 8, 16, 32)}
    assert all(r["value"] == 1.0 for r in modeled
               if r["metric"] == "speedup" and r["column"] == "page_2kb")


def test_the_finding_passes_on_the_model(page_rows):
    assert verdict(page_rows).status == "pass", verdict(page_rows).detail


def test_the_finding_fails_without_per_page_costs(monkeypatch):
    """A disk with no time between sequential pages and buffer calls that cost nothing makes
    the page size irrelevant: no doubling saves anything."""
    broken = dataclasses.replace(lookup("hardware_profile", "gamma"), disk_seq_gap_ms=0.0,
                                 instr_buffer_call=0.0)
    monkeypatch.setitem(_REGISTRY["hardware_profile"], "gamma", broken)
    rows = run_experiment("gamma.join_page_size", scale=0.1)
    assert verdict(rows).status == "fail", verdict(rows).detail


def test_the_finding_fails_on_curves_of_the_wrong_shape(page_rows):
    def reshaped(times):
        return [dict(r, value=times[r["column"]]) if r["metric"] == "response_time"
                and r["clock"] == "modeled" else r for r in page_rows]
    # still gaining as much from 16 to 32 KB as from 2 to 4 KB: it never levels off
    steady = {"page_2kb": 32.0, "page_4kb": 16.0, "page_8kb": 8.0, "page_16kb": 4.0,
              "page_32kb": 2.0}
    assert verdict(reshaped(steady)).status == "fail"
    # bigger pages slower
    worse = {"page_2kb": 10.0, "page_4kb": 11.0, "page_8kb": 12.0, "page_16kb": 13.0,
             "page_32kb": 14.0}
    assert verdict(reshaped(worse)).status == "fail"
    shaped = {"page_2kb": 60.0, "page_4kb": 40.0, "page_8kb": 33.0, "page_16kb": 30.0,
              "page_32kb": 29.5}
    assert verdict(reshaped(shaped)).status == "pass"
