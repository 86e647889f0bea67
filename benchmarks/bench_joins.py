"""Every join plug-in on one node against DuckDB (one thread): Gamma's joinABprime.

Run:  .venv/bin/python benchmarks/bench_joins.py [--rows 1000000] [--repeat 2]

A is a Wisconsin relation of ``rows`` tuples and Bprime one of ``rows / 10`` (Gamma §6.1);
joinABprime joins them on unique1 and returns three columns. Each join algorithm runs it with
memory for the whole build input (the pages Bprime's projected tuples fill, as the default hash
join counts them, plus four), and Hybrid hash once more with a quarter of that. Each run's rows are checked equal to
DuckDB's (by count and by the sum of one column), and the table prints wall times, the ratio to
DuckDB, and what each join counted (spilled pages, overflows). No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import time

import duckdb

import minidb
from minidb import datagen

QUERY = ("SELECT a.unique1, a.unique2, b.unique2 AS b2 FROM a JOIN bprime b "
         "ON a.unique1 = b.unique1")
ALGORITHMS = ["hash_join", "simple_hash", "hybrid_hash", "grace_hash", "sort_merge"]


def best_of(repeat: int, fn):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def join_counters(result) -> str:
    """The counters of the join operator of a result, in a few words."""
    keep = ("overflows", "partitions_spilled", "spill_pages_written", "runs", "sort_pages_written",
            "memory_load_passes")
    parts = [f"{k.split('.')[-1]}={v}" for k, v in result.counters.items()
             if k.split(".")[-1] in keep and v]
    return ", ".join(parts) or "no spill"


def measure(rows: int, repeat: int, log=print) -> list[tuple]:
    a = datagen.wisconsin(rows, seed=0)
    bprime = datagen.wisconsin(max(1, rows // 10), seed=1)
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    con.register("a_arrow", a)
    con.register("b_arrow", bprime)
    con.execute("CREATE TABLE a AS SELECT * FROM a_arrow")
    con.execute("CREATE TABLE bprime AS SELECT * FROM b_arrow")
    duck_s, duck = best_of(repeat, lambda: con.sql(QUERY).to_arrow_table())
    want = (duck.num_rows, sum(duck.column("b2").to_pylist()))
    out = [("DuckDB, 1 thread", None, duck_s, 1.0, "")]
    with minidb.connect(page_size=4096, buffer_pages=1024) as db:
        db.create_table("a", a)
        db.create_table("bprime", bprime)
        # the pages the build input fills as the join sees it (only the columns it carries)
        probe = db.sql(QUERY, hint="hash_join")
        build_pages = next(v for k, v in probe.counters.items() if k.endswith(".build_pages"))
        fits = build_pages + 4
        runs = [(name, fits) for name in ALGORITHMS] + [("hybrid_hash", max(6, fits // 4))]
        for name, memory in runs:
            db.memory_pages = memory
            wall, res = best_of(repeat, lambda name=name: db.sql(QUERY, hint=name))
            got = res.to_arrow()
            assert (got.num_rows, sum(got.column("b2").to_pylist())) == want, name
            out.append((name, memory, wall, wall / duck_s, join_counters(res)))
            log(f"  {name} ({memory} pages): {wall:.2f} s")
    return out


def report(rows: int, repeat: int) -> None:
    print(f"joinABprime: {rows:,} x {max(1, rows // 10):,} Wisconsin tuples, one node, 4 KB pages")
    table = measure(rows, repeat)
    print(f"\n{'join':<18}{'memory':>8}{'wall s':>9}{'/ DuckDB':>10}  counters")
    for name, memory, wall, ratio, counters in table:
        pages = "" if memory is None else f"{memory}"
        print(f"{name:<18}{pages:>8}{wall:>9.2f}{ratio:>10.1f}  {counters}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    if args.rows < 10 or args.repeat < 1:
        parser.error("--rows must be at least 10 and --repeat at least 1")
    report(args.rows, args.repeat)


if __name__ == "__main__":
    main()
