"""Lab 5's hidden cases: graded like the public ones, not part of the student release.

Other sizes, seeds and sites than the public cases; each has the category of a public case.
"""

from __future__ import annotations

from autograder.assignments.lab5.commit_cases import commit_case
from autograder.grading import Case


def commit_cases(seed: int = 9500) -> list[Case]:
    return [
        commit_case("C2", "commit without faults, six participants", 5, hidden=True,
                    category="commit without faults", participants=6, seed=seed + 1, seeds=2),
        commit_case("A2", "two no votes, and the coordinator crashes", 5, hidden=True,
                    category="a no vote", participants=4, seed=seed + 2, seeds=1, crash_site=0,
                    no_votes=(1, 4)),
        commit_case("K2", "the coordinator crashes, five participants", 10, hidden=True,
                    category="the coordinator crashes", participants=5, seed=seed + 3, seeds=2,
                    crash_site=0),
        commit_case("P2", "the last participant crashes over a lossy network", 10, hidden=True,
                    category="a participant crashes", participants=4, seed=seed + 4, seeds=2,
                    crash_site=4, drop=0.15, duplicate=0.1),
        commit_case("L2", "a lossier network, everyone votes yes", 3, hidden=True,
                    category="a lossy network", participants=5, seed=seed + 5, seeds=6, drop=0.3,
                    duplicate=0.2),
        commit_case("L4", "repeated yes votes, the first participant votes no", 2, hidden=True,
                    category="a lossy network", participants=5, seed=seed + 5, seeds=6, drop=0.2,
                    duplicate=0.3, no_votes=(1,)),
    ]
