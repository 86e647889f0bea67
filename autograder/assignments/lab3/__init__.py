"""Lab 3 (Volcano): grouped unfixing in the shared buffer (Graefe and Thakkar 1992, §5.2).

A submission is a directory with ``unfix.py``, registering the gatherer ``student_grouped``
(plugin kind ``unfix_gatherer``); the contract students read is this folder's README.md. The
reference submission in ``reference/`` scores full marks; ``hidden/`` holds the hidden cases.
The student release leaves both out.
"""

from __future__ import annotations

from pathlib import Path

from autograder.assignments.lab3 import unfix_cases
from autograder.grading import Assignment, Part

HERE = Path(__file__).resolve().parent
TITLE = "Lab 3: grouped unfixing"
POINTS = 100
# where students write the graded file: the lab imports it, ``submit`` zips it
STUDENT_DIR = "labs/lab3_volcano"


def assignment(include_hidden: bool = True) -> Assignment:
    """Lab 3 with its public cases, and its hidden ones when they are present."""
    cases = unfix_cases.public_cases()
    hidden = include_hidden and (HERE / "hidden" / "__init__.py").exists()
    if hidden:
        from autograder.assignments.lab3 import hidden as hidden_cases

        cases += hidden_cases.unfix_cases()
    import minidb

    return Assignment(
        name="lab3",
        title=TITLE,
        harness=HERE / "harness.py",
        parts=[Part("U", "grouped unfixing", "unfix.py", "unfix_gatherer", "student_grouped",
                    cases, total=POINTS)],
        hidden_included=hidden,
        protected=[HERE / "hidden", HERE / "reference", Path(minidb.__file__).resolve().parent],
    )


def release_files() -> dict[str, str]:
    """Files a student release adds to this folder: none (the grader works every answer out)."""
    return {}
