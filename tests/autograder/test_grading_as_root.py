"""Grading as root (Colab, containers): the reference gets full marks whether children run as a
user id of their own or as an ordinary account (``--user nobody``), and a submission may import
any module of the standard library (and what is installed, such as pandas) even when Python
lives in a folder only root can read (pyenv or uv under /root): the grader then gives children a
readable copy of the standard library. Before, ``import pandas`` failed there with "No module
named 'zoneinfo'"."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest
from ag_helpers import REFERENCE, ROOT, assemble, check_gradescope

from autograder import sandbox

AS_ROOT = os.geteuid() == 0
pytestmark = pytest.mark.skipif(not AS_ROOT, reason="children change user only under root")

STDLIB_USER = ("import csv, decimal, fractions, sqlite3, zoneinfo  # noqa: F401\n"
               "assert zoneinfo.available_timezones() is not None\n")


def grade_cli(submission: Path, results: Path, *extra: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", "lab1", "--submission",
                           str(submission), "--results", str(results), "--cpu", "20", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(results.read_text())
    check_gradescope(doc)
    return doc, done.stdout


def _has_account(name: str) -> bool:
    try:
        return pwd.getpwnam(name).pw_uid != 0
    except KeyError:
        return False


@pytest.mark.parametrize("user", ["auto", "nobody"])
def test_the_reference_gets_full_marks_as_root_under_either_kind_of_user(tmp_path, user):
    if user != "auto" and not _has_account(user):
        pytest.skip(f"no account {user!r} here")
    doc, out = grade_cli(REFERENCE, tmp_path / "results.json", "--user", user)
    assert doc["score"] == 100, out
    assert ("children run as nobody" in out) == (user == "nobody")


def test_a_submission_importing_the_standard_library_and_pandas(tmp_path):
    extra = STDLIB_USER
    try:
        import pandas  # noqa: F401

        extra += "import pandas  # noqa: F401\n"
    except ImportError:
        pass
    policy = extra + (REFERENCE / "policy.py").read_text()
    doc, out = grade_cli(assemble(tmp_path / "sub", "reference", policy), tmp_path / "r.json")
    assert doc["score"] == 100, out


def test_a_standard_module_the_sandbox_user_cannot_read_is_named_as_such(tmp_path, grade,
                                                                        monkeypatch):
    if not sandbox.readable_stdlib():
        pytest.skip("this Python's standard library is readable by every user")
    monkeypatch.setattr(sandbox, "_stdlib_mirror", {})  # as before the fix
    policy = "import zoneinfo  # noqa: F401\n" + (REFERENCE / "policy.py").read_text()
    graded = grade(assemble(tmp_path / "sub", "reference", policy))
    b1 = graded.test("B1")["output"]
    assert "No module named 'zoneinfo'" in b1
    assert "zoneinfo is part of Python's standard library, but the user the grader runs " \
           "submissions as could not read it" in b1


def test_the_mirror_never_changes_the_interpreter_files():
    mirror = sandbox.readable_stdlib()
    for original, copy in mirror.items():
        for name in ("os.py", "json/__init__.py"):
            a, b = Path(original) / name, Path(copy) / name
            if a.exists():
                assert b.read_bytes() == a.read_bytes()
                assert a.stat().st_mode == b.stat().st_mode


@pytest.mark.slow
def test_the_reference_gets_full_marks_when_an_ordinary_user_grades(tmp_path):
    """The grader itself run by an ordinary user (``nobody``, through ``setpriv``), with a
    system Python everyone can read and a fresh venv holding what the Gradescope bundle
    installs (pip downloads them: about 30 s), in a copy of the bundle: 100 / 100."""
    import shutil
    import tempfile

    system = Path("/usr/bin/python3")
    if not system.exists() or shutil.which("setpriv") is None or not _has_account("nobody"):
        pytest.skip("needs /usr/bin/python3, setpriv and an account 'nobody'")
    from autograder.package import GRADER_NEEDS, make_package

    root = Path(tempfile.mkdtemp(prefix="grade-as-nobody-"))  # in /tmp: reachable by everyone
    try:
        venv = root / "venv"
        made = subprocess.run([str(system), "-m", "venv", str(venv)], capture_output=True,
                              text=True)
        if made.returncode != 0:
            pytest.skip(f"the system Python cannot make a venv: {made.stderr.strip()[-200:]}")
        done = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--quiet",
                               *GRADER_NEEDS], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        make_package("lab1", root / "bundle")
        shutil.copytree(REFERENCE, root / "reference")
        (root / "out").mkdir()
        subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
        os.chmod(root / "out", 0o777)
        done = subprocess.run(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env", "-i",
             "PATH=/usr/bin:/bin", f"HOME={root / 'out'}", str(venv / "bin/python"), "-m",
             "autograder", "grade", "lab1", "--submission", str(root / "reference"),
             "--results", str(root / "out" / "results.json")],
            cwd=root / "bundle", capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "children run as the current user (not root" in done.stdout
        doc = json.loads((root / "out" / "results.json").read_text())
        check_gradescope(doc)
        assert doc["score"] == 100, done.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)
