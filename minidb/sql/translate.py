"""From SQL text to a logical statement: names resolved, types checked, expressions built.

The text is parsed by sqlglot (DuckDB dialect) into a syntax tree; this module walks that tree
and builds minidb's own description of the statement, using the expression nodes of
``minidb.exec.expr`` (``Col``, ``Const``, ``Compare``, ``Between``, ``And``, ``Or``, ``Not``,
``Arith``). The planner (``planner.py``) then turns the description into iterators.

The subset is the one the Gamma benchmark needs (Gamma 1988, Sections 5 to 8: selections, joins,
aggregates, updates), in SQL rather than Gamma's QUEL:

* ``SELECT`` columns, ``*``, ``t.*``, arithmetic (+ - * / %), the aggregates MIN MAX SUM COUNT
  AVG and COUNT(*), aliases;
* ``FROM`` one table or several, joined by equalities: ``JOIN ... ON a.x = b.y`` or a comma list
  with the equalities in ``WHERE``; table aliases;
* ``a LEFT [OUTER] JOIN b ON a.x = b.y [AND ...]`` (two tables): the first equality is the join
  key, ON terms on ``b`` alone filter ``b`` before the join, the other ON terms decide which
  pairs match; WHERE terms on ``b`` apply after the join, so they see its NULL padding;
* ``WHERE`` comparisons, BETWEEN, AND, OR, NOT, arithmetic;
* anywhere an expression goes (WHERE, the SELECT list, inside an aggregate as in
  ``SUM(CASE ...)``, UPDATE SET, CREATE TABLE AS, INSERT VALUES), the scalar SQL of
  ``minidb.exec.scalar``: ``x [NOT] IN (1, 2.5, ...)``; ``[NOT] LIKE`` / ``ILIKE`` with ``%`` and
  ``_`` and an optional ``ESCAPE``, against a constant pattern; ``CASE WHEN ... THEN ... ELSE ...
  END`` and ``CASE x WHEN v THEN ... ELSE ... END``; ``CAST(x AS type)`` and ``x::type`` to
  TINYINT, SMALLINT, INTEGER, BIGINT, DOUBLE or VARCHAR, rounding and refusing values as DuckDB
  does; ABS, LOWER, UPPER, LENGTH (in characters) and SUBSTRING / SUBSTR with constant positions.
  Text is UTF-8; ``char(n)`` holds n bytes, and the string functions count characters. A CASE
  without ELSE gives NULL where no branch holds; TRY_CAST, casts to REAL, DECIMAL or dates, and
  a DECIMAL constant cast to text are refused by name;
* ``GROUP BY`` columns, expressions (``GROUP BY x % 10``), SELECT aliases and positions (a
  key written twice counts once); ``HAVING`` over group columns and aggregates (also ones that appear
  only there, and SELECT aliases); ``ORDER BY`` output names, positions or expressions, ASC /
  DESC, NULLS FIRST / LAST (NULLS LAST by default, as in DuckDB); ``LIMIT n``;
* ``SELECT DISTINCT``; ``COUNT / SUM / AVG(DISTINCT x)`` (one DISTINCT argument per query);
* ``UNION ALL`` and ``UNION`` of SELECTs, and uncorrelated subqueries (a scalar ``(SELECT ...)``
  and ``x IN (SELECT ...)``): both in ``minidb.sql.compound``;
* ``INSERT INTO t VALUES (...), ...`` and ``INSERT INTO t SELECT ...`` (by position);
  ``UPDATE t SET c = expr, ... [WHERE ...]``; ``DELETE FROM t [WHERE ...]``;
* ``CREATE TABLE t AS SELECT ...``: Gamma's "retrieve into" (Section 4), a new heap relation;
* on the parallel engine, Distributed INGRES's ``DISTRIBUTE t AT n WHERE ...`` (Section 2), which
  the engine reads before this module (``minidb.sql.distribute``). (The ``distribute`` of
  ``_SELECT_CLAUSES`` below is another thing: Hive's ``SELECT ... DISTRIBUTE BY``.)

Everything else raises ``UnsupportedSQLError`` naming the construct and pointing to
``docs/sql.md``, the user's page on this subset. Types are checked here, not
while running: comparing text with a number, or arithmetic on text, is a ``SchemaError`` before
any page is touched. A value that a CAST cannot convert (or an ABS that overflows) is found
while running, but a modification reads and converts all its input before it changes the table,
so a failing statement never leaves a table half changed.

Numbers: integers are 64-bit; ``+ - *`` and SUM over integers never wrap around (a result
beyond int64 raises ``NumericOverflowError``; SUM is exact in between, AVG never overflows); a
bound on a column is read in the column's type (``minidb.exec.expr.key_range``). A literal with a
point is DuckDB's exact DECIMAL: ``+ - * %`` over such literals and integers is computed in
floats and rounded to the DECIMAL's scale (``Arith.scale``), so ``k * 0.1 + 0.2 = 0.3`` holds.

NULL: the literal, ``IS [NOT] NULL``, ``INSERT`` of NULL or with a nullable column left out,
``UPDATE ... SET c = NULL``; NULL is comparable with anything (the comparison is NULL).

Arithmetic follows DuckDB: ``%`` truncates toward zero and ``x % 0`` raises
``DivisionByZeroError`` (over integers; a float column's ``f % 0`` is nan, as in DuckDB); ``/`` always gives a float, and ``x / 0`` is IEEE's inf or nan, as in
DuckDB 2. AND and OR decide left to right: a part is not evaluated on tuples an earlier part
already decided, so ``x <> 0 AND 7 % x = 1`` is safe.
"""

from __future__ import annotations

import contextvars
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import sqlglot
from sqlglot import exp

from minidb.catalog import Catalog, Table
from minidb.errors import (
    MinidbError,
    SchemaError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedSQLError,
)
from minidb.exec.expr import (
    And,
    Arith,
    Between,
    Col,
    Compare,
    Const,
    Expr,
    IsNull,
    Not,
    Null,
    Or,
)
from minidb.exec.scalar import (
    SUBSTRING_LIMIT,
    Abs,
    Case,
    Cast,
    InList,
    Length,
    Like,
    Lower,
    ScalarValue,
    Substring,
    Upper,
    like_regex,
    number_type,
)
from minidb.storage.schema import Column, Schema, float_column, int_column, set_null_mask

if TYPE_CHECKING:
    from minidb.sql.compound import SubqueryPlan, UnionQuery

SUBSET = "minidb supports SELECT-FROM-WHERE-GROUP BY-ORDER BY; see docs/sql.md"
AGGREGATES = {exp.Min: "MIN", exp.Max: "MAX", exp.Sum: "SUM", exp.Count: "COUNT", exp.Avg: "AVG"}


def unsupported(construct: str) -> UnsupportedSQLError:
    return UnsupportedSQLError(f"unsupported SQL: {construct} ({SUBSET})")


# -- the logical statements --------------------------------------------------------------------
@dataclass
class Ref:
    """One table of the FROM clause."""

    alias: str
    table: Table
    filters: list[Expr] = field(default_factory=list)  # conjuncts over the table's own columns


@dataclass
class JoinEdge:
    """An equi-join predicate ``left.left_col = right.right_col`` (internal column names)."""

    left: int
    right: int
    left_col: str
    right_col: str

    def predicate(self) -> Expr:
        return Compare("=", Col(self.left_col), Col(self.right_col))


@dataclass
class SelectQuery:
    refs: list[Ref]
    qualified: bool  # internal names are "alias.column" (several tables) or plain names
    schema: Schema  # every column of every table under its internal name
    edges: list[JoinEdge]
    residual: list[Expr]  # conjuncts over several tables that are not equi-joins
    aggregating: bool
    group_by: list[str]
    aggregates: list[tuple[str, str, Expr | None]]
    outputs: list[tuple[str, Expr]]  # visible outputs first, then hidden sort keys
    visible: int
    order: list[tuple[str, bool, bool]]  # (output, ascending, nulls_first)
    limit: int | None
    needed: set[str]  # internal column names read above the scans
    distinct: bool = False  # SELECT DISTINCT: duplicates of the visible outputs removed
    having: Expr | None = None  # HAVING, over the group columns and the aggregates' names
    distinct_argument: Expr | None = None  # the argument of COUNT / SUM / AVG(DISTINCT ...)
    distinct_aggregates: frozenset[str] = frozenset()  # names of those DISTINCT aggregates
    layout: Schema | None = None  # the visible output columns' layout (for UNION)
    having_text: str = ""  # the HAVING condition as written, for explain()
    outer: bool = False  # refs[1] is LEFT JOINed to refs[0] on edges[0]
    join_condition: list[Expr] = field(default_factory=list)  # the rest of a LEFT JOIN's ON
    group_keys: list[tuple[str, Expr]] = field(default_factory=list)  # GROUP BY expressions:
    # (name in group_by, expression over the input rows), computed before the aggregation
    propagated: list[str] = field(default_factory=list)  # conjuncts added by selection propagation

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.outputs[: self.visible]]

    def ref_of(self, internal: str) -> tuple[int, str]:
        if not self.qualified:
            return 0, internal
        alias, col = internal.split(".", 1)
        for i, r in enumerate(self.refs):
            if r.alias == alias:
                return i, col
        raise MinidbError(f"internal error: no table for column {internal!r}")


@dataclass
class SelectStatement:
    query: SelectQuery | UnionQuery | SubqueryPlan  # the last two: see minidb.sql.compound


@dataclass
class InsertStatement:
    table: Table
    records: np.ndarray | None  # INSERT ... VALUES, already in the table's layout
    query: SelectQuery | UnionQuery | SubqueryPlan | None  # INSERT ... SELECT
    columns: list[str]  # target column for each value position


@dataclass
class UpdateStatement:
    ref: Ref
    assignments: list[tuple[str, Expr]]


@dataclass
class DeleteStatement:
    ref: Ref


@dataclass
class CreateTableAsStatement:
    name: str
    query: SelectQuery | UnionQuery | SubqueryPlan


Statement = SelectStatement | InsertStatement | UpdateStatement | DeleteStatement | CreateTableAsStatement


# -- parsing ------------------------------------------------------------------------------------
def parse(text: str) -> exp.Expression:
    """One sqlglot syntax tree for ``text``, or a one-line error."""
    if not isinstance(text, str) or not text.strip():
        raise MinidbError("empty SQL statement; pass a SELECT, INSERT, UPDATE, DELETE or CREATE TABLE AS")
    _check_parentheses(text)
    try:
        trees = [t for t in sqlglot.parse(text, read="duckdb") if t is not None]
    except RecursionError:  # nesting without parentheses (NOT NOT ..., CASE in CASE ...)
        raise UnsupportedSQLError("expression nested too deeply for the SQL parser; write it "
                                  "with fewer levels of NOT, CASE or function calls") from None
    except sqlglot.errors.ParseError as e:
        raise MinidbError(_syntax_error(text, e.errors[0] if e.errors else {})) from None
    except sqlglot.errors.SqlglotError as e:
        first = str(e).splitlines()[0]
        if first.startswith("Error tokenizing"):
            first = "a quote or bracket is not closed"
        raise MinidbError(f"SQL syntax error: {first}") from None
    if not trees:  # only comments or semicolons
        raise MinidbError("empty SQL statement (only comments or ';'); pass a SELECT, INSERT, "
                          "UPDATE, DELETE or CREATE TABLE AS")
    if len(trees) != 1:
        raise unsupported("several statements in one call; send them one at a time")
    _check_depth(trees[0])
    return trees[0]


# -- how deep an expression may nest ------------------------------------------------------------
# sqlglot parses a parenthesis with about 25 nested Python calls, and minidb builds and evaluates
# expression trees recursively (a few calls per level), so a statement nested thousands of levels
# deep would end in Python's RecursionError. The limits below turn that into a one-line error
# long before Python's own limit (1000 calls) is reached. A chain of one connective
# (a OR b OR c ...) is built as one flat node, so it counts as one level however long it is.
MAX_PARENTHESES = 32
"""How many parentheses may be open at once in one statement."""

MAX_EXPRESSION_DEPTH = 200
"""How deep the syntax tree of one statement may be (an AND or OR chain counts once)."""


def _check_parentheses(text: str) -> None:
    """Refuse a statement with more than ``MAX_PARENTHESES`` parentheses open at once, before
    the (recursive) parser sees it."""
    try:
        tokens = sqlglot.tokenize(text, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return  # the parser reports the syntax error
    depth = deepest = 0
    for token in tokens:
        if token.token_type == sqlglot.TokenType.L_PAREN:
            depth += 1
            deepest = max(deepest, depth)
        elif token.token_type == sqlglot.TokenType.R_PAREN:
            depth -= 1
    if deepest > MAX_PARENTHESES:
        raise UnsupportedSQLError(
            f"expression nested too deeply ({deepest} levels of parentheses; the limit is "
            f"{MAX_PARENTHESES}); remove parentheses that are not needed or split the statement")


def _check_depth(tree: exp.Expression) -> None:
    """Refuse a syntax tree deeper than ``MAX_EXPRESSION_DEPTH`` (measured without recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EXPRESSION_DEPTH:
            raise UnsupportedSQLError(
                f"expression nested too deeply (more than {MAX_EXPRESSION_DEPTH} levels; a long "
                f"chain of + or - counts one level per term); split it into smaller expressions")
        for child in node.iter_expressions():
            same_chain = isinstance(node, exp.And | exp.Or) and type(_unparen(child)) is type(node)
            stack.append((child, depth if same_chain or isinstance(node, exp.Paren) else depth + 1))


def is_plain_table_name(name: str) -> bool:
    """Whether ``SELECT * FROM name`` reads ``name`` as a table (not a keyword such as SELECT)."""
    try:
        tree = sqlglot.parse_one(f"SELECT * FROM {name}", read="duckdb")
    except sqlglot.errors.SqlglotError:
        return False
    table = tree.args.get("from") or tree.args.get("from_")
    return isinstance(table, exp.From) and isinstance(table.this, exp.Table) \
        and table.this.name == name and not tree.args.get("joins")


_PROPAGATE: contextvars.ContextVar[bool] = contextvars.ContextVar("selection_propagation",
                                                                 default=True)
"""Whether ``translate`` propagates selections across join equalities (Gamma's optimizer does,
§6.1; the Teradata's did not: its joinAselB "will read two 100,000 tuple relations and then
sort and merge a 10,000 and a 100,000 tuple relation")."""


def translate(text: str, catalog: Catalog, propagate: bool = True) -> Statement:
    """Parse and translate one statement against the tables of ``catalog``; ``propagate=False``
    leaves selections where the query wrote them (no selection propagation)."""
    token = _PROPAGATE.set(propagate)
    try:
        return _translate(text, catalog)
    finally:
        _PROPAGATE.reset(token)


def _translate(text: str, catalog: Catalog) -> Statement:
    tree = parse(text)
    if isinstance(tree, exp.Select | exp.Union):
        from minidb.sql.compound import select_statement  # UNION and subqueries build on _Select

        return SelectStatement(select_statement(catalog, tree))
    if isinstance(tree, exp.Insert):
        return _insert(catalog, tree)
    if isinstance(tree, exp.Update):
        return _update(catalog, tree)
    if isinstance(tree, exp.Delete):
        return _delete(catalog, tree)
    if isinstance(tree, exp.Create):
        return _create(catalog, tree)
    if not isinstance(tree, exp.Query | exp.DDL | exp.DML | exp.Command | exp.Describe | exp.Pragma
                      | exp.Transaction | exp.Commit | exp.Rollback | exp.Use | exp.Set | exp.Drop
                      | exp.Alter | exp.Merge):
        raise MinidbError(f"SQL syntax error: {tree.sql()!r} is not a statement; "
                          "write SELECT, INSERT, UPDATE, DELETE or CREATE TABLE ... AS")
    raise unsupported(_statement_name(tree))


def _statement_name(tree: exp.Expression) -> str:
    names = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT",
             exp.Drop: "DROP; use Database.drop_table", exp.Alter: "ALTER",
             exp.Merge: "MERGE", exp.Describe: "DESCRIBE", exp.Pragma: "PRAGMA",
             exp.Transaction: "transactions, BEGIN / COMMIT", exp.Commit: "COMMIT",
             exp.Rollback: "ROLLBACK", exp.Use: "USE", exp.Set: "SET"}
    for cls, name in names.items():
        if isinstance(tree, cls):
            return name
    if isinstance(tree, exp.Command):
        return f"{str(tree.this).upper()} statements"
    return f"{tree.key.upper()} statements"


def _syntax_error(text: str, error: dict) -> str:
    """A parse error in the user's terms: where it is and what was expected, without the
    parser's internals (class names, 'Required keyword: this')."""
    near = str(error.get("highlight") or "").strip()
    description = str(error.get("description") or "")
    m = re.match(r"Required keyword: '\w+' missing for <class '[\w.]*\.(\w+)'>", description)
    if m:
        what = f"{m.group(1).upper()} is incomplete"
    elif description.startswith("Expecting "):
        what = f"expected {description[len('Expecting '):]}"
    elif "Unexpected token" in description or "Invalid expression" in description:
        what = "unexpected word or symbol"
    else:
        what = description.split("<class")[0].strip() or "cannot parse the statement"
    where = f" at {near!r}" if near else " at the end of the statement"
    line, col = error.get("line"), error.get("col")
    position = f" (line {line}, column {col})" if line and col else ""
    return f"SQL syntax error: {what}{where}{position}"


def _arg(node: exp.Expression, name: str):
    """An argument of a sqlglot node (newer sqlglot spells some keys with a trailing '_')."""
    value = node.args.get(name)
    return node.args.get(name + "_") if value is None else value


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _check_args(node: exp.Expression, allowed: set[str], names: dict[str, str], what: str) -> None:
    """Reject any clause of ``node`` that minidb does not implement, naming it."""
    for key, value in node.args.items():
        base = key.rstrip("_")
        if base in allowed or value in (None, False, [], ""):
            continue
        raise unsupported(names.get(base, f"{base.upper()} in {what}"))


_SELECT_CLAUSES = {
    "with": "WITH, common table expressions",
    "windows": "window functions", "qualify": "QUALIFY", "offset": "OFFSET",
    "laterals": "LATERAL", "pivots": "PIVOT", "into": "SELECT ... INTO; write CREATE TABLE t AS SELECT",
    "locks": "FOR UPDATE", "sample": "TABLESAMPLE", "prewhere": "PREWHERE", "kind": "SELECT AS",
    "settings": "SETTINGS", "connect": "CONNECT BY", "cluster": "CLUSTER BY",
    "distribute": "DISTRIBUTE BY", "sort": "SORT BY", "match": "MATCH_RECOGNIZE",
}


# -- names and types ----------------------------------------------------------------------------
def kind_of(e: Expr, schema: Schema) -> str:
    """"int", "float", "char" or "bool": what kind of value ``e`` gives over ``schema``."""
    if isinstance(e, Col):
        c = schema.column(e.name)
        return "char" if c.kind == "char" else "float" if c.kind == "float64" else "int"
    if isinstance(e, Const):
        v = e.value
        return "bool" if isinstance(v, bool) else "char" if isinstance(v, str) else \
            "float" if isinstance(v, float) else "int"
    if isinstance(e, Null):
        return "null"
    if isinstance(e, Arith):
        kinds = {kind_of(e.left, schema), kind_of(e.right, schema)}
        return "float" if e.op == "/" or "float" in kinds else "int"
    if isinstance(e, ScalarValue):  # CASE, CAST and the functions: the kind of their layout
        layout = e.output_column("_", schema).kind
        return "char" if layout == "char" else "float" if layout == "float64" else "int"
    return "bool"


def _is_numeric(kind: str) -> bool:
    return kind in ("int", "float", "null")


class _Scope:
    """The tables of a FROM clause and the internal names of their columns."""

    def __init__(self, refs: list[Ref]):
        seen: dict[str, str] = {}
        for r in refs:
            low = r.alias.lower()
            if low in seen:
                raise MinidbError(
                    f"table or alias {r.alias!r} appears twice in FROM; give each occurrence its own alias"
                )
            seen[low] = r.alias
        self.refs = refs
        self.qualified = len(refs) > 1
        cols = []
        for i, r in enumerate(refs):
            for c in r.table.schema.columns:
                cols.append(Column(self.internal(i, c.name), c.kind, c.width))
        self.schema = Schema(cols) if cols else None

    def internal(self, i: int, column: str) -> str:
        return f"{self.refs[i].alias}.{column}" if self.qualified else column

    def resolve(self, node: exp.Column) -> tuple[int, str]:
        """(table index, column name as stored) for a column reference."""
        name, qualifier = node.name, node.table
        if _arg(node, "db") or _arg(node, "catalog"):
            raise unsupported(f"qualified column name {node.sql()}")
        if qualifier:
            for i, r in enumerate(self.refs):
                if r.alias.lower() == qualifier.lower():
                    return i, r.table.schema.column(name, f"table {r.table.name!r}").name
            aliases = ", ".join(r.alias for r in self.refs) or "none"
            raise UnknownTableError(
                f"{node.sql()}: no table or alias {qualifier!r} in FROM; the FROM clause names: {aliases}"
            )
        found = [(i, r.table.schema.column(name).name) for i, r in enumerate(self.refs)
                 if r.table.schema.has_column(name)]
        if not found:
            where = "; ".join(f"{r.alias}: {', '.join(r.table.schema.names)}" for r in self.refs)
            raise UnknownColumnError(f"no column {name!r} in the FROM tables ({where})")
        if len(found) > 1:
            tables = ", ".join(self.refs[i].alias for i, _ in found)
            raise MinidbError(f"column {name!r} is ambiguous (it is in {tables}); qualify it, e.g. "
                              f"{self.refs[found[0][0]].alias}.{name}")
        return found[0]

    def refs_of(self, node: exp.Expression) -> set[int]:
        return {self.resolve(c)[0] for c in node.find_all(exp.Column)}


class _ExprBuilder:
    """Translate sqlglot expressions to ``Expr`` trees, checking types against ``schema``.

    ``column`` maps a column reference to an ``Expr``; ``aggregate`` maps an aggregate call (or
    is None where aggregates are not allowed, with ``where`` naming the clause).
    """

    def __init__(self, schema: Schema | None, column, aggregate=None, where: str = "WHERE"):
        self.schema = schema
        self.column = column
        self.aggregate = aggregate
        self.where = where
        self.known: dict[str, Expr] = {}  # SQL text -> its value (a GROUP BY expression's column)

    def kind(self, e: Expr) -> str:
        return kind_of(e, self.schema)

    def build(self, node: exp.Expression) -> Expr:
        node = _unparen(node)
        if self.known and not isinstance(node, exp.Column | exp.Literal):
            hit = self.known.get(node.sql(dialect="duckdb"))
            if hit is not None:
                return hit
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                raise unsupported(f"{node.sql()} outside the SELECT list")
            return self.column(node)
        if isinstance(node, exp.Literal):
            return Const(_literal(node))
        if isinstance(node, exp.Boolean):
            return Const(bool(node.this))
        if isinstance(node, exp.Null):
            return Null()
        if isinstance(node, exp.Is):
            return self._is_null(node, negated=False)
        if isinstance(node, exp.Not) and isinstance(_unparen(node.this), exp.Is):
            return self._is_null(_unparen(node.this), negated=True)
        if isinstance(node, exp.Neg):
            if isinstance(_unparen(node.this), exp.Literal) and not _unparen(node.this).is_string:
                return Const(_literal(_unparen(node.this), negate=True))  # -9223372036854775808
            inner = self.build(node.this)
            if isinstance(inner, Const) and not isinstance(inner.value, bool | str):
                return Const(-inner.value)
            self._numeric(inner, node, "-")
            return Arith("-", Const(0), inner, getattr(inner, "scale", None))
        if type(node) in AGGREGATES:
            if self.aggregate is None:
                raise MinidbError(f"aggregate {node.sql()} is not allowed in {self.where}")
            return self.aggregate(node)
        if isinstance(node, exp.And | exp.Or):
            parts = [self._condition(self.build(p), p) for p in self._chain(node)]
            cls = And if isinstance(node, exp.And) else Or
            flat: list[Expr] = []
            for p in parts:  # a part may itself be a chain (a GROUP BY key): flatten it
                flat.extend(p.parts if isinstance(p, cls) else [p])
            return cls(tuple(flat))
        if isinstance(node, exp.Not):
            return Not(self._condition(self.build(node.this), node.this))
        compare = _COMPARE.get(type(node))
        if compare is not None:
            left, right = self.build(node.this), self.build(node.expression)
            self._comparable(left, right, node)
            return Compare(compare, left, right)
        if isinstance(node, exp.Between):
            value, low, high = self.build(node.this), self.build(node.args["low"]), self.build(node.args["high"])
            self._comparable(value, low, node)
            self._comparable(value, high, node)
            return Between(value, low, high)
        arith = _ARITH.get(type(node))
        if arith is not None:
            left, right = self.build(node.this), self.build(node.expression)
            self._numeric(left, node, arith)
            self._numeric(right, node, arith)
            return self._arith(arith, left, right, node)
        scalar = self._scalar(node)
        if scalar is not None:
            return scalar
        raise unsupported(construct_name(node))

    def _chain(self, node: exp.And | exp.Or) -> list[exp.Expression]:
        """The operands of ``a OR b OR c ...``, left to right.

        sqlglot gives a chain of one connective as nested pairs, ((a OR b) OR c) OR d; walking
        them with a stack instead of recursion lets a WHERE hold hundreds of ORs.
        """
        operands: list[exp.Expression] = []
        stack = [node.expression, node.this]
        while stack:
            part = _unparen(stack.pop())
            if type(part) is type(node) and not self._is_known(part):
                stack += [part.expression, part.this]
            else:
                operands.append(part)
        return operands

    def _is_known(self, node: exp.Expression) -> bool:
        """Whether ``node`` is an expression computed before (a GROUP BY key)."""
        return bool(self.known) and node.sql(dialect="duckdb") in self.known

    # -- IN, LIKE, CASE, CAST and the scalar functions (nodes of minidb.exec.scalar) ------------
    def _scalar(self, node: exp.Expression) -> Expr | None:
        """The node for one of these constructs, or None when ``node`` is none of them."""
        if isinstance(node, exp.In):
            return self._in_list(node)
        if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like | exp.ILike):
            return self._like(node.this, node.expression)
        if isinstance(node, exp.Like | exp.ILike):
            return self._like(node, None)
        if isinstance(node, exp.Case):
            return self._case(node)
        if type(node) is exp.Cast:
            return self._cast(node)
        if isinstance(node, exp.Abs):
            value = self.build(node.this)
            self._numeric(value, node, "ABS")
            return Abs(value)
        text_function = _TEXT_FUNCTIONS.get(type(node))
        if text_function is not None:
            _check_args(node, {"this"}, {}, node.sql_name())
            return text_function(self._text(node.this, node))
        if isinstance(node, exp.Substring):
            _check_args(node, {"this", "start", "length"}, {}, "SUBSTRING")
            if node.args.get("start") is None:
                raise MinidbError(f"{node.sql()}: SUBSTRING needs a start position")
            length = node.args.get("length")
            return Substring(self._text(node.this, node), self._position(node.args["start"], node),
                             None if length is None else self._position(length, node))
        return None

    def _in_list(self, node: exp.In) -> Expr:
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise unsupported("IN (subquery); write the values, IN (1, 2, 3)")
        _check_args(node, {"this", "expressions"}, {"field": "IN with a field"}, "IN")
        value = self.build(node.this)
        items = tuple(self.build(item) for item in node.expressions)
        for item in items:
            self._comparable(value, item, node)
        return InList(value, items)

    def _like(self, node: exp.Like | exp.ILike, escape: exp.Expression | None) -> Expr:
        value = self._text(node.this, node)
        pattern = _unparen(node.expression)
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise unsupported(f"LIKE with a pattern that is not a text constant, {node.sql()}")
        escape_char = None
        if escape is not None:
            escape = _unparen(escape)
            text = str(escape.this) if isinstance(escape, exp.Literal) and escape.is_string else ""
            if len(text) != 1:
                raise MinidbError(f"LIKE ... ESCAPE takes one character in quotes, not "
                                  f"{escape.sql()}")
            escape_char = str(escape.this)
        like = Like(value, str(pattern.this), isinstance(node, exp.ILike), escape_char)
        like_regex(like.pattern, like.escape)  # a malformed pattern fails here, before any page
        return Not(like) if node.args.get("negate") else like

    def _arith(self, op: str, left: Expr, right: Expr, node: exp.Expression) -> Arith:
        """``left op right``; where DuckDB computes it as an exact DECIMAL (a literal such as 0.1
        is involved, and no float column or ``/``), with that DECIMAL's scale: the larger of
        the operands' for ``+ - %``, their sum for ``*``, 0 for an integer."""
        e = Arith(op, left, right)
        if number_type(e, self.schema) != "decimal":
            return e
        scales = [self._scale(value, part) for value, part in ((left, node.this), (right, node.expression))]
        if None in scales:
            return e
        scale = sum(scales) if op == "*" else max(scales)
        return Arith(op, left, right, scale) if scale <= 18 else e

    def _scale(self, value: Expr, node: exp.Expression) -> int | None:
        """The DECIMAL scale of an operand: its digits after the point for a literal, 0 for an
        integer, an inner DECIMAL operation's own, ABS's argument's, the largest of a CASE's
        results; None where it is not known."""
        node = _unparen(node)
        if isinstance(value, Abs) and isinstance(node, exp.Abs):
            return self._scale(value.value, node.this)
        if isinstance(value, Case) and isinstance(node, exp.Case):
            parts = [(r, b.args["true"]) for r, b in zip(value.results, node.args["ifs"], strict=True)]
            if value.otherwise is not None:
                parts.append((value.otherwise, node.args["default"]))
            scales = [self._scale(v, n) for v, n in parts if not isinstance(v, Null)]
            return None if None in scales or not scales else max(scales)
        if isinstance(value, Arith):
            return value.scale if value.scale is not None else \
                (0 if number_type(value, self.schema) == "integer" else None)
        if isinstance(value, Const) and isinstance(value.value, float):  # 0.25 or -0.25
            literal = next(node.find_all(exp.Literal), None)
            text = str(literal.this) if literal is not None else ""
            return len(text.split(".")[1]) if "." in text and "e" not in text.lower() else None
        return 0 if number_type(value, self.schema) == "integer" else None

    def _case(self, node: exp.Case) -> Expr:
        subject = None if node.this is None else self.build(node.this)
        conditions: list[Expr] = []
        results: list[Expr] = []
        for branch in node.args["ifs"]:
            if subject is None:
                conditions.append(self.condition(branch.this))
            else:  # the simple form, CASE x WHEN 1 THEN ...: each WHEN is compared with x
                value = self.build(branch.this)
                self._comparable(subject, value, node)
                conditions.append(Compare("=", subject, value))
            results.append(self.build(branch.args["true"]))
        default = node.args.get("default")
        otherwise = None if default is None else self.build(default)  # no ELSE: NULL
        kinds = {self.kind(r) for r in (*results, otherwise) if r is not None} - {"null"}
        if "bool" in kinds:
            raise unsupported(f"a condition as a CASE result, {node.sql()}")
        if "char" in kinds and len(kinds) > 1:
            raise SchemaError(f"the THEN and ELSE values of {node.sql()} mix text and numbers")
        return Case(tuple(conditions), tuple(results), otherwise)

    def _cast(self, node: exp.Cast) -> Expr:
        _check_args(node, {"this", "to"}, {"format": "CAST ... FORMAT"}, "CAST")
        to = _CAST_TARGETS.get(node.to.this)
        if to is None:
            refused = {exp.DataType.Type.FLOAT: "REAL / FLOAT (4-byte floats); cast to DOUBLE",
                       exp.DataType.Type.DECIMAL: "DECIMAL; cast to DOUBLE"}
            raise unsupported(f"CAST to {refused.get(node.to.this, node.to.sql(dialect='duckdb'))}")
        value = self.build(node.this)
        kind = self.kind(value)
        if kind == "bool":
            raise unsupported(f"CAST of a condition, {node.sql()}")
        number = number_type(value, self.schema) if _is_numeric(kind) else None
        if kind == "float" and to != "DOUBLE" and _decimal_aggregate(node.this):
            raise unsupported(f"CAST of MIN, MAX or SUM over a DECIMAL expression, {node.sql()} "
                              "(DuckDB keeps it exact); cast the argument to DOUBLE first")
        exponents = [n for n in node.this.find_all(exp.Literal)
                     if not n.is_string and "e" in str(n.this).lower()]
        if number == "decimal" and exponents:
            raise unsupported(f"CAST of an expression with a number in exponent notation, "
                              f"{node.sql()} (DuckDB reads 1e3 as a DOUBLE); write the number with "
                              "a point, 1000.0")
        if to == "VARCHAR" and number == "decimal":
            raise unsupported(f"CAST of a DECIMAL value to text, {node.sql()} (DuckDB keeps its "
                              "scale, 1.50 gives '1.50'); write the text, or cast to DOUBLE first")
        return Cast(value, to, halves_away=number == "decimal")

    def _text(self, node: exp.Expression, where: exp.Expression) -> Expr:
        value = self.build(node)
        if self.kind(value) != "char":
            raise SchemaError(f"{where.sql()} needs text, and {node.sql()} is not text; "
                              "write CAST(... AS VARCHAR) to use a number as text")
        return value

    def _position(self, node: exp.Expression, where: exp.Expression) -> int:
        value = self.build(node)
        if not (isinstance(value, Const) and type(value.value) is int):
            raise unsupported(f"SUBSTRING with a start or length that is not a whole-number "
                              f"constant, {where.sql()}")
        if value.value > SUBSTRING_LIMIT:
            raise SchemaError(f"{where.sql()}: a start or length above {SUBSTRING_LIMIT} is out "
                              "of range")
        return value.value

    def _is_null(self, node: exp.Is, negated: bool) -> Expr:
        if not isinstance(node.expression, exp.Null):
            raise unsupported(f"IS {node.expression.sql()}; only IS [NOT] NULL")
        return IsNull(self.build(node.this), negated)

    # -- checks ---------------------------------------------------------------------------------
    def _comparable(self, left: Expr, right: Expr, node: exp.Expression) -> None:
        a, b = self.kind(left), self.kind(right)
        if "null" in (a, b):
            return  # NULL compares with anything (and the answer is NULL)
        if "bool" in (a, b):
            raise SchemaError(f"cannot compare a condition in {node.sql()}")
        if _is_numeric(a) != _is_numeric(b):
            raise SchemaError(f"cannot compare text with a number in {node.sql()}; "
                              "quote the number or compare with a text column")

    def _numeric(self, e: Expr, node: exp.Expression, op: str) -> None:
        k = self.kind(e)
        if not _is_numeric(k):
            what = "text" if k == "char" else "a condition"
            raise SchemaError(f"cannot apply {op!r} to {what} in {node.sql()}")

    def _condition(self, e: Expr, node: exp.Expression) -> Expr:
        if self.kind(e) != "bool":
            raise SchemaError(f"{node.sql()} is not a condition (a comparison, BETWEEN, AND, OR, NOT)")
        return e

    def condition(self, node: exp.Expression) -> Expr:
        return self._condition(self.build(node), node)


_COMPARE = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_TEXT_FUNCTIONS = {exp.Lower: Lower, exp.Upper: Upper, exp.Length: Length}
_CAST_TARGETS = {
    exp.DataType.Type.TINYINT: "TINYINT", exp.DataType.Type.SMALLINT: "SMALLINT",
    exp.DataType.Type.INT: "INTEGER", exp.DataType.Type.BIGINT: "BIGINT",
    exp.DataType.Type.DOUBLE: "DOUBLE", exp.DataType.Type.TEXT: "VARCHAR",
    exp.DataType.Type.VARCHAR: "VARCHAR", exp.DataType.Type.CHAR: "VARCHAR",
}


def _decimal_aggregate(node: exp.Expression) -> bool:
    """Whether ``node`` holds MIN, MAX or SUM of an expression with a literal such as 2.5.

    DuckDB computes those as exact DECIMALs (which a CAST rounds half away from zero, and
    prints with their scale); minidb's aggregate gives a float and cannot tell them apart.
    """
    for agg in node.find_all(exp.Min, exp.Max, exp.Sum):
        for literal in agg.find_all(exp.Literal):
            if not literal.is_string and not str(literal.this).lstrip("-").isdigit():
                return True
    return False


def _may_raise(term: exp.Expression) -> bool:
    """Whether evaluating ``term`` may raise on some value of its column: ABS and integer
    ``+ - *`` may overflow, ``%`` may divide by zero, a CAST may be out of range. Selection
    propagation does not copy such a term to another table (found by the fuzzer:
    ``a.k = b.i AND ABS(a.k) > 1`` raised on b's int32 minimum, which joins nothing)."""
    return term.find(exp.Abs, exp.Cast, exp.Mod, exp.Add, exp.Sub, exp.Mul) is not None


def construct_name(node: exp.Expression) -> str:
    """A readable name for an unsupported piece of SQL."""
    table = [
        ((exp.Subquery, exp.Select, exp.Exists), "subqueries"),
        ((exp.If,), "IF(); write CASE WHEN ... THEN ... ELSE ... END"),
        ((exp.Window,), "window functions"),
        ((exp.TryCast,), "TRY_CAST (it yields NULL); use CAST"),
        ((exp.Distinct,), "DISTINCT"),
        ((exp.IntDiv,), "integer division, //"),
        ((exp.Union, exp.Intersect, exp.Except), "UNION / INTERSECT / EXCEPT"),
        ((exp.Placeholder, exp.Parameter), "parameters"),
        ((exp.Tuple,), "row values, (a, b)"),
        ((exp.Star,), "* outside the SELECT list or COUNT(*)"),
        ((exp.DPipe,), "string concatenation, ||"),
    ]
    for classes, name in table:
        if isinstance(node, classes):
            return name
    if isinstance(node, exp.Func):
        name = node.sql_name() if not isinstance(node, exp.Anonymous) else str(node.this)
        return (f"function {name.upper()}; the functions are MIN, MAX, SUM, COUNT, AVG, ABS, "
                "LOWER, UPPER, LENGTH and SUBSTRING")
    return f"{type(node).__name__}: {node.sql()}"


def _literal(node: exp.Literal, negate: bool = False) -> int | float | str:
    """The Python value of a literal; ``negate`` for one written after a minus sign, so that
    int64's smallest value -9223372036854775808 is a literal although its magnitude is not."""
    if node.is_string:
        return str(node.this)
    text = ("-" if negate else "") + str(node.this)
    try:
        value = int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise unsupported(f"literal {node.sql()}") from None
    if not -(2**63) <= value < 2**63:
        raise SchemaError(f"the number {text} does not fit in 64 bits")
    return value


# -- SELECT -------------------------------------------------------------------------------------
def _table_ref(catalog: Catalog, node: exp.Expression) -> Ref:
    node = _unparen(node)
    if isinstance(node, exp.Subquery | exp.Select):
        raise unsupported("subqueries")
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise unsupported(f"{type(node).__name__} in FROM: {node.sql()}")
    _check_args(node, {"this", "alias"},
                {"db": "schema-qualified table names", "catalog": "catalog-qualified table names",
                 "sample": "TABLESAMPLE", "joins": "nested joins", "pivots": "PIVOT",
                 "laterals": "LATERAL", "hints": "table hints"}, "FROM")
    table = catalog.get(node.name)
    alias = node.alias or table.name
    alias_node = node.args.get("alias")
    if alias_node is not None and alias_node.args.get("columns"):
        raise unsupported("column aliases on a table, t(a, b)")
    return Ref(alias, table)


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The terms of ``a AND b AND c ...``, left to right (walked with a stack, not recursion, so
    a WHERE may hold thousands of ANDs)."""
    terms: list[exp.Expression] = []
    stack = [] if node is None else [node]
    while stack:
        part = _unparen(stack.pop())
        if isinstance(part, exp.And):
            stack += [part.expression, part.this]
        else:
            terms.append(part)
    return terms


def _with_aliases(node: exp.Expression, select_items: list[exp.Expression],
                  scope: _Scope) -> exp.Expression:
    """``node`` with each bare name of a SELECT alias (that is no column of the FROM tables)
    replaced by the aliased expression, so HAVING may say ``HAVING n > 1`` for ``COUNT(*) AS n``."""
    aliases = {i.alias.lower(): i.this for i in select_items if isinstance(i, exp.Alias)}
    if not aliases:
        return node
    columns = {c.lower() for r in scope.refs for c in r.table.schema.names}

    def swap(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and not n.table and n.name.lower() in aliases \
                and n.name.lower() not in columns:
            return aliases[n.name.lower()].copy()
        return n

    return node.copy().transform(swap)


def _unique_name(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate.lower() in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate.lower())
    return candidate


class _Select:
    """Translation of one SELECT (also the source of INSERT ... SELECT and CREATE ... AS).

    Besides SELECT-FROM-WHERE-GROUP BY-ORDER BY-LIMIT it records three relational additions the
    planners carry out: ``SELECT DISTINCT`` (duplicate elimination over the visible outputs, an
    aggregation grouping on all of them), ``HAVING`` (a condition over the finished groups) and
    ``COUNT / SUM / AVG(DISTINCT x)`` (one DISTINCT argument per query, aggregated in two
    stages: first grouped on the group columns and x, then on the group columns).
    """

    def __init__(self, catalog: Catalog, tree: exp.Select):
        self.catalog = catalog
        self.tree = tree

    def build(self) -> SelectQuery:
        tree = self.tree
        _check_args(tree, {"expressions", "from", "joins", "where", "group", "order", "limit",
                           "distinct", "having"}, _SELECT_CLAUSES, "SELECT")
        distinct = tree.args.get("distinct")
        if distinct is not None and (distinct.args.get("on") or distinct.expressions):
            raise unsupported("DISTINCT ON (...); write SELECT DISTINCT or GROUP BY")
        from_ = _arg(tree, "from")
        if from_ is None:
            raise unsupported("SELECT without FROM")
        refs = [_table_ref(self.catalog, from_.this)]
        on_terms: list[exp.Expression] = []
        outer_on: list[exp.Expression] | None = None  # the ON terms of a LEFT JOIN
        joins = tree.args.get("joins") or []
        for join in joins:
            terms = self._join(join)
            if (join.args.get("side") or "").upper() == "LEFT":
                if len(joins) != 1:
                    raise unsupported("LEFT JOIN with more than two tables")
                outer_on = terms
            else:
                on_terms += terms
            refs.append(_table_ref(self.catalog, join.this))
        scope = self.scope = _Scope(refs)
        row = _ExprBuilder(scope.schema, self._row_column)

        # WHERE and ON: push single-table conjuncts down, keep equi-joins as edges
        edges: list[JoinEdge] = []
        residual: list[Expr] = []
        single: list[tuple[int, exp.Expression]] = []  # (table, its own conjunct)
        where = tree.args.get("where")
        for term in _conjuncts(where.this if where is not None else None) + on_terms:
            if any(type(n) in AGGREGATES for n in term.walk()):
                raise MinidbError(f"aggregate in WHERE ({term.sql()}); put conditions on "
                                  "aggregates in HAVING")
            used = scope.refs_of(term)
            if outer_on is not None and used - {0}:
                # a WHERE term on the LEFT JOIN's right table sees its NULL padding: after the join
                residual.append(row.condition(term))
                continue
            if len(used) <= 1:
                i = used.pop() if used else 0
                base = _ExprBuilder(refs[i].table.schema,
                                    lambda c: Col(scope.resolve(c)[1]))
                refs[i].filters.append(base.condition(term))
                single.append((i, term))
                continue
            edge = self._edge(_unparen(term), row)
            if edge is not None:
                edges.append(edge)
            else:
                residual.append(row.condition(term))

        join_condition: list[Expr] = []
        propagated: list[str] = []
        if outer_on is not None:
            edges, join_condition = self._left_join_on(outer_on, row)
        elif edges and _PROPAGATE.get():
            propagated = self._propagate_selections(single, edges, refs)

        # GROUP BY and aggregates
        select_items = list(tree.expressions)
        order_items = list(tree.args["order"].expressions) if tree.args.get("order") else []
        group = tree.args.get("group")
        if group is not None:
            _check_args(group, {"expressions"}, {"rollup": "ROLLUP", "cube": "CUBE",
                                                 "grouping_sets": "GROUPING SETS", "all": "GROUP BY ALL"},
                        "GROUP BY")
        having_node = tree.args["having"].this if tree.args.get("having") is not None else None
        clauses = select_items + order_items + ([having_node] if having_node is not None else [])
        has_agg = any(type(n) in AGGREGATES for item in clauses for n in item.walk())
        self.aggregating = group is not None or has_agg or having_node is not None
        self.distinct_argument: Expr | None = None
        self.distinct_names: set[str] = set()
        self.group_by: list[str] = []
        self.group_keys: list[tuple[str, Expr]] = []
        self._group_texts: dict[str, Expr] = {}
        self.aggregates: list[tuple[str, str, Expr | None]] = []
        self._agg_names: dict[str, str] = {}
        self._row = row
        if group is not None:
            for g in group.expressions:
                name = self._group_column(g, select_items)
                if name not in self.group_by:  # a key written twice groups once, as in DuckDB
                    self.group_by.append(name)
        if self.aggregating:
            keys = dict(self.group_keys)
            cols = [keys[g].output_column(g, scope.schema) if g in keys else scope.schema.column(g)
                    for g in self.group_by]
            self.agg_columns = list(cols)
            self.out = _ExprBuilder(None, self._grouped_column, self._aggregate, "this place")
            self.out.known = self._group_texts
            self.out.schema = self._agg_schema()
            self.row_for_agg = row
        else:
            self.out = _ExprBuilder(scope.schema, self._row_column, None, "this place")

        # SELECT list
        outputs: list[tuple[str, Expr]] = []
        taken: set[str] = set()
        for item in select_items:
            outputs += self._select_item(item, taken)
        if self.aggregating:
            self.out.schema = self._agg_schema()
        visible = len(outputs)

        # HAVING: a condition over the finished groups (aggregates may appear only here)
        having = None
        if having_node is not None:
            having = self.out.condition(_with_aliases(having_node, select_items, self.scope))
            self.out.schema = self._agg_schema()

        # ORDER BY
        order: list[tuple[str, bool, bool]] = []
        for i, o in enumerate(order_items):
            _check_args(o, {"this", "desc", "nulls_first"}, {"with_fill": "WITH FILL"}, "ORDER BY")
            name = self._order_key(o.this, outputs[:visible], select_items)
            if name is None:
                e = self.out.build(o.this)
                if self.aggregating:
                    self.out.schema = self._agg_schema()
                if self.out.kind(e) == "bool":
                    raise unsupported("ORDER BY a condition")
                name = _unique_name(f"_order{i}", taken)
                outputs.append((name, e))
            # NULLS FIRST must reach the sort: DuckDB's default is NULLS LAST either way
            order.append((name, not bool(o.args.get("desc")), bool(o.args.get("nulls_first"))))
        if distinct is not None and len(outputs) > visible:
            raise MinidbError("for SELECT DISTINCT, ORDER BY expressions must appear in the "
                              "SELECT list; order by an output column")

        # LIMIT
        limit = None
        if tree.args.get("limit") is not None:
            lim = tree.args["limit"]
            value = _unparen(lim.expression if lim.expression is not None else lim.this)
            if not (isinstance(value, exp.Literal) and not value.is_string and str(value.this).isdigit()):
                raise unsupported(f"LIMIT {value.sql()}; LIMIT takes a whole number")
            limit = int(value.this)

        needed: set[str] = set()
        for term in residual + join_condition:
            needed |= term.columns()
        for e in edges:
            needed |= {e.left_col, e.right_col}
        if self.aggregating:
            needed |= set(self.group_by) - {name for name, _ in self.group_keys}
            for _, e in self.group_keys:
                needed |= e.columns()
            for _, _, arg in self.aggregates:
                if arg is not None:
                    needed |= arg.columns()
        else:
            for _, e in outputs:
                needed |= e.columns()
        layout = Schema([e.output_column(n, self.out.schema) for n, e in outputs[:visible]])
        return SelectQuery(refs, scope.qualified, scope.schema, edges, residual, self.aggregating,
                           self.group_by, self.aggregates, outputs, visible, order, limit, needed,
                           distinct=distinct is not None, having=having,
                           distinct_argument=self.distinct_argument,
                           distinct_aggregates=frozenset(self.distinct_names), layout=layout,
                           having_text=having_node.sql(dialect="duckdb") if having_node else "",
                           outer=outer_on is not None, join_condition=join_condition,
                           group_keys=self.group_keys, propagated=propagated)

    def _propagate_selections(self, single: list[tuple[int, exp.Expression]],
                              edges: list[JoinEdge], refs: list[Ref]) -> list[str]:
        """Selection propagation (Gamma paper §6.1: "Selection propagation by the Gamma optimizer
        reduces joinAselB to joinselAselB"): a conjunct on one column of one table that an
        inner equi-join equates with a column of another table holds for that column too, so it
        is added to the other table's filters and fewer of its tuples are read into the join.
        ``B.x < 10 AND A.x = B.x`` gives ``A.x < 10``. Only conjuncts over that one column,
        with no subquery and nothing random, are copied; a copy that does not type-check is
        left out, and so is one that may raise on a value (``_may_raise``): the other table's
        column holds values that never join, and an error on one of them (``ABS`` of int32's
        minimum, a CAST out of range, an overflowing product) would fail a query whose answer
        SQL defines. Chains (``A.x = B.x = C.x``) propagate table by table. Returns the added
        conjuncts as text, for ``explain()``."""
        scope = self.scope
        seen = {(i, term.sql(dialect="duckdb")) for i, term in single}
        added: list[str] = []
        pending = list(single)
        while pending:
            i, term = pending.pop(0)
            if term.find(exp.Subquery, exp.Select, exp.Rand, exp.Anonymous) is not None \
                    or _may_raise(term):
                continue
            columns = list(term.find_all(exp.Column))
            if not columns or len({scope.resolve(c) for c in columns}) != 1:
                continue
            _, column = scope.resolve(columns[0])
            here = scope.internal(i, column)
            for e in edges:
                if (e.left, e.left_col) == (i, here):
                    there, there_col = e.right, e.right_col
                elif (e.right, e.right_col) == (i, here):
                    there, there_col = e.left, e.left_col
                else:
                    continue
                copy = term.copy()
                name = there_col.split(".", 1)[1] if scope.qualified else there_col
                for c in list(copy.find_all(exp.Column)):
                    c.replace(exp.column(name, table=refs[there].alias))
                text = copy.sql(dialect="duckdb")
                if (there, text) in seen:
                    continue
                base = _ExprBuilder(refs[there].table.schema, lambda c: Col(scope.resolve(c)[1]))
                try:
                    refs[there].filters.append(base.condition(copy))
                except MinidbError:
                    continue  # e.g. a function that does not apply to the other column's type
                seen.add((there, text))
                added.append(text)
                pending.append((there, copy))
        return added

    # -- FROM ... JOIN ----------------------------------------------------------------------------
    def _join(self, join: exp.Join) -> list[exp.Expression]:
        side = (join.args.get("side") or "").upper()
        kind = (join.args.get("kind") or "").upper()
        method = (join.args.get("method") or "").upper()
        if side and side != "LEFT":
            raise unsupported(f"{side} OUTER JOIN; only inner equi-joins and LEFT JOIN")
        if kind in ("FULL", "SEMI", "ANTI", "ASOF", "POSITIONAL") or (kind == "OUTER" and not side):
            raise unsupported(f"{kind} JOIN; only inner equi-joins and LEFT JOIN")
        if side and join.args.get("on") is None:
            raise unsupported("LEFT JOIN without ON; write LEFT JOIN t ON a.x = t.y")
        if method:
            raise unsupported(f"{method} JOIN")
        if join.args.get("using"):
            raise unsupported("JOIN ... USING; write ON a.x = b.x")
        _check_args(join, {"this", "on", "side", "kind", "method"}, {}, "JOIN")
        on = join.args.get("on")
        return _conjuncts(on) if on is not None else []

    def _left_join_on(self, terms: list[exp.Expression], row: _ExprBuilder) -> tuple[list[JoinEdge], list[Expr]]:
        """A LEFT JOIN's ON clause: its first equality of the two tables is the join key, terms on
        the right table alone filter that table before the join, and every other term is a
        condition a pair must meet to match (a left row that meets none is padded with NULLs)."""
        edge: JoinEdge | None = None
        condition: list[Expr] = []
        for term in terms:
            used = self.scope.refs_of(term)
            if used == {1}:
                base = _ExprBuilder(self.scope.refs[1].table.schema,
                                    lambda c: Col(self.scope.resolve(c)[1]))
                self.scope.refs[1].filters.append(base.condition(term))
                continue
            found = self._edge(_unparen(term), row) if edge is None and used == {0, 1} else None
            if found is not None:
                edge = found if found.left == 0 else JoinEdge(0, 1, found.right_col, found.left_col)
            else:
                condition.append(row.condition(term))
        if edge is None:
            raise unsupported("LEFT JOIN whose ON has no equality of the two tables' columns")
        return [edge], condition

    def _edge(self, term: exp.Expression, row: _ExprBuilder) -> JoinEdge | None:
        if not isinstance(term, exp.EQ):
            return None
        left, right = _unparen(term.this), _unparen(term.expression)
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            return None
        (li, lc), (ri, rc) = self.scope.resolve(left), self.scope.resolve(right)
        if li == ri:
            return None
        row.condition(term)  # type check
        return JoinEdge(li, ri, self.scope.internal(li, lc), self.scope.internal(ri, rc))

    # -- columns in the different clauses ----------------------------------------------------------
    def _row_column(self, node: exp.Column) -> Expr:
        i, col = self.scope.resolve(node)
        return Col(self.scope.internal(i, col))

    def _grouped_column(self, node: exp.Column) -> Expr:
        i, col = self.scope.resolve(node)
        name = self.scope.internal(i, col)
        if name not in self.group_by:
            raise MinidbError(
                f"column {node.sql()} must appear in GROUP BY or inside an aggregate "
                "(MIN, MAX, SUM, COUNT, AVG)"
            )
        return Col(name)

    def _aggregate(self, node: exp.Expression) -> Expr:
        func = AGGREGATES[type(node)]
        arg_node = node.this
        distinct = isinstance(arg_node, exp.Distinct)
        if distinct:
            if len(arg_node.expressions) != 1:
                raise unsupported(f"{func}(DISTINCT over several columns); give one argument")
            arg_node = arg_node.expressions[0]
            distinct = func in ("COUNT", "SUM", "AVG")  # MIN / MAX (DISTINCT x) = MIN / MAX (x)
        extra = {k: v for k, v in node.args.items() if k not in ("this", "big_int") and v not in (None, False, [])}
        if extra:
            raise unsupported(f"{func} with {', '.join(extra)}")
        if isinstance(arg_node, exp.Star):
            if func != "COUNT":
                raise unsupported(f"{func}(*)")
            arg = None
        else:
            if arg_node is None:
                raise MinidbError(f"{func}() needs an argument")
            if any(type(n) in AGGREGATES for n in arg_node.walk()):
                raise MinidbError(f"nested aggregate in {node.sql()}")
            arg = self.row_for_agg.build(arg_node)
            kind = self.row_for_agg.kind(arg)
            if kind == "bool":
                raise SchemaError(f"cannot aggregate a condition in {node.sql()}")
            if func in ("SUM", "AVG") and kind == "char":
                raise SchemaError(f"cannot apply {func} to text in {node.sql()}")
        key = f"{func}({'DISTINCT ' if distinct else ''}{arg})"
        if key not in self._agg_names:
            name = f"_agg{len(self.aggregates)}"
            if distinct:
                self._distinct(arg, name, node)
            self._agg_names[key] = name
            self.aggregates.append((name, func, arg))
            self.agg_columns.append(self._agg_column(name, func, arg))
            self.out.schema = Schema(self.agg_columns)
        return Col(self._agg_names[key])

    def _distinct(self, arg: Expr, name: str, node: exp.Expression) -> None:
        """Record a DISTINCT aggregate; all of them must share one argument."""
        if self.distinct_argument is not None and str(self.distinct_argument) != str(arg):
            raise unsupported(f"DISTINCT aggregates over different arguments ({node.sql()} and "
                              f"one over {self.distinct_argument}); use one DISTINCT argument")
        self.distinct_argument = arg
        self.distinct_names.add(name)

    def _agg_column(self, name: str, func: str, arg: Expr | None) -> Column:
        if func == "COUNT":
            return int_column(name, "int64")
        if func == "AVG":
            return float_column(name)
        base = arg.output_column(name, self.scope.schema)
        if func == "SUM":
            return float_column(name) if base.kind == "float64" else int_column(name, "int64")
        return base

    def _agg_schema(self) -> Schema:
        return Schema(self.agg_columns) if self.agg_columns else Schema([int_column("_dummy")])

    def _group_column(self, g: exp.Expression, select_items: list[exp.Expression]) -> str:
        g = _unparen(g)
        if isinstance(g, exp.Literal) and not g.is_string:
            pos = int(str(g.this))
            if not 1 <= pos <= len(select_items):
                raise MinidbError(f"GROUP BY {pos}: the SELECT list has {len(select_items)} items")
            g = _unparen(select_items[pos - 1])
            g = g.this if isinstance(g, exp.Alias) else g
        if isinstance(g, exp.Column) and isinstance(g.this, exp.Star):
            raise unsupported(f"GROUP BY {g.sql()}; group by columns or expressions")
        if isinstance(g, exp.Column) and not g.table and \
                not any(r.table.schema.has_column(g.name) for r in self.scope.refs):
            for item in select_items:  # GROUP BY a SELECT alias: group by what it names
                if isinstance(item, exp.Alias) and item.alias.lower() == g.name.lower():
                    g = _unparen(item.this)
                    break
        if not isinstance(g, exp.Column):
            return self._group_expression(g)
        i, col = self.scope.resolve(g)
        return self.scope.internal(i, col)

    def _group_expression(self, g: exp.Expression) -> str:
        """GROUP BY an expression (``x % 10``): a hidden column ``_group<k>`` computed from each
        input row before the aggregation; the same expression elsewhere in the SELECT list,
        HAVING or ORDER BY reads that column."""
        if any(type(n) in AGGREGATES for n in g.walk()):
            raise MinidbError(f"GROUP BY {g.sql()}: an aggregate cannot be a grouping key")
        text = g.sql(dialect="duckdb")
        if text in self._group_texts:
            return self._group_texts[text].name
        e = self._row.build(g)
        if self._row.kind(e) == "bool":
            raise unsupported(f"GROUP BY a condition, {g.sql()}")
        name = f"_group{len(self.group_keys)}"
        self.group_keys.append((name, e))
        self._group_texts[text] = Col(name)
        return name

    def _select_item(self, item: exp.Expression, taken: set[str]) -> list[tuple[str, Expr]]:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            if self.aggregating:
                raise MinidbError("SELECT * cannot be combined with GROUP BY or aggregates; list the columns")
            star = item if isinstance(item, exp.Star) else item.this
            for key, what in (("replace", "SELECT * REPLACE"), ("rename", "SELECT * RENAME")):
                if _arg(star, key):
                    raise unsupported(f"{what}; list the columns with aliases instead")
            if isinstance(item, exp.Star):
                which = range(len(self.scope.refs))
            else:
                which = [i for i, r in enumerate(self.scope.refs) if r.alias.lower() == item.table.lower()]
                if not which:
                    raise UnknownTableError(f"{item.sql()}: no table or alias {item.table!r} in FROM")
            excluded = self._excluded(_arg(star, "except") or [], which)
            out = []
            for i in which:
                for c in self.scope.refs[i].table.schema.columns:
                    internal = self.scope.internal(i, c.name)
                    if (i, c.name) in excluded:
                        continue
                    name = c.name if c.name.lower() not in taken else internal
                    out.append((_unique_name(name, taken), Col(internal)))
            if not out:
                raise MinidbError(f"{item.sql(dialect='duckdb')} leaves no column to select")
            return out
        if isinstance(item, exp.Alias):
            name, node = item.alias, item.this
        else:
            node = item
            name = item.name if isinstance(_unparen(item), exp.Column) else item.sql(dialect="duckdb")
        e = self.out.build(node)
        if self.aggregating:
            self.out.schema = self._agg_schema()
        if self.out.kind(e) == "bool":
            raise unsupported(f"a condition in the SELECT list, {node.sql()}")
        return [(_unique_name(name, taken), e)]

    def _excluded(self, columns: list[exp.Expression], which) -> set[tuple[int, str]]:
        """The (table index, column) pairs named by ``* EXCLUDE (...)``, each one checked."""
        out: set[tuple[int, str]] = set()
        for node in columns:
            if not isinstance(node, exp.Column):
                raise unsupported(f"EXCLUDE ({node.sql()}); name columns")
            if node.table:
                i, col = self.scope.resolve(node)
                hits = [(i, col)] if i in which else []
            else:
                hits = [(i, self.scope.refs[i].table.schema.column(node.name).name) for i in which
                        if self.scope.refs[i].table.schema.has_column(node.name)]
            if not hits:
                raise UnknownColumnError(f"EXCLUDE names {node.sql()}, which the star does not select")
            out.update(hits)
        return out

    def _order_key(self, node: exp.Expression, outputs: list[tuple[str, Expr]],
                   select_items: list[exp.Expression]) -> str | None:
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
            raise MinidbError(f"ORDER BY {node.sql()}: a position in the SELECT list must be "
                              f"between 1 and {len(outputs)}")
        if isinstance(node, exp.Literal) and not node.is_string:
            if not str(node.this).isdigit():
                raise MinidbError(f"ORDER BY {node.sql()}: a position must be a whole number "
                                  f"between 1 and {len(outputs)}")
            pos = int(str(node.this))
            if not 1 <= pos <= len(outputs):
                raise MinidbError(f"ORDER BY {node.sql()}: a position in the SELECT list must "
                                  f"be between 1 and {len(outputs)}")
            return outputs[pos - 1][0]
        node = _unparen(node)
        if isinstance(node, exp.Column) and not node.table:
            for name, _ in outputs:
                if name.lower() == node.name.lower():
                    return name
        text = node.sql(dialect="duckdb")
        for item, (name, _) in zip(select_items, outputs, strict=False):
            # unparenthesized like ``node``: SELECT DISTINCT (g - 3) ... ORDER BY (g - 3) was
            # refused as ordering by an expression not in the SELECT list (found by the fuzzer)
            inner = _unparen(item.this if isinstance(item, exp.Alias) else item)
            if not isinstance(inner, exp.Star) and inner.sql(dialect="duckdb") == text:
                return name
        return None


# -- INSERT / UPDATE / DELETE / CREATE TABLE AS -------------------------------------------------
def _insert(catalog: Catalog, tree: exp.Insert) -> InsertStatement:
    _check_args(tree, {"this", "expression", "is_function", "stored", "by_name", "exists",
                       "partition", "settings", "default", "overwrite", "ignore", "source"},
                {"returning": "RETURNING", "conflict": "ON CONFLICT", "where": "INSERT ... WHERE",
                 "alternative": "INSERT OR ...", "with": "WITH, common table expressions"}, "INSERT")
    for flag, name in (("overwrite", "INSERT OVERWRITE"), ("ignore", "INSERT IGNORE"),
                       ("by_name", "INSERT BY NAME"), ("default", "DEFAULT VALUES")):
        if tree.args.get(flag):
            raise unsupported(name)
    target = tree.this
    columns_node = None
    if isinstance(target, exp.Schema):
        columns_node, target = target.expressions, target.this
    ref = _table_ref(catalog, target)
    table = ref.table
    if columns_node is None:
        columns = table.schema.names
    else:
        columns = [table.schema.column(c.name, f"table {table.name!r}").name for c in columns_node]
        if len({c.lower() for c in columns}) != len(columns):
            raise SchemaError(f"INSERT INTO {table.name} names a column twice")
        given = {c.lower() for c in columns}
        missing = [c.name for c in table.schema.columns if c.name.lower() not in given and not c.nullable]
        if missing:
            raise SchemaError(
                f"INSERT INTO {table.name} must give a value for the NOT NULL column(s) "
                f"{', '.join(missing)}; only nullable columns may be left out (they become NULL)"
            )
    source = tree.expression
    if isinstance(source, exp.Values):
        return InsertStatement(table, _values(table, columns, source), None, columns)
    if isinstance(source, exp.Select | exp.Union):
        from minidb.sql.compound import select_statement

        query = select_statement(catalog, source)
        if len(query.names) != len(columns):
            raise SchemaError(
                f"INSERT INTO {table.name}: the SELECT gives {len(query.names)} columns, "
                f"the table needs {len(columns)}"
            )
        return InsertStatement(table, None, query, columns)
    raise unsupported(construct_name(source))


def _values(table: Table, columns: list[str], node: exp.Values) -> np.ndarray:
    def no_columns(c: exp.Column) -> Expr:
        raise MinidbError(f"VALUES may only hold constants, not the column {c.sql()}")

    consts = _ExprBuilder(Schema([int_column("_dummy")]), no_columns, None, "VALUES")
    rows = []
    for tup in node.expressions:
        items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
        if len(items) != len(columns):
            raise SchemaError(
                f"INSERT INTO {table.name}: a row of VALUES has {len(items)} values, "
                f"the table needs {len(columns)}"
            )
        rows.append([consts.build(i) for i in items])
    dummy = np.zeros(1, dtype=[("_dummy", "<i4")])
    records = table.schema.new_records(len(rows))
    for col in table.schema.columns:  # a nullable column left out of the list is NULL
        if col.name not in columns:
            set_null_mask(records, col.name, np.ones(len(rows), dtype=bool))
    for j, col in enumerate(columns):
        exprs = [r[j] for r in rows]
        nulls = np.array([isinstance(e, Null) for e in exprs], dtype=bool)
        if nulls.any():
            if not table.schema.column(col).nullable:
                raise SchemaError(f"INSERT INTO {table.name}: column {col!r} is NOT NULL; give it a value")
            set_null_mask(records, col, nulls)
            exprs = [e for e in exprs if not isinstance(e, Null)]
            if not exprs:
                continue
        kinds = {consts.kind(e) for e in exprs}
        if "bool" in kinds:
            raise SchemaError(f"INSERT INTO {table.name}: a value of {col!r} is a condition")
        if "char" in kinds and len(kinds) > 1:
            raise SchemaError(f"INSERT INTO {table.name}: column {col!r} mixes text and numbers")
        values = [e.evaluate(dummy)[0] if not isinstance(e, Const) else e.value for e in exprs]
        if "char" in kinds:
            array = np.array([v.encode() if isinstance(v, str) else bytes(v) for v in values], dtype=object)
        else:
            array = np.array(values)
        converted = coerce(array, table.schema.column(col), f"INSERT INTO {table.name}")
        records[col][~nulls] = converted
    return records


def coerce(values: np.ndarray, column: Column, what: str) -> np.ndarray:
    """``values`` converted to ``column``'s layout, or a ``SchemaError`` saying why not."""
    values = np.asarray(values)
    kind = values.dtype.kind
    if column.kind == "char":
        if kind == "O":
            values = np.array([v.encode() if isinstance(v, str) else v for v in values], dtype=object)
            if not all(isinstance(v, bytes) for v in values):
                raise SchemaError(f"{what}: column {column.name!r} stores text, got a number")
            longest = max((len(v) for v in values), default=0)
        elif kind in "SU":
            if kind == "U":
                values = np.char.encode(values, "utf-8")
            longest = int(np.char.str_len(values).max()) if len(values) else 0
        else:
            raise SchemaError(f"{what}: column {column.name!r} stores text, got a number")
        if longest > column.width:
            raise SchemaError(f"{what}: a value of {column.name!r} is longer than its {column.width} bytes")
        return values.astype(column.numpy_dtype)
    if kind in "SUO":
        raise SchemaError(f"{what}: column {column.name!r} stores {column.kind}, got text")
    if kind == "b":
        raise SchemaError(f"{what}: column {column.name!r} stores {column.kind}, got a condition")
    if column.kind == "float64":
        return values.astype(np.float64)
    if kind == "f":
        raise SchemaError(f"{what}: column {column.name!r} stores {column.kind}, not floats "
                          "(minidb does not round; the value may come from / or AVG)")
    info = np.iinfo(column.numpy_dtype)
    if len(values) and (values.min() < info.min or values.max() > info.max):
        raise SchemaError(f"{what}: a value of {column.name!r} does not fit in {column.kind}")
    return values.astype(column.numpy_dtype)


def _single_table(catalog: Catalog, tree: exp.Expression, what: str) -> tuple[Ref, _Scope]:
    ref = _table_ref(catalog, tree.this)
    scope = _Scope([ref])
    where = tree.args.get("where")
    builder = _ExprBuilder(ref.table.schema, lambda c: Col(scope.resolve(c)[1]), None, what)
    for term in _conjuncts(where.this if where is not None else None):
        ref.filters.append(builder.condition(term))
    return ref, scope


def _update(catalog: Catalog, tree: exp.Update) -> UpdateStatement:
    _check_args(tree, {"this", "expressions", "where"},
                {"from": "UPDATE ... FROM", "returning": "RETURNING", "order": "UPDATE ... ORDER BY",
                 "limit": "UPDATE ... LIMIT", "with": "WITH, common table expressions"}, "UPDATE")
    ref, scope = _single_table(catalog, tree, "UPDATE")
    builder = _ExprBuilder(ref.table.schema, lambda c: Col(scope.resolve(c)[1]), None, "UPDATE")
    assignments: list[tuple[str, Expr]] = []
    for a in tree.expressions:
        if not isinstance(a, exp.EQ) or not isinstance(a.this, exp.Column):
            raise unsupported(f"SET {a.sql()}")
        col = ref.table.schema.column(scope.resolve(a.this)[1], f"table {ref.table.name!r}")
        if any(c.lower() == col.name.lower() for c, _ in assignments):
            raise MinidbError(f"UPDATE sets column {col.name!r} twice")
        e = builder.build(a.expression)
        k = builder.kind(e)
        if k == "bool":
            raise unsupported(f"assigning a condition, {a.sql()}")
        if k == "null" and not col.nullable:
            raise SchemaError(f"UPDATE {ref.table.name}: column {col.name!r} is NOT NULL; it cannot be set to NULL")
        if k != "null" and (k == "char") != (col.kind == "char"):
            raise SchemaError(f"UPDATE {ref.table.name}: column {col.name!r} stores "
                              f"{'text' if col.kind == 'char' else col.kind}, {a.expression.sql()} is "
                              f"{'text' if k == 'char' else 'a number'}")
        assignments.append((col.name, e))
    return UpdateStatement(ref, assignments)


def _delete(catalog: Catalog, tree: exp.Delete) -> DeleteStatement:
    _check_args(tree, {"this", "where", "using", "cluster"},
                {"returning": "RETURNING", "limit": "DELETE ... LIMIT", "order": "DELETE ... ORDER BY",
                 "with": "WITH, common table expressions", "tables": "multi-table DELETE"}, "DELETE")
    if tree.args.get("using"):
        raise unsupported("DELETE ... USING")
    ref, _ = _single_table(catalog, tree, "DELETE")
    return DeleteStatement(ref)


def _create(catalog: Catalog, tree: exp.Create) -> CreateTableAsStatement:
    kind = str(tree.args.get("kind") or "").upper()
    if kind != "TABLE":
        hint = "; use Database.create_index" if kind == "INDEX" else ""
        raise unsupported(f"CREATE {kind}{hint}")
    source = tree.expression
    if not isinstance(source, exp.Select | exp.Union):
        raise unsupported("CREATE TABLE with a column list; load data with Database.create_table, "
                          "or write CREATE TABLE t AS SELECT ...")
    _check_args(tree, {"this", "kind", "expression", "replace", "refresh", "unique", "exists",
                       "concurrently"},
                {"properties": "table properties", "with": "WITH, common table expressions"},
                "CREATE TABLE")
    if tree.args.get("replace"):
        raise unsupported("CREATE OR REPLACE")
    if tree.args.get("exists"):
        raise unsupported("CREATE TABLE IF NOT EXISTS")
    target = tree.this
    if not isinstance(target, exp.Table) or not isinstance(target.this, exp.Identifier):
        raise unsupported(f"CREATE TABLE {target.sql()}")
    name = target.name
    if catalog.has(name):
        raise MinidbError(f"table {name!r} already exists; CREATE TABLE ... AS makes a new table "
                          "(drop the old one first, or use INSERT INTO ... SELECT)")
    from minidb.sql.compound import select_statement  # a UNION or subqueries may feed it too

    return CreateTableAsStatement(name, select_statement(catalog, source))


def parse_predicate(text: str, schema: Schema) -> Expr:
    """Translate one SQL condition over ``schema``, the text a WHERE clause would hold.

    ``parse_predicate("dept = 'shoe'", EMP_SCHEMA)`` gives ``Compare("=", Col("dept"),
    Const("shoe"))``; the same types are checked as for a WHERE clause. There is one relation,
    so a qualifier (``E.dept``) is ignored. Used for predicate-defined fragments (Distributed
    INGRES, Section 2).
    """
    if not isinstance(text, str) or not text.strip():
        raise MinidbError("empty predicate; write a condition such as dept = 'shoe'")
    tree = parse(text)
    if isinstance(tree, exp.Query | exp.DDL | exp.DML | exp.Command):
        raise MinidbError(f"{text!r} is a statement; write only a condition such as dept = 'shoe'")
    builder = _ExprBuilder(schema, lambda c: Col(schema.column(c.name).name), None, "a predicate")
    return builder.condition(tree)


__all__ = [
    "SelectQuery", "SelectStatement", "InsertStatement", "UpdateStatement", "DeleteStatement",
    "CreateTableAsStatement", "Ref", "JoinEdge", "translate", "parse", "coerce", "kind_of",
    "unsupported", "parse_predicate",
]
