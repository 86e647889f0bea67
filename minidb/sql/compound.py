"""SELECTs made of SELECTs: UNION [ALL] and uncorrelated subqueries.

**UNION ALL** (``UnionQuery``): each SELECT is translated on its own (``_Select``); their
columns are matched by position and widened to one layout (``minidb.exec.union.widen``: int
with float gives float, text widths give the longest, as DuckDB does). An ORDER BY and LIMIT
written after the last SELECT apply to the whole union and may name output columns (the
first SELECT's names) or positions. ``UNION`` without ALL is UNION ALL followed by duplicate
elimination. INTERSECT and EXCEPT are not supported.

**Uncorrelated subqueries** (``SubqueryPlan``): a subquery that does not refer to the outer
query has one answer, so it is run *first* and its answer written into the outer statement as
constants, which is then translated as if the user had typed them (so an index or a partition
can still be chosen for ``x > (SELECT AVG(x) ...)``):

* a scalar subquery ``(SELECT ...)`` in WHERE, HAVING, ORDER BY or the SELECT list must give
  one column and at most one row (more rows is an error, as in DuckDB);
* ``x IN (SELECT y ...)`` becomes the list ``x IN (v1, v2, ...)`` of the distinct values of y
  (no values: false).

Subqueries may hold subqueries, and may be UNIONs; a UNION's SELECTs may hold subqueries. The
statement is translated at once with stand-in answers of the right types, so its names,
layout and type errors are known before anything runs. A correlated subquery (one naming a
column of the outer query), EXISTS and ANY / ALL raise ``UnsupportedSQLError``. The planners
(``Planner.select``, the parallel coordinator) run the subqueries with their own plans and call
``SubqueryPlan.finish`` with the answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from minidb.catalog import Catalog
from minidb.errors import (
    MinidbError,
    SchemaError,
    UnknownColumnError,
    UnknownTableError,
)
from minidb.sql.hints import split_hint_comment
from minidb.sql.translate import SelectQuery, _check_args, _Select, _unparen, parse, unsupported
from minidb.storage.schema import Schema, null_mask


# -- UNION [ALL] ----------------------------------------------------------------------------------
@dataclass
class UnionQuery:
    """SELECTs whose results are appended (``distinct``: then duplicates removed), ordered and
    limited as a whole. ``names`` are the first SELECT's output names."""

    parts: list[SelectQuery]
    distinct: bool
    order: list[tuple[str, bool, bool]]  # (output, ascending, nulls_first)
    limit: int | None

    @property
    def names(self) -> list[str]:
        return self.parts[0].names

    @property
    def layout(self) -> Schema:
        from minidb.exec.union import widen

        return widen([p.layout for p in self.parts])


_UNION_CLAUSES = {"with": "WITH, common table expressions", "offset": "OFFSET",
                  "by_name": "UNION BY NAME", "side": "UNION with a join side",
                  "kind": "UNION with a join kind", "on": "UNION ... ON"}


def _union(catalog: Catalog, tree: exp.Union) -> UnionQuery:
    _check_args(tree, {"this", "expression", "distinct", "order", "limit"}, _UNION_CLAUSES, "UNION")
    selects, kinds = _union_parts(tree)
    if len(set(kinds)) > 1 and not kinds[-1]:
        raise unsupported("UNION inside UNION ALL; write all of them as UNION or as UNION ALL")
    parts = []
    for s in selects:
        if not isinstance(s, exp.Select):
            raise unsupported(f"{type(s).__name__} inside UNION; each part must be a SELECT")
        parts.append(select_statement(catalog, s))
    from minidb.exec.union import widen

    word = "UNION" if kinds[-1] else "UNION ALL"
    widen([p.layout for p in parts], word)  # a type error now, before anything runs
    names = parts[0].names
    order = [_union_order_key(o, names) for o in
             (tree.args["order"].expressions if tree.args.get("order") else [])]
    limit = None
    if tree.args.get("limit") is not None:
        value = _unparen(tree.args["limit"].expression)
        if not (isinstance(value, exp.Literal) and not value.is_string and str(value.this).isdigit()):
            raise unsupported(f"LIMIT {value.sql()}; LIMIT takes a whole number")
        limit = int(value.this)
    return UnionQuery(parts, kinds[-1], order, limit)


def _union_parts(tree: exp.Expression, top: bool = True) -> tuple[list[exp.Expression], list[bool]]:
    """The SELECTs of a chain of UNIONs, left to right, and for each UNION whether it is
    DISTINCT (without ALL); the last flag is the outermost UNION's."""
    tree = _unparen(tree)
    if isinstance(tree, exp.Subquery):
        tree = tree.this
    if isinstance(tree, exp.Intersect | exp.Except):
        raise unsupported("INTERSECT / EXCEPT")
    if not isinstance(tree, exp.Union):
        return [tree], []
    if not top:  # an inner UNION (in parentheses) may not order or limit: the outermost one does
        _check_args(tree, {"this", "expression", "distinct"},
                    {**_UNION_CLAUSES, "order": "ORDER BY inside a parenthesized UNION",
                     "limit": "LIMIT inside a parenthesized UNION"}, "UNION")
    right = _unparen(tree.expression)
    right = right.this if isinstance(right, exp.Subquery) else right
    if isinstance(right, exp.Union | exp.Intersect | exp.Except):
        raise unsupported("a parenthesized UNION on the right of a UNION; write the SELECTs "
                          "one after the other")
    left, kinds = _union_parts(tree.this, top=False)
    return left + [right], kinds + [bool(tree.args.get("distinct"))]


def _union_order_key(o: exp.Ordered, names: list[str]) -> tuple[str, bool, bool]:
    node = _unparen(o.this)
    ascending = not bool(o.args.get("desc"))
    nulls_first = bool(o.args.get("nulls_first"))
    if isinstance(node, exp.Literal) and not node.is_string:
        pos = int(str(node.this)) if str(node.this).isdigit() else 0
        if not 1 <= pos <= len(names):
            raise MinidbError(f"ORDER BY {node.sql()}: the UNION gives {len(names)} columns")
        return names[pos - 1], ascending, nulls_first
    if isinstance(node, exp.Column) and not node.table:
        for name in names:
            if name.lower() == node.name.lower():
                return name, ascending, nulls_first
    raise unsupported(f"ORDER BY {node.sql()} over a UNION; order by an output column's name "
                      f"({', '.join(names)}) or position")


# -- uncorrelated subqueries ----------------------------------------------------------------------
@dataclass
class Subquery:
    """One subquery to run first: ``kind`` is "scalar" or "in"."""

    kind: str
    query: SelectQuery | UnionQuery
    text: str


@dataclass
class SubqueryPlan:
    """A statement that needs the answers of its ``subqueries`` first; ``finish`` takes one
    answer per subquery (a value, or for "in" an array of distinct values) and gives the
    translated statement with the answers written in as constants. ``names`` and ``layout``
    are its output columns (known before the subqueries run: the statement is translated
    once with stand-in answers, which also checks its types)."""

    subqueries: list[Subquery]
    finish: Callable[[list], SelectQuery]
    names: list[str]
    layout: Schema


def select_statement(catalog: Catalog, tree: exp.Expression) -> SelectQuery | UnionQuery | SubqueryPlan:
    """Translate a SELECT or a UNION (the SELECT statement's dispatch)."""
    if isinstance(tree, exp.Union):
        return _union(catalog, tree)
    found = _subqueries(tree)
    if not found:
        return _Select(catalog, tree).build()
    subqueries = [Subquery(kind, _translate_subquery(catalog, node, tree), node.sql(dialect="duckdb"))
                  for kind, node in found]
    paths = [_path_of(node, tree) for _, node in found]

    def finish(answers: list) -> SelectQuery:
        copy = tree.copy()
        targets = [_follow(copy, path) for path in paths]
        for (kind, _), node, answer in zip(found, targets, answers, strict=True):
            if kind == "scalar":
                node.replace(_order_safe(node, _scalar_literal(answer)))
            else:
                node.replace(_in_condition(node, answer))
        return _Select(catalog, copy).build()

    preview = finish([_stand_in(sub) for sub in subqueries])
    return SubqueryPlan(subqueries, finish, preview.names, preview.layout)


def _stand_in(sub: Subquery):
    """An answer of the right type for ``sub``, to translate the statement before it runs."""
    if sub.kind == "in":
        return np.empty(0)
    kind = sub.query.layout.columns[0].kind
    return "" if kind == "char" else 0.0 if kind == "float64" else 0


def _subqueries(tree: exp.Expression) -> list[tuple[str, exp.Expression]]:
    """The subqueries of a SELECT outside its FROM clause, outermost first: ("scalar",
    Subquery node) or ("in", In node). Subqueries inside them are theirs to handle."""
    found: list[tuple[str, exp.Expression]] = []
    places = list(tree.expressions) + [tree.args.get(k) for k in ("where", "having", "order")]
    places += [j.args.get("on") for j in tree.args.get("joins") or []]
    for place in places:
        if place is None:
            continue
        for node in place.walk(prune=lambda n: isinstance(n, exp.Subquery | exp.Exists | exp.In)):
            if isinstance(node, exp.Exists):
                raise unsupported("EXISTS subqueries; write IN (SELECT ...) or a join")
            if isinstance(node, exp.In) and node.args.get("query") is not None:
                found.append(("in", node))
            elif isinstance(node, exp.Subquery):
                found.append(("scalar", node))
            elif isinstance(node, exp.In):  # an IN list: look for subqueries among its values
                for part in [node.this] + list(node.expressions):
                    found += [("scalar", s) for s in part.find_all(exp.Subquery)]
    if any(isinstance(n.parent, exp.Any | exp.All) for _, n in found):
        raise unsupported("ANY / ALL (subquery)")
    return found


def _translate_subquery(catalog: Catalog, node: exp.Expression, outer: exp.Expression):
    inner = node.args["query"] if isinstance(node, exp.In) else node
    body = _unparen(inner.this if isinstance(inner, exp.Subquery) else inner)
    if not isinstance(body, exp.Select | exp.Union):
        raise unsupported(f"subquery {inner.sql()}")
    try:
        query = select_statement(catalog, body)
    except (UnknownColumnError, UnknownTableError):
        name = _outer_reference(catalog, body, outer)
        if name is None:
            raise
        raise unsupported(f"correlated subqueries (the subquery refers to {name} of the outer "
                          "query); only uncorrelated subqueries are supported") from None
    if len(query.names) != 1:
        raise SchemaError(f"the subquery {inner.sql()} gives {len(query.names)} columns; a "
                          "subquery used as a value or in IN must give exactly one")
    return query


def _outer_reference(catalog: Catalog, inner: exp.Expression, outer: exp.Expression) -> str | None:
    """The first column of ``inner`` that only the outer query's FROM tables can explain."""
    tables = [t for t in outer.find_all(exp.Table) if t.find_ancestor(exp.Subquery) is None]
    outer_names = {n.lower() for t in tables for n in (t.name, t.alias_or_name)}
    inner_tables = {t.alias_or_name.lower() for t in inner.find_all(exp.Table)}

    def columns(of) -> set[str]:
        return {c.lower() for t in of if catalog.has(t.name) for c in catalog.get(t.name).schema.names}

    outer_columns = columns(tables)
    inner_columns = columns(inner.find_all(exp.Table))  # an unqualified one of these is inner
    for c in inner.find_all(exp.Column):
        qualifier = c.table.lower()
        if qualifier and qualifier in outer_names and qualifier not in inner_tables:
            return c.sql()
        if not qualifier and c.name.lower() in outer_columns - inner_columns:
            return c.sql()
    return None


def _path_of(node: exp.Expression, root: exp.Expression) -> list[tuple[str, int | None]]:
    """How to reach ``node`` from ``root`` (so the same node can be found in a copy)."""
    path = []
    while node is not root:
        parent = node.parent
        value = parent.args[node.arg_key]
        # by identity: sqlglot nodes compare by structure, so two equal subqueries in one list
        # would both be found at the first one's place
        index = next(i for i, v in enumerate(value) if v is node) if isinstance(value, list) \
            else None
        path.append((node.arg_key, index))
        node = parent
    return path[::-1]


def _follow(root: exp.Expression, path: list[tuple[str, int | None]]) -> exp.Expression:
    node = root
    for key, index in path:
        node = node.args[key] if index is None else node.args[key][index]
    return node


def _scalar_literal(value) -> exp.Expression:
    if value is None:
        return exp.Null()
    if isinstance(value, bytes | np.bytes_):
        return exp.Literal.string(bytes(value).decode())
    if isinstance(value, str):
        return exp.Literal.string(value)
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float):
        return exp.Literal.number(repr(value))
    return exp.Literal.number(int(value))


def _order_safe(node: exp.Expression, value: exp.Expression) -> exp.Expression:
    """``value`` in parentheses where ``node`` is in an ORDER BY term: ``ORDER BY (SELECT
    COUNT(*) ...)`` sorts by a constant, but its answer written bare, ``ORDER BY 2``, would
    sort by the second output column, and ``ORDER BY 0`` or ``ORDER BY -(0)`` was refused as a
    position (found by the fuzzer)."""
    return exp.Paren(this=value) if node.find_ancestor(exp.Ordered) is not None else value


def _in_condition(node: exp.In, values, literal=_scalar_literal) -> exp.Expression:
    """``x IN (SELECT ...)`` rewritten as the list ``x IN (v1, v2, ...)`` of its answers (an
    ``InList`` of ``minidb.exec.scalar``, which keeps SQL's NULL rules: ``x IN (..., NULL)`` is
    NULL unless x matches). No answer at all gives FALSE."""
    if len(values) == 0:
        return exp.false()
    return exp.In(this=node.this.copy(), expressions=[literal(v) for v in values])


def subquery_answer(sub: Subquery, records: np.ndarray):
    """The value a subquery's result stands for in the outer statement (checked)."""
    name = records.dtype.names[0]
    column = records[name]
    nulls = null_mask(records, name)
    if sub.kind == "in":  # a NULL in the list stays one: x IN (..., NULL) is NULL, not FALSE
        if nulls is None:
            return np.unique(column)
        return list(np.unique(column[~nulls])) + [None]
    if len(column) > 1:
        raise MinidbError(f"More than one row returned by a subquery used as an expression "
                          f"({sub.text} gave {len(column)} rows); scalar subqueries can only "
                          "return a single row")
    if len(column) == 0 or (nulls is not None and nulls[0]):
        return None  # a scalar subquery over no rows, or giving NULL, is NULL
    return column[0]


_MAY_HOLD_SUBQUERY = re.compile(r"\s*(UPDATE|DELETE)\b.*\bSELECT\b", re.IGNORECASE | re.DOTALL)


def inline_subqueries(text: str, catalog: Catalog, run: Callable[[str], np.ndarray]) -> str:
    """``text`` with the uncorrelated subqueries of an UPDATE or DELETE (in its WHERE or its SET
    expressions) replaced by their answers; any other statement, or one without a subquery, is
    returned as it is.

    SQL evaluates an uncorrelated subquery once, before the statement changes a row, so each is
    run *first*, by ``run`` (the caller's own SELECT path, which gives the result's records: in
    a transaction it reads under the transaction's locks), and its answer is written into the
    statement as constants, as ``SubqueryPlan`` does for a SELECT: a scalar subquery becomes a
    literal, ``x IN (SELECT y ...)`` the list of y's distinct values. The statement is then
    translated, locked and run as if the user had typed the values, on one node, in parallel
    and in a transaction alike. A leading hint comment is kept."""
    body, comment = split_hint_comment(text)
    if not _MAY_HOLD_SUBQUERY.match(body):  # most statements: not parsed twice
        return text
    try:
        tree = parse(body)
    except MinidbError:  # the statement's own translation reports it
        return text
    if not isinstance(tree, exp.Update | exp.Delete):
        return text
    found = _subqueries(tree)
    if not found:
        return text
    for kind, node in found:
        _translate_subquery(catalog, node, tree)  # refuses a correlated or many-column subquery
        inner = node.args["query"] if kind == "in" else node
        select = _unparen(inner.this if isinstance(inner, exp.Subquery) else inner)
        shown = inner.sql(dialect="duckdb")
        records = run(select.sql(dialect="duckdb"))
        answer = subquery_answer(Subquery(kind, None, shown), records)
        node.replace(_value_literal(answer) if kind == "scalar"
                     else _in_condition(node, answer, _value_literal))
    rewritten = tree.sql(dialect="duckdb")
    return f"/*+ {comment} */ {rewritten}" if comment is not None else rewritten


def _value_literal(value) -> exp.Expression:
    """``_scalar_literal`` for a statement that is written out as text and parsed again: a NaN
    or infinite answer would read back as a column name, so it is written as a cast."""
    if isinstance(value, float | np.floating) and not np.isfinite(value):
        return exp.Cast(this=exp.Literal.string(repr(float(value))), to=exp.DataType.build("DOUBLE"))
    return _scalar_literal(value)


__all__ = ["UnionQuery", "SubqueryPlan", "Subquery", "inline_subqueries", "select_statement",
           "subquery_answer"]
