"""Lab 4 (LH*): a client's address computation, a server's forwarding and image adjustment.

A submission is a directory with ``addressing.py``, registering the LH* addressing class
``student_lhstar`` (plugin kind ``lhstar_addressing``); the contract students read is this
folder's README.md. The reference submission in ``reference/`` scores full marks; ``hidden/``
holds the hidden cases. The student release leaves both out.
"""

from __future__ import annotations

from pathlib import Path

from autograder.assignments.lab4 import lhstar
from autograder.grading import Assignment, Part

HERE = Path(__file__).resolve().parent
TITLE = "Lab 4: LH* addressing"
POINTS = 100
# where students write the graded file: the lab imports it, ``submit`` zips it
STUDENT_DIR = "labs/lab4_lhstar"


def assignment(include_hidden: bool = True) -> Assignment:
    """Lab 4 with its public cases, and its hidden ones when they are present."""
    cases = lhstar.public_cases()
    hidden = include_hidden and (HERE / "hidden" / "__init__.py").exists()
    if hidden:
        from autograder.assignments.lab4 import hidden as hidden_cases

        cases += hidden_cases.addressing_cases()
    import minidb

    return Assignment(
        name="lab4",
        title=TITLE,
        harness=HERE / "harness.py",
        parts=[Part("C", "LH* addressing", "addressing.py", "lhstar_addressing",
                    "student_lhstar", cases, total=POINTS)],
        hidden_included=hidden,
        protected=[HERE / "hidden", HERE / "reference", Path(minidb.__file__).resolve().parent],
    )


def release_files() -> dict[str, str]:
    """Files a student release adds to this folder: none (the grader works every answer out)."""
    return {}
