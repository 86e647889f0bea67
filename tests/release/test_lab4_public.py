"""Lab 4's public cases, graded as the grader grades them, one test per case.

The grader runs in this process, as ``python -m autograder grade`` does: the part in a sandboxed
child, with the same limits and checks, on a copy of ``labs/lab4_lhstar/addressing.py``. A
failing test shows the message the grader gives (and Gradescope shows). While the file still
raises ``NotImplementedYet`` its cases are skipped: not written yet. The hidden cases are not
here: they are scored on Gradescope, in the same categories.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autograder.assignments import module
from autograder.grading import grade_to_file

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
LAB4 = module("lab4")
PUBLIC = LAB4.assignment(include_hidden=False)
CASES = [(part, case) for part in PUBLIC.parts for case in part.cases]


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, dict]:
    """results.json's test of each public case, by case id."""
    tmp = tmp_path_factory.mktemp("lab4")
    submission = tmp / "submission"
    submission.mkdir()
    for part in PUBLIC.parts:
        shutil.copyfile(ROOT / LAB4.STUDENT_DIR / part.file, submission / part.file)
    grade_to_file("lab4", submission, tmp / "results.json", include_hidden=False,
                  log=lambda line: None)
    tests = json.loads((tmp / "results.json").read_text())["tests"]
    return {t["name"].split(": ", 1)[1].split()[0]: t for t in tests}


@pytest.mark.parametrize(("part", "case"), CASES,
                         ids=[f"{case.id}-{case.category}" for _, case in CASES])
def test_public_case(graded, part, case):
    test = graded[case.id]
    if test["status"] != "passed" and "NotImplementedYet" in test["output"]:
        pytest.skip(f"part {part.key} is not written yet ({LAB4.STUDENT_DIR}/{part.file})")
    if test["status"] != "passed":
        pytest.fail(f"{test['name']}\n{test['output']}", pytrace=False)
