"""Finding and removing what a sandbox user left behind: its tasks, and its files in shared folders.

Every process a child starts, however it detaches (a new session, a double fork, a thread group
whose leader has ended), keeps the child's real user id, which an unprivileged process cannot
change. So what is left of a child is found by that id in ``/proc``, thread by thread
(``/proc/PID/task/TID/status``): a thread group whose leader ended with a raw ``exit`` system
call shows its leader as a zombie while its other threads run on, so the hunt looks at every
task, not at processes. ``kill`` of any thread's id stops its whole thread group.

A user id the grader did not choose (``--user nobody``) may have tasks and files of its own; a
``Snapshot`` taken before a child starts says which, and only what is newer is removed (so what
another program of that account starts meanwhile is taken for the child's: name an account only
the grader uses).

Files are hunted in the folders every user may write to (``SHARED_DIRS``): entries owned by the
user, not there before, are removed; folders the user may enter are searched (within bounds).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
MAX_ENTRIES = 50_000
MAX_DEPTH = 16


@dataclass(frozen=True)
class Task:
    tid: int
    uid: int
    zombie: bool
    started: int  # clock ticks after boot: with ``tid``, names the task even if ids are reused


def tasks(uid: int | None = None) -> Iterator[Task]:
    """Every task (thread) on the machine, or those whose real user id is ``uid``."""
    for proc in os.scandir("/proc"):
        if not proc.name.isdigit():
            continue
        try:
            threads = os.listdir(f"/proc/{proc.name}/task")
        except OSError:
            continue
        for tid in threads:
            task = _read_task(f"/proc/{proc.name}/task/{tid}", int(tid), uid)
            if task is not None:
                yield task


def _read_task(path: str, tid: int, uid: int | None) -> Task | None:
    try:
        with open(f"{path}/status", encoding="ascii", errors="replace") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        real = int(fields["Uid"].split()[0])
        if uid is not None and real != uid:
            return None
        with open(f"{path}/stat", encoding="ascii", errors="replace") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, KeyError, ValueError, IndexError):
        return None  # gone meanwhile
    return Task(tid, real, fields.get("State", "").strip().startswith(("Z", "X")), started)


def users_with_tasks() -> set[int]:
    """User ids that have any task, zombies included (a zombie's id is not free yet)."""
    return {t.uid for t in tasks()}


@dataclass
class Snapshot:
    """What a user had before a child started: its tasks, and its files in SHARED_DIRS."""

    uid: int
    gid: int
    skip: Path | None = None  # a folder left out of the hunt for files (the sandbox's own)
    tasks: set[tuple[int, int]] = field(default_factory=set)
    files: set[tuple[int, int]] = field(default_factory=set)

    @classmethod
    def take(cls, uid: int, gid: int, skip: Path | None = None) -> Snapshot:
        return cls(uid, gid, skip, {(t.tid, t.started) for t in tasks(uid)},
                   {(s.st_dev, s.st_ino) for _, s in _owned_entries(uid, gid, skip)})

    def new_tasks(self) -> list[Task]:
        return [t for t in tasks(self.uid) if not t.zombie and (t.tid, t.started) not in self.tasks]


def kill_new_tasks(before: Snapshot, tries: int = 200) -> bool:
    """SIGKILL every live task of the user that ``before`` did not have, until none is left;
    True when none is (it may take a few rounds: a task can fork while the others die)."""
    for _ in range(tries):
        left = before.new_tasks()
        if not left:
            return True
        for task in left:
            try:
                os.kill(task.tid, signal.SIGKILL)  # any thread's id: the whole thread group
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    return not before.new_tasks()


def remove_new_files(before: Snapshot) -> list[str]:
    """Remove what the user made in SHARED_DIRS since ``before``; return the paths removed."""
    removed = []
    for path, info in list(_owned_entries(before.uid, before.gid, before.skip)):
        if (info.st_dev, info.st_ino) in before.files:
            continue
        try:
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed.append(path)
        except OSError:
            pass
    return removed


def _owned_entries(uid: int, gid: int,
                   skip: Path | None) -> Iterator[tuple[str, os.stat_result]]:
    """Entries of SHARED_DIRS (and the folders the user can enter below them) owned by ``uid``;
    a folder it owns is given whole, not searched."""
    looked = 0
    stack = [(d, 0) for d in SHARED_DIRS if os.path.isdir(d)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            looked += 1
            if looked > MAX_ENTRIES:
                return
            if skip is not None and entry.path == str(skip):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid == uid:
                yield entry.path, info
            elif stat.S_ISDIR(info.st_mode) and depth < MAX_DEPTH and _can_enter(info, gid):
                stack.append((entry.path, depth + 1))


def _can_enter(info: os.stat_result, gid: int) -> bool:
    """Whether a user of group ``gid`` (and no other) that does not own it can search it."""
    return bool(info.st_mode & stat.S_IXOTH) or (
        info.st_gid == gid and bool(info.st_mode & stat.S_IXGRP))
