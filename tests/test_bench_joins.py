"""The join benchmark runs at a small size, and every algorithm's rows agree with DuckDB's
(the benchmark asserts it); no timing is asserted."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_joins  # noqa: E402


def test_the_join_benchmark_prints_every_algorithm(capsys):
    bench_joins.report(rows=20_000, repeat=1)
    out = capsys.readouterr().out
    for name in bench_joins.ALGORITHMS:
        assert f"\n{name:<18}" in out
    assert out.count("hybrid_hash") >= 3  # the roomy and the quarter-memory runs (and the log)
    assert "partitions_spilled" in out  # GRACE always spills; Hybrid with a quarter of memory
