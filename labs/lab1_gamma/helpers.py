"""Plotting and printing for Lab 1; every number comes from ``minidb.experiments`` rows.

Nothing here computes a result: these functions only arrange the tidy rows that an experiment
returned (``{"row": query, "column": "nodes_8", "metric": "speedup", "value": ...}``) into
curves, and draw them beside the published points of the Gamma paper. Keeping this out of the
notebook keeps the notebook short; keeping it out of ``minidb`` keeps the engine free of
matplotlib.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pyarrow as pa

from minidb.display import format_table

# How the lab names the paper's selection queries on the plots.
LABELS = {
    "select_0pct_nonindexed": "0% no index",
    "select_1pct_nonindexed": "1% no index",
    "select_10pct_nonindexed": "10% no index",
    "select_100pct_nonindexed": "100% no index",
    "select_0pct_nonclustered_index": "0% non-clustered index",
    "select_1pct_nonclustered_index": "1% non-clustered index",
    "select_1pct_clustered_index": "1% clustered index",
    "select_10pct_clustered_index": "10% clustered index",
}


def x_of(column: str) -> int:
    """The number in a column slug: ``nodes_8`` -> 8, ``page_32kb`` -> 32."""
    found = re.search(r"(\d+)", column)
    if found is None:
        raise ValueError(f"column {column!r} carries no number")
    return int(found.group(1))


def curves(rows: Iterable[dict], metric: str, clock: str = "modeled") -> dict[str, dict[int, float]]:
    """``{query: {x: value}}`` for the rows with ``metric`` on ``clock``."""
    out: dict[str, dict[int, float]] = {}
    for r in rows:
        if r["metric"] == metric and r["clock"] == clock:
            out.setdefault(r["row"], {})[x_of(r["column"])] = r["value"]
    return out


def bottlenecks(rows: Iterable[dict]) -> dict[str, dict[int, str]]:
    """``{query: {x: "disk" | "cpu" | "net" | "startup"}}`` from the ``bottleneck_is_*`` rows."""
    out: dict[str, dict[int, str]] = {}
    for r in rows:
        if r["metric"].startswith("bottleneck_is_"):
            out.setdefault(r["row"], {})[x_of(r["column"])] = r["metric"][len("bottleneck_is_"):]
    return out


def paper_cells(cells: pa.Table, **match: str) -> list[dict]:
    """The published cells (with a value) whose fields equal ``match``, e.g.
    ``paper_cells(load_reference("gamma"), reference="Table 1", column="gamma_100000")``."""
    return [c for c in cells.to_pylist()
            if c["value"] is not None and all(c[k] == v for k, v in match.items())]


def plot_curves(ax, rows: Iterable[dict], metric: str, queries: Iterable[str], *, xlabel: str,
                ylabel: str, title: str, paper: Mapping[str, list[tuple[float, float]]] | None = None,
                ideal: bool = False, logx: bool = False, logy: bool = False) -> None:
    """One line per query from the experiment's rows, and the paper's points as open markers
    of the same colour (``paper = {query: [(x, value), ...]}``); ``ideal`` adds speedup = x."""
    rows = list(rows)
    data = curves(rows, metric)
    xs_all: set[int] = set()
    for query in queries:
        points = sorted(data.get(query, {}).items())
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        xs_all.update(xs)
        (line,) = ax.plot(xs, ys, marker="o", markersize=4, label=LABELS.get(query, query))
        for px, py in (paper or {}).get(query, []):
            ax.plot([px], [py], linestyle="none", marker="D", markersize=8, markerfacecolor="none",
                    markeredgewidth=1.5, color=line.get_color())
    if ideal and xs_all:
        lo, hi = min(xs_all), max(xs_all)
        ax.plot([lo, hi], [1, hi / lo], color="grey", linestyle="--", linewidth=1, label="ideal")
    if paper:
        ax.plot([], [], linestyle="none", marker="D", markerfacecolor="none", color="black",
                label="paper (open diamonds)")
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    if xs_all:
        ax.set_xticks(sorted(xs_all))
        ax.set_xticklabels([str(x) for x in sorted(xs_all)])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def plot_fragments(ax, sizes: Mapping[str, list[int]], title: str) -> None:
    """Grouped bars: tuples held by each node under each partitioning."""
    names = list(sizes)
    if not names:
        return
    nodes = max(len(v) for v in sizes.values())
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        xs = [n + (i - (len(names) - 1) / 2) * width for n in range(len(sizes[name]))]
        ax.bar(xs, sizes[name], width=width, label=name)
    ax.set_xticks(range(nodes))
    ax.set_xticklabels([f"node {n}" for n in range(nodes)])
    ax.set_ylabel("tuples stored")
    ax.set_title(title)
    ax.legend(fontsize=7)


def show_table(records: list[dict], max_rows: int = 40) -> None:
    """Print a list of dicts as an aligned text table (every value shown as text)."""
    def text(value: object) -> str:
        if value is None:
            return ""
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    cells = [{k: text(v) for k, v in r.items()} for r in records]
    print(format_table(pa.Table.from_pylist(cells), max_rows=max_rows))


def phase_table(result, modeled) -> list[dict]:
    """One record per phase of a ``ModeledTime``: its time, what bounded it, and the slowest
    node's CPU, disk, network and startup seconds (``result`` names the phases)."""
    names = list(getattr(result, "phase_names", [])) + [""] * len(modeled.phases)
    out = []
    for phase, name in zip(modeled.phases, names, strict=False):
        slow = phase.nodes.get(phase.slowest_node)
        out.append({"phase": name or str(phase.index), "seconds": round(phase.total_s, 3),
                    "bounded by": phase.bottleneck, "slowest node": phase.slowest_node,
                    "cpu": round(slow.cpu_s, 3) if slow else 0.0,
                    "disk": round(slow.disk_s, 3) if slow else 0.0,
                    "net": round(slow.net_s, 3) if slow else 0.0,
                    "startup": round(slow.startup_s, 3) if slow else 0.0})
    out.append({"phase": "scheduler messages", "seconds": round(modeled.coordinator_s, 3),
                "bounded by": "", "slowest node": "", "cpu": "", "disk": "", "net": "",
                "startup": ""})
    return out


def show_findings(results) -> None:
    """Print ``check_findings`` results as a table: status, name, what was measured."""
    show_table([{"status": f.status.upper(), "finding": f.name, "source": f.source,
                 "measured": f.detail} for f in results])
