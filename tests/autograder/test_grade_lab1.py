"""Lab 1 graded end to end: the reference scores full marks, plausible wrong answers lose points
where their mistake shows, and the feedback names what to fix."""

from __future__ import annotations

import numpy as np
import pytest
from ag_helpers import FAST, REFERENCE, assemble

from autograder.assignments.lab1 import assignment
from autograder.assignments.lab1.clock import reference, run_trace
from autograder.assignments.lab1.range_uniform import nodes_meeting
from autograder.grading import HIDDEN_VISIBILITY


def test_reference_scores_full_marks(reference_graded):
    doc = reference_graded.doc
    assert doc["score"] == 100
    assert [t["status"] for t in doc["tests"]] == ["passed"] * 23
    assert reference_graded.part("A") == 50 and reference_graded.part("B") == 50
    hidden = [t for t in doc["tests"] if "hidden" in t["tags"]]
    assert len(hidden) == 8 and all(t["visibility"] == HIDDEN_VISIBILITY for t in hidden)
    assert all(t["visibility"] == "visible" for t in doc["tests"] if "public" in t["tags"])
    assert "part A, range-uniform partitioner (partitioner.py): 50 / 50" in doc["output"]
    # Gradescope's leaderboard: the grader's seconds per part, smaller ranks first
    board = {e["name"]: e for e in doc["leaderboard"]}
    assert set(board) == {"A: partitioner seconds", "B: Clock seconds"}
    assert all(e["order"] == "asc" and 0 < e["value"] < 600 for e in board.values())


def test_points_add_up_to_fifty_per_part():
    lab = assignment()
    assert [p.points for p in lab.parts] == [50, 50]
    assert len({c.id for p in lab.parts for c in p.cases}) == 23


@pytest.mark.parametrize(("partitioner", "policy", "lost_a", "lost_b"), [
    # one rank too far: never exactly balanced (only the slack of repeated values or of a sample
    # hides it, in A5, A8, A10 and A13); a FIFO hand agrees with Clock only on the flooding loop
    ("partitioner_off_by_one.py", "policy_fifo.py",
     {"A1", "A2", "A3", "A4", "A6", "A7", "A9", "A11", "A12", "A14"},
     {"B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9"}),
    # the first 1,000 rows: fine while the batch is smaller; a clock that never clears its bits
    # is wrong everywhere
    ("partitioner_first_rows.py", "policy_never_clears.py",
     {"A2", "A3", "A5", "A6", "A7", "A8", "A10", "A11", "A12", "A13"},
     {"B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9"}),
    # positions instead of sorted values: right only on data stored in order; a hand that
    # ignores the candidates is wrong only where pages are pinned
    ("partitioner_by_position.py", "policy_ignores_candidates.py",
     {"A1", "A2", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A11", "A12", "A14"},
     {"B4", "B5", "B6", "B7", "B9"}),
    # equal widths of the value range: right on uniform keys, wrong on skewed values and text
    ("partitioner_equal_width.py", "reference", {"A5", "A6", "A7", "A10", "A11", "A12"}, set()),
])
def test_wrong_solutions_lose_the_cases_their_mistake_shows_in(
        tmp_path, grade_once, partitioner, policy, lost_a, lost_b):
    graded = grade_once(assemble(tmp_path / "sub", partitioner, policy))
    assert set(graded.failed()) == lost_a | lost_b
    lab = assignment()
    points = {c.id: c.points for p in lab.parts for c in p.cases}
    assert graded.score == 100 - sum(points[c] for c in lost_a | lost_b)
    # a part with a failed case is not ranked on the leaderboard: a fast wrong answer wins nothing
    ranked = {e["name"][0] for e in graded.doc.get("leaderboard", [])}
    assert ranked == {key for key, lost in (("A", lost_a), ("B", lost_b)) if not lost}


def test_feedback_of_an_off_by_one_partitioner_and_a_fifo_clock(tmp_path, grade_once):
    graded = grade_once(assemble(tmp_path / "sub", "partitioner_off_by_one.py", "policy_fifo.py"))
    a1 = graded.test("A1")["output"]
    assert "unbalanced: node 0 holds 7 tuples" in a1 and "every node must hold 6 to 6" in a1
    assert "node sizes [7, 6, 6, 5]" in a1 and "your boundaries [7, 13, 19]" in a1
    b3 = graded.test("B3")["output"]
    assert "hits 3, misses 10; the reference Clock gets hits 4, misses 9" in b3
    assert "first difference: eviction 2" in b3 and "the reference evicts frame" in b3
    assert "the trace (4 frames" in b3  # public: the trace is shown
    b7 = graded.test("B7")["output"]
    assert "the reference Clock gets hits" in b7 and "the trace" not in b7  # hidden: not shown


def test_a_pinned_frame_chosen_is_named_with_the_candidates(tmp_path, grade):
    graded = grade(assemble(tmp_path / "sub", "reference", "policy_ignores_candidates.py"))
    b4 = graded.test("B4")["output"]
    assert "which was not offered: the candidates were" in b4 and "are pinned" in b4
    assert graded.part("A") == 50


def test_stubbed_builtins_re_exported_score_zero(tmp_path, grade):
    sub = assemble(tmp_path / "sub",
                   "from minidb.parallel.partitioners import RangeUniform\n"
                   "from minidb.plugins import register\n"
                   "register('partitioner', 'student_range_uniform')(RangeUniform)\n",
                   "from minidb.buffer.clock import ClockPolicy\n"
                   "from minidb.plugins import register\n"
                   "register('buffer_policy', 'student_clock')(ClockPolicy)\n")
    graded = grade(sub, FAST)
    assert graded.score == 0  # the children see minidb with its solutions stubbed
    assert "Lab 1, part A (range-uniform partitioner)" in graded.test("A1")["output"]
    assert "NotImplementedYet: Lab 1, part B (Clock)" in graded.test("B1")["output"]


# -- the grader's own reasoning, without children ------------------------------------------------
def test_reference_victims_replayed_reproduce_its_counts():
    for case in assignment().parts[1].cases:
        want = reference(case)
        again = run_trace(case.inputs, victims=want["victims"])
        assert again.stopped is None
        assert (again.hits, again.misses, again.victims) == (want["hits"], want["misses"], want["victims"])
        assert again.hits + again.misses == sum(op != "u" for op, _ in case.inputs["ops"])


def test_a_victim_that_was_not_offered_stops_the_replay():
    case = assignment().parts[1].cases[3]  # B4, with pinned pages
    victims = reference(case)["victims"]
    pinned_at_first_eviction = 0  # page 0 is pinned when the first eviction happens
    bad = run_trace(case.inputs, victims=[pinned_at_first_eviction] + victims[1:])
    assert bad.stopped and "chose frame 0, which was not offered" in bad.stopped


def test_nodes_meeting_is_what_range_partitioning_answers():
    from minidb.parallel.partitioners import Range

    bounds = [10, 20, 20, 40]  # a repeated boundary: node 2 holds nothing
    r = Range("key", [10, 20, 30, 40])
    r._set_boundaries(bounds, strict=False)
    r.fit(None, 5)
    for low, high in [(None, None), (None, 15), (20, None), (20, 20), (21, 21), (5, 3), (45, 90),
                      (19, 20), (-3, 9)]:
        assert nodes_meeting(np.array(bounds), low, high, 5, False) == r.nodes_for_range(low, high)


def test_fit_that_sorts_the_relation_in_place_is_told_so(tmp_path, grade):
    source = (REFERENCE / "partitioner.py").read_text().replace(
        "        ordered = np.sort(values)\n", "        values.sort()\n        ordered = values\n")
    assert "values.sort()" in source
    graded = grade(assemble(tmp_path / "sub", source, None))
    assert "fit changed the batch it was given (sorted it in place?)" in graded.test("A2")["output"]
    assert graded.test("A3")["status"] == "passed"  # stored in order already: nothing changes
    assert "policy.py is missing" in graded.test("B1")["output"]
