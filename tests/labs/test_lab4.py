"""Lab 4 (labs/lab4_lhstar): the notebook runs top to bottom, its two files agree, and the graded
file's solution blocks are marked and strip to a stub.

Needs the ``labs`` extra (jupytext, nbclient, nbformat, ipykernel, matplotlib).
"""

from __future__ import annotations

import ast
from pathlib import Path

from lab_notebooks import assert_in_sync, run_notebook

from autograder.markers import find_blocks, has_marker_text, strip_solutions

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "labs" / "lab4_lhstar"
SCRIPT = LAB / "lab4_lhstar.py"
NOTEBOOK = LAB / "lab4_lhstar.ipynb"
GRADED = LAB / "addressing.py"


def test_script_and_notebook_in_sync():
    assert_in_sync(SCRIPT, NOTEBOOK)


def test_solution_blocks_sit_in_the_graded_file_only_and_strip_to_a_stub():
    source = GRADED.read_text(encoding="utf-8")
    blocks = find_blocks(source, str(GRADED))
    assert len(blocks) == 3 and all(b.hint and "Lab 4" in b.hint for b in blocks)
    assert find_blocks(SCRIPT.read_text(encoding="utf-8"), str(SCRIPT)) == []
    assert not has_marker_text(NOTEBOOK.read_text(encoding="utf-8"))
    stripped, count = strip_solutions(source, str(GRADED))
    assert count == 3 and not has_marker_text(stripped) and "NotImplementedYet" in stripped
    ast.parse(stripped)


def test_notebook_runs(tmp_path, monkeypatch):
    """Execute the stored notebook at a small scale; any cell error fails the test."""
    ran = run_notebook(NOTEBOOK, "0.1", tmp_path, monkeypatch)
    text = ran.text
    assert "500 lookups from the image (0, 0): at most 2 forwards" in text
    assert "caught: bucket" in text and "which does not exist" in text
    assert "3000 of 3000 operations as LH* does them" in text  # the lab's own file is right
    assert "join(SDDS, BAT): broadcast the BAT" in text and "materialize the SDDS" in text
    assert "PASS  lhstar.knee_between_40_and_48mb" in text  # Part G: Section 5 on the rules
    assert "PASS  lhstar.remote_joins_lose" in text
    assert ran.images >= 3, f"expected the lab's plots, got {ran.images} images"
    print(f"lab4 notebook ran in {ran.seconds:.1f} s")
