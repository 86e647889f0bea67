"""Regenerate the figures of Lecture 1 (Gamma) from minidb runs, on the modeled clock.

    .venv/bin/python lectures/lecture1_gamma/make_figures.py              # paper's size, ~1 min
    .venv/bin/python lectures/lecture1_gamma/make_figures.py --scale 0.05 --out /tmp/figures

Every number drawn comes from a run of minidb (``minidb.experiments`` or a statement priced
with ``result.modeled``); the open diamonds are the Gamma paper's published numbers, read from
``datasets/reference/``. The PNGs are small (100 dpi) so they can be committed. The script
also prints the Gamma findings checked on the rows it ran, which the lecture's "agrees and
disagrees" table summarizes; rerun it after changing the engine and update that table if the
statuses moved.

The curve drawing is shared with Lab 1 (``labs/lab1_gamma/helpers.py``), loaded by path.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

import minidb  # noqa: E402
from minidb.cost.profiles import get_profile  # noqa: E402
from minidb.datagen import generate  # noqa: E402
from minidb.experiments import run_experiment  # noqa: E402
from minidb.experiments.findings import check_findings  # noqa: E402
from minidb.experiments.gamma import (  # noqa: E402
    FIGURE_TUPLES,
    load_wisconsin,
    paper_machine,
    scaled,
    select_into,
)
from minidb.results import load_reference  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DPI = 100
FIGURES = ("declustering.png", "selection_speedup.png", "page_size.png", "bottlenecks.png",
           "what_if_instr_scan.png")
NONINDEXED = ["select_0pct_nonindexed", "select_1pct_nonindexed", "select_10pct_nonindexed"]
INDEXED = ["select_1pct_clustered_index", "select_10pct_clustered_index",
           "select_1pct_nonclustered_index", "select_0pct_nonclustered_index"]


def lab_helpers():
    """Lab 1's plotting module, loaded from its file under a name of its own."""
    spec = importlib.util.spec_from_file_location("lab1_helpers",
                                                  ROOT / "labs" / "lab1_gamma" / "helpers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def paper_points(reference: pa.Table, h) -> tuple[dict, dict, dict]:
    """The paper's numbers for the speedup and page-size plots: Table 1's 100,000-tuple column
    (8 disk nodes, 4 KB pages) and the 0% indexed times stated in the text of Section 5.2.1."""
    table1 = h.paper_cells(reference, reference="Table 1", column="gamma_100000",
                           metric="response_time")
    at_8_nodes = {c["row"]: [(8, c["value"])] for c in table1}
    at_4kb = {c["row"]: [(4, c["value"])] for c in table1}
    zero = {h.x_of(c["column"]): c["value"] for c in h.paper_cells(
        reference, reference="Figure 5", row="select_0pct_nonclustered_index",
        metric="response_time")}
    at_8_nodes["select_0pct_nonclustered_index"] = sorted(zero.items())
    speedup = {"select_0pct_nonclustered_index": [(x, zero[1] / t) for x, t in sorted(zero.items())]}
    return at_8_nodes, speedup, at_4kb


def declustering(h, tuples: int, seed: int, out: Path) -> None:
    """Tuples per node under each strategy, on unique1 and on a skewed attribute."""
    nodes = 4
    data = generate("wisconsin", tuples, seed=seed)
    u = pc.cast(data["unique1"], pa.int64())
    data = data.append_column("skewed", pc.cast(pc.divide(pc.multiply(u, u), tuples), pa.int32()))
    widths = ", ".join(str(tuples * i // nodes) for i in range(1, nodes))
    panels = {
        "unique1 (uniform)": {"round_robin": "round_robin", "hash": "hash(unique1)",
                              "range (equal widths)": f"range(unique1: {widths})",
                              "range_uniform": "range_uniform(unique1)"},
        "skewed = unique1² / n": {"round_robin": "round_robin", "hash": "hash(skewed)",
                                  "range (equal widths)": f"range(skewed: {widths})",
                                  "range_uniform": "range_uniform(skewed)"},
    }
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
    with minidb.connect(nodes=nodes, profile="gamma") as db:
        for ax, (title, specs) in zip(axes, panels.items(), strict=True):
            sizes = {}
            for i, (label, spec) in enumerate(specs.items()):
                name = f"t{len(db.tables())}_{i}"
                db.create_table(name, data, partition=spec)
                sizes[label] = [len(f) for f in db.fragments(name)]
            h.plot_fragments(ax, sizes, f"partitioning attribute: {title}")
    fig.suptitle(f"{tuples:,} Wisconsin tuples declustered over {nodes} disk nodes", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "declustering.png", dpi=DPI)
    plt.close(fig)


def speedup_figure(h, rows: list[dict], paper_time: dict, paper_speedup: dict, tuples: int,
                   out: Path) -> None:
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    x = {"xlabel": "disk nodes"}
    h.plot_curves(axes[0, 0], rows, "response_time", NONINDEXED, ylabel="seconds (modeled)",
                  title="no index: response time (paper Fig. 2)", paper=paper_time, **x)
    h.plot_curves(axes[0, 1], rows, "speedup", NONINDEXED, ylabel="speedup", ideal=True,
                  title="no index: speedup (paper Fig. 3)", **x)
    h.plot_curves(axes[1, 0], rows, "response_time", INDEXED, ylabel="seconds (modeled, log)",
                  title="indexed: response time (paper Fig. 4)", paper=paper_time, logy=True, **x)
    h.plot_curves(axes[1, 1], rows, "speedup", INDEXED, ylabel="speedup", ideal=True,
                  title="indexed: speedup (paper Fig. 5)", paper=paper_speedup, **x)
    fig.suptitle(f"Selections on {tuples:,} tuples, 4 KB pages, results stored "
                 "(minidb lines, paper diamonds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "selection_speedup.png", dpi=DPI)
    plt.close(fig)


def page_size_figure(h, rows: list[dict], at_4kb: dict, reference: pa.Table, out: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    x = {"xlabel": "disk page (KB)", "logx": True}
    h.plot_curves(axes[0], rows, "response_time", NONINDEXED + ["select_100pct_nonindexed"],
                  ylabel="seconds (modeled)", title="no index (paper Fig. 6)", paper=at_4kb, **x)
    h.plot_curves(axes[1], rows, "response_time", ["select_1pct_nonclustered_index",
                  "select_1pct_clustered_index", "select_10pct_clustered_index"],
                  ylabel="seconds (modeled)", title="indexed (paper Fig. 8)", paper=at_4kb, **x)
    t = h.curves(rows, "response_time")
    zero, ten = t["select_0pct_nonindexed"], t["select_10pct_nonindexed"]
    kbs = sorted(zero)
    ax = axes[2]
    ax.plot(kbs, [100 * (ten[k] / zero[k] - 1) for k in kbs], marker="o", label="minidb")
    cells = h.paper_cells(reference, reference="Figure 6", row="select_10pct_vs_0pct_nonindexed",
                          metric="slowdown")
    ax.plot([h.x_of(c["column"]) for c in cells], [c["value"] for c in cells], "D",
            markerfacecolor="none", color="black", label="paper (§5.2.2 text)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(kbs)
    ax.set_xticklabels([str(k) for k in kbs])
    ax.set(xlabel="disk page (KB)", ylabel="% slower than the 0% selection",
           title="10% vs 0% selection, no index")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle("8 disk nodes, disk pages of 2 to 32 KB", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "page_size.png", dpi=DPI)
    plt.close(fig)


def bottleneck_figure(tuples: int, seed: int, nodes: list[int], out: Path) -> None:
    """Where the time goes: the slowest node of the selection phase, by resource, plus the
    scheduler's serial control messages, for two queries on the fewest and the most nodes."""
    gamma = get_profile("gamma")
    queries = {"select_10pct_nonindexed": "10% selection, no index",
               "select_0pct_nonclustered_index": "0% selection, non-clustered index"}
    parts = ("cpu", "disk", "net", "startup", "scheduler")
    found: dict[str, dict[int, dict[str, float]]] = {q: {} for q in queries}
    for n in sorted({min(nodes), max(nodes)}):
        db = paper_machine("gamma", "inline", n)
        try:
            load_wisconsin(db, tuples, seed, "gamma")
            for q in queries:
                db.clear_buffer_pools()
                r = db.sql(select_into(q, tuples))
                m = r.modeled(gamma, 4096)
                phase = m.phases[0]
                slow = phase.nodes[phase.slowest_node]
                found[q][n] = {"cpu": slow.cpu_s, "disk": slow.disk_s, "net": slow.net_s,
                               "startup": slow.startup_s, "scheduler": m.coordinator_s}
                db.drop_table("result")
        finally:
            db.close()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, (q, title) in zip(axes, queries.items(), strict=True):
        configs = sorted(found[q])
        width = 0.8 / len(configs)
        for i, n in enumerate(configs):
            xs = [k + (i - (len(configs) - 1) / 2) * width for k in range(len(parts))]
            ax.bar(xs, [found[q][n][p] for p in parts], width=width, label=f"{n} node(s)")
        ax.set_xticks(range(len(parts)))
        ax.set_xticklabels(["CPU", "disk", "network\ninterface", "operator\nstartup",
                            "scheduler\nmessages"])
        ax.set_ylabel("seconds (modeled)")
        ax.set_title(title)
        ax.legend(fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("Selection phase, slowest node: seconds of each resource "
                 "(a node takes as long as its busiest one)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "bottlenecks.png", dpi=DPI)
    plt.close(fig)


def what_if_figure(tuples: int, seed: int, page_sizes: list[int], out: Path) -> None:
    """The same counters priced with three values of instr_scan (instructions per tuple
    scanned): minidb's, calibrated on Table 7, and two what-ifs around it."""
    gamma = get_profile("gamma")
    variants = {v: gamma.replace(instr_scan=v) for v in (100, gamma.instr_scan, 1000)}
    queries = {"select_0pct_nonindexed": "0% selection, no index",
               "select_1pct_nonclustered_index": "1% selection, non-clustered index"}
    times: dict[str, dict[int, dict[int, float]]] = {q: {v: {} for v in variants} for q in queries}
    for size in sorted(page_sizes):
        # built as gamma.page_size builds it: index-order fetches, a constant number of buffer
        # pages, and the non-clustered index forced at every page size
        db = paper_machine("gamma", "inline", 8, size, buffer_page_size=max(page_sizes))
        try:
            load_wisconsin(db, tuples, seed, "gamma")
            for q in queries:
                db.clear_buffer_pools()
                hint = "index" if "nonclustered" in q else None
                r = db.sql(select_into(q, tuples, hint=hint))
                for v, profile in variants.items():
                    times[q][v][size // 1024] = r.modeled(profile, size).total_s
                db.drop_table("result")
        finally:
            db.close()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, (q, title) in zip(axes, queries.items(), strict=True):
        for v in variants:
            kbs = sorted(times[q][v])
            label = f"instr_scan = {v:g}" + (" (minidb)" if v == gamma.instr_scan
                                              else " (what-if)")
            ax.plot(kbs, [times[q][v][k] for k in kbs], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(kbs)
        ax.set_xticklabels([str(k) for k in kbs])
        ax.set(xlabel="disk page (KB)", ylabel="seconds (modeled)", title=title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("8 disk nodes: the same work priced with three CPU path lengths per tuple",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "what_if_instr_scan.png", dpi=DPI)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="relation size as a fraction of the paper's 100,000 tuples")
    parser.add_argument("--nodes", default="1,2,3,4,5,6,7,8", help="disk nodes, comma-separated")
    parser.add_argument("--page-sizes", default="2048,4096,8192,16384,32768",
                        help="page sizes in bytes, comma-separated")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=HERE / "figures",
                        help="directory for the PNGs (created if missing)")
    args = parser.parse_args(argv)
    nodes = [int(n) for n in args.nodes.split(",")]
    page_sizes = [int(p) for p in args.page_sizes.split(",")]
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    h = lab_helpers()
    reference = load_reference("gamma")
    tuples = scaled([FIGURE_TUPLES], args.scale)[0]

    declustering(h, tuples, args.seed, out)
    speedup_rows = run_experiment("gamma.selection_speedup", scale=args.scale, nodes=nodes,
                                  seed=args.seed)
    page_rows = run_experiment("gamma.page_size", scale=args.scale, page_sizes=page_sizes,
                               seed=args.seed)
    paper_time, paper_speedup, at_4kb = paper_points(reference, h)
    speedup_figure(h, speedup_rows, paper_time, paper_speedup, tuples, out)
    page_size_figure(h, page_rows, at_4kb, reference, out)
    bottleneck_figure(tuples, args.seed, nodes, out)
    what_if_figure(tuples, args.seed, page_sizes, out)

    print(f"figures for {tuples:,} tuples written to {out}: {', '.join(FIGURES)}")
    h.show_findings(check_findings(speedup_rows + page_rows, "gamma"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
