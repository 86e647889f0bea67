"""``python -m autograder``: exit statuses, one-line errors, and a results file written once
whatever happens (a bad call, a crash of the grader, SIGTERM)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ag_helpers import ROOT, assemble, check_gradescope

from autograder import grading
from autograder.grading import grade_to_file


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_grading_an_empty_submission(tmp_path):
    (tmp_path / "empty").mkdir()
    results = tmp_path / "out" / "results.json"
    done = cli("grade", "lab1", "--submission", str(tmp_path / "empty"), "--results", str(results))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines()[-1] == f"wrote {results}: 0 / 100"
    doc = json.loads(results.read_text())
    check_gradescope(doc)
    assert "partitioner.py is missing from the submission (found: nothing)" in doc["tests"][0]["output"]
    # the console says why each case failed (the reason results.json holds) and which are hidden
    lines = done.stdout.splitlines()
    a1 = next(line for line in lines if line.startswith("  A A1 FAILED"))
    assert a1.endswith("): partitioner.py is missing from the submission (found: nothing); "
                       "part A needs it")
    b7 = next(line for line in lines if line.startswith("  B B7 FAILED"))
    assert b7.endswith("[hidden: students see it after the due date]")


@pytest.mark.parametrize(("args", "message"), [
    (["grade", "lab9", "--submission", "{tmp}", "--results", "{tmp}/r.json"],
     "autograder: error: unknown assignment 'lab9'; choose one of: lab1, lab2, lab3, lab4, lab5"),
    (["grade", "lab1", "--submission", "{tmp}/nowhere", "--results", "{tmp}/r.json"],
     "autograder: error: submission directory {tmp}/nowhere does not exist"),
    (["grade", "lab1", "--results", "{tmp}/r.json"],
     "autograder: error: Missing option '--submission'."),
    (["grade", "lab1", "--submission", "{tmp}", "--results", "{tmp}/r.json", "--user", "nosuchuser"],
     None),
    (["release", "--out", "{tmp}"], "autograder: error: {tmp} is not empty; choose an empty "
                                    "directory or pass --force to replace its contents"),
    (["package", "lab7", "--out", "{tmp}/b.zip"],
     "autograder: error: unknown assignment 'lab7'; choose one of: lab1, lab2, lab3, lab4, lab5"),
])
def test_mistakes_are_one_line_and_status_2(tmp_path, args, message):
    (tmp_path / "something").write_text("x")
    done = cli(*[a.format(tmp=tmp_path) for a in args])
    assert done.returncode == 2
    if message is None:  # only root can run submissions as another user
        import os

        if os.geteuid() != 0:
            return
        message = "autograder: error: there is no user 'nosuchuser' to run submissions as; " \
                  "name an existing account or use 'auto'"
    assert done.stderr == message.format(tmp=tmp_path) + "\n"
    if args[0] == "grade" and "--submission" in args:
        doc = json.loads((tmp_path / "r.json").read_text())  # written all the same
        check_gradescope(doc)
        assert doc["score"] == 0 and doc["output"].startswith("The submission could not be graded")


def test_a_crash_of_the_grader_still_writes_valid_results(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug in the grader")

    monkeypatch.setattr(grading, "grade", broken)
    results = tmp_path / "results.json"
    with pytest.raises(ZeroDivisionError):
        grade_to_file("lab1", tmp_path, results, log=lambda line: None)
    doc = json.loads(results.read_text())
    check_gradescope(doc)
    assert doc["score"] == 0 and "The autograder itself failed (ZeroDivisionError)" in doc["output"]


def test_sigterm_writes_the_results_and_stops_the_children(tmp_path):
    submission = assemble(tmp_path / "s", "hostile_sleep_at_import.py", "hostile_sleep_at_import.py")
    results = tmp_path / "results.json"
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "lab1", "--submission",
                             str(submission), "--results", str(results), "--wall", "60"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(_children_of(proc.pid)) < 2:
            time.sleep(0.1)
        children = _children_of(proc.pid)  # one sleeping child per part
        assert len(children) == 2
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    doc = json.loads(results.read_text())
    check_gradescope(doc)
    assert doc["score"] == 0
    assert not [pid for pid in children if _state(pid) not in (None, "Z")]


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found
