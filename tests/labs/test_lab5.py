"""Lab 5 (labs/lab5_commit): the notebook runs top to bottom, its two files agree, the graded
file's solution blocks are marked and strip to a stub, and the lab still runs on that stub.

Needs the ``labs`` extra (jupytext, nbclient, nbformat, ipykernel, matplotlib).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lab_notebooks import assert_in_sync, run_notebook

from autograder.markers import find_blocks, has_marker_text, strip_solutions

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "labs" / "lab5_commit"
SCRIPT = LAB / "lab5_commit.py"
NOTEBOOK = LAB / "lab5_commit.ipynb"
GRADED = LAB / "commit.py"


def test_script_and_notebook_in_sync():
    assert_in_sync(SCRIPT, NOTEBOOK)


def test_solution_blocks_sit_in_the_graded_file_only_and_strip_to_a_stub():
    source = GRADED.read_text(encoding="utf-8")
    blocks = find_blocks(source, str(GRADED))
    assert len(blocks) == 5 and all(b.hint and "Lab 5" in b.hint for b in blocks)
    assert find_blocks(SCRIPT.read_text(encoding="utf-8"), str(SCRIPT)) == []
    assert not has_marker_text(NOTEBOOK.read_text(encoding="utf-8"))
    stripped, count = strip_solutions(source, str(GRADED))
    assert count == 5 and not has_marker_text(stripped) and "NotImplementedYet" in stripped
    ast.parse(stripped)


def test_notebook_runs(tmp_path, monkeypatch):
    """Execute the stored notebook at a small scale; any cell error fails the test."""
    ran = run_notebook(NOTEBOOK, "0.2", tmp_path, monkeypatch)
    text = ran.text
    # six kills in Part A, two in Part B, one in Part C
    assert text.count("the process was killed by SIGKILL") == 9
    # Part A: killed before the commit point -> undone; after it -> redone; recovery re-run
    assert "t equals DuckDB's table before the UPDATE: True" in text
    assert "recovery: redone" in text and "t equals DuckDB's table after the UPDATE: True" in text
    assert "t equals DuckDB's table after the UPDATE, without the DELETE: True" in text
    # Part A: a transaction killed before its commit is rolled back at restart
    assert "the transaction log left behind: 3 WRITE" in text
    assert "rolled back 1 unfinished transaction(s)" in text and "3 write(s) undone" in text
    assert "t equals DuckDB's table after the UPDATE, without the transaction: True" in text
    # Part B: a node fails, every node undoes; the process killed before and after the decision
    assert "statements each node undid: [1, 1, 1]" in text
    assert "the same UPDATE again: {'commits': 1, 'messages': 12, 'log_forces': 1}" in text
    assert "t equals DuckDB's table without the second UPDATE: True" in text
    assert "t equals DuckDB's table with the second UPDATE: True" in text
    assert "coordinator: 1 COMMIT" in text
    # Part C: Distributed INGRES: fragments by predicates checked against DuckDB, a gap refused,
    # a site-changing UPDATE committed (and recovered after a kill), the benchmarks and findings
    for node, predicate in enumerate(["dept = 'shoe'", "dept = 'toy'",
                                      "dept <> 'toy' AND dept <> 'shoe'"]):
        line = f"node {node} holds exactly DuckDB's rows WHERE {predicate}: "
        assert text.count(line + "True") == 2 and line + "False" not in text
    assert "refused: DISTRIBUTE emp: fragments must cover every tuple exactly once" in text
    assert "(a gap); widen a predicate or add a fragment for it; nothing was moved" in text
    assert "an employee aged 66: fragments must cover every tuple exactly once" in text
    assert "    update emp on nodes [0]\n" in text
    # node 2 changed nothing: it votes READ and leaves (R*), 10 messages and 5 forces, not 12, 7
    assert "(presumed_abort, 3 nodes): 10 messages, 5 log forces (1 at the coordinator, 4 at" in text
    assert "  node-0: empty\n" in text and "node-0 recovery: None" in text  # read-only when killed
    assert "emp equals DuckDB's table after both UPDATEs: True" in text
    assert "  FAIL  ingres.moving_emp_is_an_order_slower: 2 sites x233.0" in text
    assert "  PASS  ingres.updates_finish_sooner_on_more_sites: 2 sites 17.3% sooner" in text
    assert "  PASS  ingres.local_db_overhead: updates +18.7%" in text
    assert "  PASS  ingres.foreign_db_slower_than_local: Table 1 x1.120" in text
    assert text.count("  PASS  ingres.") == 5 and text.count("  FAIL  ingres.") == 1
    # Parts D and E: the costs, the blocking of 2PC, 3PC's termination, the broken rules
    assert "             2pc |               12      7             1 |              12      6" in text
    assert "t=   5  coordinator 0    log COMMIT (forced)" in text
    assert "in doubt at the end: [1, 2, 3]" in text
    assert "t=  33  participant 1    DECIDES COMMIT" in text
    assert "tells_first: 10 of 108 runs broke a promise" in text
    assert "unforced_vote: 7 of 81 runs broke a promise" in text
    # Part F: the lab's own commit.py goes through the fault matrix unharmed
    assert " student_2pc    81          0            6          12      7         12      6" in text
    assert "your protocol: 0 of 81 runs broke a promise" in text
    assert ran.images >= 4, f"expected the lab's plots, got {ran.images} images"
    print(f"lab5 notebook ran in {ran.seconds:.1f} s")


def test_the_lab_runs_on_the_stubbed_commit_py(tmp_path):
    """What a student opens first: commit.py stripped to its stubs. Every part but the
    assignment runs, and the assignment cell says what is missing instead of failing."""
    lab = tmp_path / "lab5_commit"
    lab.mkdir()
    for name in ("lab5_commit.py", "helpers.py"):
        shutil.copy(LAB / name, lab / name)
    stripped, _ = strip_solutions(GRADED.read_text(encoding="utf-8"), str(GRADED))
    (lab / "commit.py").write_text(stripped, encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg", "MINIDB_LAB_SCALE": "0.2",
           "MPLCONFIGDIR": str(tmp_path / "mpl"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "lab5_commit.py"], cwd=lab, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "not written yet: Lab 5" in done.stdout
    assert "emp equals DuckDB's table after both UPDATEs: True" in done.stdout
    assert "tells_first: 10 of 108 runs broke a promise" in done.stdout
