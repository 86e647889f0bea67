"""``python -m autograder submit lab1 --out submission.zip``: gathers the graded files from the
lab's folder (no copying cells into files), grades the public cases first and prints the score,
and writes the zip; a mistake of the call is one line on stderr, exit status 2, no traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ag_helpers import REFERENCE, ROOT, SUBMISSIONS


def submit(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", "submit", "lab1", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


def course(tmp_path: Path, partitioner: Path | None, policy: Path | None) -> Path:
    """A course checkout's lab folder holding the given files."""
    lab = tmp_path / "course" / "labs" / "lab1_gamma"
    lab.mkdir(parents=True)
    for name, source in (("partitioner.py", partitioner), ("policy.py", policy)):
        if source is not None:
            shutil.copyfile(source, lab / name)
    return tmp_path / "course"


def test_submit_checks_the_public_cases_then_writes_the_zip(tmp_path):
    root = course(tmp_path, SUBMISSIONS / "partitioner_distinct_values.py", REFERENCE / "policy.py")
    done = submit(root, "--out", "out/submission.zip")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = done.stdout
    assert "A A5 FAILED" in out and "unbalanced" in out  # why, as the grader says it
    assert "part A, range-uniform partitioner (partitioner.py): 26 / 30" in out
    assert "the hidden ones (34 points) are scored on Gradescope" in out
    with zipfile.ZipFile(root / "out" / "submission.zip") as z:
        assert sorted(z.namelist()) == ["partitioner.py", "policy.py"]
        assert z.read("policy.py") == (REFERENCE / "policy.py").read_bytes()


def test_submit_from_another_folder(tmp_path):
    done = submit(tmp_path, "--from", str(REFERENCE), "--out", str(tmp_path / "s.zip"))
    assert done.returncode == 0, done.stderr
    assert "Lab 1: declustering and buffer replacement: 66 / 66" in done.stdout
    assert (tmp_path / "s.zip").is_file()


@pytest.mark.parametrize(("files", "args", "message"), [
    ((None, REFERENCE / "policy.py"), ["--out", "s.zip"],
     "autograder: error: partitioner.py not found in {lab}; lab1 hands in partitioner.py and "
     "policy.py"),
    ((None, None), ["--out", "s.zip"],
     "autograder: error: partitioner.py, policy.py not found in {lab}; lab1 hands in "
     "partitioner.py and policy.py"),
    ((REFERENCE / "partitioner.py", REFERENCE / "policy.py"), ["--out", "s.tar"],
     "autograder: error: --out must name a .zip file (the file you upload), not s.tar"),
])
def test_mistakes_are_one_line_and_status_2(tmp_path, files, args, message):
    root = course(tmp_path, *files)
    done = submit(root, *args)
    assert done.returncode == 2
    lab = root / "labs" / "lab1_gamma"
    assert done.stderr == message.format(lab=lab) + "\n"
    assert "Traceback" not in done.stdout + done.stderr
    assert not (root / "s.zip").exists()


def test_submit_outside_a_course_checkout_says_where_to_run_it(tmp_path):
    done = submit(tmp_path, "--out", "s.zip")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"autograder: error: there is no folder {tmp_path}/labs/lab1_gamma: "
                                  "run this from the root of the course repository")
    done = submit(tmp_path, "--out", "s.zip", "--from", "nowhere")
    assert done.returncode == 2 and "there is no folder nowhere" in done.stderr


def test_check_part_runs_the_public_cases_here_with_the_graders_reasons():
    """What the lab notebook calls after each part (no sandbox: the student's own code)."""
    import importlib.util

    from autograder.local import check_part

    def load(path: Path):
        spec = importlib.util.spec_from_file_location(f"check_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    lines: list[str] = []
    wrong = load(SUBMISSIONS / "partitioner_distinct_values.py").DistinctValues
    results = check_part("lab1", "A", wrong, show=lines.append)
    assert [r.case.id for r in results if not r.verdict.passed] == ["A5"]
    assert lines[4].startswith("A5 repeated values: 12,000 skewed amounts over 6 nodes, then a "
                               "frequent value: FAILED: step 1, fit(12,000 tuples, 6), route "
                               "12,000 tuples: unbalanced: node 1 holds 3,994 tuples")
    assert lines[-1] == ("part A (range-uniform partitioner): 26 / 30 on the public cases; the "
                         "hidden cases (20 points) are scored when you submit")
    lines.clear()
    check_part("lab1", "B", load(REFERENCE / "policy.py").StudentClock, show=lines.append)
    assert lines[-1].startswith("part B (Clock replacement policy): 36 / 36")
