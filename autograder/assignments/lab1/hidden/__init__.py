"""Lab 1's hidden cases: graded like the public ones, but not part of the student release.

Their inputs are generated here from fixed seeds, so they are the same on every run; what they
must produce is never stored, the grader works it out (see ``range_uniform`` and ``clock``).
Another ``seed`` builds the same categories from other data (``tests/autograder/
test_other_seeds.py`` grades the reference on several).
Each has the ``category`` of a public case (A10 is "repeated values" like A5, ...): the hidden
cases differ from the public ones in their data only.
"""

from __future__ import annotations

import numpy as np

from autograder.assignments.lab1.clock import random_trace, refs, shifting_trace, trace_case
from autograder.assignments.lab1.range_uniform import Step, partition_case, relation
from autograder.grading import Case


def partitioner_cases(seed: int = 7_2024) -> list[Case]:
    rng = np.random.default_rng(seed)
    exponential = relation(np.floor(rng.exponential(400.0, 20_000)).astype(np.int32), "salary")
    zipf = relation(np.minimum(rng.zipf(1.6, 6_000), 10_000).astype(np.int32), "salary")
    floats = relation(rng.normal(0.0, 1000.0, 9_000), "reading")
    words = relation(np.array([_word(int(v)) for v in rng.permutation(3_000) * 7919],
                              dtype="S52"), "name")
    ascending = relation(np.arange(40_000, dtype=np.int32), "unique2")
    three = relation(rng.integers(0, 3, 1_000).astype(np.int32), "dept")
    later = relation((np.arange(600) * 5 - 100).astype(np.int32), "dept")
    float_ranges = [(None, None), (-50.5, 50.5), (None, -3000.0), (2500.0, None), (1.0, -1.0)]
    float_ranges += [tuple(sorted(rng.normal(0, 1500, 2).round(2).tolist())) for _ in range(10)]
    word_ranges = [(None, "B"), ("AAAAAAB", "AAAAAZZ"), ("C", None), ("Q", "P"), (None, None)]
    dept_ranges = [(0, 0), (1, 1), (2, 2), (0, 2), (-1, 5), (3, 9), (None, 1), (1, None)]
    return [
        partition_case(
            "A10", "skewed values: exponential and Zipf, 8 nodes", 4, hidden=True,
            category="repeated values", column="salary",
            steps=[Step("exponential", "exponential", 8), Step("zipf", "zipf", 8)],
            arrays={"exponential": exponential, "zipf": zipf},
            about="many repeated values: nodes must still hold equal shares, up to the repeats."),
        partition_case(
            "A11", "floating-point values around zero, 6 nodes", 4, hidden=True,
            category="floating-point column", column="reading",
            steps=[Step("floats", "floats", 6, ranges=float_ranges)], arrays={"floats": floats},
            about="negative and positive doubles."),
        partition_case(
            "A12", "a text column, 4 nodes", 4, hidden=True, category="text column", column="name",
            steps=[Step("words", "words", 4, ranges=word_ranges)], arrays={"words": words},
            about="52-byte strings compared as their bytes."),
        partition_case(
            "A13", "boundaries from a sample of 4,000 of 40,000 ascending keys, 4 nodes", 4,
            hidden=True, category="sample", column="unique2", sample=4_000,
            steps=[Step("ascending", "ascending", 4, balance=0.15)],
            arrays={"ascending": ascending},
            about="RangeUniform(column, sample=4000): the sample must represent the whole relation."),
        partition_case(
            "A14", "few values, one node, and fitting again", 4, hidden=True,
            category="one node, and fit(None)", column="dept",
            steps=[Step("three", "three", 8, ranges=dept_ranges), Step("three", "three", 1),
                   Step("later", "later", 6), Step(None, "later", 6)],
            arrays={"three": three, "later": later},
            about="3 distinct values over 8 nodes; then 1 node; then new data over 6 nodes, "
                  "then fit(None, 6), which keeps those boundaries."),
    ]


def _word(v: int) -> bytes:
    """Wisconsin's convert(): 7 letters, base 26 with A = 0, then padding."""
    letters = []
    for _ in range(7):
        v, r = divmod(v, 26)
        letters.append(chr(ord("A") + r))
    return ("".join(reversed(letters)) + "x" * 45).encode()


def policy_cases(seed: int = 5) -> list[Case]:
    return [
        trace_case("B7", "Zipf-distributed references with pins, 16 frames", 5, hidden=True,
                   frames=16, ops=random_trace(np.random.default_rng(seed), 60, 1_500, 1.3),
                   category="random references with pins"),
        trace_case("B8", "a loop around a hot set, 8 frames", 5, hidden=True, frames=8,
                   ops=refs([p for i in range(12) for p in (0, 1, 2, 3 + i % 10, 3 + (i + 5) % 10)]),
                   category="hot pages"),
        trace_case("B9", "a working set that moves, 6 frames", 4, hidden=True, frames=6,
                   ops=shifting_trace(np.random.default_rng(seed + 4), 6, 4, 6, 40),
                   category="moving working set"),
    ]
