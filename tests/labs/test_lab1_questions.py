"""Lab 1's questions say what minidb shows: question 10 describes minidb's own 10%-vs-0% curve
over page sizes (it jumps at 4 KB, then stays flat), not the paper's growing one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "labs" / "lab1_gamma" / "lab1_gamma.py"


def question(number: int) -> str:
    """The text of numbered question ``number`` in the lab's script (comment marks removed)."""
    text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#")
                     for line in SCRIPT.read_text().splitlines())
    found = re.search(rf"^{number}\. (.*?)(?=^\d+\. |^\S|\Z)", text, re.S | re.M)
    assert found, f"no question {number}"
    return " ".join(found.group(1).split())


def test_question_10_no_longer_says_minidb_gap_grows():
    text = question(10)
    assert "grows with the page size in both" not in text
    assert "19%" in text and "50%" in text  # the paper's numbers (datasets/reference)
    assert "10%" in text and "27%" in text and "22-24%" in text  # minidb's, checked below


@pytest.mark.slow
def test_question_10_matches_minidbs_curve():
    """At SCALE = 1 (about 8 s): about 10% at 2 KB, about 27% at 4 KB, 22-24% beyond."""
    from minidb.experiments import run_experiment

    rows = run_experiment("gamma.page_size", scale=1.0)
    times = {(r["row"], r["column"]): r["value"] for r in rows
             if r["metric"] == "response_time" and r["clock"] == "modeled"}
    gap = {kb: 100 * (times[("select_10pct_nonindexed", f"page_{kb}kb")]
                      / times[("select_0pct_nonindexed", f"page_{kb}kb")] - 1)
           for kb in (2, 4, 8, 16, 32)}
    assert 7 <= gap[2] <= 13 and 24 <= gap[4] <= 30
    assert all(20 <= gap[kb] <= 25 for kb in (8, 16, 32))
    assert gap[32] < gap[4]  # it does not keep growing
