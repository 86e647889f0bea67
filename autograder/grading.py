"""Grading a submission: the model of an assignment, and the loop that fills ``results.json``.

An ``Assignment`` has parts; a ``Part`` is one file of the submission registering one plugin,
graded by ``Case``s. Each case carries its inputs (JSON for the child, numpy arrays) and a
``check`` that turns the child's observation into a ``Verdict`` in the grader's process. Cases
are public or hidden: hidden ones live in the assignment's ``hidden/`` package, which the
student release leaves out, and Gradescope shows their results after the due date.

``grade_to_file`` is what the command line and Gradescope run: it writes ``results.json``
exactly once, in a ``finally``, whatever happened before (a submission that could not be read,
a grader bug, SIGTERM, a log nobody reads any more), so Gradescope always finds a valid file, and
it always holds one test per case: a case that could not be graded fails, saying why.

Every public case of every part is graded before any hidden case is sent to a child: a process
that has held a hidden case's inputs never writes the output of a public one, and its files in
the shared folders are gone before a public case could read them.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autograder.results import Results, TestResult, leaderboard_entry, write_results
from autograder.sandbox import (
    AutograderError,
    CaseOutcome,
    ChildJob,
    Limits,
    Sandbox,
    others_can_read,
    readable_stdlib,
    run_cases,
    sandbox_user,
)

HIDDEN_VISIBILITY = "after_due_date"
DEFAULT_LIMITS = Limits()


class Malformed(Exception):
    """The child's answer does not have the shape the harness writes: it was tampered with."""


@dataclass
class Verdict:
    """Whether a case passed, the feedback (``message``) and, for a failed case, the one line
    saying why (``reason``, else the message's first line), which the console shows too."""

    passed: bool
    message: str
    reason: str = ""

    def why(self) -> str:
        """The line that says why the case failed."""
        text = self.reason or self.message.strip().split("\n", 1)[0]
        return text if len(text) <= 300 else text[:297] + "..."


@dataclass
class Case:
    """One graded case: inputs for the child, and the check of what it reports."""

    id: str
    title: str
    points: float
    hidden: bool
    inputs: dict
    arrays: dict[str, np.ndarray]
    check: Callable[[Case, dict], Verdict]
    about: str = ""
    # what kind of input the case tries (``repeated values``, ``text column``...): every
    # category of a part's hidden cases has public cases too, with other data
    category: str = ""

    def job(self) -> dict:
        return {"id": self.id, **self.inputs}


@dataclass
class Part:
    """One file of the submission, registering one plugin, and the cases that grade it."""

    key: str
    title: str
    file: str
    plugin_kind: str
    plugin_name: str
    cases: list[Case]
    total: float = 0  # the part's points, hidden cases included (when they are not here)
    # a Gradescope leaderboard column: the grader's seconds for the part's cases, shown when
    # every case passed (a fast wrong answer ranks nowhere); "" for none
    leaderboard: str = ""

    @property
    def points(self) -> float:
        return sum(c.points for c in self.cases)


@dataclass
class Assignment:
    name: str
    title: str
    harness: Path
    parts: list[Part]
    hidden_included: bool
    protected: list[Path] = field(default_factory=list)  # must stay unreadable by submissions


def shown_list(items: list, limit: int = 16) -> str:
    """``[a, b, c]``, cut after ``limit`` items."""
    head = ", ".join(str(x) for x in items[:limit])
    return f"[{head}{', ...' if len(items) > limit else ''}]"


# -- grading ------------------------------------------------------------------------------------
def grade_to_file(name: str, submission: str | Path, results_path: str | Path, *,
                  limits: Limits = DEFAULT_LIMITS, user: str = "auto", log=print,
                  include_hidden: bool = True) -> Results:
    """Grade ``submission`` for assignment ``name`` and write ``results_path``, always, once
    (``include_hidden=False``: the public cases only, as ``submit`` checks before zipping).

    Raises ``AutograderError`` for a mistake in the call (unknown assignment, no submission
    directory) after writing a results file that says so.
    """
    from autograder.assignments import load

    start = time.monotonic()
    results = Results()
    previous = _raise_on_sigterm()
    log = _serialized(log)
    assignment = None
    try:
        assignment = load(name, include_hidden)
        grade(assignment, Path(submission), results, limits=limits, user=user, log=log)
        return results
    except AutograderError as exc:
        results.output = f"The submission could not be graded: {exc}"
        raise
    except (SystemExit, KeyboardInterrupt) as exc:
        log(f"stopped: {exc or type(exc).__name__}")
        results.output = (f"The autograder was stopped ({exc or type(exc).__name__}) before it "
                          "finished; submit again, or ask your instructor.")
        raise
    except BaseException as exc:
        log("".join(traceback.format_exception(exc)))
        results.output = (f"The autograder itself failed ({type(exc).__name__}) after grading "
                          f"{len(results.tests)} case(s); your instructor can see why in its log.")
        raise
    finally:
        if assignment is not None:
            _complete(assignment, results, results.output or "it was not graded")
        results.execution_time = time.monotonic() - start
        try:
            write_results(results_path, results)
        except OSError as exc:
            raise AutograderError(f"cannot write the results to {results_path}: "
                                  f"{exc.strerror or exc}") from None
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _raise_on_sigterm():
    """Turn SIGTERM into SystemExit, so ``finally`` blocks run; only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum, frame):
        raise SystemExit(f"stopped by signal {signum}")

    return signal.signal(signal.SIGTERM, stop)


def grade(assignment: Assignment, submission: Path, results: Results, *,
          limits: Limits = DEFAULT_LIMITS, user: str = "auto", log=print) -> Results:
    """Fill ``results`` with one test per case of ``assignment``, graded on ``submission``."""
    if not submission.is_dir():
        raise AutograderError(f"submission directory {submission} does not exist")
    log = _serialized(log)
    who = sandbox_user(user)
    log(f"grading {assignment.name} from {submission}; children run as "
        f"{who.name if who else 'the current user (not root: no separate user)'}; "
        f"limits: {limits.describe()}")
    if who is not None:
        mirror = readable_stdlib()
        if mirror:
            log(f"the standard library under {sys.base_prefix} is not readable by other users: "
                f"submissions import it from a readable copy ({', '.join(mirror.values())})")
        for path in assignment.protected:
            if path.exists() and others_can_read(path):
                log(f"WARNING: submissions can read {path}; make the grader's files private "
                    "(the Gradescope setup.sh runs chmod -R go-rwx on its source)")
    outcomes: dict[str, CaseOutcome] = {}
    import_errors: dict[str, str] = {}
    with Sandbox(assignment.harness, submission, who, [p.file for p in assignment.parts]) as sandbox:
        if sandbox.skipped:
            log("left out of the submission: " + "; ".join(sandbox.skipped))
        for hidden in (False, True):  # every public case first, then the hidden ones
            threads = []
            for part in assignment.parts:
                cases = [c for c in part.cases if c.hidden == hidden]
                show_import = not hidden or not any(not c.hidden for c in part.cases)
                if cases:
                    t = threading.Thread(target=_run_part, daemon=True, args=(
                        part, cases, sandbox, limits, outcomes, import_errors, show_import, log))
                    t.start()
                    threads.append(t)
            for t in threads:
                t.join()
    for i, part in enumerate(assignment.parts, start=1):
        for j, case in enumerate(part.cases, start=1):
            outcome = outcomes.get(case.id) or CaseOutcome(
                case.id, error="it was never run: the autograder failed; your instructor can see "
                               "why in its log")
            verdict = _verdict(case, outcome, log)
            log(_console_line(part, case, outcome, verdict))
            test = _test_result(part, case, outcome, verdict)
            test.number = f"{i}.{j}"
            results.tests.append(test)
    results.leaderboard = _leaderboard(assignment, outcomes, results)
    results.output = _summary(assignment, results, sandbox.skipped)
    log(f"score {results.score:g} / {results.max_score:g}")
    return results


def _console_line(part: Part, case: Case, outcome: CaseOutcome, verdict: Verdict) -> str:
    """``  A A5 FAILED (0.12 s): why`` -- the reason results.json gives, on one line."""
    line = f"  {part.key} {case.id} {'passed' if verdict.passed else 'FAILED'} " \
           f"({outcome.seconds:.2f} s)"
    if not verdict.passed:
        line += ": " + verdict.why().strip()
    if case.hidden:
        line += " [hidden: students see it after the due date]"
    return line


def _complete(assignment: Assignment, results: Results, reason: str) -> None:
    """Add a failed test, saying ``reason``, for every case ``results`` has none for."""
    have = {t.name for t in results.tests}
    for i, part in enumerate(assignment.parts, start=1):
        for j, case in enumerate(part.cases, start=1):
            test = _test_result(part, case, CaseOutcome(case.id), Verdict(False, reason))
            if test.name not in have:
                test.number = f"{i}.{j}"
                results.tests.append(test)


def _serialized(log):
    """``log`` made safe to call from the parts' threads, one whole line at a time, with any
    text (a lone surrogate a submission wrote); once it fails (a closed pipe), it stays quiet
    rather than stop the grading."""
    if getattr(log, "serialized", False):
        return log
    lock = threading.Lock()
    broken: list[BaseException] = []

    def locked(message: str) -> None:
        text = str(message).encode("utf-8", "backslashreplace").decode("utf-8")
        with lock:
            if broken:
                return
            try:
                log(text)
            except (OSError, ValueError) as exc:
                broken.append(exc)

    locked.serialized = True
    return locked


def _run_part(part: Part, cases: list[Case], sandbox: Sandbox, limits: Limits,
              out: dict[str, CaseOutcome], import_errors: dict[str, str], show_import: bool,
              log) -> None:
    """Run ``cases`` of one part in children; put an outcome for each of them in ``out``."""
    try:
        problem = sandbox.found.problems.get(part.file)
        if problem is not None:
            top = sorted(p.name for p in sandbox.submission.iterdir())[:20]
            message = (f"{problem} (found: {', '.join(top) or 'nothing'}); "
                       f"part {part.key} needs it")
            out.update({c.id: CaseOutcome(c.id, error=message) for c in cases})
            return
        if part.key in import_errors:  # importing holds no case: the same failure again
            out.update({c.id: CaseOutcome(c.id, error=import_errors[part.key]) for c in cases})
            return
        job = ChildJob(part.key, sandbox.found.files[part.file], part.plugin_kind,
                       part.plugin_name, [c.job() for c in cases],
                       {k: v for c in cases for k, v in c.arrays.items()})
        run = run_cases(sandbox, job, limits, log=log, show_import_output=show_import)
        if run.import_error is not None:
            import_errors[part.key] = run.import_error
        out.update({o.case_id: o for o in run.outcomes})
    except BaseException as exc:  # a grader bug: these cases fail with the reason, others go on
        log(f"  part {part.key}: {''.join(traceback.format_exception(exc))}")
        for c in cases:
            out.setdefault(c.id, CaseOutcome(c.id, error=(
                f"the autograder failed while running this case ({type(exc).__name__}); "
                "your instructor can see why in its log")))


def _verdict(case: Case, outcome: CaseOutcome, log) -> Verdict:
    if outcome.observation is None:
        error = outcome.error or "no answer"
        return Verdict(False, error, "; ".join(x.strip() for x in error.splitlines() if x.strip()))
    try:
        return case.check(case, outcome.observation)
    except Malformed as exc:
        return Verdict(False, f"the answer reported for this case is malformed: {exc}")
    except Exception as exc:  # a hostile answer the checks did not foresee: fail it, keep going
        log(f"  check of case {case.id} raised: {''.join(traceback.format_exception(exc))}")
        return Verdict(False, f"the answer reported for this case could not be checked "
                              f"({type(exc).__name__})")


def _test_result(part: Part, case: Case, outcome: CaseOutcome, verdict: Verdict) -> TestResult:
    lines = [("passed" if verdict.passed else "FAILED") + ": " + verdict.message.strip()]
    if case.about:
        lines.append(f"(the case: {case.about})")
    if outcome.printed.strip():
        lines.append("your code printed:\n" + outcome.printed)
    return TestResult(
        name=f"{part.key}. {part.title}: {case.id} {case.title}",
        number="",
        max_score=case.points,
        score=case.points if verdict.passed else 0.0,
        passed=verdict.passed,
        output="\n".join(lines),
        visibility=HIDDEN_VISIBILITY if case.hidden else "visible",
        tags=[f"part {part.key}", "hidden" if case.hidden else "public"],
    )


def _leaderboard(assignment: Assignment, outcomes: dict[str, CaseOutcome],
                 results: Results) -> list[dict]:
    """One column per part that has one: the seconds the grader measured for the part's cases,
    smaller first, for a part whose every case passed."""
    entries = []
    for part in assignment.parts:
        tests = [t for t in results.tests if f"part {part.key}" in t.tags]
        if not part.leaderboard or not tests or not all(t.passed for t in tests):
            continue
        seconds = sum(outcomes[c.id].wall_s for c in part.cases if c.id in outcomes)
        entries.append(leaderboard_entry(part.leaderboard, seconds, order="asc"))
    return entries


def _summary(assignment: Assignment, results: Results, skipped: list[str]) -> str:
    lines = [f"{assignment.title}: {results.score:g} / {results.max_score:g}"]
    for part in assignment.parts:
        tests = [t for t in results.tests if f"part {part.key}" in t.tags]
        public = [t for t in tests if "public" in t.tags]
        lines.append(f"  part {part.key}, {part.title} ({part.file}): "
                     f"{sum(t.score for t in tests):g} / {part.points:g}"
                     f" (public cases: {sum(t.score for t in public):g} / "
                     f"{sum(t.max_score for t in public):g})")
    hidden = sum(p.total - sum(c.points for c in p.cases if not c.hidden)
                 for p in assignment.parts)
    if assignment.hidden_included:
        lines.append("Hidden cases count toward the score; their results are shown after the due date.")
    else:
        lines.append(f"This copy of the autograder holds only the public cases; the hidden ones "
                     f"({hidden:g} points) are scored on Gradescope when you submit, and their "
                     "results are shown after the due date.")
    if skipped:
        lines.append("Left out of your submission: " + "; ".join(skipped))
    return "\n".join(lines)
