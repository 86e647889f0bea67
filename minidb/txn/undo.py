"""Statement atomicity for one node: an undo log of page before-images, forced before the pages.

Why. A statement changes pages in place (the buffer pool writes a dirty page back when it needs
the frame), and the catalog that says which page versions are current is replaced at the end.
A crash in between leaves some pages new and the catalog old: without a log the table can only
be reported broken. With this journal a crash, or an error, in the middle of a statement leaves
the database as it was before the statement; a crash after it leaves it as it is after.

The protocol is *undo logging with FORCE at commit* (Gray and Reuter, Transaction Processing,
ch. 9-10; Haerder and Reuter's "steal / force" class). A transaction here is everything a node
does between two commits; ``minidb.database`` commits after every statement that changes data.

1. The first time a page that existed at the last commit is about to be overwritten, its
   *before-image* (the page as committed, read back from the file) goes into the log, and the log
   is forced before the page is written: the write-ahead rule. A page appended after the last
   commit needs no image: undo cuts the file back to its committed length instead. A file
   created since the last commit is noted in the log (``CREATE``); undo deletes it.
2. Commit: every dirty page is written and the files are forced (FORCE), then a ``COMMIT``
   record carrying the new catalog is appended and forced. That force is the commit point. Then
   the catalog file is replaced, files dropped by the transaction are deleted, and the log is
   emptied.
3. Recovery, when a data directory is opened: a log ending in ``COMMIT`` is *redone* (the
   catalog written from the record, the dropped files deleted; the pages are already on disk
   because of FORCE). Any other non-empty log is *undone*: the before-images are written back,
   files are cut to the lengths the catalog records, files the transaction created are
   deleted. Both are idempotent: a crash during recovery leaves the log as it was, and
   recovering again does the same thing again. Only then is the log emptied.
4. A statement that fails with an error is undone the same way while the process runs
   (``undo``), and the catalog is read back.

What this costs, and is counted (``counters``): one log record per before-image (a page), one log
force per batch of before-images (a batch holds every dirty page of the file in the buffer pool,
so an UPDATE of a whole table forces about once per pool's worth of pages), one force at commit. Simplified, and said
so: the before-image is read back from the file when the page is first written, not copied in the
buffer pool when it is first changed (one extra read per page per statement; not in the
``Disk`` I/O meter, which keeps measuring what the papers' experiments count). No redo log: with
FORCE every committed page is on disk before the commit point, so recovery never redoes a page.
Tandem's group commit needs NO-FORCE and a redo log; that is a later step.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from minidb.errors import MinidbError
from minidb.txn.log import LogFile

if TYPE_CHECKING:
    from minidb.storage.disk import PagedFile

LOG_FILE = "wal.log"

BEGIN, BEFORE, CREATE, COMMIT, PREPARE = 1, 2, 3, 4, 5
#: a commit protocol's abort record, and (in a coordinator's log) a record of another kind it
#: names, such as presumed commit's COLLECTING (``minidb.txn.commit.enginenet``)
ABORT, NOTE = 6, 7
_BEFORE = struct.Struct("<HI")  # name length, page number (then the name, then the page)


@dataclass
class JournalCounters:
    """The journal's work: before-images logged (and read back first), pages written back by undo,
    transactions committed, undone while running (rollbacks) and undone or redone by recovery."""

    before_images: int = 0
    pages_restored: int = 0
    commits: int = 0
    rollbacks: int = 0
    recoveries: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _runs(pages: list[int]):
    """Sorted page numbers as half-open runs ``(lo, hi)`` of consecutive pages."""
    lo = prev = None
    for p in pages:
        if lo is None:
            lo = prev = p
        elif p == prev + 1:
            prev = p
        else:
            yield lo, prev + 1
            lo = prev = p
    if lo is not None:
        yield lo, prev + 1


class UndoJournal:
    """The undo log of one node's data directory, and the state of its open transaction."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.log = LogFile(self.directory / LOG_FILE)
        self.counters = JournalCounters()
        self._reset_transaction()

    def _reset_transaction(self) -> None:
        self._open = False
        self._committed_pages: dict[str, int] = {}  # file -> pages it had at the last commit
        self._imaged: set[tuple[str, int]] = set()  # pages whose before-image is in the log
        self._created: set[str] = set()
        self._drops: list[str] = []
        self._grown: set[str] = set()  # committed files written past their committed length
        #: the commit protocol logged this transaction's COMMIT record (``log_commit``)
        self.commit_logged = False

    def _begin(self) -> None:
        if not self._open:
            self.log.append(BEGIN)
            self._open = True

    # -- hooks the Disk calls ------------------------------------------------------------------
    def created(self, name: str) -> None:
        """File ``name`` was just created (empty): undo deletes it."""
        self._begin()
        self.log.append(CREATE, name.encode())
        self._created.add(name)
        self._committed_pages[name] = 0

    def before_write(self, f: PagedFile, first: int, n: int) -> None:
        """Pages ``first .. first+n-1`` of ``f`` are about to be written: log the before-image of
        each one that was committed and has none in the log yet, then force the log.

        Batching the forces: with the images of these pages go those of every other committed
        page of ``f`` that is dirty in the buffer pool (``dirty_pages``), since they will be
        written before the commit anyway. A scan that updates every page then forces the log
        about once per buffer pool's worth of pages, not once per page written back."""
        self._begin()
        committed = self._committed_pages.get(f.name)
        if committed is None:  # first write since the last commit: the file is as committed
            committed = os.fstat(f.handle()).st_size // f.page_size
            self._committed_pages[f.name] = committed
        if first + n > committed and f.name not in self._created:
            self._grown.add(f.name)  # undo cuts it back: no image, but a change all the same
        needed = [p for p in range(first, min(first + n, committed)) if (f.name, p) not in self._imaged]
        if not needed:
            return
        ahead = [int(p) for p in self.dirty_pages(f)
                 if p < committed and (f.name, int(p)) not in self._imaged]
        name, size = f.name.encode(), f.page_size
        for lo, hi in _runs(sorted(set(needed) | set(ahead))):
            old = os.pread(f.handle(), (hi - lo) * size, lo * size)
            for p in range(lo, hi):
                image = old[(p - lo) * size : (p - lo + 1) * size]
                self.log.append(BEFORE, _BEFORE.pack(len(name), p) + name + image)
                self._imaged.add((f.name, p))
                self.counters.before_images += 1
        self.log.force()  # the write-ahead rule: the images are durable before the pages change

    @staticmethod
    def dirty_pages(f: PagedFile):
        """The pages of ``f`` that are changed in memory and not yet written (the database sets
        this to its buffer pool's ``dirty_pages``); none by default."""
        return ()

    def defers_drop(self, name: str) -> bool:
        """Whether dropping file ``name`` must wait for the commit (it holds committed pages);
        a file created in this transaction is deleted at once."""
        if name in self._created:
            self._created.discard(name)  # made and gone within the transaction: nothing to undo
            return False
        self._begin()
        self._drops.append(name)
        return True

    # -- commit, undo, recovery ----------------------------------------------------------------
    def commit(self, catalog: dict, force: bool = True) -> None:
        """The commit point: force a ``COMMIT`` record carrying the new catalog. The caller has
        forced the data pages already, and writes the catalog file next, then calls ``finish``.
        ``force=False``: a commit protocol that does not force a participant's commit record
        (presumed commit); a crash that loses it leaves the node prepared, and in doubt."""
        self._begin()
        body = json.dumps({"catalog": catalog, "drop": self._drops}).encode()
        self.log.append(COMMIT, body)
        if force:
            self.log.force()
        self.counters.commits += 1
        self.commit_logged = True

    def prepare(self, txn: str, catalog: dict, kind: str | None = None, force: bool = True,
                protocol: str | None = None, presume: str | None = None) -> None:
        """Phase one of two-phase commit (``minidb.txn.two_phase``), after the pages are forced:
        force a ``PREPARE`` record with the catalog the transaction would commit. From here the
        node can go either way, whatever happens to it, until the coordinator says which.
        Run by a commit protocol (``minidb.txn.commit.enginenet``), the record also names the
        protocol's record ``kind``, the ``protocol`` and its presumption (``presume``: what
        "the coordinator has no record" means, ``"commit"`` or ``"abort"``), and is forced
        only if the protocol says so."""
        self._begin()
        doc = {"txn": txn, "catalog": catalog, "drop": self._drops}
        extra = {"kind": kind, "protocol": protocol, "presume": presume}
        doc.update({k: v for k, v in extra.items() if v is not None})
        self.log.append(PREPARE, json.dumps(doc).encode())
        if force:
            self.log.force()

    def abort(self, txn: str, force: bool = False) -> None:
        """A commit protocol's ``ABORT`` record: recovery undoes the transaction without asking
        the coordinator (forced only where the protocol says: 2PC, presumed commit)."""
        self._begin()
        self.log.append(ABORT, json.dumps({"txn": txn}).encode())
        if force:
            self.log.force()

    def force(self) -> None:
        """Make every record appended so far durable (group commit's one force for many)."""
        self.log.force()

    def changed(self) -> bool:
        """Whether the open transaction changed anything that lasts: a committed page
        overwritten (its before-image is logged), a committed file grown, a file created and
        still there, or one to drop. Temporary files made and deleted again do not count."""
        return bool(self._imaged or self._grown or self._created or self._drops)

    def forget_if_untouched(self) -> None:
        """Empty the log if the open transaction changed nothing that lasts (a query whose
        temporary files are gone again), so a read-only session does not grow it."""
        if self._open and not self.changed():
            self.log.reset()
            self._reset_transaction()

    def release(self) -> None:
        """A read-only participant leaves the transaction (R*'s READ vote, Mohan, Lindsay and
        Obermarck 1986): it changed nothing, so there is nothing to commit or undo; the log is
        emptied as a commit would, with no record and no force."""
        if self.changed():
            raise MinidbError("a node that changed something cannot leave its transaction "
                              "as read-only: it must commit or undo it")
        if self._open:
            self.log.reset()
        self._reset_transaction()

    def finish(self) -> None:
        """After the catalog file is written: delete the dropped files, empty the log."""
        for name in self._drops:
            (self.directory / f"{name}.pages").unlink(missing_ok=True)
        self.log.reset()
        self._reset_transaction()

    def undo(self) -> None:
        """Undo the open transaction (the caller has closed its files and emptied its buffer
        pool); the catalog file is the last committed one. A prepared transaction is undone too:
        the coordinator decided to abort it."""
        self._recover(decide=lambda txn, presume: False)
        self.counters.rollbacks += 1

    def recover(self, decide: Callable[[str], bool] | None = None) -> str | None:
        """Bring the directory to its last committed state after a crash, before anything else
        opens it; say what was done (None when the log was empty). A transaction that was
        prepared but neither committed nor aborted is *in doubt*: ``decide(txn, presume)`` asks
        its coordinator whether it committed (``minidb.txn.two_phase.coordinator_decisions``);
        ``presume`` is the presumption of the protocol that prepared it (``"abort"`` for a record
        that names none: presumed abort, the engine's protocol before there was a choice)."""
        outcome = self._recover(decide)
        if outcome is not None:
            self.counters.recoveries += 1
        return outcome

    def _recover(self, decide: Callable[[str], bool] | None = None) -> str | None:
        from minidb.catalog import CATALOG_FILE, write_json_atomically

        records = list(self.log.records())
        self._reset_transaction()
        if not records:
            return None
        commit = next((r for r in records if r.type == COMMIT), None)
        prepared = next((r for r in records if r.type == PREPARE), None)
        aborted = any(r.type == ABORT for r in records)
        if commit is None and prepared is not None and not aborted:  # in doubt: ask
            doc = json.loads(prepared.payload)
            txn = doc["txn"]
            if decide is None:
                raise MinidbError(f"{self.directory} holds a prepared transaction ({txn}) whose "
                                  "outcome only its coordinator knows; open the parallel "
                                  "database it belongs to")
            if decide(txn, doc.get("presume", "abort")):
                commit = prepared
        if commit is not None:  # redo: the catalog and the drops of a committed transaction
            doc = json.loads(commit.payload)
            write_json_atomically(self.directory / CATALOG_FILE, doc["catalog"])
            for name in doc["drop"]:
                (self.directory / f"{name}.pages").unlink(missing_ok=True)
            self.log.reset()
            return "redone: a committed statement's catalog was written again"
        restored = self._write_back_images(records)
        created = [r.payload.decode() for r in records if r.type == CREATE]
        lengths = self._catalog_lengths()
        for name in created:
            if name not in lengths:
                (self.directory / f"{name}.pages").unlink(missing_ok=True)
        self._cut_to_catalog_lengths(lengths)
        self.log.reset()
        return f"undone: an unfinished statement ({restored} pages written back, " \
               f"{len(created)} new files removed)"

    def _write_back_images(self, records) -> int:
        """Write every before-image back (the oldest last: it is the committed page), fsync."""
        fds: dict[str, int] = {}
        try:
            for r in reversed(records):
                if r.type != BEFORE:
                    continue
                length, page_no = _BEFORE.unpack_from(r.payload)
                name = r.payload[_BEFORE.size : _BEFORE.size + length].decode()
                image = r.payload[_BEFORE.size + length :]
                path = self.directory / f"{name}.pages"
                if name not in fds:
                    if not path.exists():
                        continue
                    fds[name] = os.open(path, os.O_RDWR)
                os.pwrite(fds[name], image, page_no * len(image))
                self.counters.pages_restored += 1
            for fd in fds.values():
                os.fsync(fd)
        finally:
            for fd in fds.values():
                os.close(fd)
        return sum(1 for r in records if r.type == BEFORE)

    def _catalog_lengths(self) -> dict[str, int]:
        """Bytes of every file the committed catalog names (page count x page size)."""
        from minidb.catalog import CATALOG_FILE

        try:
            doc = json.loads((self.directory / CATALOG_FILE).read_text())
        except (OSError, ValueError):
            return {}
        page_size = doc.get("page_size") if isinstance(doc, dict) else None
        if not isinstance(page_size, int):
            return {}
        lengths: dict[str, int] = {}

        def walk(x) -> None:
            if isinstance(x, dict):
                if isinstance(x.get("file"), str) and isinstance(x.get("pages"), int):
                    lengths[x["file"]] = x["pages"] * page_size
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)

        walk(doc.get("tables"))
        return lengths

    def _cut_to_catalog_lengths(self, lengths: dict[str, int]) -> None:
        """Pages past a file's committed length were appended by the undone transaction."""
        for name, length in lengths.items():
            path = self.directory / f"{name}.pages"
            if path.exists() and path.stat().st_size > length:
                fd = os.open(path, os.O_RDWR)
                try:
                    os.ftruncate(fd, length)
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def close(self) -> None:
        self.log.close()
