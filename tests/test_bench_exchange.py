"""The exchange benchmark runs at a small size and its figures add up (no timing asserted)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_exchange  # noqa: E402


def test_the_exchange_benchmark_measures_every_table(capsys):
    m = bench_exchange.measure(3000, 1, ray=False, log=lambda line: None)
    assert [(nodes, rows) for nodes, rows, _ in m["alone"]] == [(1, 1024), (1, 8192), (2, 1024),
                                                                (2, 8192)]
    assert all(rate > 0 for _, _, rate in m["alone"])
    assert [q for q, _, _ in m["overhead"]] == list(bench_exchange.OVERHEAD_QUERIES)
    build = m["moved"]["inline"]
    assert build["name"] == "build" and build["bytes"] == 3000 * 208 and build["senders"] == 2
    assert set(m["start"]) == {"inline"} and m["start"]["inline"] > 0
    bench_exchange.print_tables(m)
    out = capsys.readouterr().out
    assert "MB/s per node" in out and "median ms" in out
