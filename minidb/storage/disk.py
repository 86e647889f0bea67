"""A node's disk: real files of fixed-size pages in a data directory, with every I/O counted.

Each minidb node owns one ``Disk`` (Gamma, Section 2.1: eight of its processors had a disk
each). Files on it are sequences of pages stored in ordinary operating-system files, so a
relation really lives on disk and a cold scan really reads it back.

The I/O meter classifies every page transfer the way a disk arm would feel it: a page is
*sequential* when it is the page right after the last one this disk transferred (same file,
next page number), and *random* otherwise. A contiguous run of n pages therefore costs at most
one random access plus n - 1 sequential ones; interleaving two files (scan one, write the other)
turns each switch into a random access, as it would move the arm. These counts, not wall time,
are what the cost model turns into the seconds of the papers' hardware.

Multi-page transfers (Volcano's *clusters*) are single ``preadv`` / ``pwrite`` calls, so the
Python cost of a scan does not grow with the number of pages while the counts stay exact. Each
file is opened once, on its first read or write, and stays open until it is dropped or the disk
is closed (``PagedFile.close``; a file that is garbage-collected closes itself), as a database's
file system keeps its files open, instead of a path lookup, an open and a close around every
cluster. Opening and closing are not I/Os, so the meter does not count them.

File ids and page versions. Each file has a random 32-bit *id* and each of its pages a *version*,
the number of times the page has been written (a write of pages n.. adds 1 to their versions).
Both are folded into every page's checksum (``minidb.storage.page``), so a read accepts a page only
if it is the latest version of that page of that file. The versions live in memory, one 32-bit
counter a page, and the catalog saves them with the file's id (``versions_to_json``: runs of
equal versions, so a freshly loaded file of any size is one run) each time it records a change,
after the pages are forced to disk. This is what detects a lost write (the disk still holds
version 3 of a page the catalog knows as version 4) and a change cut off before its catalog was
written (version 5 on disk, 4 in the catalog). Keeping the table in the catalog, not in a file
header or on a page of its own, means no extra page is ever read or written for it, so the I/O
counts of every statement are what they were without it.

Reopening. A page file holds nothing but its pages, so ``open`` takes the number of pages from the
file's size, and its id and versions from the catalog; the checksums are checked as pages are
read, as for any other read. ``sync`` forces the files written since the last call to stable
storage (``fsync``), which the catalog does before it records a change. Simplified: no free-space
map and no file header; what a file *is* (heap, tree, hash buckets) is known only from the
catalog that names it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import weakref
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from minidb.errors import CorruptPageError, MinidbError
from minidb.storage import page as pg

if TYPE_CHECKING:
    from minidb.txn.undo import UndoJournal


@dataclass
class IOCounters:
    """Pages moved between disk and memory, split by direction and access pattern."""

    seq_reads: int = 0
    rand_reads: int = 0
    seq_writes: int = 0
    rand_writes: int = 0

    @property
    def reads(self) -> int:
        return self.seq_reads + self.rand_reads

    @property
    def writes(self) -> int:
        return self.seq_writes + self.rand_writes

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def snapshot(self) -> IOCounters:
        return IOCounters(**asdict(self))

    def minus(self, before: IOCounters) -> IOCounters:
        return IOCounters(**{k: v - getattr(before, k) for k, v in asdict(self).items()})


@dataclass
class _Head:
    file_id: int = -1
    next_page: int = -1


class Disk:
    """A data directory holding the page files of one node, plus its I/O meter."""

    def __init__(self, data_dir: str | os.PathLike | None, page_size: int):
        self.page_size = pg.check_page_size(page_size)
        self._owns_dir = data_dir is None
        self.path = Path(tempfile.mkdtemp(prefix="minidb-")) if data_dir is None else Path(data_dir)
        self.path.mkdir(parents=True, exist_ok=True)
        # a temporary directory goes away with the Disk even if nobody calls close()
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, True) if self._owns_dir else None
        self.io = IOCounters()
        self._head = _Head()
        self._files: dict[int, PagedFile] = {}
        self._unsynced: dict[int, PagedFile] = {}  # files written since the last sync()
        self._next_id = 0
        self._uids: set[int] = set()  # ids of the files on this disk (checksums fold them in)
        #: the undo log (``minidb.txn.undo``) of a user's data directory; None for a temporary one
        self.journal: UndoJournal | None = None

    @property
    def is_temporary(self) -> bool:
        """True when minidb made the directory (it goes away with the Disk)."""
        return self._owns_dir

    # -- files --------------------------------------------------------------------------------
    def create(self, name: str) -> PagedFile:
        """Create an empty page file called ``name`` (replacing any leftover of that name)."""
        f = PagedFile(self, self._next_id, name, uid=self._new_uid())
        self._next_id += 1
        f.path.write_bytes(b"")
        self._files[f.file_id] = f
        if self.journal is not None:
            self.journal.created(name)
        return f

    def _new_uid(self) -> int:
        """A random file id no other file of this disk has (random, so that a page of another
        database's file is not taken for one of ours either)."""
        while (uid := secrets.randbits(32)) in self._uids:
            pass
        self._uids.add(uid)
        return uid

    def open(self, name: str, uid: int = 0, versions: np.ndarray | None = None) -> PagedFile:
        """An existing page file ``name``; its page count is its size over the page size. ``uid``
        and ``versions`` (one a page) are what the catalog recorded for it."""
        path = self.path / f"{name}.pages"
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise MinidbError(f"page file {path} is missing; the catalog names it") from None
        if size % self.page_size:
            raise CorruptPageError(
                f"{name}.pages is {size} bytes, not a whole number of {self.page_size}-byte pages "
                "(cut short or damaged on disk); reload the table"
            )
        f = PagedFile(self, self._next_id, name, size // self.page_size, uid=int(uid))
        if versions is not None:
            n = min(len(versions), f.num_pages)
            f._versions[:n] = np.asarray(versions, dtype=np.uint32)[:n]
        self._uids.add(f.uid)
        self._next_id += 1
        self._files[f.file_id] = f
        return f

    def page_files(self) -> list[str]:
        """Names (without ``.pages``) of every page file in the data directory."""
        return sorted(p.name[: -len(".pages")] for p in self.path.glob("*.pages"))

    def open_files(self) -> list[PagedFile]:
        """Every page file this disk has open (created or opened, not dropped)."""
        return list(self._files.values())

    def other_files(self, f: PagedFile):
        """(name, id, page versions) of every open file but ``f``, to say where a stray page
        came from (see ``minidb.storage.page.verify``)."""
        return [(o.name, o.uid, o.versions) for o in list(self._files.values()) if o is not f]

    def drop(self, f: PagedFile) -> None:
        """Remove ``f``; with a journal, a file holding committed pages is deleted at the commit."""
        f.close()
        self._files.pop(f.file_id, None)
        self._uids.discard(f.uid)
        self._unsynced.pop(f.file_id, None)
        if self.journal is None or not self.journal.defers_drop(f.name):
            f.path.unlink(missing_ok=True)

    def forget_files(self) -> None:
        """Close and forget every open file (their pages stay on disk): a rollback reopens them."""
        for f in list(self._files.values()):
            f.close()
        self._files.clear()
        self._unsynced.clear()
        self._uids.clear()

    def sync(self) -> None:
        """``fsync`` every file written since the last call, so its pages survive a crash."""
        for file_id in list(self._unsynced):
            f = self._unsynced.pop(file_id, None)
            if f is None or not f.path.exists():
                continue
            os.fsync(f.handle())

    def close(self) -> None:
        """Close every open page file, and remove the data directory if minidb made it (a
        temporary one)."""
        for f in list(self._files.values()):
            f.close()
        if self._cleanup is not None:
            self._cleanup()

    # -- the meter ----------------------------------------------------------------------------
    def _count(self, file_id: int, first: int, n: int, write: bool) -> None:
        if n <= 0:
            return
        sequential_start = self._head.file_id == file_id and self._head.next_page == first
        rand = 0 if sequential_start else 1
        if write:
            self.io.rand_writes += rand
            self.io.seq_writes += n - rand
        else:
            self.io.rand_reads += rand
            self.io.seq_reads += n - rand
        self._head = _Head(file_id, first + n)


@dataclass(eq=False)
class PagedFile:
    """One file of fixed-size pages on a ``Disk``; reads verify checksums, writes seal them."""

    disk: Disk
    file_id: int  # this process's number for the file (the I/O meter's "same file")
    name: str
    num_pages: int = field(default=0)
    uid: int = 0  # the file's id on disk, folded into its pages' checksums
    owner: str | None = None  # the table the file belongs to, for error messages

    def __post_init__(self) -> None:
        self._versions = np.zeros(max(16, self.num_pages), dtype=np.uint32)
        self._fd: int | None = None
        self._closer: weakref.finalize | None = None

    def handle(self) -> int:
        """The file's descriptor, opened (read-write) on first use and kept open."""
        if self._fd is None:
            try:
                fd = os.open(self.path, os.O_RDWR)
            except PermissionError:  # a read-only database: reads work, a write reports EBADF
                fd = os.open(self.path, os.O_RDONLY)
            self._fd, self._closer = fd, weakref.finalize(self, os.close, fd)
        return self._fd

    def close(self) -> None:
        """Close the descriptor, if open (the next read or write opens the file again)."""
        if self._closer is not None:
            self._closer()  # closes the descriptor once, even if called again
        self._fd = self._closer = None

    @property
    def versions(self) -> np.ndarray:
        """How many times each page has been written (a view; the catalog saves a copy)."""
        return self._versions[: self.num_pages]

    @property
    def label(self) -> str:
        """The file as error messages name it: with its table when it has one."""
        return self.name if self.owner is None else f"{self.name} (table {self.owner!r})"

    @property
    def path(self) -> Path:
        return self.disk.path / f"{self.name}.pages"

    @property
    def page_size(self) -> int:
        return self.disk.page_size

    def read_pages(self, first: int, n: int, out: np.ndarray | None = None) -> np.ndarray:
        """Read pages ``first .. first+n-1`` in one transfer; shape ``(n, page_size)``.

        ``out`` (a C-contiguous uint8 array of at least ``n`` pages) is read into instead of a
        new array, and its first ``n`` pages returned: a scan reuses one cluster buffer, which
        stays in the processor's cache, instead of touching fresh memory for every cluster."""
        if first < 0 or first + n > self.num_pages:
            raise MinidbError(f"{self.name}: pages {first}..{first + n - 1} are past its end ({self.num_pages} pages)")
        size = self.page_size
        pages = np.empty((n, size), dtype=np.uint8) if out is None else out[:n]
        view = memoryview(pages.reshape(-1))  # read straight into the array: no intermediate copy
        done, fd = 0, self.handle()
        while done < n * size:  # one call moves at most ~2 GiB, so loop on short reads
            got = os.preadv(fd, [view[done:]], first * size + done)
            if got == 0:
                raise MinidbError(f"{self.name}: file is shorter than its catalog says; reload the table")
            done += got
        pg.verify(pages, first, self.label, self.uid, self.versions,
                  lambda: self.disk.other_files(self))
        self.disk._count(self.file_id, first, n, write=False)
        return pages

    def write_pages(self, first: int, pages: np.ndarray) -> None:
        """Seal and write ``pages`` at ``first`` (may extend the file by appending)."""
        n = len(pages)
        if n == 0:
            return
        if first > self.num_pages:
            raise MinidbError(f"{self.name}: cannot write page {first}, the file has {self.num_pages} pages")
        pages = np.ascontiguousarray(pages)
        if first + n > len(self._versions):  # room for the versions of new pages, doubling
            grown = np.zeros(max(first + n, 2 * len(self._versions)), dtype=np.uint32)
            grown[: len(self._versions)] = self._versions
            self._versions = grown
        new_versions = self._versions[first : first + n] + 1
        pg.seal(pages, self.uid, new_versions)
        if self.disk.journal is not None:  # the write-ahead rule: before-images first
            self.disk.journal.before_write(self, first, n)
        view = memoryview(pages.reshape(-1))
        done, fd = 0, self.handle()
        while done < len(view):  # one call moves at most ~2 GiB, so loop on short writes
            done += os.pwrite(fd, view[done:], first * self.page_size + done)
        self._versions[first : first + n] = new_versions
        self.disk._unsynced[self.file_id] = self
        self.num_pages = max(self.num_pages, first + n)
        self.disk._count(self.file_id, first, n, write=True)

    def append_pages(self, pages: np.ndarray) -> int:
        """Write ``pages`` after the last page; return the number of the first one."""
        first = self.num_pages
        self.write_pages(first, pages)
        return first


def versions_to_json(versions: np.ndarray) -> list[list[int]]:
    """Page versions as runs ``[version, count]`` (a loaded file is one run, an updated one a
    few): the form the catalog stores."""
    v = np.asarray(versions, dtype=np.int64)
    if not len(v):
        return []
    starts = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    counts = np.diff(np.r_[starts, len(v)])
    return [[int(v[s]), int(c)] for s, c in zip(starts, counts, strict=True)]


def versions_from_json(runs: list) -> np.ndarray:
    """The page versions ``versions_to_json`` wrote (ValueError if they are not runs)."""
    if not isinstance(runs, list) or not all(
            isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) and x >= 0 for x in r)
            for r in runs):
        raise ValueError("page versions are not a list of [version, count] runs")
    if not runs:
        return np.zeros(0, dtype=np.uint32)
    values, counts = zip(*runs, strict=True)
    return np.repeat(np.array(values, dtype=np.uint32), np.array(counts, dtype=np.int64))
