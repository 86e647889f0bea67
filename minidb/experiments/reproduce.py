"""Run experiments into the results store, and compare what is stored with the papers.

``run_and_store`` runs one experiment as one recorded run (``minidb.results.ResultsStore``): a run
that raises is recorded as failed, with no rows. ``reproduce`` runs every experiment of a paper.
``build_report`` gathers, for ``minidb report``, the cell-by-cell comparison of stored rows with
the published values and the findings checked on those rows.

Which runs the report compares: for each experiment, the latest ok run made with the paper's
configuration, that is with the experiment's defaults or its ``--quick`` settings (what
``minidb reproduce`` runs; the backend may differ, it does not change the modeled clock). A run
with other parameters (``minidb run --scale 0.2``, a run from the explorer) is exploratory: it
stays in the store and in the explorer, and the report neither shows nor counts it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from minidb.cost.profiles import PROFILES
from minidb.errors import MinidbError
from minidb.experiments.findings import FindingResult, check_findings
from minidb.experiments.registry import (
    PAPERS,
    Experiment,
    Params,
    Progress,
    check_paper,
    experiments,
    get_experiment,
)
from minidb.results import ResultsStore


def _nodes_of(params: Params) -> list[int] | None:
    for key in ("nodes", "partitions"):
        value = params.get(key)
        if isinstance(value, int):
            return [value]
        if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            return value
    return None


def run_and_store(experiment: Experiment | str, store: ResultsStore,
                  overrides: Params | None = None, quick: bool = False,
                  progress: Progress | None = None) -> tuple[str, list[dict]]:
    """Run one experiment and store it as one run; returns (run id, rows)."""
    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    params = exp.parameters(overrides, quick)
    profiles = sorted({str(params[k]) for k in ("profile",) if k in params}) or None
    with store.record_run(exp.name, exp.paper, params, backend=params.get("backend"),
                          profile=profiles[0] if profiles else None,
                          scale=params.get("scale"), nodes=_nodes_of(params)) as run:
        rows = exp.call(params, progress)
        run.extend(rows)
    return run.run_id, rows


def papers_with_experiments() -> list[str]:
    """The papers that have registered experiments, in the order of ``PAPERS``."""
    have = {e.paper for e in experiments()}
    return [p for p in PAPERS if p in have]


def is_paper_configuration(exp: Experiment, parameters: Params) -> bool:
    """Whether a run of ``exp`` with ``parameters`` used the paper's configuration: the
    experiment's defaults, or its quick settings (the backend is left out of the comparison)."""
    def canonical(params: Params) -> str:
        return json.dumps({k: v for k, v in params.items() if k != "backend"}, sort_keys=True,
                          default=str)

    given = canonical(parameters)
    return any(given == canonical(json.loads(json.dumps(exp.parameters(quick=quick))))
               for quick in (False, True))


def used_paper_configuration(run: dict) -> bool | None:
    """Whether a stored ``run`` used its experiment's paper configuration (what ``minidb report``
    compares); None when its experiment is no longer registered, so nobody can tell."""
    try:
        exp = get_experiment(run["experiment"])
    except MinidbError:
        return None
    return is_paper_configuration(exp, run["parameters"])


def stored_runs(store: ResultsStore, paper: str | None = None) -> list[dict]:
    """Every stored run (of ``paper``), oldest first, each with ``paper_configuration`` added
    (``used_paper_configuration``): the listing of ``minidb runs``."""
    if paper is not None:
        check_paper(paper)
    return [{**r, "paper_configuration": used_paper_configuration(r)}
            for r in store.runs(paper=paper)]


def paper_runs(store: ResultsStore, paper: str) -> list[dict]:
    """For each experiment of ``paper``, its latest ok run made with the paper's configuration
    (experiments without one are left out), in registration order."""
    runs = store.runs(paper=paper, status="ok")
    chosen = []
    for exp in experiments(paper):
        mine = [r for r in runs if r["experiment"] == exp.name
                and is_paper_configuration(exp, r["parameters"])]
        if mine:
            chosen.append(mine[-1])  # runs() lists oldest first
    return chosen


@dataclass(frozen=True)
class Finished:
    """One experiment of a ``reproduce``: its stored run, or the error that ended it."""

    experiment: str
    run_id: str | None
    rows: int
    seconds: float
    error: str | None = None
    """One line: why the experiment failed (None: it finished and its rows are stored)."""


class ReproduceError(MinidbError):
    """Some experiments of a ``reproduce`` failed; the others finished and are stored.
    ``finished`` lists every experiment, failed or not, in the order they ran."""

    def __init__(self, paper: str, finished: list[Finished]):
        self.paper, self.finished = paper, finished
        failed = [f for f in finished if f.error is not None]
        stored = len(finished) - len(failed)
        super().__init__(f"{paper}: {len(failed)} of {len(finished)} experiments failed "
                         f"({', '.join(f.experiment for f in failed)}); the {stored} others "
                         "finished and are stored")


def reproduce(paper: str, store: ResultsStore, quick: bool = False,
              progress_for: Callable[[Experiment], Progress] | None = None,
              overrides: Params | None = None,
              on_finished: Callable[[Finished], None] | None = None
              ) -> list[tuple[str, str, int]]:
    """Run every experiment of ``paper``; returns (experiment, run id, rows) per experiment.
    ``overrides`` (e.g. ``{"backend": "ray"}``) apply to every experiment that takes them; with
    Ray, one Ray instance and one pool of node actors serve all of them (``runtime``).

    ``on_finished`` hears of each experiment as it ends. One that fails is recorded as a failed
    run and the others still run; at the end a ``ReproduceError`` names the failed ones."""
    from minidb.experiments.machines import runtime

    check_paper(paper)
    finished: list[Finished] = []
    with runtime((overrides or {}).get("backend")):
        for exp in experiments(paper):
            mine = {k: v for k, v in (overrides or {}).items() if k in exp.defaults}
            progress = progress_for(exp) if progress_for else Progress()
            start = time.perf_counter()
            try:
                run_id, rows = run_and_store(exp, store, mine, quick, progress)
                done = Finished(exp.name, run_id, len(rows), time.perf_counter() - start)
            except Exception as err:  # recorded as a failed run; Ctrl-C still stops everything
                why = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                done = Finished(exp.name, None, 0, time.perf_counter() - start, why)
            finished.append(done)
            if on_finished is not None:
                on_finished(done)
    if any(f.error is not None for f in finished):
        raise ReproduceError(paper, finished)
    return [(f.experiment, f.run_id, f.rows) for f in finished]


@dataclass
class PaperReport:
    """What ``minidb report`` shows for one paper."""

    paper: str
    title: str
    cells: list[dict] = field(default_factory=list)
    """Reference cells with a number (status ok or prose) and their modeled reproduction."""
    findings: list[FindingResult] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)
    """The runs whose rows the report compares."""
    other_runs: int = 0
    """Ok runs of the paper that the report leaves out (exploratory, or older)."""

    @property
    def compared(self) -> list[dict]:
        """Reproduced cells, calibration cells left out (a constant was derived from them)."""
        return [c for c in self.cells if c.get("ratio") is not None and not c.get("calibration")]

    @property
    def within_2x(self) -> int:
        return sum(1 for c in self.compared if c["within_2x"])

    @property
    def within_bar(self) -> int:
        """Compared cells within their bar (``judge_cells``): 2x, or a relative error for ratios."""
        return sum(1 for c in self.compared if c.get("within", c["within_2x"]))

    def _bars(self) -> str:
        tolerances = sorted({c["tolerance"] for c in self.compared if c.get("tolerance")})
        if not tolerances:
            return "within a factor of 2 of the paper"
        ratio = " or ".join(f"{t:.0%}" for t in tolerances)
        if all(c.get("tolerance") for c in self.compared):
            return f"within {ratio} of the paper (ratio cells)"
        return f"within their bar of the paper ({ratio} for ratio cells, a factor of 2 otherwise)"

    def summary(self) -> str:
        passed = sum(f.status == "pass" for f in self.findings)
        failed = sum(f.status == "fail" for f in self.findings)
        unchecked = sum(f.status == "not checked" for f in self.findings)
        numbered = [c for c in self.cells]
        return (f"{self.paper}: {self.within_bar} of {len(self.compared)} reproduced cells "
                f"{self._bars()} ({len(numbered) - len(self.compared)} published cells "
                f"not reproduced by the stored runs); findings: {passed} pass, {failed} fail, "
                f"{unchecked} not checked")


def build_report(store: ResultsStore, paper: str | None = None,
                 runs: str = "paper") -> list[PaperReport]:
    """A report per paper (only papers with stored runs, unless ``paper`` is named).

    ``runs="paper"`` (``minidb report``) compares each experiment's latest run made with the
    paper's configuration (``paper_runs``); ``runs="latest"`` (the explorer) its latest ok run,
    whatever its parameters."""
    if runs not in ("paper", "latest"):
        raise ValueError(f"runs must be 'paper' or 'latest', not {runs!r}")
    papers = [check_paper(paper)] if paper else list(PAPERS)
    reports = []
    for p in papers:
        stored = store.runs(paper=p)
        if paper is None and not stored:
            continue
        if runs == "paper":
            used = paper_runs(store, p)
            ids = [r["run_id"] for r in used]
            rows = [_decoded(r) for run_id in ids for r in store.rows(run_id=run_id)]
            compared = store.compare(p, run_ids=ids)
        else:
            used = [r for r in stored if r["status"] == "ok"]
            rows = [_decoded(r) for r in store.rows(paper=p)]
            compared = store.compare(p)
        cells = judge_cells(mark_calibration([c for c in compared if c.get("status") in
                                              ("ok", "prose") and c.get("clock") in
                                              ("modeled", None)]))
        report = PaperReport(p, PAPERS[p], cells, check_findings(rows, p), used)
        report.other_runs = sum(1 for r in stored if r["status"] == "ok") - len(used)
        reports.append(report)
    return reports


def total_line(reports: list[PaperReport]) -> str:
    """One line over several papers' reports: cells within their bar (``judge_cells``) and
    findings by status."""
    compared = sum(len(r.compared) for r in reports)
    within = sum(r.within_bar for r in reports)
    count = {s: sum(f.status == s for r in reports for f in r.findings)
             for s in ("pass", "fail", "not checked")}
    return (f"total over {len(reports)} papers: {within} of {compared} reproduced cells within "
            f"their bar (a factor of 2, or the relative error of a ratio table); findings: "
            f"{count['pass']} pass, {count['fail']} fail, {count['not checked']} not checked")


def calibration_cells() -> set[tuple[str, str, str, str]]:
    """(paper, reference, row, column) of every published cell a profile constant was derived
    from (``HardwareProfile.calibration_cells``)."""
    return {cell for profile in PROFILES.values() for cell in profile.calibration_cells}


def mark_calibration(cells: list[dict]) -> list[dict]:
    """``cells`` (from ``ResultsStore.compare``) with the calibration cells flagged: they keep
    their ratio but are not counted as reproduced (``within_2x`` None, ``calibration`` True)."""
    used = calibration_cells()
    out = []
    for c in cells:
        if (c.get("paper"), c.get("reference"), c.get("row"), c.get("column")) in used:
            c = {**c, "calibration": True, "within_2x": None}
        out.append(c)
    return out


RATIO_TABLES: dict[tuple[str, str], float] = {("tandem", "Table 2"): 0.10}
"""(paper, reference) of tables that hold only ratios (speedups, scaleups) -> the largest relative
error a reproduced cell may have. A factor of 2 cannot tell a right model from a wrong one on
numbers such as NonStop SQL's batch scaleups (0.98 to 1.10): these tables are judged by
``|reproduced / published - 1|`` instead. Every other cell keeps the factor-of-2 bar."""


def judge_cells(cells: list[dict]) -> list[dict]:
    """``cells`` with ``within`` (the cell is reproduced within its bar) and ``tolerance`` (the
    relative-error bar of a ratio table, None for the factor-of-2 bar); calibration cells and
    cells without a ratio get ``within`` None."""
    out = []
    for c in cells:
        tolerance = RATIO_TABLES.get((c.get("paper"), c.get("reference")))
        if c.get("calibration") or c.get("ratio") is None:
            within = None
        elif tolerance is not None:
            within = abs(c["ratio"] - 1) <= tolerance
        else:
            within = c.get("within_2x")
        out.append({**c, "within": within, "tolerance": tolerance})
    return out


def _decoded(row: dict) -> dict:
    params = row.get("parameters")
    if isinstance(params, str):
        row = {**row, "parameters": json.loads(params) if params else {}}
    return row
