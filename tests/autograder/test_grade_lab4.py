"""Lab 4 (LH* addressing) graded end to end in the real sandbox: the reference and the lab's
own file score 100, the student release's stubs 0, and plausible wrong answers (one-step
forwarding, no image adjustment, an off-by-one client, N0 forgotten, an image that never starts
the next round) lose exactly the cases their mistake shows in, always a public case of the same
category first; the feedback names the question and LH*'s answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from ag_helpers import FAST, ROOT, Graded, grade_one_file

from autograder.assignments.lab4 import STUDENT_DIR, assignment, lhstar
from autograder.grading import HIDDEN_VISIBILITY
from autograder.markers import strip_solutions

REFERENCE = ROOT / "autograder" / "assignments" / "lab4" / "reference" / "addressing.py"
LAB_FILE = ROOT / STUDENT_DIR / "addressing.py"
LAB = assignment()
CASES = {c.id: c for p in LAB.parts for c in p.cases}
HIDDEN = {i for i, c in CASES.items() if c.hidden}


def grade4(tmp_path: Path, source: Path | str) -> Graded:
    return grade_one_file("lab4", "addressing.py", tmp_path, source, FAST)


def test_points_and_categories():
    assert sum(c.points for c in CASES.values()) == 100
    public = {c.category for c in CASES.values() if not c.hidden}
    hidden = {c.category for c in CASES.values() if c.hidden}
    assert public == set(lhstar.CATEGORIES) and hidden <= public
    for h in (c for c in CASES.values() if c.hidden):
        for p in (c for c in CASES.values() if not c.hidden):
            assert h.inputs != p.inputs


@pytest.mark.parametrize("source", [REFERENCE, LAB_FILE], ids=["reference", "lab file"])
def test_the_reference_and_the_labs_own_file_score_full_marks(tmp_path, source):
    graded = grade4(tmp_path, source)
    assert graded.score == 100
    assert [t["status"] for t in graded.doc["tests"]] == ["passed"] * 14
    hidden = [t for t in graded.doc["tests"] if "hidden" in t["tags"]]
    assert len(hidden) == 7 and all(t["visibility"] == HIDDEN_VISIBILITY for t in hidden)


def test_the_student_release_stub_scores_zero_and_says_what_to_write(tmp_path):
    stub, blocks = strip_solutions(LAB_FILE.read_text(), str(LAB_FILE))
    assert blocks == 3 and "BEGIN" not in stub
    graded = grade4(tmp_path, stub)
    assert graded.score == 0
    assert "Lab 4" in graded.test("C1")["output"]


def mutant(*edits: tuple[str, str]) -> str:
    """The reference with each ``(old, new)`` edit made: one plausible mistake."""
    text = REFERENCE.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


MUTANTS = {
    # h_j(C) alone, skipping the h_(j-1) step
    "one-step forwarding": mutant(("        if a1 != address and level > 0:\n"
                                   "            a2 = h(level - 1, pseudokey, n0)\n"
                                   "            if address < a2 < a1:\n"
                                   "                return a2\n", "")),
    # the client never learns from an IAM
    "no image adjustment": mutant(("        if level <= image.level:", "        if True:")),
    # bucket n' itself taken as split
    "client off by one": mutant(("if a < image.split else a", "if a <= image.split else a")),
    # 2**i buckets per level, N0 forgotten
    "N0 forgotten": mutant(("from minidb.sdds.addressing import Addressing, Image, h",
                            "from minidb.sdds.addressing import Addressing, Image\n\n\n"
                            "def h(level, pseudokey, n0):\n    return pseudokey % (1 << level)")),
    # n' left at 2**i' x N0 instead of starting round i' + 1
    "IAM never rolls over": mutant(("return Image(i + 1, 0) if n >= n0 << i else Image(i, n)",
                                    "return Image(i, n)")),
}

# the cases each wrong answer must lose (found by running them; each is explained)
WRONG = [
    # right when no forward is needed (exact images), wrong whenever the second step matters,
    # and a whole file trips over a bucket that does not exist yet
    ("one-step forwarding", set(CASES) - {"C1", "C8"}),
    # the routes are right, the images never move: every check of an image or of a whole file
    ("no image adjustment", {"C4", "C5", "C6", "C7", "C11", "C12", "C13", "C14"}),
    # wrong everywhere, starting with the (0, 0) image
    ("client off by one", set(CASES)),
    # right only while N0 = 1
    ("N0 forgotten", {"C5", "C7", "C12", "C14"}),
    ("IAM never rolls over", {"C4", "C5", "C6", "C7", "C12", "C13", "C14"}),
]


@pytest.mark.parametrize(("wrong", "lost"), WRONG, ids=[w for w, _ in WRONG])
def test_wrong_answers_lose_the_cases_their_mistake_shows_in(tmp_path, wrong, lost):
    graded = grade4(tmp_path, MUTANTS[wrong])
    assert set(graded.failed()) == lost
    assert graded.score == 100 - sum(CASES[c].points for c in lost)
    # public cases warn first: every lost hidden case has a lost public case of its category
    public_lost = {CASES[c].category for c in lost - HIDDEN}
    assert all(CASES[c].category in public_lost for c in lost & HIDDEN)


def test_feedback_names_the_question_and_lh_stars_answer(tmp_path):
    graded = grade4(tmp_path, MUTANTS["one-step forwarding"])
    c3 = graded.test("C3")["output"]
    assert "0 of 120 routes right" in c3 and "LH* routes" in c3 and "client image" in c3
    c6 = graded.test("C6")["output"]
    assert "forwards: yours 1, LH*'s 2" in c6 and "operation" in c6
    graded = grade4(tmp_path / "again", MUTANTS["no image adjustment"])
    assert "then the IAM of bucket" in graded.test("C4")["output"]
