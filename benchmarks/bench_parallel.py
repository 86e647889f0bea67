"""Speedup of minidb's parallel engine on 1, 2, 4 and 8 nodes: wall clock and Gamma's modeled clock.

Run:  .venv/bin/python benchmarks/bench_parallel.py [--rows 9000000] [--repeat 2]
                                                      [--backend ray|inline] [--nodes 1,2,4,8]

Two queries over Wisconsin relations of ``--rows`` tuples (208 bytes each), the ones Gamma's
speedup figures use (DeWitt et al. 1988, Sections 5.2.1 and 6):

* a 1% selection without an index (``unique2`` is not indexed, so every node scans its whole
  fragment of A); the selected tuples go back to the host;
* joinAselB: the parallel hash join of A and B on ``unique1`` after a 10% selection on B. A is
  hashed on ``unique1`` (its tuples stay on their node), B on ``unique2``, so the selected B
  tuples are repartitioned over the network to build the hash tables.

For each node count the two relations are loaded once (the helper closes that configuration
before loading the next, so one configuration's data exists at a time), then each query runs
``--repeat`` times; the wall time is the best run's, the modeled time (``gamma`` profile, 4 KB
pages) is priced from the counted work of the first run. Every configuration must return the
same rows as the first (``minidb.cluster.scaling.speedup`` checks that). Speedup is Tandem's:
time on the first node count / time on this one.

Size: the default is 9,000,000 tuples, not the 10,000,000 of a 2 GB relation, because minidb
writes each node's fragment in one system call and Linux caps a call at 2 GiB - 4 KB: on one
node a 10,000,000 tuple fragment (2.16 GB of pages) would be cut short. The script refuses such
sizes before loading.

Memory: each relation is generated inside ``create_table`` from a generator spec, so the driver
holds one relation at a time (as Arrow, as records and as per-node fragments while it loads:
about 3 x 208 bytes a tuple, ~5.6 GB at 9,000,000 tuples), and the nodes keep their fragments in
page files on disk with 4 MB buffer pools. The highest memory in use on the machine during the
run is printed at the end (Linux).
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import minidb
from minidb.cluster.scaling import speedup

PAGE_SIZE = 4096
DEFAULT_ROWS = 10_000_000


class MemoryWatch:
    """The most memory in use on this machine (MemTotal - MemAvailable) while it runs."""

    def __init__(self, every_s: float = 0.25):
        self.every_s, self.peak, self.base = every_s, 0, self._used()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _used() -> int:
        try:
            with open("/proc/meminfo") as f:
                info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
            return info["MemTotal"] - info["MemAvailable"]
        except (OSError, KeyError, ValueError):
            return 0

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.peak = max(self.peak, self._used())

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS,
                        help=f"tuples in each relation (default {DEFAULT_ROWS:,})")
    parser.add_argument("--repeat", type=int, default=2, help="runs per query, best kept")
    parser.add_argument("--backend", choices=("ray", "inline"), default="ray")
    parser.add_argument("--nodes", default="1,2,4,8", help="node counts, comma-separated")
    args = parser.parse_args()
    n = args.rows
    node_counts = [int(x) for x in args.nodes.split(",")]
    # the hash join has no overflow handling: its build input (10% of B, two int columns,
    # ~8-16 bytes a tuple) must fit in memory_pages on one node
    memory_pages = max(1024, n // 2000)

    ray = None
    if args.backend == "ray":
        import ray

        if not ray.is_initialized():  # one Ray instance for every configuration
            ray.init(include_dashboard=False, log_to_driver=False,
                     num_cpus=os.cpu_count() or 2)

    loads: dict[int, float] = {}

    def make_db(nodes: int):
        t0 = time.perf_counter()
        db = minidb.connect(nodes=nodes, backend=args.backend, profile="gamma",
                            page_size=PAGE_SIZE, memory_pages=memory_pages, timeout=3600)
        try:
            db.create_table("a", f"wisconsin:{n}:0", partition="hash(unique1)")
            db.create_table("b", f"wisconsin:{n}:1", partition="hash(unique2)")
        except BaseException:
            db.close()
            raise
        loads[nodes] = time.perf_counter() - t0
        print(f"  {nodes} node(s): loaded 2 x {n:,} tuples in {loads[nodes]:.1f} s", flush=True)
        return db

    queries = {
        "1% selection": f"SELECT * FROM a WHERE unique2 BETWEEN 0 AND {n // 100 - 1}",
        "joinAselB": "SELECT a.unique1, a.unique2, b.unique2 FROM a JOIN b "
                     f"ON a.unique1 = b.unique1 WHERE b.unique2 < {n // 10}",
    }
    print(f"{n:,} tuples a relation, backend {args.backend}, {os.cpu_count()} CPUs here, "
          f"best of {args.repeat}")
    t0 = time.perf_counter()
    try:
        with MemoryWatch() as mem:
            rows = speedup(queries, node_counts, make_db, clock="wall", repeat=args.repeat, rows=n)
    finally:
        if ray is not None:
            ray.shutdown()

    print()
    print(f"{'query':<14}{'nodes':>6}{'result rows':>13}{'wall s':>10}{'modeled s':>11}"
          f"{'wall speedup':>14}{'modeled speedup':>17}{'ideal':>7}")
    first_modeled = {}
    for r in rows:
        first_modeled.setdefault(r["query"], r["modeled_s"])
        modeled_up = first_modeled[r["query"]] / r["modeled_s"]
        print(f"{r['query']:<14}{r['nodes']:>6}{r['result_rows']:>13,}{r['wall_s']:>10.3f}"
              f"{r['modeled_s']:>11.2f}{r['speedup']:>14.2f}{modeled_up:>17.2f}{r['ideal']:>7.0f}")
    print(f"\nmodeled: gamma profile, {PAGE_SIZE // 1024} KB pages; wall: this machine "
          f"({os.cpu_count()} CPUs). Total {time.perf_counter() - t0:.0f} s.")
    if mem.peak:
        print(f"highest memory in use on this machine: {mem.peak / 2**30:.1f} GiB "
              f"({mem.base / 2**30:.1f} GiB before the run)")


if __name__ == "__main__":
    main()
