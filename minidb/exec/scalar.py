"""The scalar SQL of a first hour: IN lists, LIKE, CASE, CAST and a few text and number functions.

Each node is an ``Expr`` like those of ``minidb.exec.expr`` and is evaluated the same way, on a
whole batch at once: ``InList`` looks the column up in its constants with ``numpy.isin``,
``Like`` turns its pattern into one regular expression matched over the column by Arrow, the
text functions (``Lower``, ``Upper``, ``Length``, ``Substring``) hand the column to
``pyarrow.compute``, and ``Case`` evaluates each branch only on the tuples that reach it.

Text is stored as UTF-8 in ``char(n)`` columns, and ``n`` counts bytes (the record layout is in
bytes), but SQL counts characters: ``LENGTH('héllo')`` is 5 although the value takes 6 bytes,
and ``SUBSTRING`` and ``_`` in ``LIKE`` step over characters. So the text functions work on Arrow
strings (decoded characters), and their results are packed back into fixed-width bytes.

The answers are DuckDB's (the correctness oracle):

* ``x IN (1, 2.5)`` compares by value, as ``=`` does: an integer is never equal to 2.5, and
  NaN is equal to NaN (DuckDB's NaN ordering, ``minidb.exec.expr.compare``).
* ``LIKE``: ``%`` matches any run of characters, ``_`` exactly one character (not one byte); the
  backslash is an ordinary character unless named by ``ESCAPE``. ``ILIKE`` is ``LIKE`` between
  the ``LOWER`` of both sides.
* ``CASE``: the first WHEN that holds gives the value; the result is text if the branches are
  text, an integer if they are all integers, a float otherwise.
* ``CAST`` to an integer rounds to the nearest integer. DuckDB reads a literal such as ``2.5`` as
  an exact DECIMAL and rounds its halves away from zero (3, and -3 for -2.5), but rounds a
  DOUBLE's halves to even (2); minidb follows the type DuckDB would give the operand
  (``number_type``). A value out of the target's range, or text that is not a number, is a
  ``SchemaError``. A float becomes text in the shortest form that reads back to the same float
  (``1.0``, ``0.30000000000000004``, ``1e+16``), as in DuckDB.
* ``LOWER`` / ``UPPER`` map each character by Unicode's simple case mapping (``ß`` becomes
  ``ẞ``). A character may take more bytes in the other case (at most 3 for 2), so the result of
  ``char(n)`` is ``char(n + n // 2)``.

NULLs (three-valued logic, see ``minidb.exec.expr``): the functions, ``CAST`` and ``LIKE`` are
strict (NULL in, NULL out; a CAST never looks at a NULL's placeholder bytes); ``x IN (...)`` is
TRUE when x equals an item, otherwise NULL if x or an item is NULL; a WHEN that is NULL does not
hold, and a CASE without ELSE is NULL where no WHEN holds.

Simplifications: the pattern of ``LIKE`` and the positions of ``SUBSTRING`` are constants; casts
to 4-byte floats (REAL), DECIMAL, dates and booleans are not offered; a DECIMAL expression (an
integer column plus ``0.5``) is computed in float64, so its halves are exact only while the
numbers are; case mapping follows the Unicode tables of Arrow's utf8proc, which may differ from
DuckDB's for letters added to Unicode most recently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minidb.errors import NumericOverflowError, SchemaError
from minidb.exec.expr import Arith, Col, Const, Expr, any_null, compare, has_nan, is_true
from minidb.storage.schema import (
    Column,
    Schema,
    char_column,
    fixed_width_bytes,
    float_column,
    int_column,
)


# -- text columns as Arrow strings and back -------------------------------------------------------
def text_to_arrow(values: np.ndarray) -> pa.Array:
    """A numpy ``S{n}`` column (UTF-8, NUL-padded) as an Arrow string array."""
    values = np.ascontiguousarray(values)
    width = values.dtype.itemsize
    buffers = [None, pa.py_buffer(values)]
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(values), buffers)
    return pc.utf8_rtrim(fixed.cast(pa.binary()).cast(pa.string()), characters="\x00")


def arrow_to_text(strings: pa.Array) -> np.ndarray:
    """An Arrow string array as a numpy ``S{n}`` column, ``n`` its longest value in bytes."""
    binary = strings.cast(pa.binary())
    longest = pc.max(pc.binary_length(binary)).as_py() if len(binary) else 0
    return fixed_width_bytes(binary, max(1, longest or 0))


def _text_width(expr: Expr, schema: Schema) -> int:
    column = expr.output_column("_", schema)
    if column.kind != "char":
        raise SchemaError(f"{expr} is a number where text is needed")
    return column.width


class ScalarValue(Expr):
    """A node that gives values (not conditions); its kind is the kind of its output layout."""


# -- predicates ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InList(Expr):
    """``value IN (item, ...)``: true where ``value`` equals one of the items."""

    value: Expr
    items: tuple[Expr, ...]

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        values = np.asarray(self.value.evaluate(batch))
        if values.ndim == 0:
            values = np.broadcast_to(values, (len(batch),))
        constants = [i.numpy_value for i in self.items if isinstance(i, Const) and i.value is not None]
        found = np.isin(values, constants) if constants else np.zeros(len(batch), dtype=bool)
        if any(isinstance(c, float) and c != c for c in constants) and has_nan(values):
            found |= np.isnan(values)  # NaN = NaN, as in DuckDB (np.isin follows IEEE)
        for item in self.items:  # items that read columns: one comparison each
            if not isinstance(item, Const) and not _is_null_literal(item):
                equal = np.asarray(compare("=", values, item.evaluate(batch)), dtype=bool)
                if (nulls := item.null_mask(batch)) is not None:
                    equal &= ~nulls
                found |= equal
        return found

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        unknown = any_null([self.value.null_mask(batch)] + [i.null_mask(batch) for i in self.items],
                           len(batch))
        if unknown is None:
            return None
        value_null = self.value.null_mask(batch)
        found = self._found_among_known(batch)
        return (unknown & ~found) | (value_null if value_null is not None else False)

    def _found_among_known(self, batch: np.ndarray) -> np.ndarray:
        """Where the value equals an item that is not NULL (a NULL item matches nothing)."""
        values = np.asarray(self.value.evaluate(batch))
        if values.ndim == 0:
            values = np.broadcast_to(values, (len(batch),))
        found = np.zeros(len(batch), dtype=bool)
        for item in self.items:
            if isinstance(item, Const) and item.value is None:
                continue
            equal = np.asarray(compare("=", values, item.evaluate(batch)), dtype=bool)
            if (nulls := item.null_mask(batch)) is not None:
                equal &= ~nulls
            found |= equal
        return found

    def columns(self) -> set[str]:
        return self.value.columns().union(*(i.columns() for i in self.items))

    def __str__(self) -> str:
        return f"{self.value} IN ({', '.join(str(i) for i in self.items)})"


def like_regex(pattern: str, escape: str | None = None) -> str:
    """The regular expression (RE2 syntax) that matches exactly what ``LIKE pattern`` matches."""
    parts, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            i += 1
            if i == len(pattern):
                raise SchemaError(f"LIKE pattern {pattern!r} ends with its escape character "
                                  f"{escape!r}; escape a character after it, or drop it")
            parts.append(_literal_char(pattern[i]))
        elif ch == "%":
            parts.append(".*")
        elif ch == "_":
            parts.append(".")
        else:
            parts.append(_literal_char(ch))
        i += 1
    return "(?s)^" + "".join(parts) + "$"  # (?s): % and _ also match a newline


def _literal_char(ch: str) -> str:
    return ch if ch.isalnum() or ord(ch) > 127 else f"\\x{{{ord(ch):x}}}"


@dataclass(frozen=True)
class Like(Expr):
    """``value LIKE pattern`` (``ILIKE`` when ``ignore_case``), the pattern a constant."""

    value: Expr
    pattern: str
    ignore_case: bool = False
    escape: str | None = None

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        strings = text_to_arrow(self.value.evaluate(batch))
        pattern, escape = self.pattern, self.escape
        if self.ignore_case:  # as DuckDB: LIKE between the LOWER of every side ('İ' ILIKE 'i')
            strings = pc.utf8_lower(strings)
            pattern, escape = pc.utf8_lower(pa.array([pattern, escape or ""])).to_pylist()
            escape = escape or None
        matched = pc.match_substring_regex(strings, pattern=like_regex(pattern, escape))
        return matched.to_numpy(zero_copy_only=False).astype(bool)

    def columns(self) -> set[str]:
        return self.value.columns()

    def __str__(self) -> str:
        op = "ILIKE" if self.ignore_case else "LIKE"
        escape = f" ESCAPE {self.escape!r}" if self.escape is not None else ""
        return f"{self.value} {op} {self.pattern!r}{escape}"


# -- CASE ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case(ScalarValue):
    """``CASE WHEN c1 THEN r1 ... ELSE otherwise END``; the first condition that holds wins.

    Each condition and each result is evaluated only on the tuples that reach it, so a branch
    that would fail (a CAST of text that is not a number) is harmless where it is not taken.
    ``otherwise`` None is SQL's CASE without ELSE, whose missing value is NULL.
    """

    conditions: tuple[Expr, ...]
    results: tuple[Expr, ...]
    otherwise: Expr | None

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        return self._branches(batch)[0]

    def null_mask(self, batch: np.ndarray) -> np.ndarray | None:
        return self._branches(batch)[1]

    def nullable(self, schema: Schema) -> bool:
        return self.otherwise is None or any(b.nullable(schema) for b in self._values())

    def _values(self) -> tuple[Expr, ...]:
        return self.results + ((self.otherwise,) if self.otherwise is not None else ())

    def _branches(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The values and the null mask: each tuple takes the result of the first WHEN that is
        TRUE for it (a NULL condition does not hold), else ELSE, else NULL."""
        remaining = np.arange(len(batch))
        pieces: list[tuple[np.ndarray, Expr]] = []
        for condition, result in zip(self.conditions, self.results, strict=True):
            holds = is_true(condition, _rows(batch, remaining))
            pieces.append((remaining[holds], result))
            remaining = remaining[~holds]
        if self.otherwise is not None:
            pieces.append((remaining, self.otherwise))
            remaining = remaining[:0]
        evaluated = [(rows, result.evaluate(_rows(batch, rows)), result.null_mask(_rows(batch, rows)))
                     for rows, result in pieces]
        typed = [values.dtype for _, values, _ in evaluated if values.dtype.kind != "O"]
        kinds = [(result, values.dtype) for (_, result), (_, values, _) in zip(pieces, evaluated, strict=True)
                 if not _is_null_literal(result)]
        dtype = np.result_type(*(d for _, d in kinds)) if kinds else np.result_type(*typed)
        out = np.zeros(len(batch), dtype=dtype)
        nulls = np.zeros(len(batch), dtype=bool)
        nulls[remaining] = True  # no WHEN held and there is no ELSE
        for (rows, result), (_, values, mask) in zip(pieces, evaluated, strict=True):
            if _is_null_literal(result):
                nulls[rows] = True
                continue
            out[rows] = values
            if mask is not None:
                nulls[rows] = mask
        return out, (nulls if nulls.any() else None)

    def columns(self) -> set[str]:
        return set().union(*(e.columns() for e in self._parts()))

    def _parts(self) -> tuple[Expr, ...]:
        extra = (self.otherwise,) if self.otherwise is not None else ()
        return self.conditions + self.results + extra

    def output_column(self, name: str, schema: Schema) -> Column:
        branches = [b for b in self._values() if not _is_null_literal(b)] or list(self._values())
        layouts = [b.output_column(name, schema) for b in branches]
        kinds = {c.kind for c in layouts}
        if "char" in kinds:
            if kinds != {"char"}:
                raise SchemaError(f"the branches of {self} mix text and numbers")
            return char_column(name, max(c.width for c in layouts))
        if "float64" in kinds:
            return float_column(name)
        return int_column(name, "int64")

    def __str__(self) -> str:
        pairs = zip(self.conditions, self.results, strict=True)
        whens = " ".join(f"WHEN {c} THEN {r}" for c, r in pairs)
        otherwise = f" ELSE {self.otherwise}" if self.otherwise is not None else ""
        return f"CASE {whens}{otherwise} END"


def _is_null_literal(e: Expr) -> bool:
    return isinstance(e, Const) and e.value is None or type(e).__name__ == "Null"


def _rows(batch, rows: np.ndarray) -> np.ndarray:
    """The tuples ``rows`` of a batch: a structured array, or a dict of columns (a page scan
    gathers only the columns a predicate reads)."""
    if isinstance(batch, np.ndarray):
        return batch[rows]
    out = np.empty(len(rows), dtype=[(name, values.dtype) for name, values in batch.items()])
    for name, values in batch.items():
        out[name] = values[rows]
    return out


# -- CAST ------------------------------------------------------------------------------------------
CAST_TYPES = {"TINYINT": "int8", "SMALLINT": "int16", "INTEGER": "int32", "BIGINT": "int64",
              "DOUBLE": "float64", "VARCHAR": "char"}
_TEXT_WIDTH_OF = {"int8": 4, "int16": 6, "int32": 11, "int64": 20, "float64": 24}  # longest value
_NUMBER_TEXT = re.compile(
    r"\s*([+-]?(?:\d+(?:_\d+)*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*", re.ASCII)
_SPECIAL_FLOATS = re.compile(r"\s*([+-]?(?:inf|infinity)|nan)\s*", re.IGNORECASE | re.ASCII)


@dataclass(frozen=True)
class Cast(ScalarValue):
    """``CAST(value AS to)``, ``to`` a key of ``CAST_TYPES``.

    ``halves_away`` says how a float is rounded to an integer: away from zero (DuckDB's DECIMAL
    values, such as the literal 2.5) or to even (DOUBLE values, such as a float column).
    """

    value: Expr
    to: str
    halves_away: bool = False

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        nulls = self.value.null_mask(batch)
        if nulls is None:
            return self._cast(batch)
        known = np.flatnonzero(~nulls)  # a NULL's placeholder ('' or 0) must not fail the cast
        values = self._cast(_rows(batch, known))
        out = np.zeros(len(batch), dtype=values.dtype)
        out[known] = values
        return out

    def _cast(self, batch: np.ndarray) -> np.ndarray:
        values = np.asarray(self.value.evaluate(batch))
        kind = CAST_TYPES[self.to]
        if kind == "char":
            return self._to_text(values)
        if kind == "float64":
            if values.dtype.kind == "S":
                return self._text_to_numbers(values)
            return values.astype(np.float64)
        if values.dtype.kind == "S":
            values = self._text_to_numbers(values)
        if values.dtype.kind == "f":
            values = self._rounded(values)
        return self._checked_integers(values, np.dtype(kind))

    def _to_text(self, values: np.ndarray) -> np.ndarray:
        if values.dtype.kind == "S":
            return values
        if values.dtype.kind in "iu":
            return values.astype(f"S{_TEXT_WIDTH_OF['int64']}")
        bits = values.astype(np.float64).view(np.int64)  # by bit pattern: -0.0 is not 0.0 here
        return _map_distinct(bits, _float_text, f"S{_TEXT_WIDTH_OF['float64']}")

    def _text_to_numbers(self, values: np.ndarray) -> np.ndarray:
        """Text read as numbers: exact integers (an object array) for an integer target, or
        floats."""
        if CAST_TYPES[self.to] == "float64":
            return _map_distinct(values, self._read_float, np.float64)
        return _map_distinct(values, self._read_integer, object)

    def _read_float(self, raw: bytes) -> float:
        text = raw.decode()
        special = _SPECIAL_FLOATS.fullmatch(text)
        if special:
            return float(special.group(1))
        return float(self._number_text(text))

    def _read_integer(self, raw: bytes) -> int:
        number = Decimal(self._number_text(raw.decode()))
        if number.copy_abs() >= 2**64:  # far out of range: say so before rounding a huge exponent
            raise self._out_of_range(raw.decode())
        return int(number.quantize(Decimal(1), rounding=ROUND_HALF_UP))

    def _number_text(self, text: str) -> str:
        found = _NUMBER_TEXT.fullmatch(text)
        if found is None:
            raise SchemaError(f"CAST: cannot read the text {text!r} as {self.to}; minidb reads "
                              "decimal numbers such as '12', '-3.5' or '1e3'")
        return found.group(1).replace("_", "")

    def _rounded(self, values: np.ndarray) -> np.ndarray:
        if not self.halves_away:
            return np.rint(values)
        whole = np.trunc(values)
        return whole + np.sign(values) * (np.abs(values - whole) >= 0.5)

    def _checked_integers(self, values: np.ndarray, dtype: np.dtype) -> np.ndarray:
        info = np.iinfo(dtype)
        if len(values):
            if values.dtype.kind == "f":
                bad = ~((values >= info.min) & (values < float(info.max) + 1))  # NaN is bad too
            else:
                bad = (values < info.min) | (values > info.max)
            bad = np.asarray(bad, dtype=bool)
            if bad.any():
                raise self._out_of_range(values[bad][0])
        return values.astype(dtype)

    def _out_of_range(self, value) -> SchemaError:
        return SchemaError(f"CAST: the value {value} is out of range for {self.to}; "
                           "cast to BIGINT or DOUBLE, or filter the value out")

    def columns(self) -> set[str]:
        return self.value.columns()

    def output_column(self, name: str, schema: Schema) -> Column:
        kind = CAST_TYPES[self.to]
        if kind == "float64":
            return float_column(name)
        if kind != "char":
            return int_column(name, kind)
        source = self.value.output_column(name, schema)
        width = source.width if source.kind == "char" else _TEXT_WIDTH_OF[source.kind]
        return char_column(name, width)

    def __str__(self) -> str:
        return f"CAST({self.value} AS {self.to})"


def _float_text(bits: np.int64) -> bytes:
    """The shortest text that reads back as the same float (Python's repr, also DuckDB's)."""
    return repr(float(np.int64(bits).view(np.float64))).encode()


def _map_distinct(values: np.ndarray, convert, dtype) -> np.ndarray:
    """``convert`` applied to each distinct value once (text parsing and float formatting)."""
    if not len(values):
        return np.empty(0, dtype=dtype)
    distinct, where = np.unique(values, return_inverse=True)
    converted = np.array([convert(v) for v in distinct], dtype=dtype)
    return converted[where.reshape(-1)]


def number_type(e: Expr, schema: Schema) -> str:
    """The type DuckDB gives a numeric expression: "integer", "decimal" or "double".

    A literal with a point (``2.5``) is an exact DECIMAL in DuckDB, and stays one through
    ``+ - * %`` with integers; a float column, ``/`` or a CAST to DOUBLE make a DOUBLE.
    """
    if isinstance(e, Const):
        return "decimal" if isinstance(e.value, float) else "integer"
    if isinstance(e, Col):
        return "double" if schema.column(e.name).kind == "float64" else "integer"
    if isinstance(e, Arith):
        if e.op == "/":
            return "double"
        return _widest(number_type(e.left, schema), number_type(e.right, schema))
    if isinstance(e, Cast):
        return "double" if CAST_TYPES[e.to] == "float64" else "integer"
    if isinstance(e, Abs):
        return number_type(e.value, schema)
    if isinstance(e, Case):
        branches = e.results + ((e.otherwise,) if e.otherwise is not None else ())
        return _widest(*(number_type(b, schema) for b in branches))
    return "double" if e.output_column("_", schema).kind == "float64" else "integer"


def _widest(*types: str) -> str:
    for t in ("double", "decimal"):
        if t in types:
            return t
    return "integer"


# -- functions -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Abs(ScalarValue):
    """``ABS(value)``, of the value's own type; the most negative integer has no absolute value."""

    value: Expr

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        values = np.asarray(self.value.evaluate(batch))
        if values.dtype.kind == "i" and len(values) and values.min() == np.iinfo(values.dtype).min:
            raise NumericOverflowError(f"ABS overflows on {values.min()} ({values.dtype}); cast "
                                       f"to a wider type first: ABS(CAST({self.value} AS DOUBLE))")
        return np.abs(values)

    def columns(self) -> set[str]:
        return self.value.columns()

    def output_column(self, name: str, schema: Schema) -> Column:
        source = self.value.output_column(name, schema)
        return Column(name, source.kind, source.width)

    def __str__(self) -> str:
        return f"ABS({self.value})"


@dataclass(frozen=True)
class Lower(ScalarValue):
    """``LOWER(text)``: each character in lower case."""

    value: Expr

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        return arrow_to_text(pc.utf8_lower(text_to_arrow(self.value.evaluate(batch))))

    def columns(self) -> set[str]:
        return self.value.columns()

    def output_column(self, name: str, schema: Schema) -> Column:
        width = _text_width(self.value, schema)
        return char_column(name, width + width // 2)  # a 2-byte letter may have a 3-byte twin

    def __str__(self) -> str:
        return f"LOWER({self.value})"


@dataclass(frozen=True)
class Upper(ScalarValue):
    """``UPPER(text)``: each character in upper case."""

    value: Expr

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        return arrow_to_text(pc.utf8_upper(text_to_arrow(self.value.evaluate(batch))))

    def columns(self) -> set[str]:
        return self.value.columns()

    def output_column(self, name: str, schema: Schema) -> Column:
        width = _text_width(self.value, schema)
        return char_column(name, width + width // 2)  # 'ß' (2 bytes) becomes 'ẞ' (3 bytes)

    def __str__(self) -> str:
        return f"UPPER({self.value})"


@dataclass(frozen=True)
class Length(ScalarValue):
    """``LENGTH(text)``: the number of characters (not bytes)."""

    value: Expr

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        lengths = pc.utf8_length(text_to_arrow(self.value.evaluate(batch)))
        return lengths.to_numpy(zero_copy_only=False).astype(np.int64)

    def columns(self) -> set[str]:
        return self.value.columns()

    def output_column(self, name: str, schema: Schema) -> Column:
        _text_width(self.value, schema)
        return int_column(name, "int64")

    def __str__(self) -> str:
        return f"LENGTH({self.value})"


SUBSTRING_LIMIT = 2**32 - 1  # DuckDB refuses a start or a length beyond it


@dataclass(frozen=True)
class Substring(ScalarValue):
    """``SUBSTRING(text, start[, length])`` with DuckDB's rules, in characters.

    Positions count from 1; a negative start counts from the end (-1 is the last character);
    start 0 is the position just before the first character. A negative length takes the
    characters before ``start`` instead of from it. What falls outside the text is dropped.
    """

    value: Expr
    start: int
    length: int | None = None

    def evaluate(self, batch: np.ndarray) -> np.ndarray:
        begin, stop = self.slice_bounds()
        strings = text_to_arrow(self.value.evaluate(batch))
        return arrow_to_text(pc.utf8_slice_codeunits(strings, begin, stop))

    def slice_bounds(self) -> tuple[int, int | None]:
        """The 0-based slice ``[begin:stop]`` (Python's, negative = from the end) of each text."""
        s, n = self.start, self.length
        if s >= 0:  # 1-based s is 0-based s - 1; the positions before the first one are dropped
            if n is not None and n < 0:
                first, end = s + n, s
            else:
                first, end = s, None if n is None else s + n
            begin = max(first, 1) - 1
            return begin, None if end is None else max(end - 1, begin)
        if n is None:
            return s, None
        if n < 0:
            return s + n, s
        return s, None if s + n >= 0 else s + n

    def columns(self) -> set[str]:
        return self.value.columns()

    def output_column(self, name: str, schema: Schema) -> Column:
        return char_column(name, _text_width(self.value, schema))

    def __str__(self) -> str:
        length = "" if self.length is None else f", {self.length}"
        return f"SUBSTRING({self.value}, {self.start}{length})"
