"""The experiment commands: list, run (with --json), reproduce, report; user errors exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from minidb.cli import main
from minidb.results import ResultsStore


@pytest.fixture()
def store(tmp_path, monkeypatch):
    path = tmp_path / "results.duckdb"
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    return path


def test_list_names_every_experiment():
    out = CliRunner().invoke(main, ["list"])
    assert out.exit_code == 0
    assert "gamma.selection_speedup" in out.output and "tandem.scaleup" in out.output
    listed = json.loads(CliRunner().invoke(main, ["list", "tandem", "--json"]).output)
    assert {e["name"] for e in listed} == {"tandem.speedup", "tandem.scaleup"}


def test_run_prints_json_rows_and_stores_them(store):
    out = CliRunner().invoke(main, ["run", "gamma.selection_speedup", "--nodes", "1,2",
                                    "--scale", "0.02", "--json"])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert rows and {r["experiment"] for r in rows} == {"gamma.selection_speedup"}
    assert {r["column"] for r in rows} == {"nodes_1", "nodes_2"}
    stored = ResultsStore(store).rows(experiment="gamma.selection_speedup")
    assert len(stored) == len(rows)
    assert {r["run_id"] for r in stored} == {rows[0]["run_id"]}


@pytest.mark.parametrize("args, message", [
    (["run", "gamma.nothing"], "unknown experiment 'gamma.nothing'"),
    (["run", "gamma.page_size", "--set", "colour=red"], "no parameter 'colour'"),
    (["run", "gamma.page_size", "--nodes", "many"], "must be like"),
    (["run", "gamma.selection_speedup", "--profile", "cray"], "unknown hardware profile 'cray'"),
    (["run", "gamma.page_size", "--scale", "-1"], "scale must be a positive number"),
    (["run", "gamma.page_size", "--nodes", "0"], "nodes must be positive"),
    (["reproduce", "bubba"], "unknown paper 'bubba'"),
    (["report", "bubba"], "unknown paper 'bubba'"),
])
def test_user_errors_exit_2_with_one_line(store, args, message):
    out = subprocess.run([sys.executable, "-m", "minidb.cli", *args], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_bad_parameters_are_refused_before_a_run_starts(store):
    out = subprocess.run([sys.executable, "-m", "minidb.cli", "run", "gamma.selection_speedup",
                          "--profile", "cray", "--nodes", "1"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert not ResultsStore(store).runs()  # nothing ran, so nothing is recorded


def test_reproduce_then_report(store):
    runner = CliRunner()
    out = runner.invoke(main, ["reproduce", "tandem", "--quick"])
    assert out.exit_code == 0, out.output
    assert "tandem.speedup" in out.output and "tandem.scaleup" in out.output
    report = runner.invoke(main, ["report", "tandem"])
    assert report.exit_code == 0
    assert "Table 2" in report.output and "PASS" in report.output
    assert "reproduced cells within 10% of the paper" in report.output  # Table 2: ratio cells
    data = json.loads(runner.invoke(main, ["report", "tandem", "--json"]).output)
    cells = [c for c in data[0]["cells"] if c["reproduced"] is not None]
    assert cells and all(c["reference"] == "Table 2" for c in cells)
    failing = [f for f in data[0]["findings"] if f["status"] == "fail"]
    strict = runner.invoke(main, ["report", "tandem", "--strict"]).exit_code
    assert strict == (1 if failing else 0)
