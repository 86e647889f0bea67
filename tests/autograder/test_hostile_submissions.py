"""Hostile and broken submissions: the grader survives them, within its limits, and they earn
exactly what their honest parts earn (the other part of each submission is the reference)."""

from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

import pytest
from ag_helpers import HOSTILE, SLEEPY, assemble

from autograder.sandbox import WALL_STRETCH_MAX, Limits
from minidb.cluster.machine import busy_factor

ALL_A = {f"A{i}" for i in range(1, 15)}
ALL_B = {f"B{i}" for i in range(1, 10)}
AS_ROOT = os.geteuid() == 0


def outputs(graded, part: str) -> str:
    return "\n".join(t["output"] for t in graded.doc["tests"] if f"part {part}" in t["tags"])


def test_endless_loop_and_endless_sleep_while_imported(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "hostile_loop_at_import.py",
                            "hostile_sleep_at_import.py"), SLEEPY)
    assert graded.score == 0 and set(graded.failed()) == ALL_A | ALL_B
    a = outputs(graded, "A")  # 2 s of CPU, or 3 s of wall clock on a busy machine
    assert "importing partitioner.py failed: it used more than 2 s of CPU time" in a or \
        "importing partitioner.py failed: importing the submission took longer than 3 s" in a
    assert re.search(r"importing the submission took longer than [\d.]+ s \(wall-clock limit",
                     outputs(graded, "B"))
    assert graded.seconds < 10 * min(WALL_STRETCH_MAX, busy_factor())


def test_the_wall_clock_limit_stretches_with_the_load_and_says_so(tmp_path, grade, monkeypatch):
    """On a machine three times busier than its cores, a stage may take three times its wall
    limit (a correct but slowed submission is not failed), and the failure says why."""
    from autograder import sandbox

    monkeypatch.setattr(sandbox, "busy_factor", lambda: 3.0)
    monkeypatch.setattr(sandbox, "load_note", lambda: "load average 6.0 on 2 cores")
    started = time.monotonic()
    graded = grade(assemble(tmp_path / "s", "reference", "hostile_sleep_at_import.py"),
                   Limits(wall_s=1, cpu_s=2, memory_mb=1024, output_mb=4))
    assert ("importing the submission took longer than 3 s (wall-clock limit of 1 s stretched "
            "x3.0 for the load average 6.0 on 2 cores)") in outputs(graded, "B")
    assert time.monotonic() - started >= 3


def test_endless_loop_in_one_case_fails_that_case_only(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "reference", "hostile_loop_in_one_case.py"), HOSTILE)
    assert graded.failed() == ["B7"] and graded.score == 95
    assert "CPU time" in graded.test("B7")["output"]
    assert graded.seconds < 15


def test_memory_bomb_and_exit_while_imported(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "hostile_memory.py", "hostile_exit_at_import.py"),
                   HOSTILE)
    assert graded.score == 0
    assert "MemoryError" in graded.test("A1")["output"]
    assert "ended early with exit status 0" in graded.test("B1")["output"]


def test_exit_in_some_cases_and_raising_when_imported(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "hostile_exit_in_case.py",
                            "hostile_raise_at_import.py"), HOSTILE)
    # the cases fitting 8 nodes end the process; a fresh child runs the cases after each
    assert set(graded.failed()) == {"A2", "A10", "A14"} | ALL_B
    assert graded.part("A") == 50 - 4 - 4 - 4 and graded.part("B") == 0
    assert "ended early with exit status 0" in graded.test("A2")["output"]
    assert "RuntimeError: this submission refuses to be imported" in graded.test("B1")["output"]
    assert "policy.py, line 3" in graded.test("B1")["output"]


def test_printing_megabytes_costs_nothing_and_is_cut(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "hostile_prints_megabytes.py",
                            "hostile_floods_stdout.py"), HOSTILE)
    assert graded.score == 100
    a1 = graded.test("A1")["output"]
    assert "(while partitioner.py was imported)" in a1 and "more characters printed, not shown" in a1
    assert len(a1) < 9000
    assert "File too large" in graded.test("B1")["output"]  # 4 MB per file, then EFBIG
    assert sum(len(t["output"]) for t in graded.doc["tests"]) < 100_000


def test_objects_equal_to_everything(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "hostile_always_equal.py", "hostile_always_equal.py"),
                   HOSTILE)
    assert graded.score == 0
    assert "route must give a one-dimensional array of integer node numbers" in graded.test("A1")["output"]
    assert "chose frame 99, which was not offered" in graded.test("B1")["output"]


def test_monkeypatched_harness_and_buffer_manager(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "hostile_monkeypatch.py", "hostile_monkeypatch.py"),
                   HOSTILE)
    assert graded.score == 0
    assert "not on the node their value belongs to" in graded.test("A1")["output"]
    assert "no choice was reported for eviction 1" in graded.test("B1")["output"]


def test_forged_report_lines(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "reference", "hostile_forged_report.py"), HOSTILE)
    assert graded.part("A") == 50 and graded.part("B") == 0
    for case in ("B1", "B7"):
        assert "the report of this part was tampered with (unexpected 'done' event in the " \
               "report)" in graded.test(case)["output"]


def test_missing_file_and_syntax_error(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", "import numpy\n\ndef fit(self, batch)\n    pass\n", None),
                   HOSTILE)
    assert graded.score == 0
    a1 = graded.test("A1")["output"]
    assert "SyntaxError" in a1 and "partitioner.py, line 3: def fit(self, batch)" in a1
    assert "policy.py is missing from the submission" in graded.test("B1")["output"]


WRITER = '''\
"""Hostile: writes results files, and leaves processes behind to write more later."""
import json
import os
import subprocess
import time

from reference_partitioner import StudentRangeUniform  # noqa: F401

FAKE = json.dumps({{"score": 1000, "tests": []}})
for path in ("results.json", {results!r}):
    try:
        with open(path, "w") as f:
            f.write(FAKE)
        print("wrote", path)
    except OSError as exc:
        print("could not write", path, type(exc).__name__)
subprocess.Popen(["sleep", {sleep!r}])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # a grandchild in a session of its own: not in the child's process group
        time.sleep(1.5)
        for path in ({results!r}, {marker!r}):
            try:
                with open(path, "w") as f:
                    f.write(FAKE)
            except OSError:
                pass
    os._exit(0)
'''


def test_results_written_by_the_submission_and_processes_left_behind(tmp_path, grade):
    results = tmp_path / "results" / "results.json"
    marker = Path("/tmp") / f"minidb-hostile-{uuid.uuid4().hex}"
    sleep = f"{61 + uuid.uuid4().int % 1000 / 1000:.3f}"
    source = WRITER.format(results=str(results), marker=str(marker), sleep=sleep)
    try:
        graded = grade(assemble(tmp_path / "s", source, "reference"), HOSTILE, results=results)
        assert graded.score == 100
        printed = graded.test("A1")["output"]
        assert "wrote results.json" in printed  # its own folder: harmless
        if AS_ROOT:
            assert f"could not write {results} PermissionError" in printed
            time.sleep(2)  # the grandchild would have written by now
            assert not marker.exists()
            assert graded.doc == __import__("json").loads(results.read_text())
            assert not [pid for pid in _pids() if _cmdline(pid) == ["sleep", sleep]]
    finally:
        marker.unlink(missing_ok=True)
        for pid in _pids():
            if _cmdline(pid) == ["sleep", sleep]:
                os.kill(pid, 9)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


@pytest.mark.skipif(not AS_ROOT, reason="children change user only when the grader is root")
def test_children_run_as_another_user(tmp_path, grade):
    source = ("import os\nprint('uid', os.getuid(), 'euid', os.geteuid(), 'groups', os.getgroups())\n"
              "from reference_policy import StudentClock  # noqa: F401\n")
    graded = grade(assemble(tmp_path / "s", "reference", source), HOSTILE)
    printed = graded.test("B1")["output"]
    uid = int(printed.split("uid ")[1].split()[0])
    assert uid != 0 and f"euid {uid} groups []" in printed
    assert graded.score == 100
