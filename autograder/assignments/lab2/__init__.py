"""Lab 2 (Gamma's joins): a Hybrid hash join as a join plug-in.

A submission is a directory with ``hybrid_hash.py``, registering the join ``student_hybrid``
(plugin kind ``join``), a subclass of ``minidb.exec.join.base.JoinAlgorithm``; the contract
students read is this folder's README.md. The reference submission in ``reference/`` scores full
marks; ``hidden/`` holds the hidden cases. The student release leaves both out.
"""

from __future__ import annotations

from pathlib import Path

from autograder.assignments.lab2 import joins
from autograder.grading import Assignment, Part

HERE = Path(__file__).resolve().parent
TITLE = "Lab 2: Hybrid hash join"
POINTS = 100
# where students write the graded file: the lab imports it, ``submit`` zips it
STUDENT_DIR = "labs/lab2_joins"


def assignment(include_hidden: bool = True) -> Assignment:
    """Lab 2 with its public cases, and its hidden ones when they are present."""
    cases = joins.public_cases()
    hidden = include_hidden and (HERE / "hidden" / "__init__.py").exists()
    if hidden:
        from autograder.assignments.lab2 import hidden as hidden_cases

        cases += hidden_cases.join_cases()
    import minidb

    return Assignment(
        name="lab2",
        title=TITLE,
        harness=HERE / "harness.py",
        parts=[Part("D", "Hybrid hash join", "hybrid_hash.py", "join", "student_hybrid", cases,
                    total=POINTS)],
        hidden_included=hidden,
        protected=[HERE / "hidden", HERE / "reference", Path(minidb.__file__).resolve().parent],
    )


def release_files() -> dict[str, str]:
    """Files a student release adds to this folder: none (the grader works every answer out)."""
    return {}
