"""Holes found in the sandbox by attacking it (issue 18, items 1, 2, 4, 5 and 6): each test is an
attack or an unlucky submission that the grader must survive with every test in results.json,
nothing of the submission left running or lying around, and no hidden case shown early."""

from __future__ import annotations

import json
import os
import platform
import pwd
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from ag_helpers import HOSTILE, REFERENCE, ROOT, assemble, check_gradescope

AS_ROOT = os.geteuid() == 0
ROOT_ONLY = pytest.mark.skipif(not AS_ROOT, reason="children change user only when the grader "
                                                   "is root; without a user of their own "
                                                   "nothing can be hunted or cleaned by user id")
HIDDEN_IDS = ("A10", "A11", "A12", "A13", "A14", "B7", "B8", "B9")


def _tasks_of(uid: int) -> list[int]:
    """Every live task (thread) in /proc whose real user id is ``uid``."""
    found = []
    for status in Path("/proc").glob("[0-9]*/task/[0-9]*/status"):
        try:
            lines = dict(line.split(":", 1) for line in status.read_text().splitlines()
                         if ":" in line)
        except OSError:
            continue
        if int(lines["Uid"].split()[0]) == uid and not lines["State"].strip().startswith("Z"):
            found.append(int(status.parent.name))
    return found


# -- item 1: a process that hides behind a zombie thread-group leader -----------------------------
ZOMBIE_LEADER = '''\
"""Hostile: leaves a process behind whose main thread ended with a raw exit system call."""
import os
import subprocess
import time

from reference_partitioner import StudentRangeUniform  # noqa: F401

SCRIPT = """
import ctypes, os, threading, time
if os.fork() == 0:
    os.setsid()
    def touch():
        while True:
            with open({marker!r}, "w") as f:
                f.write(str(time.time()))
            time.sleep(0.05)
    threading.Thread(target=touch).start()
    time.sleep(0.3)
    ctypes.CDLL(None).syscall({sys_exit}, 0)  # ends the main thread only: a zombie leader
os._exit(0)
"""
subprocess.run(["python3", "-c", SCRIPT], timeout=20)
time.sleep(1.0)
print("uid", os.getuid(), "attack started" if os.path.exists({marker!r}) else "attack failed")
'''


@ROOT_ONLY
@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="SYS_exit number")
@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="needs /usr/bin/python3 "
                    "(with ctypes) for the submission to start")
def test_a_thread_behind_a_zombie_leader_is_killed_with_its_user(tmp_path, grade):
    marker = Path("/tmp") / f"minidb-zombie-{uuid.uuid4().hex}"
    sys_exit = 60 if platform.machine() == "x86_64" else 93
    uid = None
    try:
        graded = grade(assemble(tmp_path / "s", ZOMBIE_LEADER.format(
            marker=str(marker), sys_exit=sys_exit), "reference"), HOSTILE)
        assert graded.score == 100
        printed = graded.test("A1")["output"]
        assert "attack started" in printed
        uid = int(printed.split("uid ")[1].split()[0])
        assert uid != 0
        assert _tasks_of(uid) == []  # right after grading: nothing of that user is left
        marker.unlink(missing_ok=True)  # (the grader removes it too: a file the user left)
        time.sleep(0.5)
        assert not marker.exists()  # and nothing writes it again
    finally:
        for tid in _tasks_of(uid) if uid else []:  # what a broken grader left
            os.kill(tid, 9)
        marker.unlink(missing_ok=True)


# -- item 2: hidden cases read from the harness's memory ------------------------------------------
SPY = '''\
"""Hostile: looks through the stack and every object for cases and prints what it finds."""
import gc
import sys

from {base} import {cls}

from minidb.plugins import register


def spy():
    found = set()
    frame = sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            found.update(names(value))
        frame = frame.f_back
    for obj in gc.get_objects():
        found.update(names(obj))
    print("LEAK", sorted(found))


def names(obj):
    try:
        if isinstance(obj, dict):
            out = [str(obj["id"])] if "id" in obj else []
            return out + [k for k in obj if isinstance(k, str) and k[:1] in "AB" and k[1:2].isdigit()]
        if isinstance(obj, str) and obj[:1] in "AB" and obj[1:2].isdigit() and len(obj) < 40:
            return [obj]
    except Exception:
        pass
    return []


spy()


@register("{kind}", "{name}")
class Spy({cls}):
    def __init__(self, *args, **kwargs):
        spy()
        super().__init__(*args, **kwargs)
'''


def test_a_submission_cannot_show_hidden_cases_in_public_output(tmp_path, grade):
    sub = assemble(tmp_path / "s",
                   SPY.format(base="reference_partitioner", cls="StudentRangeUniform",
                              kind="partitioner", name="student_range_uniform"),
                   SPY.format(base="reference_policy", cls="StudentClock",
                              kind="buffer_policy", name="student_clock"))
    graded = grade(sub, HOSTILE)
    assert graded.score == 100
    visible = [t for t in graded.doc["tests"] if t["visibility"] == "visible"]
    assert len(visible) == 15 and all("LEAK" in t["output"] for t in visible)  # it did look
    shown = "\n".join([graded.doc["output"]] + [t["output"] for t in visible])
    for case_id in HIDDEN_IDS:
        assert case_id not in shown
    for column in ("salary", "reading", "'name'", "dept"):  # the hidden cases' columns
        assert column not in shown


# -- item 4: the graded files somewhere in the student's repository -------------------------------
def test_graded_files_found_by_name_deep_in_a_repository(tmp_path, grade):
    repo = tmp_path / "repo"
    for i in range(150):  # sorted before the lab's folder
        (repo / "aaa" / f"f{i:03}").mkdir(parents=True)
        (repo / "aaa" / f"f{i:03}" / "notes.txt").write_text("x")
    lab = repo / "labs" / "lab1"
    lab.mkdir(parents=True)
    for name in ("partitioner.py", "policy.py"):
        shutil.copyfile(REFERENCE / name, lab / name)
    graded = grade(repo)
    assert graded.score == 100


def test_too_many_files_says_which_two_to_hand_in(tmp_path, grade):
    repo = tmp_path / "repo"
    (repo / "aaa").mkdir(parents=True)
    for i in range(20_050):
        (repo / "aaa" / f"{i:05}").touch()
    (repo / "zzz").mkdir()
    for name in ("partitioner.py", "policy.py"):
        shutil.copyfile(REFERENCE / name, repo / "zzz" / name)
    graded = grade(repo)
    assert len(graded.doc["tests"]) == 23 and graded.score == 0
    a1 = graded.test("A1")["output"]
    assert "too many files" in a1 and "hand in these two: partitioner.py, policy.py" in a1
    assert "not in the submission" not in a1


# -- item 5: crashes of the grader's own output ---------------------------------------------------
def cli_grade(submission: Path, results: Path, *extra: str, pipe: str = "") -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "autograder", "grade", "lab1", "--submission",
               str(submission), "--results", str(results), *extra]
    if pipe:
        line = " ".join(f"'{c}'" for c in command) + " | " + pipe
        return subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    return subprocess.run(command, cwd=ROOT, capture_output=True, timeout=300)


def test_a_lone_surrogate_in_an_error_message(tmp_path):
    results = tmp_path / "results.json"
    sub = assemble(tmp_path / "s", "raise ValueError('bad \\ud800 value')\n",
                   "import sys\nsys.stderr.write('\\udcff')\nprint('\\ud800')\nraise SystemExit(3)\n")
    done = cli_grade(sub, results)
    assert done.returncode == 0, done.stderr
    doc = json.loads(results.read_text(encoding="utf-8"))
    check_gradescope(doc)
    assert len(doc["tests"]) == 23 and doc["score"] == 0
    assert "ValueError: bad" in doc["tests"][0]["output"]


def test_folders_nested_1200_deep(tmp_path, grade):
    sub = assemble(tmp_path / "s")
    folders = [sub / "/".join(["d"] * n) for n in range(1, 1201)]
    for folder in folders:  # one at a time: os.makedirs and rmtree recurse
        folder.mkdir()
    (folders[-1] / "x.txt").write_text("deep")
    try:
        graded = grade(sub)
        assert graded.score == 100 and len(graded.doc["tests"]) == 23
        assert "nested more than" in graded.doc["output"]
    finally:
        (folders[-1] / "x.txt").unlink()
        for folder in reversed(folders):
            folder.rmdir()


def test_a_broken_stdout_pipe_still_grades_every_case(tmp_path):
    results = tmp_path / "results.json"
    done = cli_grade(REFERENCE, results, pipe="head -c 10")
    assert len(done.stdout) == 10
    doc = json.loads(results.read_text())
    check_gradescope(doc)
    assert len(doc["tests"]) == 23 and doc["score"] == 100


# -- item 6: limits ---------------------------------------------------------------------------------
SLOW = '''\
"""Right but slow: each partitioner built burns {burn} s of CPU time."""
import time

from reference_partitioner import StudentRangeUniform

from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class Slow(StudentRangeUniform):
    def __init__(self, *args, **kwargs):
        start = time.process_time()
        while time.process_time() - start < {burn}:
            pass
        super().__init__(*args, **kwargs)
'''


def test_the_cpu_limit_holds_for_each_case_not_for_all(tmp_path, grade):
    graded = grade(assemble(tmp_path / "s", SLOW.format(burn=0.6)), HOSTILE)  # 2 s of CPU
    assert graded.failed() == [] and graded.score == 100


LEAVES_FILES = '''\
"""Hostile: leaves files in the machine's shared temporary folders."""
import os

from reference_policy import StudentClock  # noqa: F401

for path in {paths!r}:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("left behind")
        print("wrote", path)
    except OSError as exc:
        print("could not write", path, exc)
'''


@ROOT_ONLY
def test_files_left_in_tmp_and_dev_shm_are_removed(tmp_path, grade):
    tag = uuid.uuid4().hex
    paths = [f"/tmp/minidb-left-{tag}", f"/dev/shm/minidb-left-{tag}",
             f"/tmp/minidb-left-dir-{tag}/inner/file"]
    try:
        graded = grade(assemble(tmp_path / "s", "reference", LEAVES_FILES.format(paths=paths)),
                       HOSTILE)
        assert graded.score == 100
        assert graded.test("B1")["output"].count("wrote /") == 3
        for path in paths:
            assert not Path(path).exists()
        assert not Path(f"/tmp/minidb-left-dir-{tag}").exists()
    finally:
        for path in paths:
            Path(path).unlink(missing_ok=True)
        shutil.rmtree(f"/tmp/minidb-left-dir-{tag}", ignore_errors=True)


FORKS_AND_STAYS = '''\
"""Hostile: starts as many processes as it can, and leaves one sleeping in a session of its own."""
import os
import subprocess
import time

from reference_partitioner import StudentRangeUniform  # noqa: F401

started = 0
for _ in range(20):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    started += 1
print("started", started)
for _ in range(started):
    os.wait()
subprocess.Popen(["sleep", {sleep!r}], start_new_session=True)
time.sleep(0.3)
'''


@ROOT_ONLY
def test_user_nobody_gets_the_same_limits_and_cleanup(tmp_path):
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no account 'nobody' on this machine")
    from autograder.grading import grade_to_file

    sleep = f"{71 + uuid.uuid4().int % 1000 / 1000:.3f}"
    kept = Path("/tmp") / f"minidb-nobody-before-{uuid.uuid4().hex}"
    kept.write_text("a file of nobody's from before grading")
    os.chown(kept, nobody.pw_uid, nobody.pw_gid)
    made = Path("/tmp") / f"minidb-nobody-during-{uuid.uuid4().hex}"
    policy = LEAVES_FILES.format(paths=[str(made)])
    results = tmp_path / "results.json"
    try:
        grade_to_file("lab1", assemble(tmp_path / "s", FORKS_AND_STAYS.format(sleep=sleep),
                                       policy), results, limits=HOSTILE, user="nobody",
                      log=lambda line: None)
        doc = json.loads(results.read_text())
        check_gradescope(doc)
        assert doc["score"] == 100
        a1 = doc["tests"][0]["output"]
        assert int(a1.split("started ")[1].split()[0]) <= 4  # the same process limit as 'auto'
        assert not _sleeping(sleep)
        assert kept.exists() and not made.exists()
    finally:
        kept.unlink(missing_ok=True)
        made.unlink(missing_ok=True)
        for pid in _sleeping(sleep):
            os.kill(pid, 9)


def _sleeping(seconds: str) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if entry.read_bytes().split(b"\0")[:2] == [b"sleep", seconds.encode()]:
                found.append(int(entry.parent.name))
        except OSError:
            continue
    return found


def test_two_grader_processes_never_share_a_user_id(tmp_path, monkeypatch):
    """Two graders at once (parallel test workers, a batch graded in parallel) started from the
    same place in the id range: while one holds an id, the other takes the next; each one's
    cleanup would otherwise kill the other's child. A released id can be taken again."""
    from autograder import sandbox

    monkeypatch.setattr(sandbox, "UID_LOCKS", tmp_path / "uids")
    mine = sandbox.claim_uid()
    other = f"""
import os, sys
sys.path[:0] = [{str(ROOT)!r}]
from pathlib import Path
from autograder import sandbox
sandbox.UID_LOCKS = Path({str(tmp_path / "uids")!r})
os.getpid = lambda: {os.getpid()}  # start where the first grader started
print(sandbox.claim_uid())
"""

    def claimed_elsewhere() -> int:
        run = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stderr
        return int(run.stdout)

    try:
        assert claimed_elsewhere() not in (mine, -1)
    finally:
        sandbox.release_uid(mine)
    assert claimed_elsewhere() == mine  # its lock ended with the release


def test_a_uid_lock_folder_others_can_write_is_refused(tmp_path, monkeypatch):
    from autograder import sandbox
    from autograder.sandbox import AutograderError

    shared = tmp_path / "uids"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(sandbox, "UID_LOCKS", shared)
    with pytest.raises(AutograderError, match="only the grader can write"):
        sandbox.claim_uid()
