"""One site of the shared-nothing machine: its own disk, buffer pool, catalog and operators.

This rebuilds a Gamma processor (DeWitt et al. 1988, Section 2): a node owns a disk holding its
fragment of every declustered relation and runs the operator processes the scheduler starts on
it. An operator's input is a local access path (file scan or index) or a stream of packets from
other operators; its output goes through a split table to the operators of the next step, to the
host, or into a local file.

Simplified: an "operator process" is a thread of the node running one operator tree (a
*fragment*: scan, project, partial aggregate ... up to its split table); a node with no disk
(Gamma's diskless processors) is a node that simply holds no fragments. The operators of one
node that run at once share its buffer pool without a lock; the plans the coordinator makes
never run two disk-using fragments on one node at the same time (receivers work in memory).

Persistence. Given a data directory D, node i keeps its pages and its own catalog in D/node-i
(a single-node ``Database`` there, so it reopens the same way); every method that changes a
fragment ends with ``Database.finish_change``: the pages are written back, but the node does not
commit on its own (``autocommit`` is off); the coordinator commits or aborts the statement on
every node together with the registered commit protocol ``connect(commit=...)`` names (presumed
abort by default): its participant role runs here, ``commit_events``, on the node's journal
(``minidb.txn.commit.enginenet``; ``prepare`` / ``commit`` / ``abort`` are what its records and
decisions do). The coordinator keeps the cluster-wide catalog.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections import Counter
from typing import Any, Protocol

import numpy as np

from minidb.catalog import Catalog, Table, TableLoader, stats_to_json
from minidb.cluster import plan
from minidb.cluster.catalog import ClusterTable
from minidb.cluster.machine import phase_timeout
from minidb.cluster.overflow import OverflowSpool, SpoolScan
from minidb.database import Database
from minidb.errors import MinidbError
from minidb.exec.aggregate import HashAggregate, average_expr
from minidb.exec.expr import Col
from minidb.exec.filter import Filter
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.join.base import JoinAlgorithm
from minidb.exec.project import Project
from minidb.exec.scan import RID, ArrayScan, with_rid_column
from minidb.parallel.bitfilter import ApplyBitFilters, BitFilter, BuildBitFilter
from minidb.parallel.exchange import (
    FLUSH_BYTES,
    RAY_FLUSH_BYTES,
    ExchangeReceive,
    Inbox,
    SplitTable,
)
from minidb.parallel.partitioners import PredicateFragments
from minidb.sql.execute import new_records
from minidb.sql.hints import Hints, parse_hints
from minidb.sql.operators import Materialize
from minidb.sql.planner import Planner
from minidb.storage.schema import Schema
from minidb.txn.locks import LockManager, Request
from minidb.txn.two_phase import coordinator_decisions

#: minidb operator kind -> the kind the cost model prices (minidb.cost.model.OPERATOR_COST_FIELD)
COST_KIND = {
    "heap_scan": "heap_scan", "index_scan": "index_scan", "clustered_index_scan": "index_scan",
    "hash_lookup": "index_scan", "dense_index_scan": "index_scan", "filter": "filter",
    "project": "project", "hash_aggregate": "aggregate", "store": "store", "insert": "store",
    "update": "store", "delete": "store", "array_scan": "copy", "materialize": "copy",
    "overflow_spool": "partition", "spool_scan": "heap_scan",
    "build_bit_filter": "bit_filter", "apply_bit_filters": "bit_filter",  # a hash + a bit per tuple
}

#: operator kinds that read a stored table (its access path)
SCAN_KINDS = {"heap_scan", "index_scan", "clustered_index_scan", "hash_lookup", "dense_index_scan"}

WORK_FIELDS = ("pages_read_seq", "pages_read_random", "pages_written_seq", "pages_written_random",
               "packets_sent_remote", "bytes_sent_remote", "packets_short_circuited",
               "bytes_short_circuited", "packets_received", "control_messages", "buffer_calls",
               "operators_started", "tuples_inserted", "index_entries_changed",
               "tuples_spooled")
EXTRA_FIELDS = ("pages_read", "pages_written", "buffer_hits", "buffer_misses", "bytes_received",
                "packets_delivered", "packets_to_host", "bytes_to_host", "messages_sent",
                "audit_bytes")
#: ``audit_bytes``: bytes of audit (log) records for the rows an UPDATE changed on this node, one
#: record image a row. The cost model does not read it; an experiment that models a transaction
#: log prices it (``minidb.experiments.tandem.audit_log``). Inserts and deletes count none: the
#: NonStop SQL paper gives the log volume of its update only.


class Site(Protocol):
    """Where a fragment's tree is built: a node's ``Database`` (its stored tables), or the host
    (``minidb.cluster.host.HostContext``: the cluster catalog's descriptions, no tuples)."""

    catalog: Catalog
    ctx: ExecContext
    memory_pages: int


def build_tree(db: Site, fragment: plan.Fragment, inbox: Inbox | None, timeout: float = 60.0,
               spools: dict | None = None) -> Operator:
    """The operator tree of one fragment (``minidb.cluster.plan``) over the tables of ``db``, its
    sink excluded: the source, then each step on top of the one before. The coordinator also
    builds it at the host, over the catalog's descriptions of the tables, to learn the output
    schema of a fragment before any node runs it."""
    spools = {} if spools is None else spools  # the node's overflow files, by name
    op = _source(db, fragment.source, inbox, timeout, fragment.hint, spools)
    return _apply_steps(db, op, fragment.steps, spools)


def _apply_steps(db: Site, op: Operator, steps: list, spools: dict) -> Operator:
    """``steps`` (``minidb.cluster.plan``) on top of ``op``, one after the other."""
    for step in steps:
        match step:
            case plan.Projection(outputs):
                op = Project(op, outputs)
            case plan.Selection(predicate):
                op = Filter(op, predicate)
            case plan.Aggregation(group_by, aggregates):
                op = HashAggregate(db.ctx, op, group_by, aggregates, db.memory_pages)
            case plan.DuplicateElimination():  # a hash aggregation grouping on every column
                op = HashAggregate(db.ctx, op, op.schema.names, [], db.memory_pages)
            case plan.OverflowTest():  # Gamma's overflow resolution, at a probe producer
                op = OverflowSpool(db.ctx, op, step, spools)
            case plan.BitFilterTest(key, partitioner, filters):  # Gamma's bit-vector filters
                op = ApplyBitFilters(op, key, partitioner, filters)
            case plan.Averages(columns):  # AVG = sum / count, after a final aggregation
                keep = [(n, Col(n)) for n in op.schema.names]
                op = Project(op, keep + [(name, average_expr(s, c)) for name, s, c in columns])
            case _:
                raise MinidbError(f"internal error: unknown fragment step {step!r}")
    return op


def _inner_table(db: Site, src, key: str) -> Operator:
    """The inner input of an index nested-loops join: this node's fragment of a stored table,
    read where it lies (a ``Local`` scan whose steps are one projection), looked up by key."""
    from minidb.exec.join.index_nested_loops import IndexLookup

    if not (isinstance(src, plan.Local) and isinstance(src.source, plan.Scan)
            and len(src.steps) == 1 and isinstance(src.steps[0], plan.Projection)):
        raise MinidbError("index_nested_loops looks up a stored table where it lies; this join's "
                          "inner input arrives through an exchange")
    outputs = list(src.steps[0].outputs)
    table = db.catalog.get(src.source.table)
    lookup = IndexLookup(db.ctx, table, list(src.source.filters), outputs, dict(outputs)[key].name)
    return lookup.as_input(Project(ArrayScan(table.schema, table.schema.new_records(0)),
                                   outputs).schema)


def _scan(db: Site, scan: plan.Scan, hint) -> Operator:
    """The node's fragment of a stored table, read along the access path the single-node
    planner picks. A table the host's catalog only describes (``ClusterTable``) has no tuples
    there: its scan is an empty input of the table's layout (enough to learn a schema)."""
    table = db.catalog.get(scan.table)
    if isinstance(table, ClusterTable):
        schema = with_rid_column(table.schema) if scan.with_rids else table.schema
        return ArrayScan(schema, schema.new_records(0))
    hints = hint if isinstance(hint, Hints) else parse_hints(hint)
    planner = Planner(db.ctx, db.memory_pages, hints)
    op, _, _ = planner.access(table, scan.filters, with_rids=scan.with_rids)
    return op


def _source(db: Site, src, inbox: Inbox | None, timeout: float, hint,
            spools: dict) -> Operator:
    match src:
        case plan.Scan():
            return _scan(db, src, hint)
        case plan.Receive(exchange, producers, schema):
            return ExchangeReceive(inbox or Inbox(), exchange, producers, schema, timeout)
        case plan.Join() if getattr(src.algorithm, "needs_inner_table", False):
            build = _inner_table(db, src.build, src.build_key)  # index nested loops
            probe = _source(db, src.probe, inbox, timeout, hint, spools)
            return src.algorithm(db.ctx, build, probe, src.build_key, src.probe_key,
                                 db.memory_pages, outer=src.outer, condition=src.condition)
        case plan.Join():
            build = _source(db, src.build, inbox, timeout, hint, spools)
            if src.bit_filter_bits is not None:  # set a bit per build tuple as it arrives
                build = BuildBitFilter(build, src.build_key, src.bit_filter_bits)
            probe = _source(db, src.probe, inbox, timeout, hint, spools)
            op = src.algorithm(db.ctx, build, probe, src.build_key, src.probe_key,
                               db.memory_pages, outer=src.outer, condition=src.condition)
            if src.distributed is not None:  # Gamma's distributed overflow resolution
                op.distributed = src.distributed
            return op
        case plan.Local(scan, steps):  # a join input read where the join runs
            return _apply_steps(db, _source(db, scan, inbox, timeout, hint, spools), steps, spools)
        case plan.ReadSpool(name, schema):
            return SpoolScan(schema, spools.get(name, []))
        case plan.Arrays(schema, records):
            return ArrayScan(schema, records)
    raise MinidbError(f"internal error: unknown fragment source {src!r}")


class Node:
    """One minidb node (a Gamma site); the coordinator drives it through these methods.

    Life cycle: the backend builds the node (its data directory and single-node engine, empty)
    and then calls ``connect`` with the other nodes (objects inline, actor handles with Ray), so
    its split tables can reach them. Loading: ``create_fragment`` stores this node's share of a
    relation at once (a CREATE TABLE AS result), ``load_begin`` / ``load_batch`` / ``load_end``
    a batch at a time (the coordinator's bulk load); ``create_index`` indexes it. Each query phase: the coordinator starts fragments
    with ``run`` (or ``start`` then, in a later phase, ``drain`` for a hash join whose table is
    built in one phase and probed in the next); while they run, other nodes' split tables call
    ``receive`` concurrently; after the phase, ``take_counters`` hands over what the node did in
    it and resets them. ``close`` removes the data directory's files when it is a temporary
    one; a node given a data directory reopens the fragments it finds there.
    """

    def __init__(self, node_id: int, num_nodes: int, has_disk: bool = True, page_size: int = 4096,
                 buffer_pages: int = 1024, buffer_policy: str = "lru",
                 memory_pages: int | None = None, data_dir: str | None = None,
                 timeout: float | None = None, packet_bytes: int = 2048,
                 rid_fetch: str = "sorted", hash_entry_bytes: int = 0):
        self.node_id, self.num_nodes, self.has_disk = node_id, num_nodes, has_disk
        if data_dir is not None:
            data_dir = node_dir(data_dir, node_id)
            os.makedirs(data_dir, exist_ok=True)
        decisions = None if data_dir is None else coordinator_decisions(os.path.dirname(data_dir))
        self.db = Database(page_size=page_size, buffer_pages=buffer_pages,
                           buffer_policy=buffer_policy, data_dir=data_dir,
                           memory_pages=memory_pages, rid_fetch=rid_fetch, in_doubt=decisions)
        self.db.autocommit = data_dir is None  # a user's directory: the coordinator commits
        self.prepare_as: dict = {}  # the commit protocol's PREPARE record (``prepare``)
        self.db.ctx.node_id = node_id
        self.db.ctx.hash_entry_bytes = hash_entry_bytes  # the profile's (its joins' tables)
        self._timeout, self.packet_bytes = timeout, packet_bytes
        self.inbox = Inbox()
        self.peers: list[Any] = []
        self._open: dict[str, tuple[Operator, plan.Fragment]] = {}
        self._held: dict[str, list[np.ndarray]] = {}
        # before-images of the last UPDATE or DELETE (``undo_change``), kept only when there is
        # no data directory whose journal would undo it: (table, how, old records, rids or new
        # records), ``how`` one of "rids", "values", "insert"
        self._undo: list[tuple[str, str, np.ndarray, np.ndarray | None]] = []
        self._loads: dict[str, TableLoader] = {}  # bulk loads under way, by table name
        self._spools: dict[str, list] = {}  # overflow files of distributed joins, by name
        self._lock = threading.Lock()
        # the row and key-range locks of the rows this node stores (minidb.cluster.transaction)
        self.locks = LockManager(f"node {node_id}")
        # the granted requests a transaction may still release, by the plain id handed out for
        # each (``txn_lock_rows``): a Request sent back over Ray would be a copy, and the lock
        # manager knows its requests by identity; and the ids of each transaction
        self._grants: dict[int, Request] = {}
        self._grants_of: dict[int, list[int]] = {}
        self._grant_ids = itertools.count(1)
        self._grants_mutex = threading.Lock()
        self._work: dict[str, Any] = {}
        self._io = self.db.disk.io.snapshot()
        self._buf = self.db.buffer.counters.snapshot()
        self._reset_work()

    @property
    def timeout(self) -> float:
        """Seconds an exchange may wait for a message: the user's ``timeout``, or 60 s stretched
        by the machine's load now (``minidb.cluster.machine.phase_timeout``)."""
        return phase_timeout(self._timeout)

    # -- wiring ---------------------------------------------------------------------------------
    def connect(self, peers: list[Any]) -> int:
        self.peers = list(peers)
        return self.node_id

    def renew(self, node_kwargs: dict, peers: list[Any]) -> int:
        """Become the node ``Node(**node_kwargs)`` would be, then ``connect`` to ``peers``: the
        way a pooled Ray actor is handed to the next machine (``minidb.cluster.backends``).

        The old node is closed (its temporary directory removed) and ``Node.__init__`` runs again,
        so nothing of the old node is left: no pages, no buffer pool contents, no counters, no open
        fragments. The next machine's counters, and so its modeled times, are those of a
        freshly started node."""
        self.close()
        Node.__init__(self, **node_kwargs)
        return self.connect(peers)

    def data_path(self) -> str:
        """Where this node keeps its page files."""
        return str(self.db.disk.path)

    def ping(self) -> dict:
        where = None
        try:
            import ray

            if ray.is_initialized():
                where = ray.get_runtime_context().get_node_id()
        except ImportError:
            pass
        return {"node_id": self.node_id, "pid": os.getpid(), "ray_node": where}

    def _send(self, dest: int, exchange_id: str, producer: int, item, packets: int):
        peer = self.peers[dest]
        if isinstance(peer, Node):
            peer.receive(exchange_id, producer, item, packets)
            return None
        return peer.receive.remote(exchange_id, producer, item, packets)

    def _wait(self, handle) -> None:
        import ray

        try:
            ray.get(handle, timeout=self.timeout)
        except ray.exceptions.GetTimeoutError:
            raise MinidbError(f"node {self.node_id}: a consumer did not take a message within "
                              f"{self.timeout:g} s") from None
        except ray.exceptions.RayActorError as e:
            raise MinidbError(f"node {self.node_id}: a consumer node died ({type(e).__name__})") from None

    def _flush_bytes(self) -> int:
        """How many bytes a split table gathers per message: larger when a message is a Ray
        actor call (see ``minidb.parallel.exchange.RAY_FLUSH_BYTES``)."""
        inline = all(isinstance(peer, Node) for peer in self.peers)
        return FLUSH_BYTES if inline else RAY_FLUSH_BYTES

    def receive(self, exchange_id: str, producer: int, item, packets: int) -> None:
        """A message from node ``producer``'s split table (called by other nodes)."""
        self.inbox.put(exchange_id, producer, item, self.timeout)
        batch = item[3] if isinstance(item, tuple) else item  # end of stream: maybe tuples
        with self._lock:
            if batch is not None and producer != self.node_id:
                self._work["bytes_received"] += batch.nbytes
            if producer != self.node_id:
                self._work["packets_received"] += packets
            self._work["packets_delivered"] += packets

    def _local(self, exchange_id: str, producer: int, item, packets: int) -> None:
        self.receive(exchange_id, producer, item, packets)

    def _fail_exchange(self, exchange_id: str, consumers: list[int], error: Exception) -> None:
        """This node's part of exchange ``exchange_id`` failed with ``error``: tell each
        consumer at once, in place of the end of stream it waits for, so that it stops with the
        same error instead of waiting out the phase's deadline (``ExchangeReceive`` raises on an
        exception from a producer). Best effort: a consumer that cannot be told times out."""
        note = MinidbError(f"node {self.node_id} failed: {error}")
        for dest in sorted(set(consumers)):
            with contextlib.suppress(Exception):
                handle = self._send(dest, exchange_id, self.node_id, note, 0)
                if handle is not None:
                    self._wait(handle)

    # -- loading --------------------------------------------------------------------------------
    def create_fragment(self, name: str, schema: Schema, records: np.ndarray,
                        organization: str = "heap", key: str | None = None) -> int:
        table = Table.create(self.db.disk, self.db.buffer, name, schema, records, organization, key)
        self.db.catalog.add(table)
        self.db.finish_change()
        return len(records)

    # a bulk load a batch at a time (the coordinator's create_table): begin, batches, end
    def load_begin(self, name: str, schema: Schema, organization: str = "heap",
                   key: str | None = None, num_rows: int | None = None) -> None:
        """Start loading this node's fragment of ``name`` (``num_rows`` of them, if known)."""
        self._loads[name] = TableLoader(self.db.disk, self.db.buffer, name, schema, organization,
                                        key, num_rows)

    def load_batch(self, name: str, records: np.ndarray) -> None:
        self._loads[name].add(records)

    def load_end(self, name: str) -> int:
        """Finish the fragment and add it to this node's catalog; returns its tuple count."""
        table = self._loads.pop(name).finish()
        self.db.catalog.add(table)
        self.db.finish_change()
        return table.num_records

    def load_abort(self, name: str) -> None:
        """Forget a load cut off by an error, removing the pages it wrote."""
        loader = self._loads.pop(name, None)
        if loader is not None:
            loader.abort()

    def create_index(self, table: str, column: str, clustered: bool = False) -> None:
        self.db.create_index(table, column, clustered)

    def drop_table(self, name: str) -> None:
        if self.db.catalog.has(name):
            self.db.drop_table(name)

    # -- two-phase commit (the coordinator's minidb.txn.two_phase calls these) ------------------
    def prepare(self, txn: str) -> bool:
        """Phase one: force this node's part of the statement and vote yes (an error is a no).
        Under a commit protocol, ``prepare_as`` holds what the protocol's record says (its kind,
        whether it is forced, the protocol and its presumption; ``Database.prepare``)."""
        self.db.prepare(txn, **self.prepare_as)
        return True

    def commit_events(self, protocol, ctx: dict, seq: int, events: list) -> dict:
        """Run the commit protocol's participant role on this node for a batch of events (the
        coordinator's ``minidb.txn.commit.enginenet.EngineNetwork`` sends them); the handlers'
        effects come back, in order."""
        from minidb.txn.commit.enginenet import handle_on_node

        return handle_on_node(self, protocol, ctx, seq, events)

    def commit(self, txn: str) -> None:
        self.db.commit(txn)

    def changed(self) -> bool:
        """Whether this node's part of the statement changed anything (``Database.changed``):
        a node whose part changed nothing votes READ under presumed abort (R*)."""
        return bool(self._loads) or self.db.changed()

    def release(self) -> None:
        """This node voted READ and leaves the statement (R*): nothing to commit or undo."""
        self.db.release()

    def abort(self) -> None:
        """Undo this node's part of the statement (and forget loads and spools under way)."""
        for loader in list(self._loads.values()):
            loader.abort()
        self._loads.clear()
        self.db.abort()

    def clear_buffer_pool(self) -> None:
        """Write back and forget every cached page, so the next statement starts cold."""
        self.db.clear_buffer_pool()

    def tables(self) -> list[str]:
        """The tables this node holds a fragment of."""
        return self.db.tables()

    def fragment(self, table: str) -> np.ndarray:
        """Every tuple of this node's fragment of ``table`` (for checks and tests)."""
        return self.db.catalog.get(table).read_all()

    def fragment_size(self, table: str) -> int:
        return self.db.catalog.get(table).num_records

    # -- locks of parallel transactions (minidb.cluster.transaction) ----------------------------
    def txn_lock_key(self, table: str) -> str:
        """The lock key of ``table`` here (``minidb.txn.transaction.lock_key`` of its fragment:
        the clustering or hash key it was stored with, or else its first column)."""
        from minidb.txn.transaction import lock_key

        return lock_key(self.db.catalog.get(table))

    def txn_keys(self, scan: str) -> list:
        """The lock keys of the rows of this node's fragment that ``scan`` (``SELECT key FROM
        table [WHERE ...]``) finds: what a transaction's statement will touch here. It reads
        pages, so the coordinator calls it under its statement mutex."""
        from minidb.txn.transaction import _python

        return [_python(k) for k in self.db.sql(scan).to_arrow().column(0).to_pylist()]

    def txn_lock_rows(self, txn: int, table: str, keys: list, mode: str,
                      timeout: float | None) -> list[int | None]:
        """Lock the rows with lock keys ``keys`` (in this order) in this node's lock manager,
        waiting here; a handle for each: a plain id for ``txn_release`` (it survives a remote
        call, a Request would not), None where a lock held already covered the row."""
        return [self._grant(self.locks.lock_row(txn, table, k, mode, timeout)) for k in keys]

    def txn_lock_range(self, txn: int, table: str, lo, hi, mode: str,
                       timeout: float | None) -> int | None:
        """Lock the key range ``lo..hi`` of ``table`` on this node (None: open end); its handle
        as for ``txn_lock_rows``."""
        return self._grant(self.locks.lock_range(txn, table, lo, hi, mode, timeout))

    def _grant(self, req: Request | None) -> int | None:
        """Keep a granted request in the registry; its id (None for None)."""
        if req is None:
            return None
        with self._grants_mutex:
            handle = next(self._grant_ids)
            self._grants[handle] = req
            self._grants_of.setdefault(req.txn, []).append(handle)
        return handle

    def txn_release(self, handles: list[int | None]) -> None:
        """Release S locks before commit (a STABLE statement done with its rows), by the ids
        ``txn_lock_rows`` / ``txn_lock_range`` gave (None and ids already released: nothing)."""
        for h in handles:
            if h is None:
                continue
            with self._grants_mutex:
                req = self._grants.pop(h, None)
                if req is not None:
                    mine = self._grants_of.get(req.txn, [])
                    if h in mine:
                        mine.remove(h)
                    if not mine:
                        self._grants_of.pop(req.txn, None)
            self.locks.release(req)

    def txn_release_all(self, txn: int) -> int:
        """Commit or abort of ``txn``: release every lock it holds on this node, and forget its
        handles."""
        with self._grants_mutex:
            for h in self._grants_of.pop(txn, ()):
                self._grants.pop(h, None)
        return self.locks.release_all(txn)

    def txn_wait_edges(self) -> list[tuple[int, int, str]]:
        """This node's wait-for edges (waiter, waited-for, why): what the scheduler's global
        deadlock detector merges (``LockManager.wait_for_edges``)."""
        return self.locks.wait_for_edges()

    def txn_refuse_waiter(self, txn: int, message: str) -> bool:
        """Refuse the waiting request of ``txn`` here, a victim of the scheduler's detector: its
        wait raises ``DeadlockError(message)`` (``LockManager.refuse_waiter``)."""
        return self.locks.refuse_waiter(txn, message)

    def txn_handles(self) -> int:
        """How many lock handles this node keeps (for the tests: none once every transaction
        has ended)."""
        with self._grants_mutex:
            return len(self._grants)

    # -- running fragments ----------------------------------------------------------------------
    def run(self, fragment: plan.Fragment) -> np.ndarray | None:
        """Build, run and finish one fragment; returns its tuples when it sends to the host."""
        self.start(fragment)
        return self.drain(fragment.id)

    def start(self, fragment: plan.Fragment) -> None:
        """Build and open a fragment (a hash join reads its whole build input here)."""
        root = build_tree(self.db, fragment, self.inbox, self.timeout, self._spools)
        root.open()
        self._open[fragment.id] = (root, fragment)

    def overflow_cut(self, frag_id: str) -> int | None:
        """The cut of the distributed Simple hash join of an opened fragment after its build
        (None: its table did not overflow); see ``minidb.cluster.overflow``."""
        root, _ = self._open[frag_id]
        for op in root.walk():
            if getattr(op, "distributed", None) is not None:
                return op.cut
        return None

    def bit_filter(self, frag_id: str) -> BitFilter:
        """The bit-vector filter the join of an opened fragment built during its build phase
        (what a Gamma join process sends its scheduler, Section 2)."""
        root, _ = self._open[frag_id]
        for op in root.walk():
            if isinstance(op, BuildBitFilter):
                return op.filter
        raise MinidbError(f"internal error: fragment {frag_id} builds no bit filter")

    def drop_spools(self, names: list[str]) -> None:
        """Remove the overflow files kept under ``names``."""
        for name in names:
            for heap in self._spools.pop(name, []):
                self.db.ctx.drop_temp(heap)

    def drain(self, frag_id: str) -> np.ndarray | None:
        """Run an opened fragment to its end into its sink."""
        root, fragment = self._open.pop(frag_id)
        sink = fragment.sink
        out = None
        try:
            if isinstance(sink, plan.SplitTo | plan.ToHost):
                to_host = isinstance(sink, plan.ToHost)
                split = SplitTable(_Opened(root), self.node_id,
                                   fragment.id if to_host else sink.exchange,
                                   "host" if to_host else sink.mode,
                                   [] if to_host else sink.consumers,
                                   None if to_host else sink.partitioner, self._send, self._wait,
                                   self._local, self.packet_bytes, self._flush_bytes())
                try:
                    split.run()
                except Exception as e:
                    if not to_host:
                        self._fail_exchange(sink.exchange, sink.consumers, e)
                    raise
                self._count_split(split)
                if to_host:
                    out = _concat(split.host_batches, root.schema)
            elif isinstance(sink, plan.StoreInto):
                from minidb.exec.store import Store

                target = self.db.catalog.get(sink.table)
                store = Store(_Opened(root), target)
                store.collect()
                self._count_tree(store, skip_root_children=True)
                self._count_inserted(target, store.stats.extra.get("stored", 0))
                self.db.finish_change()
            elif isinstance(sink, plan.Hold):
                self._held.setdefault(sink.key, []).extend(_Opened(root))
            else:
                raise MinidbError(f"internal error: unknown sink {sink!r}")
            self._keep_overflow(root)
        finally:
            root.close()
        self._count_tree(root)
        return out

    def _keep_overflow(self, root: Operator) -> None:
        """File the overflow files a distributed Simple hash join left under the plan's names."""
        for op in root.walk():
            heaps = getattr(op, "overflow_heaps", None)
            if getattr(op, "distributed", None) is not None and heaps:
                for side, heap in heaps.items():
                    self._spools.setdefault(op.distributed["spools"][side], []).append(heap)

    def keyed(self, table: str, column: str) -> bool:
        """Whether this node's fragment of ``table`` can be looked up by ``column`` (an index,
        or the table hashed or clustered on it): what index nested loops needs."""
        from minidb.exec.join.index_nested_loops import keyed_path

        return keyed_path(self.db.catalog.get(table), column, []) is not None

    def store_held(self, key: str, name: str, schema: Schema) -> dict:
        """Write the tuples a ``hold`` sink kept as this node's fragment of a new relation ``name``
        (the store operator of CREATE TABLE AS); returns their count and column statistics."""
        parts = self._held.pop(key, [])
        kept = _concat(parts, schema) if parts else np.empty(0, dtype=schema.dtype)
        records = schema.gather(kept)
        self.create_fragment(name, schema, records)
        with self._lock:
            self._add_tuples("store", len(records))
            self._work["tuples_inserted"] += len(records)
        stats = self.db.catalog.get(name).stats  # computed once, as the fragment was stored
        return {"records": len(records),
                "stats": {c.name.lower(): stats_to_json(stats[c.name.lower()])
                          for c in schema.columns}}

    def insert_held(self, key: str, table: str) -> int:
        """Insert the tuples a ``hold`` sink kept (moved tuples of an UPDATE)."""
        parts = self._held.pop(key, [])
        records = _concat(parts, self.db.catalog.get(table).schema)
        return self.insert(table, records)

    def insert(self, table: str, records: np.ndarray) -> int:
        if len(records):
            self.db.catalog.get(table).insert(records)
            self.db.finish_change()
        with self._lock:
            self._add_tuples("store", len(records))
            self._work["operators_started"] += 1
        self._count_inserted(self.db.catalog.get(table), len(records))
        return len(records)

    def delete(self, table: str, filters: list, hint=None) -> int:
        from minidb.exec.modify import Delete

        scan = plan.Fragment("delete", plan.Scan(table, filters, with_rids=True), hint=hint)
        t = self.db.catalog.get(table)
        self._undo = []
        keep = None
        if self.db.journal is None:  # before-images, as for UPDATE
            def keep(batch: np.ndarray) -> np.ndarray:
                self._undo.append((table, "insert", t.schema.gather(batch).copy(), None))
                return batch
        root = Delete(Materialize(build_tree(self.db, scan, None), keep), t)
        count = int(root.collect()["count"].sum())
        self.db.finish_change()
        self._count_tree(root)
        self._count_index_changes(self.db.catalog.get(table), count)
        return count

    def update(self, table: str, filters: list, assignments: dict, partitioner,
               consumers: list[int] | None, exchange_id: str, hint=None) -> int:
        """UPDATE this fragment; with ``moves``, a tuple whose new values belong to another node
        (``consumers[partitioner.route(tuple)]``) is deleted here and sent there through exchange
        ``exchange_id``; ``consumers`` is None when the update cannot move tuples."""
        moves = consumers is not None
        t = self.db.catalog.get(table)
        found_by = plan.Fragment("update", plan.Scan(table, filters, with_rids=True), hint=hint)
        tree = build_tree(self.db, found_by, None)
        # A heap file scanned in page order is changed a cluster at a time, right after the scan
        # read it, while its pages are still in the pool: one pass over the fragment, as NonStop
        # SQL's disc process updates the rows of the blocks it reads. Any other access path
        # (an index, a file whose tuples move when their key changes) finds every match first,
        # so that a changed tuple cannot be met again further on (the Halloween problem).
        in_place = (not moves and t.organization == "heap" and t.key is None
                    and {op.kind for op in tree.walk()} & SCAN_KINDS == {"heap_scan"})
        if in_place:
            for op in tree.walk():
                if op.kind == "heap_scan":
                    op.keep = True
        source = tree if in_place else Materialize(tree)
        changed = kept = 0
        leaving = []
        # before-images, to undo this node's part if another node fails the statement (the
        # coordinator's ``undo_change``); with a data directory the journal does that. A heap
        # file's record ids stay put; in a clustered or hash file a changed tuple may move, so
        # it is found again by its new values
        self._undo = []
        undo = self.db.journal is None
        how = "rids" if t.organization == "heap" else "values"
        source.open()
        try:
            while (found := source.next()) is not None:
                old = t.schema.gather(found).copy() if undo else None
                rids, records = new_records(t, found, assignments)
                stay = np.ones(len(records), dtype=bool)
                if moves and len(records):
                    stay = np.asarray(consumers)[partitioner.route(records)] == self.node_id
                if stay.any():
                    t.update(rids[stay], records[stay])
                    if undo:
                        after = rids[stay] if how == "rids" else records[stay]
                        self._undo.append((table, how, old[stay], after))
                if (~stay).any():
                    t.delete(rids[~stay])
                    leaving.append(records[~stay])
                    if undo:
                        self._undo.append((table, "insert", old[~stay], None))
                changed += len(records)
                kept += int(stay.sum())
        except Exception as e:
            if moves:  # the nodes waiting for the tuples that move must not wait in vain
                self._fail_exchange(exchange_id, consumers, e)
            raise
        finally:
            source.close()
        self._count_tree(source)
        self.db.finish_change()
        with self._lock:
            self._add_tuples("store", changed)
        self._count_audit(t.schema, changed)
        self._count_index_changes(t, kept, changed=set(assignments))
        self._count_index_changes(t, changed - kept)  # moved away: deleted here
        if moves:
            away = np.concatenate(leaving) if leaving else np.empty(0, dtype=t.schema.dtype)
            split = SplitTable(ArrayScan(t.schema, away), self.node_id, exchange_id,
                               "partition", consumers, partitioner, self._send,
                               self._wait, self._local, self.packet_bytes, self._flush_bytes())
            split.run()
            self._count_split(split)
        return changed

    def undo_change(self, exchange_id: str | None = None) -> int:
        """Put back what this node's part of the last UPDATE or DELETE changed (its
        before-images), and drop the moved tuples it holds for exchange ``exchange_id``: another
        node failed the statement, and without a data directory nothing else would undo this
        node's part (the statement must change every node or none). Returns how many tuples
        were put back."""
        if exchange_id is not None:
            self._held.pop(exchange_id, None)
        undo, self._undo = self._undo, []
        for table, how, old, after in reversed(undo):
            t = self.db.catalog.get(table)
            if how == "rids":
                t.update(after, old)
            else:
                if how == "values":  # the changed tuples, wherever the file moved them
                    t.delete(self._rids_of(t, after))
                t.insert(old)  # a deleted tuple, or one that had moved away: back again
        if undo:
            self.db.finish_change()
        return sum(len(old) for _, _, old, _ in undo)

    def _rids_of(self, t: Table, records: np.ndarray) -> np.ndarray:
        """Record ids of tuples of ``t`` equal to ``records`` (as many of each as it holds)."""
        everything = plan.Fragment("undo", plan.Scan(t.name, [], with_rids=True))
        found = Materialize(build_tree(self.db, everything, None)).collect()
        wanted = Counter(r.tobytes() for r in records)
        rids = []
        for rid, r in zip(found[RID].tolist(), t.schema.gather(found), strict=True):
            if wanted[key := r.tobytes()] > 0:
                wanted[key] -= 1
                rids.append(rid)
        return np.asarray(rids, dtype=np.int64)

    def forget_undo(self) -> None:
        """The statement succeeded everywhere: the before-images are not needed any more."""
        self._undo = []

    def update_check(self, table: str, filters: list, assignments: dict,
                     fragments: PredicateFragments, hint=None) -> int:
        """What ``update`` would change here, checked and not done: raise
        ``FragmentCoverageError`` if a changed tuple lies in no fragment of ``fragments`` or in
        several (Distributed INGRES §2). Returns how many tuples the update would change."""
        t = self.db.catalog.get(table)
        found_by = plan.Fragment("update check", plan.Scan(table, filters, with_rids=True),
                                 hint=hint)
        scan = Materialize(build_tree(self.db, found_by, None))
        _, records = new_records(t, scan.collect(), assignments)
        self._count_tree(scan)
        fragments.check_coverage(records, f"a tuple on node {self.node_id} after the update")
        return len(records)

    def rehome(self, table: str, partitioner, consumers: list[int], exchange_id: str) -> int:
        """Send away the tuples of this fragment that ``partitioner`` now routes to another node
        (``consumers[route(tuple)]``): after LH* splits (``minidb.sdds.table``), the rows of a
        bucket that moved to another node. Returns how many left."""
        t = self.db.catalog.get(table)
        everything = plan.Fragment("rehome", plan.Scan(table, [], with_rids=True))
        scan = Materialize(build_tree(self.db, everything, None))
        found = scan.collect()
        self._count_tree(scan)
        rids, records = new_records(t, found, {})
        leave = np.zeros(len(records), dtype=bool)
        if len(records):
            leave = np.asarray(consumers)[partitioner.route(records)] != self.node_id
        if leave.any():
            t.delete(rids[leave])
        self.db.finish_change()
        self._count_index_changes(t, int(leave.sum()))
        split = SplitTable(ArrayScan(t.schema, records[leave]), self.node_id, exchange_id,
                           "partition", consumers, partitioner, self._send,
                           self._wait, self._local, self.packet_bytes, self._flush_bytes())
        split.run()
        self._count_split(split)
        return int(leave.sum())

    def distribute_counts(self, table: str, fragments: PredicateFragments) -> list[int]:
        """DISTRIBUTE's check (Distributed INGRES §2), which changes nothing: how many tuples of
        this node's fragment of ``table`` each disk node would hold under ``fragments``. A tuple
        that satisfies none of the predicates, or several, raises ``FragmentCoverageError``
        naming the tuple and this node."""
        scan = build_tree(self.db, plan.Fragment("distribute check", plan.Scan(table)), None)
        counts = np.zeros(fragments.num_nodes, dtype=np.int64)
        for batch in scan:
            fragments.check_coverage(batch, f"a tuple on node {self.node_id}")
            counts += np.bincount(fragments.route(batch), minlength=len(counts))
        self._count_tree(scan)
        return [int(c) for c in counts]

    # -- counters -------------------------------------------------------------------------------
    def _reset_work(self) -> None:
        self._work = dict.fromkeys(WORK_FIELDS + EXTRA_FIELDS, 0)
        self._work["tuples"] = {}
        self._work["operators"] = {}
        self._work["join"] = {}  # what the join plug-ins counted (overflows, spills): not priced

    def _count_inserted(self, table, n: int) -> None:
        """Count ``n`` tuples inserted into ``table`` and the index entries they added."""
        with self._lock:
            self._work["tuples_inserted"] += int(n)
        self._count_index_changes(table, n)

    def _count_audit(self, schema: Schema, n: int) -> None:
        """Count the audit of ``n`` updated rows: one record image (the schema's record size)
        each. NonStop SQL logged "about 16MB of log data" for the 80,000 rows its 1% update
        changed on F16, 200 bytes (one record) a row (Englert et al. 1989, text under
        Figure 9)."""
        with self._lock:
            self._work["audit_bytes"] += int(n) * schema.dtype.itemsize

    def _count_index_changes(self, table, n: int, changed: set[str] | None = None) -> None:
        """Count the index entries that ``n`` tuples changed in ``table``: every index (the
        clustered one included) for an insert or a delete, or only the indexes on the columns
        in ``changed`` for an update in place. An update that changes the clustering key
        moves its tuple, so it changes every index."""
        indexed = [c.lower() for c in table.indexes]
        if table.organization == "clustered" and table.key is not None:
            indexed.append(table.key.lower())
        if changed is not None:
            names = {c.lower() for c in changed}
            if table.key is not None and table.key.lower() in names:
                names = set(indexed)
            indexed = [c for c in indexed if c in names]
        if n and indexed:
            with self._lock:
                self._work["index_entries_changed"] += int(n) * len(indexed)

    def _add_tuples(self, kind: str, n: int) -> None:
        if n:
            self._work["tuples"][kind] = self._work["tuples"].get(kind, 0) + int(n)

    def _count_tree(self, root: Operator, skip_root_children: bool = False) -> None:
        """Add the work of one operator tree run on this node. The iterators of a tree run as
        one pipeline in one process, so the tree counts as ONE operator started, as a Gamma
        operator process (its scan, predicate, projection and split table) does (Section 2)."""
        ops = [root] if skip_root_children else list(root.walk())
        with self._lock:
            self._work["operators_started"] += 1
            for op in ops:
                # entries a dense index scan compared count like tuples scanned (§5.1)
                n = (max(op.stats.tuples_in, op.stats.tuples_out)
                     + int(op.stats.extra.get("entries_compared", 0)))
                self._work["operators"][op.kind] = self._work["operators"].get(op.kind, 0) + int(n)
                if isinstance(op, JoinAlgorithm):  # each join declares what it is charged for
                    for kind, n in op.priced_work().items():
                        self._add_tuples(kind, n)
                    self._work["tuples_spooled"] += int(op.stats.extra.get("tuples_spooled", 0))
                    for key, n in op.stats.extra.items():
                        self._work["join"][key] = self._work["join"].get(key, 0) + int(n)
                elif op.kind in COST_KIND:
                    self._add_tuples(COST_KIND[op.kind], n)
                if isinstance(op, ApplyBitFilters | BuildBitFilter):  # unpriced extras
                    for key, n in op.stats.extra.items():
                        self._work["join"][key] = self._work["join"].get(key, 0) + int(n)

    def _count_split(self, split: SplitTable) -> None:
        """Add a split table's traffic; it is the output of an operator already counted."""
        with self._lock:
            c = split.counters
            for key in ("packets_sent_remote", "bytes_sent_remote", "packets_short_circuited",
                        "bytes_short_circuited", "packets_to_host", "bytes_to_host",
                        "messages_sent", "control_messages"):
                self._work[key] += c[key]
            if split.mode != "host":
                self._add_tuples("partition", c["tuples"])
            else:
                self._add_tuples("result", c["tuples"])

    def take_counters(self) -> dict:
        """What this node did since the last call (one phase), as a plain dict."""
        io = self.db.disk.io.minus(self._io)
        buf = self.db.buffer.counters.minus(self._buf)
        self._io, self._buf = self.db.disk.io.snapshot(), self.db.buffer.counters.snapshot()
        with self._lock:
            work, _ = self._work, self._reset_work()
        work.update(pages_read=io.reads, pages_read_seq=io.seq_reads,
                    pages_read_random=io.rand_reads, pages_written=io.writes,
                    pages_written_seq=io.seq_writes, pages_written_random=io.rand_writes,
                    buffer_hits=buf.hits, buffer_misses=buf.misses,
                    buffer_calls=buf.hits + buf.misses)
        return work

    def close(self) -> None:
        self.db.close()


class _Opened(Operator):
    """Wraps an already opened tree so a sink can iterate it without opening it again."""

    kind = "opened"

    def __init__(self, root: Operator):
        super().__init__()
        self.root, self.schema = root, root.schema

    def _open(self) -> None:
        pass

    def _next(self):
        return self.root.next()

    def _close(self) -> None:
        pass


def node_dir(data_dir: str | os.PathLike, node_id: int) -> str:
    """Node ``node_id``'s own directory inside a parallel database's data directory."""
    return os.path.join(os.fspath(data_dir), f"node-{node_id}")


def _concat(parts: list[np.ndarray], schema: Schema) -> np.ndarray:
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.empty(0, dtype=schema.dtype)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


__all__ = ["Node", "build_tree", "node_dir", "RID"]
