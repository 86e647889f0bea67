"""The LH* benchmark runs at a small size and its figures add up (no timing asserted)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_lhstar  # noqa: E402


def test_the_lhstar_benchmark_prints_every_table(capsys):
    r = bench_lhstar.load_and_look_up(4, 2000, "inline")
    assert r["loader"].requests == 2000 and r["reader"].replies == 2000
    assert r["messages"].requests == r["loader"].requests + r["reader"].requests
    bench_lhstar.report(ops=2000, ray_ops=1, ray=False)
    out = capsys.readouterr().out
    assert out.count("inline ") == 4 and "ray " not in out
    per_insert = float(re.search(r"per insert \(request \+ forwards\): ([\d.]+)", out)[1])
    assert 1.0 <= per_insert < 1.05
    assert "controlled / uncontrolled" in out
