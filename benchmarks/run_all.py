"""Run the minidb / DuckDB benchmarks and print one table of ratios, with the environment.

Run:  .venv/bin/python benchmarks/run_all.py [--rows 1000000] [--repeat 3] [--skip-load]
                                                [--skip-parallel] [--no-ray] [--skip-commit]

The measurements are those of ``bench_vs_duckdb.py`` (minidb on one node against DuckDB on one
thread, best of ``repeat`` runs each); this script only adds what a reader needs to compare two
runs: the Python, numpy, pyarrow and DuckDB versions, the CRC-32 implementation the page checksums
use (ISA-L's from the ``isal`` package, or zlib's where it is not installed), the processor and the
cores this process may use. Then ``bench_load.py``'s table: bulk-load MB/s and peak memory over
the input, batched and whole-table, one node and two, against DuckDB's load (each case in its own
subprocess; ``--skip-load`` leaves it out). Last, ``bench_exchange.py``'s tables: the exchange
alone (MB/s per node), the parallel engine on one inline node against the single-node engine, and
a repartitioning phase on two nodes inline and on Ray, and the median wall time of a trivial
statement on 8 nodes, inline and on Ray (``--skip-parallel`` leaves them out,
``--no-ray`` only Ray). Then ``bench_lhstar.py``'s tables: LH* operations per second inline and
on Ray, messages per 10^6 operations, load factors (``--skip-lhstar`` leaves them out). Then
``bench_sort.py``'s tables: the Volcano sort on one process against DuckDB and numpy, and on 1-8
processes with its exchange MB/s (``--skip-sort`` leaves them out). Last, ``bench_commit.py``'s
tables: messages and log forces per commit of every commit protocol on the simulated network,
group commit against presumed abort under load, and the real engine's statements per second and
log forces per statement with and without a log, on one node and with two-phase commit on 1, 2
and 4 inline nodes (``--skip-commit`` leaves them out). Wall
times on a shared machine vary from run to run; compare ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_commit as commit  # noqa: E402
import bench_exchange as exchange  # noqa: E402
import bench_lhstar as lhstar  # noqa: E402
import bench_sort as sort  # noqa: E402
from bench_load import report as load_report  # noqa: E402
from bench_vs_duckdb import measure  # noqa: E402

from minidb.storage import page  # noqa: E402


def environment() -> dict[str, str]:
    """What the timings depend on, one line each."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pyarrow": pa.__version__,
        "duckdb": duckdb.__version__,
        "page checksum crc32": page.crc32.__module__,
        "processor": _processor(),
        "cores usable / online": f"{len(os.sched_getaffinity(0))} / {os.cpu_count()}",
        "load average (1 min)": f"{os.getloadavg()[0]:.1f}",
    }


def _processor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-load", action="store_true", help="leave out the bulk-load table")
    parser.add_argument("--skip-parallel", action="store_true",
                        help="leave out the parallel engine's tables (exchange, overhead, Ray)")
    parser.add_argument("--no-ray", action="store_true", help="leave out the Ray measurement")
    parser.add_argument("--skip-lhstar", action="store_true", help="leave out the LH* tables")
    parser.add_argument("--skip-sort", action="store_true",
                        help="leave out the Volcano sort tables (bench_sort.py)")
    parser.add_argument("--skip-commit", action="store_true",
                        help="leave out the commit tables (bench_commit.py)")
    args = parser.parse_args()

    env = environment()
    rows, page_rows = measure(args.rows, args.repeat, log=lambda line: print(line, file=sys.stderr))
    env["load average (1 min), after"] = f"{os.getloadavg()[0]:.1f}"
    width = max(map(len, env))
    for key, value in env.items():
        print(f"{key:<{width}}  {value}")
    print(f"{'rows':<{width}}  {args.rows:,} (best of {args.repeat})")
    print()
    print(f"{'operation':<28}{'minidb s':>10}{'duckdb s':>10}{'ratio':>8}"
          f"{'duckdb/parquet s':>18}{'ratio':>8}")
    for label, t_mini, t_duck, t_parq in rows:
        print(f"{label:<28}{t_mini:>10.3f}{t_duck:>10.3f}{t_mini / t_duck:>7.1f}x"
              f"{t_parq:>18.3f}{t_mini / t_parq:>7.1f}x")
    (_, t4, c4), (_, t32, c32) = page_rows
    print(f"{'full scan 4 KB / 32 KB pages':<28}{t4:>10.3f}{t32:>10.3f}{t4 / t32:>7.1f}x"
          f"   ({c4['pages_read']:,} / {c32['pages_read']:,} pages read)")
    if not args.skip_load:
        print()
        load_report(args.rows)
    if not args.skip_parallel:
        print()
        exchange.print_tables(exchange.measure(args.rows, args.repeat, not args.no_ray,
                                               log=lambda line: print(line, file=sys.stderr)))
    if not args.skip_lhstar:
        print()
        lhstar.report(ops=100_000, ray_ops=5_000, ray=not args.no_ray)
    if not args.skip_sort:
        print()
        sort.report([args.rows], [1, 2, 4, 8], repeat=1, ray=not args.no_ray)
    if not args.skip_commit:
        print()
        commit.report(ray=not args.no_ray)


if __name__ == "__main__":
    main()
