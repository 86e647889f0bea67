"""The front door: ``minidb.connect()`` gives a ``Database`` that loads tables and runs SQL.

A ``Database`` is one minidb node: a data directory with the node's page files (``Disk``), a
buffer pool over it (``BufferManager``), the catalog of its tables, and the SQL layer
(``minidb.sql``). Every statement returns a ``Result`` with its tuples (as Arrow), the iterator
tree that produced them, the wall time and the *counters* of the work done, which is what the
papers' measurements are rebuilt from (pages read sequentially or at random, pages written,
buffer hits and misses, tuples per operator). Gamma's own reasoning about access paths (Section
5.1: one random page read per tuple found through a non-clustered index, against every page of the
file for a scan) is in these units.

Counters are deltas over one statement. The buffer pool is *not* emptied between statements, so
a statement may find pages left by the previous one; ``clear_buffer_pool()`` writes back and
forgets every page, for cold measurements like the papers'.

Memory. Operators that need memory (sort, hash join, hash aggregate) get ``memory_pages``
pages each. By default that is the buffer pool size minus ``RESERVED_PAGES`` (8) pages, the
frames kept for the pages scans and index lookups fix while they run; never less than 3, the
smallest budget a sort or an aggregate accepts.

Data directories. With ``data_dir=None`` the pages live in a temporary directory that ``close()``
removes. A directory the user names is *kept*: after every statement that changes a table or the
catalog (CREATE / DROP / INSERT / UPDATE / DELETE / CREATE TABLE AS, ``create_index``) the dirty
pages are written and fsynced, then the catalog (``catalog.json``, see ``minidb.catalog``) is
replaced atomically. ``connect(data_dir=D)`` on a directory that holds a catalog opens that
database again: tables, indexes and statistics as they were after the last such statement.

Reopening never destroys data. A directory with page files but no ``catalog.json`` is refused
(naming the files): it is a database whose catalog was lost, not an empty one. Page files that no
catalog entry names (temporary files of a query cut off by a crash, or files a catalog restored
from a backup does not know) are moved aside into ``orphaned-pages/`` in the directory, with a
``MinidbWarning`` saying so; minidb never opens or removes them again. A table that cannot be
opened (a file missing or cut short, a damaged entry) does not stop the others: the database
opens, a ``MinidbWarning`` names the damaged table and why, ``damaged_tables()`` lists them, and a
statement that uses one fails with that reason until ``drop_table`` removes it.

Atomic statements. In a user's directory every change is a transaction of its own, made atomic
and durable by the undo log of ``minidb.txn.undo`` (``wal.log`` in the directory): the
before-image of every committed page a statement overwrites is forced to the log first; at the
end the pages are forced, a commit record carrying the new catalog is forced (the commit point),
then the catalog file is replaced. A statement that fails with an error is undone at once and the
database goes on; a process killed at any moment (``kill -9``) is recovered when the directory is
opened again (``recovery`` says what was done): it holds every committed statement and nothing of
an unfinished one. One database at a time may open a directory (``minidb.txn.dirlock``; a second
``connect`` is refused, naming the process that holds it). A temporary directory keeps no log:
nothing in it outlives the process.

This module is one node. ``connect(nodes=N)`` with N > 1, or ``backend="ray"``, returns the
shared-nothing engine of ``minidb.cluster`` instead, built from N such nodes.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from minidb.buffer.manager import BufferManager
from minidb.catalog import (
    CATALOG_FILE,
    CATALOG_VERSION,
    CLUSTER_FILE,
    Catalog,
    DamagedTable,
    Table,
    files_named,
    load_table,
    read_json,
    reserve_file_names,
    write_json_atomically,
)
from minidb.cluster.machine import MAX_NODES
from minidb.errors import MinidbError, MinidbWarning
from minidb.exec.iterator import ExecContext, Operator, check_rid_fetch
from minidb.exec.scan import RID
from minidb.sql.compound import inline_subqueries
from minidb.sql.distribute import is_distribute
from minidb.sql.execute import run
from minidb.sql.hints import check_join_choice, parse_hints, split_hint_comment, with_default_join
from minidb.sql.planner import Planner, explain_tree
from minidb.sql.translate import SelectStatement, translate
from minidb.storage.disk import Disk
from minidb.storage.schema import Schema
from minidb.storage.sources import DEFAULT_BATCH_ROWS, BatchSource, check_batch_rows, open_source
from minidb.txn.dirlock import DirectoryLock
from minidb.txn.locks import LockManager
from minidb.txn.transaction import Ghosts
from minidb.txn.txn_log import TransactionLog
from minidb.txn.undo import UndoJournal

if TYPE_CHECKING:
    from minidb.txn.transaction import Transaction

RESERVED_PAGES = 8
MIN_MEMORY_PAGES = 3
DEFAULT_PAGE_SIZE = 4096
CATALOG_FORMAT = "minidb-catalog"
#: how long ``close`` waits for a statement another thread is running (``_engine``)
CLOSE_WAIT_S = 10.0


class ResultRows:
    """The tuples of a statement's result, shared by ``Result`` and the parallel result:
    subclasses set ``_schema`` and ``_records``."""

    _schema: Schema
    _records: np.ndarray

    def to_arrow(self) -> pa.Table:
        """The result tuples as an Arrow table (the internal ``_rid`` column is never shown)."""
        schema, records = self._shown()
        return schema.arrow_from_records(records)

    def _shown(self) -> tuple[Schema, np.ndarray]:
        """The result's schema and records without the internal ``_rid`` column."""
        names = [n for n in self._schema.names if n != RID]
        if len(names) == len(self._schema.names):
            return self._schema, self._records
        schema = self._schema.project(names)
        return schema, schema.gather(self._records)

    def to_pylist(self) -> list[tuple]:
        table = self.to_arrow()
        return list(zip(*(table[c].to_pylist() for c in table.column_names), strict=True)) \
            if table.num_columns else []


class Result(ResultRows):
    """What a statement gave back: tuples, plan, wall time and counters."""

    def __init__(self, schema: Schema, records: np.ndarray, plan: Operator, counters: dict[str, int],
                 wall_s: float, rows: int, kind: str, notes: dict[int, str], statement: str,
                 access_paths: list[tuple[str, str]] | None = None):
        self._schema = schema
        self._records = records
        self.plan = plan
        self.counters = counters
        self.wall_s = wall_s
        self.rows = rows  # tuples returned (SELECT) or changed / stored (INSERT, UPDATE, ...)
        self.kind = kind
        self._notes = notes
        self.statement = statement
        self.access_paths = access_paths or []  # (table, chosen path) per table read

    @property
    def access_path(self) -> str:
        """The access path chosen for each table, e.g. "heap: non-clustered B+ tree index on unique2"."""
        return "; ".join(f"{table}: {path}" for table, path in self.access_paths)

    def explain(self) -> str:
        """The iterator tree, each operator with its tuple counts and the planner's reasons."""
        return explain_tree(self.plan, self._notes)

    def __repr__(self) -> str:
        return (f"Result({self.kind}, rows={self.rows}, wall_s={self.wall_s:.4f}, "
                f"pages_read={self.counters.get('pages_read', 0)})")


class Database:
    """One minidb node: disk, buffer pool, catalog and the SQL front end."""

    def __init__(self, page_size: int | None = None, buffer_pages: int = 1024, buffer_policy: str = "lru",
                 data_dir: str | os.PathLike | None = None, memory_pages: int | None = None,
                 rid_fetch: str = "sorted", join: str | None = None,
                 in_doubt: Callable[[str, str], bool] | None = None):
        check_rid_fetch(rid_fetch)
        self.join = check_join_choice(join)
        self._lock: DirectoryLock | None = None
        #: the undo records of transactions (``begin``), durable: ``minidb.txn.txn_log``. None
        #: without a data directory, and on a node of a parallel database (whose transactions
        #: are its coordinator's)
        self.txn_log: TransactionLog | None = None
        self.journal: UndoJournal | None = None
        #: what restart recovery did when this database was opened (None: nothing to do)
        self.recovery: str | None = None
        stored = None
        if data_dir is not None:
            check_data_dir(data_dir)
            if (Path(data_dir) / CLUSTER_FILE).exists():
                raise MinidbError(
                    f"{data_dir} holds a parallel database; open it with "
                    "minidb.connect(nodes=N, backend=..., data_dir=...) and its number of nodes"
                )
            Path(data_dir).mkdir(parents=True, exist_ok=True)
            self._lock = DirectoryLock(data_dir)
            try:
                self.journal = UndoJournal(data_dir)
                self.recovery = self.journal.recover(in_doubt)  # before the catalog is read
                stored = read_json(Path(data_dir) / CATALOG_FILE, "catalog", CATALOG_FORMAT)
                if stored is None:
                    refuse_pages_without_catalog(Path(data_dir))
            except BaseException:
                self._release_directory()
                raise
        try:
            self._open(page_size, stored, data_dir, buffer_pages, buffer_policy, memory_pages, rid_fetch)
            if data_dir is not None and in_doubt is None:
                self.txn_log = TransactionLog(data_dir)
                self._roll_back_losers()
        except BaseException:
            self._release_directory()
            raise

    def _open(self, page_size, stored, data_dir, buffer_pages, buffer_policy, memory_pages, rid_fetch):
        page_size = _page_size(page_size, stored, data_dir)
        self.disk = Disk(data_dir, page_size)
        try:
            self.buffer = BufferManager(self.disk, buffer_pages, policy=buffer_policy)
        except BaseException:
            self.disk.close()
            raise
        self.ctx = ExecContext(self.disk, self.buffer, rid_fetch=rid_fetch)
        try:
            self.memory_pages = memory_budget(memory_pages, self.buffer)
        except MinidbError:
            self.disk.close()
            raise
        self.catalog = Catalog()
        self._closed = False
        self.persistent = data_dir is not None  # a user's directory: keep a catalog in it
        self._save_lock = threading.Lock()
        #: one statement at a time runs in the engine (transactions of several threads take turns
        #: per statement; their locks, in ``locks``, span statements: ``minidb.txn.transaction``)
        self._engine = threading.RLock()
        self.locks = LockManager("node0")
        #: keys of rows deleted by live transactions (``minidb.txn.transaction.Ghosts``)
        self.ghosts = Ghosts()
        #: commit at the end of every change; False on a node of a parallel database, whose
        #: coordinator commits its statements with two-phase commit (``prepare`` / ``commit``)
        self.autocommit = True
        self.disk.journal = self.journal
        if self.journal is not None:  # before-images of the pages about to be written go first
            self.journal.dirty_pages = self.buffer.dirty_pages
        try:
            if stored is not None:
                self._reopen(stored)
            elif self.persistent:
                self.checkpoint()  # mark the directory as a minidb database from the start
        except BaseException:
            self.disk.close()
            raise

    def _roll_back_losers(self) -> None:
        """Restart recovery of transactions: undo those that had not committed."""
        from minidb.txn.transaction import roll_back_losers, undo_write

        said = roll_back_losers(self.txn_log, lambda u: undo_write(self, u), self.catalog)
        if said is not None:
            self.recovery = said if self.recovery is None else f"{self.recovery}; {said}"

    def _release_directory(self) -> None:
        """Close the logs and give up the directory lock (the database is closed or never opened)."""
        if self.txn_log is not None:
            self.txn_log.close()
        if self.journal is not None:
            self.journal.close()
        if self._lock is not None:
            self._lock.release()

    @contextmanager
    def _statement(self):
        """A change: committed at its end (``checkpoint``); in a user's directory, undone if it
        fails (``minidb.txn.undo``), so a statement happens whole or not at all."""
        try:
            yield
        except BaseException:
            if self.persistent:
                self._roll_back()
            raise
        self.finish_change()

    def finish_change(self) -> None:
        """The end of a change: commit it, or (``autocommit`` off) only write its pages back and
        leave the commit to the coordinator."""
        if self.autocommit:
            self.checkpoint()
        else:
            self.buffer.flush()

    # -- two-phase commit, the participant's half (minidb.txn.two_phase) ------------------------
    def prepare(self, txn: str, kind: str | None = None, force: bool = True,
                protocol: str | None = None, presume: str | None = None) -> None:
        """Vote yes for ``txn``: force the pages, then a prepare record with the catalog (run by
        a commit protocol: the record's ``kind``, whether it is forced, the ``protocol`` and its
        presumption; ``minidb.txn.undo.UndoJournal.prepare``)."""
        self._check_open()
        self.buffer.flush()
        if self.persistent:
            with self._save_lock:
                self.disk.sync()
                self.journal.prepare(txn, self._catalog_doc(), kind, force, protocol, presume)

    def force_pages(self) -> None:
        """Write back and force every page of the open transaction (a participant's vote)."""
        self._check_open()
        self.buffer.flush()
        if self.persistent:
            self.disk.sync()

    def changed(self) -> bool:
        """Whether the open transaction changed anything on this database: a page or file
        (``UndoJournal.changed``; the dirty pages are written back first) or the catalog. False
        makes a participant read-only under R*'s presumed abort (``minidb.txn.commit``)."""
        self._check_open()
        self.buffer.flush()
        if not self.persistent:
            return True  # no journal to ask: assume it did
        stored = read_json(self.disk.path / CATALOG_FILE, "catalog", CATALOG_FORMAT)
        catalog_now = json.loads(json.dumps(self._catalog_doc()))
        return self.journal.changed() or catalog_now != stored

    def release(self) -> None:
        """Leave the open transaction, which changed nothing (``changed`` is False): nothing to
        commit or undo, nothing forced (R*'s read-only participant)."""
        if self.persistent:
            with self._save_lock:
                self.journal.release()

    def log_commit(self, force: bool) -> None:
        """A commit protocol logs this node's ``COMMIT`` record (forced or not, as it says);
        ``commit`` then finishes without logging another."""
        if self.persistent:
            with self._save_lock:
                self.journal.commit(self._catalog_doc(), force=force)

    def log_abort(self, txn: str, force: bool) -> None:
        """A commit protocol logs this node's ``ABORT`` record (forced or not, as it says)."""
        if self.persistent:
            self.journal.abort(txn, force=force)

    def force_log(self) -> None:
        """One force of the journal for every record appended so far (group commit)."""
        if self.persistent:
            self.journal.force()

    def commit(self, txn: str) -> None:
        """The coordinator decided to commit ``txn``: make it so (``checkpoint``; when the
        commit protocol logged the commit record already, only the catalog and the clean-up)."""
        if self.persistent and self.journal.commit_logged:
            self.buffer.flush()
            with self._save_lock:
                self.disk.sync()
                write_json_atomically(self.disk.path / CATALOG_FILE, self._catalog_doc())
                self.journal.finish()
            return
        self.checkpoint()

    def abort(self) -> None:
        """Undo everything since the last commit (the coordinator decided to abort)."""
        if self.persistent:
            self._roll_back()

    def _roll_back(self) -> None:
        """Undo everything since the last commit: forget the buffer pool and the open files, put
        the before-images back, and read the committed catalog again."""
        self.buffer.forget_all()
        self.disk.forget_files()
        self.journal.undo()
        stored = read_json(self.disk.path / CATALOG_FILE, "catalog", CATALOG_FORMAT)
        self.catalog.clear()
        if stored is not None:
            self._reopen(stored)

    # -- tables ---------------------------------------------------------------------------------
    def create_table(self, name: str, source: Any, organization: str = "heap", key: str | None = None,
                     schema: Schema | pa.Schema | None = None,
                     batch_rows: int = DEFAULT_BATCH_ROWS) -> Table:
        """Load a relation from an Arrow table, a Parquet file, a generator spec or batches.

        ``source``: a ``pyarrow.Table`` (or RecordBatch), the path of a Parquet file, a
        generator spec ``"wisconsin:10000"`` / ``"wisconsin:10000:seed"`` (see
        ``minidb.datagen``), or an iterable of record batches (e.g.
        ``minidb.datagen.generate_batches``). ``organization``: "heap", "clustered" (sorted on
        ``key`` with a B+ tree, Gamma) or "hash" (hashed on ``key``, Teradata). ``schema`` fixes
        the layout (e.g. char widths) instead of deriving it from the data.

        The load is a stream (``minidb.storage.sources``): ``batch_rows`` rows at a time are
        converted, summarized for the statistics and written, so a heap or clustered load holds
        a few batches, not the table; the table is the same for every batch size.
        """
        self._check_open()
        check_table_name(name)
        if self.catalog.has(name):
            raise MinidbError(f"table {name!r} already exists; drop it first or pick another name")
        check_batch_rows(batch_rows)
        src = open_source(source)
        layout = source_layout(src, schema)
        check_new_layout(layout)
        with self._statement():
            table = load_table(self.disk, self.buffer, name, layout, src.batches(batch_rows),
                               organization, key, src.num_rows)
            self.catalog.add(table)
        return table

    def create_index(self, table: str, column: str, clustered: bool = False) -> None:
        """Index ``column``: a non-clustered index, or (``clustered=True``) re-store the table in
        key order with a B+ tree on top (at most one clustered index per table)."""
        self._check_open()
        t = self.catalog.get(check_name_argument(table, "the table"))
        col = t.schema.column(check_name_argument(column, "the indexed column"), f"table {t.name!r}").name
        if clustered:
            if t.organization == "clustered":
                raise MinidbError(
                    f"table {t.name!r} is already clustered on {t.key!r}; a table has at most one "
                    "clustered index (create a non-clustered one instead)"
                )
            if t.organization == "hash":
                raise MinidbError(
                    f"table {t.name!r} is hash-organized on {t.key!r} (Teradata style); it cannot "
                    "also be clustered. Load it with organization='heap' to cluster it"
                )
            with self._statement():
                t.reorganize("clustered", col)
        else:
            with self._statement():
                t.create_index(col)

    def table(self, name: str) -> Table:
        self._check_open()
        return self.catalog.get(name)

    def tables(self) -> list[str]:
        return self.catalog.names()

    def damaged_tables(self) -> dict[str, str]:
        """Tables that could not be reopened, each with what is wrong with it."""
        return {d.name: d.reason for d in self.catalog.damaged()}

    def drop_table(self, name: str) -> None:
        self._check_open()
        damaged = self.catalog.remove_damaged(check_name_argument(name, "the table"))
        if damaged is not None:  # its files are minidb's own: page files its entry names
            present = set(self.disk.page_files())  # (only those: never a path outside the directory)
            for file in set(damaged.file_names()) & present:
                (self.disk.path / f"{file}.pages").unlink(missing_ok=True)
            self.checkpoint()
            return
        with self._statement():
            self.catalog.remove(name).drop()

    def clear_buffer_pool(self) -> None:
        """Write back every dirty page and empty the pool, so the next statement starts cold."""
        self.buffer.flush()
        files = {id(f): f for f in self.buffer.frame_file if f is not None}
        for f in files.values():
            self.buffer.discard(f)

    # -- SQL ------------------------------------------------------------------------------------
    def sql(self, text: str, hint: str | None = None) -> Result:
        """Run one SQL statement. ``hint`` (or a leading ``/*+ ... */`` comment) overrides the
        planner: "scan", "index", "clustered_index", "hash_join", "nested_loops"."""
        with self._engine:  # a transaction of another thread may be running a statement
            if isinstance(text, str):  # an UPDATE / DELETE runs its subqueries first
                text = inline_subqueries(text, self.catalog, lambda q: self._sql(q, None)._shown()[1])
            return self._sql(text, hint)

    def begin(self, access: str = "stable", lock_timeout: float | None = None) -> Transaction:
        """Start a transaction for this thread: ``access`` is NonStop SQL's "browse", "stable"
        (the default) or "repeatable"; a lock wait longer than ``lock_timeout`` seconds (10 by
        default) aborts it. See ``minidb.txn.transaction``; locks are in ``self.locks``."""
        from minidb.txn.transaction import Transaction

        self._check_open()
        return Transaction(self, access, lock_timeout)

    def _sql(self, text: str, hint: str | None) -> Result:
        self._check_open()
        if not isinstance(text, str):
            raise MinidbError(f"sql() takes the statement as a string, not {type(text).__name__}")
        body, comment = split_hint_comment(text)
        if is_distribute(body):
            raise MinidbError("DISTRIBUTE places a table's fragments on the nodes of the parallel "
                              "engine; this is a single-node database. Open one with "
                              "minidb.connect(nodes=N) (N > 1) to use it")
        hints = with_default_join(parse_hints(hint, comment), self.join)
        statement = translate(body, self.catalog)
        planner = Planner(self.ctx, self.memory_pages, hints)
        io_before = self.disk.io.snapshot()
        buf_before = self.buffer.counters.snapshot()
        start = time.perf_counter()
        if isinstance(statement, SelectStatement):
            outcome = run(self, statement, planner)
            if self.journal is not None:
                self.journal.forget_if_untouched()
        else:
            with self._statement():  # the change is on disk, then committed
                outcome = run(self, statement, planner)
        wall = time.perf_counter() - start
        counters = _counters(self.disk.io.minus(io_before), self.buffer.counters.minus(buf_before),
                             outcome.plan)
        paths = [(table, p.label + (f" on {p.column}" if p.column else ""))
                 for table, p in planner.paths]
        return Result(outcome.schema, outcome.records, outcome.plan, counters, wall, outcome.rows,
                      outcome.kind, planner.notes, text, paths)

    # -- persistence ----------------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Write every dirty page back; in a user's data directory also fsync the files written
        and then replace the catalog atomically, so the database reopens as it is now."""
        self.buffer.flush()
        if not self.persistent:
            return
        with self._save_lock:
            self.disk.sync()  # FORCE: every page of the change is on disk before the commit
            doc = self._catalog_doc()
            self.journal.commit(doc)  # the commit point
            write_json_atomically(self.disk.path / CATALOG_FILE, doc)
            self.journal.finish()

    def _catalog_doc(self) -> dict:
        return {"format": CATALOG_FORMAT, "version": CATALOG_VERSION,
                "page_size": self.disk.page_size, "tables": self.catalog.entries()}

    def _reopen(self, doc: dict) -> None:
        """Rebuild the catalog from ``doc``: a table that cannot be opened is kept as damaged,
        page files no table names are moved aside; both are reported as a ``MinidbWarning``."""
        tables = doc.get("tables")
        if not isinstance(tables, list):
            raise MinidbError(f"{self.disk.path / CATALOG_FILE} lists no tables; the file is damaged")
        keep: set[str] = set()
        for entry in tables:
            if not isinstance(entry, dict):
                raise MinidbError(f"{self.disk.path / CATALOG_FILE}: a table entry is damaged")
            keep.update(files_named(entry))  # before anything is rebuilt under a new name
        reserve_file_names(keep)
        rebuilt = False
        for entry in tables:
            try:
                table = Table.reopen(self.disk, self.buffer, entry)
            except MinidbError as e:
                self.catalog.add_damaged(DamagedTable(str(entry.get("name", "?")), entry, str(e)))
                continue
            rebuilt |= any(ix.get("file") not in table.file_names()
                           for ix in entry.get("indexes") or [])
            self.catalog.add(table)
            keep.update(table.file_names())
        self._move_orphans_aside(keep)
        for tmp in self.disk.path.glob(f"{CATALOG_FILE}.tmp-*"):  # a catalog write cut off
            tmp.unlink(missing_ok=True)
        for damaged in self.catalog.damaged():
            warnings.warn(str(damaged.error()), MinidbWarning, stacklevel=4)
        if rebuilt:
            self.checkpoint()

    def _move_orphans_aside(self, keep: set[str]) -> None:
        """Move page files no catalog entry names into ``orphaned-pages/`` and say so."""
        orphans = [name for name in self.disk.page_files() if name not in keep]
        if not orphans:
            return
        aside, n = self.disk.path / ORPHANS_DIR, 1
        while aside.exists() and not aside.is_dir():  # a file of the user's by that name: keep it
            aside, n = self.disk.path / f"{ORPHANS_DIR}.{n}", n + 1
        aside.mkdir(exist_ok=True)
        for name in orphans:
            os.replace(self.disk.path / f"{name}.pages", _free_name(aside, f"{name}.pages"))
        shown = ", ".join(f"{n}.pages" for n in orphans[:5]) + (", ..." if len(orphans) > 5 else "")
        warnings.warn(f"{len(orphans)} page file(s) in {self.disk.path} that the catalog does not "
                      f"name ({shown}) were moved to {aside}; delete them if you do not need them",
                      MinidbWarning, stacklevel=5)

    # -- life cycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the database. In a user's data directory the tables stay on disk (saved as by
        ``checkpoint``) for ``connect(data_dir=...)`` to reopen; a temporary directory is removed
        with everything in it."""
        if self._closed:
            return
        # A transaction of another thread may be running a statement: let it finish first, or
        # it would find its pages removed under it (a FileNotFoundError from the disk layer);
        # its next statement then gets "this database is closed". Bounded: a stuck statement
        # must not make close hang.
        held = self._engine.acquire(timeout=CLOSE_WAIT_S)
        try:
            self._close()
        finally:
            if held:
                self._engine.release()

    def _close(self) -> None:
        self._closed = True
        if self.persistent:
            try:
                self.checkpoint()
            finally:
                self.disk.close()
                self._release_directory()
            return
        for t in list(self.catalog):
            try:
                t.drop()
            except MinidbError:
                pass
        self.disk.close()

    def _check_open(self) -> None:
        if self._closed:
            raise MinidbError("this database is closed; call minidb.connect() again")

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Database({len(self.catalog)} tables, page_size={self.disk.page_size}, "
                f"buffer_pages={self.buffer.num_frames}, memory_pages={self.memory_pages})")


def check_table_name(name: Any) -> None:
    """A table name must be an identifier that SQL reads as a table name without quotes."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise MinidbError(f"table name {name!r} must be an identifier (letters, digits, _)")
    from minidb.sql.translate import is_plain_table_name

    if not is_plain_table_name(name):
        raise MinidbError(f"table name {name!r} is an SQL keyword, so queries could not name it; "
                          "choose another name")


def memory_budget(memory_pages: int | None, buffer: BufferManager) -> int:
    """The pages each memory-hungry operator may use: ``memory_pages`` checked, or by default
    the buffer pool's frames less ``RESERVED_PAGES`` (never below ``MIN_MEMORY_PAGES``)."""
    if memory_pages is None:
        memory_pages = max(MIN_MEMORY_PAGES, buffer.num_frames - RESERVED_PAGES)
    if isinstance(memory_pages, bool) or not isinstance(memory_pages, int | np.integer) \
            or memory_pages < MIN_MEMORY_PAGES:
        raise MinidbError(
            f"memory_pages must be a whole number of at least {MIN_MEMORY_PAGES}, not {memory_pages!r}"
        )
    return int(memory_pages)


def check_new_layout(layout: Schema) -> None:
    """A stored relation may not have a column named like minidb's record ids."""
    if layout.has_column(RID):
        raise MinidbError(f"a column may not be called {RID!r}; minidb uses that name for record ids")


def check_name_argument(value: Any, what: str) -> str:
    """``value`` when it is a non-empty string; a one-line error naming ``what`` otherwise."""
    if not isinstance(value, str) or not value:
        raise MinidbError(f"{what} must be a name (a non-empty string), not {value!r}")
    return value


def check_data_dir(data_dir: Any) -> None:
    """``data_dir`` must be a path that is a directory or does not exist yet."""
    if not isinstance(data_dir, str | os.PathLike):
        raise MinidbError(f"data_dir must be a directory path, not {type(data_dir).__name__}")
    if not str(data_dir).strip():
        raise MinidbError("data_dir is empty; give a directory path (a new one is created), or "
                          "None for a temporary database")
    path = Path(data_dir)
    if path.exists() and not path.is_dir():
        raise MinidbError(f"data_dir {str(path)!r} is a file, not a directory; give a directory "
                          "(a new one is created)")


#: keyword arguments of ``connect`` that only the parallel engine takes
PARALLEL_OPTIONS = ("address", "disk_nodes", "diskless_nodes", "timeout", "packet_bytes",
                    "profile", "num_cpus", "bit_filters", "commit")


def connect(nodes: int = 1, backend: str = "inline", page_size: int | None = None, buffer_pages: int = 1024,
            buffer_policy: str = "lru", data_dir: str | os.PathLike | None = None,
            memory_pages: int | None = None, rid_fetch: str = "sorted", join: str | None = None,
            **parallel: Any):
    """Open a minidb database.

    One inline node (the default) gives a single-node ``Database``. ``nodes > 1`` or
    ``backend="ray"`` gives a shared-nothing ``minidb.cluster.ParallelDatabase`` whose nodes are
    objects in this process (``backend="inline"``) or Ray actors (``backend="ray"``); it also
    takes ``address``, ``disk_nodes``, ``diskless_nodes``, ``timeout``, ``packet_bytes``,
    ``profile``, ``num_cpus``, ``bit_filters`` (Gamma's bit-vector filters on every two-table
    inner equi-join, ``minidb.parallel.bitfilter``; the hint ``bit_filters`` turns them on for
    one statement) and ``commit`` (the registered commit protocol, ``minidb.plugins.names
    ("commit")``, that commits every statement over the nodes of a data directory; presumed
    abort by default: ``minidb.txn.commit.enginenet``); giving any of these makes even one node
    the parallel engine.
    ``timeout``: the seconds a phase may take before it is an error; by default 60 s stretched
    by the machine's load average per core (``minidb.cluster.machine.phase_timeout``).

    ``data_dir``: where the page files go (a temporary directory when None). A directory that
    already holds a minidb database is opened again, with every table it had; ``page_size``
    defaults to the stored one then (4096 bytes for a new database). ``rid_fetch`` says how a
    non-clustered index scan fetches its records (``minidb.exec.iterator.RID_FETCH``). ``join``:
    the join algorithm of every equi-join (a registered plug-in: ``minidb.plugins.names("join")``;
    None lets the planner choose between the in-memory hash join and nested loops); a hint in a
    statement overrides it.
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int | np.integer) or nodes < 1:
        raise MinidbError(f"nodes must be a positive whole number, not {nodes!r}")
    if nodes > MAX_NODES:
        raise MinidbError(f"nodes may be at most {MAX_NODES} (each node is a buffer pool and a "
                          f"worker of this machine or of the Ray cluster), not {nodes}")
    if backend not in ("inline", "ray"):
        raise MinidbError(f"backend must be 'inline' or 'ray', not {backend!r}")
    unknown = sorted(set(parallel) - set(PARALLEL_OPTIONS))
    if unknown:
        raise MinidbError(f"connect() has no option {unknown[0]!r}; its options are nodes, backend, "
                          "page_size, buffer_pages, buffer_policy, data_dir, memory_pages, "
                          f"rid_fetch, join and, for the parallel engine, {', '.join(PARALLEL_OPTIONS)}")
    if nodes > 1 or backend == "ray" or parallel:
        from minidb.cluster.coordinator import ParallelDatabase

        return ParallelDatabase(nodes=nodes, backend=backend, page_size=page_size,
                                buffer_pages=buffer_pages, buffer_policy=buffer_policy,
                                data_dir=data_dir, memory_pages=memory_pages,
                                rid_fetch=rid_fetch, join=join, **parallel)
    return Database(page_size=page_size, buffer_pages=buffer_pages, buffer_policy=buffer_policy,
                    data_dir=data_dir, memory_pages=memory_pages, rid_fetch=rid_fetch, join=join)


def _page_size(page_size: int | None, stored: dict | None, where) -> int:
    """The page size to use: the stored one when reopening (a different explicit one is an
    error), else the one asked for, else the default."""
    if stored is None:
        return DEFAULT_PAGE_SIZE if page_size is None else page_size
    saved = stored.get("page_size")
    if not isinstance(saved, int):
        raise MinidbError(f"the catalog in {where} has no page size; the file is damaged")
    if page_size is not None and page_size != saved:
        raise MinidbError(f"{where} holds a database with {saved}-byte pages, not {page_size}; "
                          f"leave page_size out (or give {saved}) to open it")
    return saved


#: the folder of a data directory where reopening puts page files no catalog entry names
ORPHANS_DIR = "orphaned-pages"


def refuse_pages_without_catalog(data_dir: Path) -> None:
    """A directory holding page files but no catalog is a database that lost its catalog:
    opening it as an empty one would let the next open treat every page file as an orphan."""
    pages = sorted(p.name for p in data_dir.glob("*.pages")) if data_dir.is_dir() else []
    if pages:
        shown = ", ".join(pages[:5]) + (f" and {len(pages) - 5} more" if len(pages) > 5 else "")
        raise MinidbError(f"{data_dir} holds page files ({shown}) but no {CATALOG_FILE}; restore "
                          f"the catalog, or move the page files away to start an empty database")


def _free_name(folder: Path, name: str) -> Path:
    """``folder / name``, or ``name`` with a number added if that is taken (nothing is replaced)."""
    path, n = folder / name, 1
    while path.exists():
        path, n = folder / f"{name}.{n}", n + 1
    return path



def source_layout(src: BatchSource, schema: Schema | pa.Schema | None) -> Schema:
    """The layout a load stores: ``schema`` as given, or derived from the source's data."""
    if schema is None:
        return src.layout()
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, pa.Schema):
        return src.layout_with(schema)
    raise MinidbError(f"schema must be a minidb Schema or a pyarrow Schema, not {type(schema).__name__}")

def _counters(io, buf, plan: Operator) -> dict[str, int]:
    """The flat counter dictionary of one statement."""
    c: dict[str, int] = {
        "pages_read": io.reads,
        "pages_read_seq": io.seq_reads,
        "pages_read_random": io.rand_reads,
        "pages_written": io.writes,
        "pages_written_seq": io.seq_writes,
        "pages_written_random": io.rand_writes,
        "buffer_hits": buf.hits,
        "buffer_misses": buf.misses,
        "buffer_reads": buf.reads,
        "buffer_writes": buf.writes,
        "buffer_lock_acquisitions": buf.lock_acquisitions,
    }
    for i, op in enumerate(plan.walk()):
        for key, value in (("tuples_in", op.stats.tuples_in), ("tuples_out", op.stats.tuples_out)):
            c[f"{key}.{op.kind}"] = c.get(f"{key}.{op.kind}", 0) + int(value)
        prefix = f"op{i}.{op.kind}"
        c[f"{prefix}.tuples_in"] = int(op.stats.tuples_in)
        c[f"{prefix}.tuples_out"] = int(op.stats.tuples_out)
        c[f"{prefix}.batches_out"] = int(op.stats.batches_out)
        for key, value in op.stats.extra.items():
            c[f"{prefix}.{key}"] = int(value)
    return c
