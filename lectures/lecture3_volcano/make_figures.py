"""Regenerate the figures of Lecture 3 (Volcano) from minidb runs, on the modeled clock.

    .venv/bin/python lectures/lecture3_volcano/make_figures.py                 # paper's size, ~3 min
    .venv/bin/python lectures/lecture3_volcano/make_figures.py --scale 0.05 --disks 2,4 --out /tmp/f
    MINIDB_LECTURE_SCALE=0.05 .venv/bin/python lectures/lecture3_volcano/make_figures.py --disks 2,4

Every minidb number drawn comes from eight experiments of ``minidb.experiments.volcano``
(``run_experiment``): a real parallel sort of ``scale`` x 1,000,000 records of 100 bytes whose
counters (buffer calls per pool, clusters read and written, bytes over the bus) are priced on the
``sequent`` profile by ``minidb.cost.volcano_model``. As in the paper, the steps before §6.2 run
with processes free to move between CPUs (each wake-up on another CPU refills its cache over the
bus); Table IV's second row and Table V run with each process bound to its CPU. The paper's
numbers (open diamonds, hatched bars) are read from ``datasets/reference/volcano_*.csv``; at a
scale other than 1 they are multiplied by the scale so that the two stay on one axis (a rough
comparison only: the paper's numbers belong to the full size).

A sort needs three clusters of sort space per process (two merge inputs and an output). With the
paper's 12 MB at a small scale, 32 KB clusters no longer fit on many disks: the script keeps, for
each experiment, the disk counts (and cluster sizes) that fit and says which it dropped, so a
small run uses fewer disks (``--disks 2,4`` at scale 0.05).

The script prints every number the lecture quotes, the counters that explain them, where the
slowest process spends its time at each tuning step, and the Volcano findings checked on the rows
it ran. The PNGs are small (100 dpi) so they can be committed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from minidb.cost.profiles import get_profile  # noqa: E402
from minidb.cost.volcano_model import price  # noqa: E402
from minidb.experiments import run_experiment  # noqa: E402
from minidb.experiments.findings import check_findings  # noqa: E402
from minidb.experiments.volcano import (  # noqa: E402
    FINAL,
    INITIAL,
    KB,
    SORT_SPACE,
    STAGGER,
    TUNED_IO,
    UNFIX_SCHEMES,
)
from minidb.results import load_reference  # noqa: E402
from minidb.volcano.records import Layout  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 100
FIGURES = ("initial.png", "data_access.png", "unfix.png", "pools.png", "steps.png", "final.png")
SCALE_ENV = "MINIDB_LECTURE_SCALE"
DISKS = (2, 4, 8, 12, 16)
CLUSTER_KB = (4, 8, 16, 32, 64)
POOLS = (1, 2, 4, 8, 16)
PAPER_STYLE = {"marker": "D", "linestyle": "none", "markerfacecolor": "none", "color": "black"}


# --------------------------------------------------------------------------------------------
# Running the experiments


def fits(scale: float, disks: int, cluster_kb: int, memory: float = 1.0) -> bool:
    """Whether each of ``disks`` processes gets at least three clusters of sort space (the
    check ``SortSetup`` makes), with the experiments' 12 MB x ``memory`` x ``scale``."""
    space = round(SORT_SPACE * memory * scale)
    return space // disks // (cluster_kb * KB) >= 3


def plan(scale: float, disks: list[int]) -> dict:
    """The disk counts and cluster sizes each experiment runs with at this scale."""
    four = [d for d in disks if fits(scale, d, 4)]
    big = [d for d in disks if fits(scale, d, 32)]
    if not big:
        raise SystemExit(f"at scale {scale:g} no disk count of {disks} leaves three 32 KB "
                         "clusters of sort space per process: use fewer disks or a larger scale")
    pair = [8, 16] if {8, 16} <= set(big) else big[-2:]
    kbs = [k for k in CLUSTER_KB if all(fits(scale, d, k) for d in pair)]
    dropped = sorted(set(disks) - set(big))
    if dropped:
        print(f"scale {scale:g}: {dropped} disk(s) leave under three 32 KB clusters of sort "
              f"space per process; the 32 KB experiments run on {big}")
    if len(kbs) < len(CLUSTER_KB):
        print(f"scale {scale:g}: cluster sizes {sorted(set(CLUSTER_KB) - set(kbs))} KB do not "
              f"fit on {pair} disks; Figure 2's sweep runs {kbs} KB")
    return {"four": four, "big": big, "pair": pair, "kbs": kbs, "top": pair[-1]}


def run_all(scale: float, seed: int, where: dict) -> dict[str, list[dict]]:
    """The eight experiments (sorts shared between them are run once: the experiments keep
    each configuration's counts)."""
    common = {"scale": scale, "seed": seed}
    pair = where["pair"]
    runs = {
        "initial": ("volcano.initial", {"disks": where["four"]}),
        "clusters": ("volcano.clusters", {"disks": pair, "cluster_kb": where["kbs"]}),
        "buffer_size": ("volcano.buffer_size", {"disks": pair}),
        "unfix": ("volcano.unfix", {"disks": pair}),
        "pools_simple": ("volcano.pools_simple", {"disks": [where["top"]], "pools": list(POOLS)}),
        "pools": ("volcano.pools", {"disks": pair, "pools": [1, 2]}),
        "affinity": ("volcano.affinity", {"disks": pair}),
        "final": ("volcano.final", {"disks": where["big"], "initial_disks": where["four"]}),
    }
    rows = {}
    for key, (name, overrides) in runs.items():
        start = time.perf_counter()
        rows[key] = run_experiment(name, **common, **overrides)
        print(f"ran {name} in {time.perf_counter() - start:.1f} s (wall)")
    return rows


def table(rows: list[dict]) -> dict[tuple[str, int, str], float]:
    """(row, disks, metric) -> modeled value, for the rows of one run at one disk count."""
    out: dict[tuple[str, int, str], float] = {}
    for r in rows:
        d = r["parameters"].get("disks")
        if r["clock"] == "modeled" and isinstance(d, int):
            out.setdefault((r["row"], d, r["metric"]), r["value"])
    return out


def slowest_process(scale: float, seed: int, disks: int, config: dict,
                    bound: bool = False) -> dict[str, float]:
    """Where the slowest process of one configuration spends its time; ``bound``: processes
    bound to their CPUs (§6.2), so no cache refills. The sort comes from the experiments' own
    cache (``minidb.experiments.volcano``), so nothing is sorted twice."""
    from minidb.experiments.volcano import counted_sort

    run = counted_sort(disks, scale, seed, **config)
    timing = price(run, get_profile("sequent"), affinity=bound)
    return max(timing.per_process, key=lambda r: r["elapsed_s"])


def alignment_at_first(scale: float, seed: int, disks: int) -> dict[int, dict[str, float]]:
    """§4.2 / Figure 3 on the model: 32 KB clusters, one pool, one unfix per record, records
    aligned to 1, 4 and 16 bytes (the 16-byte run is the experiments' tuned-I/O setup)."""
    from minidb.experiments.volcano import counted_sort

    out = {}
    for alignment in (1, 4, 16):
        run = counted_sort(disks, scale, seed, **{**TUNED_IO, "alignment": alignment})
        timing = price(run, get_profile("sequent"))
        out[alignment] = {"elapsed": timing.elapsed_s,
                          "clusters": sum(w.clusters_read_sequential + w.clusters_written_sequential
                                          + w.clusters_read_random for w in run.work),
                          "bus_mb": run.total().bus_bytes / 1e6}
    return out


# --------------------------------------------------------------------------------------------
# The paper's numbers


def paper_cells() -> dict[tuple[str, str, str, str], float]:
    """(reference, row, column, metric) -> the paper's value, for every cell with a number."""
    return {(c["reference"], c["row"], c["column"], c["metric"]): c["value"]
            for c in load_reference("volcano").to_pylist() if c["value"] is not None}


def paper_steps(paper: dict, disks: int) -> list[float | None]:
    """The paper's time for each tuning step of ``STEPS`` at ``disks`` (None: not published)."""
    def cell(ref, row, col, metric="elapsed"):
        return paper.get((ref, row, col, metric))

    initial = {8: cell("Figure 1", "sort_initial", "disks_8"), 2: cell("Figure 1", "sort_initial",
                                                                      "disks_2"),
               16: cell("Section 7", "sort_initial", "disks_16")}.get(disks)
    larger = cell("Figure 2", "cluster_larger", "curve", "elapsed_floor") if disks == 16 else None
    return [initial, larger,
            cell("Table II", "simple", f"disks_{disks}_time"),
            cell("Table II", "macro_1", f"disks_{disks}_time"),
            cell("Table III", "pools_2", f"disks_{disks}_time"),
            cell("Table IV", "affinity_off", f"disks_{disks}"),
            cell("Table IV", "affinity_on", f"disks_{disks}"),
            cell("Table V", "align_4_bytes", f"disks_{disks}")]


STEPS = ("initial\n4 KB", "32 KB\nclusters", "16-byte\nalignment", "grouped\nunfix",
         "two\npools", "staggered\nflushes", "bound to\nCPUs", "4-byte\nalignment")
STEP_CONFIGS = (  # (sort configuration, processes bound to their CPUs)
    (INITIAL, False), ({**INITIAL, "cluster_bytes": 32 * KB}, False), (TUNED_IO, False),
    ({**TUNED_IO, "unfix": "macro_1"}, False), ({**TUNED_IO, "unfix": "macro_1", "pools": 2}, False),
    ({**STAGGER, "flush_stagger_ms": 2.0}, False), ({**STAGGER, "flush_stagger_ms": 2.0}, True),
    (FINAL, True))


def model_steps(t: dict[str, dict], disks: int) -> list[float | None]:
    """minidb's time for each tuning step. The staggered step is Table IV's unbound run of
    ``volcano.affinity`` (2 ms delays; in ``price`` the flush is left out, so it is the two-pool
    run's time), the bound step its bound run, which is also Table V's 16-byte run."""
    return [t["initial"].get(("sort_initial", disks, "elapsed")),
            t["clusters"].get(("cluster_32kb", disks, "elapsed")),
            t["unfix"].get(("simple", disks, "elapsed")),
            t["unfix"].get(("macro_1", disks, "elapsed")),
            t["pools"].get(("pools_2", disks, "elapsed")),
            t["affinity"].get(("affinity_off", disks, "elapsed")),
            t["affinity"].get(("affinity_on", disks, "elapsed")),
            t["final"].get(("align_4_bytes", disks, "elapsed"))]


# --------------------------------------------------------------------------------------------
# Figures


def _plain_log(ax, axis: str = "y") -> None:
    """A log axis labelled 30, 100, 300 rather than 3 x 10^1."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(v)[0] in "1235"
                                             else ""))


def _paper_label(scale: float, text: str = "paper") -> str:
    return text if scale == 1.0 else f"{text} (x {scale:g})"


def initial_figure(t: dict, paper: dict, scale: float, out: Path) -> None:
    """Figures 1 and 4: the initial software's time, its lock-hold floor, the lock shares."""
    disks = sorted({d for (row, d, m) in t if row == "sort_initial" and m == "elapsed"})
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    left.plot(disks, [t[("sort_initial", d, "elapsed")] for d in disks], marker="o",
              label="minidb: elapsed")
    left.plot(disks, [t[("sort_initial", d, "lock_hold_time")] for d in disks], marker="s",
              linestyle="--", label="minidb: pool lock held, all processes (a floor)")
    points = [(d, paper[("Figure 1", "sort_initial", f"disks_{d}", "elapsed")]) for d in (2, 8)]
    left.plot([d for d, _ in points], [v * scale for _, v in points], **PAPER_STYLE,
              label=_paper_label(scale, "paper: Figure 1 (§3.3)"))
    barrier = paper[("Figure 1", "sort_initial", "curve", "elapsed_floor")] * scale
    left.axhline(barrier, color="grey", linestyle=":", label="paper: the 5-minute barrier")
    low = paper[("Figure 4", "buffer_pool_lock", "range_low", "total_lock_hold_time")] * scale
    high = paper[("Figure 4", "buffer_pool_lock", "range_high", "total_lock_hold_time")] * scale
    left.axhspan(low, high, color="tab:orange", alpha=0.15,
                 label="paper: lock held 150-180 s in all (§5)")
    left.set(xlabel="disks = processes", ylabel="seconds (modeled)", yscale="log",
             title="initial software: 4 KB clusters, one pool, simple unfix")
    left.set_xticks(disks)
    _plain_log(left)
    left.legend(fontsize=7)
    left.grid(True, alpha=0.3)
    right.plot(disks, [100 * t[("sort_initial", d, "lock_hold_share")] for d in disks],
               marker="s", label="holding the pool lock")
    right.plot(disks, [100 * t[("sort_initial", d, "lock_wait_share")] for d in disks],
               marker="^", label="waiting for it")
    right.set(xlabel="disks = processes", ylabel="% of elapsed time, mean process",
              title="Figure 4's right scale, on the model")
    right.set_xticks(disks)
    right.legend(fontsize=8)
    right.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "initial.png", dpi=DPI)
    plt.close(fig)


def data_access_figure(t: dict, paper: dict, aligned: dict, where: dict, scale: float,
                       out: Path) -> None:
    """§4: larger clusters (Figure 2), alignment at first (Figure 3), twice the memory (Table I)."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    ax = axes[0]
    kbs = where["kbs"]
    for d in where["pair"]:
        ax.plot(kbs, [t["clusters"][(f"cluster_{k}kb", d, "elapsed")] for k in kbs], marker="o",
                label=f"minidb, {d} disks")
    for key, label in (("cluster_4kb", "paper: limit with 4 KB"),
                       ("cluster_larger", "paper: limit with larger")):
        ax.axhline(paper[("Figure 2", key, "curve", "elapsed_floor")] * scale, linestyle=":",
                   color="grey" if key == "cluster_4kb" else "black", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(kbs)
    ax.set_xticklabels([str(k) for k in kbs])
    ax.set(xlabel="cluster (KB)", ylabel="seconds (modeled)", title="Figure 2: larger clusters")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)

    ax = axes[1]
    aligns = sorted(aligned)
    ax.bar([str(a) for a in aligns], [aligned[a]["elapsed"] for a in aligns], color="tab:blue")
    for i, a in enumerate(aligns):
        per = Layout(32 * KB, a).records_per_cluster
        ax.annotate(f"{per} rec.\nper cluster", (i, aligned[a]["elapsed"]), ha="center",
                    va="bottom", fontsize=7)
    ax.set(xlabel="record alignment (bytes)", ylabel="seconds (modeled)",
           title=f"Figure 3 on the model, {where['top']} disks\n(paper: no appreciable "
                 "difference)")
    ax.set_ylim(0, max(v["elapsed"] for v in aligned.values()) * 1.25)

    ax = axes[2]
    labels = ["12 MB sort space", "24 MB sort space"]
    width = 0.2
    for i, d in enumerate(where["pair"]):
        model = [t["buffer_size"][(row, d, "elapsed")] for row in
                 ("sort12_io3_work15_mb", "sort24_io6_work30_mb")]
        published = [paper.get(("Table I", row, f"disks_{d}", "elapsed")) for row in
                     ("sort12_io3_work15_mb", "sort24_io6_work30_mb")]
        xs = np.arange(2) + (2 * i - 1.5) * width
        ax.bar(xs, model, width, label=f"minidb, {d} disks", color=f"C{i}")
        if all(v is not None for v in published):
            ax.bar(xs + width, [v * scale for v in published], width, color=f"C{i}", alpha=0.35,
                   hatch="//", label=_paper_label(scale, f"paper, {d} disks"))
    ax.set_xticks(np.arange(2))
    ax.set_xticklabels(labels)
    ax.set(ylabel="seconds (modeled)", title="Table I: twice the memory")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "data_access.png", dpi=DPI)
    plt.close(fig)


def _grouped_bars(ax, categories: list[str], series: list[tuple[str, list, dict]]) -> None:
    width = 0.8 / len(series)
    for i, (label, values, style) in enumerate(series):
        if all(v is None for v in values):
            continue
        xs = np.arange(len(categories)) + (i - (len(series) - 1) / 2) * width
        ys = [np.nan if v is None else v for v in values]
        ax.bar(xs, ys, width, label=label, **style)
    ax.set_xticks(np.arange(len(categories)))
    ax.set_xticklabels(categories, fontsize=8)


def unfix_figure(t: dict, paper: dict, where: dict, scale: float, out: Path) -> None:
    """Table II: time, total lock hold and total wait for the five unfix schemes."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    names = [s.replace("_", " [") + "]" if "_" in s else s for s in UNFIX_SCHEMES]
    for ax, metric, column, title, log in (
            (axes[0], "elapsed", "time", "elapsed", False),
            (axes[1], "lock_hold_time", "total_lock", "pool lock held (sum over processes)", True),
            (axes[2], "lock_wait_time", "total_wait", "waiting for it (sum)", True)):
        series = []
        for i, d in enumerate(where["pair"]):
            series.append((f"minidb, {d} disks",
                           [t[(s, d, metric)] for s in UNFIX_SCHEMES], {"color": f"C{i}"}))
            published = [paper.get(("Table II", s, f"disks_{d}_{column}", metric))
                         for s in UNFIX_SCHEMES]
            series.append((_paper_label(scale, f"paper, {d} disks"),
                           [None if v is None else v * scale for v in published],
                           {"color": f"C{i}", "alpha": 0.35, "hatch": "//"}))
        _grouped_bars(ax, names, series)
        ax.set(ylabel="seconds (modeled)", title=f"Table II: {title}")
        if log:
            ax.set_yscale("log")
            _plain_log(ax)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "unfix.png", dpi=DPI)
    plt.close(fig)


def pools_figure(t: dict, paper: dict, where: dict, scale: float, out: Path) -> None:
    """Figure 5 (1-16 pools, one unfix call per record) and Table III (grouped, 1 or 2 pools)."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    ax = axes[0]
    top = where["top"]
    counts = sorted({int(r.split("_")[1]) for (r, d, m) in t["pools_simple"] if d == top})
    for metric, label, marker in (("elapsed", "elapsed", "o"),
                                  ("lock_hold_time", "lock held (sum)", "s"),
                                  ("lock_wait_time", "lock waited for (sum)", "^")):
        ax.plot(counts, [t["pools_simple"][(f"pools_{k}", top, metric)] for k in counts],
                marker=marker, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts)
    ax.set_xticklabels([str(k) for k in counts])
    ax.set(xlabel="buffer pools", ylabel="seconds (modeled)", yscale="log",
           title=f"Figure 5 on the model: simple unfix, {top} disks")
    _plain_log(ax)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    for ax, metric, column, title in ((axes[1], "elapsed", "time", "elapsed"),
                                      (axes[2], "lock_wait_time", "total_wait",
                                       "lock waited for (sum)")):
        series = []
        for i, d in enumerate(where["pair"]):
            series.append((f"minidb, {d} disks", [t["pools"][(f"pools_{k}", d, metric)]
                                                  for k in (1, 2)], {"color": f"C{i}"}))
            published = [paper.get(("Table III", f"pools_{k}", f"disks_{d}_{column}", metric))
                         for k in (1, 2)]
            series.append((_paper_label(scale, f"paper, {d} disks"),
                           [None if v is None else v * scale for v in published],
                           {"color": f"C{i}", "alpha": 0.35, "hatch": "//"}))
        _grouped_bars(ax, ["one pool", "two pools"], series)
        ax.set(ylabel="seconds (modeled)", title=f"Table III (macro [1]): {title}")
        ax.grid(True, axis="y", alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "pools.png", dpi=DPI)
    plt.close(fig)


PARTS = (("own_s", "own CPU and disk arm"), ("channel_s", "disk channel"), ("bus_s", "bus"),
         ("lock_hold_s", "holding a pool lock"), ("lock_wait_s", "waiting for a pool lock"))


def steps_figure(t: dict, paper: dict, breakdown: list[dict], where: dict, scale: float,
                 out: Path) -> None:
    """The tuning story at the largest disk count: minidb and paper, and where the slowest
    process's time goes at each step."""
    top = where["top"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 3.9))
    published = paper_steps(paper, top)
    _grouped_bars(left, list(STEPS), [
        ("minidb", model_steps(t, top), {"color": "C0"}),
        (_paper_label(scale), [None if v is None else v * scale for v in published],
         {"color": "C0", "alpha": 0.35, "hatch": "//"})])
    left.set(ylabel="seconds (modeled)", title=f"the tuning steps, {top} disks "
             "(paper's first two bars: bounds read from the text)")
    left.legend(fontsize=8)
    left.grid(True, axis="y", alpha=0.3)
    bottom = np.zeros(len(STEPS))
    for key, label in PARTS:
        values = np.array([b[key] for b in breakdown])
        right.bar(np.arange(len(STEPS)), values, 0.6, bottom=bottom, label=label)
        bottom += values
    right.set_xticks(np.arange(len(STEPS)))
    right.set_xticklabels(STEPS, fontsize=8)
    right.set(ylabel="seconds (modeled)", title=f"where the slowest of {top} processes spends "
              "its time")
    right.legend(fontsize=7)
    right.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "steps.png", dpi=DPI)
    plt.close(fig)


def final_figure(t: dict, paper: dict, scale: float, out: Path) -> None:
    """Table V and Figure 7: the tuned sort on 2-16 disks beside the initial one."""
    f = t["final"]
    final_disks = sorted({d for (r, d, m) in f if r == "align_4_bytes" and m == "elapsed"})
    initial_disks = sorted({d for (r, d, m) in f if r == "sort_initial" and m == "elapsed"})
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    curves = {"initial software": ("sort_initial", initial_disks, "C3"),
              "final, 16-byte alignment": ("align_16_bytes", final_disks, "C1"),
              "final, 4-byte alignment": ("align_4_bytes", final_disks, "C0")}
    for label, (row, disks, color) in curves.items():
        times = [f[(row, d, "elapsed")] for d in disks]
        left.plot(disks, times, marker="o", color=color, label=f"minidb: {label}")
        if row != "align_16_bytes" and disks and disks[0] == min(DISKS):
            right.plot(disks, [times[0] / x for x in times], marker="o", color=color,
                       label=f"minidb: {label}")
    for row, color in (("align_16_bytes", "C1"), ("align_4_bytes", "C0")):
        points = [(d, paper[("Table V", row, f"disks_{d}", "elapsed")]) for d in DISKS]
        left.plot([d for d, _ in points], [v * scale for _, v in points],
                  **{**PAPER_STYLE, "color": color})
        if row == "align_4_bytes":
            right.plot([d for d, _ in points], [points[0][1] / v for _, v in points],
                       **{**PAPER_STYLE, "color": color}, label="paper: Table V, 4 bytes")
    first = [(2, paper[("Figure 1", "sort_initial", "disks_2", "elapsed")]),
             (8, paper[("Figure 1", "sort_initial", "disks_8", "elapsed")])]
    left.plot([d for d, _ in first], [v * scale for _, v in first],
              **{**PAPER_STYLE, "color": "C3"}, label=_paper_label(scale, "paper (diamonds)"))
    left.plot([16], [paper[("Section 7", "sort_initial", "disks_16", "elapsed")] * scale],
              marker="^", linestyle="none", markerfacecolor="none", color="C3",
              label="paper: initial at 16, above this")
    right.plot([d for d, _ in first], [first[0][1] / v for _, v in first],
               **{**PAPER_STYLE, "color": "C3"}, label="paper: Figure 1")
    left.set(xlabel="disks = processes", ylabel="seconds (modeled)", yscale="log",
             title="Table V and Figure 7: times")
    _plain_log(left)
    left.legend(fontsize=7)
    left.grid(True, alpha=0.3)
    right.plot(DISKS, [d / 2 for d in DISKS], linestyle=":", color="grey", label="ideal")
    right.set(xlabel="disks = processes", ylabel="speedup over 2 disks",
              title="Figure 7: speedup")
    right.legend(fontsize=7)
    right.grid(True, alpha=0.3)
    for ax in (left, right):
        ax.set_xticks(DISKS)
    fig.tight_layout()
    fig.savefig(out / "final.png", dpi=DPI)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# What the lecture quotes


def _counters(t: dict, row: str, d: int) -> str:
    return (f"unfix calls {t[(row, d, 'unfix_calls')]:,.0f}, cluster calls "
            f"{t[(row, d, 'cluster_calls')]:,.0f}, merge levels "
            f"{t[(row, d, 'merge_levels')]:.0f}, bus {t[(row, d, 'bus_bytes')] / 1e6:,.0f} MB")


def _run_line(t: dict, row: str, d: int, published: float | None = None) -> str:
    paper_text = "" if published is None else f" (paper {published:g} s)"
    return (f"  {row} {d} disks: {t[(row, d, 'elapsed')]:.1f} s{paper_text}; lock held "
            f"{t[(row, d, 'lock_hold_time')]:.2f} s, waited {t[(row, d, 'lock_wait_time')]:.2f} s;"
            f" {_counters(t, row, d)}")


def report(t: dict, paper: dict, aligned: dict, breakdown: list[dict], where: dict,
           records: int) -> None:
    """Print the numbers the lecture quotes, each beside the paper's where it has one."""
    pair, top = where["pair"], where["top"]
    i = t["initial"]
    print(f"\n== initial software ({records:,} records; 4 KB clusters, packed records, one pool, "
          "simple unfix)")
    for d in where["four"]:
        print(_run_line(i, "sort_initial", d,
                        paper.get(("Figure 1", "sort_initial", f"disks_{d}", "elapsed"))))
    if 2 in where["four"] and 8 in where["four"]:
        eff = 100 * 2 * i[("sort_initial", 2, "elapsed")] / (8 * i[("sort_initial", 8, "elapsed")])
        print(f"  parallel efficiency 2 -> 8 disks: {eff:.1f}% (paper 88.78%)")
    if 8 in where["four"] and 16 in where["four"]:
        print(f"  initial software, 8 -> 16 disks: speedup "
              f"{i[('sort_initial', 8, 'elapsed')] / i[('sort_initial', 16, 'elapsed')]:.2f} "
              f"(paper: at most 379 / 300 = {379 / 300:.2f})")
        w8, w16 = i[("sort_initial", 8, "lock_wait_time")], i[("sort_initial", 16, "lock_wait_time")]
        print(f"  lock wait 8 -> 16 disks: x{w16 / w8:.2f} (paper, Table II simple: "
              f"x{2062 / 452:.2f})")
        kbs = records * 100 / i[("sort_initial", 16, "elapsed")] / 1e3
        print(f"  throughput at 16 disks: {kbs:.0f} KB/s (paper 323 KB/s)")

    c = t["clusters"]
    print("\n== larger clusters (Figure 2; packed records, simple unfix)")
    for d in pair:
        print(f"  {d} disks: " + ", ".join(f"{k} KB {c[(f'cluster_{k}kb', d, 'elapsed')]:.1f} s"
                                           for k in where["kbs"]))
        for k in (where["kbs"][0], where["kbs"][-1]):
            print(f"    {k} KB: {_counters(c, f'cluster_{k}kb', d)}")

    print(f"\n== alignment at first (Figure 3; 32 KB clusters, simple unfix, {top} disks)")
    for a, v in sorted(aligned.items()):
        print(f"  {a:>2}-byte: {v['elapsed']:.1f} s, {Layout(32 * KB, a).records_per_cluster} "
              f"records per 32 KB cluster, {v['clusters']:,} clusters moved, bus "
              f"{v['bus_mb']:,.0f} MB")
    print(f"  16 over 1 byte: {100 * (aligned[16]['elapsed'] / aligned[1]['elapsed'] - 1):+.1f}% "
          "(paper: no appreciable difference)")

    b = t["buffer_size"]
    print("\n== twice the memory (Table I; 32 KB clusters, 16-byte alignment, simple unfix)")
    for d in pair:
        small = b[("sort12_io3_work15_mb", d, "elapsed")]
        big = b[("sort24_io6_work30_mb", d, "elapsed")]
        p_small = paper.get(("Table I", "sort12_io3_work15_mb", f"disks_{d}", "elapsed"))
        p_big = paper.get(("Table I", "sort24_io6_work30_mb", f"disks_{d}", "elapsed"))
        ratio = "" if p_small is None else f" (paper {p_small:g} -> {p_big:g} s, x{p_big / p_small:.3f})"
        print(f"  {d} disks: {small:.1f} -> {big:.1f} s, x{big / small:.3f}{ratio}; merge levels "
              f"{b[('sort12_io3_work15_mb', d, 'merge_levels')]:.0f} -> "
              f"{b[('sort24_io6_work30_mb', d, 'merge_levels')]:.0f}")

    u = t["unfix"]
    print("\n== unfix schemes (Table II; 32 KB clusters, 16-byte alignment, one pool)")
    for s in UNFIX_SCHEMES:
        for d in pair:
            pt = paper.get(("Table II", s, f"disks_{d}_time", "elapsed"))
            ph = paper.get(("Table II", s, f"disks_{d}_total_lock", "lock_hold_time"))
            pw = paper.get(("Table II", s, f"disks_{d}_total_wait", "lock_wait_time"))
            published = "" if pt is None else f" | paper {pt:g} s, held {ph:g}, waited {pw:g}"
            print(f"  {s:<12} {d:>2} disks: {u[(s, d, 'elapsed')]:7.1f} s, held "
                  f"{u[(s, d, 'lock_hold_time')]:7.3f}, waited {u[(s, d, 'lock_wait_time')]:8.3f}"
                  f"{published}; unfix calls {u[(s, d, 'unfix_calls')]:,.0f}, cluster calls "
                  f"{u[(s, d, 'cluster_calls')]:,.0f}")
    if set(pair) == {8, 16}:
        print(f"  simple / procedure [1] at 16 disks: x"
              f"{u[('simple', 16, 'elapsed')] / u[('procedure_1', 16, 'elapsed')]:.2f} (paper x"
              f"{242.62 / 93.69:.2f}); procedure [1] 8 -> 16 disks: x"
              f"{u[('procedure_1', 8, 'elapsed')] / u[('procedure_1', 16, 'elapsed')]:.2f} "
              f"(paper x{168.00 / 93.69:.2f})")

    ps = t["pools_simple"]
    print(f"\n== pools with simple unfix (Figure 5; {top} disks)")
    for k in POOLS:
        if (f"pools_{k}", top, "elapsed") in ps:
            print(f"  {k:>2} pools: {ps[(f'pools_{k}', top, 'elapsed')]:.1f} s, held "
                  f"{ps[(f'pools_{k}', top, 'lock_hold_time')]:.1f} s, waited "
                  f"{ps[(f'pools_{k}', top, 'lock_wait_time')]:.1f} s")

    p = t["pools"]
    print("\n== grouped unfix with one and two pools (Table III; macro [1])")
    for k in (1, 2):
        for d in pair:
            pt = paper.get(("Table III", f"pools_{k}", f"disks_{d}_time", "elapsed"))
            pw = paper.get(("Table III", f"pools_{k}", f"disks_{d}_total_wait", "lock_wait_time"))
            published = "" if pt is None else f" | paper {pt:g} s, waited {pw:g}"
            print(f"  {k} pool(s) {d:>2} disks: {p[(f'pools_{k}', d, 'elapsed')]:.2f} s, held "
                  f"{p[(f'pools_{k}', d, 'lock_hold_time')]:.3f}, waited "
                  f"{p[(f'pools_{k}', d, 'lock_wait_time')]:.3f}{published}")

    a = t["affinity"]
    cache = get_profile("sequent").cpu_cache_bytes
    print("\n== processor affinity (Table IV; two pools, macro [1], 16-byte alignment, flushes "
          "staggered by 2 ms)")
    for d in pair:
        off, on = a[("affinity_off", d, "elapsed")], a[("affinity_on", d, "elapsed")]
        p_off = paper.get(("Table IV", "affinity_off", f"disks_{d}", "elapsed"))
        p_on = paper.get(("Table IV", "affinity_on", f"disks_{d}", "elapsed"))
        published = "" if p_off is None else f" (paper {p_off:g} -> {p_on:g} s, x{p_off / p_on:.4f})"
        print(f"  {d:>2} disks: unbound {off:.2f} s, bound {on:.2f} s, x{off / on:.4f}{published}; "
              f"cache refills unbound {a[('affinity_off', d, 'cache_refills')]:,.0f} "
              f"({a[('affinity_off', d, 'cache_refills')] * cache / 1e6:,.0f} MB over the bus),"
              f" bound {a[('affinity_on', d, 'cache_refills')]:,.0f}")

    f = t["final"]
    print("\n== final (Table V, §7, Figure 7; 32 KB clusters, macro [1], two pools)")
    for row in ("align_16_bytes", "align_4_bytes"):
        print(f"  {row}: " + ", ".join(
            f"{d}: {f[(row, d, 'elapsed')]:.1f} s (paper "
            f"{paper.get(('Table V', row, f'disks_{d}', 'elapsed'), float('nan')):g})"
            for d in where["big"]))
    gains = [100 * (f[("align_16_bytes", d, "elapsed")] - f[("align_4_bytes", d, "elapsed")])
             / f[("align_16_bytes", d, "elapsed")] for d in where["big"]]
    print(f"  4-byte over 16-byte: {np.mean(gains):.1f}% on average (paper: close to 5%)")
    for d in where["big"]:
        print("  " + _run_line(f, "align_4_bytes", d).strip())
    lo, hi = where["big"][0], where["big"][-1]
    t_lo, t_hi = f[("align_4_bytes", lo, "elapsed")], f[("align_4_bytes", hi, "elapsed")]
    print(f"  parallel efficiency {lo} -> {hi} disks: {100 * lo * t_lo / (hi * t_hi):.1f}% "
          "(paper, 2 -> 16: 93.15%)")
    mb = records * 100 / 1e6
    print(f"  at {hi} disks: {t_hi:.1f} s, {mb / t_hi:.2f} MB/s (paper 83.66 s, over 1.1 MB/s); "
          f"disk bandwidth used {100 * 4 * mb / t_hi / hi / 1.8:.1f}% (paper 16.6%), bus "
          f"{100 * 7 * mb / t_hi / 53:.1f}% (paper 15.8%)")
    for d in where["four"]:
        if (d in where["big"]):
            gain = f[("sort_initial", d, "elapsed")] / f[("align_4_bytes", d, "elapsed")]
            published = {2: 1346 / 623.42, 8: 379 / 158.12, 16: 3.6}.get(d)
            note = "" if published is None else f" (paper x{published:.2f})"
            print(f"  tuning gain at {d} disks: x{gain:.2f}{note}")

    print(f"\n== the tuning steps at {top} disks: minidb | paper | slowest process (s): own, "
          "channel, bus, lock held, lock waited")
    for name, model, published, part in zip(STEPS, model_steps(t, top), paper_steps(paper, top),
                                            breakdown, strict=True):
        shown = "-" if model is None else f"{model:.1f}"
        quoted = "-" if published is None else f"{published:g}"
        print(f"  {name.replace(chr(10), ' '):<22} {shown:>7} | {quoted:>7} | "
              + ", ".join(f"{part[k]:.1f}" for k, _ in PARTS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=float(os.environ.get(SCALE_ENV, "1.0")),
                        help="records and memory as a fraction of the paper's 1,000,000 records "
                             f"and 12 MB (default: ${SCALE_ENV} or 1.0)")
    parser.add_argument("--disks", default=",".join(str(d) for d in DISKS),
                        help="disk counts (= processes), comma-separated, within 2-16")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=HERE / "figures",
                        help="directory for the PNGs (created if missing)")
    parser.add_argument("--rows", type=Path, help="also write every experiment row (JSON) here")
    args = parser.parse_args(argv)
    disks = sorted({int(d) for d in args.disks.split(",")})
    if not 0 < args.scale <= 1:
        parser.error("--scale must lie in (0, 1]")
    if any(d < 2 or d > 16 for d in disks):
        parser.error("--disks must lie within 2-16 (the Sequent's 16 disks; speedup is "
                     "measured from 2)")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    where = plan(args.scale, disks)
    rows = run_all(args.scale, args.seed, where)
    t = {key: table(r) for key, r in rows.items()}
    paper = paper_cells()
    aligned = alignment_at_first(args.scale, args.seed, where["top"])
    breakdown = [slowest_process(args.scale, args.seed, where["top"], config, bound)
                 for config, bound in STEP_CONFIGS]
    records = max(1000, round(1_000_000 * args.scale))

    initial_figure(t["initial"], paper, args.scale, out)
    data_access_figure(t, paper, aligned, where, args.scale, out)
    unfix_figure(t["unfix"], paper, where, args.scale, out)
    pools_figure(t, paper, where, args.scale, out)
    steps_figure(t, paper, breakdown, where, args.scale, out)
    final_figure(t, paper, args.scale, out)
    report(t, paper, aligned, breakdown, where, records)

    every = [r for key in rows for r in rows[key]]
    print("\n== Volcano findings on these rows")
    for result in check_findings(every, "volcano"):
        print(f"  {result.status.upper():<12} {result.name}: {result.detail}")
    if args.rows:
        args.rows.write_text(json.dumps(every, indent=1, default=str))
    print(f"\nfigures for {records:,} records written to {out}: {', '.join(FIGURES)} "
          f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
