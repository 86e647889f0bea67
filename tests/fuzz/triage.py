"""Triage: which known class of bug a failure most likely belongs to.

The classes are the ones issue 15 lists (and the fuzzer found). Each has a short label and a test
on the failing execution: its outcome, the traits its query was generated with, the
configuration, the error message or the two answers. The first class whose test matches names the
failure; anything else is ``new: ...``, which is what to look at first. The labels are hints for
a person reading the report, not proofs: a shrunk reproduction is the evidence.

When a class is fixed, its failures disappear from the summary; its entry can stay (it costs
nothing) or be removed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .configs import Config
from .grammar import Query


@dataclass
class Failure:
    """One execution that was not ``ok`` (nor ``oracle_error``)."""

    outcome: str  # "wrong", "raw_exception" or "refused"
    config: Config
    tables: list  # the TableSpecs it needs
    query: Query | None  # None: loading a table failed
    detail: str  # why it is wrong, or the exception's type and message
    got: list | None = None
    want: list | None = None
    where: str = ""  # "SEED:KIND:ROUND:QUERY" for --replay
    label: str = ""
    features: frozenset[str] = frozenset()  # the feature flags of the run (for --replay)

    def replay_command(self) -> str:
        flags = ",".join(sorted(self.features)) or "none"
        return f"python -m tests.fuzz --replay {self.where} --features {flags}"


def _traits(f: Failure) -> set[str]:
    return f.query.traits if f.query is not None else set()


def _multi_node(f: Failure) -> bool:
    return f.config.kind != "single" and f.config.nodes >= 2


def _has_hash_table(f: Failure) -> bool:
    return any(d.organization == "hash" for d in f.config.designs.values())


def _empty_aggregate(f: Failure, how: str) -> bool:
    """A scalar aggregate whose SQL answer is one row with NULLs (no input rows), where minidb
    gives ``how``: "no row", "NaN" or "a value" (0 for SUM)."""
    if f.outcome != "wrong" or "scalar_aggregate" not in _traits(f) or not f.want \
            or len(f.want) != 1 or f.got is None:
        return False
    if any(w not in (None, 0) for w in f.want[0]):
        return False  # SQL's answer is not that of an aggregate over no rows
    if how == "no row":
        return not f.got
    if not f.got:
        return False
    pairs = list(zip(f.want[0], f.got[0], strict=False))
    if how == "NaN":
        return any(w is None and isinstance(g, float) and g != g for w, g in pairs)
    return any(w is None and g is not None for w, g in pairs)


def _nan_for_null(f: Failure) -> bool:
    """minidb has NaN where SQL has NULL, in rows that otherwise line up."""
    if f.outcome != "wrong" or not f.got or len(f.got) != len(f.want or []):
        return False
    for r, s in zip(f.got, f.want, strict=True):
        if any(w is None and isinstance(g, float) and g != g for g, w in zip(r, s, strict=False)):
            return True
    return False


def _repeated_subquery(f: Failure) -> bool:
    subqueries = re.findall(r"\(SELECT [^()]*\([^()]*\)[^()]*\)", f.query.sql()) if f.query else []
    return len(subqueries) != len(set(subqueries))


def _overflow(f: Failure) -> bool:
    """A SUM / AVG over huge int64 values where minidb's number differs from SQL's: the signature
    of a 64-bit sum that wrapped around."""
    if "sum_wide_int64" not in _traits(f) or not f.got or len(f.got) != len(f.want or []):
        return False
    for r, s in zip(sorted(f.got, key=repr), sorted(f.want, key=repr), strict=True):
        for g, w in zip(r, s, strict=False):
            if isinstance(w, int | float) and isinstance(g, int | float) and not isinstance(w, bool):
                if g != w and max(abs(g), abs(w)) >= 1e16:
                    return True
    return False


KNOWN: list[tuple[str, Callable[[Failure], bool]]] = [
    ("scalar aggregate over no rows gives no row (SQL: one row, NULL / COUNT 0)",
     lambda f: _empty_aggregate(f, "no row")),
    ("AVG over no rows gives NaN instead of NULL (also in a scalar subquery)",
     lambda f: _empty_aggregate(f, "NaN") or _nan_for_null(f)),
    ("scalar aggregate over no rows gives a value (SUM 0) instead of NULL",
     lambda f: _empty_aggregate(f, "a value")),
    ("SUM / AVG of int64 wraps around instead of widening",
     lambda f: f.outcome == "wrong" and _overflow(f)),
    ("AVG of large int64 values summed in floating point (exact in SQL)",
     lambda f: f.outcome == "wrong" and "sum_wide_int64" in _traits(f) and "AVG(" in f.query.sql()),
    ("parallel join on keys of different types drops matches",
     lambda f: f.outcome == "wrong" and "join_mixed_types" in _traits(f) and _multi_node(f)),
    ("float column against an integer literal with < > <= >= (filter dropped)",
     lambda f: f.outcome == "wrong" and "float_col_int_literal_range" in _traits(f)),
    ("hash-organized table: key = non-integral literal finds a row",
     lambda f: f.outcome == "wrong" and "int_col_fractional_literal" in _traits(f)
     and _has_hash_table(f)),
    ("int column against a fractional literal",
     lambda f: f.outcome == "wrong" and "int_col_fractional_literal" in _traits(f)),
    ("float column against an integer literal",
     lambda f: f.outcome == "wrong" and "float_col_int_literal" in _traits(f)),
    ("the same scalar subquery twice in one query is refused",
     lambda f: f.outcome == "refused" and _repeated_subquery(f)),
    ("needs NULLs: a scalar subquery over no rows is refused (its value is NULL)",
     lambda f: f.outcome == "refused" and "returned no row" in f.detail),
    ("range_uniform on a text column refused ('is numeric')",
     lambda f: f.outcome == "refused" and "numeric" in f.detail
     and "range_uniform" in f.config.describe()),
    ("range_uniform table loaded empty refused ('no boundaries')",
     lambda f: f.outcome == "refused" and "boundaries" in f.detail
     and "range_uniform" in f.config.describe()),
    ("literal -9223372036854775808 refused",
     lambda f: f.outcome == "refused" and "int64_min_literal" in _traits(f)
     and "64 bits" in f.detail),
    ("hash join fails with MemoryBudgetError instead of spilling",
     lambda f: f.outcome == "refused" and f.detail.startswith("MemoryBudgetError")),
    ("non-ASCII text crashes",
     lambda f: f.outcome == "raw_exception" and "utf8" in f.features
     and ("Unicode" in f.detail or "storage/schema.py" in f.detail)),
]


def classify(f: Failure) -> str:
    for label, test in KNOWN:
        if test(f):
            return label
    return f"new: {f.outcome}: {_normalize(f.detail)[:100]}"


def _normalize(detail: str) -> str:
    """The message with names and numbers blanked, so failures of one kind count together."""
    detail = re.sub(r"\(.*\)", "(…)", detail)  # SQL quoted in the message
    detail = re.sub(r"'[^']*'", "'…'", detail)
    detail = re.sub(r"\bcolumn [\w.]+", "column …", detail)
    return re.sub(r"\d+", "N", detail)
