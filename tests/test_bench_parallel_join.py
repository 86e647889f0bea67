"""The parallel join benchmark runs at a small size on inline nodes and on Ray; every
configuration's rows equal DuckDB's (the benchmark checks it); no timing is asserted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_parallel_join  # noqa: E402


def test_inline_rows_and_columns(capsys):
    results = bench_parallel_join.report(rows=3000, repeat=1, node_counts=[1, 2, 4],
                                         backends=["inline"])
    out = capsys.readouterr().out
    assert "modeled speedup" in out and "split MB/s/node" in out
    assert {(r["join"], r["nodes"]) for r in results} == {
        (j, n) for j in bench_parallel_join.QUERIES for n in (1, 2, 4)}
    # the co-located join moves nothing between nodes; the repartitioned one does
    assert all(r["remote_mb"] == 0 for r in results if r["join"] == "co_located")
    assert all(r["remote_mb"] > 0 for r in results if r["join"] == "repartition" and r["nodes"] > 1)


@pytest.mark.ray
def test_on_ray(ray_session, capsys):
    results = bench_parallel_join.report(rows=2000, repeat=1, node_counts=[1, 2],
                                         backends=["ray"])
    assert {r["backend"] for r in results} == {"ray"} and len(results) == 4
