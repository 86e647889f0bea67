"""Lab 4's hidden cases: graded like the public ones, but not part of the student release.

Their inputs come from fixed seeds other than the public ones; what they must produce is never
stored, the grader works it out (see ``lhstar``). Each has the category of a public case.
"""

from __future__ import annotations

from autograder.assignments.lab4.lhstar import file_case, questions, routes_case, workload
from autograder.grading import Case


def addressing_cases(seed: int = 9000) -> list[Case]:
    return [
        routes_case("C8", "client address, exact images of larger files", 7, hidden=True,
                    n0=1, category="client address",
                    qs=questions(seed + 1, 1, 400, image="exact", max_splits=2000),
                    check_images=False),
        routes_case("C9", "forwarding from stale images of larger files", 7, hidden=True, n0=1,
                    category="forwarding from a stale image",
                    qs=questions(seed + 2, 1, 500, image="stale", max_splits=1500),
                    check_images=False),
        routes_case("C10", "two forwards, small keys", 7, hidden=True, n0=1,
                    category="two forwards",
                    qs=questions(seed + 3, 1, 150, image="stale", forwards=2, big_keys=False),
                    check_images=False),
        routes_case("C11", "image adjustment from fresh and stale clients", 7, hidden=True,
                    n0=1, category="image adjustment",
                    qs=questions(seed + 4, 1, 200, image="fresh", max_splits=900)
                    + questions(seed + 5, 1, 200, image="stale", forwards=2),
                    check_images=True),
        routes_case("C12", "five first buckets", 7, hidden=True, n0=5,
                    category="several first buckets",
                    qs=questions(seed + 6, 5, 500, image="stale"), check_images=True),
        file_case("C13", "a growing file, eight clients, one bucket of two records", 8,
                  hidden=True, n0=1, capacity=2, category="a growing file",
                  ops=workload(seed + 7, 2000, 8, 3000, 0.0)),
        file_case("C14", "a file of three first buckets that shrinks", 7, hidden=True, n0=3,
                  capacity=5, merge_below=0.5, category="a shrinking file",
                  ops=workload(seed + 8, 1500, 6, 900, 0.5, grow_first=800)),
    ]
