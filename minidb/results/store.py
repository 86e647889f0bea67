"""The results store: every run of an experiment and the rows it produced, in one DuckDB file.

An experiment (ARCHITECTURE.md, "Experiments and results") produces tidy *rows*: one number each,
named by paper, experiment, the table or figure it reproduces, a row and a column slug, a metric,
a unit and the clock that measured it (``modeled`` or ``wall``). The store keeps them beside the
run that made them and beside the papers' own numbers (``minidb.results.reference``), so that any
run can be compared with the paper cell by cell, in SQL.

The life of a run
-----------------
``begin_run`` writes a ``runs`` line with status ``running``: what ran, with which parameters,
on which backend, profile, scale and node counts, from which version and git revision of minidb,
on which host. ``finish_run`` inserts every row and flips the status to ``ok`` in *one*
transaction; ``fail_run`` flips it to ``failed`` with a one-line error and keeps no rows.
``record_run`` wraps a block of code in the three. Readers look at rows only through the view
``complete_rows`` (rows of ``ok`` runs), so a run that failed, or a process killed between begin
and finish, never shows partial rows as results.

A process killed between begin and finish (``kill -9``, a crash, a power cut) cannot mark its run
failed. So ``begin_run`` also records *which process* runs it: its pid, the time the operating
system started it (a pid is reused, a pid with its start time is not), and the machine, boot
and pid namespace the pid belongs to. Opening the store and listing runs mark a ``running`` run
``interrupted`` when its process is gone; a run of another machine (or boot, or container) is
left alone, since its process cannot be seen from here.

Which run is "latest"
---------------------
For each experiment, the latest run is the ``ok`` run that *began* last (the store numbers runs
in the order ``begin_run`` was called, ``runs.seq``). Its rows are the experiment's current
results (view ``latest_rows``): ``rows()`` returns them by default and ``compare()`` compares
them with the papers. Older ``ok`` runs stay in the file and can be read with ``latest=False``
or by run id. The rule ignores parameters on purpose: rerunning an experiment at another scale
replaces what the explorer shows, which is what one expects after typing the command.
``minidb report`` does not use this rule: it compares the runs made with each paper's own
configuration (``minidb.experiments.reproduce.paper_runs``, through ``compare(run_ids=...)``), so
an exploratory run does not change it.

Many processes, one file
------------------------
DuckDB lets only one process hold a database file open for writing, and refuses readers while it
does. Several processes may use the store at once (two ``minidb run``, the explorer while a run
finishes), so the store never keeps a connection: every call takes a cross-process file lock
(``<path>.lock``), opens the file, does its work in a transaction, closes it and releases the
lock. A call that waits longer than ``timeout`` seconds for the lock fails with
``StoreBusyError``. Each call costs a few tens of milliseconds; results are written once per run,
so that is cheap enough.

Tables
------
``runs``, ``rows`` and ``reference`` (the reference cells, reloaded whenever the CSVs' checksum
changes), ``meta`` (schema version, checksum of the loaded reference files); views
``complete_rows``, ``latest_runs``, ``latest_rows``. ``parameters`` columns hold JSON text with
sorted keys (DuckDB's JSON functions read it: ``parameters->>'scale'``); times are UTC.

The lock file sits beside the store's *real* path (symlinks resolved), so a store reached
through a symlink and by its own name is one store with one lock.

Simplifications (on purpose): one exclusive lock for readers and writers (no shared read lock);
one schema migration only (version 1, which did not record processes, is upgraded in place; any
other version is refused); the reference cells are copied into every store file rather than
attached.
"""

from __future__ import annotations

import contextlib
import json
import numbers
import os
import re
import secrets
import socket
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import filelock
import platformdirs
import pyarrow as pa

from minidb.errors import MinidbError
from minidb.results.reference import (
    MissingReferenceError,
    reference_checksum,
    reference_dir,
    snapshot_reference,
)

STORE_ENV = "MINIDB_RESULTS"
"""Environment variable naming the results file (overrides the per-user cache location)."""

DEFAULT_TIMEOUT_S = 60.0
"""How long a call waits for another process to release the store before giving up."""

SCHEMA_VERSION = "2"
"""Layout of the tables below; a version-1 file is upgraded, another version is refused."""

RUN_STATUSES: tuple[str, ...] = ("running", "ok", "failed", "interrupted")
CLOCKS: tuple[str, ...] = ("modeled", "wall")

ROW_KEYS: tuple[str, ...] = (
    "paper", "experiment", "reference", "row", "column", "parameters", "metric", "value", "unit",
    "clock",
)
"""Keys of a result row as an experiment produces it (the store adds ``run_id``)."""

_ROW_REQUIRED = ("reference", "row", "column", "metric", "value", "unit", "clock")
_ROW_NONEMPTY = ("row", "column", "metric")

RUN_COLUMNS: tuple[str, ...] = (
    "run_id", "experiment", "paper", "status", "error", "parameters", "minidb_version",
    "git_revision", "backend", "profile", "scale", "nodes", "started_at", "duration_s", "hostname",
    "pid",
)
"""Keys of the dicts ``runs()`` returns."""

_RUNS_TABLE = """CREATE TABLE {name} (
        run_id         VARCHAR PRIMARY KEY,
        seq            BIGINT NOT NULL,          -- order in which the runs began
        experiment     VARCHAR NOT NULL,
        paper          VARCHAR NOT NULL,
        status         VARCHAR NOT NULL
                       CHECK (status IN ('running', 'ok', 'failed', 'interrupted')),
        error          VARCHAR,                  -- one line, for failed runs
        parameters     VARCHAR NOT NULL,         -- JSON object, sorted keys
        minidb_version VARCHAR,
        git_revision   VARCHAR,                  -- NULL outside a git checkout
        backend        VARCHAR,
        profile        VARCHAR,
        scale          DOUBLE,
        nodes          INTEGER[],                -- the node counts the run used
        started_at     TIMESTAMP NOT NULL,       -- UTC
        duration_s     DOUBLE,                   -- NULL while running
        hostname       VARCHAR,
        pid            INTEGER,                  -- the process that runs it
        process_start  VARCHAR,                  -- when the OS started it (a reused pid differs)
        pid_space      VARCHAR)                  -- machine, boot and pid namespace of the pid"""

_VIEWS: tuple[str, ...] = (
    """CREATE VIEW complete_rows AS
        SELECT r.* FROM rows AS r JOIN runs AS u ON r.run_id = u.run_id WHERE u.status = 'ok'""",
    """CREATE VIEW latest_runs AS
        SELECT * FROM runs WHERE status = 'ok'
        QUALIFY row_number() OVER (PARTITION BY experiment ORDER BY seq DESC) = 1""",
    """CREATE VIEW latest_rows AS
        SELECT r.* FROM rows AS r JOIN latest_runs AS u ON r.run_id = u.run_id""",
)

_SCHEMA: tuple[str, ...] = (
    "CREATE TABLE meta (key VARCHAR NOT NULL, value VARCHAR)",
    "CREATE SEQUENCE run_seq START 1",
    _RUNS_TABLE.format(name="runs"),
    """CREATE TABLE rows (
        run_id     VARCHAR NOT NULL,
        paper      VARCHAR NOT NULL,
        experiment VARCHAR NOT NULL,
        reference  VARCHAR NOT NULL,             -- '' when the row reproduces no published cell
        "row"      VARCHAR NOT NULL,
        "column"   VARCHAR NOT NULL,
        parameters VARCHAR NOT NULL,             -- JSON object, sorted keys
        metric     VARCHAR NOT NULL,
        value      DOUBLE NOT NULL,
        unit       VARCHAR NOT NULL,
        clock      VARCHAR NOT NULL CHECK (clock IN ('modeled', 'wall')),
        pos        INTEGER NOT NULL)             -- order of the row within its run""",
    """CREATE TABLE reference (
        paper      VARCHAR NOT NULL,
        reference  VARCHAR NOT NULL,
        "row"      VARCHAR NOT NULL,
        "column"   VARCHAR NOT NULL,
        metric     VARCHAR NOT NULL,
        value      DOUBLE,                       -- NULL for unreadable and shape cells
        unit       VARCHAR,
        status     VARCHAR NOT NULL,
        source     VARCHAR,
        note       VARCHAR,
        file       VARCHAR,                      -- the CSV file and line the cell came from
        line       INTEGER)""",
    *_VIEWS,
)

_COMPARE_SQL = """
WITH ref AS (SELECT * FROM reference {ref_filter}),
     rep AS (SELECT * FROM {rep_source} WHERE reference <> '' {rep_filter}),
     joined AS (
        SELECT coalesce(f.paper, p.paper)         AS paper,
               coalesce(f.reference, p.reference) AS reference,
               coalesce(f."row", p."row")         AS "row",
               coalesce(f."column", p."column")   AS "column",
               coalesce(f.metric, p.metric)       AS metric,
               f.status                           AS status,
               p.value                            AS reproduced,
               f.value                            AS published,
               CASE WHEN f.value <> 0 THEN p.value / f.value END AS ratio,
               p.unit AS reproduced_unit, f.unit AS published_unit, p.clock, p.experiment,
               p.run_id, p.parameters, f.source, f.note
        FROM ref AS f {join} JOIN rep AS p
          ON f.paper = p.paper AND f.reference = p.reference AND f."row" = p."row"
         AND f."column" = p."column" AND f.metric = p.metric)
SELECT paper, reference, "row", "column", metric, status, reproduced, published, ratio,
       ratio BETWEEN 0.5 AND 2.0 AS within_2x, reproduced_unit, published_unit, clock,
       experiment, run_id, parameters, source, note
FROM joined
ORDER BY paper, reference, "row", "column", metric, clock NULLS FIRST
"""


class ResultsStoreError(MinidbError):
    """Base class of the results store's errors."""


class StoreLocationError(ResultsStoreError):
    """The store's file cannot be created or opened where it was asked to be."""


class StoreBusyError(ResultsStoreError):
    """Another process held the store longer than the timeout."""


class StoreCorruptError(ResultsStoreError):
    """The store's file is not a readable minidb results database, or it is damaged."""


class RunStateError(ResultsStoreError):
    """A run id is unknown, or the run is not in a state that allows the call."""


class ResultsDataError(ResultsStoreError):
    """A run's parameters or a result row do not fit the data model; the message says which."""


@dataclass
class RunRecord:
    """What ``ResultsStore.record_run`` hands to its block: the run's id and the rows to store."""

    run_id: str
    rows: list[Mapping[str, Any]] = field(default_factory=list)

    def add(self, row: Mapping[str, Any]) -> None:
        """Keep one result row; it is stored when the block ends without an exception."""
        self.rows.append(row)

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Keep several result rows."""
        self.rows.extend(rows)


def default_store_path() -> Path:
    """Where results go by default: ``$MINIDB_RESULTS`` if set, else ``results.duckdb`` in the
    user's cache directory for minidb."""
    configured = os.environ.get(STORE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_cache_dir("minidb")) / "results.duckdb"


@cache
def git_revision() -> str | None:
    """The commit minidb runs from (``git rev-parse HEAD`` in its checkout), or None when minidb
    is not in a git checkout or git cannot be run."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    revision = done.stdout.strip()
    if done.returncode != 0 or not revision or any(c not in "0123456789abcdef" for c in revision):
        return None
    return revision


class ResultsStore:
    """The results of experiment runs and the papers' reference cells, in one DuckDB file.

    ``path`` defaults to ``default_store_path()``; its directory is created if missing. No
    connection is kept between calls (see the module docstring), so a store object is cheap and
    may be shared by threads or created in every process that needs it. ``reference_directory``
    overrides where the reference CSVs are read from (default ``reference_dir()``).

    Creating a store checks the file (``StoreCorruptError`` if it is not a results store) and
    reloads the reference cells if the CSVs changed (``ReferenceDataError`` if one is malformed;
    a missing reference directory is no error: the store keeps the cells it has).
    """

    def __init__(self, path: str | Path | None = None, *, timeout: float = DEFAULT_TIMEOUT_S,
                 reference_directory: str | Path | None = None) -> None:
        # the real path: a symlink to the store and the store itself must share one lock file
        self.path = Path(path if path is not None else default_store_path()).expanduser().resolve()
        self.timeout = float(timeout)
        self.reference_directory = (Path(reference_directory) if reference_directory is not None
                                    else None)
        self._prepare_directory()
        # Calls hold the lock for tens of milliseconds: poll for it often.
        self._lock = filelock.FileLock(str(self.path) + ".lock", poll_interval=0.01)
        self._schema_checked = False
        with self._connect() as con:
            self._sync_reference(con, force=False)
            self._mark_interrupted(con)

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.path)!r})"

    # ------------------------------------------------------------------ writing runs

    def begin_run(self, experiment: str, paper: str, parameters: Mapping[str, Any] | None = None,
                  backend: str | None = None, profile: str | None = None,
                  scale: float | None = None, nodes: int | Sequence[int] | None = None) -> str:
        """Record that a run starts (status ``running``) and return its new run id."""
        _check_text("experiment", experiment)
        _check_text("paper", paper)
        for what, text in (("backend", backend), ("profile", profile)):
            if text is not None:
                _check_text(what, text)
        params = _to_json(parameters, "the run's parameters")
        node_counts = _node_counts(nodes)
        if scale is not None:
            scale = _number("scale", scale)
        started = _utcnow()
        run_id = f"{started:%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"
        pid = os.getpid()
        with self._connect() as con:
            con.execute(
                "INSERT INTO runs (run_id, seq, experiment, paper, status, parameters, "
                "minidb_version, git_revision, backend, profile, scale, nodes, started_at, "
                "hostname, pid, process_start, pid_space) VALUES (?, nextval('run_seq'), ?, ?, "
                "'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, experiment, paper, params, _minidb_version(), git_revision(), backend,
                 profile, scale, node_counts, started, socket.gethostname(), pid,
                 process_start(pid), pid_space()])
        return run_id

    def finish_run(self, run_id: str, rows: Iterable[Mapping[str, Any]]) -> int:
        """Store every row of a running run and mark it ``ok``, in one transaction.

        Each row has the keys of ``ROW_KEYS``; ``paper`` and ``experiment`` may be left out (they
        are the run's) and ``parameters`` defaults to ``{}``. If a row does not fit, nothing is
        stored, ``ResultsDataError`` is raised and the run stays ``running`` (``record_run`` then
        marks it failed). Returns the number of rows stored.
        """
        rows = list(rows)
        with self._connect() as con:
            run = self._run_state(con, run_id)
            if run["status"] != "running":
                raise RunStateError(f"run {run_id} is already {run['status']}; only a running "
                                    f"run can be finished (begin a new run)")
            table = _rows_table(run_id, run["paper"], run["experiment"], rows)
            duration = (_utcnow() - run["started_at"]).total_seconds()
            with _transaction(con):
                con.register("_new_rows", table)
                con.execute("INSERT INTO rows BY NAME SELECT * FROM _new_rows")
                con.unregister("_new_rows")
                con.execute("UPDATE runs SET status = 'ok', error = NULL, duration_s = ? "
                            "WHERE run_id = ?", [duration, run_id])
        return table.num_rows

    def fail_run(self, run_id: str, error: str) -> None:
        """Mark a run ``failed`` with a one-line ``error``; none of its rows are kept.

        A run that is already failed gets the new error; a run that finished ``ok`` cannot fail.
        """
        message = _one_line(error) or "failed"
        with self._connect() as con:
            run = self._run_state(con, run_id)
            if run["status"] == "ok":
                raise RunStateError(f"run {run_id} already finished ok; its rows are kept "
                                    f"(begin a new run instead)")
            duration = (_utcnow() - run["started_at"]).total_seconds()
            with _transaction(con):
                con.execute("DELETE FROM rows WHERE run_id = ?", [run_id])
                con.execute("UPDATE runs SET status = 'failed', error = ?, duration_s = ? "
                            "WHERE run_id = ?", [message, duration, run_id])

    @contextlib.contextmanager
    def record_run(self, experiment: str, paper: str,
                   parameters: Mapping[str, Any] | None = None, backend: str | None = None,
                   profile: str | None = None, scale: float | None = None,
                   nodes: int | Sequence[int] | None = None) -> Iterator[RunRecord]:
        """Run a block as one recorded run::

            with store.record_run("gamma.selection", "gamma", {"rows": 100_000}) as run:
                run.extend(experiment(params, cluster))

        The rows kept in ``run`` are stored when the block ends. If the block (or storing its
        rows) raises, the run is marked failed with the exception as its one-line error and the
        exception propagates.
        """
        run_id = self.begin_run(experiment, paper, parameters, backend=backend, profile=profile,
                                scale=scale, nodes=nodes)
        record = RunRecord(run_id)
        try:
            yield record
            self.finish_run(run_id, record.rows)
        except BaseException as err:
            try:
                self.fail_run(run_id, f"{type(err).__name__}: {err}" if str(err)
                              else type(err).__name__)
            except Exception as inner:  # the original error matters more; say what happened
                err.add_note(f"run {run_id} could not be marked failed ({inner}); it stays "
                             f"'running' and shows no rows")
            raise

    # ------------------------------------------------------------------ reading

    def run(self, run_id: str) -> dict[str, Any]:
        """One run, as a dict with the keys of ``RUN_COLUMNS``."""
        with self._connect() as con:
            self._mark_interrupted(con)
            found = _fetch_dicts(con, f"SELECT {', '.join(RUN_COLUMNS)} FROM runs "
                                      f"WHERE run_id = ?", [run_id])
        if not found:
            raise RunStateError(f"no run {run_id!r} in results store {self.path}")
        return found[0]

    def runs(self, paper: str | None = None, experiment: str | None = None,
             status: str | None = None) -> list[dict[str, Any]]:
        """Runs (of one paper, experiment or status if given), oldest first."""
        if status is not None and status not in RUN_STATUSES:
            raise ResultsDataError(f"status {status!r} is not one of {', '.join(RUN_STATUSES)}")
        where, args = _where(paper=paper, experiment=experiment, status=status)
        with self._connect() as con:
            self._mark_interrupted(con)
            return _fetch_dicts(con, f"SELECT {', '.join(RUN_COLUMNS)} FROM runs {where} "
                                     f"ORDER BY seq", args)

    def rows(self, run_id: str | None = None, paper: str | None = None,
             experiment: str | None = None, latest: bool = True) -> list[dict[str, Any]]:
        """Result rows of ``ok`` runs, each with its ``run_id``, in the order they were produced.

        With ``run_id``: that run's rows (none unless it finished ok). Otherwise, with ``latest``
        (the default) the rows of each experiment's latest ok run (see the module docstring),
        else the rows of every ok run; ``paper`` and ``experiment`` narrow either.
        """
        source = "latest_rows" if latest and run_id is None else "complete_rows"
        where, args = _where(run_id=run_id, paper=paper, experiment=experiment, table="r")
        columns = ", ".join(f'r."{k}"' for k in ("run_id", *ROW_KEYS))
        with self._connect() as con:
            if run_id is not None:
                self._run_state(con, run_id)
            return _fetch_dicts(con, f"SELECT {columns} FROM {source} AS r JOIN runs AS u "
                                     f"ON r.run_id = u.run_id {where} ORDER BY u.seq, r.pos", args)

    def reference(self, paper: str | None = None) -> list[dict[str, Any]]:
        """The papers' reference cells (of one paper if given), reloaded first if the CSVs
        changed. Keys: the CSV's columns plus ``file`` and ``line``."""
        where, args = _where(paper=paper)
        with self._connect() as con:
            self._sync_reference(con, force=False)
            return _fetch_dicts(con, f"SELECT * FROM reference {where} ORDER BY paper, file, line",
                                args)

    def load_reference_tables(self) -> int:
        """Reload the reference cells from the CSVs now; returns how many cells were loaded.

        Unlike the automatic reload (which keeps the cells it has when the directory is
        missing), this raises ``MissingReferenceError`` when there is no directory to read.
        """
        with self._connect() as con:
            return self._sync_reference(con, force=True)

    def compare(self, paper: str | None = None, unmatched: bool = False,
                run_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Reproduced against published values, cell by cell.

        Joins each experiment's latest rows (or, with ``run_ids``, the rows of those ok runs)
        with the reference cells on ``(paper, reference, row, column, metric)``. Every reference
        cell appears at least once:
        with ``reproduced`` None when no latest row reproduces it (so a report can show what is
        missing), and once per clock when rows of both clocks do. ``ratio`` is reproduced /
        published (None without both, or when published is 0); ``within_2x`` says whether the
        ratio lies in [0.5, 2]. With ``unmatched``, rows that name a reference cell the CSVs do
        not have (a typo in a slug?) are added too, with ``status`` and ``published`` None.
        """
        ref_filter, args = _where(paper=paper)
        rep_filter = "AND paper = ?" if paper is not None else ""
        rep_args = list(args)
        rep_source = "latest_rows"
        if run_ids is not None:
            rep_source = "complete_rows"
            rep_filter += " AND list_contains(?::VARCHAR[], run_id)"
            rep_args.append(list(run_ids))
        query = _COMPARE_SQL.format(ref_filter=ref_filter, rep_filter=rep_filter,
                                    rep_source=rep_source,
                                    join="FULL OUTER" if unmatched else "LEFT")
        with self._connect() as con:
            self._sync_reference(con, force=False)
            return _fetch_dicts(con, query, args + rep_args)

    def sql(self, query: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None
            ) -> pa.Table:
        """Run one read-only SQL statement against the store and return its result as Arrow
        (for the explorer and ad-hoc questions; writes are refused)."""
        with self._connect(read_only=True) as con:
            return con.sql(query, params=parameters).to_arrow_table()

    # ------------------------------------------------------------------ connection

    def _prepare_directory(self) -> None:
        try:
            str(self.path).encode("utf-8")
        except UnicodeEncodeError:  # DuckDB fails on such a name with a C++ std::bad_cast
            raise StoreLocationError(
                f"results store {str(self.path)!r}: DuckDB opens only file names that are valid "
                f"UTF-8; choose another path or set {STORE_ENV}") from None
        if self.path.is_dir():
            raise StoreLocationError(f"results store {self.path} is a directory; give a file "
                                     f"name such as {self.path / 'results.duckdb'}")
        parent = self.path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreLocationError(
                f"cannot create directory {parent} for results store {self.path} "
                f"({err.strerror or err}); choose another path or set {STORE_ENV}") from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise StoreLocationError(f"directory {parent} of results store {self.path} is not "
                                     f"writable; choose another path or set {STORE_ENV}")
        try:  # access() can say yes where no file can be made (root, /proc): try the lock file
            with open(str(self.path) + ".lock", "a"):
                pass
        except OSError as err:
            raise StoreLocationError(
                f"cannot create files next to results store {self.path} "
                f"({err.strerror or err}); choose another path or set {STORE_ENV}") from None

    @contextlib.contextmanager
    def _connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold the store's lock and a fresh connection for one call; close and release after."""
        try:
            self._lock.acquire(timeout=self.timeout)
        except filelock.Timeout:
            raise StoreBusyError(
                f"results store {self.path} is busy: another process held it for more than "
                f"{self.timeout:g} s; wait for it to finish or raise the timeout") from None
        except OSError as err:
            raise StoreLocationError(f"cannot create lock file {self._lock.lock_file} for "
                                     f"results store {self.path} ({err})") from None
        try:
            fresh = not self.path.exists()
            try:
                con = duckdb.connect(str(self.path), read_only=read_only and not fresh)
            except duckdb.Error as err:
                raise self._open_error(err) from None
            try:
                if fresh or not self._schema_checked:
                    self._check_schema(con)
                yield con
            except duckdb.Error as err:
                if _looks_damaged(err):
                    raise self._open_error(err) from err
                raise
            finally:
                con.close()
        finally:
            self._lock.release()

    def _open_error(self, err: duckdb.Error) -> ResultsStoreError:
        """The one-line error for a DuckDB failure to open or read the store's file.

        DuckDB says all of these in free text, so the phrases are matched whole: a damaged
        "block" must not read as a "lock" held by another program.
        """
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        lowered = detail.lower()
        if _looks_damaged(err):
            return StoreCorruptError(f"damaged results store at {self.path}: {detail}; move it "
                                     f"away (its runs are lost) and a new store is created")
        if _LOCK_CONFLICT.search(detail):
            return StoreBusyError(f"results store {self.path} is busy: another program has it "
                                  f"open ({detail}); close that program and retry")
        if "permission denied" in lowered or "read-only file system" in lowered:
            return StoreLocationError(f"results store {self.path} cannot be opened for writing "
                                      f"({detail}); choose another path or set {STORE_ENV}")
        return StoreCorruptError(f"results store {self.path} is not a readable minidb results "
                                 f"database ({detail}); move it away or delete it, and a new "
                                 f"store is created")

    def _check_schema(self, con: duckdb.DuckDBPyConnection) -> None:
        """Create the tables in an empty file; refuse a file that holds something else."""
        tables = {name for (name,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()}
        if not tables:
            with _transaction(con):
                for statement in _SCHEMA:
                    con.execute(statement)
                _set_meta(con, "schema_version", SCHEMA_VERSION)
        elif "meta" not in tables or "runs" not in tables:
            raise StoreCorruptError(f"results store {self.path} is a DuckDB database but not a "
                                    f"minidb results store; choose another path")
        else:
            version = _get_meta(con, "schema_version")
            if version == "1":
                _upgrade_from_version_1(con)
                version = SCHEMA_VERSION
            if version != SCHEMA_VERSION:
                raise StoreCorruptError(
                    f"results store {self.path} has schema version {version}, this minidb reads "
                    f"version {SCHEMA_VERSION}; move the file away to start a new store")
        self._schema_checked = True

    def _sync_reference(self, con: duckdb.DuckDBPyConnection, force: bool) -> int:
        """Reload the reference table if the CSVs changed (or always, with ``force``)."""
        try:
            directory = self.reference_directory or reference_dir()
            if not force and reference_checksum(directory) == _get_meta(con, "reference_checksum"):
                return -1
            snapshot = snapshot_reference(directory)
        except MissingReferenceError:
            if force:
                raise
            return -1
        with _transaction(con):
            con.execute("DELETE FROM reference")
            con.register("_new_reference", snapshot.table)
            con.execute("INSERT INTO reference BY NAME SELECT * FROM _new_reference")
            con.unregister("_new_reference")
            _set_meta(con, "reference_checksum", snapshot.checksum)
            _set_meta(con, "reference_dir", str(snapshot.directory))
        return snapshot.table.num_rows

    def _mark_interrupted(self, con: duckdb.DuckDBPyConnection) -> None:
        """Mark ``interrupted`` every running run whose process is gone (see the module
        docstring); runs of processes this machine cannot see are left as they are."""
        running = con.execute("SELECT run_id, pid, process_start, pid_space, started_at FROM runs "
                              "WHERE status = 'running' AND pid_space = ?",
                              [pid_space()]).fetchall()
        now = _utcnow()
        for run_id, pid, started, _, started_at in running:
            if not process_gone(pid, started):
                continue
            con.execute("UPDATE runs SET status = 'interrupted', error = ?, duration_s = ? "
                        "WHERE run_id = ? AND status = 'running'",
                        [f"interrupted: process {pid} on {socket.gethostname()} ended before "
                         f"the run finished (killed or crashed); run it again",
                         (now - started_at).total_seconds(), run_id])

    def _run_state(self, con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
        found = _fetch_dicts(con, "SELECT paper, experiment, status, started_at FROM runs "
                                  "WHERE run_id = ?", [run_id])
        if not found:
            raise RunStateError(f"no run {run_id!r} in results store {self.path}")
        return found[0]


# ---------------------------------------------------------------------- processes


def pid_space() -> str:
    """Where this process's pid means something: the host name and, on Linux, the boot id and
    the pid namespace (containers on one machine have their own pids)."""
    parts = [socket.gethostname()]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
        parts.append(os.readlink("/proc/self/ns/pid"))
    return " ".join(parts)


def process_start(pid: int) -> str | None:
    """When process ``pid`` was started, as the kernel counts it (Linux ``/proc/PID/stat``,
    field 22), or None where that cannot be read. With the pid it names one process for good."""
    fields = _proc_stat(pid)
    return fields[19] if fields else None


def process_gone(pid: int | None, started: str | None) -> bool:
    """Whether the process recorded as (``pid``, ``started``) on this machine has ended: no such
    pid, a zombie waiting for its parent, or a newer process that got the same pid."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: it exists
        pass
    fields = _proc_stat(pid)
    if fields is None:
        return False  # no /proc here: the pid exists, so the process is taken to run
    return fields[0] == "Z" or (started is not None and fields[19] != started)


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


# ---------------------------------------------------------------------- helpers


def _upgrade_from_version_1(con: duckdb.DuckDBPyConnection) -> None:
    """Version 1 had no process columns and no ``interrupted`` status: rebuild ``runs`` (DuckDB
    cannot change a CHECK constraint in place), in one transaction."""
    with _transaction(con):
        for view in ("latest_rows", "latest_runs", "complete_rows"):
            con.execute(f"DROP VIEW IF EXISTS {view}")
        con.execute(_RUNS_TABLE.format(name="runs_v2"))
        con.execute("INSERT INTO runs_v2 BY NAME SELECT * FROM runs")
        con.execute("DROP TABLE runs")
        con.execute("ALTER TABLE runs_v2 RENAME TO runs")
        for view in _VIEWS:
            con.execute(view)
        _set_meta(con, "schema_version", SCHEMA_VERSION)


@contextlib.contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Everything in the block commits together, or nothing does."""
    con.begin()
    try:
        yield
    except BaseException:
        con.rollback()
        raise
    con.commit()


def _get_meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    found = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return found[0] if found else None


def _set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    con.execute("DELETE FROM meta WHERE key = ?", [key])
    con.execute("INSERT INTO meta VALUES (?, ?)", [key, value])


def _fetch_dicts(con: duckdb.DuckDBPyConnection, query: str,
                 args: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Run a query; one dict per result row, with ``parameters`` decoded from JSON."""
    cursor = con.execute(query, list(args))
    names = [d[0] for d in cursor.description]
    out = []
    for values in cursor.fetchall():
        record = dict(zip(names, values, strict=True))
        if isinstance(record.get("parameters"), str):
            record["parameters"] = json.loads(record["parameters"])
        out.append(record)
    return out


def _where(table: str | None = None, **filters: Any) -> tuple[str, list[Any]]:
    """``WHERE a = ? AND b = ?`` for the filters that are not None, and their values."""
    prefix = f"{table}." if table else ""
    used = {k: v for k, v in filters.items() if v is not None}
    if not used:
        return "", []
    return ("WHERE " + " AND ".join(f'{prefix}"{k}" = ?' for k in used), list(used.values()))


def _rows_table(run_id: str, paper: str, experiment: str,
                rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Check every row against the data model and gather them into an Arrow table."""
    columns: dict[str, list[Any]] = {k: [] for k in ("run_id", *ROW_KEYS, "pos")}
    for pos, row in enumerate(rows):
        where = f"row {pos} of run {run_id}"
        if not isinstance(row, Mapping):
            raise ResultsDataError(f"{where} is a {type(row).__name__}, not a dict")
        unknown = sorted(set(row) - set(ROW_KEYS))
        if unknown:
            raise ResultsDataError(f"{where} has unknown keys {', '.join(map(repr, unknown))}; "
                                   f"a row has {', '.join(ROW_KEYS)}")
        missing = [k for k in _ROW_REQUIRED if k not in row]
        if missing:
            raise ResultsDataError(f"{where} lacks {', '.join(missing)}")
        for key, expected in (("paper", paper), ("experiment", experiment)):
            given = row.get(key, expected)
            if given != expected:
                raise ResultsDataError(f"{where} says {key} {given!r}, but the run is {expected!r}")
        for key in ("reference", "row", "column", "metric", "unit"):
            if not isinstance(row[key], str):
                raise ResultsDataError(f"{where}: {key} must be a string, not "
                                       f"{type(row[key]).__name__}")
        for key in _ROW_NONEMPTY:
            if not row[key]:
                raise ResultsDataError(f"{where}: {key} is empty")
        if row["clock"] not in CLOCKS:
            raise ResultsDataError(f"{where}: clock {row['clock']!r} is not one of "
                                   f"{', '.join(CLOCKS)}")
        columns["run_id"].append(run_id)
        columns["paper"].append(paper)
        columns["experiment"].append(experiment)
        for key in ("reference", "row", "column", "metric", "unit", "clock"):
            columns[key].append(row[key])
        columns["value"].append(_number(f"{where}: value", row["value"]))
        columns["parameters"].append(_to_json(row.get("parameters"), f"parameters of {where}"))
        columns["pos"].append(pos)
    schema = pa.schema([(k, pa.int32() if k == "pos" else pa.float64() if k == "value"
                         else pa.string()) for k in columns])
    return pa.table(columns, schema=schema)


def _number(what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ResultsDataError(f"{what} must be a number, not {type(value).__name__} {value!r}")
    return float(value)


def _check_text(what: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ResultsDataError(f"{what} must be a non-empty string, not {value!r}")


def _node_counts(nodes: int | Sequence[int] | None) -> list[int] | None:
    if nodes is None:
        return None
    counts = [nodes] if isinstance(nodes, numbers.Integral) else list(nodes)
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ResultsDataError(f"nodes must be a positive node count or a list of them, "
                                   f"not {nodes!r}")
    return [int(n) for n in counts]


def _json_default(value: Any) -> Any:
    """JSON for the values experiments commonly put in parameters beyond JSON's own types."""
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} {value!r} cannot be written as JSON")


def _to_json(parameters: Mapping[str, Any] | None, what: str) -> str:
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, Mapping):
        raise ResultsDataError(f"{what} must be a dict, not {type(parameters).__name__}")
    try:
        return json.dumps(dict(parameters), sort_keys=True, separators=(",", ":"),
                          allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as err:
        raise ResultsDataError(f"{what} are not JSON-serializable: {err}") from None


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= 1000 else line[:997] + "..."


_LOCK_CONFLICT = re.compile(r"could not set lock on file|conflicting lock is held", re.IGNORECASE)
"""How DuckDB says that another process holds the file (and nothing else says)."""

_DAMAGE = re.compile(r"\bcorrupt|\bchecksum\b|database has been invalidated|"
                     r"failed to read block|block id|\bmagic bytes\b|could not read enough bytes",
                     re.IGNORECASE)
"""Phrases of DuckDB's errors for a file whose bytes are wrong."""


def _looks_damaged(err: duckdb.Error) -> bool:
    return bool(_DAMAGE.search(str(err)))


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _minidb_version() -> str:
    import minidb

    return minidb.__version__
