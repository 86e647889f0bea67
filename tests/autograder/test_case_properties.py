"""Each case checks what its text says (issue 18, item 3): for every case whose text names a
property, a submission wrong in exactly that property fails that case, with a message naming it.
The wrong answers are in ``submissions/``; the other part of each submission is the reference."""

from __future__ import annotations

import pytest
from ag_helpers import assemble

from autograder.assignments.lab1 import assignment

TEXT = {c.id: f"{c.title} {c.about}" for p in assignment().parts for c in p.cases}


@pytest.mark.parametrize(("partitioner", "policy", "case", "says", "lost"), [
    # A9 and A14: "then fit(None, N), which keeps those boundaries"
    ("partitioner_forgets_on_refit.py", "reference", "A9", "fit(None, 4) keeps the boundaries learned before", {"A9", "A14"}),
    ("partitioner_forgets_on_refit.py", "reference", "A14", "fit(None, 6) keeps the boundaries learned before", {"A9", "A14"}),
    # A4 (and every case asking ranges): "nodes_for_range must name exactly the nodes whose
    # range meets it"
    ("partitioner_every_node_for_ranges.py", "reference", "A4", "nodes_for_range",
     {"A4", "A6", "A7", "A9", "A11", "A12", "A14"}),
    # A6, A11: "negative and positive doubles": boundaries must be doubles too
    ("partitioner_whole_number_boundaries.py", "reference", "A6", "unbalanced", {"A6", "A11"}),
    # A7, A12: "strings compared as their bytes"
    ("partitioner_short_text_boundaries.py", "reference", "A7", "unbalanced", {"A7", "A12"}),
    # A5: "values repeat ... equal shares, up to the repeats"
    ("partitioner_distinct_values.py", "reference", "A5", "unbalanced", {"A5", "A10"}),
    # B4: "the hand passes their frames without touching their bits"
    ("reference", "policy_clears_pinned_bits.py", "B4", "first difference",
     {"B4", "B5", "B6", "B7", "B9"}),
    # B2: "their bits keep being set, so the hand passes them by"; B3: "hit again"
    ("reference", "policy_ignores_hits.py", "B2", "first difference",
     {"B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9"}),
    ("reference", "policy_ignores_hits.py", "B3", "first difference",
     {"B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9"}),
])
def test_a_wrong_property_fails_the_case_that_names_it(tmp_path, grade_once, partitioner,
                                                       policy, case, says, lost):
    graded = grade_once(assemble(tmp_path / "sub", partitioner, policy))
    assert set(graded.failed()) == lost
    assert says in graded.test(case)["output"]


def test_the_refit_case_says_what_it_checks():
    assert "fit(None, 6), which keeps those boundaries" in TEXT["A14"]
    assert "fit(None, 4), which keeps those boundaries" in TEXT["A9"]
