"""The oracle: DuckDB on the same Arrow tables, and how its answer is compared with minidb's.

Rows are compared as *multisets* (sorted, then pairwise) unless the query has ORDER BY. With
ORDER BY, minidb's rows must come in that order; with ORDER BY and LIMIT n, rows that tie on the
sort key at the cut may legally differ between engines, so the check is: minidb's rows are
sorted, there are as many as DuckDB's, every row strictly before the last sort key is exactly
DuckDB's, and the rows at the last key are some of the rows with that key in DuckDB's full
(unlimited) answer.

Values: integers must be equal; floats equal within a relative tolerance (1e-9, 1e-6 for
aggregates and arithmetic), except that two different whole numbers below 2**40 always differ
(else ORDER BY CAST(i AS DOUBLE) would see 2147483646 and 2147483647 as a tie); DuckDB's DECIMAL
results (``k * 1.5``) are compared as floats and its HUGEINT sums as Python integers, so a minidb
sum that wrapped around 64 bits is a wrong answer. NULL (None) sorts last in both directions, as in DuckDB,
unless the query says NULLS FIRST.
"""

from __future__ import annotations

import math
from decimal import Decimal
from functools import cmp_to_key

import duckdb

from .grammar import Query, TableSpec


def duckdb_with(tables: list[TableSpec]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB holding ``tables`` (as real tables, so the types are the Arrow ones)."""
    con = duckdb.connect()
    for t in tables:
        data = t.arrow()  # noqa: F841  (DuckDB reads the local variable by name)
        con.execute(f"CREATE TABLE {t.name} AS SELECT * FROM data")
    return con


def normalize(value):
    if isinstance(value, Decimal):
        return float(value)
    return value


def rows_of(raw) -> list[tuple]:
    return [tuple(normalize(v) for v in row) for row in raw]


# -- values ---------------------------------------------------------------------------------------
def same_value(a, b, rel: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a != b and _whole(a) and _whole(b):
        return False  # 2147483646.0 vs 2147483647.0: a real difference, not rounding
    return a == b or math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def _whole(x: float) -> bool:
    """A whole number small enough that the engines' rounding cannot move it by 1 (the
    fuzzer's tables are small: a sum of a few hundred doubles below 2**40 errs by far less)."""
    return abs(x) < 2.0**40 and x.is_integer()


def same_row(r: tuple, s: tuple, rel: float) -> bool:
    return len(r) == len(s) and all(same_value(a, b, rel) for a, b in zip(r, s, strict=True))


def _sort_key(row: tuple) -> tuple:
    def key(v):
        if v is None:
            return (2, 0)
        if isinstance(v, str):
            return (1, v)
        if isinstance(v, int) or _whole(v):
            # exact: rounding would make 2147483646.0 and 2147483647.0 tie, and two equal
            # answers then sort apart (seed 203 reported 5050 equal rows as different)
            return (0, v)
        return (0, float(f"{v:.9g}") if not math.isnan(v) else math.inf)
    return tuple(key(v) for v in row)


def same_multiset(got: list[tuple], want: list[tuple], rel: float) -> bool:
    if len(got) != len(want):
        return False
    if all(same_row(r, s, rel) for r, s in zip(sorted(got, key=_sort_key),
                                                sorted(want, key=_sort_key), strict=True)):
        return True
    return len(got) <= 5000 and sub_multiset(got, want, rel)  # sorting split near-equal floats


def sub_multiset(part: list[tuple], whole: list[tuple], rel: float) -> bool:
    """Every row of ``part`` matched with its own row of ``whole`` (greedy, with tolerance)."""
    left = list(whole)
    for r in part:
        j = next((j for j, s in enumerate(left) if same_row(r, s, rel)), None)
        if j is None:
            return False
        left.pop(j)
    return True


# -- order ----------------------------------------------------------------------------------------
def _compare_values(a, b, rel: float, nulls_first: bool = False) -> int:
    if (a == b) if rel == 0 else same_value(a, b, rel):
        return 0
    if a is None:
        return -1 if nulls_first else 1  # NULLS LAST unless asked otherwise
    if b is None:
        return 1 if nulls_first else -1
    return -1 if a < b else 1


def order_comparator(order: list[tuple[int, bool]], rel: float, nulls: dict[int, str] | None = None):
    """cmp(row, row) for ORDER BY ``order`` ((1-based position, descending) pairs); ``nulls``
    maps a position to "FIRST" where it says NULLS FIRST."""
    nulls = nulls or {}

    def cmp(r: tuple, s: tuple) -> int:
        for pos, desc in order:
            a, b = r[pos - 1], s[pos - 1]
            c = _compare_values(a, b, rel, nulls.get(pos) == "FIRST")
            if c and desc and a is not None and b is not None:
                c = -c
            if c:
                return c
        return 0
    return cmp


def compare(query: Query, got: list[tuple], want: list[tuple], want_unlimited: list[tuple] | None,
            ) -> str | None:
    """None when minidb's ``got`` is a right answer, else why not (one line)."""
    rel = 1e-6 if query.traits & {"group_by", "scalar_aggregate", "arithmetic"} else 1e-9
    if got and want and len(got[0]) != len(want[0]):
        return f"{len(got[0])} columns instead of {len(want[0])}"
    if not query.order:
        return None if same_multiset(got, want, rel) else "different rows"
    exact = order_comparator(query.order, 0, query.nulls)  # minidb's rows against each other: exact
    if any(exact(got[j], got[j + 1]) > 0 for j in range(len(got) - 1)):
        return "rows not in ORDER BY order"
    cmp = order_comparator(query.order, rel, query.nulls)  # minidb's rows against DuckDB's: with tolerance
    if query.limit is None:
        return None if same_multiset(got, want, rel) else "different rows"
    if len(got) != len(want):
        return f"{len(got)} rows instead of {len(want)} under LIMIT {query.limit}"
    if not got:
        return None
    full = sorted(want_unlimited or want, key=cmp_to_key(cmp))
    last = got[-1]
    before = [r for r in full if cmp(r, last) < 0]
    ties = [r for r in full if cmp(r, last) == 0]
    got_before = [r for r in got if cmp(r, last) < 0]
    got_ties = [r for r in got if cmp(r, last) == 0]
    if not same_multiset(got_before, before, rel) or not sub_multiset(got_ties, ties, rel):
        return f"not the first {query.limit} rows in ORDER BY order"
    return None
