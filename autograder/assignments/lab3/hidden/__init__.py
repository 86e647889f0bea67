"""Lab 3's hidden cases: graded like the public ones, but not part of the student release.

Their inputs come from seeds and sizes other than the public ones; what they must produce is
never stored, the grader works it out (see ``unfix_cases``). Each has the category of a public
case.
"""

from __future__ import annotations

import numpy as np

from autograder.assignments.lab3.unfix_cases import sort_case, stream, traces_case
from autograder.grading import Case


def unfix_cases(seed: int = 9300) -> list[Case]:
    return [
        traces_case("T4", "one entry, longer streams", 10, hidden=True, category="one entry",
                    streams=[(1, stream(seed + 1, 2000, 300)),
                             (1, stream(seed + 2, 900, 3, run=(1, 2)))]),
        traces_case("T5", "larger tables, more interleaving", 15, hidden=True,
                    category="a hash table",
                    streams=[(8, stream(seed + 3, 1500, 120, interleave=6)),
                             (32, stream(seed + 4, 1500, 500, interleave=9, run=(1, 30))),
                             (3, stream(seed + 5, 700, 20, interleave=3, run=(1, 5)))]),
        traces_case("T6", "end of stream, many open groups", 10, hidden=True,
                    category="end of stream", close_twice=True,
                    streams=[(64, stream(seed + 6, 200, 150, interleave=8, run=(1, 3))),
                             (2, np.array([9, 9, 4], dtype=np.int64)),
                             (5, np.array([], dtype=np.int64))]),
        sort_case("S3", "a parallel sort on more processes: lock acquisitions", 10, hidden=True,
                  rows=20_000, seed=seed + 11, processes=6, entries=4, pools=3, cluster_kb=8,
                  category="sort: lock acquisitions"),
        sort_case("S4", "a parallel sort with merges: the output", 5, hidden=True, rows=15_000,
                  seed=seed + 12, processes=2, entries=16, pools=2, sort_space_kb=2 * 3 * 4,
                  category="sort: output"),
    ]
