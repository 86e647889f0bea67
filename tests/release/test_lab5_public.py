"""Lab 5's public cases, graded as the grader grades them, one test per case, on
``labs/lab5_commit/commit.py`` (see public_grading)."""

from __future__ import annotations

import pytest
from public_grading import case_ids, grade_public, judge, public_cases

from autograder.assignments import module

LAB = module("lab5")
CASES = public_cases(LAB)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, dict]:
    return grade_public(LAB, tmp_path_factory.mktemp("lab5"))


@pytest.mark.parametrize(("part", "case"), CASES, ids=case_ids(CASES))
def test_public_case(graded, part, case):
    judge(graded, LAB, part, case)
