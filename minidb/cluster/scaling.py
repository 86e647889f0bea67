"""Speedup and batch scaleup of a query over several cluster sizes, on either clock.

The two measures are Tandem's (Englert, Gray, Kocher, Shah 1989, "A Benchmark of NonStop SQL
Release 2 Demonstrating Near-Linear Speedup and Scaleup on Large Databases", Tandem Technical
Report 89.4, section "The Uses of Parallelism: Speedup and Scaleup")::

    Speedup      = OldElapsedTime / NewElapsedTime    the same problem, a bigger system
    BatchScaleup = NewElapsedTime / OldElapsedTime    the problem grows with the system

"Old" is the first configuration given, "new" each of the others. Ideal speedup grows in
proportion to the system (twice the nodes, half the time); ideal batch scaleup stays at 1 (twice
the nodes finish twice the problem in the same time), and values above 1 mean the bigger job took
longer. Gamma's speedup curves (DeWitt et al. 1988, Section 5.2.1, Figures 3 and 5) use the same
ratio against the one-node time.

Both helpers take the query and a ``make_db`` callable. For each configuration they call
``make_db`` to build and load a fresh ``ParallelDatabase``, run the query on it, close it, and
only then build the next one, so one configuration's data is in memory at a time. ``speedup``
also takes several queries at once (a dict ``{label: query}``) and runs them all on each
configuration, so each configuration is loaded only once. ``clock`` picks which elapsed time
the ratios use:

* ``"modeled"``: ``ParallelResult.modeled_s``, the seconds the hardware profile the database was
  opened with (``connect(..., profile="gamma")``) would have needed for the work the nodes
  counted. It does not depend on the machine running the test.
* ``"wall"``: ``ParallelResult.wall_s``, the seconds this run really took.

A statement that changes the database (``CREATE TABLE ... AS``) can run once per
configuration only: keep ``repeat=1``, or pass a callable that drops what it made.

Every row carries both clocks (``modeled_s`` is None without a profile), so a caller can show
them side by side.

``speedup`` also checks that every configuration returned the same rows (compared as sorted
multisets of tuples, so the order in which nodes answered does not matter) and raises a
``MinidbError`` naming the two configurations when they differ: a speedup of a wrong answer is
meaningless. ``scaleup`` cannot check that (the answer grows with the problem); it only reports
the row counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from minidb.errors import MinidbError

CLOCKS = ("modeled", "wall")

Query = str | Callable[[Any], Any]
"""An SQL string run with ``db.sql``, or a callable ``query(db) -> ParallelResult`` (for hints,
or for a statement that needs something done first)."""


def speedup(query: Query | dict[str, Query], node_counts: Sequence[int],
            make_db: Callable[[int], Any], clock: str = "modeled", repeat: int = 1,
            rows: int | None = None) -> list[dict]:
    """Tandem's Speedup (old elapsed / new elapsed) of ``query`` on each of ``node_counts``.

    ``make_db(nodes)`` returns a loaded ``ParallelDatabase`` holding the same data for every node
    count (the helper closes it). ``query`` may also be a dict ``{label: query}``: each
    configuration is then built once and every query runs on it, and each row names its query
    (``query`` key); ratios and the rows check are per query. Each query runs ``repeat`` times
    per configuration: ``wall_s`` is the best of them and ``modeled_s`` the first run's (the
    model prices counted work, which should not change between runs). ``rows``, the size of the
    problem, only labels the output. Returns one dict per configuration (and query): ``nodes``,
    ``rows``, ``result_rows``, ``elapsed_s``, ``clock``, ``speedup`` (against the first
    configuration), ``ideal`` (``nodes / first nodes``), ``wall_s`` and ``modeled_s``.
    """
    _check_clock(clock)
    counts = _check_nodes(node_counts, "node_counts")
    _check_repeat(repeat)
    queries = _check_queries(query)
    per_query: dict[str, list[dict]] = {label: [] for label in queries}
    reference: dict[str, tuple[str, pa.Table]] = {}
    for i, nodes in enumerate(counts):
        label = f"configuration {i + 1} (nodes={nodes})"
        measured = _measure(queries, lambda n=nodes: make_db(n), repeat, label)
        for q, (wall_s, modeled_s, result) in measured.items():
            where = label if len(queries) == 1 else f"{label} for query {q!r}"
            table = _sorted_rows(result, where)
            if q not in reference:
                reference[q] = (label, table)
            else:
                _check_same_rows(reference[q], (label, table), q if len(queries) > 1 else None)
            per_query[q].append({"query": q, "nodes": nodes, "rows": rows,
                                 "result_rows": table.num_rows,
                                 "elapsed_s": _pick(clock, wall_s, modeled_s, where),
                                 "clock": clock, "wall_s": wall_s, "modeled_s": modeled_s})
    out = []
    for q_rows in per_query.values():
        base, first_nodes = q_rows[0]["elapsed_s"], q_rows[0]["nodes"]
        for row in q_rows:
            row["speedup"] = _ratio(base, row["elapsed_s"])
            row["ideal"] = row["nodes"] / first_nodes
            out.append(_ordered(row, "speedup", with_query=isinstance(query, dict)))
    return out


def scaleup(query_for_size: Callable[[int], Query], configs: Sequence[tuple[int, int]],
            make_db: Callable[[int, int], Any], clock: str = "modeled",
            repeat: int = 1) -> list[dict]:
    """Tandem's BatchScaleup (new elapsed / old elapsed) over ``configs``, pairs ``(nodes, rows)``
    in which the problem grows with the system.

    ``make_db(nodes, rows)`` returns a loaded ``ParallelDatabase`` holding a problem of ``rows``
    tuples on ``nodes`` nodes; ``query_for_size(rows)`` returns the query for that size (a 1%
    selection selects 1% of each size). Returns one dict per configuration: ``nodes``, ``rows``,
    ``result_rows``, ``elapsed_s``, ``clock``, ``scaleup`` (against the first configuration),
    ``ideal`` (always 1.0), ``wall_s`` and ``modeled_s``. Timing as in ``speedup``.
    """
    _check_clock(clock)
    _check_repeat(repeat)
    pairs = list(configs)
    if not pairs:
        raise MinidbError("configs is empty; give at least one (nodes, rows) pair")
    for pair in pairs:
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise MinidbError(f"each config must be a (nodes, rows) pair, not {pair!r}")
    _check_nodes([p[0] for p in pairs], "the nodes of configs")
    _check_nodes([p[1] for p in pairs], "the rows of configs")
    out: list[dict] = []
    for i, (nodes, size) in enumerate(pairs):
        label = f"configuration {i + 1} (nodes={nodes}, rows={size})"
        measured = _measure({"q": query_for_size(size)}, lambda n=nodes, s=size: make_db(n, s),
                            repeat, label)
        wall_s, modeled_s, result = measured["q"]
        out.append({"nodes": nodes, "rows": size, "result_rows": _result_rows(result),
                    "elapsed_s": _pick(clock, wall_s, modeled_s, label), "clock": clock,
                    "wall_s": wall_s, "modeled_s": modeled_s})
    base = out[0]["elapsed_s"]
    for row in out:
        row["scaleup"] = _ratio(row["elapsed_s"], base)
        row["ideal"] = 1.0
    return [_ordered(row, "scaleup") for row in out]


def format_rows(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """A fixed-width text table of tidy rows (the keys of the first row, or ``columns``)."""
    if not rows:
        return "(no rows)"
    cols = list(columns) if columns is not None else list(rows[0])
    cells = [[_cell(row.get(c)) for c in cols] for row in rows]
    widths = [max(len(c), *(len(r[j]) for r in cells)) for j, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


# -- internals -------------------------------------------------------------------------------------
def _measure(queries: dict[str, Query], build: Callable[[], Any], repeat: int,
             label: str) -> dict[str, tuple[float, float | None, Any]]:
    """Build one configuration, run each query ``repeat`` times, close it:
    ``{label: (best wall_s, first run's modeled_s, first run's result)}``."""
    db = build()
    if db is None or not hasattr(db, "sql"):
        raise MinidbError(f"make_db returned {type(db).__name__} for {label}; "
                          "it must return a loaded ParallelDatabase")
    try:
        out = {}
        for q, query in queries.items():
            best, first = math.inf, None
            for _ in range(repeat):
                result = query(db) if callable(query) else db.sql(query)
                best = min(best, float(result.wall_s))
                first = result if first is None else first
            out[q] = (best, first.modeled_s, first)
        return out
    finally:
        close = getattr(db, "close", None)
        if close is not None:
            close()


def _pick(clock: str, wall_s: float, modeled_s: float | None, label: str) -> float:
    if clock == "wall":
        return wall_s
    if modeled_s is None:
        raise MinidbError(f"clock='modeled' but {label} has no modeled time; open the database "
                          "with a hardware profile (connect(..., profile='gamma')) or use clock='wall'")
    return float(modeled_s)


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return math.inf if num else 1.0
    return num / den


def _ordered(row: dict, measure: str, with_query: bool = False) -> dict:
    keys = ["query"] * with_query + ["nodes", "rows", "result_rows", "elapsed_s", "clock", measure, "ideal",
            "wall_s", "modeled_s"]
    return {k: row[k] for k in keys}


def _result_rows(result) -> int:
    rows = getattr(result, "rows", None)
    return int(rows) if rows is not None else _sorted_rows(result, "").num_rows


def _sorted_rows(result, label: str) -> pa.Table:
    """The result as an Arrow table in a canonical order: sorted on every column, so two results
    are equal as multisets exactly when these tables are equal."""
    try:
        table = result.to_arrow()
    except AttributeError:
        raise MinidbError(f"the query of {label} returned {type(result).__name__}, "
                          "not a result with to_arrow()") from None
    if table.num_columns == 0 or table.num_rows < 2:
        return table
    try:
        return table.sort_by([(c, "ascending") for c in table.column_names])
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # a type Arrow cannot sort: Python
        rows = sorted(zip(*(table[c].to_pylist() for c in table.column_names), strict=True),
                      key=repr)
        return pa.Table.from_pylist([dict(zip(table.column_names, r, strict=True)) for r in rows],
                                    schema=table.schema)


def _check_same_rows(a: tuple[str, pa.Table], b: tuple[str, pa.Table],
                     query: str | None = None) -> None:
    (la, ta), (lb, tb) = a, b
    if query is not None:
        lb = f"{lb} (query {query!r})"
    if ta.column_names != tb.column_names:
        raise MinidbError(f"results differ between {la} and {lb}: columns {ta.column_names} "
                          f"vs {tb.column_names}")
    if ta.num_rows != tb.num_rows:
        raise MinidbError(f"results differ between {la} and {lb}: {ta.num_rows} rows vs "
                          f"{tb.num_rows} rows")
    if ta.schema != tb.schema:
        tb = tb.cast(ta.schema)
    if not ta.equals(tb):
        first = min(_first_difference(ta[c], tb[c]) for c in ta.column_names)
        raise MinidbError(f"results differ between {la} and {lb}: same row count "
                          f"({ta.num_rows}) but different rows, e.g. "
                          f"{_row(ta, first)} vs {_row(tb, first)}")


def _first_difference(a: pa.ChunkedArray, b: pa.ChunkedArray) -> int:
    differs = pc.fill_null(pc.not_equal(a, b), True)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    hits = pc.indices_nonzero(pc.and_not(differs, both_null))
    return hits[0].as_py() if len(hits) else len(a)


def _row(table: pa.Table, i: int) -> tuple:
    return tuple(table[c][i].as_py() for c in table.column_names)


def _check_queries(query) -> dict[str, Query]:
    queries = dict(query) if isinstance(query, dict) else {_label(query): query}
    if not queries:
        raise MinidbError("no query given; pass an SQL string, a callable or a dict of them")
    for label, q in queries.items():
        if not (isinstance(q, str) or callable(q)):
            raise MinidbError(f"query {label!r} must be an SQL string or a callable taking the "
                              f"database, not {type(q).__name__}")
    return queries


def _label(query) -> str:
    return query if isinstance(query, str) else getattr(query, "__name__", repr(query))


def _check_clock(clock: str) -> None:
    if clock not in CLOCKS:
        raise MinidbError(f"clock must be 'modeled' or 'wall', not {clock!r}")


def _check_repeat(repeat: int) -> None:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise MinidbError(f"repeat must be a positive whole number, not {repeat!r}")


def _check_nodes(values: Sequence[int], what: str) -> list[int]:
    values = list(values)
    if not values:
        raise MinidbError(f"{what} is empty; give at least one")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise MinidbError(f"{what} must be positive whole numbers, not {v!r}")
    return values


def _cell(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:.3f}" if abs(v) >= 0.001 or v == 0 else f"{v:.2e}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


__all__ = ["CLOCKS", "format_rows", "scaleup", "speedup"]
