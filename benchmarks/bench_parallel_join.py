"""A parallel join on 1, 2, 4 and 8 nodes, inline and on Ray: wall and modeled speedup, and the
bytes per second the split tables moved.

Run:  .venv/bin/python benchmarks/bench_parallel_join.py [--rows 1000000] [--repeat 2]
                                                           [--nodes 1,2,4,8] [--no-ray]

The join is Gamma's joinABprime on a non-key attribute (DeWitt et al. 1988, §6.1): A of
``--rows`` Wisconsin tuples joined with Bprime, a tenth of A's size, on ``unique2``. Both
relations are hashed on ``unique1``, so every tuple of both is repartitioned on ``unique2`` to
the join nodes (hinted ``repartition``, as Gamma runs every join): the build phase sends Bprime,
the probe phase sends A. The same join hinted ``co_located`` on ``unique1`` (both relations are
partitioned on it) is the other line: no tuple crosses between nodes.

For each backend and node count the relations are loaded once, each join runs ``--repeat``
times; the wall time is the best run's, the modeled time (``gamma`` profile, 4 KB pages) the
first run's. Every configuration must return the rows DuckDB returns on the same data (checked
here). The MB/s column is ``ParallelResult.data_moved()``: the bytes the split tables routed in
the build and probe phases, per sending node and wall second of those phases (measured, never
priced). Speedups are over the first node count, side by side in this one run; nothing is
asserted about wall time (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import time

import duckdb

import minidb
from minidb import datagen

PAGE_SIZE = 4096
QUERIES = {
    "repartition": ("/*+ repartition */ SELECT a.unique1, b.unique1 FROM a JOIN b "
                    "ON a.unique2 = b.unique2"),
    "co_located": ("/*+ co_located */ SELECT a.unique1, b.unique2 FROM a JOIN b "
                   "ON a.unique1 = b.unique1"),
}


def expected(a, b) -> dict[str, list[tuple]]:
    """DuckDB's rows for each join, on the same data."""
    con = duckdb.connect()
    con.register("a", a)
    con.register("b", b)
    return {name: sorted(con.sql(sql.split("*/", 1)[1]).fetchall())
            for name, sql in QUERIES.items()}


def measure(backend: str, nodes: int, a, b, repeat: int, want: dict) -> list[dict]:
    """Load A and Bprime on ``nodes`` nodes of ``backend`` and time each join."""
    out = []
    memory_pages = max(1024, a.num_rows // 500)  # Bprime's share fits: no overflow here
    with minidb.connect(nodes=nodes, backend=backend, profile="gamma", page_size=PAGE_SIZE,
                        memory_pages=memory_pages) as db:
        db.create_table("a", a, partition="hash(unique1)")
        db.create_table("b", b, partition="hash(unique1)")
        for name, sql in QUERIES.items():
            runs = []
            for _ in range(repeat):
                db.clear_buffer_pools()
                runs.append(db.sql(sql))
            first = runs[0]
            got = sorted(tuple(r.values()) for r in first.to_arrow().to_pylist())
            if got != want[name]:
                raise SystemExit(f"{name} on {nodes} {backend} nodes: rows differ from DuckDB's")
            moved = [p for p in first.data_moved() if p["name"] in ("build", "probe",
                                                                    "co-located join")]
            routed = sum(p["bytes"] for p in moved)
            senders = max((p["senders"] for p in moved), default=0)
            wall = sum(p["wall_s"] for p in moved)
            remote = first.counters.get("bytes_sent_remote", 0)
            out.append({"backend": backend, "nodes": nodes, "join": name,
                        "wall_s": min(r.wall_s for r in runs), "modeled_s": first.modeled_s,
                        "mb_s_node": routed / senders / wall / 1e6 if senders and wall else 0.0,
                        "remote_mb": remote / 1e6, "rows": first.rows})
    return out


def report(rows: int, repeat: int, node_counts: list[int], backends: list[str]) -> list[dict]:
    a = datagen.wisconsin(rows, seed=0)
    b = datagen.wisconsin(max(1, rows // 10), seed=1)
    want = expected(a, b)
    results = []
    print(f"joinABprime: A {rows:,} x Bprime {max(1, rows // 10):,} Wisconsin tuples, "
          f"{os.cpu_count()} CPUs here, best of {repeat}")
    for backend in backends:
        for nodes in node_counts:
            t0 = time.perf_counter()
            results += measure(backend, nodes, a, b, repeat, want)
            print(f"  {backend} {nodes} node(s) done in {time.perf_counter() - t0:.1f} s",
                  flush=True)
    print()
    print(f"{'backend':<8}{'join':<13}{'nodes':>6}{'rows':>10}{'wall s':>9}{'modeled s':>11}"
          f"{'wall speedup':>14}{'modeled speedup':>17}{'ideal':>7}{'split MB/s/node':>17}"
          f"{'remote MB':>11}")
    base: dict[tuple, dict] = {}
    for r in results:
        first = base.setdefault((r["backend"], r["join"]), r)
        print(f"{r['backend']:<8}{r['join']:<13}{r['nodes']:>6}{r['rows']:>10,}"
              f"{r['wall_s']:>9.3f}{r['modeled_s']:>11.2f}"
              f"{first['wall_s'] / r['wall_s']:>14.2f}{first['modeled_s'] / r['modeled_s']:>17.2f}"
              f"{r['nodes'] / first['nodes']:>7.0f}{r['mb_s_node']:>17.1f}{r['remote_mb']:>11.2f}")
    print("\nmodeled: gamma profile, 4 KB pages; wall: this machine. Split MB/s/node: the bytes "
          "the split tables routed (to other nodes, to their own, to the host) per sending node "
          "and second of the join's phases; remote MB: what crossed between nodes.")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="tuples in A")
    parser.add_argument("--repeat", type=int, default=2, help="runs per join, best kept")
    parser.add_argument("--nodes", default="1,2,4,8", help="node counts, comma-separated")
    parser.add_argument("--no-ray", action="store_true", help="inline nodes only")
    args = parser.parse_args()
    if args.rows < 10 or args.repeat < 1:
        parser.error("--rows must be at least 10 and --repeat at least 1")
    try:
        node_counts = [int(x) for x in args.nodes.split(",")]
    except ValueError:
        parser.error(f"--nodes takes node counts separated by commas, not {args.nodes!r}")
    if not node_counts or min(node_counts) < 1:
        parser.error("--nodes takes positive node counts")
    backends = ["inline"] + ([] if args.no_ray else ["ray"])
    report(args.rows, args.repeat, node_counts, backends)


if __name__ == "__main__":
    main()
