"""Scalar expressions over batches: column references, constants, arithmetic, comparisons.

The SQL front door turns a WHERE clause or a SELECT list into a small tree of these nodes; the
filter and project iterators evaluate a tree on a whole batch at once, so ``unique2 < 100`` is
one numpy comparison over a column, not a Python call per tuple (Gamma compiled its predicates to
machine code for the same reason: predicate evaluation is on every tuple's path).

Text values are compared as the bytes stored in ``char(n)`` columns (NUL padding ignored).

NaN is a value, ordered as DuckDB orders it (``compare``): NaN equals NaN and is greater than
every other number, +inf included, so ``f = f`` keeps NaN rows and ``f > 100`` finds them. The
work is done only where a float operand actually holds a NaN (``has_nan``).

NULLs and three-valued logic. Each node also answers ``null_mask(batch)``: which of its values
are NULL (None: none can be). ``evaluate`` still returns a value in every position (what it holds
at a NULL position does not matter), so numpy works on whole columns and the NULLs travel beside
them. A column reads its bits from the batch's null bitmap (see ``storage/schema.py``); the NULL
literal is NULL everywhere; comparisons, arithmetic and BETWEEN are *strict* (NULL if any input is
NULL, the default); AND, OR and NOT follow SQL's three-valued logic (FALSE AND NULL is FALSE,
TRUE OR NULL is TRUE, NOT NULL is NULL); ``IS [NOT] NULL`` is never NULL. A condition keeps a
tuple only where it is TRUE, not NULL: ``is_true(pred, batch)``.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, fields
from functools import cache

import numpy as np

from minidb.errors import DivisionByZeroError, NumericOverflowError, SchemaError
from minidb.storage.schema import Column, Schema, char_column, float_column, int_column, null_mask


class Expr:
    """Base class: ``evaluate(batch)`` returns a numpy array with one value per tuple."""

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def children(self) -> list[Expr]:
        """The sub-expressions of this node: its dataclass fields that are ``Expr`` (or tuples)."""
        out: list[Expr] = []
        for name in _field_names(type(self)):
            value = getattr(self, name)
            if isinstance(value, Expr):
                out.append(value)
            elif isinstance(value, tuple):
                out.extend(v for v in value if isinstance(v, Expr))
        return out

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        """True where this expression's value is NULL; None when no value can be NULL.

        The default is a *strict* operator: NULL wherever any input is NULL.
        """
        return any_null([c.null_mask(batch) for c in self.children()], len(batch))

    def nullable(self, schema: Schema) -> bool:
        """Whether this expression can be NULL on tuples of ``schema`` (strict by default)."""
        return any(c.nullable(schema) for c in self.children())

    def columns(self) -> set[str]:
        """Names of the columns this expression reads."""
        return set().union(*(c.columns() for c in self.children()))

    def output_column(self, name: str, schema: Schema) -> Column:
        """The layout of this expression's values when stored as column ``name`` (its
        ``nullable`` says whether a value can be NULL; ``Project`` also asks ``nullable``)."""
        raise NotImplementedError


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    """The dataclass fields of an expression class (worked out once per class: a scan asks for
    its predicate's columns and NULLs once per cluster)."""
    return tuple(f.name for f in fields(cls)) if hasattr(cls, "__dataclass_fields__") else ()


def any_null(masks: list[np.ndarray | None], rows: int) -> np.ndarray | None:
    """The OR of some null masks (None entries mean "no NULL"); None when all are None."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    out = np.zeros(rows, dtype=bool)
    for m in present:
        out |= m
    return out


def is_true(pred: Expr, batch: np.ndarray) -> np.ndarray:
    """Where ``pred`` is TRUE (not FALSE, not NULL): the tuples a WHERE or ON clause keeps."""
    values = np.asarray(pred.evaluate(batch))
    if values.ndim == 0:
        values = np.broadcast_to(values, (len(batch),))
    unknown = pred.null_mask(batch)
    return values if unknown is None or values.dtype != np.bool_ else values & ~unknown


@dataclass(frozen=True)
class Col(Expr):
    name: str

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        return batch[self.name]

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        return null_mask(batch, self.name) if hasattr(batch, "dtype") else None

    def nullable(self, schema: Schema) -> bool:
        return schema.column(self.name).nullable

    def columns(self) -> set[str]:
        return {self.name}

    def output_column(self, name: str, schema: Schema) -> Column:
        c = schema.column(self.name)
        return Column(name, c.kind, c.width, c.nullable)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const(Expr):
    """A constant; ``Const(None)`` is the NULL literal, like ``Null()``."""

    value: int | float | str | bool | None

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        if self.value is None:
            return np.zeros(len(batch), dtype=np.int64)
        return np.full(len(batch), self.numpy_value)

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        return None if self.value is not None else np.ones(len(batch), dtype=bool)

    def nullable(self, schema: Schema) -> bool:
        return self.value is None

    @property
    def numpy_value(self):
        return self.value.encode() if isinstance(self.value, str) else self.value

    def output_column(self, name: str, schema: Schema) -> Column:
        if self.value is None:
            return int_column(name, "int32").with_nullable(True)
        if isinstance(self.value, str):
            return char_column(name, max(1, len(self.value.encode())))
        if isinstance(self.value, float):
            return float_column(name)
        return int_column(name, "int64")

    def __str__(self) -> str:
        return repr(self.value) if isinstance(self.value, str) else str(self.value)


@dataclass(frozen=True)
class Null(Expr):
    """The NULL literal: NULL in every row (its values are zeros, never looked at)."""

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        return np.zeros(len(batch), dtype=np.int64)

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        return np.ones(len(batch), dtype=bool)

    def nullable(self, schema: Schema) -> bool:
        return True

    def output_column(self, name: str, schema: Schema) -> Column:
        return int_column(name, "int32").with_nullable(True)

    def __str__(self) -> str:
        return "NULL"


@dataclass(frozen=True)
class IsNull(Expr):
    """``part IS NULL`` (or ``IS NOT NULL`` when ``negated``): TRUE or FALSE, never NULL."""

    part: Expr
    negated: bool = False

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        mask = self.part.null_mask(batch)
        mask = np.zeros(len(batch), dtype=bool) if mask is None else mask
        return ~mask if self.negated else mask

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        return None

    def nullable(self, schema: Schema) -> bool:
        return False

    def __str__(self) -> str:
        return f"{self.part} IS {'NOT ' if self.negated else ''}NULL"


def _all_null(exprs: tuple[Expr, ...], rows: int, dtype) -> np.ndarray | None:
    """Zeros when some input is the NULL literal (a strict operator's answer is then NULL)."""
    null_literal = any(isinstance(e, Null) or (isinstance(e, Const) and e.value is None) for e in exprs)
    return np.zeros(rows, dtype=dtype) if null_literal else None


_COMPARE = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}
_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "%": np.fmod}  # fmod truncates toward zero, as SQL does


def has_nan(values) -> bool:
    """Whether ``values`` (an array or a scalar) is floating point and holds a NaN: a max (NaN
    propagates), so an integer or text operand, or a float column without NaN, costs next to
    nothing."""
    a = np.asarray(values)
    return a.dtype.kind == "f" and a.size > 0 and bool(np.isnan(a.max()))


def compare(op: str, left, right):
    """``left op right`` (op one of ``= <> < <= > >=``) with DuckDB's NaN ordering: NaN equals
    NaN and is greater than every other number (``NaN > inf``, ``NaN < x`` is FALSE), where
    IEEE, and numpy, make every comparison with NaN FALSE but ``<>``. Only an operand that
    holds a NaN costs more than numpy's comparison."""
    result = _COMPARE[op](left, right)
    left_nan, right_nan = has_nan(left), has_nan(right)
    if not (left_nan or right_nan):
        return result
    ln = np.isnan(left) if left_nan else np.False_
    rn = np.isnan(right) if right_nan else np.False_
    if op == "=":
        return result | (ln & rn)
    if op == "<>":
        return result & ~(ln & rn)
    if op == "<":
        return result | (~ln & rn)
    if op == "<=":
        return result | rn
    if op == ">":
        return result | (ln & ~rn)
    return result | ln  # ">="


def _operand(expr: Expr, batch: np.ndarray):
    """Constants stay scalars so numpy broadcasts them instead of building full columns."""
    return expr.numpy_value if isinstance(expr, Const) else expr.evaluate(batch)


@dataclass(frozen=True)
class Compare(Expr):
    op: str
    left: Expr
    right: Expr

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        if (nulls := _all_null((self.left, self.right), len(batch), bool)) is not None:
            return nulls
        result = compare(self.op, _operand(self.left, batch), _operand(self.right, batch))
        return np.broadcast_to(result, (len(batch),)) if np.ndim(result) == 0 else result

    def columns(self) -> set[str]:
        return self.left.columns() | self.right.columns()

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class Between(Expr):
    value: Expr
    low: Expr
    high: Expr

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        if (nulls := _all_null((self.value, self.low, self.high), len(batch), bool)) is not None:
            return nulls
        v = self.value.evaluate(batch)  # NaN ordered as in DuckDB (``compare``)
        low, high = _operand(self.low, batch), _operand(self.high, batch)
        return compare(">=", v, low) & compare("<=", v, high)

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        """``v BETWEEN lo AND hi`` is ``v >= lo AND v <= hi`` with three-valued AND: a NULL
        bound makes it NULL only where the other half is not FALSE, so ``5 BETWEEN 7 AND NULL``
        is FALSE (and ``NOT`` of it TRUE), as in DuckDB. Not a strict operator, then."""
        if self.low.null_mask(batch) is None and self.high.null_mask(batch) is None:
            return super().null_mask(batch)  # only the value can be NULL: strict is right
        halves = (Compare(">=", self.value, self.low), Compare("<=", self.value, self.high))
        unknown = _connective(halves, batch, decided_by=False)[1]
        return unknown if unknown.any() else None

    def columns(self) -> set[str]:
        return self.value.columns() | self.low.columns() | self.high.columns()

    def __str__(self) -> str:
        return f"{self.value} BETWEEN {self.low} AND {self.high}"


@dataclass(frozen=True)
class And(Expr):
    """AND with SQL's three-valued logic, evaluated left to right like a short circuit: a part
    is evaluated only on the tuples that no earlier part has made FALSE, so
    ``x <> 0 AND 7 % x = 1`` never divides by zero (DuckDB answers it too)."""

    parts: tuple[Expr, ...]

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        return _connective(self.parts, batch, decided_by=False)[0]

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        unknown = _connective(self.parts, batch, decided_by=False)[1]
        return unknown if unknown.any() else None

    def columns(self) -> set[str]:
        return set().union(*(p.columns() for p in self.parts))

    def __str__(self) -> str:
        return " AND ".join(f"({p})" for p in self.parts)


@dataclass(frozen=True)
class Or(Expr):
    """OR with three-valued logic; a part is evaluated only where no earlier part is TRUE."""

    parts: tuple[Expr, ...]

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        return _connective(self.parts, batch, decided_by=True)[0]

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        unknown = _connective(self.parts, batch, decided_by=True)[1]
        return unknown if unknown.any() else None

    def columns(self) -> set[str]:
        return set().union(*(p.columns() for p in self.parts))

    def __str__(self) -> str:
        return " OR ".join(f"({p})" for p in self.parts)


def _connective(parts: tuple[Expr, ...], batch: np.ndarray, decided_by: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """(where TRUE, where NULL) for AND (``decided_by=False``: one FALSE part decides) or OR
    (``decided_by=True``: one TRUE part decides). Each part is evaluated only on the tuples the
    earlier parts left undecided; a tuple with no deciding part is NULL if some part was NULL."""
    n = len(batch)
    decided = np.zeros(n, dtype=bool)
    unknown = np.zeros(n, dtype=bool)
    for p in parts:
        open_rows = ~decided
        if not open_rows.any():
            break
        if open_rows.all():
            sub = batch
        else:  # a page scan evaluates on a dict of columns (``_Columns``), else a batch
            sub = batch.select_rows(open_rows) if isinstance(batch, dict) else batch[open_rows]
        true = is_true(p, sub)
        null = _not_null(p, sub) ^ True
        decides = true if decided_by else ~true & ~null
        decided[open_rows] |= decides
        unknown[open_rows] |= null
    unknown &= ~decided
    true = decided if decided_by else ~decided & ~unknown
    return true, unknown


@dataclass(frozen=True)
class Not(Expr):
    part: Expr

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        return ~is_true(self.part, batch) & _not_null(self.part, batch)

    def columns(self) -> set[str]:
        return self.part.columns()

    def __str__(self) -> str:
        return f"NOT ({self.part})"


@dataclass(frozen=True)
class Arith(Expr):
    op: str
    left: Expr
    right: Expr
    # The scale of the exact DECIMAL DuckDB computes when a literal with a point is involved
    # (k * 0.1 + 0.2 has scale 1); None for integers and DOUBLEs. minidb computes in floats and
    # rounds the result to that many places, so k * 0.1 + 0.2 = 0.3 holds for k = 1 as in DuckDB
    # (the float 0.1 * 1 + 0.2 is 0.30000000000000004).
    scale: int | None = None

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        if (nulls := _all_null((self.left, self.right), len(batch), np.int64)) is not None:
            return nulls
        left, right = _operand(self.left, batch), _operand(self.right, batch)
        if self.op in ("+", "-", "*", "%"):
            left = np.asarray(left).astype(np.int64) if np.asarray(left).dtype.kind == "i" else left
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            result = _ARITH[self.op](left, right)
        if self.op in ("+", "-", "*") and np.asarray(result).dtype.kind == "i":
            check_int_overflow(self.op, left, right, result, self)
        if self.op == "%" and (np.asarray(result).dtype.kind == "i" or _exact(self, batch)):
            check_no_zero_divisor(right, self, _operand(self.left, batch), self._nulls_of(batch))
        if self.scale is not None and np.asarray(result).dtype.kind == "f":
            if self.op == "%":
                result = decimal_mod(left, right, result, self.scale)
            result = round_to_scale(np.asarray(result), self.scale)
        return np.broadcast_to(result, (len(batch),)).copy() if np.ndim(result) == 0 else result

    def _nulls_of(self, batch: np.ndarray) -> np.ndarray | None:
        return super().null_mask(batch)

    def columns(self) -> set[str]:
        return self.left.columns() | self.right.columns()

    def output_column(self, name: str, schema: Schema) -> Column:
        kinds = {_kind(e, schema) for e in (self.left, self.right)}
        if "char" in kinds:
            raise SchemaError(f"cannot apply {self.op!r} to text in {self}")
        column = float_column(name) if self.op == "/" or "float64" in kinds else int_column(name, "int64")
        return column.with_nullable(self.nullable(schema))

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


def round_to_scale(values: np.ndarray, scale: int) -> np.ndarray:
    """``values`` rounded to ``scale`` decimal places: the double nearest each exact DECIMAL,
    where a float's error (a few units of its last bit) is far below half a unit of the last
    decimal place: below 2**48 units of that place. Beyond (and for inf and nan) a value is
    left as it is, as rounding could then move it a whole unit. A DECIMAL has no -0.0 (+ 0.0
    drops the sign that rounding -1e-17 leaves)."""
    rounded = np.round(values, scale) + 0.0
    return np.where(np.abs(values) < 2.0**48 / 10**scale, rounded, values)


def decimal_mod(left, right, result, scale: int) -> np.ndarray:
    """``left % right`` of two DECIMALs with ``scale`` places, exactly, as DuckDB computes it:
    in whole units of the last place. The float fmod is off by a whole divisor where the
    divisor is not exact in binary (0.3 % 0.05 gives 0.04999..., not 0). ``result`` (the float
    fmod) is kept beyond 2**48 units, where the units are not exact."""
    unit = 10.0**scale
    a = np.rint(np.asarray(left, dtype=np.float64) * unit)
    b = np.rint(np.asarray(right, dtype=np.float64) * unit)
    with np.errstate(invalid="ignore"):
        exact = np.fmod(a, b) / unit
    fits = (np.abs(a) < 2.0**48) & (np.abs(b) < 2.0**48)
    return np.where(fits, exact, result)


def _exact(e: Expr, batch: np.ndarray) -> bool:
    """Whether DuckDB computes ``e`` exactly, as an integer or a DECIMAL (a literal such as 2.5,
    and ``+ - * %`` of such values), rather than as a DOUBLE (a float column, ``/``): its
    ``x % 0`` raises on the former and gives nan on the latter."""
    if isinstance(e, Const):
        return True
    if isinstance(e, Arith):
        return e.op != "/" and _exact(e.left, batch) and _exact(e.right, batch)
    return np.asarray(e.evaluate(batch)).dtype.kind != "f"


def check_no_zero_divisor(divisor, expr: Expr, dividend, nulls: np.ndarray | None) -> None:
    """``x % 0`` over integers (or DECIMAL literals) is an error, as in DuckDB; ``x / 0`` is not:
    it gives inf or nan, IEEE's answer, as DuckDB's does, and so does ``x % 0`` when an operand
    is a DOUBLE (``_exact``). A row whose operands are NULL has no divisor to check."""
    zero, dividend = np.broadcast_arrays(np.atleast_1d(np.asarray(divisor) == 0),
                                         np.atleast_1d(dividend))
    if nulls is not None:
        zero = zero & ~nulls
    if zero.any():
        first = dividend[zero][0]
        raise DivisionByZeroError(f"division by zero in {expr} (for {first} % 0); "
                                  "filter the zero divisors out first")


def check_int_overflow(op: str, left, right, result, expr: Expr) -> None:
    """Raise ``NumericOverflowError`` where an int64 ``+ - *`` wrapped around.

    numpy integers wrap silently (2**62 * 4 gives 0); SQL raises instead. The same operation in
    floating point is a cheap witness: wherever its magnitude comes near 2**63 the exact result
    is computed with Python integers, and a result outside int64 is an error, never a value.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        approx = _ARITH[op](np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64))
    near = np.abs(np.atleast_1d(approx)) >= 2.0**62
    if not near.any():
        return
    lefts = np.broadcast_to(np.atleast_1d(left), near.shape)[near]
    rights = np.broadcast_to(np.atleast_1d(right), near.shape)[near]
    exact = {"+": operator.add, "-": operator.sub, "*": operator.mul}[op]
    for a, b in zip(lefts.tolist(), rights.tolist(), strict=True):
        value = exact(int(a), int(b))
        if not -(2**63) <= value < 2**63:
            raise NumericOverflowError(
                f"{expr} gives {value} for {a} {op} {b}, which does not fit in a 64-bit integer; "
                "minidb does not wrap around (use a float, e.g. x * 1.0)")


def _not_null(e: Expr, batch: np.ndarray) -> np.ndarray:
    mask = e.null_mask(batch)
    return np.ones(len(batch), dtype=bool) if mask is None else ~mask


def _kind(e: Expr, schema: Schema) -> str:
    return e.output_column("_", schema).kind


def conjuncts(pred: Expr | None) -> list[Expr]:
    """Split a predicate into its top-level AND terms (empty list for no predicate)."""
    if pred is None:
        return []
    if isinstance(pred, And):
        return [t for p in pred.parts for t in conjuncts(p)]
    return [pred]


def conjunction(terms: list[Expr]) -> Expr | None:
    """The AND of ``terms`` (None when there are none)."""
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else And(tuple(terms))


def key_range(pred: Expr | None, column: str, integral: bool = False
              ) -> tuple[object, object, list[Expr]] | None:
    """The range ``[low, high]`` that ``pred``'s AND terms put on ``column``, if any.

    Returns ``(low, high, rest)`` where low / high are constants or None (unbounded) and ``rest``
    are the terms not used for the range (they still have to be applied as a filter); returns
    None when no term restricts ``column`` with a constant. Used by the planner to choose an index
    scan and by the parallel engine to prune partitions.

    How a bound is converted depends on the *column's* type, never on the literal's (this is the
    one place minidb writes the rule down):

    * an integer column (``integral=True``) takes exact inclusive integer bounds, whatever the
      literal: ``c < 5`` and ``c < 4.5`` give ``high = 4``, ``c > -2.5`` gives ``low = -2``,
      ``c = 5.5`` gives the empty range ``[6, 5]``; a float literal is compared as a double,
      as the scan's filter compares it, so above 2**53 the bounds take in every integer that
      rounds to it (``int_bound_of_double``); the term is fully used, no filter is left;
      a bound outside int64 is dropped (or makes the range empty) and infinite or NaN literals
      are left to the filter;
    * a float or text column keeps the literal as it is: ``=``, ``<=`` and ``>=`` are used
      exactly, while a strict ``<`` / ``>`` becomes an inclusive bound *and* its term stays in
      ``rest``, so ``f < 5`` on a float column reads ``f <= 5`` and filters ``f < 5`` (4.5 is
      kept, 5.0 dropped).
    """
    low = high = None
    rest: list[Expr] = []
    used = False

    def tighten(lo, hi):
        nonlocal low, high, used
        used = True
        if lo is not None:
            low = lo if low is None else max(low, lo, key=_nan_last)
        if hi is not None:
            high = hi if high is None else min(high, hi, key=_nan_last)

    for term in conjuncts(pred):
        bounds = _term_bounds(term, column)
        if bounds is None:
            rest.append(term)
            continue
        for op, value in bounds:
            if integral:
                converted = _integer_bound(op, value)
                if converted is None:  # inf or NaN: let the filter decide
                    rest.append(term)
                    break
                tighten(*converted)
            elif op in ("=", "<=", ">="):
                tighten(value if op != "<=" else None, value if op != ">=" else None)
            else:  # strict bound on a float or text column: read inclusively, keep the filter
                tighten(value if op == ">" else None, value if op == "<" else None)
                if not rest or rest[-1] is not term:
                    rest.append(term)
    return (low, high, rest) if used else None


def _nan_last(bound) -> tuple:
    """A bound as Python should compare it: a NaN (a subquery's answer can be one) after every
    number, as in DuckDB; Python's ``max(1, nan)`` would answer 1."""
    return (bound != bound, bound)


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
EMPTY_RANGE = (1, 0)  # low > high: no value qualifies


def _term_bounds(term: Expr, column: str) -> list[tuple[str, object]] | None:
    """``[(op, constant), ...]`` when ``term`` compares ``column`` with constants, else None."""
    if isinstance(term, Between) and term.value == Col(column) and isinstance(term.low, Const) \
            and isinstance(term.high, Const) and _is_bound(term.low) and _is_bound(term.high):
        return [(">=", term.low.value), ("<=", term.high.value)]
    if isinstance(term, Compare) and term.op in _FLIP:
        op, left, right = term.op, term.left, term.right
        if isinstance(left, Const) and right == Col(column):
            op, left, right = _FLIP[op], right, left
        if left == Col(column) and isinstance(right, Const) and _is_bound(right):
            return [(op, right.value)]
    return None


def _is_bound(c: Const) -> bool:
    return c.value is not None and not isinstance(c.value, bool)


def int_bound_of_double(x: float, op: str) -> int:
    """The integer bound equivalent to ``k op x`` for an integer ``k`` and a finite double ``x``,
    compared as SQL (DuckDB) and numpy compare an integer with a double: as the double nearest
    ``k``. ``op`` ``>=`` / ``>`` give the smallest such k, ``<=`` / ``<`` the largest.

    Up to 2**53 every integer is a double and this is ``ceil`` / ``floor``; above, several
    integers round to the same double (2**63 - 1 compares equal to 9.223372036854775808e18),
    so the answer is found by bisection within one unit in the last place of ``x``.
    """
    ceil, floor = math.ceil(x), math.floor(x)
    if abs(x) < 2.0**53 or abs(x) > 2.0**64:  # exact (beyond int64 the bound is dropped anyway)
        return {">=": ceil, ">": floor + 1, "<=": floor, "<": ceil - 1}[op]
    width = int(math.ulp(x)) + 2
    holds = {">=": lambda k: float(k) >= x, ">": lambda k: float(k) > x,
             "<=": lambda k: float(k) <= x, "<": lambda k: float(k) < x}[op]
    if op in (">=", ">"):  # holds is false below the answer, true from it on
        lo, hi = floor - width, ceil + width  # holds(lo) false, holds(hi) true
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if holds(mid) else (mid, hi)
        return hi
    lo, hi = floor - width, ceil + width  # holds(lo) true, holds(hi) false
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return lo


def _integer_bound(op: str, value) -> tuple[object, object] | None:
    """``(low, high)`` for ``column op value`` on an integer column (see ``key_range``)."""
    if isinstance(value, str):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        low = int_bound_of_double(value, ">" if op == ">" else ">=") if op in ("=", ">=", ">") else None
        high = int_bound_of_double(value, "<" if op == "<" else "<=") if op in ("=", "<=", "<") else None
    else:
        value = int(value)
        low = {"=": value, ">=": value, ">": value + 1}.get(op)
        high = {"=": value, "<=": value, "<": value - 1}.get(op)
    if (low is not None and low > _INT64_MAX) or (high is not None and high < _INT64_MIN):
        return EMPTY_RANGE
    if low is not None and low < _INT64_MIN:
        low = None
    if high is not None and high > _INT64_MAX:
        high = None
    return low, high
