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
        assert doc["score"] == 50 + 6
        assert "WARNING: submissions can read" not in done.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- what the bundle installs (issue 16): only what grading imports ---------------------------------
NOT_NEEDED = ("ray", "duckdb", "platformdirs", "filelock", "pandas", "streamlit", "matplotlib")


def test_the_bundle_installs_only_what_grading_needs(tmp_path):
    out = make_package("lab1", tmp_path / "bundle")
    wanted = (out / "requirements-grader.txt").read_text().split("\n")
    names = [line.split(">")[0] for line in wanted if line and not line.startswith("#")]
    assert names == ["numpy", "pyarrow", "sqlglot", "click"]
    setup = (out / "setup.sh").read_text()
    assert 'pip install --quiet --no-deps -e "$SOURCE"' in setup
    assert 'pip install --quiet -r "$SOURCE/requirements-grader.txt"' in setup


BLOCKED_GRADING = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"grading imported {{name}}, which the bundle does not install")
sys.meta_path.insert(0, Block())
from autograder.grading import grade_to_file
r = grade_to_file("lab1", {reference!r}, {results!r}, log=lambda line: None)
print("score", r.score)
"""


def test_grading_imports_nothing_the_bundle_leaves_out(tmp_path):
    """The grader's own process, with every module the bundle leaves out made unimportable
    (the children import the same minidb and harness; the slow test below installs for real)."""
    from ag_helpers import REFERENCE, ROOT

    code = BLOCKED_GRADING.format(blocked=set(NOT_NEEDED), reference=str(REFERENCE),
                                  results=str(tmp_path / "results.json"))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "score 100"


@pytest.mark.slow
def test_setup_sh_in_a_clean_environment_then_grading(tmp_path):
    """setup.sh as Gradescope runs it, in a fresh virtual environment holding only the bundle's
    installs (pip downloads numpy, pyarrow, sqlglot, click: about a minute), then
    run_autograder on the reference: full marks, and Ray is not installed."""
    root = Path(tempfile.mkdtemp(prefix="gradescope-setup-"))  # /tmp: reachable by everyone
    try:
        os.chmod(root, 0o755)
        make_package("lab1", root / "source")
        shutil.copyfile(root / "source" / "run_autograder", root / "run_autograder")
        os.chmod(root / "run_autograder", 0o755)
        from ag_helpers import REFERENCE

        shutil.copytree(REFERENCE, root / "submission")
        (root / "results").mkdir()
        venv = root / "venv"
        env = {"PATH": os.environ["PATH"], "HOME": str(root), "AUTOGRADER_DIR": str(root),
               "MINIDB_GRADER_VENV": str(venv), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        done = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        listed = subprocess.run([str(venv / "bin/python"), "-m", "pip", "list",
                                 "--format=freeze"], capture_output=True, text=True).stdout
        installed = {line.split("==")[0].lower() for line in listed.split()}
        assert {"numpy", "pyarrow", "sqlglot", "click", "minidb"} <= installed
        assert not installed & {"ray", "duckdb", "pandas", "streamlit"}, installed
        env["MINIDB_GRADER_PYTHON"] = str(venv / "bin/python")
        done = subprocess.run([str(root / "run_autograder")], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        doc = json.loads((root / "results" / "results.json").read_text())
        check_gradescope(doc)
        assert doc["score"] == 100, done.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)
