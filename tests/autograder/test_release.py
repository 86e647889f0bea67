"""The student release: a working project with the lab parts stubbed, no hidden cases, no
reference solutions, no marker text, and an autograder that grades the public cases."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ag_helpers import REFERENCE, ROOT, assemble, check_gradescope

from autograder import release
from autograder.markers import MarkerError, has_marker_text
from autograder.release import make_release
from autograder.sandbox import AutograderError

B, E = "# BEGIN SOLUTION", "# END SOLUTION"


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release") / "student"
    report = make_release(out)
    assert {"minidb/buffer/clock.py": 3, "minidb/parallel/partitioners.py": 1,
            "labs/lab1_gamma/partitioner.py": 1, "labs/lab1_gamma/policy.py": 5}.items() \
        <= report.stubbed.items()
    assert all(name.startswith(("minidb/", "labs/")) for name in report.stubbed)
    assert "labs/lab1_gamma/lab1_gamma.ipynb" not in report.stubbed  # it imports the two files
    return out


def run_python(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_the_release_holds_the_project_without_solutions_or_hidden_cases(released):
    assert {p.name for p in released.iterdir()} == {
        "minidb", "labs", "lectures", "app", "datasets", "docs", "benchmarks", "autograder",
        "tests", ".ci", "pyproject.toml", "README.md"}
    # the release's own tests, not the instructor's suite
    assert {p.name for p in (released / "tests").iterdir()} == \
        {p.name for p in (ROOT / "tests" / "release").iterdir() if p.name != "__pycache__"}
    assert os.access(released / ".ci" / "run", os.X_OK)
    assert not (released / "autograder" / "student_release").exists()
    readme = (released / "README.md").read_text()
    assert readme.startswith("# minidb\n\n## This is the student release\n")
    assert "**Left out**: the hidden cases" in readme
    lab1 = released / "autograder" / "assignments" / "lab1"
    assert not (lab1 / "hidden").exists() and not (lab1 / "reference").exists()
    assert (lab1 / "README.md").exists() and (lab1 / "expected_public.json").exists()
    assert not list(released.rglob("__pycache__")) and not list(released.rglob("*.egg-info"))
    for path in released.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ipynb", ".md", ".json", ".toml", ".txt"):
            text = path.read_text()
            assert not has_marker_text(text), path
    hidden = (ROOT / "autograder/assignments/lab1/hidden/__init__.py").read_text()
    model = (REFERENCE / "policy.py").read_text()
    assert not any(hidden in p.read_text() or model in p.read_text() for p in released.rglob("*.py"))


def test_the_released_minidb_imports_and_its_stubs_name_the_lab_part(released):
    probe = f"""
import minidb
from minidb.buffer.clock import ClockPolicy
from minidb.errors import MinidbError, NotImplementedYet
from minidb.parallel.partitioners import RangeUniform
assert minidb.__file__.startswith({str(released)!r}), minidb.__file__
for call in (lambda: ClockPolicy(3).page_loaded(0), lambda: ClockPolicy(3).choose_victim([0]),
             lambda: RangeUniform("unique1").fit(None, 4)):
    try:
        call()
    except NotImplementedYet as e:
        assert isinstance(e, MinidbError) and isinstance(e, NotImplementedError)
        print(e)
db = minidb.connect(buffer_pages=8, buffer_policy="lru")  # the rest of minidb works
print("connected", type(db).__name__)
"""
    done = run_python(released, "-c", probe)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("Lab 1, part B (Clock): the built-in clock is the lab's model answer, left "
                        "out of the student release; write yours in labs/lab1_gamma/policy.py and "
                        "use it as student_clock [stub: ClockPolicy._touch in "
                        "minidb/buffer/clock.py]")
    assert lines[1].endswith("[stub: ClockPolicy.choose_victim in minidb/buffer/clock.py]")
    assert lines[2].startswith("Lab 1, part A (range-uniform partitioner): the built-in "
                               "range_uniform is the lab's model answer")
    assert "write yours in labs/lab1_gamma/partitioner.py" in lines[2]
    assert lines[3] == "connected Database"


def grade_in(released: Path, submission: Path, results: Path) -> dict:
    done = run_python(released, "-m", "autograder", "grade", "lab1", "--submission",
                      str(submission), "--results", str(results), "--cpu", "5", "--memory", "1024")
    assert done.returncode == 0, done.stderr
    doc = json.loads(results.read_text())
    check_gradescope(doc)
    return doc


def test_the_released_grader_runs_the_public_cases(released, tmp_path):
    doc = grade_in(released, REFERENCE, tmp_path / "reference.json")
    assert doc["score"] == 66 and len(doc["tests"]) == 15  # 30 + 36 public points
    assert all("public" in t["tags"] for t in doc["tests"])
    assert "holds only the public cases" in doc["output"]
    assert "the hidden ones (34 points) are scored on Gradescope" in doc["output"]
    stubs = assemble(tmp_path / "stubs",
                     "from minidb.parallel.partitioners import RangeUniform\n"
                     "from minidb.plugins import register\n"
                     "register('partitioner', 'student_range_uniform')(RangeUniform)\n",
                     "from minidb.buffer.clock import ClockPolicy\n"
                     "from minidb.plugins import register\n"
                     "register('buffer_policy', 'student_clock')(ClockPolicy)\n")
    doc = grade_in(released, stubs, tmp_path / "stubs.json")
    assert doc["score"] == 0
    assert all("NotImplementedYet: Lab 1, part" in t["output"] for t in doc["tests"])


def run_pytest(released: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rs", *args], cwd=released, capture_output=True, text=True,
                          timeout=300, env={k: v for k, v in os.environ.items()
                                            if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")})


def test_a_fresh_release_passes_its_public_tests_with_the_parts_not_written_yet(released):
    done = run_pytest(released, "tests/test_lab1_public.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "15 skipped" in done.stdout
    assert "part A is not written yet (labs/lab1_gamma/partitioner.py)" in done.stdout


def test_a_wrong_solution_fails_the_public_test_with_the_graders_message(released, tmp_path):
    lab = released / "labs" / "lab1_gamma"
    kept = {name: (lab / name).read_text() for name in ("partitioner.py", "policy.py")}
    try:
        shutil.copyfile(ROOT / "tests/autograder/submissions/partitioner_distinct_values.py",
                        lab / "partitioner.py")
        shutil.copyfile(REFERENCE / "policy.py", lab / "policy.py")
        done = run_pytest(released, "tests/test_lab1_public.py")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "1 failed, 14 passed" in done.stdout
        assert "test_public_case[A5-repeated values]" in done.stdout
        doc = grade_in(released, lab, tmp_path / "results.json")  # what the grader says
        (a5,) = [t for t in doc["tests"] if ": A5 " in t["name"]]
        assert a5["status"] == "failed" and a5["output"].splitlines()[1] in done.stdout
    finally:
        for name, text in kept.items():
            (lab / name).write_text(text)


@pytest.mark.slow
def test_the_whole_release_test_suite_passes(released):
    """The release's tests/ as ``pytest`` runs them there (about 40 s: it renders the app)."""
    done = run_pytest(released)
    assert done.returncode == 0, done.stdout + done.stderr


def test_recorded_answers_are_the_reference_clocks(released):
    from autograder.assignments.lab1 import clock

    recorded = json.loads((released / "autograder/assignments/lab1/expected_public.json").read_text())
    assert recorded == {c.id: clock.reference(c) for c in clock.public_cases()}


def test_a_non_empty_folder_is_refused_unless_forced(released, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("left from before")
    with pytest.raises(AutograderError, match="is not empty; choose an empty directory or pass --force"):
        make_release(out)
    make_release(out, force=True)
    assert not (out / "old.txt").exists() and (out / "minidb").is_dir()
    with pytest.raises(AutograderError, match="holds the source tree itself"):
        make_release(ROOT, force=True)
    with pytest.raises(AutograderError, match="is inside minidb/"):
        make_release(ROOT / "minidb" / "x")


def fake_source(tmp_path: Path, lab_py: str, monkeypatch) -> Path:
    """A source tree with labs only, released with the check of minidb's origin turned off."""
    source = tmp_path / "source"
    lab = source / "labs" / "lab1"
    lab.mkdir(parents=True)
    (lab / "lab1.py").write_text(lab_py)
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": 1,
                     "outputs": [{"output_type": "stream", "text": ["secret\n"]}],
                     "source": ["def share(n, k):\n", f"    {B}: Lab 1, part C\n",
                                "    return n // k\n", f"    {E}\n"]}],
          "metadata": {"jupytext": {"formats": "ipynb,py:percent"}}, "nbformat": 4,
          "nbformat_minor": 5}
    (lab / "lab1.ipynb").write_text(json.dumps(nb, indent=1))
    (lab / ".ipynb_checkpoints").mkdir()
    (lab / ".ipynb_checkpoints" / "lab1-checkpoint.ipynb").write_text("{}")
    monkeypatch.setattr(release, "_check_minidb_is", lambda source: None)
    return source


def test_lab_scripts_and_notebooks_are_stubbed(tmp_path, monkeypatch):
    source = fake_source(tmp_path, f"# %%\ndef share(n, k):\n    {B}\n    return n // k\n    {E}\n",
                         monkeypatch)
    report = make_release(tmp_path / "out", source=source)
    assert report.stubbed == {"labs/lab1/lab1.py": 1, "labs/lab1/lab1.ipynb": 1}
    assert "minidb (not in the source tree)" in report.left_out
    script = (tmp_path / "out/labs/lab1/lab1.py").read_text()
    assert "return n // k" not in script and "raise NotImplementedYet(" in script
    cell = json.loads((tmp_path / "out/labs/lab1/lab1.ipynb").read_text())["cells"][0]
    assert cell["outputs"] == [] and "return n // k\n" not in cell["source"]
    assert not (tmp_path / "out/labs/lab1/.ipynb_checkpoints").exists()


def test_an_unclosed_block_in_a_lab_stops_the_release(tmp_path, monkeypatch):
    source = fake_source(tmp_path, f"x = 1\n{B}\ny = 2\n", monkeypatch)
    with pytest.raises(MarkerError, match=r"^labs/lab1/lab1.py, line 2: this solution block is never closed"):
        make_release(tmp_path / "out", source=source)


def test_empty_labs_folder_is_fine(tmp_path, monkeypatch):
    source = tmp_path / "source"
    (source / "labs").mkdir(parents=True)
    monkeypatch.setattr(release, "_check_minidb_is", lambda source: None)
    report = make_release(tmp_path / "out", source=source)
    assert (tmp_path / "out" / "labs").is_dir() or report.files >= 1


def test_the_released_notebook_runs_with_both_parts_not_written_yet(released, tmp_path):
    """A student opening the lab first: every cell runs, and the ones needing their code say
    "not written yet" instead of stopping the notebook (about 25 s)."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    lab = released / "labs" / "lab1_gamma"
    notebook = nbformat.read(lab / "lab1_gamma.ipynb", as_version=4)
    env = {"MINIDB_LAB_SCALE": "0.05", "MINIDB_LAB_BACKEND": "inline",
           "MPLBACKEND": "module://matplotlib_inline.backend_inline",
           "PYTHONPATH": str(released), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    for var in ("JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        env[var] = str(tmp_path / var.lower())
    before = dict(os.environ)
    os.environ.update(env)
    try:
        NotebookClient(notebook, timeout=300, iopub_timeout=60, coalesce_streams=True,
                       kernel_name="python3", resources={"metadata": {"path": str(lab)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(before)
    text = "\n".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code"
                     for o in c.outputs if o.get("output_type") == "stream")
    assert "part A is not written yet: Lab 1, part A" in text
    assert "part B is not written yet: Lab 1, part B" in text
    assert "lru            evicts frame 1" in text
    assert "/released/" not in text and str(ROOT) not in text  # the release's own files ran
