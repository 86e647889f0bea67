"""Lab 4 (labs/lab4_lhstar): the notebook runs top to bottom, its two files agree, and the graded
file's solution blocks are marked and strip to a stub.

Needs the ``labs`` extra (jupytext, nbclient, nbformat, ipykernel, matplotlib).
"""

from __future__ import annotations

import ast
import time
from pathlib import Path

try:
    import jupytext
    import nbformat
    from nbclient import NotebookClient
except ImportError as missing:  # a clear line instead of a bare collection error
    raise ImportError(f"tests/labs needs the labs extra ({missing.name} is missing): "
                      "pip install -e '.[dev,labs]'") from None

from autograder.markers import find_blocks, has_marker_text, strip_solutions

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "labs" / "lab4_lhstar"
SCRIPT = LAB / "lab4_lhstar.py"
NOTEBOOK = LAB / "lab4_lhstar.ipynb"
GRADED = LAB / "addressing.py"


def _cells(nb) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, sorted(c.metadata.get("tags", []))) for c in nb.cells]


def test_script_and_notebook_in_sync():
    script = jupytext.read(SCRIPT)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert _cells(script) == _cells(notebook), (
        "labs/lab4_lhstar: the .py and the .ipynb differ; run "
        "`jupytext --sync labs/lab4_lhstar/lab4_lhstar.py` after editing either")
    assert notebook.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert all(not c.outputs for c in notebook.cells if c.cell_type == "code")
    code = [c for c in script.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])


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
    monkeypatch.setenv("MINIDB_LAB_SCALE", "0.1")
    monkeypatch.setenv("MINIDB_LAB_BACKEND", "inline")
    for var in ("JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(LAB)}})
    started = time.perf_counter()
    client.execute()
    text = "\n".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code"
                     for o in c.outputs if o.get("output_type") == "stream")
    assert "500 lookups from the image (0, 0): at most 2 forwards" in text
    assert "caught: bucket" in text and "which does not exist" in text
    assert "3000 of 3000 operations as LH* does them" in text  # the lab's own file is right
    assert "join(SDDS, BAT): broadcast the BAT" in text and "materialize the SDDS" in text
    images = sum(1 for c in notebook.cells if c.cell_type == "code" for o in c.outputs
                 if "image/png" in o.get("data", {}))
    assert images >= 2, f"expected the lab's plots, got {images} images"
    print(f"lab4 notebook ran in {time.perf_counter() - started:.1f} s")
