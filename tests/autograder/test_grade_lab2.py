"""Lab 2 (Hybrid hash join) graded end to end in the real sandbox: the reference and the lab's
own file score 100, the student release's stub 0, and plausible wrong joins (one that ignores
its budget, spills the smallest partition, writes every partition as GRACE does, loses the
spilled probe tuples, reuses the hash function one level down, joins an oversized partition in
memory, partitions again a spilled partition that exactly fits, breaks a tie for the largest
partition the wrong way, or judges "one key" batch by batch) lose the cases their mistake shows in, a public case of the same
category first; the feedback says which pairs or counters differ."""

from __future__ import annotations

from pathlib import Path

import pytest
from ag_helpers import FAST, ROOT, Graded, grade_one_file

from autograder.assignments.lab2 import STUDENT_DIR, assignment, joins
from autograder.grading import HIDDEN_VISIBILITY
from autograder.markers import strip_solutions

REFERENCE = ROOT / "autograder" / "assignments" / "lab2" / "reference" / "hybrid_hash.py"
LAB_FILE = ROOT / STUDENT_DIR / "hybrid_hash.py"
LAB = assignment()
CASES = {c.id: c for p in LAB.parts for c in p.cases}
HIDDEN = {i for i, c in CASES.items() if c.hidden}


def grade2(tmp_path: Path, source: Path | str) -> Graded:
    return grade_one_file("lab2", "hybrid_hash.py", tmp_path, source, FAST)


def test_points_and_categories():
    assert sum(c.points for c in CASES.values()) == 100
    public = {c.category for c in CASES.values() if not c.hidden}
    hidden = {c.category for c in CASES.values() if c.hidden}
    assert public == set(joins.CATEGORIES) and hidden <= public
    for h in (c for c in CASES.values() if c.hidden):
        for p in (c for c in CASES.values() if not c.hidden):
            assert any(len(a) != len(b) or (a != b).any()
                       for a, b in zip(joins.case_keys(h), joins.case_keys(p), strict=True))


def test_the_reference_is_the_labs_model_answer():
    assert REFERENCE.read_text() == LAB_FILE.read_text()


def test_the_reference_scores_full_marks(tmp_path):
    graded = grade2(tmp_path, REFERENCE)
    assert graded.score == 100
    assert [t["status"] for t in graded.doc["tests"]] == ["passed"] * len(CASES)
    hidden = [t for t in graded.doc["tests"] if "hidden" in t["tags"]]
    assert len(hidden) == len(HIDDEN) == 9 and all(t["visibility"] == HIDDEN_VISIBILITY for t in hidden)


def test_the_student_release_stub_scores_zero_and_says_what_to_write(tmp_path):
    stub, blocks = strip_solutions(LAB_FILE.read_text(), str(LAB_FILE))
    assert blocks == 2 and "BEGIN" not in stub
    graded = grade2(tmp_path, stub)
    assert graded.score == 0
    assert "Lab 2" in graded.test("D1")["output"]


def mutant(*edits: tuple[str, str]) -> str:
    """The reference with each ``(old, new)`` edit made: one plausible mistake."""
    text = REFERENCE.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


MUTANTS = {
    # memory is never checked: nothing spills, the whole build input stays in memory
    "ignores the budget": mutant(("            while in_use() > self.memory:",
                                  "            while False:")),
    # the smallest partition goes to disk, so memory fills again at once
    "spills the smallest": mutant(("key=lambda i: sizes[i])", "key=lambda i: -sizes[i])")),
    # GRACE: every partition is written out, even when the build input fits
    "every partition to disk": mutant((
        "            while in_use() > self.memory:",
        "            while any(i not in spills for i in range(self.fanout)):")),
    # probe tuples of spilled partitions are dropped instead of written to their file
    "loses spilled probe tuples": mutant((
        "                    probe_spills[i].write(take_records(batch, where == i))",
        "                    pass")),
    # level 0's hash function at every level: a spilled partition does not split again
    "same hash one level down": mutant(
        ("where = self._partition(batch, self.build_key, level)",
         "where = self._partition(batch, self.build_key, 0)"),
        ("where = self._partition(batch, self.probe_key, level)",
         "where = self._partition(batch, self.probe_key, 0)")),
    # a spilled partition is joined in memory however big it is
    "no recursion": mutant(("            elif build_file.num_pages * build_file.capacity <= self.limit:",
                            "            elif True:")),
}


@pytest.mark.parametrize("wrong", sorted(MUTANTS))
def test_wrong_joins_lose_marks_and_public_cases_warn_first(tmp_path, wrong):
    graded = grade2(tmp_path, MUTANTS[wrong])
    lost = set(graded.failed())
    print(wrong, sorted(lost))
    assert lost and graded.score == 100 - sum(CASES[c].points for c in lost)
    # public cases warn first: every lost hidden case has a lost public case of its category
    public_lost = {CASES[c].category for c in lost - HIDDEN}
    assert all(CASES[c].category in public_lost for c in lost & HIDDEN), sorted(lost)


# Wrong joins that scored full marks before the cases added for them: "a partition that exactly
# fills memory" (D15, D16) and a build input sorted by key (D17, D18). Each with the cases it
# loses (found by running them), a public case that shows it and what that case's feedback says.
NEAR_MISSES = {
    # "fits" read as under the limit, not at most: a spilled partition of exactly M - 1 pages is
    # partitioned again; that spills nothing more, but hashes its tuples again (partitioned_tuples).
    # D4, D9 and D11 happen to hold such a partition too: D9 (duplicate keys) is lost while D2
    # and D17 are not, but D15 and D4, public, show the mistake first.
    "exactly full is partitioned again": (
        mutant(("            elif build_file.num_pages * build_file.capacity <= self.limit:",
                "            elif build_file.num_pages * build_file.capacity < self.limit:")),
        {"D4", "D9", "D11", "D15", "D16"}, "D15", "partitioned_tuples: yours"),
    # the highest-numbered of the largest partitions spilled on a tie, not the lowest
    "spills the highest on a tie": (
        mutant(("key=lambda i: sizes[i])", "key=lambda i: (sizes[i], i))")), {"D15", "D16"},
        "D15", "spill_pages_written: yours"),
    # "every build tuple had the same key" judged write by write, not over the whole partition:
    # a partition of several keys, one per batch, goes to memory-loads instead of one level down
    "one key judged per write": (
        mutant(("key0 = first_key.setdefault(i, rows[self.build_key][0])",
                "key0 = rows[self.build_key][0]")), {"D17", "D18"},
        "D17", "partitions_spilled: yours 3, the reference's 12"),
}


@pytest.mark.parametrize("wrong", sorted(NEAR_MISSES))
def test_boundary_mistakes_lose_the_cases_added_for_them(tmp_path, wrong):
    source, lost, case, says = NEAR_MISSES[wrong]
    graded = grade2(tmp_path, source)
    assert set(graded.failed()) == lost
    assert graded.score == 100 - sum(CASES[c].points for c in lost) < 100
    out = graded.test(case)["output"]
    assert says in out and "the reference's" in out


def test_feedback_names_the_differences(tmp_path):
    graded = grade2(tmp_path, MUTANTS["loses spilled probe tuples"])
    d3 = graded.test("D3")["output"]
    assert "rows: you returned" in d3 and "missing (a_id, b_id)" in d3
    graded = grade2(tmp_path / "again", MUTANTS["ignores the budget"])
    d3 = graded.test("D3")["output"]
    assert "partitions_spilled: yours 0, the reference's 7" in d3
    assert "memory: your join recorded a peak of" in d3
