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
    assert {e["name"] for e in listed} == {"tandem.speedup", "tandem.scaleup",
                                           "tandem.oltp_scaleup", "tandem.index_maintenance"}


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


USER_ERRORS = [
    (["run", "gamma.nothing"], "unknown experiment 'gamma.nothing'"),
    (["run", "gamma.page_size", "--set", "colour=red"], "no parameter 'colour'"),
    (["run", "gamma.page_size", "--nodes", "many"], "must be like"),
    (["run", "gamma.selection_speedup", "--profile", "cray"], "unknown hardware profile 'cray'"),
    (["run", "gamma.page_size", "--scale", "-1"], "scale must be a positive number"),
    (["run", "gamma.page_size", "--nodes", "0"], "nodes must be positive"),
    (["run", "gamma.page_size", "--scale", "inf"], "parameter scale must be like 1.0, not inf"),
    (["run", "gamma.page_size", "--set", "scale=-inf"], "parameter scale must be like 1.0"),
    (["run", "gamma.selection_speedup", "--nodes", "99999999999"], "nodes may be at most 256"),
    (["run", "tandem.speedup", "--nodes", "2,100000"], "partitions may be at most 256"),
    (["run", "tandem.oltp_scaleup", "--set", "transactions=0"],
     "transactions must be a whole number from 1"),
    (["run", "tandem.oltp_scaleup", "--scale", "2"], "scale must be above 0 and at most 1"),
    (["run", "tandem.oltp_scaleup", "--set", "processors=0"], "processors must be whole numbers"),
    (["run", "tandem.index_maintenance", "--set", "inserts=0"], "inserts must be a whole number"),
    (["run", "tandem.index_maintenance", "--set", "rows=-1"], "rows must be a positive"),
    (["run", "lhstar.partition_size", "--set", "seed=-1"], "seed must be a whole number from 0"),
    (["run", "lhstar.scalability", "--set", "seed=99999999999999999999"], "seed must be"),
    (["run", "lhstar.scalability", "--set", "per_node_millions=99999999999"],
     "more than minidb simulates"),
    (["run", "lhstar.algorithm", "--set", "servers=100000"], "servers may be at most 256"),
    (["run", "lhstar.algorithm", "--set", "operations=99999999999999"], "operations may be at"),
    (["run", "gamma.selection", "--scale", "1e300"], "scale must be a positive number, at most"),
    (["run", "gamma.selection_speedup", "--nodes", "1,2,1"], "has 1 twice"),
    (["run", "volcano.pools", "--set", "pools=99999999999"], "pools must lie in 1-16"),
    (["run", "gamma.page_size", "--nodes", "4", "--set", "nodes=2"],
     "nodes is given twice (--nodes and --set 'nodes=2')"),
    (["run", "ingres.locking", "--set", "threads=1", "--set", "threads=2"], "given twice"),
    (["run", "volcano.initial", "--scale", "100"], "scale must be above 0 and at most 1"),
    (["run", "ingres.commit_protocols", "--set", "participants=99999999999"], "at most 32"),
    (["run", "ingres.commit_protocols", "--set", "seeds=99999999999"], "at most 1,000"),
    (["run", "ingres.locking", "--set", "accounts=99999999999999999999"], "at most 1,000,000"),
    (["run", "ingres.locking", "--set", "threads=100000"], "threads must be a whole number"),
    (["reproduce", "bubba"], "unknown paper 'bubba'"),
    (["report", "bubba"], "unknown paper 'bubba'"),
    (["runs", "bubba"], "unknown paper 'bubba'"),
    (["run", "gamma.page_size", "--store", "/no-such-dir-16/results.duckdb"],
     "directory /no-such-dir-16 does not exist"),
    (["report", "--store", "/no-such-dir-16/results.duckdb"], "choose another --store"),
    (["runs", "--store", "/no-such-dir-16/results.duckdb"], "choose another --store"),
]
#: the cases also run as a fresh ``python -m minidb.cli`` in the default run: an unknown name
#: and a bad parameter of ``run``, an unknown paper for ``reproduce``, ``report`` and ``runs``,
#: and a store in a missing folder (the others, about 2 s each, with ``-m slow``)
IN_A_PROCESS = {"unknown experiment 'gamma.nothing'", "no parameter 'colour'",
                "unknown paper 'bubba'", "directory /no-such-dir-16 does not exist"}


@pytest.mark.parametrize("args, message", USER_ERRORS)
def test_user_errors_exit_2_with_one_line(store, args, message):
    """Every user error, in this process (as tests/test_cli.py checks the other commands')."""
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2, (out.output, out.exception)
    assert isinstance(out.exception, SystemExit), out.exception
    assert message in out.stderr and "Traceback" not in out.output
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    case if case[1] in IN_A_PROCESS else pytest.param(*case, marks=pytest.mark.slow)
    for case in USER_ERRORS])
def test_user_errors_exit_2_with_one_line_from_a_fresh_process(store, args, message):
    out = subprocess.run([sys.executable, "-m", "minidb.cli", *args], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["runs"], ["report"], ["run", "ingres.retrieve"]])
def test_minidb_results_in_a_missing_directory_is_refused(tmp_path, monkeypatch, command):
    missing = tmp_path / "no-such-dir" / "results.duckdb"
    monkeypatch.setenv("MINIDB_RESULTS", str(missing))
    out = subprocess.run([sys.executable, "-m", "minidb.cli", *command], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "does not exist" in out.stderr and "Traceback" not in out.stderr
    assert not missing.parent.exists()  # no new, empty store under a mistyped name


def test_bad_parameters_are_refused_before_a_run_starts(store):
    out = subprocess.run([sys.executable, "-m", "minidb.cli", "run", "gamma.selection_speedup",
                          "--profile", "cray", "--nodes", "1"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert not ResultsStore(store).runs()  # nothing ran, so nothing is recorded


def test_reproduce_then_report(store):
    # Distributed INGRES: the quickest paper to reproduce (a few seconds)
    runner = CliRunner()
    out = runner.invoke(main, ["reproduce", "ingres", "--quick"])
    assert out.exit_code == 0, out.output
    assert "ingres.updates" in out.output and "ingres.join" in out.output
    report = runner.invoke(main, ["report", "ingres"])
    assert report.exit_code == 0
    assert "Table 1" in report.output and "PASS" in report.output
    assert "reproduced cells within a factor of 2 of the paper" in report.output
    data = json.loads(runner.invoke(main, ["report", "ingres", "--json"]).output)
    cells = [c for c in data[0]["cells"] if c["reproduced"] is not None]
    assert cells and {"Table 1", "Table 3", "Table 4"} <= {c["reference"] for c in cells}
    failing = [f for f in data[0]["findings"] if f["status"] == "fail"]
    strict = runner.invoke(main, ["report", "ingres", "--strict"]).exit_code
    assert strict == (1 if failing else 0)


def _summary(output: str, paper: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"{paper}: ")
                and "reproduced cells" in line)


def test_report_compares_only_runs_with_the_papers_configuration(store):
    """An exploratory run (other parameters) after `reproduce` leaves the report as it was; it
    stays in the store, where the explorer's view of the latest runs sees it."""
    runner = CliRunner()
    assert runner.invoke(main, ["reproduce", "ingres", "--quick"]).exit_code == 0
    before = runner.invoke(main, ["report", "ingres"]).output
    explore = runner.invoke(main, ["run", "ingres.updates", "--scale", "0.05"])
    assert explore.exit_code == 0, explore.output
    after = runner.invoke(main, ["report", "ingres"]).output
    assert _summary(after, "ingres") == _summary(before, "ingres")
    assert "1 other stored run(s) of this paper" in after
    from minidb.experiments.reproduce import build_report

    latest = build_report(ResultsStore(store), "ingres", runs="latest")[0]
    assert any(r["parameters"].get("scale") == 0.05 for r in latest.runs)
    # a later run with the paper's configuration is what the report then compares
    again = runner.invoke(main, ["run", "ingres.updates", "--quick"])
    assert again.exit_code == 0
    runs = json.loads(runner.invoke(main, ["report", "ingres", "--json"]).output)[0]["runs"]
    newest = ResultsStore(store).runs(experiment="ingres.updates")[-1]["run_id"]
    assert newest in runs


def test_reproduce_all_runs_every_paper_with_experiments(store, monkeypatch):
    import minidb.experiments.reproduce as reproduce_module

    calls = []
    monkeypatch.setattr(reproduce_module, "reproduce",
                        lambda paper, store, quick, progress_for, overrides, **kw: calls.append(
                            (paper, quick)) or [])
    out = CliRunner().invoke(main, ["reproduce", "--all", "--quick"])
    assert out.exit_code == 0, out.output
    assert calls == [("gamma", True), ("tandem", True), ("volcano", True), ("lhstar", True),
                     ("ingres", True)]


@pytest.mark.parametrize("args", [["reproduce"], ["reproduce", "gamma", "--all"]])
def test_reproduce_needs_one_paper_or_all(store, args):
    out = subprocess.run([sys.executable, "-m", "minidb.cli", *args], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and "name one paper or give --all" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def _store_speedups(path, speedup_at_16: float) -> None:
    """One tandem.speedup run with the paper's (quick) configuration and chosen rows."""
    from minidb.experiments import get_experiment

    params = get_experiment("tandem.speedup").parameters(quick=True)
    rows = [{"reference": "Table 2", "row": "table_scan", "column": f"vlx_f{n}",
             "metric": "speedup", "value": value, "unit": "ratio", "clock": "modeled",
             "parameters": {"partitions": n, "baseline_partitions": 2}}
            for n, value in ((2, 1.0), (16, speedup_at_16))]
    with ResultsStore(path).record_run("tandem.speedup", "tandem", params) as run:
        run.extend(rows)


def test_report_without_a_paper_prints_every_paper_and_a_total(store):
    _store_speedups(store, 7.2)
    out = CliRunner().invoke(main, ["report"])
    assert out.exit_code == 0, out.output
    assert all(f"== {paper}:" in out.output
               for paper in ("gamma", "tandem", "volcano", "lhstar", "ingres"))
    assert "No run with the paper's configuration is stored: run `minidb reproduce gamma" \
        in out.output
    total = out.output.strip().splitlines()[-1]
    assert total.startswith("total over 5 papers: ") and "findings:" in total


def test_strict_exits_1_only_when_a_finding_fails(store, tmp_path):
    _store_speedups(store, 7.2)  # 0.90 of the ideal 8: near-linear
    runner = CliRunner()
    assert runner.invoke(main, ["report", "tandem", "--strict"]).exit_code == 0
    _store_speedups(store, 3.4)  # 0.43 of ideal: the finding fails
    assert runner.invoke(main, ["report", "tandem"]).exit_code == 0
    assert runner.invoke(main, ["report", "tandem", "--strict"]).exit_code == 1


def test_strict_on_a_store_without_paper_runs_exits_1(store):
    """--strict is a gate: an empty (new, or mistyped) store has no evidence, so it fails."""
    runner = CliRunner()
    assert runner.invoke(main, ["report", "tandem"]).exit_code == 0
    out = runner.invoke(main, ["report", "tandem", "--strict"])
    assert out.exit_code == 1
    assert "no finding could be checked" in out.stderr and "Traceback" not in out.output
    assert runner.invoke(main, ["report", "--strict"]).exit_code == 1


def test_a_failing_experiment_is_named_and_the_others_are_stored(store, monkeypatch):
    """`minidb reproduce` goes on after a failed experiment: it prints a line per experiment
    (also into a pipe), names the failed one with its error, stores the others, exits 1."""
    import minidb.experiments.reproduce as reproduce_module
    from minidb.errors import MinidbError
    from minidb.experiments.registry import Experiment

    def fails(params, progress):
        raise MinidbError("node 3 could not start")

    fake = [Experiment(f"tandem.{n}", "tandem", n, ("Table 2",), f, {"backend": "inline"})
            for n, f in [("first", lambda p, q: []), ("broken", fails),
                         ("last", lambda p, q: [])]]
    monkeypatch.setattr(reproduce_module, "experiments", lambda paper=None: fake)
    out = CliRunner().invoke(main, ["reproduce", "tandem", "--quick"])
    assert out.exit_code == 1, out.output
    lines = out.stdout.splitlines()
    assert lines[0].startswith("tandem.first") and "0 rows" in lines[0]
    assert lines[1].startswith("tandem.broken") and "FAILED" in lines[1]
    assert "node 3 could not start" in lines[1] and lines[2].startswith("tandem.last")
    assert "1 of 3 experiments failed (tandem.broken)" in out.stderr
    runs = {r["experiment"]: r["status"] for r in ResultsStore(store).runs()}
    assert runs == {"tandem.first": "ok", "tandem.broken": "failed", "tandem.last": "ok"}


def test_report_starts_with_a_legend(store):
    _store_speedups(store, 7.2)
    out = CliRunner().invoke(main, ["report", "tandem"])
    assert out.exit_code == 0, out.output
    legend, _, rest = out.output.partition("== tandem:")
    assert legend.startswith("How to read this report")
    for term in ("ratio", "minidb / paper", "within 2x", "within 10%", "calibration", "prose",
                 "PASS", "FAIL", "NOT CHECKED"):
        assert term in legend, term
    assert "Findings" in rest  # the legend comes once, before the first paper
    assert "How to read this report" not in rest


def test_runs_lists_stored_runs_with_their_configuration(store):
    _store_speedups(store, 7.2)  # the paper's (quick) configuration
    runner = CliRunner()
    explore = runner.invoke(main, ["run", "tandem.speedup", "--scale", "0.005",
                                   "--set", "machines=vlx", "--nodes", "2,4"])
    assert explore.exit_code == 0, explore.output
    out = runner.invoke(main, ["runs", "tandem"])
    assert out.exit_code == 0, out.output
    header, *lines = out.output.splitlines()
    for column in ("run id", "experiment", "started (UTC)", "status", "paper config"):
        assert column in header
    stored = ResultsStore(store).runs()
    assert [line.split()[0] for line in lines[:2]] == [r["run_id"] for r in stored]
    assert lines[0].endswith("yes") and lines[1].endswith("no")
    assert "2 run(s) in" in lines[2]
    listed = json.loads(runner.invoke(main, ["runs", "--json"]).output)
    assert [r["paper_configuration"] for r in listed] == [True, False]
    assert "no runs of gamma" in runner.invoke(main, ["runs", "gamma"]).output


def test_runs_shows_a_failed_run_with_its_error(store):
    path = ResultsStore(store)
    run_id = path.begin_run("tandem.speedup", "tandem", {"scale": 0.5})
    path.fail_run(run_id, "node 3 could not start")
    out = CliRunner().invoke(main, ["runs"])
    assert out.exit_code == 0, out.output
    assert "failed" in out.output and "error: node 3 could not start" in out.output


def test_a_store_in_a_missing_directory_is_not_created(tmp_path):
    target = tmp_path / "typo" / "results.duckdb"
    out = CliRunner().invoke(main, ["runs", "--store", str(target)])
    assert out.exit_code == 2 and "does not exist" in out.output
    assert not target.parent.exists()


def test_run_text_output_has_a_header_and_named_columns(store):
    out = CliRunner().invoke(main, ["run", "gamma.selection_speedup", "--nodes", "1",
                                    "--scale", "0.02"])
    assert out.exit_code == 0, out.output
    title, header, first, *_ = out.stdout.splitlines()
    run_id = ResultsStore(store).runs()[-1]["run_id"]
    assert title.startswith(f"run {run_id}: ") and "modeled clock" in title
    assert header.split() == ["reference", "row", "column", "metric", "value", "unit"]
    assert first.split()[1].startswith("select_") and first.split()[-1] == "s"
