"""Lab 5 (commit protocols): two-phase commit of one's own, graded under injected faults.

A submission is a directory with ``commit.py``, registering the protocol ``student_2pc`` (plugin
kind ``commit``); the contract students read is this folder's README.md. The reference
submission in ``reference/`` scores full marks; ``hidden/`` holds the hidden cases. The student
release leaves both out.
"""

from __future__ import annotations

from pathlib import Path

from autograder.assignments.lab5 import commit_cases
from autograder.grading import Assignment, Part

HERE = Path(__file__).resolve().parent
TITLE = "Lab 5: two-phase commit"
POINTS = 100
# where students write the graded file: the lab imports it, ``submit`` zips it
STUDENT_DIR = "labs/lab5_commit"


def assignment(include_hidden: bool = True) -> Assignment:
    """Lab 5 with its public cases, and its hidden ones when they are present."""
    cases = commit_cases.public_cases()
    hidden = include_hidden and (HERE / "hidden" / "__init__.py").exists()
    if hidden:
        from autograder.assignments.lab5 import hidden as hidden_cases

        cases += hidden_cases.commit_cases()
    import minidb

    return Assignment(
        name="lab5",
        title=TITLE,
        harness=HERE / "harness.py",
        parts=[Part("T", "two-phase commit", "commit.py", "commit", "student_2pc", cases,
                    total=POINTS)],
        hidden_included=hidden,
        protected=[HERE / "hidden", HERE / "reference", Path(minidb.__file__).resolve().parent],
    )


def release_files() -> dict[str, str]:
    """Files a student release adds to this folder: none (the grader works every answer out)."""
    return {}
