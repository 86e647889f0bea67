"""What the fuzzer generates: small random tables and random SQL over them.

Data (``random_tables``). Two or three tables ``t0, t1, t2``. Every table has an int32 join key
``k`` with a small domain (so joins find matches and values repeat), plus a few columns drawn
from: ``i`` (int32), ``l`` (int64), ``f`` / ``g`` (float64), ``s`` / ``u`` (text). A column is
*wide* when it may hold extremes (int32 min and max, int64 values whose SUM overflows 64 bits,
1e9); arithmetic is only generated on narrow columns, so DuckDB never reports an overflow of
its own. Floats are multiples of 0.25, so sums of them are exact in any order. Text columns get
a fixed width (``minidb.width`` field metadata) that may be wider than the longest value, so two
tables can join a char(9) column with a char(5) one. Tables may be empty or hold one row. With
the ``utf8`` flag text includes 'é', '日本', 'ß'; with ``nulls``, a table has 0, 10 or 30% NULLs
in every column (the join keys too).

Queries (``QueryGenerator``), inside the subset of ``minidb/sql/translate.py``:

* selections: comparisons of a column with a literal of either numeric type (``f < 5``,
  ``i = 5.5``, ``f >= -10``), with another column, BETWEEN, combined with AND / OR / NOT;
* projections: columns, ``*``, arithmetic (+ - * and / or % by a non-zero literal), aliases;
* aggregates: MIN MAX SUM COUNT AVG and COUNT(*), scalar or with GROUP BY one or two columns
  (or, flag ``group_by_expression``, expressions over them);
* joins of two or three tables on equalities (JOIN ... ON or a comma list with WHERE), keys of
  the same or of different types (int32 = int64, int = float, char(9) = char(5));
* ORDER BY output positions ASC / DESC, LIMIT;
* a planner hint now and then (``scan``, ``index``, ``nested_loops``, ...), for minidb only.

Later flags add ``[NOT] ILIKE``, ``LIKE ... ESCAPE '!'`` (the data then holds '_' and '%'),
uncorrelated ``x [NOT] IN (SELECT y ...)`` (y may hold NULLs, so NOT IN may be never true),
``x::TYPE`` casts, ``* EXCLUDE (...)``, and (flag ``dml``) statements that change data:
``INSERT INTO t [(columns)] VALUES``, ``INSERT INTO t SELECT * FROM t'`` (one node only, as
documented),
``UPDATE t SET ...`` (often of ``k``, the usual key / partitioning column; to NULL; with a WHERE
that matches nothing), ``DELETE FROM t [WHERE ...]`` and ``CREATE TABLE cN AS SELECT ...``. A
change is applied to both engines; the runner compares minidb's count with DuckDB's, then the
whole table (``Query.target``), and later queries of the round see the changed tables.
UPDATE and DELETE conditions hold uncorrelated subqueries (flag ``dml_subquery``).
Then what a student would write beside that: ``CASE x WHEN v THEN ...``, CASE with several
WHENs, without ELSE or with text results, ``SUM(CASE WHEN ... THEN 1 ELSE 0 END)``; ``GROUP BY 1``
and ``GROUP BY`` an alias; ``UNION``; a ``LEFT JOIN`` with more ``ON`` terms; ``ORDER BY ...
NULLS FIRST / LAST``; NULL in IN lists and BETWEEN bounds, ``NOT BETWEEN``; a subquery inside
an IN subquery; ``-x`` and ``3 - x``; HAVING with AND / OR / NOT and a scalar subquery
(flags ``case_forms`` to ``having_forms``); literals such as 0.1 (``decimal_literals``).

Feature flags. The SQL added to minidb after that subset (NULLs, DISTINCT, HAVING, IN, LIKE,
CASE, CAST, UNION ALL, LEFT JOIN, subqueries, scalar functions, non-ASCII text, multi-way
parallel joins) is generated only when its flag is on. ``FEATURES`` below is the one place that
says which are on by default: a flag goes to True when its feature lands in minidb; ``--features``
switches flags for one run (``none`` gives the Gamma subset alone).

Each query carries *traits*: short tags for the risky things it does (``float_col_int_literal``,
``join_mixed_types``, ...). They do not change the query; they let ``triage`` say which known
class of bug a failure most likely belongs to.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa

# -- feature flags: the ONE place that says what SQL is generated --------------------------------
FEATURES: dict[str, bool] = {
    "utf8": True,  # non-ASCII text ('é', '日本') in string columns
    "nulls": True,  # NULL values in the data; IS [NOT] NULL
    "distinct": True,  # SELECT DISTINCT
    "count_distinct": True,  # COUNT / SUM / AVG(DISTINCT x), one DISTINCT argument per query
    "having": True,  # GROUP BY ... HAVING
    "in_list": True,  # x [NOT] IN (1, 2, 3)
    "like": True,  # s [NOT] LIKE 'a%'
    "case": True,  # CASE WHEN ... THEN ... ELSE ... END
    "cast": True,  # CAST(x AS BIGINT / DOUBLE / VARCHAR)
    "union_all": True,  # SELECT ... UNION ALL SELECT ...
    "left_join": True,  # a LEFT JOIN b ON ... (two tables)
    "scalar_subquery": True,  # x > (SELECT AVG(y) FROM t)
    "scalar_functions": True,  # ABS, LOWER, UPPER, LENGTH, SUBSTRING
    # Three-table joins and joins on several equalities on the parallel engine (which ran one
    # hash join on one equality before; off, parallel queries keep to that).
    "parallel_multiway_join": True,
    "group_by_expression": True,  # GROUP BY x % 3, LOWER(s), f * 2 (the same text in SELECT)
    "ilike": True,  # s [NOT] ILIKE 'A%' (case-insensitive LIKE)
    "like_escape": True,  # s LIKE 'a!_%' ESCAPE '!' (and the data holds '_' and '%')
    "in_subquery": True,  # x [NOT] IN (SELECT y FROM t [WHERE ...]), uncorrelated, NULLs included
    "cast_shorthand": True,  # x::TINYINT / SMALLINT / INTEGER / BIGINT / DOUBLE / VARCHAR
    "exclude": True,  # SELECT * EXCLUDE (c, ...) FROM t
    "order_by_name": True,  # ORDER BY an output's alias or its expression text, not its position
    # Statements that change data: INSERT VALUES, INSERT SELECT (one node only), UPDATE (also of
    # the key / partitioning column, to NULL, matching no row), DELETE, CREATE TABLE AS SELECT.
    # The runner compares the count and then the whole table with DuckDB's.
    "dml": True,
    # uncorrelated subqueries in UPDATE / DELETE conditions (run first, their answers written in)
    "dml_subquery": True,
    # What a student writes beside the above (docs/sql.md lists each as supported):
    # CASE x WHEN v THEN ..., several WHENs, no ELSE (NULL), text results, SUM(CASE ...)
    "case_forms": True,
    "group_by_alias": True,  # GROUP BY 1 / GROUP BY an output's alias
    "union": True,  # SELECT ... UNION SELECT ... (duplicates removed)
    "left_join_on_terms": True,  # LEFT JOIN b ON a.k = b.k AND b.x > 3 (and a.y < b.z ...)
    "nulls_first": True,  # ORDER BY x NULLS FIRST / NULLS LAST
    "null_literals": True,  # x IN (1, NULL), x BETWEEN NULL AND 3, x NOT BETWEEN ...
    "nested_subquery": True,  # x IN (SELECT y FROM t WHERE z > (SELECT AVG(w) FROM t2))
    "unary_minus": True,  # -x, and the literal on the left: 3 - x
    # HAVING a AND / OR b, NOT, and an aggregate against a scalar subquery
    "having_forms": True,
    # literals such as 0.1 and 0.3, which no double holds exactly: DuckDB computes k * 0.1 + 0.2
    # as an exact DECIMAL, so (k * 0.1 + 0.2) = 0.3 holds for k = 1
    "decimal_literals": True,
}


def features_from(spec: str | None) -> frozenset[str]:
    """The flags switched on: the defaults of ``FEATURES``, or ``"all"``, ``"none"`` or a
    comma list of flag names (which replaces the defaults)."""
    if spec is None:
        return frozenset(name for name, on in FEATURES.items() if on)
    spec = spec.strip().lower()
    if spec == "all":
        return frozenset(FEATURES)
    if spec in ("", "none"):
        return frozenset()
    names = {n.strip() for n in spec.split(",") if n.strip()}
    unknown = names - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown feature flag(s) {sorted(unknown)}; known: {', '.join(FEATURES)}")
    return frozenset(names)


# -- values -------------------------------------------------------------------------------------
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_EXTREMES = [INT32_MIN, INT32_MAX, INT32_MAX - 1, -1_000_000_000, 1_000_000_000]
# Large enough that the SUM of a few of them overflows int64 (DuckDB sums into a 128-bit HUGEINT).
INT64_EXTREMES = [INT64_MAX, INT64_MIN, 4 * 10**18, -4 * 10**18, 2**62, 3_000_000_000]
# 1e9 at most: a sum of up to 10**5 of these multiples of 0.25 stays exact in a double, so the
# order in which an engine adds them cannot change the answer.
FLOAT_SPECIALS = [-10.5, -10.0, -2.25, -0.5, 0.0, 0.5, 3.0, 4.5, 5.0, 5.5, 7.25, 1e9, -1e9]
ASCII_WORDS = ["a", "b", "ab", "abc", "B", "zz", "x y", "shoe", "toy", ""]
UTF8_WORDS = ["é", "日本", "naïve", "ß", "Ωmega"]
ESCAPE_WORDS = ["a_b", "50%", "a%b", "!x"]  # LIKE's wildcards (and an escape) as plain text


@dataclass
class ColumnSpec:
    name: str
    kind: str  # "int32", "int64", "float64" or "char"
    wide: bool = False  # may hold extremes: no arithmetic on it
    width: int = 0  # bytes, for "char"

    @property
    def numeric(self) -> bool:
        return self.kind != "char"

    def arrow_field(self) -> pa.Field:
        types = {"int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(),
                 "char": pa.string()}
        meta = {b"minidb.width": str(self.width).encode()} if self.kind == "char" else None
        return pa.field(self.name, types[self.kind], metadata=meta)


@dataclass
class TableSpec:
    name: str
    columns: list[ColumnSpec]
    rows: list[tuple]

    def column(self, name: str) -> ColumnSpec:
        return next(c for c in self.columns if c.name == name)

    def arrow(self) -> pa.Table:
        schema = pa.schema([c.arrow_field() for c in self.columns])
        data = {c.name: [r[j] for r in self.rows] for j, c in enumerate(self.columns)}
        return pa.table(data, schema=schema)

    def with_rows(self, rows: list[tuple]) -> TableSpec:
        return TableSpec(self.name, self.columns, rows)


def _value(rng: random.Random, col: ColumnSpec, words: list[str]):
    """One random value of ``col``: mostly a small domain (duplicates), sometimes an extreme."""
    if col.kind == "char":
        return rng.choice(words)
    if col.kind == "float64":
        if rng.random() < 0.4:
            special = rng.choice(FLOAT_SPECIALS)
            return special if col.wide or abs(special) < 1e6 else 0.25
        return rng.randint(-40, 40) / 4
    if col.wide and rng.random() < 0.3:
        return rng.choice(INT32_EXTREMES if col.kind == "int32" else INT64_EXTREMES)
    return rng.randint(-6, 6) if col.name == "k" else rng.randint(-20, 20)


def _columns(rng: random.Random, words: list[str]) -> list[ColumnSpec]:
    cols = [ColumnSpec("k", "int32")]
    for name, kind in (("i", "int32"), ("l", "int64"), ("f", "float64"), ("g", "float64"),
                       ("s", "char"), ("u", "char")):
        if rng.random() < 0.55:
            cols.append(ColumnSpec(name, kind, wide=kind != "char" and rng.random() < 0.35))
    if not any(c.kind == "float64" for c in cols):
        cols.append(ColumnSpec("f", "float64"))
    for c in cols:
        if c.kind == "char":
            longest = max(len(w.encode()) for w in words)
            c.width = rng.choice([longest, longest + 3, 12])
    return cols


def random_table(rng: random.Random, name: str, features: frozenset[str]) -> TableSpec:
    """A table of 0 to a few hundred rows (one row, empty and small are frequent)."""
    words = ASCII_WORDS + (UTF8_WORDS if "utf8" in features else []) \
        + (ESCAPE_WORDS if "like_escape" in features else [])
    cols = _columns(rng, words)
    n = rng.choice([0, 1, 1, 2, 3, 5, 8, 13, 20, 30, 50, 80, 120, 300])
    null_rate = rng.choice([0.0, 0.1, 0.3]) if "nulls" in features else 0.0
    rows = []
    for _ in range(n):
        row = [None if rng.random() < null_rate else _value(rng, c, words) for c in cols]
        rows.append(tuple(row))
    return TableSpec(name, cols, rows)


def random_tables(rng: random.Random, features: frozenset[str]) -> list[TableSpec]:
    return [random_table(rng, f"t{j}", features) for j in range(rng.choice([2, 3, 3]))]


# -- literals -----------------------------------------------------------------------------------
def sql_literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, float):
        return repr(v) if v == v and abs(v) != float("inf") else "0.0"
    return str(v)


# -- queries ------------------------------------------------------------------------------------
@dataclass
class Query:
    """One generated SELECT: its text without ORDER BY / LIMIT, then those, kept apart so the
    oracle can also run it without LIMIT (to see which rows tie at the cut)."""

    body: str
    order: list[tuple[int, bool]] = field(default_factory=list)  # (1-based output column, desc)
    limit: int | None = None
    # how ORDER BY names an output column (its alias or expression text) instead of its position
    order_names: dict[int, str] = field(default_factory=dict)
    # ORDER BY positions written with NULLS FIRST / NULLS LAST (flag ``nulls_first``); NULLs
    # come last where nothing is written, as in DuckDB
    nulls: dict[int, str] = field(default_factory=dict)
    traits: set[str] = field(default_factory=set)
    hint: str | None = None  # a planner hint for minidb only ("index", "nested_loops", ...)
    tables: set[str] = field(default_factory=set)  # names of the tables it reads
    # A statement that changes data (flag ``dml``): the table whose whole contents are compared
    # with DuckDB's afterwards (for CREATE TABLE AS, the new table, dropped after the check).
    target: str | None = None
    creates: bool = False

    def sql(self, with_limit: bool = True) -> str:
        text = self.body
        if self.order:
            text += " ORDER BY " + ", ".join(
                f"{self.order_names.get(p, p)}{' DESC' if d else ''}"
                + (f" NULLS {self.nulls[p]}" if p in self.nulls else "") for p, d in self.order)
        if with_limit and self.limit is not None:
            text += f" LIMIT {self.limit}"
        return text


@dataclass
class _Source:
    """A table as it appears in FROM, under an alias."""

    table: TableSpec
    alias: str
    qualify: bool

    def ref(self, col: ColumnSpec) -> str:
        return f"{self.alias}.{col.name}" if self.qualify else col.name


class QueryGenerator:
    """Random SELECT statements over ``tables`` (a fresh ``Query`` per call of ``query``)."""

    def __init__(self, rng: random.Random, tables: list[TableSpec], features: frozenset[str],
                 parallel: bool = False):
        self.rng = rng
        self.tables = tables
        self.features = features
        self.traits: set[str] = set()
        # one join equality per query, unless the parallel engine is known to do more
        self.one_equality = parallel and "parallel_multiway_join" not in features
        self.parallel = parallel
        self.created = 0  # CREATE TABLE AS statements so far (their tables are c0, c1, ...)
        # without the flag dml_subquery, UPDATE / DELETE conditions get no subqueries
        self.no_subqueries = False

    def on(self, flag: str, p: float = 0.15) -> bool:
        """True with probability ``p`` when the feature ``flag`` is switched on."""
        return flag in self.features and self.rng.random() < p

    # -- the statement ----------------------------------------------------------------------------
    def query(self) -> Query:
        self.traits = set()
        self.subquery_tables: set[str] = set()  # tables read by scalar subqueries
        # the DISTINCT aggregates' argument (minidb takes one per query)
        self.distinct_argument: ColumnSpec | None = None
        self.distinct_ref = ""
        self.group_keys: list[str] = []  # the GROUP BY keys as written (for HAVING on a key)
        r = self.rng.random()
        if self.on("dml", 0.12):
            q = self._dml()
        elif self.on("union_all", 0.08):
            q = self._union_all()
        elif r < 0.45:
            q = self._select(self._from_one())
        else:
            q = self._select(self._from_join())
        q.traits |= self.traits
        q.tables |= self.subquery_tables
        return q

    def _from_one(self) -> tuple[list[_Source], str, list[str]]:
        t = self.rng.choice(self.tables)
        return [_Source(t, t.name, False)], t.name, []

    def _from_join(self) -> tuple[list[_Source], str, list[str]]:
        """Two or three tables (a table may appear twice, under another alias), joined on
        equalities, either JOIN ... ON or a comma list with the equalities in WHERE."""
        n = 2 if self.one_equality else self.rng.choice([2, 2, 3])
        picked = [self.rng.choice(self.tables) for _ in range(n)]
        sources = [_Source(t, "abc"[j], True) for j, t in enumerate(picked)]
        self.traits.add("join3" if n == 3 else "join2")
        comma = self.rng.random() < 0.3
        left_join = n == 2 and not comma and self.on("left_join", 0.3)  # minidb: two tables
        text = f"{picked[0].name} a"
        where_terms = []
        for j in range(1, n):
            other = self.rng.randrange(j)
            eq = self._join_equality(sources[other], sources[j])
            if comma:
                text += f", {picked[j].name} {sources[j].alias}"
                where_terms.append(eq)
            else:
                join = "LEFT JOIN" if left_join else "JOIN"
                if left_join and self.on("left_join_on_terms", 0.5):
                    eq += f" AND {self._on_term(sources[0], sources[1])}"
                    self.traits.add("left_join_on_terms")
                text += f" {join} {picked[j].name} {sources[j].alias} ON {eq}"
        if left_join:
            self.traits.add("left_join")
        return sources, text, where_terms

    def _on_term(self, left: _Source, right: _Source) -> str:
        """A LEFT JOIN's further ON condition: on the right table alone (it filters that table),
        on the left alone, or comparing the two (never a second equality of the two tables,
        which the parallel engine refuses). A left row that no pair satisfies is padded."""
        r = self.rng.random()
        if r < 0.4:
            return self.comparison([right])
        if r < 0.6:
            return self.comparison([left])
        lcol = self.rng.choice(left.table.columns)
        others = [c for c in right.table.columns if c.numeric == lcol.numeric] or \
            [right.table.column("k")]
        if not others[0].numeric == lcol.numeric:
            lcol = left.table.column("k")
        op = self.rng.choice(["<", "<=", ">", "<>"])
        return f"{left.ref(lcol)} {op} {right.ref(self.rng.choice(others))}"

    def _join_equality(self, left: _Source, right: _Source) -> str:
        lcol = self.rng.choice(left.table.columns) if self.rng.random() < 0.5 \
            else left.table.column("k")
        candidates = [c for c in right.table.columns if c.numeric == lcol.numeric]
        if not candidates:
            lcol = left.table.column("k")
            candidates = [c for c in right.table.columns if c.numeric]
        rcol = self.rng.choice(candidates)
        if lcol.kind != rcol.kind or (lcol.kind == "char" and lcol.width != rcol.width):
            self.traits.add("join_mixed_types")
        return f"{left.ref(lcol)} = {right.ref(rcol)}"

    def _select(self, frm: tuple[list[_Source], str, list[str]]) -> Query:
        sources, from_text, join_terms = frm
        where = join_terms + ([self.predicate(sources)] if self.rng.random() < 0.75 else [])
        aggregate = self.rng.random() < 0.4
        items, group = self._aggregate_items(sources) if aggregate else (self._plain_items(sources), [])
        distinct = not aggregate and self.on("distinct", 0.3)
        text = "SELECT " + ("DISTINCT " if distinct else "") + ", ".join(items)
        text += " FROM " + from_text
        if where:
            text += " WHERE " + " AND ".join(f"({w})" if " OR " in w else w for w in where)
        if group:
            text += " GROUP BY " + ", ".join(group)
            if self.on("having", 0.4):
                text += " HAVING " + self._having(sources)
                self.traits.add("having")
        if distinct:
            self.traits.add("distinct")
        q = Query(text, tables={s.table.name for s in sources})
        self._order_limit(q, len(items))  # ORDER BY positions of the SELECT list
        if q.order and "*" not in items[0] and self.on("order_by_name", 0.5):
            for p, _ in q.order:  # the alias, or the expression as written
                item = items[p - 1]
                alias = re.search(r" AS ([cg]\d+)$", item)  # not CAST(x AS BIGINT)'s AS
                q.order_names[p] = alias.group(1) if alias else item
            q.traits.add("order_by_name")
        q.hint = self._hint()
        return q

    def _order_limit(self, q: Query, n_outputs: int) -> None:
        if self.rng.random() < 0.35:
            positions = self.rng.sample(range(1, n_outputs + 1), self.rng.randint(1, n_outputs))
            q.order = [(p, self.rng.random() < 0.4) for p in positions]
            q.traits.add("order_by")
            for p in positions:
                if self.on("nulls_first", 0.25):
                    q.nulls[p] = self.rng.choice(["FIRST", "FIRST", "LAST"])
                    q.traits.add("nulls_first")
            if self.rng.random() < 0.6:
                q.limit = self.rng.choice([0, 1, 2, 3, 5, 10, 50])
                q.traits.add("limit")

    def _hint(self) -> str | None:
        if self.rng.random() < 0.15:
            return self.rng.choice(["scan", "index", "clustered_index", "nested_loops", "hash_join"])
        return None

    # -- SELECT lists -------------------------------------------------------------------------------
    def _plain_items(self, sources: list[_Source]) -> list[str]:
        if len(sources) == 1 and len(sources[0].table.columns) > 1 and self.on("exclude", 0.1):
            cols = sources[0].table.columns
            gone = self.rng.sample(cols, self.rng.randint(1, len(cols) - 1))
            self.traits.add("exclude")
            return [f"* EXCLUDE ({', '.join(c.name for c in gone)})"]
        if self.rng.random() < 0.1:  # every column (of every table, or of one: "a.*")
            src = self.rng.choice(sources)
            return [f"{src.alias}.*" if src.qualify and self.rng.random() < 0.5 else "*"]
        items = []
        for j in range(self.rng.randint(1, 4)):
            src = self.rng.choice(sources)
            if self.rng.random() < 0.3:
                e = self.numeric_expr(sources)
            else:
                e = self.scalar_function(src) if self.on("scalar_functions", 0.2) \
                    else src.ref(self.rng.choice(src.table.columns))
            if self.on("case", 0.1):
                e = self._case(sources)
            elif self.on("cast", 0.1):
                e = self._cast(sources)
            elif self.on("scalar_subquery", 0.05):
                e = self._scalar_subquery()
            items.append(e + (f" AS c{j}" if self.rng.random() < 0.3 else ""))
        return items

    def _aggregate_items(self, sources: list[_Source]) -> tuple[list[str], list[str]]:
        group = []
        if self.rng.random() < 0.6:
            src_cols = [(s, c) for s in sources for c in s.table.columns]
            for s, c in self.rng.sample(src_cols, min(len(src_cols), self.rng.choice([1, 1, 2]))):
                group.append(self._group_key(s, c))
            self.traits.add("group_by")
        else:
            self.traits.add("scalar_aggregate")
        aggs = [self.aggregate(sources) for _ in range(self.rng.randint(1, 3))]
        items = list(group) + aggs
        if group and self.rng.random() < 0.3:
            items = aggs + group  # group columns need not come first
        self.group_keys = list(group)  # as written, before GROUP BY 2 / an alias: for HAVING
        if group and self.on("group_by_alias", 0.3):  # GROUP BY 2, or GROUP BY g0 (an alias)
            self.traits.add("group_by_alias")
            for j, key in enumerate(list(group)):
                pos = items.index(key) + 1
                if self.rng.random() < 0.5:
                    group[j] = str(pos)
                else:
                    items[pos - 1] = f"{key} AS g{j}"
                    group[j] = f"g{j}"
        return items, group

    def _group_key(self, src: _Source, col) -> str:
        """A grouping column, or (flag ``group_by_expression``) an expression over it."""
        if not self.on("group_by_expression", 0.3):
            return src.ref(col)
        self.traits.add("group_by_expression")
        if not col.numeric:
            return f"LOWER({src.ref(col)})"
        return f"{src.ref(col)} % 3" if col.kind != "float64" else f"{src.ref(col)} * 2"

    def aggregate(self, sources: list[_Source]) -> str:
        """MIN / MAX (any column), SUM / AVG (numeric columns or expressions), COUNT."""
        src = self.rng.choice(sources)
        col = self.rng.choice(src.table.columns)
        func = self.rng.choice(["MIN", "MAX", "SUM", "AVG", "COUNT", "COUNT(*)"])
        if func == "COUNT(*)":
            return "COUNT(*)"
        if func in ("SUM", "AVG") and not col.numeric:
            col = src.table.column("k")
        if func in ("COUNT", "SUM", "AVG") and self.on("count_distinct", 0.3):
            if self.distinct_argument is None:
                self.distinct_argument, self.distinct_ref = col, src.ref(col)
            arg = self.distinct_argument
            func = func if arg.numeric else "COUNT"
            self.traits.add("count_distinct")
            if func != "COUNT" and arg.kind == "int64" and arg.wide:
                self.traits.add("sum_wide_int64")
            return f"{func}(DISTINCT {self.distinct_ref})"
        if func in ("SUM", "AVG", "COUNT") and self.on("case_forms", 0.15):  # SUM(CASE ...)
            self.traits |= {"case", "case_forms"}
            value = "1" if func != "AVG" else self.numeric_expr(sources)
            otherwise = " ELSE 0" if func == "SUM" and self.rng.random() < 0.6 else ""
            return f"{func}(CASE WHEN {self.comparison(sources)} THEN {value}{otherwise} END)"
        if func in ("SUM", "AVG"):
            if self.rng.random() < 0.25:
                return f"{func}({self.numeric_expr(sources)})"
            if col.kind == "int64" and col.wide:
                self.traits.add("sum_wide_int64")
        return f"{func}({src.ref(col)})"

    def _having(self, sources: list[_Source], depth: int = 0) -> str:
        if depth == 0 and self.on("having_forms", 0.4):
            self.traits.add("having_forms")
            r = self.rng.random()
            if r < 0.5:
                op = self.rng.choice(["AND", "OR"])
                return f"({self._having(sources, 1)} {op} {self._having(sources, 1)})"
            if r < 0.7:
                return f"NOT ({self._having(sources, 1)})"
            if r < 0.85 and self.group_keys:  # a condition on a group key: HAVING k % 3 > 0
                key = self.rng.choice(self.group_keys)
                if "LOWER(" in key or not self._numeric_key(sources, key):
                    return f"{key} IS NOT NULL"
                return f"{key} {self.rng.choice(['>', '<>', '<='])} {self.rng.randint(-3, 3)}"
            if not self.no_subqueries:
                return f"COUNT(*) {self.rng.choice(['>', '<='])} {self._scalar_subquery()}"
        agg = self.aggregate(sources)
        if agg.startswith(("MIN(", "MAX(")) and "(DISTINCT" not in agg:
            agg = "COUNT(*)"
        return f"{agg} {self.rng.choice(['>', '>=', '<', '='])} {self.rng.randint(-2, 3)}"

    @staticmethod
    def _numeric_key(sources: list[_Source], key: str) -> bool:
        """Whether the group key ``key`` (a column reference, maybe in an expression) is a number."""
        name = re.match(r"(?:(\w+)\.)?(\w+)", key)
        for s in sources:
            if name.group(1) in (None, s.alias) and any(c.name == name.group(2) for c in s.table.columns):
                return s.table.column(name.group(2)).numeric
        return False

    # -- expressions --------------------------------------------------------------------------------
    def numeric_expr(self, sources: list[_Source], depth: int = 0) -> str:
        """Arithmetic over narrow numeric columns and literals (never dividing by a column)."""
        src = self.rng.choice(sources)
        narrow = [c for c in src.table.columns if c.numeric and not c.wide] or [src.table.column("k")]
        col = self.rng.choice(narrow)
        left = src.ref(col)
        if self.on("scalar_functions", 0.15):
            left = f"ABS({left})"
        if self.on("unary_minus", 0.1):
            left = f"-{left}"
            self.traits.add("unary_minus")
        if depth < 1 and self.rng.random() < 0.3:
            right = self.numeric_expr(sources, depth + 1)
            op = self.rng.choice(["+", "-", "*"])
        else:
            op = self.rng.choice(["+", "-", "*", "/", "%"])
            if op == "%" and col.kind == "float64":
                op = "*"
            right = sql_literal(self._nonzero_literal(integral=op == "%"))
            if op == "%" and self.on("decimal_literals", 0.2):  # i % 0.3: a DECIMAL remainder
                right = self.rng.choice(["0.3", "0.05", "0.1", "-0.7"])
                self.traits.add("decimal_literals")
            if op in "+-*" and self.on("unary_minus", 0.15):  # 3 - x (never dividing by x)
                left, right = right, left
                self.traits.add("unary_minus")
        self.traits.add("arithmetic")
        return f"({left} {op} {right})"

    def _nonzero_literal(self, integral: bool):
        v = self.rng.choice([1, 2, 3, -3, 7]) if integral or self.rng.random() < 0.6 \
            else self.rng.choice([0.5, 1.5, -2.25, 4.0])
        if not integral and self.on("decimal_literals", 0.2):
            v = self.rng.choice([0.1, 0.3, 1.1, -0.7])
            self.traits.add("decimal_literals")
        return v

    def literal_for(self, col: ColumnSpec):
        """A literal to compare ``col`` with: usually a value like the data's, of either
        numeric type whatever the column's type (``f < 5``, ``i = 5.5``)."""
        if col.kind == "char":
            words = ASCII_WORDS + (UTF8_WORDS if "utf8" in self.features else [])
            return self.rng.choice(words + ["a", "m", "zzz"])
        r = self.rng.random()
        if r < 0.35:
            v = self.rng.randint(-12, 12)
            if col.kind == "float64":
                self.traits.add("float_col_int_literal")
            return v
        if r < 0.7:
            v = self.rng.choice([-10.5, -0.5, 0.5, 2.25, 4.5, 5.5, -3.0, 5.0])
            if col.kind != "float64":
                self.traits.add("int_col_float_literal")
                if v != int(v):
                    self.traits.add("int_col_fractional_literal")
            return v
        if col.kind == "float64":
            return self.rng.choice([1e15, -1e15, 0.0, 7.25])
        if self.rng.random() < 0.1 and col.kind == "int64":
            self.traits.add("int64_min_literal")
            return INT64_MIN
        return self.rng.choice(INT32_EXTREMES + [3_000_000_000, -3_000_000_000])

    def comparison(self, sources: list[_Source]) -> str:
        src = self.rng.choice(sources)
        col = self.rng.choice(src.table.columns)
        op = self.rng.choice(["=", "<>", "<", "<=", ">", ">="])
        r = self.rng.random()
        if r < 0.12:  # column against column (same table or another)
            other_src = self.rng.choice(sources)
            others = [c for c in other_src.table.columns if c.numeric == col.numeric]
            if not others:  # e.g. a text column, and the other table has none
                other_src, others = src, [col]
            if op == "=" and other_src is not src and self.one_equality:
                op = "<="  # a second join equality: the parallel engine refuses it
            return f"{src.ref(col)} {op} {other_src.ref(self.rng.choice(others))}"
        if r < 0.25:
            low, high = sorted([self.literal_for(col), self.literal_for(col)],
                               key=lambda v: (isinstance(v, str), v))
            self.traits.add("between")
            between = "BETWEEN"
            if self.on("null_literals", 0.25):
                self.traits.add("null_literals")
                if self.rng.random() < 0.5:
                    between = "NOT BETWEEN"
                else:
                    low, high = self.rng.choice([(None, high), (low, None)])
            return f"{src.ref(col)} {between} {sql_literal(low)} AND {sql_literal(high)}"
        if r < 0.35 and col.numeric and not col.wide:
            if col.kind != "float64" and self.on("decimal_literals", 0.3):
                return self._decimal_comparison(src, col, op)
            return f"{self.numeric_expr([src])} {op} {sql_literal(self.literal_for(col))}"
        lit = self.literal_for(col)
        if col.kind == "float64" and isinstance(lit, int) and op in ("<", ">", "<=", ">="):
            self.traits.add("float_col_int_literal_range")
        if col.kind != "float64" and isinstance(lit, float) and op == "=":
            self.traits.add("int_col_float_literal_eq")
        return f"{src.ref(col)} {op} {sql_literal(lit)}"

    def _decimal_comparison(self, src: _Source, col: ColumnSpec, op: str) -> str:
        """``(i * 0.1 + 0.2) = 0.3``: an integer column times a decimal literal, compared with
        the exact value that one of the data's integers gives (written exactly, with Decimal)."""
        factor, term = self.rng.choice(["0.1", "0.3", "1.1", "-0.7"]), self.rng.choice(["0.2", "-0.1"])
        v = self.rng.randint(-6, 6) if col.name == "k" else self.rng.randint(-20, 20)
        self.traits |= {"decimal_literals", "arithmetic"}
        return f"({src.ref(col)} * {factor} + {term}) {op} {Decimal(v) * Decimal(factor) + Decimal(term)}"

    def predicate(self, sources: list[_Source], depth: int = 0) -> str:
        """A condition: comparisons combined with AND / OR / NOT (and flagged forms)."""
        r = self.rng.random()
        if depth < 2 and r < 0.3:
            op = self.rng.choice(["AND", "OR"])
            return f"({self.predicate(sources, depth + 1)} {op} {self.predicate(sources, depth + 1)})"
        if depth < 2 and r < 0.4:
            return f"NOT ({self.predicate(sources, depth + 1)})"
        flagged = self._flagged_predicate(sources)
        return flagged or self.comparison(sources)

    def _flagged_predicate(self, sources: list[_Source]) -> str | None:
        src = self.rng.choice(sources)
        col = self.rng.choice(src.table.columns)
        ints = [c for c in src.table.columns if c.kind in ("int32", "int64") and not c.wide]
        if ints and self.on("decimal_literals", 0.08):
            return self._decimal_comparison(src, self.rng.choice(ints),
                                            self.rng.choice(["=", "=", "<>", "<=", ">"]))
        if self.on("nulls", 0.15):
            self.traits.add("is_null")
            return f"{src.ref(col)} IS {self.rng.choice(['', 'NOT '])}NULL"
        if self.on("in_list", 0.12):
            values = [self.literal_for(col) for _ in range(self.rng.randint(1, 4))]
            if self.on("null_literals", 0.2):  # x IN (1, NULL) is NULL, not false, where x <> 1
                values.insert(self.rng.randrange(len(values) + 1), None)
                self.traits.add("null_literals")
            values = ", ".join(map(sql_literal, values))
            self.traits.add("in_list")
            return f"{src.ref(col)} {self.rng.choice(['', 'NOT '])}IN ({values})"
        text_cols = [c for c in src.table.columns if c.kind == "char"]
        if text_cols and self.on("like", 0.15):
            pattern = self.rng.choice(["a%", "%b", "_b%", "%", "a_c", "%o%", "é%", "_", "__", "%_é"])
            op = "LIKE"
            if self.on("ilike", 0.4):
                pattern = self.rng.choice([pattern, "A%", "%B", "_B%", "É%", "SS", "ẞ", "%Ω%"])
                op = "ILIKE"
                self.traits.add("ilike")
            escape = ""
            if self.on("like_escape", 0.4):
                pattern = self.rng.choice(["a!_b", "%!%", "50!%", "a!%%", "!!x", "%!_%", "a!_%"])
                escape = " ESCAPE '!'"
                self.traits.add("like_escape")
            self.traits.add("like")
            return f"{src.ref(self.rng.choice(text_cols))} {self.rng.choice(['', 'NOT '])}{op} " \
                f"{sql_literal(pattern)}{escape}"
        if self.on("in_subquery", 0.1) and not self.no_subqueries:
            return self._in_subquery(src, col)
        if self.on("scalar_subquery", 0.08) and col.numeric and not self.no_subqueries:
            return f"{src.ref(col)} {self.rng.choice(['<', '>=', '='])} {self._scalar_subquery()}"
        return None

    # -- flagged expressions ------------------------------------------------------------------------
    def scalar_function(self, src: _Source) -> str:
        col = self.rng.choice(src.table.columns)
        self.traits.add("scalar_functions")
        if col.kind == "char":
            f = self.rng.choice(["LOWER", "UPPER", "LENGTH", "SUBSTRING"])
            return f"SUBSTRING({src.ref(col)}, {self.rng.randint(1, 3)}, {self.rng.randint(0, 3)})" \
                if f == "SUBSTRING" else f"{f}({src.ref(col)})"
        if col.wide:  # ABS(int32 min) overflows
            col = src.table.column("k")
        return f"ABS({src.ref(col)})"

    def _case(self, sources: list[_Source]) -> str:
        self.traits.add("case")
        if self.on("case_forms", 0.5):
            return self._case_form(sources)
        cond = self.comparison(sources)
        if self.on("in_subquery", 0.2) and not self.no_subqueries:  # IN (SELECT ...) as a value
            src = self.rng.choice(sources)
            cond = self._in_subquery(src, self.rng.choice(src.table.columns))
        return f"CASE WHEN {cond} THEN {self.numeric_expr(sources)} " \
            f"ELSE {sql_literal(self.rng.randint(-3, 3))} END"

    def _case_form(self, sources: list[_Source]) -> str:
        """The other CASEs: ``CASE x WHEN v THEN ...``, several WHENs, no ELSE (NULL where no
        branch holds), text results."""
        self.traits.add("case_forms")
        text = self.rng.random() < 0.3
        src = self.rng.choice(sources)
        text_cols = [c for c in src.table.columns if c.kind == "char"]

        def result() -> str:
            if not text:
                return self.numeric_expr(sources) if self.rng.random() < 0.5 \
                    else sql_literal(self.rng.randint(-3, 3))
            if text_cols and self.rng.random() < 0.4:
                return src.ref(self.rng.choice(text_cols))
            return sql_literal(self.rng.choice(ASCII_WORDS))

        n = self.rng.choice([1, 2, 3])
        if self.rng.random() < 0.5:  # simple CASE: CASE x WHEN v1 THEN ... WHEN v2 THEN ...
            col = self.rng.choice(src.table.columns)
            whens = " ".join(f"WHEN {sql_literal(self.literal_for(col))} THEN {result()}"
                             for _ in range(n))
            head = f"CASE {src.ref(col)} {whens}"
        else:
            head = "CASE " + " ".join(f"WHEN {self.comparison(sources)} THEN {result()}"
                                      for _ in range(n))
        tail = f" ELSE {result()} END" if self.rng.random() < 0.5 else " END"
        return head + tail

    def _cast(self, sources: list[_Source]) -> str:
        src = self.rng.choice(sources)
        col = self.rng.choice(src.table.columns)
        self.traits.add("cast")
        if self.on("cast_shorthand", 0.5):  # x::TYPE, and more target types
            self.traits.add("cast_shorthand")
            if col.kind == "char":
                return f"{src.ref(col)}::VARCHAR"
            targets = ["DOUBLE", "VARCHAR"] + ([] if col.wide else ["BIGINT", "INTEGER", "SMALLINT"])
            target = self.rng.choice(targets)
            if target == "VARCHAR":
                self.traits.add("cast_to_text")
            return f"{src.ref(col)}::{target}"
        if col.kind == "char":
            return f"CAST({src.ref(col)} AS VARCHAR)"
        target = "BIGINT" if col.kind == "float64" and not col.wide else "DOUBLE"
        return f"CAST({src.ref(col)} AS {target})"

    def _scalar_subquery(self) -> str:
        t = self.rng.choice(self.tables)
        col = self.rng.choice([c for c in t.columns if c.numeric and not c.wide] or [t.column("k")])
        self.traits.add("scalar_subquery")
        self.subquery_tables.add(t.name)
        func = self.rng.choice(["MIN", "MAX", "AVG", "COUNT"])
        return f"(SELECT {func}({col.name}) FROM {t.name})"

    def _in_subquery(self, src: _Source, col: ColumnSpec) -> str:
        """``x [NOT] IN (SELECT y FROM t [WHERE ...])``, uncorrelated; ``y`` of the same kind of
        type as ``x`` (numeric or text), and may hold NULLs (NOT IN is then never true)."""
        t = self.rng.choice(self.tables)
        cols = [c for c in t.columns if c.numeric == col.numeric] or [t.column("k")]
        if not col.numeric and not any(not c.numeric for c in t.columns):
            col = src.table.column("k")
        inner = self.rng.choice(cols)
        where = ""
        numeric = [c for c in t.columns if c.numeric]
        if self.on("nested_subquery", 0.2):  # a subquery inside the subquery
            self.traits.add("nested_subquery")
            where = f" WHERE {self.rng.choice(numeric).name} {self.rng.choice(['<', '>=', '='])} " \
                f"{self._scalar_subquery()}"
        elif self.rng.random() < 0.5:
            c = self.rng.choice(t.columns)
            where = f" WHERE {c.name} {self.rng.choice(['<', '>=', '<>'])} " \
                f"{sql_literal(self.literal_for(c))}"
        self.traits.add("in_subquery")
        self.subquery_tables.add(t.name)
        neg = self.rng.choice(["", "NOT "])
        if neg:
            self.traits.add("not_in_subquery")
        return f"{src.ref(col)} {neg}IN (SELECT {inner.name} FROM {t.name}{where})"

    # -- statements that change data (flag ``dml``) --------------------------------------------------
    def _dml(self) -> Query:
        """INSERT VALUES / INSERT SELECT / UPDATE / DELETE on one of the round's tables, or
        CREATE TABLE cN AS SELECT; the runner compares the whole table afterwards."""
        t = self.rng.choice(self.tables)
        src = _Source(t, t.name, False)
        kinds = ["insert_values", "update", "update", "update", "delete", "create"]
        if not self.parallel:  # the parallel engine refuses INSERT ... SELECT (docs/sql.md)
            kinds.append("insert_select")
        kind = self.rng.choice(kinds)
        self.traits |= {"dml", kind}
        if kind == "create":
            q = self._select(self.rng.choice([self._from_one, self._from_join])())
            name = f"c{self.created}"
            self.created += 1
            return Query(f"CREATE TABLE {name} AS {q.body}", traits=q.traits, tables=q.tables,
                         target=name, creates=True)
        if kind == "insert_values":
            words = ASCII_WORDS + (UTF8_WORDS if "utf8" in self.features else [])
            cols = t.columns
            if "nulls" in self.features and self.rng.random() < 0.3:  # the others get NULL
                cols = [c for c in t.columns if self.rng.random() < 0.6] or [t.columns[-1]]
                self.rng.shuffle(cols)
                self.traits.add("insert_column_list")
            rows = []
            for _ in range(self.rng.randint(1, 4)):
                vals = [None if "nulls" in self.features and self.rng.random() < 0.15
                        else _value(self.rng, c, words) for c in cols]
                rows.append("(" + ", ".join(map(sql_literal, vals)) + ")")
            names = f" ({', '.join(c.name for c in cols)})" if cols is not t.columns else ""
            body = f"INSERT INTO {t.name}{names} VALUES {', '.join(rows)}"
        elif kind == "insert_select":
            same = [o for o in self.tables if [c.kind for c in o.columns] == [c.kind for c in t.columns]]
            other = self.rng.choice(same)  # the table itself at least
            where = f" WHERE {self.predicate([_Source(other, other.name, False)])}" \
                if self.rng.random() < 0.6 else ""
            body = f"INSERT INTO {t.name} SELECT * FROM {other.name}{where}"
            self.subquery_tables.add(other.name)
        elif kind == "delete":
            body = f"DELETE FROM {t.name}{self._dml_where(src)}"
        else:
            cols = self.rng.sample(t.columns, min(len(t.columns), self.rng.choice([1, 1, 2])))
            if self.rng.random() < 0.4 and t.column("k") not in cols:
                cols[0] = t.column("k")  # the join key: often the partitioning / hash key
            sets = ", ".join(f"{c.name} = {self._new_value(src, c)}" for c in cols)
            body = f"UPDATE {t.name} SET {sets}{self._dml_where(src)}"
        return Query(body, tables={t.name}, target=t.name)

    def _dml_where(self, src: _Source) -> str:
        r = self.rng.random()
        if r < 0.15:
            return ""
        if r < 0.25:
            self.traits.add("dml_no_match")
            return " WHERE k > 1000"
        self.no_subqueries = "dml_subquery" not in self.features
        try:
            return f" WHERE {self.predicate([src])}"
        finally:
            self.no_subqueries = False

    def _new_value(self, src: _Source, col: ColumnSpec) -> str:
        """A value for ``SET col = ...`` that fits the column: NULL, a literal like the data's,
        the column changed a little, or another column of a type that converts without loss."""
        r = self.rng.random()
        if r < 0.15 and "nulls" in self.features:
            self.traits.add("set_null")
            return "NULL"
        words = ASCII_WORDS + (UTF8_WORDS if "utf8" in self.features else [])
        if r < 0.45:
            return sql_literal(_value(self.rng, ColumnSpec(col.name, col.kind, wide=False), words))
        casts = [c for c in src.table.columns if c.numeric and not c.wide
                 and (col.kind == "char" or c.kind == "float64")]
        if casts and self.on("cast_shorthand", 0.2):  # SET s = i::VARCHAR, SET i = f::INTEGER
            self.traits.add("cast_shorthand")
            target = {"char": "VARCHAR", "int32": "INTEGER", "int64": "BIGINT"}.get(col.kind, "DOUBLE")
            return f"{self.rng.choice(casts).name}::{target}"
        if col.kind == "char":
            others = [c for c in src.table.columns if c.kind == "char"]
            other = self.rng.choice(others).name
            return self.rng.choice([other, f"LOWER({other})", f"UPPER({other})"])
        fits = {"int32": ("int32",), "int64": ("int32", "int64"),
                "float64": ("int32", "int64", "float64")}[col.kind]
        others = [c for c in src.table.columns if c.kind in fits and not c.wide]
        if col.wide or not others or self.rng.random() < 0.3:
            return src.ref(self.rng.choice([c for c in src.table.columns if c.kind in fits]))
        other = self.rng.choice(others).name
        self.traits.add("arithmetic")
        op = self.rng.choice(["+", "-", "*"]) if col.kind != "float64" else self.rng.choice(["+", "*", "/"])
        return f"{other} {op} {self.rng.choice([1, 2, 3, -1])}"

    def _union_all(self) -> Query:
        """SELECT one column of one table UNION ALL the same kind of column of another."""
        picked = [self.rng.choice(self.tables) for _ in range(2)]
        has_text = all(any(not c.numeric for c in t.columns) for t in picked)
        numeric = not has_text or self.rng.random() < 0.7
        parts = []
        for t in picked:
            src = _Source(t, t.name, False)
            cols = [c for c in t.columns if c.numeric == numeric]
            where = f" WHERE {self.predicate([src])}" if self.rng.random() < 0.5 else ""
            parts.append(f"SELECT {self.rng.choice(cols).name} FROM {t.name}{where}")
        self.traits.add("union_all")
        word = " UNION ALL "
        if self.on("union", 0.4):  # UNION: duplicates removed (NULLs are duplicates of each other)
            word = " UNION "
            self.traits.add("union")
        return Query(word.join(parts), tables={t.name for t in picked})
