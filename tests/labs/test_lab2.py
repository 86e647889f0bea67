"""Lab 2 (labs/lab2_joins): the notebook runs top to bottom, its two files agree, and the graded
file's solution blocks are marked and strip to a stub.

Needs the ``labs`` extra (jupytext, nbclient, nbformat, ipykernel, matplotlib).
"""

from __future__ import annotations

import ast
from pathlib import Path

from lab_notebooks import assert_in_sync, run_notebook

from autograder.markers import find_blocks, has_marker_text, strip_solutions

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "labs" / "lab2_joins"
SCRIPT = LAB / "lab2_joins.py"
NOTEBOOK = LAB / "lab2_joins.ipynb"
GRADED = LAB / "hybrid_hash.py"


def test_script_and_notebook_in_sync():
    assert_in_sync(SCRIPT, NOTEBOOK)


def test_solution_blocks_sit_in_the_graded_file_only_and_strip_to_a_stub():
    source = GRADED.read_text(encoding="utf-8")
    blocks = find_blocks(source, str(GRADED))
    assert len(blocks) == 2 and all(b.hint and "Lab 2" in b.hint for b in blocks)
    assert find_blocks(SCRIPT.read_text(encoding="utf-8"), str(SCRIPT)) == []
    assert not has_marker_text(NOTEBOOK.read_text(encoding="utf-8"))
    stripped, count = strip_solutions(source, str(GRADED))
    assert count == 2 and not has_marker_text(stripped) and "NotImplementedYet" in stripped
    ast.parse(stripped)


def test_notebook_runs(tmp_path, monkeypatch):
    """Execute the stored notebook at a small scale; any cell error fails the test."""
    ran = run_notebook(NOTEBOOK, "0.1", tmp_path, monkeypatch)
    text = ran.text
    for algorithm in ("hash_join", "simple_hash", "hybrid_hash", "grace_hash", "sort_merge"):
        assert f"{algorithm:<12}   " in text and "equal to DuckDB's: True" in text
    assert "equal to DuckDB's: False" not in text
    assert "PASS         gamma.joins_linear_until_overflow" in text  # Part C on the model
    assert "56 / 56 on the public cases" in text  # Part D: the lab's own file passes them
    assert "simple_hash at the least memory: {'overflows':" in text  # Part B counted overflows
    assert "student_hybrid rows equal DuckDB's: True" in text  # the lab's own file is right
    assert ran.images >= 1, f"expected the lab's plot, got {ran.images} images"
    print(f"lab2 notebook ran in {ran.seconds:.1f} s")
