"""The coordinator: Gamma's scheduler and query manager over a set of minidb nodes.

This rebuilds the control side of Gamma's query execution (DeWitt et al. 1988, Section 2,
"Query Execution"). The host translates a query into operator trees; a scheduler starts the
operators on the nodes, and for each operator on each node three control messages are
exchanged: the scheduler's *start* message, the operator's *reply* identifying its process, and
the *completion* message when it is done. Operators that must not overlap run in separate
*phases*: a hash join first builds its tables from the inner relation everywhere, and only when
that phase has ended on every node is the outer relation scanned to probe them. Relations a
query stores (``CREATE TABLE ... AS SELECT``) are spread round-robin over the disk nodes,
Gamma's default for query results (Section 2.2). Distributed INGRES's ``DISTRIBUTE`` statement
(Stonebraker et al. 1983, §2; ``minidb.sql.distribute``) re-declusters a stored table by
predicates, moving only the tuples whose node changes.

The parts: ``minidb.cluster.planner`` decides what runs where (placement, build side,
aggregate split, phases) and builds the typed plan of ``minidb.cluster.plan``;
``minidb.cluster.scheduler`` runs the phases on the nodes and counts the control messages;
``minidb.cluster.catalog`` is Gamma's catalog manager: the description of every table (what
the SQL translator and the planner read), saved to and read from the cluster-wide catalog file;
``minidb.cluster.host`` is the execution context of the operators that finish a query at the
host. The host stores no relation: this module is the database object that ties the parts
together: tables, loading, statements, persistence.

Persistence. ``connect(nodes=N, data_dir=D)`` gives node i the directory D/node-i (its pages and
its own catalog, see ``minidb.database``) and keeps the coordinator's catalog in D/cluster.json:
the number of nodes, which are disk nodes, the page size, and per table its schema, tuple count,
statistics and partitioning (the partitioner's kind, columns and what it learned: boundaries,
the next node of round-robin). A statement that changes a table commits on every node or on
none: the registered commit protocol ``connect(commit=...)`` names (presumed abort by default)
runs with the nodes as its participants (``minidb.txn.two_phase``, ``minidb.txn.commit.enginenet``;
the decision is a record forced to ``wal.log`` in D that carries the new ``cluster.json``). A
statement that fails before the decision is undone on every node; a node that crashed while
prepared asks that log when it is opened again, and the protocol's presumption answers when the
log has forgotten the transaction. One process at a time may open D (``minidb.txn.dirlock``).
Opening D again starts the nodes on their directories and reads the tables' descriptions back
from ``cluster.json`` (``minidb.cluster.catalog``); the node count must be the same. The
coordinator's catalog decides which tables exist: a fragment no entry names is dropped, and a
table whose fragment is missing on a node is an error naming both. Simplified: without a data
directory there is no log, so a statement that fails part way is not undone; a user's own
partitioner class is saved with pickle and must be importable when the database is reopened;
with Ray on several machines, node i's files are wherever its actor runs, so D must be a path
that every machine shares (or the placement must be the same when reopening).
"""

from __future__ import annotations

import copy
import functools
import itertools
import os
import re
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from minidb.catalog import (
    CATALOG_FILE,
    CATALOG_VERSION,
    CLUSTER_FILE,
    StatsBuilder,
    _stats_of,
    read_json,
)
from minidb.cluster.catalog import (
    CLUSTER_FORMAT,
    ClusterCatalog,
    ClusterTable,
    partitioner_to_json,
    stored_roles,
    table_from_json,
    table_to_json,
)
from minidb.cluster.host import HostContext
from minidb.cluster.machine import MAX_NODES
from minidb.cluster.plan import (
    Phase,
)
from minidb.cluster.planner import ParallelPlanner, unsupported_in_parallel
from minidb.cluster.scheduler import model_phases
from minidb.cost.profiles import get_profile
from minidb.database import (
    DEFAULT_PAGE_SIZE,
    ResultRows,
    check_data_dir,
    check_name_argument,
    check_new_layout,
    check_table_name,
    source_layout,
)
from minidb.errors import MinidbError
from minidb.exec.iterator import check_rid_fetch
from minidb.exec.scan import RID
from minidb.parallel.partitioners import (
    Hash,
    Partitioner,
    PredicateFragments,
    Range,
    RangeUniform,
    RoundRobin,
    parse_partitioning,
)
from minidb.sql.compound import inline_subqueries
from minidb.sql.distribute import DistributeStatement, is_distribute, parse_distribute
from minidb.sql.hints import (
    check_join_choice,
    parse_hints,
    split_hint_comment,
    with_default_join,
)
from minidb.sql.translate import (
    CreateTableAsStatement,
    DeleteStatement,
    InsertStatement,
    SelectQuery,
    SelectStatement,
    UpdateStatement,
    translate,
)
from minidb.storage.schema import Schema, concat_records
from minidb.storage.sources import DEFAULT_BATCH_ROWS, BatchSource, check_batch_rows, open_source
from minidb.txn.commit.enginenet import CommitAborted, engine_protocol
from minidb.txn.dirlock import DirectoryLock
from minidb.txn.transaction import Ghosts
from minidb.txn.two_phase import CommitUnfinished, TwoPhaseCoordinator
from minidb.txn.txn_log import TransactionLog

BIT_FILTER_HINT = "bit_filters"  # the hint word that turns Gamma's bit-vector filters on
NO_PROPAGATION_HINT = "no_propagation"  # leave selections where written (the Teradata, §6.1)
PLACEMENTS = ("local", "remote", "allnodes")  # where a join runs: disk, diskless or all nodes
#: NonStop SQL's three parallel join strategies (Englert et al. 1989), as hint words
JOIN_STRATEGIES = ("co_located", "broadcast", "repartition")


class ParallelResult(ResultRows):
    """What a parallel statement gave back; the surface of ``minidb.Result`` plus the phases.

    ``phases`` is a list with one dict per phase, ``{node_id: counters}``; ``per_node`` sums
    them per node; ``counters`` is the flat total over nodes and phases (with the scheduler's
    ``control_messages``). ``modeled_s`` is where the cost model plugs in: the time the
    profile named by ``connect(profile=...)`` would have taken for these counters
    (``minidb.cost.modeled_time``), or None when no profile is set. ``phase_wall_s`` holds the
    real seconds each phase took on this machine (never priced; see ``data_moved``). ``plan``
    is the typed plan that ran: one ``minidb.cluster.plan.Phase`` per phase. A statement that
    changed a table in a data directory adds its commit protocol's work to ``counters``:
    ``commit.messages``, ``commit.forces`` (``commit.coordinator_forces`` +
    ``commit.participant_forces``), ``commit.log_records`` (and by role), ``commit.participants``,
    ``commit.read_only`` (nodes whose part changed nothing and voted READ: presumed abort, R*).
    """

    def __init__(self, schema: Schema, records: np.ndarray, kind: str, rows: int, wall_s: float,
                 phases: list[dict], phase_names: list[str], scheduler_messages: int,
                 plan_text: str, statement: str, modeled_s: float | None = None,
                 phase_wall_s: list[float] | None = None, plan: list[Phase] | None = None,
                 commit: dict | None = None):
        self._schema, self._records = schema, records
        self.kind, self.rows, self.wall_s, self.statement = kind, rows, wall_s, statement
        self.phases, self.phase_names = phases, phase_names
        self.phase_wall_s = list(phase_wall_s or [])
        self.scheduler_messages = scheduler_messages
        self._plan_text = plan_text
        self.plan = list(plan or [])
        self.modeled_s = modeled_s
        self.per_node: dict[int, dict] = {}
        for phase in phases:
            for node, c in phase.items():
                self.per_node[node] = _add(self.per_node.get(node, {}), c)
        total: dict = {}
        for c in self.per_node.values():
            total = _add(total, c)
        self.counters = _flatten(total)
        self.counters["control_messages"] = self.counters.get("control_messages", 0) + scheduler_messages
        self.counters["scheduler_messages"] = scheduler_messages
        self.counters["phases"] = len(phases)
        for k, v in (commit or {}).items():  # the commit protocol's work (minidb.txn.two_phase)
            self.counters[f"commit.{k}"] = v

    def explain(self, fragments: bool = False) -> str:
        """The phases as the scheduler ran them, one line per operator group; with
        ``fragments``, followed by every phase's typed plan as trees (``minidb.cluster.plan``)."""
        if not fragments:
            return self._plan_text
        return "\n".join([self._plan_text, "", "fragments:"] + [p.explain() for p in self.plan])

    def data_moved(self) -> list[dict]:
        """What each phase pushed through its split tables, and how fast, on this machine.

        One dict per phase: its ``name``, real ``wall_s``, the ``bytes`` its split tables
        routed (to other nodes, short-circuited to their own node, or to the host), the
        ``senders`` (nodes that routed any) and ``mb_s_per_node``: bytes / senders / wall
        seconds, in MB/s (10**6 bytes). This is the exchange throughput the speed benchmarks
        quote; it is measured, never priced (the modeled clock prices the packets instead).
        """
        out = []
        for i, phase in enumerate(self.phases):
            per_node = [sum(c.get(k, 0) for k in _ROUTED_BYTES) for c in phase.values()]
            routed, senders = sum(per_node), sum(1 for b in per_node if b)
            wall = self.phase_wall_s[i] if i < len(self.phase_wall_s) else float("nan")
            rate = routed / senders / wall / 1e6 if senders and wall > 0 else 0.0
            out.append({"name": self.phase_names[i], "wall_s": wall, "bytes": routed,
                        "senders": senders, "mb_s_per_node": rate})
        return out

    def modeled(self, profile, page_size: int, **options):
        """The full ``ModeledTime`` (per phase and node, with bottlenecks) of this statement on
        ``profile``; ``options`` as for ``minidb.cost.modeled_time`` (e.g. ``startup="serial"``)."""
        return model_phases(self.phases, self.scheduler_messages, profile, page_size, **options)

    def __repr__(self) -> str:
        return f"ParallelResult({self.kind}, rows={self.rows}, phases={len(self.phases)}, wall_s={self.wall_s:.4f})"


#: the counters of the bytes a split table routes (minidb.parallel.exchange.SplitTable)
_ROUTED_BYTES = ("bytes_sent_remote", "bytes_short_circuited", "bytes_to_host")


def _add(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict):
            out[k] = _add(out.get(k, {}), v)
        else:
            out[k] = out.get(k, 0) + v
    return out


def _flatten(c: dict) -> dict:
    out = {}
    for k, v in c.items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                out[f"{k}.{kk}"] = vv
        else:
            out[k] = v
    return out


def _serialized(method):
    """Run ``method`` under the database's statement mutex (see ``ParallelDatabase.sql``)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._engine:
            return method(self, *args, **kwargs)
    return run


class ParallelDatabase:
    """A shared-nothing minidb: ``num_nodes`` nodes (inline objects or Ray actors) and a host."""

    #: seconds between two runs of the scheduler's global deadlock detector while a transaction's
    #: lock request is in flight (``minidb.cluster.transaction``)
    deadlock_interval = 0.05

    def __init__(self, nodes: int = 2, backend: str = "inline", address: str | None = None,
                 disk_nodes: int | None = None, diskless_nodes: int | None = None,
                 page_size: int | None = None, buffer_pages: int = 1024, buffer_policy: str = "lru",
                 memory_pages: int | None = None, data_dir: str | os.PathLike | None = None,
                 timeout: float | None = None, packet_bytes: int = 2048, profile: str | None = None,
                 num_cpus: int | None = None, rid_fetch: str = "sorted", join: str | None = None,
                 bit_filters: bool = False, commit=None):
        check_rid_fetch(rid_fetch)
        protocol = engine_protocol(commit)  # an unknown name fails before anything starts
        self.join = check_join_choice(join)
        if not isinstance(bit_filters, bool):
            raise MinidbError(f"bit_filters must be True or False, not {bit_filters!r}")
        if isinstance(packet_bytes, bool) or not isinstance(packet_bytes, int | np.integer) \
                or packet_bytes < 1:
            raise MinidbError(f"packet_bytes must be a positive whole number of bytes (the "
                              f"network's packet; 2048 as in Gamma), not {packet_bytes!r}")
        self.bit_filters, self.packet_bytes = bit_filters, packet_bytes
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                    or not timeout > 0):
            raise MinidbError(f"timeout must be a positive number of seconds (or None: 60 s "
                              f"stretched by the machine's load), not {timeout!r}")
        if isinstance(nodes, bool) or not isinstance(nodes, int | np.integer) or nodes < 1:
            raise MinidbError(f"nodes must be a positive whole number, not {nodes!r}")
        if nodes > MAX_NODES:
            raise MinidbError(f"nodes may be at most {MAX_NODES} (each node is a buffer pool and a "
                              f"worker of this machine or of the Ray cluster), not {nodes}")
        if data_dir is not None:
            check_data_dir(data_dir)
        self.data_dir = None if data_dir is None else Path(data_dir)
        self._lock: DirectoryLock | None = None
        self.two_phase: TwoPhaseCoordinator | None = None
        #: the transactions' undo records, durable (``minidb.txn.txn_log``); with a data directory
        self.txn_log: TransactionLog | None = None
        #: what restart recovery of transactions did when the directory was opened (None: nothing)
        self.recovery: str | None = None
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._lock = DirectoryLock(self.data_dir)
            try:
                self.two_phase = TwoPhaseCoordinator(self.data_dir, protocol)
                self.two_phase.recover(self.data_dir / CLUSTER_FILE)
            except BaseException:
                self._release_directory()
                raise
        try:
            self._start(nodes, backend, address, disk_nodes, diskless_nodes, page_size, buffer_pages,
                        buffer_policy, memory_pages, rid_fetch, num_cpus, profile, timeout,
                        packet_bytes, data_dir)
        except BaseException:
            self._release_directory()
            raise

    def _start(self, nodes, backend, address, disk_nodes, diskless_nodes, page_size, buffer_pages,
               buffer_policy, memory_pages, rid_fetch, num_cpus, profile, timeout, packet_bytes,
               data_dir) -> None:
        stored = None if self.data_dir is None else self._stored_catalog(int(nodes))
        if stored is not None:
            disk_nodes, page_size = stored_roles(stored, self.data_dir, disk_nodes,
                                                  diskless_nodes, page_size)
            diskless_nodes = None
        page_size = DEFAULT_PAGE_SIZE if page_size is None else page_size
        if diskless_nodes is not None and (isinstance(diskless_nodes, bool) or not isinstance(
                diskless_nodes, int | np.integer) or not 0 <= diskless_nodes < nodes):
            raise MinidbError(f"diskless_nodes must be between 0 and nodes - 1 = {nodes - 1}, "
                              f"not {diskless_nodes!r}")
        if disk_nodes is None:
            disk_nodes = nodes - (diskless_nodes or 0)
        if isinstance(disk_nodes, bool) or not isinstance(disk_nodes, int | np.integer) \
                or not 1 <= disk_nodes <= nodes:
            raise MinidbError(f"disk_nodes must be between 1 and nodes={nodes}, not {disk_nodes!r}")
        if diskless_nodes is not None and disk_nodes + diskless_nodes != nodes:
            raise MinidbError(f"disk_nodes ({disk_nodes}) + diskless_nodes ({diskless_nodes}) "
                              f"must equal nodes ({nodes})")
        if backend not in ("inline", "ray"):
            raise MinidbError(f"backend must be 'inline' or 'ray', not {backend!r}")
        self.num_nodes, self.disk = int(nodes), list(range(int(disk_nodes)))
        self.diskless = list(range(int(disk_nodes), int(nodes)))
        self.profile, self.page_size = profile, page_size
        # a property of the machine's hash tables that the joins need, not only the cost model
        entry_bytes = 0 if profile is None else int(get_profile(profile).hash_entry_bytes)
        self.catalog = ClusterCatalog()  # Gamma's catalog manager: the tables, described
        self.host_context = HostContext.open(self.catalog, page_size, buffer_pages, buffer_policy,
                                             memory_pages, entry_bytes)
        kwargs = [dict(node_id=i, num_nodes=self.num_nodes, has_disk=i in self.disk,
                       page_size=page_size, buffer_pages=buffer_pages, buffer_policy=buffer_policy,
                       memory_pages=memory_pages,
                       data_dir=None if data_dir is None else str(data_dir), timeout=timeout,
                       packet_bytes=packet_bytes, rid_fetch=rid_fetch,
                       hash_entry_bytes=entry_bytes)
                  for i in range(self.num_nodes)]
        if backend == "inline":
            from minidb.cluster.backends import InlineBackend

            self.backend = InlineBackend(self.num_nodes, kwargs, timeout)
        else:
            from minidb.cluster.backends import RayBackend

            try:
                self.backend = RayBackend(self.num_nodes, kwargs, timeout, address, num_cpus)
            except BaseException:
                self.host_context.close()
                raise
            if self.two_phase is not None:
                from minidb.cluster.backends import ship_by_value

                ship_by_value(type(self.two_phase.protocol))  # a student's class travels by value
        self.schemes: dict[str, Partitioner] = {}
        self._ids = itertools.count()
        self._closed = False
        # one statement at a time (the nodes' engines are not thread-safe); transactions of
        # several threads interleave statement by statement (minidb.cluster.transaction)
        self._engine = threading.RLock()
        self._deadlocks = None  # the scheduler's global deadlock detection, made by begin()
        #: keys of rows deleted by live transactions (``minidb.txn.transaction.Ghosts``)
        self.ghosts = Ghosts()
        # temporary node directories, removed at close even if their node was killed
        self._scratch = [] if self.data_dir is not None else \
            self.backend.call_all("data_path", {n: () for n in range(self.num_nodes)}, "start nodes")
        if self.data_dir is not None:
            try:
                self.two_phase.forget()  # every node is open: it settled what it doubted
                self._reopen(stored)
                self.txn_log = TransactionLog(self.data_dir)
                self.recovery = self._roll_back_losers()
            except BaseException:
                self.close()
                raise

    # -- tables ---------------------------------------------------------------------------------
    @_serialized
    def create_table(self, name: str, source, partition="round_robin", organization: str = "heap",
                     key: str | None = None, schema: Schema | pa.Schema | None = None,
                     batch_rows: int = DEFAULT_BATCH_ROWS) -> ClusterTable:
        """Decluster a relation over the disk nodes with ``partition`` (a spec string, a dict of
        predicates or a ``Partitioner``); the host routes the tuples and sends each disk node
        its fragment, and the nodes load them in parallel.

        The load is a stream (``minidb.storage.sources``): each batch of ``batch_rows`` rows is
        converted, partitioned and sent to the nodes as it comes, and each node stores it as it
        arrives (``Node.load_batch``), so neither the host nor a node holds the relation. Two
        cases read the source twice first (it must be readable again: a table, a file, a spec,
        ``generate_batches``): a partitioner that learns from the data (range_uniform) is fitted
        on the partitioning column alone, and each node is told its fragment's size before the
        load when the relation has float or text columns (their statistics are estimated from a
        sample whose spacing depends on that size). A partitioner class of a user's own that
        overrides ``fit``, on an iterator, is fitted on the whole relation held in memory."""
        self._check_open()
        check_batch_rows(batch_rows)
        src = open_source(source)
        layout = source_layout(src, schema)
        check_table_name(name)
        check_new_layout(layout)
        table = self.catalog.new_table(name, layout)
        loading = False
        try:
            p = parse_partitioning(partition, layout, len(self.disk))
            if self.data_dir is not None:
                partitioner_to_json(p)  # a partitioner that cannot be saved fails before the load
            batches = _fitted_batches(p, src, layout, batch_rows, len(self.disk), name)
            sizes = _fragment_sizes(p, src, layout, batch_rows, len(self.disk))
            loading = True
            self.backend.call_all("load_begin", {
                n: (name, layout, organization, key, sizes[i]) for i, n in enumerate(self.disk)
            }, "load")
            stats, rows = StatsBuilder(layout, src.num_rows), 0
            for records in batches:
                stats.add(records)
                rows += len(records)
                parts = p.partition(records) if len(records) else [records] * len(self.disk)
                self.backend.call_all("load_batch", {
                    n: (name, parts[i]) for i, n in enumerate(self.disk) if len(parts[i])
                }, "load")
            self.backend.call_all("load_end", {n: (name,) for n in self.disk}, "load")
        except BaseException:
            self.catalog.remove(name)
            try:
                if loading:
                    self.backend.call_all("load_abort", {n: (name,) for n in self.disk}, "load")
                self._drop_everywhere(name)
            except MinidbError:  # e.g. a dead node: the first error is the one to report
                pass
            raise
        with self._statement():
            table.stats = stats.finish()
            table.num_records = rows
            self.schemes[name.lower()] = p
        self._take_counters()
        return table

    @_serialized
    def create_index(self, table: str, column: str, clustered: bool = False) -> None:
        """Index every fragment of ``table`` on ``column`` (clustered: re-store it sorted)."""
        self._check_open()
        t = self.catalog.get(check_name_argument(table, "the table"))
        t.schema.column(check_name_argument(column, "the indexed column"), f"table {t.name!r}")
        with self._statement():
            self.backend.call_all("create_index", {n: (t.name, column, clustered) for n in self.disk},
                                  "create index")
        self._take_counters()

    @_serialized
    def clear_buffer_pools(self) -> None:
        """Empty every node's buffer pool (dirty pages written back first), so that the next
        statement reads its pages from disk, as the papers' measurements of relations larger
        than memory did."""
        self._check_open()
        self.backend.call_all("clear_buffer_pool", {n: () for n in range(self.num_nodes)},
                              "clear buffer pools")
        self._take_counters("clear buffer pools")

    def fragments(self, table: str) -> list[np.ndarray]:
        """Each disk node's tuples of ``table`` (for checks: every fragment fits its scheme)."""
        t = self.catalog.get(table)
        return self.backend.call_all("fragment", {n: (t.name,) for n in self.disk})

    def partitioner(self, table: str) -> Partitioner:
        return self.schemes[self.catalog.get(table).name.lower()]

    def tables(self) -> list[str]:
        return self.catalog.names()

    @_serialized
    def drop_table(self, name: str) -> None:
        self._check_open()
        t = self.catalog.get(name)
        with self._statement():
            self._drop_everywhere(t.name)
            self.catalog.remove(t.name)
            self.schemes.pop(t.name.lower(), None)

    def _drop_everywhere(self, name: str) -> None:
        self.backend.call_all("drop_table", {n: (name,) for n in self.disk}, "drop table")

    # -- SQL ------------------------------------------------------------------------------------
    def sql(self, text: str, hint: str | None = None) -> ParallelResult:
        """Run one statement of the parallel subset (see the module docstring). Statements of
        several threads run one at a time; outside a transaction a statement takes no locks."""
        with self._engine:  # a transaction of another thread may be running a statement
            if isinstance(text, str):  # an UPDATE / DELETE runs its subqueries first
                text = inline_subqueries(text, self.catalog, lambda q: self._sql(q)._shown()[1])
            return self._sql(text, hint)

    def begin(self, access: str = "stable", lock_timeout: float | None = None):
        """Start a transaction for this thread: ``access`` is NonStop SQL's "browse", "stable"
        (the default) or "repeatable"; a lock wait longer than ``lock_timeout`` seconds (10 by
        default) aborts it. Locks live on the nodes (``Node.locks``); the scheduler detects
        global deadlocks. Inline or Ray backend. See ``minidb.cluster.transaction``."""
        from minidb.cluster.transaction import ParallelTransaction

        self._check_open()
        return ParallelTransaction(self, access, lock_timeout)

    def _sql(self, text: str, hint: str | None = None) -> ParallelResult:
        self._check_open()
        if not isinstance(text, str):
            raise MinidbError(f"sql() takes the statement as a string, not {type(text).__name__}")
        if hint is not None and not isinstance(hint, str):
            raise MinidbError(f"a hint is a string such as 'broadcast' or 'grace_hash', not "
                              f"{hint!r:.40}")
        body, comment = split_hint_comment(text)
        placement = None
        result_partition = None
        bit_filters = self.bit_filters
        strategy = None
        propagate = True
        specs = []
        for h in (hint, comment):
            h, spec = _partition_hint(h or "")
            result_partition = spec or result_partition
            words = [w.lower().replace("-", "_") for w in h.replace(",", " ").split()]
            for word in words:  # one placement and one strategy, as parse_hints wants one join
                for kind, given, known in (("placement", placement, PLACEMENTS),
                                           ("join strategy", strategy, JOIN_STRATEGIES)):
                    if word in known and given is not None and given != word:
                        raise MinidbError(f"conflicting hints {given!r} and {word!r}; give one "
                                          f"{kind} hint")
                placement = word if word in PLACEMENTS else placement
                strategy = word if word in JOIN_STRATEGIES else strategy
            bit_filters = bit_filters or BIT_FILTER_HINT in words
            propagate = propagate and NO_PROPAGATION_HINT not in words
            specs.append(" ".join(w for w in words if w not in PLACEMENTS + JOIN_STRATEGIES
                                  and w not in (BIT_FILTER_HINT, NO_PROPAGATION_HINT)) or None)
        hints = with_default_join(parse_hints(*specs), self.join)
        if is_distribute(body):  # Distributed INGRES's statement, read before the SQL parser
            statement = self._distribution(parse_distribute(body))
        else:
            statement = translate(body, self.catalog, propagate=propagate)
        self._take_counters("start of statement")
        if self.two_phase is not None:
            self.two_phase.last = {}
        run = ParallelPlanner(self, hints, next(self._ids))
        run.placement, run.bit_filters, run.strategy = placement, bit_filters, strategy
        if result_partition is not None and not isinstance(statement, CreateTableAsStatement):
            raise MinidbError("the hint partition=... only applies to CREATE TABLE ... AS SELECT")
        start = time.perf_counter()
        if isinstance(statement, SelectStatement):
            schema, records = run.select(statement.query)
            kind, rows = "select", len(records)
        else:
            with self._statement():  # committed on every node, or undone on every node
                schema, records, kind, rows = self._change(statement, run, result_partition)
        wall = time.perf_counter() - start
        s = run.scheduler
        commit = dict(self.two_phase.last) if self.two_phase is not None else None
        return ParallelResult(schema, records, kind, rows, wall, s.phases, s.phase_names,
                              s.scheduler_messages, s.explain(), text, self._modeled(run),
                              s.phase_wall_s, s.plan, commit)

    def _put_back(self, name: str, deletes: list[str], records: np.ndarray) -> None:
        """A parallel transaction's undo step (``minidb.cluster.transaction``): run the DELETEs
        ``deletes`` and insert ``records`` (rows in the table's layout, routed by its
        partitioner) as one statement: in a data directory it commits on every node or none."""
        table = self.catalog.get(name)
        hints = with_default_join(parse_hints(None), self.join)
        with self._statement():
            for text in deletes:
                ParallelPlanner(self, hints, next(self._ids)).delete(translate(text, self.catalog))
            if len(records):
                columns = [c.name for c in table.schema.columns]
                ParallelPlanner(self, hints, next(self._ids)).insert(
                    InsertStatement(table, records, None, columns))
        self._take_counters("undo")

    def _change(self, statement, run: ParallelPlanner, result_partition):
        """Run a statement that changes a table; (schema, records, kind, rows) of its result."""
        if isinstance(statement, CreateTableAsStatement):
            rows = self._create_table_as(statement, run, result_partition or "round_robin")
            kind = "create_table_as"
        elif isinstance(statement, UpdateStatement):
            rows, kind = run.update(statement), "update"
        elif isinstance(statement, DeleteStatement):
            rows, kind = run.delete(statement), "delete"
        elif isinstance(statement, InsertStatement):
            rows, kind = run.insert(statement), "insert"
        elif isinstance(statement, _Distribution):
            rows, kind = self._distribute(statement, run), "distribute"
        else:
            raise unsupported_in_parallel(type(statement).__name__)
        return _count(rows), np.array([(rows,)], _count(rows).dtype), kind, rows

    def _distribution(self, st: DistributeStatement) -> _Distribution:
        """A DISTRIBUTE statement checked against the catalog: its table and the predicate
        fragments it asks for (a node no site names gets FALSE). Every mistake the statement's
        text can make (unknown table or column, a node that is not a disk node, a predicate that
        does not type-check) is raised here, before anything runs."""
        table = self.catalog.get(st.table)
        texts = DistributeStatement(table.name, st.sites).fragments(len(self.disk))
        try:
            fragments = PredicateFragments(texts, table.schema)
            fragments.fit(None, len(self.disk))
        except MinidbError as e:
            raise type(e)(f"DISTRIBUTE {table.name}: {e}") from None
        return _Distribution(table, fragments)

    def _distribute(self, d: _Distribution, run: ParallelPlanner) -> int:
        """DISTRIBUTE: re-decluster a stored table by predicates (Distributed INGRES §2).

        The tuples move in place (``ParallelPlanner.distribute``): a first phase that changes
        nothing checks that every tuple satisfies exactly one node's predicate, then the tuples
        whose node changes are deleted there and inserted at their new node, as a moving UPDATE
        does. The table keeps its name, schema, tuples, file organization, key and indexes; its
        partitioner becomes the predicate one, so later INSERTs and UPDATEs route by it.
        Returns the number of tuples moved.

        Atomicity: this runs inside ``_statement``, like every change. In a data directory the
        moves on the nodes and the new partitioning in ``cluster.json`` commit together by the
        commit protocol: a failure before the commit decision undoes the moves on every node,
        and a process killed part way is recovered when the directory is opened again (the
        nodes' undo logs and the decision record in ``wal.log``), so reopening shows the table
        either as it was or as distributed, never half moved. Without a data directory a node
        failing after tuples began to move (not a predicate error: those are found by the
        first phase) leaves the table half moved, as for any statement there."""
        moved, _, _ = run.distribute(d.table, d.fragments)
        self.schemes[d.table.name.lower()] = d.fragments
        return moved

    def _create_table_as(self, st: CreateTableAsStatement, run: ParallelPlanner, partition) -> int:
        """CREATE TABLE AS: a plain one-table selection is pipelined into store operators on the
        disk nodes, as Gamma's "retrieve into" runs (Sections 2.2 and 4), and so is a two-table
        join stored with ``partition=local`` that runs co-located or broadcast (NonStop SQL's
        join benchmark), and so is any other join without aggregates, DISTINCT, ORDER BY or
        LIMIT: its nodes send each result tuple to a store operator, as Gamma stores a join's
        result (Section 2.2); anything else (aggregates, ORDER BY, a partitioning that must see
        the data first) is computed at the host and then dealt out."""
        q = st.query
        plain = (isinstance(q, SelectQuery) and len(q.refs) == 1 and not q.aggregating and not q.order and q.limit is None
                 and q.visible == len(q.outputs) and not q.distinct)
        if plain:
            stored = run.select_into(st.name, q, partition)
            if stored is not None:
                return stored
        local = isinstance(partition, str) and partition.strip().lower() == "local"
        two_table_join = (isinstance(q, SelectQuery) and len(q.refs) == 2 and len(q.edges) == 1
                          and not q.aggregating and not q.order and q.limit is None
                          and q.visible == len(q.outputs) and not q.distinct)
        if local and two_table_join:
            stored = run.join_into_local(st.name, q)
            if stored is not None:
                return stored
        plain_join = (isinstance(q, SelectQuery) and len(q.refs) >= 2 and not q.aggregating
                      and not q.order and q.limit is None and q.visible == len(q.outputs)
                      and not q.distinct)
        if plain_join and not local:
            stored = run.join_into(st.name, q, partition)
            if stored is not None:
                return stored
        schema, records = run.select(q)
        return self._store_result(st.name, schema, records, run, partition)

    def _store_result(self, name: str, schema: Schema, records: np.ndarray, run: ParallelPlanner,
                      partition="round_robin") -> int:
        """Store a query's result as a new relation over the disk nodes: round-robin by default,
        as Gamma stores query results (Section 2.2), or as the ``partition=`` hint says."""
        columns = [c for c in schema.columns if c.name != RID]
        layout = Schema(columns)
        out = layout.gather(records)
        table = self.catalog.new_table(name, layout)
        try:
            p = parse_partitioning(partition, layout, len(self.disk))
            p.fit(out, len(self.disk))
        except BaseException:
            self.catalog.remove(name)
            raise
        parts = p.partition(out) if len(out) else [out] * len(self.disk)
        run.scheduler.phase(f"store result {p.describe()}",
                  [(n, "create_fragment", (name, layout, parts[i], "heap", None))
                   for i, n in enumerate(self.disk)], operators=1)
        table.stats = {c.name.lower(): _stats_of(out[c.name]) for c in columns}
        table.num_records = len(out)
        self.schemes[name.lower()] = p
        return len(out)

    def _modeled(self, run: ParallelPlanner) -> float | None:
        if self.profile is None:
            return None
        return model_phases(run.scheduler.phases, run.scheduler.scheduler_messages, self.profile,
                            self.page_size).total_s

    def _take_counters(self, phase: str = "collect counters") -> list[dict]:
        return self.backend.call_all("take_counters", {n: () for n in range(self.num_nodes)}, phase)

    # -- persistence ----------------------------------------------------------------------------
    def _stored_catalog(self, nodes: int) -> dict | None:
        """The coordinator catalog in the data directory, if any, checked against ``nodes``."""
        d = self.data_dir
        if (d / CATALOG_FILE).exists():
            raise MinidbError(f"{d} holds a single-node database; open it with "
                              "minidb.connect(data_dir=...) and no nodes=")
        stored = read_json(d / CLUSTER_FILE, "cluster catalog", CLUSTER_FORMAT)
        if stored is not None and stored.get("nodes") != nodes:
            raise MinidbError(f"{d} holds a parallel database of {stored.get('nodes')} nodes, not "
                              f"{nodes}; connect with nodes={stored.get('nodes')} to open it")
        return stored

    def _catalog_doc(self) -> dict:
        tables = [table_to_json(t, self.schemes[t.name.lower()]) for t in self.catalog]
        return {"format": CLUSTER_FORMAT, "version": CATALOG_VERSION, "nodes": self.num_nodes,
                "disk_nodes": self.disk, "diskless_nodes": self.diskless,
                "page_size": self.page_size, "tables": tables}

    def _save(self) -> None:
        """Commit the statement on every node and in the coordinator catalog, with the chosen
        commit protocol (``minidb.txn.two_phase``); without a data directory, nothing to do."""
        if self.data_dir is not None:
            self.two_phase.commit(self.backend.call_all, list(range(self.num_nodes)),
                                  self._catalog_doc(), self.data_dir / CLUSTER_FILE)

    @contextmanager
    def _statement(self):
        """A change to the database: committed on every node at its end (``_save``), or, if it
        fails before the commit decision, undone on every node and in the host's catalog."""
        try:
            yield
            self._save()
        except BaseException as e:
            if self.data_dir is not None and not isinstance(e, CommitUnfinished):
                self._abort(tell_nodes=not isinstance(e, CommitAborted))
            raise

    def _abort(self, tell_nodes: bool = True) -> None:
        """Undo the failed statement on the nodes (unless the commit protocol aborted it, and so
        told them already) and read the committed catalog again. A node that cannot be reached
        undoes its part when it is opened again."""
        try:
            if tell_nodes:
                self.two_phase.abort(self.backend.call_all, list(range(self.num_nodes)))
        except MinidbError:
            return  # a node is gone: the database must be opened again to be used
        self.catalog.clear()
        self.schemes.clear()
        self._reopen(self._stored_catalog(self.num_nodes), save=False)  # nothing to commit

    def _roll_back_losers(self) -> str | None:
        """Restart recovery of transactions (``minidb.cluster.transaction``): undo on every node
        the writes of those that had not committed; what was done, or None."""
        from minidb.cluster.transaction import undo_parallel_write
        from minidb.txn.transaction import roll_back_losers

        with self._engine:
            return roll_back_losers(self.txn_log, lambda u: undo_parallel_write(self, u),
                                    self.catalog)

    def _release_directory(self) -> None:
        if self.txn_log is not None:
            self.txn_log.close()
        if self.two_phase is not None:
            self.two_phase.close()
        if self._lock is not None:
            self._lock.release()

    def _reopen(self, stored: dict | None, save: bool = True) -> None:
        """Bring the catalog's descriptions and the schemes back from ``stored``; make the nodes
        agree."""
        entries = [] if stored is None else stored.get("tables", [])
        known = {e["name"].lower() for e in entries}
        held = self.backend.call_all("tables", {n: () for n in range(self.num_nodes)}, "reopen")
        if stored is None and any(held):  # the catalog is lost, the data is not: never drop it
            where = ", ".join(f"node-{n}: {', '.join(names)}" for n, names in enumerate(held) if names)
            raise MinidbError(f"{self.data_dir} has no {CLUSTER_FILE} but its nodes hold tables "
                              f"({where}); restore {CLUSTER_FILE}, or move the node directories "
                              "away to start an empty database")
        for n, names in enumerate(held):
            for name in names:
                if name.lower() not in known or n not in self.disk:
                    self.backend.call(n, "drop_table", name, phase="reopen")  # never committed
            for e in entries:
                if n in self.disk and e["name"].lower() not in {x.lower() for x in names}:
                    raise MinidbError(f"table {e['name']!r} has no fragment on node {n} "
                                      f"({self.data_dir}/node-{n} lacks it); the data directory "
                                      "is incomplete")
        for e in entries:
            table, p = table_from_json(e, len(self.disk))
            self.catalog.add(table)
            self.schemes[table.name.lower()] = p
        if save:  # what opening settled (fragments no entry names dropped) is committed
            self._save()
        self._take_counters("reopen")

    # -- life cycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the nodes (a dead node does not make this hang) and remove the host's scratch
        disk. A data directory
        keeps everything for ``connect(nodes=N, data_dir=...)``; temporary ones are removed."""
        if self._closed:
            return
        self._closed = True
        if self._deadlocks is not None:
            self._deadlocks.close()
        try:
            self.backend.shutdown()
        finally:
            self.host_context.close()
            for path in self._scratch:  # a killed node could not remove its own
                shutil.rmtree(path, ignore_errors=True)
            self._release_directory()

    def _check_open(self) -> None:
        if self._closed:
            raise MinidbError("this database is closed; call minidb.connect() again")

    def __enter__(self) -> ParallelDatabase:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"ParallelDatabase({self.num_nodes} nodes, disk nodes {self.disk}, "
                f"backend={self.backend.name})")


@dataclass(frozen=True)
class _Distribution:
    """A DISTRIBUTE statement resolved against the catalog: the table and its new fragments."""

    table: ClusterTable
    fragments: PredicateFragments


# -- the bulk load's partitioning ----------------------------------------------------------------
#: the ``fit`` methods that read no data (they check and record the number of nodes)
_FITS_WITHOUT_DATA = {Partitioner.fit, RoundRobin.fit, Hash.fit, Range.fit, PredicateFragments.fit}


def _fitted_batches(p: Partitioner, src: BatchSource, schema: Schema, batch_rows: int,
                    nodes: int, name: str):
    """Fit ``p`` for the load and give the load's batches of records (an iterator).

    A partitioner whose ``fit`` reads no data is fitted with none; range_uniform on its column
    for the whole relation (a first pass over a source that can be read again); any other (a
    user's class that overrides ``fit``) on the whole relation, which is then held in memory as
    the one batch of the load."""
    batches = (schema.records_from_arrow(b, what=f"table {name!r}") for b in src.batches(batch_rows))
    fit = type(p).fit
    if fit in _FITS_WITHOUT_DATA:
        p.fit(None, nodes)
    elif fit is RangeUniform.fit and src.reusable:
        p.fit(_columns_of(p, src, schema, batch_rows), nodes)
    else:
        whole = concat_records(list(batches), schema.dtype)
        p.fit(whole, nodes)
        return iter([whole])
    return batches


def _columns_of(p: Partitioner, src: BatchSource, schema: Schema, batch_rows: int) -> np.ndarray:
    """The columns ``p`` routes on, for the whole relation (records with only those fields)."""
    part = schema.project(p.columns)
    pieces = [part.records_from_arrow(b) for b in src.batches(batch_rows)]
    return concat_records(pieces, part.dtype)


def _fragment_sizes(p: Partitioner, src: BatchSource, schema: Schema, batch_rows: int,
                    nodes: int) -> list[int | None]:
    """How many tuples each node will get, when its statistics need it and the source can be
    read twice (routing a copy of ``p`` over the routing columns); None each otherwise."""
    if not src.reusable or all(schema.dtype[c.name].kind in "iu" for c in schema.columns):
        return [None] * nodes
    router = copy.deepcopy(p)
    part = schema.project(router.columns) if router.columns else None
    counts = np.zeros(nodes, dtype=np.int64)
    for b in src.batches(batch_rows):
        batch = part.records_from_arrow(b) if part is not None else np.empty(b.num_rows, [("x", "u1")])
        if len(batch):
            counts += np.bincount(router.route(batch), minlength=nodes)
    return [int(c) for c in counts]

def _count(rows: int) -> Schema:
    from minidb.storage.schema import int_column

    return Schema([int_column("count", "int64")])


__all__ = ["ParallelDatabase", "ParallelResult"]

_PARTITION_HINT = re.compile(r"partition\s*=\s*([A-Za-z_][\w]*(?:\s*\([^)]*\))?)", re.IGNORECASE)


def _partition_hint(hint: str) -> tuple[str, str | None]:
    """Take ``partition=SPEC`` (e.g. ``partition=hash(unique1)``) out of a hint string; it says
    how ``CREATE TABLE ... AS SELECT`` declusters its result. Returns (rest, spec or None)."""
    m = _PARTITION_HINT.search(hint)
    if m is None:
        return hint, None
    return hint[: m.start()] + hint[m.end():], m.group(1)
