"""Regenerate the figures of Lecture 2 (Gamma's joins) from minidb runs.

    .venv/bin/python lectures/lecture2_joins/make_figures.py                # about a minute
    .venv/bin/python lectures/lecture2_joins/make_figures.py --tuples 6000 --out /tmp/figures

* ``memory.png``: one join (Wisconsin A with a tenth of its size, every column) on one node,
  with memory shrinking from enough for the build input to a tenth of it; the pages each hash
  join writes and reads in temporary files (counted, no clock), for Simple hash, Hybrid and
  GRACE.
* ``table3.png``: Gamma's Table 3 on the modeled machines (``gamma.joins`` at a tenth of the
  paper's sizes, similarity-scaled), minidb's seconds beside the paper's, Gamma and Teradata.

The PNGs are small (100 dpi) so they can be committed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402

import minidb  # noqa: E402
from minidb.datagen import generate  # noqa: E402
from minidb.experiments.registry import run_experiment  # noqa: E402
from minidb.results.reference import load_reference  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 100
FIGURES = ("memory.png", "table3.png")
JOIN = "SELECT * FROM a JOIN bprime b ON a.unique2 = b.unique2"
FRACTIONS = (1.2, 1.0, 0.8, 0.6, 0.4, 0.3, 0.2, 0.1)


def temp_io(db, algorithm: str, memory: int) -> tuple[int, int]:
    """Pages written plus read to temporary files, and overflows, for one join."""
    db.memory_pages = memory
    counters = db.sql(JOIN, hint=algorithm).counters

    def total(name: str) -> int:
        return sum(v for k, v in counters.items() if k.endswith("." + name))

    return total("spill_pages_written") + total("spill_pages_read"), total("overflows")


def memory(tuples: int, out: Path) -> None:
    with minidb.connect() as db:
        db.create_table("a", generate("wisconsin", tuples, seed=1))
        db.create_table("bprime", generate("wisconsin", max(100, tuples // 10), seed=2))
        counters = db.sql(JOIN, hint="hash_join").counters
        build = next(v for k, v in counters.items() if k.endswith(".build_pages"))
        budgets = sorted({max(6, round(build * f) + 1) for f in FRACTIONS}, reverse=True)
        fig, ax = plt.subplots(figsize=(6.5, 3.6))
        for algorithm in ("simple_hash", "hybrid_hash", "grace_hash"):
            points = [temp_io(db, algorithm, m) for m in budgets]
            ax.plot([build / m for m in budgets], [p for p, _ in points], marker="o",
                    label=algorithm)
            print(f"{algorithm}: pages written + read {[p for p, _ in points]}"
                  + (f", overflows {[o for _, o in points]}" if algorithm == "simple_hash"
                     else ""))
    ax.set(xlabel="build input / memory (pages)", ylabel="temporary pages written + read",
           title=f"A ({tuples:,}) joined with Bprime ({max(100, tuples // 10):,}), one node")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "memory.png", dpi=DPI)
    plt.close(fig)


def table3(out: Path, quick: bool) -> None:
    sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    rows = run_experiment("gamma.joins", scale=0.1, sizes=sizes)
    paper = {(r["row"], r["column"]): r["value"] for r in load_reference("gamma").to_pylist()
             if r["reference"] == "Table 3"}
    cells = [r for r in rows if r["reference"] == "Table 3" and r["clock"] == "modeled"
             and r["row"].endswith("_nonkey")]
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), sharey=False)
    for ax, system in zip(axes, ("gamma", "teradata"), strict=True):
        mine = [r for r in cells if r["column"].startswith(system)]
        labels = [f"{r['row'].split('_')[0][4:]}\n{int(r['column'].split('_')[1]):,}"
                  for r in mine]
        x = range(len(mine))
        ax.bar([i - 0.2 for i in x], [paper[(r["row"], r["column"])] for r in mine], 0.4,
               label="paper")
        ax.bar([i + 0.2 for i in x], [r["value"] for r in mine], 0.4, label="minidb (modeled)")
        ax.set_xticks(list(x), labels, fontsize=7)
        ax.set_yscale("log")
        ax.set(title=f"{system}: non-key joins", ylabel="seconds")
        ax.legend(fontsize=8)
        for r in mine:
            ratio = r["value"] / paper[(r["row"], r["column"])]
            print(f"{system} {r['row']} {r['column']}: minidb {r['value']:.1f} s, "
                  f"paper {paper[(r['row'], r['column'])]:.1f} s (x{ratio:.2f})")
    fig.tight_layout()
    fig.savefig(out / "table3.png", dpi=DPI)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=60_000,
                        help="tuples of A in memory.png (Bprime has a tenth)")
    parser.add_argument("--out", type=Path, default=HERE / "figures")
    args = parser.parse_args(argv)
    if args.tuples < 1000:
        parser.error("--tuples must be at least 1000")
    args.out.mkdir(parents=True, exist_ok=True)
    memory(args.tuples, args.out)
    table3(args.out, quick=args.tuples < 60_000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
