"""``minidb demo``: the Gamma paper's selection queries on one node, checked against DuckDB.

Generates a Wisconsin relation (Gamma paper, Section 4), loads it twice as Gamma did: once as a
heap with a non-clustered B+ tree on unique2, once stored in unique1 order with a clustered
index. Then it runs the selections of Table 1 plus the aggregates of Table 7 and prints, for each,
the access path the optimizer chose, the pages it read, the buffer hits, the wall time, and
whether the rows match DuckDB's answer on the same data.

It is a smoke test a person can read, not an experiment: the parallel runtime and the modeled
clock of the papers' hardware come later.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import duckdb

import minidb
from minidb import datagen
from minidb.display import format_table


def demo_queries(rows: int) -> list[tuple[str, str, str | None]]:
    """(description, SQL, hint) for the Wisconsin queries, constants scaled to ``rows``."""
    one, ten = max(1, rows // 100), max(1, rows // 10)
    mid = rows // 2
    return [
        ("1% nonindexed selection", f"SELECT * FROM heap WHERE unique1 BETWEEN {mid} AND {mid + one - 1}", None),
        ("10% nonindexed selection", f"SELECT * FROM heap WHERE unique1 BETWEEN {mid} AND {mid + ten - 1}", None),
        ("1% selection, non-clustered index", f"SELECT * FROM heap WHERE unique2 BETWEEN 0 AND {one - 1}", None),
        ("10% selection, non-clustered index", f"SELECT * FROM heap WHERE unique2 BETWEEN 0 AND {ten - 1}", None),
        ("1% selection, clustered index", f"SELECT * FROM clus WHERE unique1 BETWEEN 0 AND {one - 1}", None),
        ("10% selection, clustered index", f"SELECT * FROM clus WHERE unique1 BETWEEN 0 AND {ten - 1}", None),
        ("single tuple select", f"SELECT * FROM clus WHERE unique1 = {mid}", None),
        ("MIN scalar aggregate", "SELECT MIN(unique2) AS m FROM heap", None),
        ("MIN by 100 partitions", "SELECT onePercent, MIN(unique3) AS m FROM heap GROUP BY onePercent", None),
        ("SUM by 100 partitions", "SELECT onePercent, SUM(unique3) AS s FROM heap GROUP BY onePercent", None),
    ]


def run_demo(rows: int = 100_000, page_size: int = 4096, buffer_pages: int = 1024,
             policy: str = "lru", echo: Callable[[str], None] = print) -> list[dict]:
    """Run the demonstration; return one summary dict per query (also printed via ``echo``)."""
    start = time.perf_counter()
    wisc = datagen.wisconsin(rows, seed=0)
    echo(f"generated {rows:,} Wisconsin tuples (208 bytes each) in {time.perf_counter() - start:.2f} s")
    oracle = duckdb.connect()
    oracle.register("w", wisc)
    oracle.execute("CREATE TABLE heap AS SELECT * FROM w")
    oracle.execute("CREATE TABLE clus AS SELECT * FROM w")

    summary = []
    with minidb.connect(page_size=page_size, buffer_pages=buffer_pages, buffer_policy=policy) as db:
        start = time.perf_counter()
        db.create_table("heap", wisc)
        db.create_index("heap", "unique2")
        db.create_table("clus", wisc)
        db.create_index("clus", "unique1", clustered=True)
        heap = db.table("heap")
        echo(f"loaded heap ({heap.num_pages:,} pages of {page_size} bytes) and clus in "
             f"{time.perf_counter() - start:.2f} s; buffer pool {buffer_pages} frames, policy {policy}\n")
        for label, sql, hint in demo_queries(rows):
            result = db.sql(sql, hint=hint)
            got = result.to_arrow()
            expected = oracle.sql(sql).to_arrow_table()
            matches = _same_rows(got, expected)
            c = result.counters
            summary.append({
                "query": label, "access path": result.access_path, "rows": got.num_rows,
                "seq reads": c.get("pages_read_seq", 0), "rand reads": c.get("pages_read_random", 0),
                "buffer hits": c.get("buffer_hits", 0), "ms": round(result.wall_s * 1000, 1),
                "matches DuckDB": "yes" if matches else "NO",
            })
    import pyarrow as pa

    echo(format_table(pa.Table.from_pylist(summary), max_rows=len(summary)))
    echo("\nPages are counted exactly (sequential = the next page after the previous transfer).")
    echo("Try: minidb demo --page-size 32768   or   --policy mru --buffer-pages 64")
    return summary


def _same_rows(got, expected) -> bool:
    if got.num_rows != expected.num_rows or got.column_names != expected.column_names:
        return False
    a = sorted(tuple(r.values()) for r in got.to_pylist())
    b = sorted(tuple(int(v) if isinstance(v, int) else v for v in r.values()) for r in expected.to_pylist())
    return all(x == y or _close(x, y) for x, y in zip(a, b, strict=True))


def _close(x: tuple, y: tuple) -> bool:
    return all(u == v or (isinstance(u, float) and abs(u - float(v)) < 1e-6 * max(1, abs(u)))
               for u, v in zip(x, y, strict=True))
