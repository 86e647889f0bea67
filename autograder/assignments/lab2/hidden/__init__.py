"""Lab 2's hidden cases: graded like the public ones, but not part of the student release.

Their inputs come from seeds and sizes other than the public ones; what they must produce is never
stored, the grader works it out (see ``joins``). Each has the category of a public case.
"""

from __future__ import annotations

import numpy as np

from autograder.assignments.lab2.joins import (
    draws,
    fills_memory,
    join_case,
    skewed,
    sorted_runs,
    text,
    unique,
)
from autograder.grading import Case


def join_cases(seed: int = 9000) -> list[Case]:
    sk_b, sk_p = skewed(seed + 15, 700, 120, 42)
    fm_b, fm_p = fills_memory(seed + 23, 8, 1400)
    sr_b, sr_p = sorted_runs(seed + 24, 10, 450, 2000, 30)
    return [
        join_case("D8", "the build input fits in memory, more probe tuples", 6, hidden=True,
                  build=unique(seed + 11, 1500), probe=draws(seed + 12, 6000, 2500), memory=40,
                  category="fits in memory"),
        join_case("D9", "keys repeated on both sides, less memory", 3, hidden=True,
                  build=draws(seed + 13, 3000, 1500), probe=draws(seed + 14, 2000, 1500), memory=9,
                  category="duplicate keys"),
        join_case("D10", "a quarter of the memory, a larger build input", 6, hidden=True,
                  build=unique(seed + 16, 8000), probe=draws(seed + 17, 5000, 9000), memory=29,
                  category="a quarter of the memory"),
        join_case("D11", "partitions bigger than memory, five pages", 6, hidden=True,
                  build=unique(seed + 18, 15000), probe=draws(seed + 19, 4000, 15000), memory=5,
                  category="a partition bigger than memory"),
        join_case("D12", "every build tuple has the same key, more of them", 5, hidden=True,
                  build=sk_b, probe=sk_p, memory=4, category="one key for every tuple"),
        join_case("D13", "an empty probe input, a larger build input", 5, hidden=True,
                  build=unique(seed + 20, 1300), probe=np.zeros(0, dtype=np.int64), memory=6,
                  category="an empty input"),
        join_case("D14", "text keys, many repeated", 5, hidden=True,
                  build=text(seed + 21, 2500, 400, 5), probe=text(seed + 22, 1500, 600, 7),
                  memory=7,
                  category="text keys"),
        join_case("D16", "a spilled partition of exactly M - 1 pages, eight pages", 5,
                  hidden=True, build=fm_b, probe=fm_p, memory=8,
                  category="a partition that exactly fills memory"),
        join_case("D18", "a build input sorted by key, ten keys", 3, hidden=True,
                  build=sr_b, probe=sr_p, memory=9, category="duplicate keys"),
    ]
