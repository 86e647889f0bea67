"""What each lab's ``test_labN_public.py`` shares: grade the lab's public cases once, as
``python -m autograder grade`` does (each part in a sandboxed child, with the same limits and
checks, on copies of the student's files in the lab's folder), and judge one case per test.

A failing test shows the message the grader gives (and Gradescope shows). A part whose file
still raises ``NotImplementedYet`` is skipped: not written yet. The hidden cases are not here:
they are scored on Gradescope, in the same categories.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from autograder.grading import Case, Part, grade_to_file

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())


def public_cases(lab: ModuleType) -> list[tuple[Part, Case]]:
    """(part, case) of every public case of the lab (an ``autograder.assignments`` module)."""
    public = lab.assignment(include_hidden=False)
    return [(part, case) for part in public.parts for case in part.cases]


def case_ids(cases: list[tuple[Part, Case]]) -> list[str]:
    return [f"{case.id}-{case.category}" for _, case in cases]


def grade_public(lab: ModuleType, tmp: Path) -> dict[str, dict]:
    """results.json's test of each public case, by case id, for the files in the lab's folder."""
    name = lab.assignment(include_hidden=False).name
    submission = tmp / "submission"
    submission.mkdir()
    for part in lab.assignment(include_hidden=False).parts:
        shutil.copyfile(ROOT / lab.STUDENT_DIR / part.file, submission / part.file)
    grade_to_file(name, submission, tmp / "results.json", include_hidden=False,
                  log=lambda line: None)
    tests = json.loads((tmp / "results.json").read_text())["tests"]
    return {t["name"].split(": ", 1)[1].split()[0]: t for t in tests}


def judge(graded: dict[str, dict], lab: ModuleType, part: Part, case: Case) -> None:
    """Pass, skip (the part is not written yet) or fail with the grader's message."""
    test = graded[case.id]
    if test["status"] != "passed" and "NotImplementedYet" in test["output"]:
        pytest.skip(f"part {part.key} is not written yet ({lab.STUDENT_DIR}/{part.file})")
    if test["status"] != "passed":
        pytest.fail(f"{test['name']}\n{test['output']}", pytrace=False)
