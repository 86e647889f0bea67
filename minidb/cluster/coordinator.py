"""The coordinator: Gamma's scheduler and query manager over a set of minidb nodes.

This rebuilds the control side of Gamma's query execution (DeWitt et al. 1988, Section 2,
"Query Execution"). The host translates a query into operator trees; a scheduler starts the
operators on the nodes, and for each operator on each node three control messages are
exchanged: the scheduler's *start* message, the operator's *reply* identifying its process, and
the *completion* message when it is done. Operators that must not overlap run in separate
*phases*: a hash join first builds its tables from the inner relation everywhere, and only when
that phase has ended on every node is the outer relation scanned to probe them. Relations a
query stores (``CREATE TABLE ... AS SELECT``) are spread round-robin over the disk nodes,
Gamma's default for query results (Section 2.2).

The parallel subset: one-table SELECT (selection on every disk node, or only on the nodes
``Partitioner.nodes_for_range`` names; each node chooses heap or index with the single-node
planner), projections, scalar aggregates (partials per node, combined at the host), GROUP BY
(partials sent by a hash of the group key to the aggregation nodes, which compute the final
groups), ORDER BY and LIMIT at the host, an equi-join of two tables by one parallel hash join
(also a LEFT JOIN), joins of up to four tables (or with no equality at all) as one right-deep
pipeline of hash joins (``_join_pipeline``: tables with an equality are hash-partitioned on
their key, the others broadcast), CREATE TABLE AS SELECT, INSERT VALUES, UPDATE and DELETE.
Anything else is an ``UnsupportedSQLError`` naming it.

Duplicate elimination and HAVING run where Gamma runs aggregates (Section 7): on the nodes,
after a repartitioning by a hash of the grouping attributes. ``SELECT DISTINCT`` is a GROUP BY
on every output column: each node drops its own duplicates, sends the rest by a hash of all
output columns, and the receiving node drops the duplicates that met there (over a join, the
join nodes do this with the join's result). ``COUNT / SUM /
AVG(DISTINCT x)`` is repartitioned on (group columns, x) the same way; the nodes aggregate the
distinct values and the host combines their partial results. ``HAVING`` filters the groups
right after their final aggregate: on the aggregation nodes for GROUP BY, at the host for a
scalar aggregate or a DISTINCT aggregate (whose final step is there). ``UNION [ALL]`` runs
each SELECT as its own parallel query and appends (and for UNION deduplicates) at the host;
an uncorrelated subquery runs first as a parallel query of its own, and its answer becomes a
constant of the statement (so partition pruning still applies).

Hints (``db.sql(text, hint=...)`` or a leading ``/*+ ... */`` comment): the single-node access
hints (``scan``, ``index``, ``clustered_index``, ``hash_join``, ``nested_loops``), a join placement
(``local`` = disk nodes, ``remote`` = diskless nodes, ``allnodes``: Gamma's three configurations),
and for ``CREATE TABLE ... AS SELECT`` the declustering of the result (``partition=hash(a)``, any
spec ``create_table`` accepts; round-robin when absent; ``partition=local``: every node keeps the
tuples it selected, NonStop SQL's plan for its 1% select-and-insert).

Simplified, compared with Gamma: relations given as generator specs are generated at the host
and routed like an Arrow source (the nodes do not generate their own slices); a plain
``CREATE TABLE AS`` selection is pipelined into store operators on the disk nodes, but they
write their fragment in a phase of their own after the selection ends (Gamma overlaps the two);
a CREATE TABLE AS over a join, an aggregate or ORDER BY is gathered at the host and then dealt
out; the host is the coordinator's own process, not a node. The two sides of a join are
hashed by value (``minidb.hashing.hash_columns``), so keys of different types (int and float,
char(5) and char(9)) meet on the same node.

Persistence. ``connect(nodes=N, data_dir=D)`` gives node i the directory D/node-i (its pages and
its own catalog, see ``minidb.database``) and keeps the coordinator's catalog in D/cluster.json:
the number of nodes, which are disk nodes, the page size, and per table its schema, tuple count,
statistics and partitioning (the partitioner's kind, columns and what it learned: boundaries,
the next node of round-robin). It is rewritten atomically after each statement that changes a
table, once the nodes have saved their own catalogs. Opening D again starts the nodes on their
directories and rebuilds the host's copies of the tables from the catalog; the node count must
be the same. The coordinator's catalog decides which tables exist: a fragment no entry names
(a load or CREATE TABLE AS cut off before the catalog was written) is dropped, and a table
whose fragment is missing on a node is an error naming both. Simplified: the nodes and the
coordinator save one after the other, with no two-phase commit, so a crash between them is
resolved by that rule, not by recovery; a user's own partitioner class is saved with pickle and
must be importable when the database is reopened; with Ray on several machines, node i's files
are wherever its actor runs, so D must be a path that every machine shares (or the placement
must be the same when reopening).
"""

from __future__ import annotations

import base64
import copy
import itertools
import os
import pickle
import re
import shutil
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa

from minidb.catalog import (
    CATALOG_FILE,
    CATALOG_VERSION,
    CLUSTER_FILE,
    ColumnStats,
    StatsBuilder,
    Table,
    _stats_of,
    read_json,
    schema_from_json,
    schema_to_json,
    stats_from_json,
    stats_to_json,
    write_json_atomically,
)
from minidb.cluster.overflow import MAX_DISTRIBUTED_PASSES, ROUTING_SEED, spool_names
from minidb.cluster.plan import (
    Aggregation,
    Averages,
    DuplicateElimination,
    Fragment,
    Hold,
    Join,
    OverflowTest,
    Phase,
    Projection,
    ReadSpool,
    Receive,
    Scan,
    Selection,
    SplitTo,
    ToHost,
    check_exchanges,
)
from minidb.database import (
    DEFAULT_PAGE_SIZE,
    Database,
    ResultRows,
    check_data_dir,
    check_name_argument,
    source_layout,
)
from minidb.errors import MinidbError, UnsupportedSQLError
from minidb.exec.aggregate import (
    DISTINCT_COLUMN,
    HashAggregate,
    average_expr,
    distinct_stages,
    split_aggregates,
)
from minidb.exec.expr import Col, Const, conjunction, key_range
from minidb.exec.filter import Filter
from minidb.exec.iterator import Operator, check_rid_fetch
from minidb.exec.project import Project
from minidb.exec.scan import RID, ArrayScan
from minidb.exec.sort import ExternalSort
from minidb.exec.union import UnionAll
from minidb.parallel.partitioners import (
    Hash,
    Partitioner,
    PredicateFragments,
    Range,
    RangeUniform,
    RoundRobin,
    parse_partitioning,
)
from minidb.sql.compound import SubqueryPlan, UnionQuery, subquery_answer
from minidb.sql.hints import (
    check_join_choice,
    join_class,
    parse_hints,
    split_hint_comment,
    with_default_join,
)
from minidb.sql.operators import Limit
from minidb.sql.planner import (
    aggregate_query,
    describe_answer,
    divide_averages,
    group_key_outputs,
    is_integral,
    selectivity,
)
from minidb.sql.translate import (
    CreateTableAsStatement,
    DeleteStatement,
    InsertStatement,
    JoinEdge,
    SelectQuery,
    SelectStatement,
    UpdateStatement,
    translate,
)
from minidb.storage.schema import Schema, concat_records
from minidb.storage.sources import DEFAULT_BATCH_ROWS, BatchSource, check_batch_rows, open_source

CLUSTER_FORMAT = "minidb-cluster"
PLACEMENTS = ("local", "remote", "allnodes")  # where a join runs: disk, diskless or all nodes
CONTROL_MESSAGES_PER_OPERATOR = 3  # start, reply with the process id, completion (Gamma §2)


def unsupported_in_parallel(construct: str) -> UnsupportedSQLError:
    """The error for SQL that one node runs but the parallel engine does not (docs/sql.md lists
    these differences)."""
    return UnsupportedSQLError(f"unsupported in parallel: {construct} (see docs/sql.md)")


def model_phases(phases: list[dict], scheduler_messages: int, profile, page_size: int,
                 **options):
    """The cost model's ``ModeledTime`` for the counters of a statement's phases (``options``
    go to ``minidb.cost.modeled_time``: ``startup``, ``overlap``)."""
    from dataclasses import fields

    from minidb.cost.model import WorkCounters, modeled_time

    names = {f.name for f in fields(WorkCounters)}

    def work(c: dict) -> WorkCounters:
        w = WorkCounters(**{k: v for k, v in c.items() if k in names})
        # results returned to the host leave the node through its network interface too
        # (Gamma's host is a separate machine on the ring)
        w.packets_sent_remote += c.get("packets_to_host", 0)
        w.bytes_sent_remote += c.get("bytes_to_host", 0)
        return w

    return modeled_time([{n: work(c) for n, c in phase.items()} for phase in phases], profile,
                        page_size, coordinator_messages=scheduler_messages, **options)


class ParallelResult(ResultRows):
    """What a parallel statement gave back; the surface of ``minidb.Result`` plus the phases.

    ``phases`` is a list with one dict per phase, ``{node_id: counters}``; ``per_node`` sums
    them per node; ``counters`` is the flat total over nodes and phases (with the scheduler's
    ``control_messages``). ``modeled_s`` is where the cost model plugs in: the time the
    profile named by ``connect(profile=...)`` would have taken for these counters
    (``minidb.cost.modeled_time``), or None when no profile is set. ``phase_wall_s`` holds the
    real seconds each phase took on this machine (never priced; see ``data_moved``). ``plan``
    is the typed plan that ran: one ``minidb.cluster.plan.Phase`` per phase.
    """

    def __init__(self, schema: Schema, records: np.ndarray, kind: str, rows: int, wall_s: float,
                 phases: list[dict], phase_names: list[str], scheduler_messages: int,
                 plan_text: str, statement: str, modeled_s: float | None = None,
                 phase_wall_s: list[float] | None = None, plan: list[Phase] | None = None):
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


class ParallelDatabase:
    """A shared-nothing minidb: ``num_nodes`` nodes (inline objects or Ray actors) and a host."""

    def __init__(self, nodes: int = 2, backend: str = "inline", address: str | None = None,
                 disk_nodes: int | None = None, diskless_nodes: int | None = None,
                 page_size: int | None = None, buffer_pages: int = 1024, buffer_policy: str = "lru",
                 memory_pages: int | None = None, data_dir: str | os.PathLike | None = None,
                 timeout: float | None = None, packet_bytes: int = 2048, profile: str | None = None,
                 num_cpus: int | None = None, rid_fetch: str = "sorted", join: str | None = None):
        check_rid_fetch(rid_fetch)
        self.join = check_join_choice(join)
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                    or not timeout > 0):
            raise MinidbError(f"timeout must be a positive number of seconds (or None: 60 s "
                              f"stretched by the machine's load), not {timeout!r}")
        if isinstance(nodes, bool) or not isinstance(nodes, int | np.integer) or nodes < 1:
            raise MinidbError(f"nodes must be a positive whole number, not {nodes!r}")
        if data_dir is not None:
            check_data_dir(data_dir)
        self.data_dir = None if data_dir is None else Path(data_dir)
        stored = None if self.data_dir is None else self._stored_catalog(int(nodes))
        if stored is not None:
            disk_nodes, page_size = _stored_roles(stored, self.data_dir, disk_nodes,
                                                  diskless_nodes, page_size)
            diskless_nodes = None
        page_size = DEFAULT_PAGE_SIZE if page_size is None else page_size
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
        self.host = Database(page_size=page_size, buffer_pages=buffer_pages,
                             buffer_policy=buffer_policy, memory_pages=memory_pages,
                             rid_fetch=rid_fetch)
        kwargs = [dict(node_id=i, num_nodes=self.num_nodes, has_disk=i in self.disk,
                       page_size=page_size, buffer_pages=buffer_pages, buffer_policy=buffer_policy,
                       memory_pages=memory_pages,
                       data_dir=None if data_dir is None else str(data_dir), timeout=timeout,
                       packet_bytes=packet_bytes, rid_fetch=rid_fetch)
                  for i in range(self.num_nodes)]
        if backend == "inline":
            from minidb.cluster.backends import InlineBackend

            self.backend = InlineBackend(self.num_nodes, kwargs, timeout)
        else:
            from minidb.cluster.backends import RayBackend

            try:
                self.backend = RayBackend(self.num_nodes, kwargs, timeout, address, num_cpus)
            except BaseException:
                self.host.close()
                raise
        self.schemes: dict[str, Partitioner] = {}
        self._ids = itertools.count()
        self._closed = False
        # temporary node directories, removed at close even if their node was killed
        self._scratch = [] if self.data_dir is not None else \
            self.backend.call_all("data_path", {n: () for n in range(self.num_nodes)}, "start nodes")
        if self.data_dir is not None:
            try:
                self._reopen(stored)
            except BaseException:
                self.close()
                raise

    # -- tables ---------------------------------------------------------------------------------
    def create_table(self, name: str, source, partition="round_robin", organization: str = "heap",
                     key: str | None = None, schema: Schema | pa.Schema | None = None,
                     batch_rows: int = DEFAULT_BATCH_ROWS) -> Table:
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
        shadow = self.host.create_table(name, layout.arrow_schema().empty_table(), schema=layout)
        loading = False
        try:
            p = parse_partitioning(partition, shadow.schema, len(self.disk))
            if self.data_dir is not None:
                partitioner_to_json(p)  # a partitioner that cannot be saved fails before the load
            batches = _fitted_batches(p, src, shadow.schema, batch_rows, len(self.disk), name)
            sizes = _fragment_sizes(p, src, shadow.schema, batch_rows, len(self.disk))
            loading = True
            self.backend.call_all("load_begin", {
                n: (name, shadow.schema, organization, key, sizes[i]) for i, n in enumerate(self.disk)
            }, "load")
            stats, rows = StatsBuilder(shadow.schema, src.num_rows), 0
            for records in batches:
                stats.add(records)
                rows += len(records)
                parts = p.partition(records) if len(records) else [records] * len(self.disk)
                self.backend.call_all("load_batch", {
                    n: (name, parts[i]) for i, n in enumerate(self.disk) if len(parts[i])
                }, "load")
            self.backend.call_all("load_end", {n: (name,) for n in self.disk}, "load")
        except BaseException:
            self.host.drop_table(name)
            try:
                if loading:
                    self.backend.call_all("load_abort", {n: (name,) for n in self.disk}, "load")
                self._drop_everywhere(name)
            except MinidbError:  # e.g. a dead node: the first error is the one to report
                pass
            raise
        shadow.stats = stats.finish()
        shadow._num_records = rows
        self.schemes[name.lower()] = p
        self._save()
        self._take_counters()
        return shadow

    def create_index(self, table: str, column: str, clustered: bool = False) -> None:
        """Index every fragment of ``table`` on ``column`` (clustered: re-store it sorted)."""
        self._check_open()
        t = self.host.catalog.get(check_name_argument(table, "the table"))
        t.schema.column(check_name_argument(column, "the indexed column"), f"table {t.name!r}")
        self.backend.call_all("create_index", {n: (t.name, column, clustered) for n in self.disk},
                              "create index")
        self._save()
        self._take_counters()

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
        t = self.host.catalog.get(table)
        return self.backend.call_all("fragment", {n: (t.name,) for n in self.disk})

    def partitioner(self, table: str) -> Partitioner:
        return self.schemes[self.host.catalog.get(table).name.lower()]

    def tables(self) -> list[str]:
        return self.host.tables()

    def drop_table(self, name: str) -> None:
        self._check_open()
        t = self.host.catalog.get(name)
        self._drop_everywhere(t.name)
        self.host.drop_table(t.name)
        self.schemes.pop(t.name.lower(), None)
        self._save()

    def _drop_everywhere(self, name: str) -> None:
        self.backend.call_all("drop_table", {n: (name,) for n in self.disk}, "drop table")

    # -- SQL ------------------------------------------------------------------------------------
    def sql(self, text: str, hint: str | None = None) -> ParallelResult:
        """Run one statement of the parallel subset (see the module docstring)."""
        self._check_open()
        if not isinstance(text, str):
            raise MinidbError(f"sql() takes the statement as a string, not {type(text).__name__}")
        body, comment = split_hint_comment(text)
        placement = None
        result_partition = None
        specs = []
        for h in (hint, comment):
            h, spec = _partition_hint(h or "")
            result_partition = spec or result_partition
            words = [w for w in h.replace(",", " ").split()]
            placement = next((w.lower() for w in words if w.lower() in PLACEMENTS), placement)
            specs.append(" ".join(w for w in words if w.lower() not in PLACEMENTS) or None)
        hints = with_default_join(parse_hints(*specs), self.join)
        statement = translate(body, self.host.catalog)
        self._take_counters("start of statement")
        run = _Run(self, hints, next(self._ids))
        run.placement = placement
        if result_partition is not None and not isinstance(statement, CreateTableAsStatement):
            raise MinidbError("the hint partition=... only applies to CREATE TABLE ... AS SELECT")
        start = time.perf_counter()
        if isinstance(statement, SelectStatement):
            schema, records = run.select(statement.query)
            kind, rows = "select", len(records)
        elif isinstance(statement, CreateTableAsStatement):
            rows = self._create_table_as(statement, run, result_partition or "round_robin")
            schema, records, kind = _count(rows), np.array([(rows,)], _count(rows).dtype), "create_table_as"
        elif isinstance(statement, UpdateStatement):
            rows = run.update(statement)
            schema, records, kind = _count(rows), np.array([(rows,)], _count(rows).dtype), "update"
        elif isinstance(statement, DeleteStatement):
            rows = run.delete(statement)
            schema, records, kind = _count(rows), np.array([(rows,)], _count(rows).dtype), "delete"
        elif isinstance(statement, InsertStatement):
            rows = run.insert(statement)
            schema, records, kind = _count(rows), np.array([(rows,)], _count(rows).dtype), "insert"
        else:
            raise unsupported_in_parallel(type(statement).__name__)
        if kind != "select":
            self._save()  # after the nodes saved their fragments (each phase ends with that)
        wall = time.perf_counter() - start
        return ParallelResult(schema, records, kind, rows, wall, run.phases, run.phase_names,
                              run.scheduler_messages, run.explain(), text,
                              self._modeled(run), run.phase_wall_s, run.plan)

    def _create_table_as(self, st: CreateTableAsStatement, run: _Run, partition) -> int:
        """CREATE TABLE AS: a plain one-table selection is pipelined into store operators on the
        disk nodes, as Gamma's "retrieve into" runs (Sections 2.2 and 4); anything else (joins,
        aggregates, ORDER BY, a partitioning that must see the data first) is computed at the
        host and then dealt out."""
        q = st.query
        plain = (isinstance(q, SelectQuery) and len(q.refs) == 1 and not q.aggregating and not q.order and q.limit is None
                 and q.visible == len(q.outputs) and not q.distinct)
        if plain:
            stored = run.select_into(st.name, q, partition)
            if stored is not None:
                return stored
        schema, records = run.select(q)
        return self._store_result(st.name, schema, records, run, partition)

    def _store_result(self, name: str, schema: Schema, records: np.ndarray, run: _Run,
                      partition="round_robin") -> int:
        """Store a query's result as a new relation over the disk nodes: round-robin by default,
        as Gamma stores query results (Section 2.2), or as the ``partition=`` hint says."""
        columns = [c for c in schema.columns if c.name != RID]
        layout = Schema(columns)
        out = layout.gather(records)
        shadow = Table.create(self.host.disk, self.host.buffer, name, layout, out[:0])
        self.host.catalog.add(shadow)
        try:
            p = parse_partitioning(partition, layout, len(self.disk))
            p.fit(out, len(self.disk))
        except BaseException:
            self.host.drop_table(name)
            raise
        parts = p.partition(out) if len(out) else [out] * len(self.disk)
        run.phase(f"store result {p.describe()}",
                  [(n, "create_fragment", (name, layout, parts[i], "heap", None))
                   for i, n in enumerate(self.disk)], operators=1)
        shadow.stats = {c.name.lower(): _stats_of(out[c.name]) for c in columns}
        shadow._num_records = len(out)
        self.schemes[name.lower()] = p
        return len(out)

    def _modeled(self, run: _Run) -> float | None:
        if self.profile is None:
            return None
        return model_phases(run.phases, run.scheduler_messages, self.profile,
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
        tables = []
        for t in self.host.catalog:
            tables.append({"name": t.name, "schema": schema_to_json(t.schema),
                           "records": int(t.num_records),
                           "stats": {k: stats_to_json(v) for k, v in t.stats.items()},
                           "partitioning": partitioner_to_json(self.schemes[t.name.lower()])})
        return {"format": CLUSTER_FORMAT, "version": CATALOG_VERSION, "nodes": self.num_nodes,
                "disk_nodes": self.disk, "diskless_nodes": self.diskless,
                "page_size": self.page_size, "tables": tables}

    def _save(self) -> None:
        """Rewrite the coordinator catalog (a no-op without a data directory)."""
        if self.data_dir is not None:
            write_json_atomically(self.data_dir / CLUSTER_FILE, self._catalog_doc())

    def _reopen(self, stored: dict | None) -> None:
        """Bring the host's copies and the schemes back from ``stored``; make the nodes agree."""
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
            try:
                schema = schema_from_json(e["schema"])
                shadow = Table.create(self.host.disk, self.host.buffer, e["name"], schema,
                                      np.empty(0, dtype=schema.dtype))
                shadow.stats = {k: stats_from_json(v) for k, v in e["stats"].items()}
                shadow._num_records = int(e["records"])
                p = partitioner_from_json(e["partitioning"], schema, len(self.disk))
            except (KeyError, TypeError, ValueError) as exc:
                raise MinidbError(f"the cluster catalog entry of table {e.get('name', '?')!r} "
                                  f"is damaged ({type(exc).__name__}: {exc})") from None
            self.host.catalog.add(shadow)
            self.schemes[shadow.name.lower()] = p
        self._save()
        self._take_counters("reopen")

    # -- life cycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the nodes (a dead node does not make this hang) and the host. A data directory
        keeps everything for ``connect(nodes=N, data_dir=...)``; temporary ones are removed."""
        if self._closed:
            return
        self._closed = True
        try:
            self.backend.shutdown()
        finally:
            self.host.close()
            for path in self._scratch:  # a killed node could not remove its own
                shutil.rmtree(path, ignore_errors=True)

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


def _with_overflow_test(scan: Fragment, key: str, level: int, cuts: list,
                        distributed: dict) -> Fragment:
    """The probe scan ``scan`` with Gamma's overflow test before its split table: tuples routed
    to a node that overflowed, at or above its cut of ``h_level``, are spooled at the producer."""
    return scan.then(OverflowTest(key, level, list(cuts), scan.sink.partitioner,
                                  distributed["spools"]["probe"]))


def _stored_roles(stored: dict, where, disk_nodes, diskless_nodes, page_size) -> tuple[int, int]:
    """Disk node count and page size of a stored cluster; asking for others is an error."""
    disk = stored.get("disk_nodes")
    saved_page = stored.get("page_size")
    nodes = stored.get("nodes")
    if not isinstance(disk, list) or not isinstance(saved_page, int) or disk != list(range(len(disk))):
        raise MinidbError(f"{where}/{CLUSTER_FILE} is damaged (disk nodes or page size)")
    asked = disk_nodes if disk_nodes is not None else \
        (None if diskless_nodes is None else nodes - diskless_nodes)
    if asked is not None and asked != len(disk):
        raise MinidbError(f"{where} holds a database with {len(disk)} disk nodes, not {asked}; "
                          "leave disk_nodes / diskless_nodes out to open it")
    if page_size is not None and page_size != saved_page:
        raise MinidbError(f"{where} holds a database with {saved_page}-byte pages, not {page_size}; "
                          "leave page_size out to open it")
    return len(disk), saved_page


# -- partitioners in the catalog ------------------------------------------------------------------
def partitioner_to_json(p: Partitioner) -> dict:
    """A fitted partitioner as JSON: kind, columns and what it learned. A user's own class is
    pickled (it must be importable again to reopen); one that cannot be pickled is an error."""
    kind = type(p)
    if kind is RoundRobin:
        return {"kind": "round_robin", "next_node": int(p.next_node)}
    if kind is Hash:
        return {"kind": "hash", "columns": list(p.columns), "seed": int(p.seed)}
    if kind in (Range, RangeUniform):
        bounds = p._bounds
        out = {"kind": p.name, "column": p.column,
               "boundaries": None if p.boundaries is None else [_plain(b) for b in p.boundaries],
               "bounds": None if bounds is None else {
                   "dtype": bounds.dtype.str,
                   "values": [bytes(b).hex() for b in bounds] if bounds.dtype.kind == "S"
                   else bounds.tolist()}}
        if kind is RangeUniform:
            out["sample"] = p.sample
        return out
    if kind is PredicateFragments:
        return {"kind": "predicates", "fragments": {str(k): p.texts[k] for k in p.nodes}}
    try:
        data = pickle.dumps(p)
    except Exception as e:
        raise MinidbError(f"partitioner {p.describe()} cannot be saved in the catalog of a data "
                          f"directory ({type(e).__name__}: {e}); make it picklable or use no "
                          "data_dir") from None
    return {"kind": "pickle", "describe": p.describe(), "data": base64.b64encode(data).decode()}


def partitioner_from_json(d: dict, schema: Schema, num_nodes: int) -> Partitioner:
    """The partitioner ``partitioner_to_json`` wrote, fitted for ``num_nodes`` disk nodes."""
    kind = d["kind"]
    if kind == "pickle":
        try:
            p = pickle.loads(base64.b64decode(d["data"]))
        except Exception as e:
            raise MinidbError(f"cannot load the saved partitioner {d.get('describe')!r} "
                              f"({type(e).__name__}: {e}); is its class importable?") from None
        return p
    if kind == "predicates":
        p = PredicateFragments({int(k): v for k, v in d["fragments"].items()}, schema)
        p.fit(None, num_nodes)
        return p
    if kind == "round_robin":
        p = RoundRobin()
        p.fit(None, num_nodes)
        p.next_node = int(d["next_node"])
        return p
    if kind == "hash":
        p = Hash(*d["columns"], seed=int(d["seed"]), schema=schema)
    elif kind == "range":
        p = Range(d["column"], d["boundaries"])
    elif kind == "range_uniform":
        p = RangeUniform(d["column"], d.get("sample"))
    else:
        raise ValueError(f"unknown partitioner kind {kind!r}")
    Partitioner.fit(p, None, num_nodes)
    if kind in ("range", "range_uniform"):
        b = d["bounds"]
        p.boundaries = d["boundaries"]
        if b is None:
            p._bounds = None
        elif np.dtype(b["dtype"]).kind == "S":
            p._bounds = np.array([bytes.fromhex(v) for v in b["values"]], dtype=b["dtype"])
        else:
            p._bounds = np.array(b["values"], dtype=b["dtype"])
    return p


def _plain(v):
    if isinstance(v, bytes | np.bytes_):
        return bytes(v).decode(errors="replace")
    return v.item() if isinstance(v, np.generic) else v



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


class _Run:
    """One statement's phases: the fragments started, the counters and the scheduler messages."""

    def __init__(self, pdb: ParallelDatabase, hints, qid: int):
        self.pdb, self.hints, self.qid = pdb, hints, qid
        self.placement: str | None = None
        self.phases: list[dict] = []
        self.phase_names: list[str] = []
        self.phase_wall_s: list[float] = []
        self.scheduler_messages = 0
        self.plan: list[Phase] = []  # the typed plan, phase by phase
        self.fragments: list[tuple[Fragment, list[int]]] = []  # every fragment started so far
        self._plan: list[str] = []
        self._x = itertools.count()

    def join_algorithm(self, outer: bool = False):
        """The join plug-in class every join node runs (shipped in the plan, so a class defined
        in a notebook or a test reaches Ray workers too): the hinted one, else the default hash
        join; a LEFT JOIN keeps the default when the hinted one cannot preserve a side."""
        from minidb.exec.join.hash_join import HashJoin

        chosen = join_class(self.hints)
        if chosen is None or (outer and not chosen.supports_outer):
            return HashJoin
        from minidb.cluster.backends import ship_by_value

        ship_by_value(chosen)
        return chosen

    def exchange(self, what: str) -> str:
        return f"q{self.qid}.{what}{next(self._x)}"

    def phase(self, name: str, calls: list[tuple[int, str, tuple]], operators: int | None = None,
              texts: list[str] = ()) -> list:
        """Start ``calls`` at once, wait for all of them, collect every node's counters. The
        fragments they start are checked against the statement's others before any runs
        (``minidb.cluster.plan.check_exchanges``) and kept in ``plan``."""
        started: dict[str, tuple[Fragment, list[int]]] = {}
        for node, method, args in calls:
            if method in ("run", "start") and isinstance(args[0], Fragment):
                started.setdefault(args[0].id, (args[0], []))[1].append(node)
        self.fragments += started.values()
        check_exchanges(self.fragments)
        self.plan.append(Phase(name, list(started.values())))
        self._plan.append(f"phase {len(self.phases) + 1}: {name}")
        self._plan += [f"  {t}" for t in texts]
        start = time.perf_counter()
        out = self.pdb.backend.call_many(calls, name)
        self.phase_wall_s.append(time.perf_counter() - start)
        counters = self.pdb._take_counters(f"{name} (counters)")
        self.phases.append({n: c for n, c in enumerate(counters) if _nonzero(c)})
        self.phase_names.append(name)
        started = sum(c["operators_started"] for c in counters) if operators is None \
            else operators * len(calls)
        self.scheduler_messages += CONTROL_MESSAGES_PER_OPERATOR * started
        return out

    def explain(self) -> str:
        return "\n".join(self._plan)

    def dry(self, fragment: Fragment) -> Operator:
        """The fragment's tree built over the host's empty copies of the tables (for schemas)."""
        from minidb.cluster.node import build_tree

        return build_tree(self.pdb.host, fragment, None)

    # -- SELECT -----------------------------------------------------------------------------------
    def select(self, q: SelectQuery | UnionQuery | SubqueryPlan) -> tuple[Schema, np.ndarray]:
        if isinstance(q, SubqueryPlan):
            return self._with_subqueries(q)
        if isinstance(q, UnionQuery):
            return self._union(q)
        if len(q.refs) == 1:
            return self._single(q)
        if len(q.refs) == 2 and len(q.edges) == 1:
            return self._join(q)
        if q.outer:
            raise unsupported_in_parallel("a LEFT JOIN of more than two tables or on more than "
                                          "one equality")
        if len(q.refs) > MAX_PIPELINE_TABLES:
            raise unsupported_in_parallel(f"a join of more than {MAX_PIPELINE_TABLES} tables")
        return self._join_pipeline(q)

    def select_into(self, name: str, q: SelectQuery, partition) -> int | None:
        """Select on the disk nodes and send each result tuple through a split table (round-robin
        unless ``partition`` says otherwise) to the store operator of its disk node, which writes
        it into its fragment of the new relation ``name``. Returns the tuple count, or None when
        the partitioning needs to see the data before routing (range_uniform, lh_star)."""
        pdb = self.pdb
        ref = q.refs[0]
        targets = self._targets(ref)
        spec = Fragment(self.exchange("sel"), Scan(ref.table.name, ref.filters),
                        [Projection(q.outputs)], hint=self.hints)
        layout = Schema([c for c in self.dry(spec).schema.columns if c.name != RID])
        local = isinstance(partition, str) and partition.strip().lower() == "local"
        p = parse_partitioning("round_robin" if local else partition, layout, len(pdb.disk))
        if type(p).grow is not Partitioner.grow:
            return None  # it grows with the data (lh_star): store through the host
        try:
            p.fit(None, len(pdb.disk))
        except MinidbError:
            return None  # it learns from the data: fall back to storing through the host
        shadow = Table.create(pdb.host.disk, pdb.host.buffer, name, layout,
                              np.empty(0, dtype=layout.dtype))
        pdb.host.catalog.add(shadow)
        x, held = self.exchange("store"), self.exchange("held")
        if local:  # each node stores its own results (NonStop SQL's plan for INSERT ... SELECT)
            spec = spec.into(Hold(held))
            calls = [(n, "run", (spec,)) for n in targets]
            texts = [f"select {ref.table.name} on nodes {targets} -> store into {name} locally"]
        else:
            spec = spec.into(SplitTo(x, pdb.disk, p))
            receive = Fragment(self.exchange("recv"), Receive(x, targets, layout), sink=Hold(held),
                               hint=self.hints)
            calls = [(n, "run", (receive,)) for n in pdb.disk] + [(n, "run", (spec,)) for n in targets]
            texts = [f"select {ref.table.name} on nodes {targets} -> {p.describe()} to nodes "
                     f"{pdb.disk}", f"store into {name} on nodes {pdb.disk}"]
        try:
            self.phase("select into", calls, texts=texts)
            # the store operators started above now write what they received (a phase of its
            # own, so one node never runs two disk-using fragments at once)
            done = self.phase("store result", [(n, "store_held", (held, name, layout))
                                               for n in pdb.disk], operators=0)
        except BaseException:
            pdb.host.drop_table(name)
            try:
                pdb._drop_everywhere(name)
            except MinidbError:
                pass
            raise
        shadow.stats = _merge_stats(layout, [d["stats"] for d in done])
        shadow._num_records = sum(d["records"] for d in done)
        pdb.schemes[name.lower()] = p
        return shadow._num_records

    def _targets(self, ref) -> list[int]:
        p = self.pdb.schemes[ref.table.name.lower()]
        disk = self.pdb.disk
        if p.column is None:
            return disk
        found = (key_range(conjunction(ref.filters), p.column, is_integral(ref.table, p.column))
                 if ref.filters else None)
        if found is None:
            return disk
        low, high, _ = found
        nodes = p.nodes_for_range(low, high)
        return disk if nodes is None else [disk[i] for i in sorted(set(nodes))]

    def _single(self, q: SelectQuery) -> tuple[Schema, np.ndarray]:
        ref = q.refs[0]
        targets = self._targets(ref)
        source = Scan(ref.table.name, ref.filters)
        where = f"nodes {targets}" + ("" if targets == self.pdb.disk else " (nodes_for_range)")
        if not q.aggregating and q.distinct:
            return self._distinct(q, source, targets, where)
        if not q.aggregating:
            spec = Fragment(self.exchange("sel"), source, [Projection(q.outputs)], ToHost(),
                            self.hints)
            schema = self.dry(spec).schema
            parts = self.phase("select", [(n, "run", (spec,)) for n in targets],
                               texts=[f"select {ref.table.name} on {where} -> host"])
            return self._finish(q, schema, parts, projected=True)
        if q.distinct_aggregates:
            return self._distinct_aggregate(q, source, targets, where)
        partials, finals, averages = split_aggregates(q.aggregates, q.refs[0].table.schema)
        keys = [Projection(group_key_outputs(ref.table.schema.names, q))] if q.group_keys else []
        spec = Fragment(self.exchange("agg"), source, keys + [Aggregation(q.group_by, partials)],
                        ToHost(), self.hints)
        partial_schema = self.dry(spec).schema
        if not q.group_by:  # scalar: partials to the host, which combines them
            parts = self.phase("scalar aggregate", [(n, "run", (spec,)) for n in targets],
                               texts=[f"partial aggregate of {ref.table.name} on {where} -> host"])
            host = HashAggregate(self.pdb.host.ctx, ArrayScan(partial_schema, _cat(parts, partial_schema)),
                                 [], finals, self.pdb.host.memory_pages)
            return self._finish(q, host.schema, [host.collect()], averages=averages, having=True)
        aggs = self.pdb.disk
        x = self.exchange("groups")
        p = Hash(*q.group_by)
        p.fit(None, len(aggs))
        spec = spec.into(SplitTo(x, aggs, p))
        steps = [Aggregation(q.group_by, finals)] + _average_steps(averages)
        if q.having is not None:  # on the aggregation nodes, right after the final aggregate
            steps.append(Selection(q.having))
        final = Fragment(self.exchange("final"), Receive(x, targets, partial_schema), steps,
                         ToHost(), self.hints)
        final_schema = self.dry(final).schema
        calls = [(n, "run", (final,)) for n in aggs] + [(n, "run", (spec,)) for n in targets]
        having = f", HAVING {q.having_text}" if q.having is not None else ""
        parts = self.phase("grouped aggregate", calls, texts=[
            f"partial aggregate of {ref.table.name} on {where} -> {p.describe()} to nodes {aggs}",
            f"final aggregate{having} on nodes {aggs} -> host"])
        return self._finish(q, final_schema, parts[:len(aggs)])

    def _distinct(self, q: SelectQuery, source: Scan, targets: list[int],
                  where: str) -> tuple[Schema, np.ndarray]:
        """SELECT DISTINCT as Gamma eliminates duplicates (Section 7, like its aggregates): each
        node projects its tuples and drops its own duplicates, the rest are sent by a hash of
        ALL the output columns, so equal tuples meet on one node, which drops them there."""
        aggs = self.pdb.disk
        x = self.exchange("distinct")
        p = Hash(*q.names)
        p.fit(None, len(aggs))
        spec = Fragment(self.exchange("sel"), source,
                        [Projection(q.outputs), DuplicateElimination()], SplitTo(x, aggs, p),
                        self.hints)
        schema = self.dry(spec).schema
        final = Fragment(self.exchange("dedup"), Receive(x, targets, schema),
                         [DuplicateElimination()], ToHost(), self.hints)
        calls = [(n, "run", (final,)) for n in aggs] + [(n, "run", (spec,)) for n in targets]
        parts = self.phase("distinct", calls, texts=[
            f"select {q.refs[0].table.name} on {where}, drop local duplicates -> {p.describe()} "
            f"to nodes {aggs}",
            f"SELECT DISTINCT: drop duplicates on nodes {aggs} -> host"])
        return self._finish(q, schema, parts[:len(aggs)], projected=True, deduplicated=True)

    def _distinct_aggregate(self, q: SelectQuery, source: Scan, targets: list[int],
                            where: str) -> tuple[Schema, np.ndarray]:
        """COUNT / SUM / AVG(DISTINCT x): each node groups its tuples on (group columns, x),
        which drops its duplicate x; those tuples are sent by a hash of (group columns, x), so
        the copies of one x of a group meet on one node, which merges them and aggregates the
        now distinct values by the group columns. Those partial results are combined like any
        partials: sent by a hash of the group columns to the node that finishes each group
        and applies HAVING (GROUP BY), or to the host (a scalar aggregate)."""
        ref = q.refs[0]
        stages = distinct_stages(q.aggregates, q.distinct_aggregates, ref.table.schema,
                                 q.distinct_argument)
        keyed = q.group_by + [DISTINCT_COLUMN]
        read = [(c, Col(c)) for c in ref.table.schema.names if c in q.needed]
        aggs = self.pdb.disk
        x = self.exchange("distinct")
        p = Hash(*keyed)
        p.fit(None, len(aggs))
        spec = Fragment(self.exchange("agg"), source,
                        [Projection(read + list(q.group_keys)
                                    + [(DISTINCT_COLUMN, q.distinct_argument)]),
                         Aggregation(keyed, stages.first)], SplitTo(x, aggs, p), self.hints)
        partial_schema = self.dry(spec).schema
        second = Fragment(self.exchange("distinct-values"), Receive(x, targets, partial_schema),
                          [Aggregation(keyed, stages.merge),
                           Aggregation(q.group_by, stages.second)], ToHost(), self.hints)
        second_schema = self.dry(second).schema
        texts = [f"group {ref.table.name} on ({', '.join(keyed)}) on {where} -> {p.describe()} "
                 f"to nodes {aggs}",
                 f"drop duplicate {q.distinct_argument}, aggregate by "
                 f"({', '.join(q.group_by) or 'no group'}) on nodes {aggs}"]
        calls = [(n, "run", (second,)) for n in aggs] + [(n, "run", (spec,)) for n in targets]
        if not q.group_by:  # scalar: the host combines the nodes' partial results
            parts = self.phase("distinct aggregate", calls, texts=[*texts[:-1], texts[-1] + " -> host"])
            rows = _cat(parts[:len(aggs)], second_schema)
            host = HashAggregate(self.pdb.host.ctx, ArrayScan(second_schema, rows), [],
                                 stages.final, self.pdb.host.memory_pages)
            op = divide_averages(host, stages.averages, scalar=True)
            self._plan.append("host: " + " <- ".join(o.describe() for o in op.walk()))
            return self._finish(q, op.schema, [op.collect()], having=True)
        y = self.exchange("groups")
        by_group = Hash(*q.group_by)
        by_group.fit(None, len(aggs))
        second = second.into(SplitTo(y, aggs, by_group))
        calls = [(n, "run", (second,)) for n in aggs] + [(n, "run", (spec,)) for n in targets]
        steps = [Aggregation(q.group_by, stages.final)] + _average_steps(stages.averages)
        if q.having is not None:
            steps.append(Selection(q.having))
        final = Fragment(self.exchange("final"), Receive(y, aggs, second_schema), steps,
                         ToHost(), self.hints)
        final_schema = self.dry(final).schema
        having = f", HAVING {q.having_text}" if q.having is not None else ""
        parts = self.phase("distinct aggregate", [(n, "run", (final,)) for n in aggs] + calls, texts=[
            *texts[:-1], texts[-1] + f" -> {by_group.describe()} to nodes {aggs}",
            f"final aggregate{having} on nodes {aggs} -> host"])
        return self._finish(q, final_schema, parts[:len(aggs)])

    def _union(self, u: UnionQuery) -> tuple[Schema, np.ndarray]:
        """Each SELECT runs as its own parallel query; the host appends the results (widened
        to one layout) and, for UNION, drops duplicates, then orders and limits."""
        inputs = []
        for i, part in enumerate(u.parts, 1):
            self._plan.append(f"UNION part {i}:")
            schema, records = self.select(part)
            inputs.append(ArrayScan(schema, records))
        op: Operator = UnionAll(inputs)
        if u.distinct:
            op = HashAggregate(self.pdb.host.ctx, op, op.schema.names, [], self.pdb.host.memory_pages)
        if u.order:
            op = ExternalSort(self.pdb.host.ctx, op, u.order, self.pdb.host.memory_pages)
        if u.limit is not None:
            op = Limit(op, u.limit)
        records = op.collect()
        what = "UNION (duplicates dropped at the host)" if u.distinct else "UNION ALL"
        self._plan.append(f"host: {what}: " + " <- ".join(o.describe() for o in op.walk()))
        return op.schema, records

    def _with_subqueries(self, plan: SubqueryPlan) -> tuple[Schema, np.ndarray]:
        """Run each uncorrelated subquery as a parallel query first, then the statement with
        the answers written in as constants (so partition pruning still applies)."""
        answers = []
        for i, sub in enumerate(plan.subqueries, 1):
            self._plan.append(f"subquery {i}:")
            _, records = self.select(sub.query)
            answers.append(subquery_answer(sub, records))
            self._plan.append(describe_answer(i, sub, answers[-1]))
        return self.select(plan.finish(answers))

    def _join(self, q: SelectQuery) -> tuple[Schema, np.ndarray]:
        self._note_propagation(q)
        edge = q.edges[0]
        est = [selectivity(r.table, r.filters) * r.table.num_records for r in q.refs]
        b = edge.left if est[edge.left] <= est[edge.right] else edge.right
        if q.outer:
            b = edge.right  # LEFT JOIN: build on the right table, probe with the preserved left one
        pr = edge.right if b == edge.left else edge.left
        bkey = edge.left_col if b == edge.left else edge.right_col
        pkey = edge.right_col if b == edge.left else edge.left_col
        placement = {"local": self.pdb.disk, "remote": self.pdb.diskless,
                     "allnodes": list(range(self.pdb.num_nodes))}
        where = self.placement or "local"
        joiners = placement.get(where) or self.pdb.disk
        scans, schemas = {}, {}
        for side, key in ((b, bkey), (pr, pkey)):
            ref = q.refs[side]
            cols = [c.name for c in ref.table.schema.columns if f"{ref.alias}.{c.name}" in q.needed] \
                or [ref.table.schema.columns[0].name]
            p = Hash(key)
            p.fit(None, len(joiners))
            x = self.exchange("build" if side == b else "probe")
            spec = Fragment(self.exchange("scan"), Scan(ref.table.name, ref.filters),
                            [Projection([(f"{ref.alias}.{c}", Col(c)) for c in cols])],
                            SplitTo(x, joiners, p), self.hints)
            scans[side] = (spec, self._targets(ref), x)
            schemas[side] = self.dry(spec).schema
        steps = []
        if q.residual:
            steps.append(Selection(conjunction(q.residual)))
        if not q.aggregating:
            steps.append(Projection(q.outputs))
            if q.distinct:  # each join node drops its own duplicates first
                steps.append(DuplicateElimination())
        join_id = self.exchange("join")
        source = Join(Receive(scans[b][2], scans[b][1], schemas[b]),
                      Receive(scans[pr][2], scans[pr][1], schemas[pr]), bkey, pkey,
                      self.join_algorithm(q.outer), outer=q.outer,
                      condition=conjunction(q.join_condition))
        distinct = not q.aggregating and q.distinct
        overflow = self._distributes_overflow(source.algorithm, q, distinct)
        if overflow:
            source.distributed = {"level": 0, "spools": spool_names(join_id, 0)}
        join = Fragment(join_id, source, steps, ToHost(), self.hints)
        join_schema = self.dry(join).schema
        if distinct:  # the join result goes to the duplicate elimination, not to the host
            by_row = Hash(*q.names)
            by_row.fit(None, len(joiners))
            join = join.into(SplitTo(self.exchange("distinct"), joiners, by_row))
        bspec, bnodes, _ = scans[b]
        pspec, pnodes, _ = scans[pr]
        self.phase("build", [(n, "start", (join,)) for n in joiners]
                   + [(n, "run", (bspec,)) for n in bnodes], texts=[
            f"scan {q.refs[b].table.name} on nodes {bnodes} -> hash({bkey}) to nodes {joiners}",
            f"build ({source.algorithm.kind}) on nodes {joiners}"])
        if distinct:
            return self._probe_distinct(q, join, join_schema, joiners, pspec, pnodes,
                                        f"scan {q.refs[pr].table.name} on nodes {pnodes} -> "
                                        f"hash({pkey}) to nodes {joiners}")
        if overflow:
            cuts = self._overflow_cuts(join, joiners)
            if any(c is not None for c in cuts):
                pspec = _with_overflow_test(pspec, pkey, 0, cuts, source.distributed)
        parts = self.phase("probe", [(n, "drain", (join.id,)) for n in joiners]
                           + [(n, "run", (pspec,)) for n in pnodes], texts=[
            f"scan {q.refs[pr].table.name} on nodes {pnodes} -> hash({pkey}) to nodes {joiners}"
            + (" (tuples above an overflowed node's cut spooled here)" if overflow
               and any(c is not None for c in cuts) else ""),
            f"probe on nodes {joiners}" + (f" (left outer join: each {q.refs[pr].table.name} "
                                           "tuple that matches nothing is padded with NULLs)"
                                           if q.outer else "") + " -> host"])
        parts = parts[:len(joiners)]
        if overflow and any(c is not None for c in cuts):
            parts += self._overflow_passes(join, joiners, sorted(set(pnodes) | set(joiners)),
                                           schemas[b], schemas[pr], bkey, pkey)
        rows = _cat(parts, join_schema)
        if not q.aggregating:
            return self._finish(q, join_schema, [rows], projected=True)
        host = aggregate_query(self.pdb.host.ctx, ArrayScan(join_schema, rows), q,
                               self.pdb.host.memory_pages)
        self._plan.append("host: " + " <- ".join(o.describe() for o in host.walk()))
        return self._finish(q, host.schema, [host.collect()])

    @staticmethod
    def _distributes_overflow(algorithm: type, q: SelectQuery, distinct: bool) -> bool:
        """Whether the join resolves overflow as Gamma does, across the nodes
        (``minidb.cluster.overflow``): a Simple hash join of an inner join."""
        from minidb.exec.join.simple_hash import SimpleHashJoin

        return issubclass(algorithm, SimpleHashJoin) and not q.outer and not distinct

    def _overflow_cuts(self, join: Fragment, joiners: list[int]) -> list[int | None]:
        """Each joining node's cut after its build (None: no overflow), by consumer position."""
        return self.pdb.backend.call_many([(n, "overflow_cut", (join.id,)) for n in joiners],
                                          "overflow cuts")

    def _overflow_passes(self, join: Fragment, joiners: list[int], holders: list[int],
                         build_schema: Schema, probe_schema: Schema, bkey: str,
                         pkey: str) -> list[np.ndarray]:
        """Gamma's overflow resolution (§6): join the overflow files of the last pass as a new
        distributed join, redistributed with a new hash function, until no node overflows; the
        pass after ``MAX_DISTRIBUTED_PASSES`` finishes inside each node. Returns each pass's
        rows."""
        out: list[np.ndarray] = []
        names = join.source.distributed["spools"]
        level = 0
        try:
            while True:
                level += 1
                bp, pp = Hash(bkey, seed=ROUTING_SEED + level), Hash(pkey, seed=ROUTING_SEED + level)
                bp.fit(None, len(joiners))
                pp.fit(None, len(joiners))
                xb, xp = self.exchange("overflow-build"), self.exchange("overflow-probe")
                bscan = Fragment(self.exchange("scan"), ReadSpool(names["build"], build_schema),
                                 sink=SplitTo(xb, joiners, bp), hint=self.hints)
                pscan = Fragment(self.exchange("scan"), ReadSpool(names["probe"], probe_schema),
                                 sink=SplitTo(xp, joiners, pp), hint=self.hints)
                distributed = ({"level": level, "spools": spool_names(join.id, level)}
                               if level < MAX_DISTRIBUTED_PASSES else None)
                spec = replace(join, id=self.exchange("join"), source=replace(
                    join.source, distributed=distributed,
                    build=Receive(xb, joiners, build_schema),
                    probe=Receive(xp, holders, probe_schema)))
                self.phase(f"overflow pass {level}: build",
                           [(n, "start", (spec,)) for n in joiners]
                           + [(n, "run", (bscan,)) for n in joiners], texts=[
                    f"read the build overflow files on nodes {joiners} -> a new hash of {bkey} "
                    f"to nodes {joiners}",
                    f"build on nodes {joiners}" + ("" if distributed else
                                                   " (this pass resolves any overflow itself)")])
                cuts = self._overflow_cuts(spec, joiners) if distributed else [None] * len(joiners)
                if any(c is not None for c in cuts):
                    pscan = _with_overflow_test(pscan, pkey, level, cuts, distributed)
                parts = self.phase(f"overflow pass {level}: probe",
                                   [(n, "drain", (spec.id,)) for n in joiners]
                                   + [(n, "run", (pscan,)) for n in holders], texts=[
                    f"read the probe overflow files on nodes {holders} -> a new hash of {pkey} "
                    f"to nodes {joiners}", f"probe on nodes {joiners} -> host"])
                out += parts[:len(joiners)]
                self.pdb.backend.call_all("drop_spools", {n: ([names["build"], names["probe"]],)
                                                          for n in holders}, "drop overflow files")
                if not any(c is not None for c in cuts):
                    return out
                names = distributed["spools"]
        finally:
            self.pdb.backend.call_all("drop_spools", {n: ([names["build"], names["probe"]],)
                                                      for n in holders}, "drop overflow files")

    def _note_propagation(self, q: SelectQuery) -> None:
        if q.propagated:
            self._plan.append("selection propagation (Gamma §6.1): " + "; ".join(q.propagated))

    def _join_pipeline(self, q: SelectQuery) -> tuple[Schema, np.ndarray]:
        """Several joins as one right-deep pipeline (Schneider and DeWitt's right-deep trees):
        every table but the largest is the build input of one hash join, all hash tables are
        built first (one phase each), then the largest table's tuples stream through the joins
        in a single probe phase, each join's result repartitioned on the next join's key.

        A table joined by an equality is hash-partitioned on its key, as in ``_join``; a table
        joined by no equality (a cross product, or only ``<`` / ``<>`` conditions) is broadcast
        to every join node and joined on a constant, so every pair meets once (the probe tuples
        are each on one node). Equalities beyond the first between two tables, and conditions
        over several tables, are filters as soon as their columns are joined."""
        est = [selectivity(r.table, r.filters) * r.table.num_records for r in q.refs]
        order = self._pipeline_order(q, est)
        self._note_propagation(q)
        joiners = {"local": self.pdb.disk, "remote": self.pdb.diskless,
                   "allnodes": list(range(self.pdb.num_nodes))}.get(self.placement or "local") \
            or self.pdb.disk
        edges, pending = list(q.edges), list(q.residual)
        first = order[0][0]
        joined = {first}
        joins, stream = [], None
        for position, (side, edge) in enumerate(order[1:], start=1):
            if edge is not None:
                build_key = edge.right_col if edge.right == side else edge.left_col
                probe_key = edge.left_col if edge.right == side else edge.right_col
                edges.remove(edge)
            else:  # no equality: join on a constant column added to both inputs
                build_key, probe_key = f"__cross{position}b", f"__cross{position}p"
            build = self._side_scan(q, side, joiners, key=build_key, broadcast=edge is None)
            if stream is None:  # the streaming table's scan feeds the first join's probe
                stream = self._side_scan(q, first, joiners, key=probe_key,
                                         constant=probe_key if edge is None else None)
            joined.add(side)
            joins.append({"side": side, "build": build, "build_key": build_key,
                          "probe_key": probe_key, "cross": edge is None,
                          "steps": self._ready_filters(q, joined, edges, pending)})
        # the join fragments, last to first: each one's sink is the next one's probe input
        specs = []
        probe_source = Receive(stream[2], stream[1], stream[3])
        for i, j in enumerate(joins):
            spec = Fragment(self.exchange("join"),
                            Join(Receive(j["build"][2], j["build"][1], j["build"][3]),
                                 probe_source, j["build_key"], j["probe_key"],
                                 self.join_algorithm()),
                            list(j["steps"]), hint=self.hints)
            if i + 1 < len(joins):
                nxt = joins[i + 1]
                if nxt["cross"]:  # the next build is broadcast: tag the tuples with its constant
                    names = self.dry(spec).schema.names
                    spec = spec.then(Projection([(n, Col(n)) for n in names]
                                                + [(nxt["probe_key"], Const(0))]))
                    p: Partitioner = RoundRobin()
                else:
                    p = Hash(nxt["probe_key"])
                p.fit(None, len(joiners))
                x = self.exchange("pipe")
                spec = spec.into(SplitTo(x, joiners, p))
                probe_source = Receive(x, joiners, self.dry(spec).schema)
            else:
                if pending or edges:
                    spec = spec.then(Selection(conjunction(pending + [e.predicate()
                                                                      for e in edges])))
                if not q.aggregating:
                    spec = spec.then(Projection(q.outputs))
                spec = spec.into(ToHost())
            specs.append(spec)
        for j, spec in zip(joins, specs, strict=True):
            bspec, bnodes, _, _ = j["build"]
            how = "broadcast" if j["cross"] else f"hash({j['build_key']})"
            self.phase(f"build {q.refs[j['side']].table.name}",
                       [(n, "start", (spec,)) for n in joiners]
                       + [(n, "run", (bspec,)) for n in bnodes], texts=[
                f"scan {q.refs[j['side']].table.name} on nodes {bnodes} -> {how} to nodes "
                f"{joiners}", f"build ({spec.source.algorithm.kind}) on {j['build_key']} on nodes "
                f"{joiners}"])
        sspec, snodes, _, _ = stream
        parts = self.phase("probe pipeline",
                           [(n, "drain", (spec.id,)) for spec in reversed(specs) for n in joiners]
                           + [(n, "run", (sspec,)) for n in snodes], texts=[
            f"scan {q.refs[first].table.name} on nodes {snodes} -> "
            f"{sspec.sink.partitioner.describe()} to nodes {joiners}",
            *(f"probe on {j['probe_key']} = {j['build_key']} on nodes {joiners}" for j in joins),
            "-> host"])
        final_schema = self.dry(specs[-1]).schema
        rows = _cat(parts[:len(joiners)], final_schema)
        if not q.aggregating:
            return self._finish(q, final_schema, [rows], projected=True)
        host = aggregate_query(self.pdb.host.ctx, ArrayScan(final_schema, rows), q,
                               self.pdb.host.memory_pages)
        self._plan.append("host: " + " <- ".join(o.describe() for o in host.walk()))
        return self._finish(q, host.schema, [host.collect()])

    @staticmethod
    def _pipeline_order(q: SelectQuery, est: list[float]) -> list[tuple[int, JoinEdge | None]]:
        """The streaming table (the largest estimate) first, then each table to join with the
        equality that joins it (None: none does), joined tables growing one at a time and
        preferring a table an equality connects."""
        first = max(range(len(q.refs)), key=lambda i: (est[i], -i))
        order: list[tuple[int, JoinEdge | None]] = [(first, None)]
        joined = {first}
        while len(joined) < len(q.refs):
            connecting = [e for e in q.edges if (e.left in joined) != (e.right in joined)]
            if connecting:
                edge = min(connecting, key=lambda e: est[e.right if e.left in joined else e.left])
                side = edge.right if edge.left in joined else edge.left
            else:
                side, edge = min(set(range(len(q.refs))) - joined, key=lambda i: est[i]), None
            order.append((side, edge))
            joined.add(side)
        return order

    @staticmethod
    def _ready_filters(q: SelectQuery, joined: set[int], edges: list, pending: list) -> list:
        """Filter steps for the equalities and conditions whose tables are all joined now
        (taken out of ``edges`` and ``pending``)."""
        aliases = {q.refs[i].alias for i in joined}
        ready = [e for e in edges if e.left in joined and e.right in joined]
        for e in ready:
            edges.remove(e)
        terms = [e.predicate() for e in ready]
        for t in list(pending):
            if all(c.split(".", 1)[0] in aliases for c in t.columns()):
                terms.append(t)
                pending.remove(t)
        return [Selection(conjunction(terms))] if terms else []

    def _side_scan(self, q: SelectQuery, side: int, joiners: list[int], key: str | None = None,
                   broadcast: bool = False, constant: str | None = None) -> tuple:
        """The scan of one table of a join, projected to the columns the query needs and sent
        to the join nodes by a hash of ``key`` (or broadcast, or round-robin when there is no
        key); ``constant`` (or, broadcast, ``key``) adds a column of zeros to join on."""
        ref = q.refs[side]
        cols = [c.name for c in ref.table.schema.columns if f"{ref.alias}.{c.name}" in q.needed] \
            or [ref.table.schema.columns[0].name]
        outputs = [(f"{ref.alias}.{c}", Col(c)) for c in cols]
        tag = key if broadcast else constant
        if tag is not None:
            outputs.append((tag, Const(0)))
        x = self.exchange("scan")
        if broadcast:
            sink = SplitTo(x, joiners, mode="broadcast")
        else:
            p = Hash(key) if key is not None and constant is None else RoundRobin()
            p.fit(None, len(joiners))
            sink = SplitTo(x, joiners, p)
        spec = Fragment(self.exchange("scan"), Scan(ref.table.name, ref.filters),
                        [Projection(outputs)], sink, self.hints)
        return spec, self._targets(ref), x, self.dry(spec).schema

    def _probe_distinct(self, q: SelectQuery, join: Fragment, join_schema: Schema,
                        joiners: list[int], pspec: Fragment, pnodes: list[int], scan_text: str) -> tuple[Schema, np.ndarray]:
        """The probe phase of a SELECT DISTINCT over a join: the join nodes send their
        (locally deduplicated) result tuples by a hash of all output columns (the join's sink,
        set before it started) to the join nodes again, which drop the duplicates that meet
        there, as for a one-table DISTINCT."""
        sink = join.sink
        dedup = Fragment(self.exchange("dedup"), Receive(sink.exchange, joiners, join_schema),
                         [DuplicateElimination()], ToHost(), self.hints)
        parts = self.phase("probe", [(n, "run", (dedup,)) for n in joiners]
                           + [(n, "drain", (join.id,)) for n in joiners]
                           + [(n, "run", (pspec,)) for n in pnodes], texts=[
            scan_text,
            f"probe on nodes {joiners}, drop local duplicates -> "
            f"{sink.partitioner.describe()} to nodes {joiners}",
            f"SELECT DISTINCT: drop duplicates on nodes {joiners} -> host"])
        return self._finish(q, join_schema, parts[:len(joiners)], projected=True, deduplicated=True)

    def _finish(self, q: SelectQuery, schema: Schema, parts: list, projected: bool = False,
                averages: list | None = None, having: bool = False,
                deduplicated: bool = False) -> tuple[Schema, np.ndarray]:
        """The host's last steps: averages, HAVING (when the final aggregation ran here), the
        SELECT list, DISTINCT (unless done on the nodes), ORDER BY, hidden columns, LIMIT."""
        op: Operator = ArrayScan(schema, _cat(parts, schema))
        if averages:
            keep = [(n, Col(n)) for n in schema.names]
            op = Project(op, keep + [(name, average_expr(s, c)) for name, s, c in averages])
        if having and q.having is not None:
            op = Filter(op, q.having)
        if not projected:
            op = Project(op, q.outputs)
        if q.distinct and not deduplicated:
            op = HashAggregate(self.pdb.host.ctx, op, op.schema.names, [], self.pdb.host.memory_pages)
        if q.order:
            op = ExternalSort(self.pdb.host.ctx, op, q.order, self.pdb.host.memory_pages)
        if q.visible < len(q.outputs):
            op = Project(op, [(n, Col(n)) for n in q.names])
        if q.limit is not None:
            op = Limit(op, q.limit)
        records = op.collect()
        self._plan.append("host: " + " <- ".join(o.describe() for o in op.walk()))
        return op.schema, records

    # -- changes ----------------------------------------------------------------------------------
    def update(self, st: UpdateStatement) -> int:
        table = st.ref.table
        p = self.pdb.schemes[table.name.lower()]
        assigned = {c.lower() for c, _ in st.assignments}
        moves = bool(set(c.lower() for c in p.columns) & assigned)
        x = self.exchange("moved")
        disk = self.pdb.disk
        # only the nodes that can hold a matching tuple (one node for the partitioning key =
        # a constant, as a SELECT); a moved tuple may go to any node
        targets = self._targets(st.ref)
        calls = [(n, "update", (table.name, st.ref.filters, dict(st.assignments), p,
                                disk if moves else None, x, self.hints)) for n in targets]
        if moves:
            hold = Fragment(x, Receive(x, targets, table.schema), sink=Hold(x))
            calls = [(n, "run", (hold,)) for n in disk] + calls
        out = self.phase("update", calls, texts=[f"update {table.name} on nodes {targets}"]
                         + ([f"tuples whose {p.describe()} changes move to their new node"] if moves else []))
        if moves:
            self.phase("insert moved tuples", [(n, "insert_held", (x, table.name)) for n in disk])
        return int(sum(out[-len(targets):]))

    def delete(self, st: DeleteStatement) -> int:
        targets = self._targets(st.ref)  # as for a SELECT: one node for the partitioning key
        out = self.phase("delete", [(n, "delete", (st.ref.table.name, st.ref.filters, self.hints))
                                    for n in targets],
                         texts=[f"delete from {st.ref.table.name} on {targets}"])
        return int(sum(out))

    def insert(self, st: InsertStatement) -> int:
        if st.records is None:
            raise unsupported_in_parallel("INSERT ... SELECT (use CREATE TABLE AS)")
        table = st.table
        p = self.pdb.schemes[table.name.lower()]
        if isinstance(p, RangeUniform) and p.boundaries is None and len(st.records):
            p.fit(st.records, len(self.pdb.disk))  # created empty: the first rows choose them
        disk = self.pdb.disk
        sources = [disk[i] for i in p.grow(st.records)]
        if sources:  # the table's placement changed (LH* splits): move the rows it moved
            x = self.exchange("rehome")
            hold = Fragment(x, Receive(x, sources, table.schema), sink=Hold(x))
            self.phase("rehome", [(n, "run", (hold,)) for n in disk]
                       + [(n, "rehome", (table.name, p, disk, x)) for n in sources],
                       texts=[f"rows of the buckets {p.describe()} split move from nodes "
                              f"{sources} to their new nodes"])
            self.phase("insert moved tuples", [(n, "insert_held", (x, table.name)) for n in disk])
        parts = p.partition(st.records)
        out = self.phase("insert", [(n, "insert", (table.name, parts[i])) for i, n in enumerate(disk)],
                         texts=[f"insert into {table.name} by {p.describe()}"])
        return int(sum(out))


def _merge_stats(schema: Schema, per_node: list[dict]) -> dict:
    """Column statistics of a relation from its fragments' statistics: exact bounds; distinct
    values summed over the fragments and capped at the tuple count (exact for a key, an
    overestimate for a column whose values repeat across nodes)."""
    merged = {}
    for c in schema.columns:
        present = [s for s in (stats_from_json(d[c.name.lower()]) for d in per_node) if s.distinct]
        if not present:
            merged[c.name.lower()] = _stats_of(np.empty(0, dtype=schema.dtype)[c.name])
            continue
        merged[c.name.lower()] = ColumnStats(min(s.min for s in present),
                                             max(s.max for s in present),
                                             sum(s.distinct for s in present))
    return merged


def _average_steps(averages: list) -> list:
    """A fragment step adding each AVG output (sum / count) to the tuples."""
    if not averages:
        return []
    return [Averages(averages)]


def _cat(parts: list, schema: Schema) -> np.ndarray:
    parts = [p for p in parts if p is not None and len(p)]
    if not parts:
        return np.empty(0, dtype=schema.dtype)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _nonzero(c: dict) -> bool:
    return any(v for k, v in c.items() if not isinstance(v, dict)) or any(c.get("tuples", {}).values())


__all__ = ["ParallelDatabase", "ParallelResult"]

#: the most tables one parallel join pipeline takes (every join fragment and the streaming scan
#: run at once in the probe phase, on a thread or an actor slot of each node)
MAX_PIPELINE_TABLES = 4


_PARTITION_HINT = re.compile(r"partition\s*=\s*([A-Za-z_][\w]*(?:\s*\([^)]*\))?)", re.IGNORECASE)


def _partition_hint(hint: str) -> tuple[str, str | None]:
    """Take ``partition=SPEC`` (e.g. ``partition=hash(unique1)``) out of a hint string; it says
    how ``CREATE TABLE ... AS SELECT`` declusters its result. Returns (rest, spec or None)."""
    m = _PARTITION_HINT.search(hint)
    if m is None:
        return hint, None
    return hint[: m.start()] + hint[m.end():], m.group(1)
