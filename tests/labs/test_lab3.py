"""Lab 3 (labs/lab3_volcano): the notebook runs top to bottom, its two files agree, and the
graded file's solution blocks are marked and strip to a stub.

Needs the ``labs`` extra (jupytext, nbclient, nbformat, ipykernel, matplotlib).
"""

from __future__ import annotations

import ast
from pathlib import Path

from lab_notebooks import assert_in_sync, run_notebook

from autograder.markers import find_blocks, has_marker_text, strip_solutions

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "labs" / "lab3_volcano"
SCRIPT = LAB / "lab3_volcano.py"
NOTEBOOK = LAB / "lab3_volcano.ipynb"
GRADED = LAB / "unfix.py"


def test_script_and_notebook_in_sync():
    assert_in_sync(SCRIPT, NOTEBOOK)


def test_solution_blocks_sit_in_the_graded_file_only_and_strip_to_a_stub():
    source = GRADED.read_text(encoding="utf-8")
    blocks = find_blocks(source, str(GRADED))
    assert len(blocks) == 2 and all(b.hint and "Lab 3" in b.hint for b in blocks)
    assert find_blocks(SCRIPT.read_text(encoding="utf-8"), str(SCRIPT)) == []
    assert not has_marker_text(NOTEBOOK.read_text(encoding="utf-8"))
    stripped, count = strip_solutions(source, str(GRADED))
    assert count == 2 and not has_marker_text(stripped) and "NotImplementedYet" in stripped
    ast.parse(stripped)


def test_notebook_runs(tmp_path, monkeypatch):
    """Execute the stored notebook at a small scale; any cell error fails the test."""
    monkeypatch.setenv("MINIDB_RESULTS", str(tmp_path / "results.duckdb"))  # an empty store
    ran = run_notebook(NOTEBOOK, "0.1", tmp_path, monkeypatch)
    text = ran.text
    assert "sorted output equals DuckDB's ORDER BY key: 20000 records" in text
    assert "speedup 2 -> 8 disks" in text and "total lock hold" in text
    # Part F ran on the lab's own unfix.py: one call per cluster instead of one per record
    assert "student_grouped_1, 8 disks" in text and "'filter': '100,000 -> " in text
    assert "4-byte over 16-byte alignment" in text
    # Part H repriced Part B's sorts with the lock as a plain queue (spin_transfers=0)
    assert "plain queue s" in text and "handoffs s" in text
    assert "no stored Volcano runs" in text and "NOT CHECKED  volcano." in text
    assert ran.images >= 2, f"expected the lab's plots, got {ran.images} images"
    print(f"lab3 notebook ran in {ran.seconds:.1f} s")
