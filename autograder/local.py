"""What a student runs on their own machine: check one part in a notebook, and hand in.

* ``check_part("lab1", "A", StudentRangeUniform)`` runs a part's public cases on a class, in
  this process (it is the student's own code, on the student's own machine: no sandbox), and
  prints one line per case with the grader's own reason when it fails. The lab notebook calls it.
* ``submit("lab1", out)`` (``python -m autograder submit lab1 --out submission.zip``) gathers
  the graded files from the lab's folder, grades the public cases in the sandbox exactly as
  the grader does, prints the score, and writes the zip to upload. Missing files are a
  one-line error (exit status 2); a low score is not an error, the zip is written all the same.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from autograder.grading import Assignment, Case, Malformed, Part, Verdict
from autograder.sandbox import AutograderError


@dataclass
class LocalResult:
    """One public case run in this process."""

    case: Case
    verdict: Verdict

    def line(self) -> str:
        state = "passed" if self.verdict.passed else "FAILED: " + self.verdict.why()
        return f"{self.case.id} {self.case.title}: {state}"


def check_part(name: str, part_key: str, plugin: type, show=print) -> list[LocalResult]:
    """Run the public cases of part ``part_key`` of assignment ``name`` on ``plugin`` (a class)
    here, printing one line per case and the points; return the results."""
    from minidb.errors import NotImplementedYet

    assignment = _public(name)
    part = _part(assignment, part_key)
    harness = _harness(assignment)
    results = []
    with tempfile.TemporaryDirectory(prefix="minidb-check-") as work, _cwd(work):
        for case in part.cases:
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    observation = harness.run_case(plugin, case.job(), case.arrays)
                verdict = case.check(case, observation)
                stub = "NotImplementedYet: "  # a policy's error is reported, not raised
                if not verdict.passed and stub in verdict.message:
                    raise NotImplementedYet(verdict.message.split(stub, 1)[1].split("\n")[0])
            except NotImplementedYet as missing:  # said once, for every case
                show(f"part {part.key} is not written yet: {missing}")
                results += [LocalResult(c, Verdict(False, "not written yet"))
                            for c in part.cases[len(results):]]
                break
            except Malformed as exc:
                verdict = Verdict(False, f"the answer is malformed: {exc}")
            except Exception as exc:  # the student's code raised: say so, go on
                verdict = Verdict(False, f"{type(exc).__name__}: {exc}")
            results.append(LocalResult(case, verdict))
            show(results[-1].line())
    got = sum(r.case.points for r in results if r.verdict.passed)
    show(f"part {part.key} ({part.title}): {got:g} / {part.points:g} on the public cases; the "
         f"hidden cases ({part.total - part.points:g} points) are scored when you submit")
    return results


def submit(name: str, out: str | Path, lab_dir: str | Path | None = None, show=print) -> float:
    """Gather the graded files of ``name`` from ``lab_dir`` (default: the assignment's folder
    under the current directory), grade the public cases, write the zip ``out``; return the
    public score. Raises ``AutograderError`` (one line) for a mistake of the call."""
    from autograder.assignments import module
    from autograder.grading import grade_to_file

    info = module(name)
    folder = Path(lab_dir) if lab_dir is not None else Path.cwd() / info.STUDENT_DIR
    out = Path(out)
    if out.suffix != ".zip":
        raise AutograderError(f"--out must name a .zip file (the file you upload), not {out}")
    if out.is_dir():
        raise AutograderError(f"{out} is a folder; name the .zip file to write")
    if not folder.is_dir():
        raise AutograderError(f"there is no folder {folder}: run this from the root of the "
                              f"course repository, or say where your files are with --from")
    assignment = _public(name)
    files = [part.file for part in assignment.parts]
    missing = [f for f in files if not (folder / f).is_file()]
    if missing:
        raise AutograderError(f"{', '.join(missing)} not found in {folder}; "
                              f"{name} hands in {' and '.join(files)}")
    for part in assignment.parts:
        if "raise NotImplementedYet(" in (folder / part.file).read_text(encoding="utf-8"):
            show(f"note: {part.file} still raises NotImplementedYet: part {part.key} is not "
                 "written yet")
    with tempfile.TemporaryDirectory(prefix="minidb-submit-") as tmp:
        submission = Path(tmp) / "submission"
        submission.mkdir()
        for f in files:
            shutil.copyfile(folder / f, submission / f)
        show(f"grading the public cases of {name} on {', '.join(files)} from {folder} ...")
        results = grade_to_file(name, submission, Path(tmp) / "results.json",
                                log=lambda line: show(line) if "FAILED" in line else None,
                                include_hidden=False)
    show(results.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            z.write(folder / f, f)
    show(f"wrote {out} ({', '.join(files)}): upload it to Gradescope")
    return results.score


def _public(name: str) -> Assignment:
    from autograder.assignments import module

    return module(name).assignment(include_hidden=False)


def _part(assignment: Assignment, key: str) -> Part:
    for part in assignment.parts:
        if part.key == key:
            return part
    raise AutograderError(f"{assignment.name} has no part {key!r}; its parts are "
                          f"{', '.join(p.key for p in assignment.parts)}")


def _harness(assignment: Assignment):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{assignment.name}_harness",
                                                  assignment.harness)
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    return harness


@contextlib.contextmanager
def _cwd(path: str):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)
