"""The Gradescope bundle: its layout, and a run of ``run_autograder`` in a folder laid out as
Gradescope's ``/autograder``, sources made private as ``setup.sh`` makes them, with a submission
that tries to read the hidden cases and to borrow minidb's solution."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from ag_helpers import assemble, check_gradescope

from autograder.package import make_package
from autograder.sandbox import AutograderError


def test_bundle_folder_and_zip(tmp_path):
    out = make_package("lab1", tmp_path / "bundle")
    for script in ("setup.sh", "run_autograder"):
        assert os.stat(out / script).st_mode & stat.S_IXUSR
        assert subprocess.run(["bash", "-n", str(out / script)]).returncode == 0
    assert (out / "autograder/assignments/lab1/hidden/__init__.py").exists()
    assert (out / "minidb/buffer/clock.py").exists() and (out / "pyproject.toml").exists()
    assert not (out / "autograder/assignments/lab1/reference").exists()
    assert not list(out.rglob("__pycache__"))
    run = (out / "run_autograder").read_text()
    assert "-m autograder grade lab1 --submission \"$AUTOGRADER/submission\"" in run
    assert 'RESULTS="$AUTOGRADER/results/results.json"' in run
    assert 'chmod -R go-rwx "$SOURCE"' in (out / "setup.sh").read_text()

    archive = make_package("lab1", tmp_path / "lab1.zip")
    with zipfile.ZipFile(archive) as z:
        names = set(z.namelist())
        assert {"setup.sh", "run_autograder", "minidb/buffer/clock.py",
                "autograder/assignments/lab1/hidden/__init__.py"} <= names
        assert (z.getinfo("run_autograder").external_attr >> 16) & 0o777 == 0o755
    with pytest.raises(AutograderError, match="exists; pass --force"):
        make_package("lab1", archive)
    with pytest.raises(AutograderError, match="unknown assignment 'lab7'"):
        make_package("lab7", tmp_path / "x")


PRYING = """\
from reference_partitioner import StudentRangeUniform  # noqa: F401

for path in ({hidden!r}, {solution!r}):
    try:
        with open(path) as f:
            print("read", len(f.read()), "characters of", path)
    except OSError as exc:
        print("could not read", path, type(exc).__name__)
"""

BORROWING = """\
from minidb.plugins import register

try:
    exec(open({solution!r}).read())  # minidb's own Clock, solution included
    register("buffer_policy", "student_clock")(ClockPolicy)  # noqa: F821
except OSError:
    exec(open("{fifo}").read())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox user exists only when grading as root")
def test_run_autograder_as_gradescope_does(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="gradescope-"))  # in /tmp: reachable by everyone
    try:
        os.chmod(root, 0o755)
        source = make_package("lab1", root / "source")
        (root / "results").mkdir()
        shutil.copyfile(source / "run_autograder", root / "run_autograder")
        os.chmod(root / "run_autograder", 0o755)
        subprocess.run(["chmod", "-R", "go-rwx", str(source)], check=True)  # what setup.sh does
        hidden = source / "autograder/assignments/lab1/hidden/__init__.py"
        solution = source / "minidb/buffer/clock.py"
        fifo = Path(__file__).parent / "submissions" / "policy_fifo.py"
        shutil.copyfile(fifo, root / "fifo.py")
        os.chmod(root / "fifo.py", 0o644)
        assemble(root / "submission",
                 PRYING.format(hidden=str(hidden), solution=str(solution)),
                 BORROWING.format(solution=str(solution), fifo=str(root / "fifo.py")))
        env = {"PATH": os.environ["PATH"], "AUTOGRADER_DIR": str(root),
               "MINIDB_GRADER_PYTHON": sys.executable}
        done = subprocess.run([str(root / "run_autograder")], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        text = (root / "results" / "results.json").read_text()
        doc = json.loads(text)
        check_gradescope(doc)
        a1 = next(t for t in doc["tests"] if ": A1 " in t["name"])
        assert f"could not read {hidden} PermissionError" in a1["output"]
        assert f"could not read {solution} PermissionError" in a1["output"]
        assert "def partitioner_cases" not in text
        # part A is the reference; part B fell back to FIFO, which only the flooding loop allows
        assert doc["score"] == 50 + 8
        assert "WARNING: submissions can read" not in done.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)
