"""Lab 5 (two-phase commit) graded end to end in the real sandbox: the reference and the lab's
own file score 100, the student release's stubs 0, and plausible wrong answers (a vote or a
decision not forced, a commit on the first yes, no repeats on a timeout, a yes delivered twice
counted twice, a protocol that borrows minidb's own) lose the cases their mistake shows in,
always a public case of the same category first; the feedback names the run (seed, crash) and
the promise broken."""

from __future__ import annotations

from pathlib import Path

import pytest
from ag_helpers import FAST, ROOT, Graded, grade_one_file

from autograder.assignments.lab5 import STUDENT_DIR, assignment, commit_cases
from autograder.grading import HIDDEN_VISIBILITY
from autograder.markers import strip_solutions
from autograder.sandbox import Limits

REFERENCE = ROOT / "autograder" / "assignments" / "lab5" / "reference" / "commit.py"
LAB_FILE = ROOT / STUDENT_DIR / "commit.py"
LAB = assignment()
CASES = {c.id: c for p in LAB.parts for c in p.cases}
LIMITS = Limits(wall_s=120, cpu_s=60, memory_mb=FAST.memory_mb, output_mb=FAST.output_mb)


def grade5(tmp_path: Path, source: Path | str) -> Graded:
    return grade_one_file("lab5", "commit.py", tmp_path, source, LIMITS)


def test_points_and_categories():
    assert sum(c.points for c in CASES.values()) == 100
    public = {c.category for c in CASES.values() if not c.hidden}
    hidden = {c.category for c in CASES.values() if c.hidden}
    assert public == set(commit_cases.CATEGORIES) and hidden <= public
    for h in (c for c in CASES.values() if c.hidden):
        for p in (c for c in CASES.values() if not c.hidden):
            assert h.inputs != p.inputs


@pytest.mark.parametrize("source", [REFERENCE, LAB_FILE], ids=["reference", "lab file"])
def test_the_reference_and_the_labs_own_file_score_full_marks(tmp_path, source):
    graded = grade5(tmp_path, source)
    assert graded.score == 100, graded.failed()
    assert [t["status"] for t in graded.doc["tests"]] == ["passed"] * len(CASES)
    hidden = [t for t in graded.doc["tests"] if "hidden" in t["tags"]]
    assert len(hidden) == 6 and all(t["visibility"] == HIDDEN_VISIBILITY for t in hidden)


def test_the_student_release_stub_scores_zero_and_says_what_to_write(tmp_path):
    stub, blocks = strip_solutions(LAB_FILE.read_text(), str(LAB_FILE))
    assert blocks == 5 and "BEGIN" not in stub
    graded = grade5(tmp_path, stub)
    assert graded.score == 0
    assert "Lab 5" in graded.test("C1")["output"]


def mutant(*edits: tuple[str, str]) -> str:
    """The reference with each ``(old, new)`` edit made: one plausible mistake."""
    text = REFERENCE.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


MUTANTS = {
    # the yes vote is sent while its PREPARED record is only in memory
    "vote not forced": (mutant(("s.log(PREPARED, txn, force=True)", "s.log(PREPARED, txn)")),
                        {"P1"}),
    # the decision is sent before it is stable
    "decision not forced": (mutant(("        s.log(outcome, txn, force=True)\n",
                                    "        s.log(outcome, txn)\n")), {"K1"}),
    # commit as soon as one participant says yes
    "decides before every vote": (mutant(("                if len(st[\"votes\"]) == "
                                          "len(s.participants):\n",
                                          "                if st[\"votes\"]:\n")), {"A1"}),
    # a timer that gives up: nothing lost is ever sent again
    "no repeats": (mutant(("            for p in s.participants:\n"
                           "                if p not in st[\"acks\"]:\n"
                           "                    s.send(p, outcome, txn)\n", ""),
                          ("                s.send(COORDINATOR, \"ask\", txn)\n"
                           "                s.set_timer(txn, \"outcome\")\n", "")),
                   {"L1"}),
    # votes kept in a list: a yes the network delivers twice counts twice, and enough repeats
    # commit before the no arrives (full marks before L3 and L4 repeated messages this often)
    "counts a repeated yes twice": (mutant(
        ("s.state[txn] = {\"votes\": set(), \"acks\": set()}\n        for p in s.participants:",
         "s.state[txn] = {\"votes\": [], \"acks\": set()}\n        for p in s.participants:"),
        ("st[\"votes\"].add(m.src)", "st[\"votes\"].append(m.src)")), {"L3", "L4"}),
    # minidb's own 2PC under another name
    "borrows minidb's": ("from minidb.plugins import register\n"
                         "from minidb.txn.commit.two_pc import TwoPhaseCommit\n\n\n"
                         "@register(\"commit\", \"student_2pc\")\n"
                         "class Mine(TwoPhaseCommit):\n    name = \"student_2pc\"\n",
                         {"C1", "A1", "K1", "P1", "L1"}),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_wrong_answers_lose_the_cases_that_show_them(tmp_path, name):
    source, must_fail = MUTANTS[name]
    graded = grade5(tmp_path, source)
    failed = set(graded.failed())
    public_failed = {c for c in failed if not CASES[c].hidden}
    assert must_fail <= failed, (name, failed)
    assert graded.score < 100
    for case in failed:  # every category a hidden case fails in is failed by a public case first
        if CASES[case].hidden:
            assert any(CASES[p].category == CASES[case].category for p in public_failed), case


def test_a_repeated_yes_counted_twice_loses_only_the_repeated_vote_cases(tmp_path):
    source, lost = MUTANTS["counts a repeated yes twice"]
    graded = grade5(tmp_path, source)
    assert set(graded.failed()) == lost and graded.score == 94
    out = graded.test("L3")["output"]
    assert "delivered twice" in out and "committed although participant(s) [4] voted no" in out


def test_feedback_names_the_run_and_the_promise(tmp_path):
    source, _ = MUTANTS["vote not forced"]
    out = grade5(tmp_path, source).test("P1")["output"]
    assert "seed" in out and "participant 1 crashed before its step" in out
    assert "wiped out" in out
