"""Public cases warn before hidden ones cost points (issue 16): every category of input a hidden
case tries (repeated values, a text column, ``sample``, one node, ``fit(None)``, ...) is tried
by a public case too, with other data; so a wrong solution that fails a hidden case fails a
public case of the same category, which the student sees before the deadline."""

from __future__ import annotations

import numpy as np
import pytest
from ag_helpers import SUBMISSIONS, assemble

from autograder.assignments.lab1 import assignment, clock, range_uniform

LAB = assignment()
CATEGORY = {c.id: c.category for p in LAB.parts for c in p.cases}
HIDDEN = {c.id for p in LAB.parts for c in p.cases if c.hidden}


def public_missing(failed: set[str]) -> list[str]:
    """The hidden cases in ``failed`` with no failed public case of their category."""
    public_failed = {CATEGORY[c] for c in failed - HIDDEN}
    return sorted(c for c in failed & HIDDEN if CATEGORY[c] not in public_failed)


@pytest.mark.parametrize("part", LAB.parts, ids=lambda p: p.key)
def test_public_categories_cover_the_hidden_ones(part):
    public = {c.category for c in part.cases if not c.hidden}
    hidden = {c.category for c in part.cases if c.hidden}
    assert hidden, f"part {part.key} has no hidden case here (run from the instructor's tree)"
    assert all(c.category for c in part.cases), "every case needs a category"
    assert hidden <= public, f"part {part.key}: hidden-only categories {sorted(hidden - public)}"


def test_categories_are_the_declared_ones_and_each_has_a_public_case():
    for part, declared in zip(LAB.parts, (range_uniform.CATEGORIES, clock.CATEGORIES), strict=True):
        used = {c.category for c in part.cases if not c.hidden}
        assert used == set(declared), f"part {part.key}: {sorted(set(declared) ^ used)}"


def test_hidden_cases_differ_from_public_ones_in_their_data():
    for part in LAB.parts:
        public = [c for c in part.cases if not c.hidden]
        for case in (c for c in part.cases if c.hidden):
            for other in public:
                if "ops" in case.inputs:
                    assert case.inputs["ops"] != other.inputs["ops"], (case.id, other.id)
                for mine in case.arrays.values():
                    assert not any(mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
                                   for theirs in other.arrays.values()), (case.id, other.id)


# A wrong solution of each kind. The partitioner that quantiles the *distinct* values is right
# whenever no value repeats: it is the "fails only on repeated values" solution of the issue.
WRONG = [("partitioner_distinct_values.py", "reference", {"A5", "A10"}),
         ("partitioner_off_by_one.py", "policy_clears_pinned_bits.py", None),
         ("partitioner_first_rows.py", "policy_ignores_hits.py", None)]


@pytest.mark.parametrize(("partitioner", "policy", "exactly"), WRONG,
                         ids=[f"{a}+{b}" for a, b, _ in WRONG])
def test_a_wrong_solution_failing_a_hidden_case_fails_a_public_one_of_its_category(
        tmp_path, grade_once, partitioner, policy, exactly):
    graded = grade_once(assemble(tmp_path / "sub", partitioner, policy))
    failed = set(graded.failed())
    assert failed & HIDDEN, "this wrong solution should fail some hidden case"
    assert public_missing(failed) == []
    if exactly is not None:
        assert failed == exactly
        assert "unbalanced" in graded.test("A5")["output"]


@pytest.mark.slow
def test_every_wrong_solution_of_the_test_suite_shows_in_public_cases(tmp_path, grade):
    """All of ``submissions/``'s plausible wrong solutions (about 45 s)."""
    for path in sorted(SUBMISSIONS.glob("p*.py")):
        partitioner = path.name if path.name.startswith("partitioner_") else "reference"
        policy = path.name if path.name.startswith("policy_") else "reference"
        graded = grade(assemble(tmp_path / path.stem, partitioner, policy),
                       results=tmp_path / f"{path.stem}.json")
        assert public_missing(set(graded.failed())) == [], path.name
