"""Lab 3 (grouped unfixing) graded end to end in the real sandbox: the reference and the lab's
own file score 100, the student release's stubs 0, and plausible wrong answers (no flush at the
end, a table that ignores its slots, one call per record, groups flushed in arrival order, a
count that starts at zero, a close that leaves the table full) lose the cases their mistake shows in, always a public case of the
same category first; the feedback names the stream and grouped unfix's call."""

from __future__ import annotations

from pathlib import Path

import pytest
from ag_helpers import FAST, ROOT, Graded, grade_one_file

from autograder.assignments.lab3 import STUDENT_DIR, assignment, unfix_cases
from autograder.grading import HIDDEN_VISIBILITY
from autograder.markers import strip_solutions
from autograder.sandbox import Limits

REFERENCE = ROOT / "autograder" / "assignments" / "lab3" / "reference" / "unfix.py"
LAB_FILE = ROOT / STUDENT_DIR / "unfix.py"
LAB = assignment()
CASES = {c.id: c for p in LAB.parts for c in p.cases}
# the sort cases start minidb in the child and sort ~20,000 records record by record
LIMITS = Limits(wall_s=120, cpu_s=60, memory_mb=FAST.memory_mb, output_mb=FAST.output_mb)


def grade3(tmp_path: Path, source: Path | str) -> Graded:
    return grade_one_file("lab3", "unfix.py", tmp_path, source, LIMITS)


def test_points_and_categories():
    assert sum(c.points for c in CASES.values()) == 100
    public = {c.category for c in CASES.values() if not c.hidden}
    hidden = {c.category for c in CASES.values() if c.hidden}
    assert public == set(unfix_cases.CATEGORIES) and hidden <= public
    for h in (c for c in CASES.values() if c.hidden):
        for p in (c for c in CASES.values() if not c.hidden):
            assert h.inputs != p.inputs


@pytest.mark.parametrize("source", [REFERENCE, LAB_FILE], ids=["reference", "lab file"])
def test_the_reference_and_the_labs_own_file_score_full_marks(tmp_path, source):
    graded = grade3(tmp_path, source)
    assert graded.score == 100, graded.failed()
    assert [t["status"] for t in graded.doc["tests"]] == ["passed"] * len(CASES)
    hidden = [t for t in graded.doc["tests"] if "hidden" in t["tags"]]
    assert len(hidden) == 5 and all(t["visibility"] == HIDDEN_VISIBILITY for t in hidden)


def test_the_student_release_stub_scores_zero_and_says_what_to_write(tmp_path):
    stub, blocks = strip_solutions(LAB_FILE.read_text(), str(LAB_FILE))
    assert blocks == 2 and "BEGIN" not in stub
    graded = grade3(tmp_path, stub)
    assert graded.score == 0
    assert "Lab 3" in graded.test("T1")["output"]


def mutant(*edits: tuple[str, str]) -> str:
    """The reference with each ``(old, new)`` edit made: one plausible mistake."""
    text = REFERENCE.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


MUTANTS = {
    # groups still gathered at the end are never unfixed
    "no flush at close": (mutant(("        for slot in sorted(self.table):\n"
                                  "            self.call(*self.table[slot])\n", "")),
                          {"T1", "T2", "T3", "S1", "S2"}),
    # one entry whatever the table size
    "ignores the slots": (mutant(("        slot = slot_of(cluster, self.entries)\n",
                                  "        slot = 0\n")), {"T2", "T3"}),
    # a call per record: the simple scheme
    "one call per record": (mutant(("    def unfix(self, cluster):\n",
                                    "    def unfix(self, cluster):\n"
                                    "        self.call(cluster, 1)\n        return\n")),
                            {"T1", "T2", "T3", "S1"}),
    # the groups left at the end flushed in the order they were opened, not slot by slot
    "close in arrival order": (mutant(("        for slot in sorted(self.table):\n",
                                       "        for slot in list(self.table):\n")),
                               {"T2", "T3"}),
    # a new group counted from zero
    "count starts at zero": (mutant(("            self.table[slot] = [cluster, 1]\n",
                                     "            self.table[slot] = [cluster, 0]\n")),
                             {"T1", "T2", "T3", "S2"}),
    # close flushes every group but leaves them in the table: a second close flushes them again
    # (the end-of-stream cases close twice; full marks before they did)
    "close keeps the table": (mutant(("        self.table.clear()\n", "")), {"T3", "T6"}),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_wrong_answers_lose_the_cases_that_show_them(tmp_path, name):
    source, must_fail = MUTANTS[name]
    graded = grade3(tmp_path, source)
    failed = set(graded.failed())
    public_failed = {c for c in failed if not CASES[c].hidden}
    assert must_fail <= failed, (name, failed)
    assert graded.score < 100
    # every category a hidden case fails in is failed by a public case first
    for case in failed:
        if CASES[case].hidden:
            assert any(CASES[p].category == CASES[case].category for p in public_failed), case
    first = graded.test(sorted(public_failed)[0])["output"]
    assert "grouped unfix" in first or "ORDER BY" in first or "unfix every record" in first


def test_a_table_left_full_by_close_loses_exactly_the_end_of_stream_cases(tmp_path):
    source, lost = MUTANTS["close keeps the table"]
    graded = grade3(tmp_path, source)
    assert set(graded.failed()) == lost and graded.score == 80
    assert "close() called a second time" in graded.test("T3")["output"]


def test_feedback_names_the_stream_and_the_expected_call(tmp_path):
    source, _ = MUTANTS["close in arrival order"]
    out = grade3(tmp_path, source).test("T2")["output"]
    assert "stream" in out and "[cluster, count]" in out and "grouped unfix's" in out
