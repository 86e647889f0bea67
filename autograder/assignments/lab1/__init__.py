"""Lab 1 (Gamma: declustering and buffer replacement): the range-uniform partitioner and Clock.

A submission is a directory with ``partitioner.py`` (part A, registering partitioner
``student_range_uniform``) and ``policy.py`` (part B, registering buffer policy
``student_clock``); the contract students read is this folder's README.md. The reference
submission in ``reference/`` scores full marks; ``hidden/`` holds the hidden cases. The student
release leaves both out and carries ``expected_public.json`` instead (see ``clock``).
"""

from __future__ import annotations

from pathlib import Path

from autograder.assignments.lab1 import clock, range_uniform
from autograder.grading import Assignment, Part

HERE = Path(__file__).resolve().parent
TITLE = "Lab 1: declustering and buffer replacement"
POINTS_PER_PART = 50
# where students write the graded files: the lab imports them, ``submit`` zips them
STUDENT_DIR = "labs/lab1_gamma"


def assignment(include_hidden: bool = True) -> Assignment:
    """Lab 1 with its public cases, and its hidden ones when they are present."""
    partitioner_cases = range_uniform.public_cases()
    policy_cases = clock.public_cases()
    hidden = include_hidden and (HERE / "hidden" / "__init__.py").exists()
    if hidden:
        from autograder.assignments.lab1 import hidden as hidden_cases

        partitioner_cases += hidden_cases.partitioner_cases()
        policy_cases += hidden_cases.policy_cases()
    import minidb

    return Assignment(
        name="lab1",
        title=TITLE,
        harness=HERE / "harness.py",
        parts=[
            Part("A", "range-uniform partitioner", "partitioner.py", "partitioner",
                 "student_range_uniform", partitioner_cases, total=POINTS_PER_PART,
                 leaderboard="A: partitioner seconds"),
            Part("B", "Clock replacement policy", "policy.py", "buffer_policy", "student_clock",
                 policy_cases, total=POINTS_PER_PART, leaderboard="B: Clock seconds"),
        ],
        hidden_included=hidden,
        protected=[HERE / "hidden", HERE / "reference", Path(minidb.__file__).resolve().parent],
    )


def release_files() -> dict[str, str]:
    """Files a student release adds to this folder: the reference's answers on public traces."""
    return {"expected_public.json": clock.record_public(clock.public_cases())}
