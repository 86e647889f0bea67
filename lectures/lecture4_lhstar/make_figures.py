"""Regenerate the figures of Lecture 4 (LH*) from minidb runs.

    .venv/bin/python lectures/lecture4_lhstar/make_figures.py                 # a few seconds
    .venv/bin/python lectures/lecture4_lhstar/make_figures.py --records 5000 --out /tmp/figures

Every number drawn comes from an LH* file of ``minidb.sdds`` (message and record counts, no
clock): how the file and its load factor grow under both split policies, how many forwards a
request from a stale image takes and how fast a new client's image converges, and how many
bytes each strategy of ``join(SDDS, BAT)`` would move as the servers get more numerous; and
the paper's Section 5.1 on minidb's modeled SGI O2 (``lhstar.partition_size`` at 1% of the
paper's sizes, the one figure with a clock: counted work priced by the ``sgi_o2`` profile). The
PNGs are small (100 dpi) so they can be committed.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from minidb.sdds import FileState, Image, LHStarFile, client_address, server_address  # noqa: E402
from minidb.sdds import operators as op  # noqa: E402

HERE = Path(__file__).resolve().parent
DPI = 100
FIGURES = ("growth.png", "forwards.png", "operators.png", "section51.png")


def growth(records: int, out: Path) -> None:
    """Buckets and load factor as records arrive, uncontrolled against controlled splitting."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.3))
    for label, policy, threshold in (("uncontrolled", "uncontrolled", 0.8),
                                     ("controlled, threshold 0.9", "controlled", 0.9)):
        f = LHStarFile(capacity=50, machines=1, split=policy, threshold=threshold)
        c, xs, buckets, loads = f.client(), [], [], []
        for key in range(records):
            c.insert(key)
            if key % max(1, records // 150) == 0 and key:
                xs.append(key)
                buckets.append(f.state.buckets)
                loads.append(f.load_factor())
        left.plot(xs, buckets, label=label)
        right.plot(xs, loads, label=f"{label} (mean {np.mean(loads):.2f})")
        print(f"{label}: {f.state.buckets} buckets, mean load factor {np.mean(loads):.3f}, "
              f"{f.messages.collisions} collision messages, {f.messages.splits} splits")
    left.set(xlabel="records inserted", ylabel="buckets", title="the file grows")
    right.set(xlabel="records inserted", ylabel="load factor", title="bucket capacity 50",
              ylim=(0.4, 1.05))
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "growth.png", dpi=DPI)
    plt.close(fig)


def forwards(records: int, out: Path, seed: int = 1) -> None:
    """Left: forwards per request from images of every age. Right: a new client's mistakes."""
    rng = random.Random(seed)
    history = [FileState(0, 0, 1)]
    while history[-1].buckets < max(8, records // 40):
        history.append(history[-1].after_split())
    state = history[-1]
    by_age: dict[str, Counter] = {}
    for label, lo, hi in (("image (0, 0)", 0, 1), ("an old image", 1, len(history) // 2),
                          ("a recent image", len(history) // 2, len(history))):
        counts: Counter = Counter()
        for _ in range(3000):
            past = history[rng.randrange(lo, hi)]
            c = rng.getrandbits(40)
            a, hops = client_address(Image(past.level, past.split), c, 1), 0
            while (b := server_address(a, state.bucket_level(a), c, 1)) != a:
                a, hops = b, hops + 1
            counts[hops] += 1
        by_age[label] = counts
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.3))
    width = 0.27
    for i, (label, counts) in enumerate(by_age.items()):
        shares = [counts[h] / sum(counts.values()) for h in (0, 1, 2)]
        left.bar(np.arange(3) + (i - 1) * width, shares, width, label=label)
        print(f"{label}: forwards 0/1/2 = {shares[0]:.2f} / {shares[1]:.2f} / {shares[2]:.2f}, "
              f"never 3")
    left.set(xticks=[0, 1, 2], xlabel="forwards", ylabel="share of requests",
             title=f"stale images, file of {state.buckets} buckets")
    left.legend(fontsize=8)

    f = LHStarFile(capacity=50, machines=4)
    f.insert_many((k, k) for k in range(records))
    late, mistakes, xs = f.client("late"), [], []
    for i, key in enumerate(random.Random(seed + 1).sample(range(records), min(records, 400))):
        late.lookup(key)
        xs.append(i + 1)
        mistakes.append(late.messages.iams)
    right.step(xs, mistakes, where="post")
    right.set(xlabel="lookups by a new client", ylabel="IAMs received so far",
              title=f"its image converges ({f.state.buckets} buckets)")
    print(f"a new client: {late.messages.iams} IAMs in {len(xs)} lookups; image "
          f"({late.image.level}, {late.image.split}), file ({f.state.level}, {f.state.split})")
    fig.tight_layout()
    fig.savefig(out / "forwards.png", dpi=DPI)
    plt.close(fig)


def operators(records: int, out: Path) -> None:
    """Bytes join(SDDS, BAT) would move by each strategy, as the machines get more numerous."""
    rng = np.random.default_rng(3)
    n = max(400, records // 4)
    small = op.bat(np.arange(n // 10), np.arange(n // 10))  # a tenth of the SDDS
    machines = [1, 2, 4, 8, 16]
    cost: dict[str, list[int]] = {}
    chosen = []
    for m in machines:
        sdds = op.load(LHStarFile(capacity=50, machines=m),
                       op.bat(rng.permutation(n), rng.integers(0, n, n)))
        r = op.join(sdds, small)
        for name, b in r.plan.alternatives.items():
            cost.setdefault(name, []).append(b)
        chosen.append(r.plan.chosen)
    fig, ax = plt.subplots(figsize=(5.5, 3.3))
    for name, values in cost.items():
        ax.plot(machines, values, marker="o", label=name)
    ax.set(xscale="log", xticks=machines, xticklabels=[str(m) for m in machines],
           xlabel="server machines", ylabel="bytes moved",
           title=f"join(SDDS of {n:,} pairs, BAT of {len(small):,})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "operators.png", dpi=DPI)
    plt.close(fig)
    for m, c in zip(machines, chosen, strict=True):
        print(f"{m:>2} machines: {c}")


def section51(out: Path) -> None:
    """Section 5.1: one node, a growing file; minidb's modeled times beside the paper's."""
    from minidb.experiments.registry import run_experiment
    from minidb.results.reference import load_reference

    rows = run_experiment("lhstar.partition_size", scale=0.01)
    table = "Section 5.1 (table 1 of 2)"
    model = {(r["row"], r["column"]): r["value"] for r in rows
             if r["reference"] == table and r["metric"] == "elapsed"}
    paper = {(c["row"], c["column"]): c["value"] for c in load_reference("lhstar").to_pylist()
             if c["reference"] == table and c["metric"] == "elapsed"}
    sizes = list(range(1, 12))
    fig, ax = plt.subplots(figsize=(5.5, 3.3))
    for query, marker in (("select_1_10", "o"), ("join_big_t5", "s"), ("join_t5_big", "^")):
        line, = ax.plot([8 * m for m in sizes],
                        [model[(f"entries_{m}m", query)] / 1e3 for m in sizes],
                        marker=marker, label=f"minidb {query}")
        ax.plot([8 * m for m in sizes], [paper[(f"entries_{m}m", query)] / 1e3 for m in sizes],
                marker=marker, linestyle=":", color=line.get_color(), alpha=0.6,
                label=f"paper {query}")
    ax.axvline(40, color="grey", linewidth=0.8)
    ax.set(xlabel="file size on one 64 MB node (MB)", ylabel="seconds",
           title="Section 5.1: modeled SGI O2 (solid) and the paper (dotted)")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "section51.png", dpi=DPI)
    plt.close(fig)
    jump = (model[("entries_6m", "select_1_10")] / 6) / (model[("entries_5m", "select_1_10")] / 5)
    print(f"select(1,10) per entry from 40 to 48 MB: x{jump:.1f} (the paper: x5.6)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000, help="records per file")
    parser.add_argument("--out", type=Path, default=HERE / "figures")
    args = parser.parse_args(argv)
    if args.records < 100:
        parser.error("--records must be at least 100")
    args.out.mkdir(parents=True, exist_ok=True)
    growth(args.records, args.out)
    forwards(args.records, args.out)
    operators(args.records, args.out)
    section51(args.out)
    print(f"wrote {', '.join(FIGURES)} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
