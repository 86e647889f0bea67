"""The parallel planner: what each statement runs on which nodes, phase by phase.

The host compiles a statement into fragments (``minidb.cluster.plan``), decides where
each runs (placement, the build side of a join, how an aggregate is split between the
nodes and the host) and hands them, phase by phase, to the scheduler
(``minidb.cluster.scheduler``). DeWitt et al. 1988, Sections 2 and 6-7, describe the
plans rebuilt here.

The parallel subset: one-table SELECT (selection on every disk node, or only on the nodes
``Partitioner.nodes_for_range`` names; each node chooses heap or index with the single-node
planner), projections, scalar aggregates (partials per node, combined at the host), GROUP BY
(partials sent by a hash of the group key to the aggregation nodes, which compute the final
groups), ORDER BY and LIMIT at the host, an equi-join of two tables by one parallel join (also a
LEFT JOIN) in one of NonStop SQL's three strategies (``_join_strategy``), its aggregates run at
the join nodes (``_aggregate_at_joins``), joins of up to four tables (or with no equality at all) as one right-deep
pipeline of hash joins (``_join_pipeline``: tables with an equality are hash-partitioned on
their key, the others broadcast), CREATE TABLE AS SELECT, INSERT VALUES, UPDATE, DELETE and
Distributed INGRES's DISTRIBUTE (``distribute``, re-declustering a table by predicates).
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
``bit_filters`` (Gamma's bit-vector filters on a two-table inner equi-join, Section 2),
and for ``CREATE TABLE ... AS SELECT`` the declustering of the result (``partition=hash(a)``, any
spec ``create_table`` accepts; round-robin when absent; ``partition=local``: every node keeps the
tuples it selected, NonStop SQL's plan for its 1% select-and-insert).

Simplified, compared with Gamma: relations given as generator specs are generated at the host
and routed like an Arrow source (the nodes do not generate their own slices); a plain
``CREATE TABLE AS`` selection or join is pipelined into store operators on the disk nodes, but
they write their fragment in a phase of their own after the query ends (Gamma overlaps the
two); a CREATE TABLE AS over an aggregate, DISTINCT or ORDER BY is gathered at the host and then
dealt out; the host is the coordinator's own process, not a node. The two sides of a join are
hashed by value (``minidb.hashing.hash_columns``), so keys of different types (int and float,
char(5) and char(9)) meet on the same node.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from minidb.cluster.catalog import ClusterTable, merge_stats
from minidb.cluster.overflow import MAX_DISTRIBUTED_PASSES, ROUTING_SEED, spool_names
from minidb.cluster.plan import (
    Aggregation,
    Averages,
    BitFilterTest,
    DuplicateElimination,
    Fragment,
    Hold,
    Join,
    Local,
    OverflowTest,
    Projection,
    ReadSpool,
    Receive,
    Scan,
    Selection,
    SplitTo,
    ToHost,
)
from minidb.cluster.scheduler import Scheduler
from minidb.errors import FragmentCoverageError, MinidbError, UnsupportedSQLError
from minidb.exec.aggregate import (
    DISTINCT_COLUMN,
    HashAggregate,
    average_expr,
    distinct_stages,
    split_aggregates,
)
from minidb.exec.expr import Col, Const, conjunction, key_range
from minidb.exec.filter import Filter
from minidb.exec.iterator import Operator
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
from minidb.sql.distribute import NO_TUPLES
from minidb.sql.hints import (
    join_class,
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
    DeleteStatement,
    InsertStatement,
    JoinEdge,
    SelectQuery,
    UpdateStatement,
)
from minidb.storage.schema import Schema


def unsupported_in_parallel(construct: str) -> UnsupportedSQLError:
    """The error for SQL that one node runs but the parallel engine does not (docs/sql.md lists
    these differences)."""
    return UnsupportedSQLError(f"unsupported in parallel: {construct} (see docs/sql.md)")


class ParallelPlanner:
    """Plans one statement and runs its phases through ``scheduler``."""

    def __init__(self, pdb: Any, hints, qid: int):
        self.pdb, self.hints, self.qid = pdb, hints, qid  # pdb: the ParallelDatabase
        self.host = pdb.host_context  # where the operators that finish a query at the host run
        self.placement: str | None = None
        self.bit_filters = False  # Gamma's bit-vector filters on a two-table inner join
        self.strategy: str | None = None  # a hinted join strategy (co_located, broadcast ...)
        self.scheduler = Scheduler(pdb)
        self._x = itertools.count()
        self._into: _StoreJoin | None = None  # CREATE TABLE AS a join: where results go

    def join_algorithm(self, outer: bool = False):
        """The join plug-in class every join node runs (shipped in the plan, so a class defined
        in a notebook or a test reaches Ray workers too): the hinted one, else the default hash
        join; a LEFT JOIN keeps the default when the hinted one cannot preserve a side (its
        ``supports_outer`` is False), and the plan says so."""
        from minidb.exec.join.hash_join import HashJoin

        chosen = join_class(self.hints)
        if chosen is None:
            return HashJoin
        if outer and not chosen.supports_outer:
            line = (f"left outer join: the {self.hints.join} join cannot preserve a side, so the "
                    "default hash join runs it")
            if line not in self.scheduler.lines:
                self.scheduler.note(line)
            return HashJoin
        from minidb.cluster.backends import ship_by_value

        ship_by_value(chosen)
        return chosen

    def exchange(self, what: str) -> str:
        return f"q{self.qid}.{what}{next(self._x)}"

    def dry(self, fragment: Fragment) -> Operator:
        """The fragment's tree built at the host, where a table's scan reads nothing: its
        schema is that of the tuples the fragment produces on a node."""
        from minidb.cluster.node import build_tree

        return build_tree(self.host, fragment, None)

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
        if q.outer:  # translate refuses these already; kept as a guard for the pipeline
            raise unsupported_in_parallel("a LEFT JOIN of more than two tables")
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
        return self._store_held(name, layout, held, p,
                                lambda: self.scheduler.phase("select into", calls, texts=texts))

    def _store_held(self, name: str, layout: Schema, held: str, p: Partitioner,
                    fill: Callable[[], object]) -> int:
        """Make the new relation ``name``: ``fill`` runs the phases whose fragments hold its
        tuples on the disk nodes (sink ``Hold(held)``), then every disk node's store operator
        writes what it holds as its fragment, in a phase of its own (so one node never runs
        two disk-using fragments at once). Returns the tuple count."""
        pdb = self.pdb
        table = pdb.catalog.new_table(name, layout)
        try:
            fill()
            done = self.scheduler.phase("store result", [(n, "store_held", (held, name, layout))
                                                         for n in pdb.disk], operators=0)
        except BaseException:
            pdb.catalog.remove(name)
            try:
                pdb._drop_everywhere(name)
            except MinidbError:
                pass
            raise
        table.stats = merge_stats(layout, [d["stats"] for d in done])
        table.num_records = sum(d["records"] for d in done)
        pdb.schemes[name.lower()] = p
        return table.num_records

    def join_into(self, name: str, q: SelectQuery, partition) -> int | None:
        """``CREATE TABLE name AS`` a join: the join nodes send each result tuple through a
        split table (round-robin unless ``partition`` says otherwise) to the store operator of
        a disk node, as Gamma stores every query result (§2.2; §4: "both machines incur the
        same redistribution overhead while storing the result"), instead of through the host.
        Every pass of an overflow resolution sends its results the same way. Returns the tuple
        count, or None when the partitioning must see the data first (the caller then stores
        the result through the host)."""
        pdb = self.pdb
        if pdb.catalog.has(name):
            raise MinidbError(f"table {name!r} already exists; drop it first or pick another name")
        self._into = _StoreJoin(partition, self.exchange("held"))
        try:
            self.select(q)
        except _StoreThroughHost:
            return None
        into = self._into
        if into.layout is None:  # internal: a join path that did not ask for its sink
            raise MinidbError("internal error: the join did not send its result to the store")
        return self._store_held(name, into.layout, into.held, into.partitioner, lambda: None)

    def _final_sink(self, spec: Fragment, producers: list[int]) -> tuple[Fragment, list]:
        """``spec`` with the sink of a join's result, and the calls to run in the same phase:
        to the host, or (``join_into``) through a split table to the store operators of the
        disk nodes, each holding what it receives until the store phase."""
        spec = spec.into(ToHost())
        into = self._into
        if into is None:
            return spec, []
        schema = self.dry(spec).schema
        if into.layout is None:  # the first pass: the layout and where its tuples go
            layout = Schema([c for c in schema.columns if c.name != RID])
            p = parse_partitioning(into.partition, layout, len(self.pdb.disk))
            if type(p).grow is not Partitioner.grow:
                raise _StoreThroughHost  # it grows with the data (lh_star)
            try:
                p.fit(None, len(self.pdb.disk))
            except MinidbError:
                raise _StoreThroughHost from None  # it learns from the data (range_uniform)
            into.layout, into.partitioner = layout, p
        x = self.exchange("store")
        receive = Fragment(self.exchange("recv"), Receive(x, producers, schema),
                           sink=Hold(into.held), hint=self.hints)
        return (spec.into(SplitTo(x, self.pdb.disk, into.partitioner)),
                [(n, "run", (receive,)) for n in self.pdb.disk])

    def _result_text(self) -> str:
        """Where a join's result goes, for ``explain()``."""
        if self._into is None:
            return "-> host"
        return (f"-> {self._into.partitioner.describe()} to the store operators on nodes "
                f"{self.pdb.disk}")

    def join_into_local(self, name: str, q: SelectQuery) -> int | None:
        """``CREATE TABLE name AS`` a two-table join with ``partition=local``, as NonStop SQL
        runs its join benchmark ("each pair of partitions is joined in parallel and the result
        of that mini-join is inserted into the result table"): a co-located or broadcast join
        whose nodes each store their own result tuples. None when the join must repartition
        (the caller then stores the result through the host)."""
        b, pr, bkey, pkey, est = self._join_sides(q)
        strategy, why = self._join_strategy(q, b, pr, bkey, pkey, est)
        if strategy == "repartition":
            return None
        self.scheduler.note(f"join strategy: {strategy.replace('_', '-')} ({why})")
        return self._join_in_place(q, strategy, b, pr, bkey, pkey, into=name)

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
            parts = self.scheduler.phase("select", [(n, "run", (spec,)) for n in targets],
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
            parts = self.scheduler.phase("scalar aggregate", [(n, "run", (spec,)) for n in targets],
                               texts=[f"partial aggregate of {ref.table.name} on {where} -> host"])
            host = HashAggregate(self.host.ctx, ArrayScan(partial_schema, _cat(parts, partial_schema)),
                                 [], finals, self.host.memory_pages)
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
        parts = self.scheduler.phase("grouped aggregate", calls, texts=[
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
        parts = self.scheduler.phase("distinct", calls, texts=[
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
            parts = self.scheduler.phase("distinct aggregate", calls, texts=[*texts[:-1], texts[-1] + " -> host"])
            rows = _cat(parts[:len(aggs)], second_schema)
            host = HashAggregate(self.host.ctx, ArrayScan(second_schema, rows), [],
                                 stages.final, self.host.memory_pages)
            op = divide_averages(host, stages.averages, scalar=True)
            self.scheduler.note("host: " + " <- ".join(o.describe() for o in op.walk()))
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
        parts = self.scheduler.phase("distinct aggregate", [(n, "run", (final,)) for n in aggs] + calls, texts=[
            *texts[:-1], texts[-1] + f" -> {by_group.describe()} to nodes {aggs}",
            f"final aggregate{having} on nodes {aggs} -> host"])
        return self._finish(q, final_schema, parts[:len(aggs)])

    def _union(self, u: UnionQuery) -> tuple[Schema, np.ndarray]:
        """Each SELECT runs as its own parallel query; the host appends the results (widened
        to one layout) and, for UNION, drops duplicates, then orders and limits."""
        inputs = []
        for i, part in enumerate(u.parts, 1):
            self.scheduler.note(f"UNION part {i}:")
            schema, records = self.select(part)
            inputs.append(ArrayScan(schema, records))
        op: Operator = UnionAll(inputs)
        if u.distinct:
            op = HashAggregate(self.host.ctx, op, op.schema.names, [], self.host.memory_pages)
        if u.order:
            op = ExternalSort(self.host.ctx, op, u.order, self.host.memory_pages)
        if u.limit is not None:
            op = Limit(op, u.limit)
        records = op.collect()
        what = "UNION (duplicates dropped at the host)" if u.distinct else "UNION ALL"
        self.scheduler.note(f"host: {what}: " + " <- ".join(o.describe() for o in op.walk()))
        return op.schema, records

    def _with_subqueries(self, plan: SubqueryPlan) -> tuple[Schema, np.ndarray]:
        """Run each uncorrelated subquery as a parallel query first, then the statement with
        the answers written in as constants (so partition pruning still applies)."""
        answers = []
        for i, sub in enumerate(plan.subqueries, 1):
            self.scheduler.note(f"subquery {i}:")
            _, records = self.select(sub.query)
            answers.append(subquery_answer(sub, records))
            self.scheduler.note(describe_answer(i, sub, answers[-1]))
        return self.select(plan.finish(answers))

    @staticmethod
    def _join_sides(q: SelectQuery) -> tuple[int, int, str, str, list[float]]:
        """The build and probe sides of a two-table join, their keys and the size estimates:
        the build side is the smaller estimate (the right table of a LEFT JOIN)."""
        edge = q.edges[0]
        est = [selectivity(r.table, r.filters) * r.table.num_records for r in q.refs]
        b = edge.left if est[edge.left] <= est[edge.right] else edge.right
        if q.outer:
            b = edge.right  # LEFT JOIN: build on the right table, probe with the preserved left one
        pr = edge.right if b == edge.left else edge.left
        bkey = edge.left_col if b == edge.left else edge.right_col
        pkey = edge.right_col if b == edge.left else edge.left_col
        return b, pr, bkey, pkey, est

    def _join(self, q: SelectQuery) -> tuple[Schema, np.ndarray]:
        self._note_propagation(q)
        b, pr, bkey, pkey, est = self._join_sides(q)
        strategy, why = self._join_strategy(q, b, pr, bkey, pkey, est)
        self.scheduler.note(f"join strategy: {strategy.replace('_', '-')} ({why})")
        if strategy != "repartition":
            return self._join_in_place(q, strategy, b, pr, bkey, pkey)
        _refuse_index_join(self.join_algorithm(q.outer), "a repartitioned join")
        placement = {"local": self.pdb.disk, "remote": self.pdb.diskless,
                     "allnodes": list(range(self.pdb.num_nodes))}
        where = self.placement or "local"
        joiners = placement.get(where) or self.pdb.disk
        scans, schemas = {}, {}
        for side, key in ((b, bkey), (pr, pkey)):
            ref = q.refs[side]
            p = Hash(key)
            p.fit(None, len(joiners))
            x = self.exchange("build" if side == b else "probe")
            spec = Fragment(self.exchange("scan"), Scan(ref.table.name, ref.filters),
                            [Projection(self._needed(q, side))], SplitTo(x, joiners, p),
                            self.hints)
            scans[side] = (spec, self._targets(ref), x)
            schemas[side] = self.dry(spec).schema
        steps = self._join_steps(q)
        join_id = self.exchange("join")
        source = Join(Receive(scans[b][2], scans[b][1], schemas[b]),
                      Receive(scans[pr][2], scans[pr][1], schemas[pr]), bkey, pkey,
                      self.join_algorithm(q.outer), outer=q.outer,
                      condition=conjunction(q.join_condition))
        distinct = not q.aggregating and q.distinct
        overflow = self._distributes_overflow(source.algorithm, q, distinct)
        if overflow:
            source.distributed = {"level": 0, "spools": spool_names(join_id, 0)}
        filtered = self.bit_filters and not q.outer  # an outer join keeps every probe tuple
        if filtered:  # one packet of bits per site (minidb.parallel.bitfilter says why)
            source.bit_filter_bits = 8 * self.pdb.packet_bytes
        join, store_calls = self._final_sink(Fragment(join_id, source, steps, hint=self.hints),
                                             joiners)
        join_schema = self.dry(join).schema
        agg = self._aggregate_at_joins(q, join, joiners, overflow)
        if agg is not None:
            join = agg.join
        if distinct:  # the join result goes to the duplicate elimination, not to the host
            by_row = Hash(*q.names)
            by_row.fit(None, len(joiners))
            join = join.into(SplitTo(self.exchange("distinct"), joiners, by_row))
        bspec, bnodes, _ = scans[b]
        pspec, pnodes, _ = scans[pr]
        self.scheduler.phase("build", [(n, "start", (join,)) for n in joiners]
                   + [(n, "run", (bspec,)) for n in bnodes], texts=[
            f"scan {q.refs[b].table.name} on nodes {bnodes} -> hash({bkey}) to nodes {joiners}",
            f"build ({source.algorithm.kind}) on nodes {joiners}"
            + (", each setting its bit-vector filter" if filtered else "")])
        if filtered:
            pspec = self._with_bit_filters(join, pspec, pkey, joiners, pnodes)
        if distinct:
            return self._probe_distinct(q, join, join_schema, joiners, pspec, pnodes,
                                        f"scan {q.refs[pr].table.name} on nodes {pnodes} -> "
                                        f"hash({pkey}) to nodes {joiners}")
        if overflow:
            cuts = self._overflow_cuts(join, joiners)
            if any(c is not None for c in cuts):
                pspec = _with_overflow_test(pspec, pkey, 0, cuts, source.distributed)
        finals = agg.final_calls if agg is not None else []
        parts = self.scheduler.phase(
            "probe", finals + [(n, "drain", (join.id,)) for n in joiners]
            + [(n, "run", (pspec,)) for n in pnodes] + store_calls, texts=[
                f"scan {q.refs[pr].table.name} on nodes {pnodes} -> hash({pkey}) to nodes "
                f"{joiners}" + (" (tuples above an overflowed node's cut spooled here)"
                                if overflow and any(c is not None for c in cuts) else ""),
                f"probe on nodes {joiners}" + (f" (left outer join: each {q.refs[pr].table.name} "
                                               "tuple that matches nothing is padded with NULLs)"
                                               if q.outer else "")
                + (f", {agg.text}" if agg is not None else f" {self._result_text()}")])
        parts = parts[:len(joiners)]
        if overflow and any(c is not None for c in cuts):
            parts += self._overflow_passes(join, joiners, sorted(set(pnodes) | set(joiners)),
                                           schemas[b], schemas[pr], bkey, pkey)
        if self._into is not None:  # the store operators hold the result
            return join_schema, None
        if agg is not None:
            return self._aggregated(q, agg, parts)
        return self._join_result(q, join_schema, parts)

    def _with_bit_filters(self, join: Fragment, pspec: Fragment, pkey: str, joiners: list[int],
                          pnodes: list[int]) -> Fragment:
        """Gamma's bit-vector filters (Section 2): after the build, each join site sends the
        filter it built to the scheduler (one message each), which sends the whole array to
        every producer of the probe relation (one message each); their split tables then drop
        the tuples that cannot join (``minidb.parallel.bitfilter``)."""
        filters = self.pdb.backend.call_many([(n, "bit_filter", (join.id,)) for n in joiners],
                                             "bit filters")
        self.scheduler.scheduler_messages += len(joiners) + len(pnodes)
        self.scheduler.note(f"bit filters: join sites {joiners} -> scheduler -> producers on "
                            f"nodes {pnodes} ({', '.join(f'{f.fill():.0%}' for f in filters)} "
                            "of the bits set)")
        return pspec.then(BitFilterTest(pkey, pspec.sink.partitioner, filters))

    # -- NonStop SQL's three join strategies ----------------------------------------------------
    def _join_strategy(self, q: SelectQuery, b: int, pr: int, bkey: str, pkey: str,
                       est: list[float]) -> tuple[str, str]:
        """Which of NonStop SQL's three parallel join strategies (Englert et al. 1989, section
        "Parallelism in NonStop SQL") runs the join, and why:

        * ``co_located``: both tables are partitioned the same way on the join columns, so each
          node joins its own fragments and no tuple moves;
        * ``broadcast``: one table is small: it is sent whole to every node holding the other's
          qualifying fragments, which join it with their fragment where it lies (NonStop SQL
          does a nested join there; minidb runs the chosen join plug-in);
        * ``repartition``: both tables are hashed on the join attribute to the join nodes, as
          Gamma runs every join (Section 2).

        A hint names one; otherwise co-location wins when it holds, and broadcast when sending
        the small table to every node moves fewer tuples than repartitioning both tables (the
        planner's estimates). Gamma's Remote and Allnodes placements join on processors other
        than the data's, so they always repartition."""
        names = (q.refs[b].table.name, q.refs[pr].table.name)
        same, reason = self._co_partitioned(q, b, pr, bkey, pkey)
        placed = self.placement not in (None, "local")
        if self.strategy is not None and self.strategy != "repartition" and placed:
            raise MinidbError(f"the hint {self.strategy} joins where the data lies; it cannot "
                              f"run in the {self.placement} placement")
        if self.strategy == "co_located" and not same:
            raise MinidbError(f"co_located needs both tables partitioned the same way on the "
                              f"join columns, and {reason}")
        if self.strategy is not None:
            return self.strategy, "hinted"
        if placed:
            return "repartition", f"{self.placement} placement: the join runs on other nodes"
        if same:
            return "co_located", reason
        if _index_join(self.join_algorithm(q.outer)):
            return "broadcast", ("index nested loops looks up the large table where it lies, "
                                 "so the small one is sent to it")
        nodes = len(self._targets(q.refs[pr]))
        small, large = est[b], est[pr]
        if small * nodes < small + large:
            return "broadcast", (f"{names[0]} is small: sending ~{small:,.0f} tuples to each of "
                                 f"{nodes} nodes moves fewer than repartitioning both tables "
                                 f"(~{small + large:,.0f})")
        return "repartition", (f"broadcasting {names[0]} to {nodes} nodes would move "
                               f"~{small * nodes:,.0f} tuples, repartitioning both "
                               f"~{small + large:,.0f}")

    def _co_partitioned(self, q: SelectQuery, b: int, pr: int, bkey: str,
                        pkey: str) -> tuple[bool, str]:
        """Whether the two tables are partitioned exactly the same way on their join columns
        (the same hash function, or the same range boundaries, over the same disk nodes)."""
        parts = []
        for side, key in ((b, bkey), (pr, pkey)):
            ref = q.refs[side]
            p = self.pdb.schemes[ref.table.name.lower()]
            parts.append((ref.table.name, p, key.split(".", 1)[1].lower()))
        (bn, bp, bc), (pn, pp, pc) = parts
        shown = f"{bn} is {bp.describe()}, {pn} is {pp.describe()}"
        if [c.lower() for c in bp.columns] != [bc] or [c.lower() for c in pp.columns] != [pc]:
            return False, f"{shown}, not on the join columns {bc} and {pc}"
        if type(bp) is not type(pp):
            return False, f"{shown}: different kinds"
        if isinstance(bp, Hash):
            same = bp.seed == pp.seed
        elif isinstance(bp, Range):
            same = (bp._bounds is not None and pp._bounds is not None
                    and len(bp._bounds) == len(pp._bounds)
                    and bool(np.all(bp._bounds == pp._bounds)))
        else:
            same = False
        if not same:
            return False, f"{shown}: not the same function or boundaries"
        return True, f"{shown}: each node joins its own fragments"

    def _join_in_place(self, q: SelectQuery, strategy: str, b: int, pr: int, bkey: str,
                       pkey: str, into: str | None = None):
        """A co-located or broadcast join: the probe table is read where it lies, on the nodes
        holding its qualifying fragments; the build table too (co-located), or broadcast to
        those nodes from its own (broadcast). Returns the schema and rows, or with ``into`` the
        count of tuples each node stored in its fragment of the new relation ``into``."""
        bref, pref = q.refs[b], q.refs[pr]
        bnodes, pnodes = self._targets(bref), self._targets(pref)
        probe = Local(Scan(pref.table.name, pref.filters), [Projection(self._needed(q, pr))])
        texts = []
        if strategy == "co_located":
            nodes = sorted(set(bnodes) | set(pnodes))
            build = Local(Scan(bref.table.name, bref.filters), [Projection(self._needed(q, b))])
            bspec = None
        else:
            # no node can hold a qualifying probe tuple: one node runs the join (and finds none)
            nodes = pnodes or self.pdb.disk[:1]
            x = self.exchange("broadcast")
            bspec = Fragment(self.exchange("scan"), Scan(bref.table.name, bref.filters),
                             [Projection(self._needed(q, b))], SplitTo(x, nodes, mode="broadcast"),
                             self.hints)
            build = Receive(x, bnodes, self.dry(bspec).schema)
            texts.append(f"scan {bref.table.name} on nodes {bnodes} -> broadcast to nodes {nodes}")
        algorithm = self.join_algorithm(q.outer)
        if _index_join(algorithm):
            build, probe, bkey, pkey = self._index_roles(q, strategy, b, pr, bkey, pkey, build,
                                                         probe)
        join = Fragment(self.exchange("join"),
                        Join(build, probe, bkey, pkey, algorithm, outer=q.outer,
                             condition=conjunction(q.join_condition)),
                        self._join_steps(q), ToHost(), self.hints)
        join_schema = self.dry(join).schema
        if self._into is not None:  # CREATE TABLE AS: results to the store operators
            join, store_calls = self._final_sink(join, nodes)
            self._run_in_place(join, bspec, nodes, bnodes, store_calls, texts, algorithm, bref,
                               pref, self._result_text())
            return join_schema, None
        if into is not None:
            held = self.exchange("held")
            join = join.into(Hold(held))
            layout = Schema([c for c in join_schema.columns if c.name != RID])
            p = RoundRobin()  # where later inserts go; each node keeps what it joined
            p.fit(None, len(self.pdb.disk))
            return self._store_held(into, layout, held, p, lambda: self._run_in_place(
                join, bspec, nodes, bnodes, [], texts, algorithm, bref, pref,
                f"store into {into} locally"))
        agg = self._aggregate_at_joins(q, join, nodes)
        if agg is not None:
            parts = self._run_in_place(agg.join, bspec, nodes, bnodes, agg.final_calls, texts,
                                       algorithm, bref, pref, agg.text)
            return self._aggregated(q, agg, parts[:len(nodes)])
        dedup = []
        if not q.aggregating and q.distinct:  # drop duplicates where they meet, as in _join
            by_row = Hash(*q.names)
            by_row.fit(None, len(nodes))
            x = self.exchange("distinct")
            join = join.into(SplitTo(x, nodes, by_row))
            final = Fragment(self.exchange("dedup"), Receive(x, nodes, join_schema),
                             [DuplicateElimination()], ToHost(), self.hints)
            dedup = [(n, "run", (final,)) for n in nodes]
        parts = self._run_in_place(join, bspec, nodes, bnodes, dedup, texts, algorithm, bref, pref,
                                   ("drop duplicates -> host" if dedup else "-> host"))
        return self._join_result(q, join_schema, parts[:len(nodes)], deduplicated=bool(dedup))

    def _index_roles(self, q: SelectQuery, strategy: str, b: int, pr: int, bkey: str,
                     pkey: str, build, probe) -> tuple:
        """(inner, outer, inner key, outer key) of an index nested-loops join run in place: the
        inner input is a table read where it lies and indexed on its join column, the larger
        table when it can be (the outer one is then the broadcast small table, or the other
        local one), else the smaller one of a co-located join."""
        def local(side: int) -> Local:
            ref = q.refs[side]
            return Local(Scan(ref.table.name, ref.filters), [Projection(self._needed(q, side))])

        if self._indexed(q.refs[pr], pkey):
            return local(pr), (build if strategy == "broadcast" else local(b)), pkey, bkey
        if strategy == "co_located" and self._indexed(q.refs[b], bkey):
            return build, probe, bkey, pkey
        where = f"{q.refs[pr].table.name}.{pkey.split('.', 1)[-1]}"
        if strategy == "co_located":
            where += f" or {q.refs[b].table.name}.{bkey.split('.', 1)[-1]}"
        raise MinidbError(f"hint 'index_nested_loops': no index on {where} (the join column "
                          f"of the table read where it lies); create one, or drop the hint")

    def _indexed(self, ref, key: str) -> bool:
        """Whether ``ref``'s table has an index (or is hashed or clustered) on the join column
        ``key`` (``alias.column``), so an index nested-loops join can look it up."""
        node = (self._targets(ref) or self.pdb.disk)[0]  # every fragment has the same indexes
        return self.pdb.backend.call_many(
            [(node, "keyed", (ref.table.name, key.split(".", 1)[-1]))], "index lookup check")[0]

    def _run_in_place(self, join: Fragment, bspec: Fragment | None, nodes: list[int],
                      bnodes: list[int], dedup: list, texts: list[str], algorithm, bref, pref,
                      then: str) -> list:
        """The phases of a co-located join (one) or a broadcast join (build, then probe)."""
        if bspec is None:
            return self.scheduler.phase("co-located join", dedup + [(n, "run", (join,)) for n in nodes],
                                        texts=[f"join ({algorithm.kind}) {bref.table.name} and "
                                               f"{pref.table.name} on nodes {nodes}, {then}"])
        if _index_join(algorithm):  # the broadcast table is the outer input
            build_text = f"start the index nested-loops join on nodes {nodes} (nothing to build)"
            probe_text = (f"for each {bref.table.name} tuple received, look up "
                          f"{pref.table.name} through its index on nodes {nodes}, {then}")
        else:
            build_text = f"build ({algorithm.kind}) on nodes {nodes}"
            probe_text = f"scan {pref.table.name} where it lies, probe on nodes {nodes}, {then}"
        self.scheduler.phase("build", [(n, "start", (join,)) for n in nodes]
                             + [(n, "run", (bspec,)) for n in bnodes],
                             texts=texts + [build_text])
        return self.scheduler.phase("probe", dedup + [(n, "drain", (join.id,)) for n in nodes],
                                    texts=[probe_text])

    def _aggregate_at_joins(self, q: SelectQuery, join: Fragment, nodes: list[int],
                            overflow: bool = False) -> _JoinAggregation | None:
        """Aggregates over a two-table join run where Gamma runs aggregates (Section 7): each
        join node aggregates its own result tuples (partial aggregates); a scalar aggregate's
        partials go to the host, which combines them; a GROUP BY's are sent by a hash of the
        group columns to the join nodes, which finish the groups and apply HAVING. Returns the
        join fragment with its partial aggregation and sink, the final fragments to run with
        its last phase, and how the host finishes; None when the host aggregates instead (a
        DISTINCT aggregate, or a grouped one whose join resolves overflow in later passes,
        which would send partials after the final aggregation ended)."""
        if not q.aggregating or q.distinct_aggregates or (overflow and q.group_by):
            return None
        joined = self.dry(join).schema
        partials, finals, averages = split_aggregates(q.aggregates, joined)
        keys = [Projection(group_key_outputs(joined.names, q))] if q.group_keys else []
        join = join.then(*keys, Aggregation(q.group_by, partials))
        partial_schema = self.dry(join).schema
        if not q.group_by:
            return _JoinAggregation(join.into(ToHost()), [], partial_schema, finals, averages,
                                    "partial aggregate on the join nodes -> host")
        by_group = Hash(*q.group_by)
        by_group.fit(None, len(nodes))
        x = self.exchange("groups")
        steps = [Aggregation(q.group_by, finals)] + _average_steps(averages)
        if q.having is not None:
            steps.append(Selection(q.having))
        final = Fragment(self.exchange("final"), Receive(x, nodes, partial_schema), steps,
                         ToHost(), self.hints)
        having = f", HAVING {q.having_text}" if q.having is not None else ""
        return _JoinAggregation(join.into(SplitTo(x, nodes, by_group)),
                                [(n, "run", (final,)) for n in nodes], self.dry(final).schema,
                                finals, averages,
                                f"partial aggregate on the join nodes -> {by_group.describe()} "
                                f"to nodes {nodes}; final aggregate{having} there -> host")

    def _aggregated(self, q: SelectQuery, agg: _JoinAggregation,
                    parts: list) -> tuple[Schema, np.ndarray]:
        """The host's part of an aggregate run at the join nodes."""
        if q.group_by:
            return self._finish(q, agg.schema, parts)
        host = HashAggregate(self.host.ctx, ArrayScan(agg.schema, _cat(parts, agg.schema)),
                             [], agg.final_aggregates, self.host.memory_pages)
        return self._finish(q, host.schema, [host.collect()], averages=agg.averages, having=True)

    def _needed(self, q: SelectQuery, side: int) -> list:
        """The projection of one join input to the columns the query needs, named alias.column."""
        ref = q.refs[side]
        cols = [c.name for c in ref.table.schema.columns if f"{ref.alias}.{c.name}" in q.needed] \
            or [ref.table.schema.columns[0].name]
        return [(f"{ref.alias}.{c}", Col(c)) for c in cols]

    @staticmethod
    def _join_steps(q: SelectQuery) -> list:
        """What the join nodes do to the joined tuples: the residual conditions, then (when the
        host does not aggregate) the SELECT list and a first duplicate elimination."""
        steps = []
        if q.residual:
            steps.append(Selection(conjunction(q.residual)))
        if not q.aggregating:
            steps.append(Projection(q.outputs))
            if q.distinct:  # each join node drops its own duplicates first
                steps.append(DuplicateElimination())
        return steps

    def _join_result(self, q: SelectQuery, join_schema: Schema, parts: list,
                     deduplicated: bool = False) -> tuple[Schema, np.ndarray]:
        """The host's part of a two-table join: the aggregate if any, then ``_finish``."""
        rows = _cat(parts, join_schema)
        if not q.aggregating:
            return self._finish(q, join_schema, [rows], projected=True, deduplicated=deduplicated)
        host = aggregate_query(self.host.ctx, ArrayScan(join_schema, rows), q,
                               self.host.memory_pages)
        self.scheduler.note("host: " + " <- ".join(o.describe() for o in host.walk()))
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
                store_calls = []
                if self._into is not None:  # each pass sends its results to the store too
                    spec, store_calls = self._final_sink(spec, joiners)
                self.scheduler.phase(f"overflow pass {level}: build",
                           [(n, "start", (spec,)) for n in joiners]
                           + [(n, "run", (bscan,)) for n in joiners], texts=[
                    f"read the build overflow files on nodes {joiners} -> a new hash of {bkey} "
                    f"to nodes {joiners}",
                    f"build on nodes {joiners}" + ("" if distributed else
                                                   " (this pass resolves any overflow itself)")])
                cuts = self._overflow_cuts(spec, joiners) if distributed else [None] * len(joiners)
                if any(c is not None for c in cuts):
                    pscan = _with_overflow_test(pscan, pkey, level, cuts, distributed)
                parts = self.scheduler.phase(f"overflow pass {level}: probe",
                                   [(n, "drain", (spec.id,)) for n in joiners]
                                   + [(n, "run", (pscan,)) for n in holders] + store_calls,
                                   texts=[
                    f"read the probe overflow files on nodes {holders} -> a new hash of {pkey} "
                    f"to nodes {joiners}", f"probe on nodes {joiners} {self._result_text()}"])
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
            self.scheduler.note("selection propagation (Gamma §6.1): " + "; ".join(q.propagated))

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
        _refuse_index_join(self.join_algorithm(), "a join of more than two tables")
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
                spec, store_calls = self._final_sink(spec, joiners)
            specs.append(spec)
        for j, spec in zip(joins, specs, strict=True):
            bspec, bnodes, _, _ = j["build"]
            how = "broadcast" if j["cross"] else f"hash({j['build_key']})"
            self.scheduler.phase(f"build {q.refs[j['side']].table.name}",
                       [(n, "start", (spec,)) for n in joiners]
                       + [(n, "run", (bspec,)) for n in bnodes], texts=[
                f"scan {q.refs[j['side']].table.name} on nodes {bnodes} -> {how} to nodes "
                f"{joiners}", f"build ({spec.source.algorithm.kind}) on {j['build_key']} on nodes "
                f"{joiners}"])
        sspec, snodes, _, _ = stream
        parts = self.scheduler.phase("probe pipeline",
                           [(n, "drain", (spec.id,)) for spec in reversed(specs) for n in joiners]
                           + [(n, "run", (sspec,)) for n in snodes] + store_calls, texts=[
            f"scan {q.refs[first].table.name} on nodes {snodes} -> "
            f"{sspec.sink.partitioner.describe()} to nodes {joiners}",
            *(f"probe on {j['probe_key']} = {j['build_key']} on nodes {joiners}" for j in joins),
            self._result_text()])
        final_schema = self.dry(specs[-1]).schema
        if self._into is not None:  # the store operators hold the result
            return final_schema, None
        rows = _cat(parts[:len(joiners)], final_schema)
        if not q.aggregating:
            return self._finish(q, final_schema, [rows], projected=True)
        host = aggregate_query(self.host.ctx, ArrayScan(final_schema, rows), q,
                               self.host.memory_pages)
        self.scheduler.note("host: " + " <- ".join(o.describe() for o in host.walk()))
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
        outputs = self._needed(q, side)
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
        parts = self.scheduler.phase("probe", [(n, "run", (dedup,)) for n in joiners]
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
            op = HashAggregate(self.host.ctx, op, op.schema.names, [], self.host.memory_pages)
        if q.order:
            op = ExternalSort(self.host.ctx, op, q.order, self.host.memory_pages)
        if q.visible < len(q.outputs):
            op = Project(op, [(n, Col(n)) for n in q.names])
        if q.limit is not None:
            op = Limit(op, q.limit)
        records = op.collect()
        self.scheduler.note("host: " + " <- ".join(o.describe() for o in op.walk()))
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
        if not targets:  # the WHERE clause rules out every node's key range: nothing to change
            return 0
        if moves and isinstance(p, PredicateFragments):
            # predicates may leave a gap (or overlap): find a changed tuple that no fragment (or
            # two) would take before any node changes anything, as DISTRIBUTE does, so that a
            # refused UPDATE leaves every node as it was (without a data directory nothing could
            # undo the nodes that had finished)
            self.scheduler.phase(
                "check the new fragments",
                [(n, "update_check", (table.name, st.ref.filters, dict(st.assignments), p,
                                      self.hints)) for n in targets],
                texts=[f"nodes {targets} check that every tuple the update changes lies in "
                       f"exactly one fragment of {p.describe()} (nothing changes yet)"])
        calls = [(n, "update", (table.name, st.ref.filters, dict(st.assignments), p,
                                disk if moves else None, x, self.hints)) for n in targets]
        if moves:
            hold = Fragment(x, Receive(x, targets, table.schema), sink=Hold(x))
            calls = [(n, "run", (hold,)) for n in disk] + calls
        try:
            out = self.scheduler.phase("update", calls, texts=[f"update {table.name} on nodes {targets}"]
                                       + ([f"tuples whose node under {p.describe()} changes move to it"]
                                          if moves else []))
        except Exception as failure:
            self._undo_change(targets, failure, x)
            raise
        self._forget_undo(targets)
        if moves:
            self.scheduler.phase("insert moved tuples", [(n, "insert_held", (x, table.name)) for n in disk])
        return int(sum(out[-len(targets):]))

    def _undo_change(self, targets: list[int], failure: Exception,
                     exchange_id: str | None = None) -> None:
        """An UPDATE or DELETE failed on some node (a value that does not fit its column, an
        overflow, a ``% 0``) after others had changed their fragments: without a data
        directory, whose journal undoes the statement on every node, the nodes put their
        before-images back (``Node.undo_change``), so the failed statement leaves the table as
        it was, as on one node. (Only heap tables keep before-images; see ``Node.update``.)"""
        if self.pdb.data_dir is None:
            try:
                self.pdb.backend.call_many([(n, "undo_change", (exchange_id,)) for n in targets],
                                           "undo")
            except Exception as e:  # e.g. the node that failed the statement is gone
                raise MinidbError(
                    f"the statement failed ({failure}), and putting back what it had changed "
                    f"failed too on some node ({e}); the table may be partly changed. A data directory "
                    f"(connect(data_dir=...)) makes every statement all or nothing, whatever "
                    f"fails") from e

    def _forget_undo(self, targets: list[int]) -> None:
        if self.pdb.data_dir is None:
            self.pdb.backend.call_many([(n, "forget_undo", ()) for n in targets], "forget undo")

    def delete(self, st: DeleteStatement) -> int:
        targets = self._targets(st.ref)  # as for a SELECT: one node for the partitioning key
        try:
            out = self.scheduler.phase("delete", [(n, "delete", (st.ref.table.name, st.ref.filters,
                                                                self.hints)) for n in targets],
                                       texts=[f"delete from {st.ref.table.name} on {targets}"])
        except Exception as failure:
            self._undo_change(targets, failure)
            raise
        self._forget_undo(targets)
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
            self.scheduler.phase("rehome", [(n, "run", (hold,)) for n in disk]
                       + [(n, "rehome", (table.name, p, disk, x)) for n in sources],
                       texts=[f"rows of the buckets {p.describe()} split move from nodes "
                              f"{sources} to their new nodes"])
            self.scheduler.phase("insert moved tuples", [(n, "insert_held", (x, table.name)) for n in disk])
        parts = p.partition(st.records)
        out = self.scheduler.phase("insert", [(n, "insert", (table.name, parts[i])) for i, n in enumerate(disk)],
                         texts=[f"insert into {table.name} by {p.describe()}"])
        return int(sum(out))

    def distribute(self, table: ClusterTable, fragments: PredicateFragments) -> tuple[int, list[int], list[int]]:
        """DISTRIBUTE (Distributed INGRES §2): move the tuples of ``table`` to the disk nodes
        whose predicate in ``fragments`` they satisfy. Returns (tuples moved, tuples per disk
        node before, after).

        Phase 1 changes nothing: every disk node routes its own fragment by the new predicates
        and counts where its tuples would go, so a tuple that satisfies none of them or several
        stops the statement before any tuple moves. Then, as an UPDATE moves a tuple whose
        fragment changed, each node that holds tuples of another node's new fragment deletes
        them and sends them through an exchange (the "rehome" of ``Node.rehome``), and every
        node inserts what it received. The table itself stays: its file organization, key and
        indexes are those of before, and a tuple already on its node is not touched."""
        disk = self.pdb.disk
        name = table.name
        try:
            counts = self.scheduler.phase(
                "check the new fragments", [(n, "distribute_counts", (name, fragments)) for n in disk],
                texts=[f"each node routes its fragment of {name} by {fragments.describe()} "
                       "and counts where its tuples would go (nothing moves yet)"])
        except FragmentCoverageError as e:
            unnamed = [n for n in fragments.nodes if fragments.texts[n] == NO_TUPLES]
            why = f" (nodes no site names have the predicate {NO_TUPLES})" if unnamed else ""
            raise FragmentCoverageError(f"DISTRIBUTE {name}: {e}{why}; nothing was moved") from None
        before = [sum(c) for c in counts]
        after = [sum(c[j] for c in counts) for j in range(len(disk))]
        sources = [disk[i] for i, c in enumerate(counts) if sum(c) > c[i]]
        moved = sum(before) - sum(c[i] for i, c in enumerate(counts))
        if sources:
            x = self.exchange("distribute")
            hold = Fragment(x, Receive(x, sources, table.schema), sink=Hold(x))
            self.scheduler.phase("move tuples", [(n, "run", (hold,)) for n in disk]
                                 + [(n, "rehome", (name, fragments, disk, x)) for n in sources],
                                 texts=[f"nodes {sources} delete the tuples of {name} that belong "
                                        "elsewhere now and send them to their new node"])
            self.scheduler.phase("insert moved tuples",
                                 [(n, "insert_held", (x, name)) for n in disk])
        shown = ", ".join(f"node {n}: {b} -> {a}" for n, b, a in zip(disk, before, after, strict=True))
        self.scheduler.note(f"tuples of {name} per node, before -> after: {shown}; {moved} moved")
        return moved, before, after


def _index_join(algorithm: type) -> bool:
    """Whether ``algorithm`` looks its inner table up where it lies (index nested loops)."""
    return getattr(algorithm, "needs_inner_table", False)


def _refuse_index_join(algorithm: type, what: str) -> None:
    if _index_join(algorithm):
        raise MinidbError(f"index_nested_loops looks the inner table up where it lies; {what} "
                          "sends it through an exchange: hint co_located or broadcast (in the "
                          "local placement), or choose another join")


class _StoreThroughHost(Exception):
    """``join_into``: this partitioning needs the data first; store through the host."""


@dataclass
class _StoreJoin:
    """Where the result of ``CREATE TABLE AS`` a join goes (``ParallelPlanner.join_into``)."""

    partition: Any  # the partition= hint, round-robin by default
    held: str  # the key under which the disk nodes hold the tuples until the store phase
    layout: Schema | None = None  # set by the first result sink
    partitioner: Partitioner | None = None


@dataclass
class _JoinAggregation:
    """An aggregate run at the join nodes (``ParallelPlanner._aggregate_at_joins``)."""

    join: Fragment  # the join fragment, with its partial aggregation and sink
    final_calls: list  # the final aggregation fragments, run with the join's last phase
    schema: Schema  # what reaches the host: partials (scalar) or finished groups (GROUP BY)
    final_aggregates: list  # how the host combines a scalar aggregate's partials
    averages: list
    text: str


def _with_overflow_test(scan: Fragment, key: str, level: int, cuts: list,
                        distributed: dict) -> Fragment:
    """The probe scan ``scan`` with Gamma's overflow test before its split table: tuples routed
    to a node that overflowed, at or above its cut of ``h_level``, are spooled at the producer."""
    return scan.then(OverflowTest(key, level, list(cuts), scan.sink.partitioner,
                                  distributed["spools"]["probe"]))


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


#: the most tables one parallel join pipeline takes (every join fragment and the streaming scan
#: run at once in the probe phase, on a thread or an actor slot of each node)
MAX_PIPELINE_TABLES = 4


__all__ = ["MAX_PIPELINE_TABLES", "ParallelPlanner", "unsupported_in_parallel"]
