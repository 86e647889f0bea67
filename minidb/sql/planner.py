"""The planner: choose an access path for every table and a join method, build the iterators.

Access paths follow the Gamma optimizer (Gamma 1988, Section 5.1, and Table 1). For each table,
every AND-term of the WHERE clause that bounds an indexed column by constants (``key_range``) is
a candidate; the others are applied as a filter on the tuples the chosen path produces.

* **Hash lookup** (hash-organized table, Teradata style, Section 3): an exact match on the hash
  key goes straight to its bucket. Always used when it applies.
* **Clustered index** (the file is sorted on the key, a B+ tree above it): used whenever a term
  restricts the key; only the pages of the range are read (rows five and six of Table 1).
* **Non-clustered B+ tree** (Gamma): each matching tuple may cost one random page read, so the
  index is used only if the *estimated number of matching tuples is below the number of data
  pages* of the relation. Gamma's rule of thumb falls out of this: a 1% selection of 10,000
  Wisconsin tuples is 100 tuples, fewer than the 588 pages of the file (17 tuples a page in
  Gamma's 4 KB pages), so the index is used; 10% is 1,000 tuples, more than 588, so the file is
  scanned (rows three and four of Table 1).
* **Dense hash index** (Teradata's only secondary index): the same rule, but a range has to read
  the *whole* index (its entries are hashed, not sorted), so its cost is the index pages plus one
  random read per match, compared with the data pages. An exact match probes one bucket.
* Otherwise, or when no candidate wins, a **file scan** with the predicate.

Among the candidates that pass their rule the cheapest estimated one wins (cost in page reads:
tree height + pages of the range for a clustered index, height + matches for a B+ tree, ...).

Selectivity comes from the table's statistics (``catalog.ColumnStats``): for numbers, the width
of the range over the width ``max - min`` of the column (the uniformity assumption); for an
exact match, one over the number of distinct values; for a text range, a flat 1/4. Other terms
count 1/3 each, OR adds its parts, NOT takes the complement.

Joins: an equality between columns of two tables is an equi-join. Tables are joined left-deep in
FROM order, each next table being one connected to the ones already joined. The default method is
a hash join whose *build* input is the smaller one by estimate (Gamma builds its hash table on
the smaller relation, Section 6); the hint ``nested_loops`` selects a nested-loops join instead.
Tables with no equality between them are joined by nested loops without a predicate (a cross
product). The join result is estimated at the size of the smaller input, which holds for joins on
a key of one side, like all the Wisconsin joins.

Every memory-hungry operator (hash join, sort, hash aggregate) gets the database's
``memory_pages``; operators of one plan do not share the budget (a simplification).

Relational additions, each shown by ``explain()`` with its own note:

* ``SELECT DISTINCT`` and ``UNION``: duplicate elimination by a hash aggregation grouping on
  every output column (``HashAggregate`` with no aggregate functions, which spills to hash
  partitions when the distinct tuples outgrow its memory), after the projection;
* ``HAVING``: a filter over the finished groups, right after the aggregation;
* ``COUNT / SUM / AVG(DISTINCT x)``: two aggregations, the first grouping on the group columns
  and x (which removes the duplicate x of each group), the second on the group columns;
* ``UNION ALL``: a ``UnionAll`` iterator over the SELECTs' plans, then ORDER BY / LIMIT;
* uncorrelated subqueries: run first, their answers written into the statement as constants
  (``minidb.sql.compound``), which is then planned like any other.

Hints (``hints.py``) override the access path (``scan``, ``index``, ``clustered_index``) and
the join method (``hash_join``, ``nested_loops``). ``explain()`` shows each choice and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from minidb.catalog import SecondaryIndex, Table
from minidb.errors import MinidbError
from minidb.exec.aggregate import DISTINCT_COLUMN, HashAggregate, average_expr, distinct_stages
from minidb.exec.expr import (
    Between,
    Col,
    Compare,
    Expr,
    IsNull,
    Not,
    Or,
    compare,
    conjunction,
    key_range,
)
from minidb.exec.filter import Filter
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.project import Project
from minidb.exec.scan import HeapScan
from minidb.exec.sort import ExternalSort
from minidb.exec.store import tuples_per_page
from minidb.exec.union import UnionAll
from minidb.sql.compound import SubqueryPlan, UnionQuery, subquery_answer
from minidb.sql.hints import Hints, join_class
from minidb.sql.operators import Limit
from minidb.sql.translate import SelectQuery

#: selectivity of a term the statistics cannot estimate (a text range, a comparison of columns)
DEFAULT_SELECTIVITY = 1 / 3
TEXT_RANGE_SELECTIVITY = 1 / 4


# -- selectivity ------------------------------------------------------------------------------
def range_selectivity(table: Table, column: str, low, high) -> float:
    """Estimated fraction of the tuples with ``low <= column <= high`` (None: unbounded)."""
    col = table.schema.column(column)
    st = table.column_stats(column)
    if table.num_records == 0 or st.min is None:
        return 0.0
    if col.kind == "char":
        if low is not None and low == high:
            return 1.0 / max(1, st.distinct)
        return TEXT_RANGE_SELECTIVITY
    if low is not None and high is not None and low > high:
        return 0.0
    integral = col.kind != "float64"
    lo = st.min if low is None else max(low, st.min)
    hi = st.max if high is None else min(high, st.max)
    if low is not None and high is not None and low == high:
        return 0.0 if not st.min <= low <= st.max else 1.0 / max(1, st.distinct)
    if integral:
        lo, hi = math.ceil(lo), math.floor(hi)
    if hi < lo:
        return 0.0
    step = 1 if integral else 0
    width = float(st.max) - float(st.min) + step
    if width <= 0:
        return 1.0
    return min(1.0, (float(hi) - float(lo) + step) / width)


def is_integral(table: Table, column: str) -> bool:
    """Whether ``column`` stores whole numbers (its bounds are converted exactly, see
    ``minidb.exec.expr.key_range``)."""
    kind = table.schema.column(column).kind
    return kind != "char" and kind != "float64"


def selectivity(table: Table, terms: list[Expr]) -> float:
    """Estimated fraction of the tuples that satisfy all ``terms`` (independence assumed)."""
    terms = list(terms)
    if not terms:
        return 1.0
    sel = 1.0
    used: set[int] = set()
    pred = conjunction(terms)
    for column in sorted({c for t in terms for c in t.columns()}):
        if not table.schema.has_column(column):
            continue
        found = key_range(pred, column, integral=is_integral(table, column))
        if found is None:
            continue
        low, high, rest = found
        rest_ids = {id(t) for t in rest}
        users = [t for t in terms if id(t) not in rest_ids and id(t) not in used]
        if not users:
            continue
        used |= {id(t) for t in users}
        sel *= range_selectivity(table, column, low, high)
    for t in terms:
        if id(t) not in used:
            sel *= _term_selectivity(table, t)
    return max(0.0, min(1.0, sel))


def _term_selectivity(table: Table, term: Expr) -> float:
    if isinstance(term, Or):
        return min(1.0, sum(selectivity(table, [p]) for p in term.parts))
    if isinstance(term, Not):
        return 1.0 - selectivity(table, [term.part])
    if isinstance(term, Compare) and term.op == "<>":
        cols = [e for e in (term.left, term.right) if isinstance(e, Col)]
        if len(cols) == 1 and table.schema.has_column(cols[0].name):
            return 1.0 - 1.0 / max(1, table.column_stats(cols[0].name).distinct)
    if isinstance(term, Compare | Between) or term.columns():
        return DEFAULT_SELECTIVITY
    return 1.0


# -- access paths ------------------------------------------------------------------------------
@dataclass
class AccessPath:
    """How one table is read: the method, the index column and range, and the estimates."""

    method: str  # "scan" | "clustered_index" | "index" | "dense_index" | "hash_lookup"
    column: str | None = None
    low: object = None
    high: object = None
    rest: list[Expr] = field(default_factory=list)
    est_rows: float = 0.0  # tuples the index range delivers (before the other terms)
    cost: float = 0.0  # estimated page reads
    eligible: bool = True  # passes its rule (Gamma's "matches < pages" for non-clustered)
    index: SecondaryIndex | None = None
    reason: str = ""

    @property
    def label(self) -> str:
        return {"scan": "file scan", "clustered_index": "clustered index",
                "index": "non-clustered B+ tree index", "dense_index": "dense hash index",
                "hash_lookup": "hash lookup"}[self.method]


def _fmt(v) -> str:
    if isinstance(v, bytes):
        v = v.decode(errors="replace")
    return repr(v) if isinstance(v, str) else ("-inf" if v is None else str(v))


def _range_text(column: str, low, high) -> str:
    if low is not None and low == high:
        return f"{column} = {_fmt(low)}"
    hi = "+inf" if high is None else _fmt(high)
    return f"{column} in [{_fmt(low)}, {hi}]"


def _int_bounds(table: Table, column: str, low, high):
    """Bounds in the column's own terms: whole numbers for an integer column, bytes for text."""
    col = table.schema.column(column)
    if col.kind == "char":
        return _encoded(low), _encoded(high)
    if col.kind != "float64":
        low = None if low is None else int(math.ceil(low))
        high = None if high is None else int(math.floor(high))
    return low, high


def _encoded(v):
    return v.encode() if isinstance(v, str) else v


def candidate_paths(table: Table, terms: list[Expr]) -> list[AccessPath]:
    """Every index path that some term makes possible, with its estimate and its rule."""
    pred = conjunction(terms)
    pages = max(1, table.num_pages)
    n = table.num_records
    out: list[AccessPath] = []

    def bounded(column: str):
        found = key_range(pred, column, integral=is_integral(table, column))
        if found is None:
            return None
        low, high, rest = found
        if table.schema.column(column).kind != "char" and any(
                isinstance(v, str) for v in (low, high)):
            return None
        return low, high, rest

    if table.organization == "clustered" and table.key is not None:
        found = bounded(table.key)
        if found is not None:
            low, high, rest = found
            sel = range_selectivity(table, table.key, low, high)
            est = sel * n
            height = int(getattr(table.storage.tree, "height", 1) or 1)
            data_pages = math.ceil(sel * pages)
            out.append(AccessPath(
                "clustered_index", table.key, low, high, rest, est, height + data_pages, True,
                reason=(f"clustered index on {_range_text(table.key, low, high)}: est. {est:.0f} "
                        f"tuples on ~{data_pages} of {pages} data pages; a clustered index is used "
                        "whenever it restricts the key")))
    if table.organization == "hash" and table.key is not None:
        found = bounded(table.key)
        # NaN = NaN (DuckDB): a NaN key is looked up in its bucket like any other
        if found is not None and found[0] is not None and compare("=", found[0], found[1]):
            low, high, rest = found
            est = range_selectivity(table, table.key, low, high) * n
            out.append(AccessPath(
                "hash_lookup", table.key, low, high, rest, est, 1.0, True,
                reason=(f"hash lookup of {_range_text(table.key, low, high)}: one bucket of the "
                        "hash-organized file (est. {:.0f} tuples)".format(est))))
    for ix in table.indexes.values():
        found = bounded(ix.column)
        if found is None:
            continue
        low, high, rest = found
        est = range_selectivity(table, ix.column, low, high) * n
        where = _range_text(ix.column, low, high)
        if ix.kind == "btree":
            cost = ix.height + est
            ok = est < pages
            cmp = "<" if ok else ">="
            reason = (f"non-clustered index on {where}: est. {est:.0f} matching tuples {cmp} "
                      f"{pages} data pages (each match may cost a random page read)")
            out.append(AccessPath("index", ix.column, low, high, rest, est, cost, ok, ix, reason))
        else:
            exact = low is not None and bool(compare("=", low, high))  # NaN = NaN
            index_cost = 1 if exact else max(1, ix.num_pages)
            cost = index_cost + est
            ok = cost < pages
            cmp = "<" if ok else ">="
            read = "probes one bucket of the index" if exact else \
                f"reads all {index_cost} index pages (hashed, not sorted)"
            reason = (f"dense hash index on {where}: {read} + est. {est:.0f} matching tuples = "
                      f"{cost:.0f} {cmp} {pages} data pages")
            out.append(AccessPath("dense_index", ix.column, low, high, rest, est, cost, ok, ix, reason))
    return out


def choose_access(table: Table, terms: list[Expr], hint: str | None) -> tuple[AccessPath, bool]:
    """The access path for ``table`` under ``terms`` and the access hint; and whether the hint
    (if any) could be followed."""
    pages = max(1, table.num_pages)
    n = table.num_records
    candidates = candidate_paths(table, terms)
    scan_est = selectivity(table, terms) * n
    scan = AccessPath("scan", rest=list(terms), est_rows=scan_est, cost=pages)

    if hint == "scan":
        scan.reason = f"file scan of all {pages} data pages (hint 'scan')"
        return scan, True
    if hint in ("index", "clustered_index"):
        if hint == "index":
            pool = [c for c in candidates if c.method in ("index", "dense_index")] or candidates
        else:
            pool = [c for c in candidates if c.method == "clustered_index"]
        if pool:
            best = min(pool, key=lambda c: c.cost)
            best.reason += f" (hint {hint!r})"
            return best, True
        scan.reason = (f"file scan of all {pages} data pages: hint {hint!r} does not apply "
                       "(no such index restricts this table)")
        return scan, False

    eligible = [c for c in candidates if c.eligible]
    if eligible:
        best = min(eligible, key=lambda c: c.cost)
        return best, True
    if candidates:
        scan.reason = f"file scan of all {pages} data pages, not the index: " + \
            "; ".join(c.reason for c in candidates)
    elif table.organization == "hash" and table.key in {c for t in terms for c in t.columns()}:
        scan.reason = (f"file scan of all {pages} data pages: the file is hashed on {table.key}, "
                       "which serves only an exact match on the key, not a range")
    else:
        scan.reason = f"file scan of all {pages} data pages: no index restricts {table.name}"
    return scan, True


def access_operator(ctx: ExecContext, table: Table, path: AccessPath,
                    with_rids: bool = False, columns: list[str] | None = None) -> Operator:
    """The leaf iterator that reads ``table`` along ``path`` (remaining terms as its predicate).

    ``columns``, when given, is a projection a file scan applies while it copies tuples out of
    its pages (the index paths ignore it: they return whole tuples)."""
    pred = conjunction(path.rest)
    if path.method == "scan":
        return HeapScan(ctx, table.heap, predicate=pred, with_rids=with_rids, columns=columns)
    from minidb.exec import index_scan  # the index iterators are only needed for index paths

    if table.schema.column(path.column).nullable:
        # a NULL key is stored as the zero value, so an index or a keyed file may list it under
        # 0 (or ''); a range or equality on the key is never TRUE for NULL: filter those rows out
        pred = conjunction(list(path.rest) + [IsNull(Col(table.schema.column(path.column).name), True)])

    low, high = _int_bounds(table, path.column, path.low, path.high)
    if path.method == "clustered_index":
        return index_scan.ClusteredIndexScan(ctx, table.storage, low, high, predicate=pred,
                                             with_rids=with_rids)
    if path.method == "hash_lookup":
        return index_scan.HashLookupScan(ctx, table.storage, low, predicate=pred, with_rids=with_rids)
    if path.method == "index":
        return index_scan.IndexScan(ctx, table.storage, path.index.index, low, high, predicate=pred,
                                    with_rids=with_rids)
    return index_scan.DenseIndexScan(ctx, table.storage, path.index.index, low, high, predicate=pred,
                                     with_rids=with_rids)


# -- whole SELECT plans ------------------------------------------------------------------------
class Planner:
    """Builds the iterator tree of one statement and remembers why it chose what it chose."""

    def __init__(self, ctx: ExecContext, memory_pages: int, hints: Hints):
        self.ctx = ctx
        self.memory_pages = memory_pages
        self.hints = hints
        self.notes: dict[int, str] = {}  # id(operator) -> the reason shown by explain()
        self.paths: list[tuple[str, AccessPath]] = []

    def note(self, op: Operator, text: str) -> Operator:
        """Attach the reason ``text`` to ``op`` (after any reason it already has)."""
        old = self.notes.get(id(op))
        self.notes[id(op)] = text if old is None else f"{old}\n{text}"
        return op

    def access(self, table: Table, terms: list[Expr], with_rids: bool = False,
               alias: str | None = None,
               columns: list[str] | None = None) -> tuple[Operator, AccessPath, bool]:
        path, followed = choose_access(table, terms, self.hints.access)
        op = access_operator(self.ctx, table, path, with_rids, columns)
        label = table.name if alias is None or alias == table.name else f"{table.name} AS {alias}"
        self.note(op, f"access path for {label}: {path.reason}")
        self.paths.append((label, path))
        return op, path, followed

    def check_hint_followed(self, followed: list[bool]) -> None:
        if self.hints.access and followed and not any(followed):
            raise MinidbError(
                f"hint {self.hints.access!r} cannot be followed: no table of the statement has such "
                "an index restricted by its WHERE clause; drop the hint or create the index"
            )

    def select(self, q: SelectQuery | UnionQuery | SubqueryPlan) -> Operator:
        """The iterator tree of a SELECT (or of a UNION, or of a SELECT whose subqueries must
        run first)."""
        if isinstance(q, SubqueryPlan):
            return self._with_subqueries(q)
        if isinstance(q, UnionQuery):
            return self._union(q)
        if len(q.refs) == 1:
            ref = q.refs[0]
            op, path, followed = self.access(ref.table, ref.filters, alias=ref.alias,
                                             columns=_pushed_projection(ref.table, q.needed))
            self.check_hint_followed([followed])
        else:
            op = self._joins(q)
        if q.aggregating:
            op = aggregate_query(self.ctx, op, q, self.memory_pages, self.note)
        identity = [(c, Col(c)) for c in op.schema.names]
        if q.outputs != identity:
            op = Project(op, q.outputs)
        if q.distinct:
            op = self.deduplicate(op, "SELECT DISTINCT")
        if q.order:
            op = ExternalSort(self.ctx, op, q.order, self.memory_pages)
        if q.visible < len(q.outputs):
            op = Project(op, [(n, Col(n)) for n in q.names])
        if q.limit is not None:
            op = Limit(op, q.limit)
        return op

    def deduplicate(self, op: Operator, what: str) -> Operator:
        """Duplicate elimination: a hash aggregation grouping on every column of ``op``."""
        names = op.schema.names
        out = HashAggregate(self.ctx, op, names, [], self.memory_pages)
        return self.note(out, f"{what}: duplicates removed by hash aggregation grouping on all "
                              f"{len(names)} output columns ({self.memory_pages} pages; spills "
                              "to hash partitions beyond them)")

    def _union(self, u: UnionQuery) -> Operator:
        op = UnionAll([self.select(part) for part in u.parts])
        layout = ", ".join(str(c) for c in op.schema.columns)
        self.note(op, f"UNION ALL of {len(u.parts)} SELECTs, columns matched by position and "
                      f"widened to ({layout})")
        if u.distinct:
            op = self.deduplicate(op, "UNION")
        if u.order:
            op = ExternalSort(self.ctx, op, u.order, self.memory_pages)
        if u.limit is not None:
            op = Limit(op, u.limit)
        return op

    def _with_subqueries(self, plan: SubqueryPlan) -> Operator:
        """Run each uncorrelated subquery, then plan the statement with its answers."""
        answers, lines = [], []
        for i, sub in enumerate(plan.subqueries, 1):
            answer = subquery_answer(sub, self.select(sub.query).collect())
            answers.append(answer)
            lines.append(describe_answer(i, sub, answer))
        root = self.select(plan.finish(answers))
        for line in lines:
            self.note(root, line)
        return root

    def _joins(self, q: SelectQuery) -> Operator:
        inputs: list[Operator] = []
        estimates: list[float] = []
        followed = []
        stored: list[tuple] = []  # each input as a stored table: (table, filters, columns)
        for ref in q.refs:
            op, _, ok = self.access(ref.table, ref.filters, alias=ref.alias)
            followed.append(ok)
            cols = [c.name for c in ref.table.schema.columns
                    if f"{ref.alias}.{c.name}" in q.needed] or [ref.table.schema.columns[0].name]
            outputs = [(f"{ref.alias}.{c}", Col(c)) for c in cols]
            op = Project(op, outputs)
            stored.append((ref.table, ref.filters, outputs))
            inputs.append(op)
            estimates.append(selectivity(ref.table, ref.filters) * ref.table.num_records)
        self.check_hint_followed(followed)
        if q.outer:
            return self._left_join(q, inputs)

        joined = {0}
        current, cur_est = inputs[0], estimates[0]
        edges = list(q.edges)
        residual = list(q.residual)
        available = set(inputs[0].schema.names)
        while len(joined) < len(q.refs):
            connecting = [e for e in edges if (e.left in joined) != (e.right in joined)]
            if connecting:
                nxt = min(e.right if e.left in joined else e.left for e in connecting)
                edge = next(e for e in connecting if nxt in (e.left, e.right))
                edges.remove(edge)
            else:
                nxt = min(set(range(len(q.refs))) - joined)
                edge = None
            new, new_est = inputs[nxt], estimates[nxt]
            if edge is not None and getattr(join_class(self.hints), "needs_inner_table", False):
                first = next(iter(joined)) if len(joined) == 1 else None  # still one table
                op, est = self._index_join(edge, nxt, stored, current, cur_est, new, new_est,
                                           first)
            else:
                # the smaller input (by estimate) is the hash join's build input / the NL inner
                if cur_est <= new_est:
                    small, big, small_est, big_est = current, new, cur_est, new_est
                else:
                    small, big, small_est, big_est = new, current, new_est, cur_est
                build_pages = math.ceil(small_est / tuples_per_page(self.ctx.page_size, small.schema))
                fits = build_pages <= self.memory_pages - 1
                if edge is not None and self.hints.join != "nested_loops" and (fits or self.hints.join):
                    from minidb.exec.join.hash_join import HashJoin

                    algorithm = join_class(self.hints) or HashJoin
                    if small is new:
                        bkey = edge.right_col if edge.right == nxt else edge.left_col
                    else:
                        bkey = edge.left_col if edge.right == nxt else edge.right_col
                    pkey = edge.right_col if bkey == edge.left_col else edge.left_col
                    op = algorithm(self.ctx, small, big, bkey, pkey, self.memory_pages)
                    chosen = f"{self.hints.join} join" if algorithm is not HashJoin else "hash join"
                    self.note(op, f"{chosen} on {bkey} = {pkey}: build on the smaller input "
                                  f"(est. {small_est:.0f} tuples, ~{build_pages} pages), probe with "
                                  f"est. {big_est:.0f}")
                    est = small_est
                else:
                    from minidb.exec.join.nested_loops import NestedLoopsJoin

                    pred = edge.predicate() if edge is not None else None
                    op = NestedLoopsJoin(self.ctx, big, small, pred, self.memory_pages)
                    if edge is None:
                        why = "no equality joins these tables (cross product)"
                    elif self.hints.join == "nested_loops":
                        why = "hint 'nested_loops'"
                    else:
                        why = (f"the smaller input, ~{build_pages} pages, would not fit a hash table "
                               f"in {self.memory_pages - 1} pages")
                    self.note(op, f"nested-loops join ({why}); outer est. {big_est:.0f} tuples, "
                                  f"inner (the smaller) est. {small_est:.0f}")
                    est = small_est if edge is not None else cur_est * new_est
            joined.add(nxt)
            available |= set(new.schema.names)
            current, cur_est = op, est
            # equalities and other terms whose columns are now all present become a filter
            ready = [e.predicate() for e in edges if e.left in joined and e.right in joined]
            edges = [e for e in edges if not (e.left in joined and e.right in joined)]
            ready += [t for t in residual if t.columns() <= available]
            residual = [t for t in residual if not t.columns() <= available]
            if ready:
                current = Filter(current, conjunction(ready))
                cur_est *= DEFAULT_SELECTIVITY ** len(ready)
        if residual:
            current = Filter(current, conjunction(residual))
        return current

    def _index_join(self, edge, nxt: int, stored: list[tuple], current: Operator,
                    cur_est: float, new: Operator, new_est: float,
                    first: int | None) -> tuple[Operator, float]:
        """An index nested-loops join (``minidb/exec/join/index_nested_loops.py``): the inner
        input is a stored table searched through its index on the join column, the outer one
        the other input. The new table is inner when it has such an index; so is the first
        table (``first``, when the joined input is still that one table), the larger
        of the two when both do. A join neither of whose tables has one is refused."""
        from minidb.exec.join.index_nested_loops import IndexLookup, keyed_path

        new_key = edge.right_col if edge.right == nxt else edge.left_col
        cur_key = edge.left_col if edge.right == nxt else edge.right_col
        sides = [(new, new_key, stored[nxt], new_est, current, cur_key, cur_est)]
        if first is not None:
            sides.append((current, cur_key, stored[first], cur_est, new, new_key, new_est))
        usable = []
        for inner, ikey, (table, filters, outputs), iest, outer, okey, oest in sides:
            column = dict(outputs)[ikey].name
            if keyed_path(table, column, filters) is not None:
                usable.append((iest, inner, ikey, table, filters, outputs, column, outer, okey,
                               oest))
        if not usable:
            names = " or ".join(f"{s[2][0].name}.{dict(s[2][2])[s[1]].name}" for s in sides)
            raise MinidbError(f"hint 'index_nested_loops': no index on {names} (the join "
                              "columns); create one, or drop the hint")
        iest, inner, ikey, table, filters, outputs, column, outer, okey, oest = max(
            usable, key=lambda u: u[0])
        algorithm = join_class(self.hints)
        lookup = IndexLookup(self.ctx, table, filters, outputs, column)
        op = algorithm(self.ctx, lookup.as_input(inner.schema), outer, ikey, okey,
                       self.memory_pages)
        self.note(op, f"index nested-loops join on {okey} = {ikey}: each of est. {oest:.0f} "
                      f"outer tuples looks up {table.name} through its index on {column} "
                      f"(est. {iest:.0f} inner tuples, never scanned)")
        return op, min(iest, oest)

    def _left_join(self, q: SelectQuery, inputs: list[Operator]) -> Operator:
        """``refs[0] LEFT JOIN refs[1]``: a hash join built on the right table, probed by the left
        one, which keeps every left tuple; WHERE terms on the right table filter its result."""
        edge = q.edges[0]
        right = q.refs[1]
        right_est = selectivity(right.table, right.filters) * right.table.num_records
        build_pages = math.ceil(right_est / tuples_per_page(self.ctx.page_size, inputs[1].schema))
        fits = build_pages <= self.memory_pages - 1
        if self.hints.join != "nested_loops" and (fits or self.hints.join):
            from minidb.exec.join.hash_join import HashJoin

            algorithm = join_class(self.hints) or HashJoin
            fallback = ""
            if not algorithm.supports_outer:
                fallback = (f" (the {self.hints.join} join cannot preserve a side, so the default "
                            "hash join runs it)")
                algorithm = HashJoin
            op = algorithm(self.ctx, inputs[1], inputs[0], edge.right_col, edge.left_col,
                           self.memory_pages, outer=True, condition=conjunction(q.join_condition))
            self.note(op, f"left outer join{fallback}: build on the right table (est. "
                          f"{right_est:.0f} tuples, ~{build_pages} pages), probe with the left "
                          "one; a left tuple that matches nothing is padded with NULLs")
        else:
            from minidb.exec.join.nested_loops import NestedLoopsJoin

            on = conjunction([edge.predicate()] + list(q.join_condition))
            op = NestedLoopsJoin(self.ctx, inputs[0], inputs[1], on, self.memory_pages, left_outer=True)
            why = "hint 'nested_loops'" if self.hints.join == "nested_loops" else \
                f"the right table, ~{build_pages} pages, would not fit a hash table"
            self.note(op, f"left outer nested-loops join ({why}); the left table is the outer input")
        return Filter(op, conjunction(q.residual)) if q.residual else op


def aggregate_query(ctx: ExecContext, child: Operator, q: SelectQuery, memory_pages: int,
                    note=lambda op, text: op) -> Operator:
    """The aggregation of ``q`` over ``child``: a ``HashAggregate``, or two of them for
    COUNT / SUM / AVG(DISTINCT x); then HAVING as a filter over the finished groups."""
    child = with_group_keys(child, q)
    if not q.distinct_aggregates:
        op = HashAggregate(ctx, child, q.group_by, q.aggregates, memory_pages)
    else:
        stages = distinct_stages(q.aggregates, q.distinct_aggregates, child.schema,
                                 q.distinct_argument)
        keep = [(n, Col(n)) for n in child.schema.names]
        op = Project(child, keep + [(DISTINCT_COLUMN, q.distinct_argument)])
        op = HashAggregate(ctx, op, q.group_by + [DISTINCT_COLUMN], stages.first, memory_pages)
        note(op, f"DISTINCT aggregate, step 1: one tuple per distinct {q.distinct_argument}"
                 + (f" of each group ({', '.join(q.group_by)})" if q.group_by else ""))
        op = HashAggregate(ctx, op, q.group_by, stages.second, memory_pages)
        note(op, "DISTINCT aggregate, step 2: aggregate the distinct values"
                 + (f" by {', '.join(q.group_by)}" if q.group_by else ""))
        op = divide_averages(op, stages.averages, scalar=not q.group_by)
    if q.having is not None:
        op = note(Filter(op, q.having), f"HAVING {q.having_text}: a filter over the finished groups")
    return op


def with_group_keys(child: Operator, q: SelectQuery) -> Operator:
    """``child`` with the GROUP BY expressions of ``q`` computed as columns (``_group0`` ...)."""
    if not q.group_keys:
        return child
    return Project(child, group_key_outputs(child.schema.names, q))


def group_key_outputs(names: list[str], q: SelectQuery) -> list:
    """A projection keeping ``names`` and adding ``q``'s GROUP BY expressions."""
    return [(n, Col(n)) for n in names] + list(q.group_keys)


def divide_averages(op: Operator, averages: list, scalar: bool) -> Operator:
    """Add each AVG output (sum / count) to ``op``. Over no values the sum is NULL, so the
    average is NULL too (the division is strict), as in SQL."""
    if not averages:
        return op
    keep = [(n, Col(n)) for n in op.schema.names]
    return Project(op, keep + [(name, average_expr(s, c)) for name, s, c in averages])


def describe_answer(i: int, sub, answer) -> str:
    """The explain() line of subquery ``i`` and the constant(s) it gave."""
    if sub.kind == "in":
        shown = ", ".join(_fmt(v.item() if hasattr(v, "item") else v) for v in answer[:5])
        more = ", ..." if len(answer) > 5 else ""
        return (f"subquery {i} {sub.text} ran first: {len(answer)} distinct values "
                f"({shown}{more}), written in as x = v1 OR x = v2 ...")
    value = answer.item() if hasattr(answer, "item") else answer
    shown = "NULL" if value is None else _fmt(value)
    return f"subquery {i} {sub.text} ran first and gave {shown}, written in as a constant"


def _pushed_projection(table: Table, needed: set[str]) -> list[str] | None:
    """The columns a single-table SELECT reads above its scan, when that is not all of them."""
    columns = [c for c in table.schema.names if c in needed] or table.schema.names[:1]
    return None if len(columns) == len(table.schema.names) else columns


def estimate_rows(table: Table, terms: list[Expr]) -> float:
    return selectivity(table, terms) * table.num_records


def explain_tree(root: Operator, notes: dict[int, str], header: list[str] | None = None) -> str:
    """The operator tree as indented text, each line with its counters and the planner's reason."""
    lines = list(header or [])

    def walk(op: Operator, depth: int) -> None:
        line = "  " * depth + op.describe()
        if op.stats.tuples_in or op.stats.tuples_out:
            line += f"  [in={op.stats.tuples_in} out={op.stats.tuples_out}]"
        lines.append(line)
        note = notes.get(id(op))
        for part in note.split("\n") if note else []:
            lines.append("  " * depth + f"  -- {part}")
        for child in op.children:
            walk(child, depth + 1)

    walk(root, 0)
    return "\n".join(lines)


__all__ = ["AccessPath", "Planner", "choose_access", "candidate_paths", "access_operator",
           "range_selectivity", "selectivity", "estimate_rows", "explain_tree", "aggregate_query",
           "with_group_keys", "group_key_outputs",
           "divide_averages", "describe_answer"]
