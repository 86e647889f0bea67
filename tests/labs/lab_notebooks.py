"""What the tests of every lab share: the script and the notebook hold the same cells, and
running the stored notebook top to bottom in a fresh kernel at a small scale.

Needs the ``labs`` extra (jupytext, nbclient, nbformat, ipykernel, matplotlib).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

try:
    import jupytext
    import nbformat
    from nbclient import NotebookClient
except ImportError as missing:  # a clear line instead of a bare collection error
    raise ImportError(f"tests/labs needs the labs extra ({missing.name} is missing): "
                      "pip install -e '.[dev,labs]'") from None


def cells(nb) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, sorted(c.metadata.get("tags", []))) for c in nb.cells]


def assert_in_sync(script: Path, notebook: Path) -> None:
    """The py:percent script and the .ipynb hold the same cells, the notebook without outputs,
    and the first code cell is the tagged parameters cell reading MINIDB_LAB_SCALE."""
    lab = f"{script.parent.parent.name}/{script.parent.name}"
    paired, stored = jupytext.read(script), nbformat.read(notebook, as_version=4)
    assert cells(paired) == cells(stored), (
        f"{lab}: the .py and the .ipynb differ; run `jupytext --sync {lab}/{script.name}` after "
        "editing either")
    assert stored.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    for i, cell in enumerate(stored.cells):
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, (
                f"cell {i + 1} of {notebook.name} was saved with outputs; store it clean "
                f"(jupytext --sync regenerates it from the .py)")
    code = [c for c in paired.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert "MINIDB_LAB_SCALE" in code[0].source


@dataclass
class Ran:
    notebook: object
    text: str
    """Everything the code cells printed."""
    images: int
    """Plots drawn (PNG outputs)."""
    seconds: float


def run_notebook(notebook: Path, scale: str, tmp_path: Path, monkeypatch) -> Ran:
    """Execute the stored notebook in a fresh kernel at ``scale``; any cell error raises."""
    monkeypatch.setenv("MINIDB_LAB_SCALE", scale)
    monkeypatch.setenv("MINIDB_LAB_BACKEND", "inline")
    # keep the kernel's files out of $HOME (read-only or shared on CI machines)
    for var in ("JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(notebook, as_version=4)
    # iopub_timeout: how long to wait for a cell's last outputs after the kernel says it is
    # done; nbclient's default (4 s) can drop printed lines on a loaded machine.
    # coalesce_streams: the kernel sends what a cell prints in pieces, one per buffer flush, and
    # on a loaded machine a flush can fall in the middle of a print; merged, a line stays whole
    client = NotebookClient(nb, timeout=300, iopub_timeout=60, coalesce_streams=True,
                            kernel_name="python3",
                            resources={"metadata": {"path": str(notebook.parent)}})
    started = time.perf_counter()
    client.execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    text = "\n".join(o.get("text", "") for c in code for o in c.outputs
                     if o.get("output_type") == "stream")
    images = sum(1 for c in code for o in c.outputs if "image/png" in o.get("data", {}))
    return Ran(nb, text, images, time.perf_counter() - started)
