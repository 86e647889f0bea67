"""The Volcano sort benchmark runs at a small size and prints its tables; a sort that returns a
wrong order makes it raise. No timing is asserted."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_sort  # noqa: E402

from minidb.volcano.records import sort_records  # noqa: E402

ROWS = 20_000


def test_tables_rows_and_columns(capsys):
    results = bench_sort.main(["--rows", str(ROWS), "--processes", "1,2", "--no-ray"])
    out = capsys.readouterr().out
    for line in ("python", "numpy", "duckdb", "os.cpu_count", "load average (1 min)"):
        assert f"\n{line} " in f"\n{out}"
    for label in ("minidb parallel_sort, 1 process", "duckdb ORDER BY key, threads=1",
                  "numpy np.sort(keys)", "numpy argsort(keys), take records"):
        assert label in out
    assert "minidb / DuckDB = " in out and "the aim of 5x" in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("runtime"))
    for column in ("wall s", "modeled s", "wall speedup", "modeled speedup", "exchange MB/s"):
        assert column in header
    table = out.split(header, 1)[1].splitlines()[1:3]
    assert [line.split()[:2] for line in table] == [["inline", "1"], ["inline", "2"]]
    assert bench_sort.NO_RAY_NOTE in out

    (result,) = results
    assert result["rows"] == ROWS
    one, two = result["parallel"]
    assert one is result["single"] and (one.processes, two.processes) == (1, 2)
    # one process sends nothing to another; with two, about half the records cross
    assert one.exchanged_bytes == 0
    assert 0.4 < two.exchanged_bytes / (ROWS * 100) < 0.6
    assert one.modeled_s > 0 and two.modeled_s > 0


def test_wrong_order_raises(monkeypatch):
    real = bench_sort.parallel_sort

    def swapped(records, setup):
        run = real(records, setup)
        if setup.processes == 2:  # the ranges handed back in the wrong order
            run.partitions.reverse()
        return run

    monkeypatch.setattr(bench_sort, "parallel_sort", swapped)
    with pytest.raises(bench_sort.WrongOrder, match="2 process"):
        bench_sort.report([2000], [1, 2], repeat=1)


def test_lost_record_raises():
    records = sort_records(200)
    out = records[np.argsort(records["key"], kind="stable")]
    want = out["key"].copy()
    bench_sort.check_output("sorted", out, want)
    doubled = out.copy()
    doubled["payload"][1] = doubled["payload"][0]  # same keys, one record twice
    with pytest.raises(bench_sort.WrongOrder, match="lost"):
        bench_sort.check_output("doubled", doubled, want)


def test_command_line_errors():
    with pytest.raises(SystemExit):
        bench_sort.main(["--rows", "1000000,x"])
    with pytest.raises(SystemExit):
        bench_sort.main(["--processes", "0"])


def test_ray_rows_count_what_inline_counts(ray_session, capsys):
    (result,) = bench_sort.report([ROWS], [1, 2], repeat=1, ray=True)
    out = capsys.readouterr().out
    assert bench_sort.RAY_NOTE in out
    assert [m.processes for m in result["ray"]] == [1, 2]
    for inline, on_ray in zip(result["parallel"], result["ray"], strict=True):
        assert on_ray.modeled_s == pytest.approx(inline.modeled_s)
        assert on_ray.exchanged_bytes == inline.exchanged_bytes
