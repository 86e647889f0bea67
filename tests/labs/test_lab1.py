"""Lab 1 (labs/lab1_gamma): the notebook runs top to bottom, its two files agree, and its
assignment cells are marked and right.

* ``test_notebook_runs``: executes ``lab1_gamma.ipynb`` in a fresh kernel at a small scale
  (``MINIDB_LAB_SCALE``), failing on the first cell that raises;
* ``test_script_and_notebook_in_sync``: the ``py:percent`` script and the ``.ipynb`` hold the
  same cells (type, source, tags), and the notebook is stored without outputs;
* ``test_solution_blocks_*``: the reference code of both parts sits between solution markers
  in the two graded files next to the notebook, ``partitioner.py`` and ``policy.py`` (the one
  place a student writes each part: the notebook imports them and holds no solution block),
  and stripping it leaves valid Python with no marker left;
* ``test_submission_*``: those two files register the names the grader looks up and behave
  like minidb's built-in ``range_uniform`` and ``clock``; handed in as they are, they get full
  marks from the autograder (public and hidden cases).

Needs the ``labs`` extra (jupytext, nbclient, nbformat, ipykernel, matplotlib).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from lab_notebooks import assert_in_sync, run_notebook

from autograder.markers import find_blocks, has_marker_text, strip_solutions

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "labs" / "lab1_gamma"
SCRIPT = LAB / "lab1_gamma.py"
NOTEBOOK = LAB / "lab1_gamma.ipynb"
SMALL_SCALE = "0.05"
SUBMISSIONS = {"partitioner.py": ("partitioner", "student_range_uniform"),
               "policy.py": ("buffer_policy", "student_clock")}


def submission_cells() -> dict[str, str]:
    """file name -> source of the graded file next to the notebook."""
    return {name: (LAB / name).read_text(encoding="utf-8") for name in SUBMISSIONS}


def load_cell(name: str) -> types.SimpleNamespace:
    """Run one graded file as its own module (as the grader runs it)."""
    namespace: dict = {"__name__": f"lab1_{name.removesuffix('.py')}"}
    exec(compile(submission_cells()[name], str(LAB / name), "exec"), namespace)
    return types.SimpleNamespace(**namespace)


# -- the two files ------------------------------------------------------------------------------
def test_script_and_notebook_in_sync():
    assert_in_sync(SCRIPT, NOTEBOOK)  # also: the parameters cell comes first


# -- solution markers ---------------------------------------------------------------------------
def test_solution_blocks_are_marked_in_both_graded_files_and_nowhere_else_in_the_lab():
    for name, source in submission_cells().items():
        blocks = find_blocks(source, name)
        assert blocks, f"{name} has no solution block"
        assert all(b.hint and "Lab 1, part" in b.hint for b in blocks), \
            f"{name}: every block needs a hint naming the lab part"
    # one place per graded piece: the notebook imports the files, it has no block of its own
    assert find_blocks(SCRIPT.read_text(encoding="utf-8"), str(SCRIPT)) == []
    assert not has_marker_text(NOTEBOOK.read_text(encoding="utf-8"))
    script = SCRIPT.read_text(encoding="utf-8")
    assert "import partitioner" in script and "import policy" in script


def test_solution_blocks_strip_to_valid_python_in_both_files():
    for name, source in submission_cells().items():
        stripped, count = strip_solutions(source, name)
        assert count >= 1 and not has_marker_text(stripped)
        ast.parse(stripped)  # the student's file still parses
        assert "NotImplementedYet" in stripped


# -- the reference code of the assignment -------------------------------------------------------
def outcome(function, *args):
    """What ``function(*args)`` returned, or the kind of error it raised."""
    try:
        return function(*args)
    except Exception as error:  # the two implementations must fail alike, too
        return type(error).__name__

def test_submission_cells_register_the_graded_names():
    from minidb.plugins import lookup

    for name, (kind, plugin) in SUBMISSIONS.items():
        module = load_cell(name)
        cls = lookup(kind, plugin)
        assert cls.__module__ == module.__name__, f"{plugin} is not the class of the {name} cell"


@pytest.mark.parametrize("nodes", [1, 3, 4, 8])
def test_submission_partitioner_matches_range_uniform(nodes):
    from minidb.parallel.partitioners import RangeUniform

    module = load_cell("partitioner.py")
    rng = np.random.default_rng(nodes)
    columns = {
        "unique": rng.permutation(5_000).astype(np.int32),
        "repeats": rng.integers(0, 40, 3_000).astype(np.int32),
        "text": np.array([f"w{v:05d}".encode() for v in rng.permutation(900)], dtype="S52"),
    }
    for column, values in columns.items():
        batch = np.zeros(len(values), dtype=[("rowid", "<i8"), (column, values.dtype)])
        batch[column] = values
        for sample in (None, 500):
            mine, theirs = module.StudentRangeUniform(column, sample), RangeUniform(column, sample)
            mine.fit(batch, nodes)
            theirs.fit(batch, nodes)
            assert mine.boundaries == theirs.boundaries, (column, sample)
            assert np.array_equal(mine.route(batch), theirs.route(batch))
            lo, hi = np.sort(values)[[len(values) // 5, len(values) // 2]].tolist()
            assert outcome(mine.nodes_for_range, lo, hi) == outcome(theirs.nodes_for_range, lo, hi)
            mine.fit(None, nodes)  # no data: keeps what it learned for the same node count
            assert mine.boundaries == theirs.boundaries
    if nodes > 1:
        mine.fit(None, nodes + 1)  # ... and forgets it for another one
        assert mine.boundaries is None


def test_submission_clock_matches_builtin_clock():
    from minidb.buffer.clock import ClockPolicy

    module = load_cell("policy.py")
    rng = np.random.default_rng(42)
    for frames in (1, 3, 8):
        mine, theirs = module.StudentClock(frames), ClockPolicy(frames)
        for _ in range(2_000):
            frame = int(rng.integers(frames))
            action = rng.choice(["load", "hit", "evict", "victim"])
            if action == "victim":
                offered = np.flatnonzero(rng.random(frames) < 0.6)
                if len(offered) == 0:
                    continue
                assert mine.choose_victim(offered) == theirs.choose_victim(offered)
                continue
            method = {"load": "page_loaded", "hit": "page_hit", "evict": "page_evicted"}[action]
            getattr(mine, method)(frame)
            getattr(theirs, method)(frame)


def test_submission_files_get_full_marks_from_the_autograder(tmp_path):
    results = tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", "lab1", "--submission",
                           str(LAB), "--results", str(results)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    graded = json.loads(results.read_text(encoding="utf-8"))
    failed = [t["name"] for t in graded["tests"] if t.get("score") != t.get("max_score")]
    assert not failed, f"lab cells lose points on: {failed}\n{graded['output']}"
    assert graded["score"] == sum(t["max_score"] for t in graded["tests"])


# -- the notebook, top to bottom ----------------------------------------------------------------
def test_notebook_runs(tmp_path, monkeypatch):
    """Execute the stored notebook at a small scale; any cell error fails the test."""
    ran = run_notebook(NOTEBOOK, SMALL_SCALE, tmp_path, monkeypatch)
    text = ran.text
    assert "part A (range-uniform partitioner): 30 / 30 on the public cases" in text
    assert "part B (Clock replacement policy): 36 / 36 on the public cases" in text
    assert "FAILED" not in text
    assert "student_clock  evicts frame 0" in text  # Clock gives frame 0 its second chance ...
    assert "lru            evicts frame 1" in text  # ... and takes it anyway; LRU would not
    assert ran.images >= 6, f"expected the lab's plots, got {ran.images} images"
    print(f"lab1 notebook ran in {ran.seconds:.1f} s at scale {SMALL_SCALE} (pid {os.getpid()})")
