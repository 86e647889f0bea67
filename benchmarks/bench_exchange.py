"""The parallel engine's data path: its exchange alone, its overhead on one node, and a
repartitioning phase inline and on Ray.

Run:  .venv/bin/python benchmarks/bench_exchange.py [--rows 1000000] [--repeat 3] [--no-ray]

Three measurements, each a ratio or a rate taken in this one run (wall times on a shared machine
vary from run to run):

1. **The exchange alone.** Gamma's split tables (``minidb.parallel.exchange``) fed with
   Wisconsin tuples (208 bytes) from memory, hash-partitioned on ``unique1`` into receivers that
   drop what they get, one producer and one consumer thread per node. No disk, no operator
   above: the rate at which the mechanism itself moves bytes, in MB/s (10**6 bytes) per node.
2. **The parallel engine's overhead.** The same statements on the single-node engine and on a
   parallel database of one inline node (``minidb.connect(nodes=1, timeout=...)``): the
   parallel engine plans fragments, runs them in a phase, routes their output through a split
   table to the host and collects counters. The ratio parallel / single-node is its overhead.
3. **A repartitioning phase.** ``SELECT * FROM a JOIN a2 ON a.unique1 = a2.unique2`` on two
   nodes: ``a2`` is stored round-robin, so its whole tuples are hash-partitioned on ``unique2``
   to build the hash tables. ``ParallelResult.data_moved()`` gives the bytes the build phase
   routed per node and second (scan, split, send, receive and build together), inline and on
   Ray.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable

import numpy as np
from bench_vs_duckdb import best_of

import minidb
from minidb import datagen
from minidb.exec.iterator import Operator
from minidb.parallel.exchange import ExchangeReceive, Inbox, SplitTable
from minidb.parallel.partitioners import parse_partitioning
from minidb.storage.schema import Schema

OVERHEAD_QUERIES = {
    "1% selection, full scan": "SELECT * FROM a WHERE unique2 BETWEEN 0 AND {one_pct}",
    "scalar MIN": "SELECT MIN(unique3) FROM a",
    "group by 100 groups": "SELECT onePercent, MIN(unique3), SUM(unique3), COUNT(*) FROM a "
                           "GROUP BY onePercent",
    "joinABprime, 3 columns": "SELECT a.unique1, a.unique2, b.unique2 FROM a JOIN b "
                              "ON a.unique1 = b.unique1",
    "join A x A, 2 columns": "SELECT a.unique1, a2.unique2 FROM a JOIN a2 ON a.unique1 = a2.unique1",
}
REPARTITION = "SELECT * FROM a JOIN a2 ON a.unique1 = a2.unique2"


class _FromMemory(Operator):
    """A leaf operator yielding batches already in memory."""

    kind = "memory"

    def __init__(self, batches: list[np.ndarray], schema: Schema):
        super().__init__()
        self.batches, self.schema = batches, schema

    def _open(self) -> None:
        self._it = iter(self.batches)

    def _next(self) -> np.ndarray | None:
        return next(self._it, None)


def exchange_alone(records: np.ndarray, schema: Schema, nodes: int, batch_rows: int) -> float:
    """Seconds to hash-partition ``records`` (split evenly over ``nodes`` producers) through
    split tables into ``nodes`` receivers, all threads of this process."""
    inboxes = [Inbox() for _ in range(nodes)]
    got = [0] * nodes

    def deliver(dest: int, exchange: str, producer: int, item, packets: int) -> None:
        inboxes[dest].put(exchange, producer, item, 600)

    def consume(i: int) -> None:
        for batch in ExchangeReceive(inboxes[i], "x", list(range(nodes)), schema, timeout=600):
            got[i] += len(batch)

    def produce(i: int, part: np.ndarray) -> None:
        source = _FromMemory([part[s:s + batch_rows] for s in range(0, len(part), batch_rows)],
                             schema)
        p = parse_partitioning("hash(unique1)", schema, nodes)
        p.fit(None, nodes)
        SplitTable(source, i, "x", "partition", list(range(nodes)), p, deliver,
                   lambda handle: None, lambda x, producer, item, packets:
                   deliver(producer, x, producer, item, packets)).run()

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(nodes)]
    threads += [threading.Thread(target=produce, args=(i, part))
                for i, part in enumerate(np.array_split(records, nodes))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if sum(got) != len(records):
        raise AssertionError(f"the exchange lost tuples: {sum(got)} of {len(records)} arrived")
    return elapsed


def overhead(tables: dict, repeat: int, log: Callable[[str], object]) -> list[tuple]:
    """(query, single-node s, one inline node s) for each of ``OVERHEAD_QUERIES``."""
    one_pct = tables["a"].num_rows // 100 - 1
    times: dict[str, list[float]] = {}
    for label, connect in (("single-node", lambda: minidb.connect()),
                           ("1 inline node", lambda: minidb.connect(nodes=1, timeout=600))):
        db = connect()
        try:
            for name, table in tables.items():
                db.create_table(name, table)
            for query, sql in OVERHEAD_QUERIES.items():
                sql = sql.format(one_pct=one_pct)
                took, result = best_of(repeat, lambda sql=sql, db=db: db.sql(sql).to_arrow())
                times.setdefault(query, []).append(took)
                log(f"{label}: {query}: {took:.3f} s, {result.num_rows:,} rows")
        finally:
            db.close()
    return [(q, t[0], t[1]) for q, t in times.items()]


def repartition(tables: dict, repeat: int, backend: str, log: Callable[[str], object]) -> dict:
    """The build phase of ``REPARTITION`` on two nodes of ``backend``: its ``data_moved`` row."""
    options = {"num_cpus": 2} if backend == "ray" else {}
    db = minidb.connect(nodes=2, backend=backend, timeout=600, **options)
    try:
        db.create_table("a", tables["a"])
        db.create_table("a2", tables["a2"])
        rows = []
        for _ in range(repeat):
            result = db.sql(REPARTITION)
            rows.append(next(p for p in result.data_moved() if p["name"] == "build"))
        best = max(rows, key=lambda p: p["mb_s_per_node"])
        log(f"{backend}: build phase moved {best['bytes'] / 1e6:.0f} MB in {best['wall_s']:.3f} s")
        return best
    finally:
        db.close()


def query_start(backend: str, nodes: int = 8, runs: int = 15) -> float:
    """Median wall seconds of ``SELECT COUNT(*)`` on a 1,000-tuple table over ``nodes`` nodes of
    ``backend``: what starting a statement's phases costs when there is no work in them."""
    options = {"num_cpus": 2} if backend == "ray" else {}
    db = minidb.connect(nodes=nodes, backend=backend, timeout=600, **options)
    try:
        db.create_table("t", datagen.wisconsin(1000, seed=0))
        times = sorted(db.sql("SELECT COUNT(*) FROM t").wall_s for _ in range(runs))
        return times[len(times) // 2]
    finally:
        db.close()


def measure(n: int, repeat: int, ray: bool, log: Callable[[str], object] = print) -> dict:
    """Every measurement of this module; see ``print_tables``."""
    a = datagen.wisconsin(n, seed=0)
    tables = {"a": a, "b": datagen.wisconsin(max(1, n // 10), seed=1), "a2": a}
    schema = Schema.from_arrow(a.schema, a)
    records = schema.records_from_arrow(a)
    alone = []
    for nodes in (1, 2):
        for batch_rows in (1024, 8192):
            took = min(exchange_alone(records, schema, nodes, batch_rows) for _ in range(repeat))
            alone.append((nodes, batch_rows, records.nbytes / nodes / took / 1e6))
    moved = {"inline": repartition(tables, repeat, "inline", log)}
    start = {"inline": query_start("inline")}
    if ray:
        moved["ray"] = repartition(tables, repeat, "ray", log)
        start["ray"] = query_start("ray")
    return {"alone": alone, "overhead": overhead(tables, repeat, log), "moved": moved,
            "start": start}


def print_tables(m: dict) -> None:
    print(f"{'exchange alone (memory to memory)':<40}{'MB/s per node':>14}")
    for nodes, batch_rows, rate in m["alone"]:
        print(f"{f'{nodes} node(s), batches of {batch_rows}':<40}{rate:>14.0f}")
    print()
    print(f"{'query':<28}{'single s':>10}{'1 node s':>10}{'ratio':>8}")
    for query, single, parallel in m["overhead"]:
        print(f"{query:<28}{single:>10.3f}{parallel:>10.3f}{parallel / single:>7.2f}x")
    print()
    print(f"{'repartitioning build, 2 nodes':<32}{'MB moved':>10}{'s':>8}{'MB/s per node':>15}")
    for backend, p in m["moved"].items():
        print(f"{backend:<32}{p['bytes'] / 1e6:>10.0f}{p['wall_s']:>8.3f}{p['mb_s_per_node']:>15.0f}")
    print()
    print(f"{'SELECT COUNT(*), 8 nodes, 1,000 tuples':<40}{'median ms':>14}")
    for backend, seconds in m["start"].items():
        print(f"{backend:<40}{seconds * 1000:>14.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true", help="leave out the Ray measurement")
    args = parser.parse_args()
    print_tables(measure(args.rows, args.repeat, not args.no_ray))


if __name__ == "__main__":
    main()
