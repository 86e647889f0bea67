"""Bulk-load speed and memory: minidb's batched load against the whole-table load and DuckDB.

Run:  .venv/bin/python benchmarks/bench_load.py [--rows 1000000] [--repeat 1] [--batch-rows 65536]

Every case runs in a fresh subprocess, so that its peak memory (``VmHWM``, see ``peak_bytes``)
is its own. A case first makes its input (the Wisconsin relation as one Arrow
table, or nothing for the ``generate_batches`` case, which generates slices as it loads), notes
the resident memory it holds then, loads, and reports

* MB/s: the relation's bytes as stored (rows x 208-byte tuples) over the load's wall time;
* peak over input: the peak resident memory of the process minus its resident memory just
  before the load (so the input table itself is not counted, the load's own memory is).

Cases: one node and two inline nodes (round robin), each with the batched load (``create_table``)
and the old whole-table load (the previous ``create_table`` body, kept here: convert the whole
table, partition it, store each fragment at once); one node loading from ``generate_batches``
(no input table at all); and DuckDB (one thread) loading the same Arrow table with
``CREATE TABLE t AS SELECT * FROM arrow_table``, its own bulk path. The ratio column is the
case's time over DuckDB's. Wall times on a shared machine vary; compare one run's rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

#: case id -> (label, engine, path)
CASES = {
    "single": ("1 node, batched", "single", "batched"),
    "single-old": ("1 node, whole table (old)", "single", "whole"),
    "single-gen": ("1 node, from generate_batches", "single", "generated"),
    "two": ("2 inline nodes, batched", "parallel", "batched"),
    "two-old": ("2 inline nodes, whole table (old)", "parallel", "whole"),
    "duckdb": ("duckdb (1 thread)", "duckdb", "batched"),
}


def rss_bytes() -> int:
    """This process's resident memory now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_bytes() -> int:
    """This process's peak resident memory so far: ``VmHWM``, the high-water mark of its own
    address space. (``ru_maxrss`` survives ``exec``: a child of a large parent, such as
    ``run_all.py`` holding a million tuples, would report the parent's size at the fork.)"""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # no VmHWM: not Linux


def old_single_load(db, name: str, data) -> None:
    """The whole-table load as ``Database.create_table`` did it before batches."""
    from minidb.catalog import Table
    from minidb.storage.schema import Schema

    layout = Schema.from_arrow(data.schema, data)
    records = layout.records_from_arrow(data, what=f"table {name!r}")
    table = Table.create(db.disk, db.buffer, name, layout, records)
    db.catalog.add(table)
    db.checkpoint()


def old_parallel_load(pdb, name: str, data) -> None:
    """The whole-table load as ``ParallelDatabase.create_table`` did it before batches."""
    from minidb.catalog import _stats_of
    from minidb.parallel.partitioners import parse_partitioning
    from minidb.storage.schema import Schema

    shadow = pdb.host.create_table(name, data.slice(0, 0), schema=Schema.from_arrow(data.schema, data))
    records = shadow.schema.records_from_arrow(data, what=f"table {name!r}")
    p = parse_partitioning("round_robin", shadow.schema, len(pdb.disk))
    p.fit(records, len(pdb.disk))
    parts = p.partition(records)
    pdb.backend.call_all("create_fragment", {
        n: (name, shadow.schema, parts[i], "heap", None) for i, n in enumerate(pdb.disk)}, "load")
    shadow.stats = {c.name.lower(): _stats_of(records[c.name]) for c in shadow.schema.columns}
    shadow._num_records = len(records)
    pdb.schemes[name.lower()] = p
    pdb._save()
    pdb._take_counters()


def run_case(engine: str, path: str, rows: int, batch_rows: int) -> dict:
    """One measurement, in this process: returns seconds, rss before the load and the peak."""
    import minidb
    from minidb.datagen import generate_batches, wisconsin

    data = None if path == "generated" else wisconsin(rows, seed=0)
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads TO 1")
        con.register("arrow_table", data)
    else:
        db = minidb.connect() if engine == "single" else minidb.connect(nodes=2, backend="inline")
    before = rss_bytes()
    start = time.perf_counter()
    if engine == "duckdb":
        con.execute("CREATE TABLE t AS SELECT * FROM arrow_table")
    elif path == "whole":
        (old_single_load if engine == "single" else old_parallel_load)(db, "w", data)
    elif path == "generated":
        db.create_table("w", generate_batches("wisconsin", rows, seed=0, batch_rows=batch_rows),
                        batch_rows=batch_rows)
    else:
        db.create_table("w", data, batch_rows=batch_rows)
    seconds = time.perf_counter() - start
    peak = peak_bytes()
    if engine != "duckdb":
        db.close()
    return {"seconds": seconds, "before": before, "peak": peak}


def measure(case: str, rows: int, batch_rows: int, repeat: int = 1) -> dict:
    """Run ``case`` in ``repeat`` fresh subprocesses; the fastest time, the largest memory."""
    _, engine, path = CASES[case]
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, __file__, "--child", engine, path, "--rows", str(rows),
             "--batch-rows", str(batch_rows)],
            capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {"seconds": min(r["seconds"] for r in runs),
            "over_input": max(r["peak"] - r["before"] for r in runs),
            "before": max(r["before"] for r in runs)}


def report(rows: int, batch_rows: int = 65_536, repeat: int = 1, cases: list[str] | None = None,
           out=print) -> None:
    """Measure the cases and print one table: seconds, MB/s, peak memory over the input, and
    the time over DuckDB's."""
    megabytes = rows * 208 / 1e6
    out(f"loading {rows:,} Wisconsin tuples = {megabytes:.0f} MB as stored; batches of "
        f"{batch_rows:,} rows ({batch_rows * 208 / 1e6:.1f} MB); best of {repeat}; "
        f"load average {os.getloadavg()[0]:.1f}")
    results = {c: measure(c, rows, batch_rows, repeat) for c in (cases or list(CASES))}
    duck = results.get("duckdb")
    out(f"{'case':<36}{'seconds':>9}{'MB/s':>8}{'input MB':>10}{'peak over input MB':>20}"
        f"{'x duckdb':>10}")
    for case, r in results.items():
        ratio = f"{r['seconds'] / duck['seconds']:>9.1f}x" if duck else ""
        out(f"{CASES[case][0]:<36}{r['seconds']:>9.2f}{megabytes / r['seconds']:>8.0f}"
            f"{r['before'] / 1e6:>10.0f}{r['over_input'] / 1e6:>20.0f}{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, of: {', '.join(CASES)}")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_case(*args.child, args.rows, args.batch_rows)))
        return
    report(args.rows, args.batch_rows, args.repeat, args.cases.split(","))


if __name__ == "__main__":
    main()
