"""minidb (one node, inline) against DuckDB (one thread) on the same generated data.

Run:  .venv/bin/python benchmarks/bench_vs_duckdb.py [--rows 1000000] [--repeat 3]

Each operation is run ``repeat`` times in each system and the best time is kept. minidb reads its
relation from its own page files on disk (through its buffer pool, which is smaller than the
relation, so every run reads all pages again, from the operating system's file cache). DuckDB
runs the same SQL twice: on an in-memory DuckDB table (its best case: columnar, compressed, only
the columns a query touches), and straight on a Parquet file of the same data. Every system
returns its result as an Arrow table, and the row counts are checked equal. The ratios are minidb
time / DuckDB time.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections.abc import Callable

import duckdb

import minidb
from minidb import datagen


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def measure(n: int, repeat: int, log: Callable[[str], object] = print) -> tuple[list, list]:
    """Time the three operations in minidb and in DuckDB (in memory and on Parquet), and the
    full scan at 4 KB and 32 KB pages. Returns ``(rows, page_rows)``: rows of (operation,
    minidb s, DuckDB s, DuckDB-on-Parquet s) and of (page size, minidb s, counters)."""
    t0 = time.perf_counter()
    wisc = datagen.wisconsin(n, seed=0)
    sortrec = datagen.sortrec(n, seed=0)
    log(f"generated {n:,} Wisconsin tuples and {n:,} sort records in {time.perf_counter() - t0:.1f} s")

    con = duckdb.connect()
    con.execute("SET threads TO 1")
    bprime = datagen.wisconsin(max(1, n // 10), seed=1)  # Gamma's Bprime: a tenth of A
    con.register("wisc_arrow", wisc)
    con.register("sort_arrow", sortrec)
    con.register("bprime_arrow", bprime)
    con.execute("CREATE TABLE wisc AS SELECT * FROM wisc_arrow")
    con.execute("CREATE TABLE wisc2 AS SELECT * FROM wisc_arrow")
    con.execute("CREATE TABLE bprime AS SELECT * FROM bprime_arrow")
    con.execute("CREATE TABLE sortrec AS SELECT * FROM sort_arrow")
    parquet_dir = tempfile.TemporaryDirectory(prefix="minidb-bench-")
    for name, table in (("wisc", wisc), ("wisc2", wisc), ("bprime", bprime), ("sortrec", sortrec)):
        datagen.write_parquet(table, f"{parquet_dir.name}/{name}.parquet")

    one_pct = n // 100
    queries = {
        "1% selection, full scan": f"SELECT * FROM wisc WHERE unique2 BETWEEN 0 AND {one_pct - 1}",
        "group by 100 groups": "SELECT onePercent, MIN(unique3) AS mn, SUM(unique3) AS sm, COUNT(*) AS c "
                               "FROM wisc GROUP BY onePercent",
        f"sort {n:,} sortrec": "SELECT * FROM sortrec ORDER BY key",
        "joinABprime, 3 columns": "SELECT wisc.unique1, wisc.unique2, bprime.unique2 "
                                  "FROM wisc JOIN bprime ON wisc.unique1 = bprime.unique1",
        "join A x A, 2 columns": "SELECT wisc.unique1, wisc2.unique2 "
                                 "FROM wisc JOIN wisc2 ON wisc.unique1 = wisc2.unique1",
    }

    rows = []
    with minidb.connect(page_size=4096, buffer_pages=1024, memory_pages=25_000) as db:
        t0 = time.perf_counter()
        db.create_table("wisc", wisc)
        db.create_table("wisc2", wisc)
        db.create_table("bprime", bprime)
        db.create_table("sortrec", sortrec)
        log(f"loaded the relations into minidb in {time.perf_counter() - t0:.1f} s\n")
        for label, sql in queries.items():
            t_mini, res = best_of(repeat, lambda sql=sql: db.sql(sql).to_arrow())
            t_duck, ref = best_of(repeat, lambda sql=sql: con.sql(sql).to_arrow_table())
            on_parquet = sql
            for name in ("wisc2", "wisc", "bprime", "sortrec"):  # wisc2 before its prefix
                on_parquet = re.sub(rf"\b(FROM|JOIN) {name}\b",
                                    rf"\1 '{parquet_dir.name}/{name}.parquet' AS {name}", on_parquet)
            t_parq, ref2 = best_of(repeat, lambda q=on_parquet: con.sql(q).to_arrow_table())
            assert res.num_rows == ref.num_rows == ref2.num_rows, (label, res.num_rows, ref.num_rows)
            rows.append((label, t_mini, t_duck, t_parq))

    scan = queries["1% selection, full scan"]
    page_rows = []
    for page_size in (4096, 32768):
        with minidb.connect(page_size=page_size, buffer_pages=max(64, 4 * 1024 * 1024 // page_size)) as db:
            db.create_table("wisc", wisc)
            t, res = best_of(repeat, lambda: db.sql(scan))
            page_rows.append((page_size, t, res.counters))
    parquet_dir.cleanup()
    return rows, page_rows


def print_tables(rows: list, page_rows: list) -> None:
    print(f"{'operation':<28}{'minidb s':>10}{'duckdb s':>10}{'ratio':>8}"
          f"{'duckdb/parquet s':>18}{'ratio':>8}")
    for label, t_mini, t_duck, t_parq in rows:
        print(f"{label:<28}{t_mini:>10.3f}{t_duck:>10.3f}{t_mini / t_duck:>7.1f}x"
              f"{t_parq:>18.3f}{t_mini / t_parq:>7.1f}x")
    print()
    print(f"{'full scan, page size':<28}{'minidb s':>10}{'pages read':>12}")
    for page_size, t, counters in page_rows:
        pages = counters.get("pages_read_seq", 0) + counters.get("pages_read_random", 0)
        print(f"{page_size:<28}{t:>10.3f}{pages:>12,}")
    print(f"4 KB / 32 KB wall-time ratio: {page_rows[0][1] / page_rows[1][1]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print_tables(*measure(args.rows, args.repeat))


if __name__ == "__main__":
    main()
