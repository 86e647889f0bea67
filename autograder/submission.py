"""Copying a submission into the sandbox: the graded files found by name, then what fits.

A student may hand in the two graded files alone, or a whole folder (their clone of the course
repository, say) with the files somewhere inside. The folder is walked breadth first, without
recursion and without following links, looking at no more than ``MAX_ENTRIES`` names and going no
deeper than ``MAX_DEPTH`` folders. Each graded file is the one of that name nearest the top; two
at the same depth are ambiguous and the part says so. The copy then takes, within
``MAX_FILES`` files and ``MAX_BYTES`` bytes: the graded files, the other files of their folders
(helpers they import), then the rest in the order found. What is left out is listed, and a graded
file not found because the folder is too big is reported as such, naming the files to hand in.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MAX_FILES = 100
MAX_BYTES = 5 * 2**20
MAX_ENTRIES = 20_000
MAX_DEPTH = 32


@dataclass
class Found:
    """Where each graded file is (a path relative to the submission), or why it is not."""

    files: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


@dataclass
class _Walk:
    files: list[tuple[PurePosixPath, int]] = field(default_factory=list)  # (path, size)
    cut: bool = False
    notes: list[str] = field(default_factory=list)


def copy_submission(source: Path, target: Path, wanted: list[str]) -> Found:
    """Copy what ``source`` holds into ``target`` (made here) and find the ``wanted`` files."""
    target.mkdir()
    walk = _walk(source)
    found = Found(skipped=list(walk.notes))
    for name in wanted:
        _locate(name, walk, wanted, found)
    first = [PurePosixPath(p) for p in found.files.values()]
    homes = {p.parent for p in first}
    order = sorted(walk.files, key=lambda f: (f[0] not in first, f[0].parent not in homes))
    count, size = 0, 0
    for rel, length in order:
        if count >= MAX_FILES or size + length > MAX_BYTES:
            found.skipped.append(f"{rel} (over the limit of {MAX_FILES} files, "
                                 f"{MAX_BYTES // 2**20} MB)")
            continue
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(source / rel, out, follow_symlinks=False)
        except OSError as exc:
            found.skipped.append(f"{rel} (could not be read: {exc.strerror or exc})")
            continue
        count, size = count + 1, size + length
    for name, rel in list(found.files.items()):
        if not (target / rel).is_file():
            del found.files[name]
            found.problems[name] = (f"{rel} is in the submission but could not be copied "
                                    f"(over the limit of {MAX_FILES} files, "
                                    f"{MAX_BYTES // 2**20} MB?)")
    return found


def _locate(name: str, walk: _Walk, wanted: list[str], found: Found) -> None:
    matches = [rel for rel, _ in walk.files if rel.name == name]
    if not matches:
        if walk.cut:
            found.problems[name] = (f"{name} was not found: the submission holds too many files "
                                    f"(more than {MAX_ENTRIES:,} looked at); hand in these two: "
                                    f"{', '.join(wanted)}")
        else:
            found.problems[name] = f"{name} is missing from the submission"
        return
    depth = min(len(m.parts) for m in matches)
    nearest = sorted(m for m in matches if len(m.parts) == depth)
    if len(nearest) > 1:
        found.problems[name] = (f"{name} is in the submission {len(nearest)} times at the same "
                                f"depth ({', '.join(map(str, nearest[:4]))}); hand in one")
        return
    found.files[name] = str(nearest[0])


def _walk(source: Path) -> _Walk:
    """The regular files under ``source`` (no links, caches or hidden names), breadth first."""
    walk = _Walk()
    looked = 0
    queue: deque[tuple[PurePosixPath, int]] = deque([(PurePosixPath(), 0)])
    deep = 0
    while queue:
        rel, depth = queue.popleft()
        try:
            entries = []
            with os.scandir(source / rel) as it:
                for entry in it:
                    looked += 1
                    if looked > MAX_ENTRIES:
                        walk.cut = True
                        break
                    entries.append(entry)
        except OSError as exc:
            walk.notes.append(f"{rel or '.'}/ (could not be read: {exc.strerror or exc})")
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            _take(entry, rel / entry.name, depth, walk, queue)
            if depth + 1 > MAX_DEPTH and entry.is_dir(follow_symlinks=False):
                deep += 1
        if walk.cut:
            walk.notes.append(f"everything after the first {MAX_ENTRIES:,} names (too many files)")
            break
    if deep:
        walk.notes.append(f"{deep} folder(s) nested more than {MAX_DEPTH} deep")
    return walk


def _take(entry: os.DirEntry, rel: PurePosixPath, depth: int, walk: _Walk,
          queue: deque) -> None:
    if entry.name.startswith(".") or entry.name == "__pycache__":
        return
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        walk.notes.append(f"{rel} (could not be read)")
        return
    if stat.S_ISLNK(info.st_mode):
        walk.notes.append(f"{rel} (a symbolic link)")
    elif stat.S_ISDIR(info.st_mode):
        if depth + 1 <= MAX_DEPTH:
            queue.append((rel, depth + 1))
    elif stat.S_ISREG(info.st_mode):
        walk.files.append((rel, info.st_size))
    else:
        walk.notes.append(f"{rel} (not a regular file)")
