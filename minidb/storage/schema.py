"""Fixed-width record layouts: how a tuple is laid out in a page and in a batch.

Every relation in minidb has a fixed record width, as in the Wisconsin benchmark (Gamma paper,
Section 4: thirteen 4-byte integers and three 52-byte strings, 208 bytes a tuple). A layout maps
each column to a fixed number of bytes; a batch of tuples is a numpy *structured array* whose
``dtype`` is exactly the on-disk record, so a page's bytes can be viewed as tuples without
copying and every operator works on whole columns at once (vectorized), not tuple by tuple.

Column kinds:
    int8, int16, int32, int64   little-endian signed integers
    float64                     IEEE double (results of AVG)
    char(n)                     n bytes of text, padded with NUL bytes; NULs are stripped on
                                the way back to Arrow, so 'shoe' stored in char(12) reads 'shoe'

Arrow is the exchange format with the outside world (generators, Parquet files, results). A
``char(n)`` column travels as an Arrow string whose field metadata carries ``minidb.width = n``;
without it the width is the longest value in the data.

Simplification: no NULLs. Every field of every tuple has a value, as in the papers' relations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minidb.errors import SchemaError, UnknownColumnError

WIDTH_KEY = b"minidb.width"

_INT_KINDS = {"int8": 1, "int16": 2, "int32": 4, "int64": 8}
_ARROW_OF_KIND = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
}


@dataclass(frozen=True)
class Column:
    """One field of a record: a name, a kind and its width in bytes."""

    name: str
    kind: str
    width: int

    @property
    def numpy_dtype(self) -> np.dtype:
        if self.kind == "char":
            return np.dtype(f"S{self.width}")
        if self.kind == "float64":
            return np.dtype("<f8")
        return np.dtype(f"<i{self.width}")

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.string() if self.kind == "char" else _ARROW_OF_KIND[self.kind]

    @property
    def is_numeric(self) -> bool:
        return self.kind != "char"

    def arrow_field(self) -> pa.Field:
        metadata = {WIDTH_KEY: str(self.width).encode()} if self.kind == "char" else None
        return pa.field(self.name, self.arrow_type, nullable=False, metadata=metadata)

    def __str__(self) -> str:
        return f"{self.name} char({self.width})" if self.kind == "char" else f"{self.name} {self.kind}"


def int_column(name: str, kind: str = "int32") -> Column:
    """An integer column of the given kind (int8, int16, int32 or int64)."""
    if kind not in _INT_KINDS:
        raise SchemaError(f"unknown integer kind {kind!r}; use one of {', '.join(_INT_KINDS)}")
    return Column(name, kind, _INT_KINDS[kind])


def char_column(name: str, width: int) -> Column:
    """A fixed-width text column of ``width`` bytes."""
    if width < 1:
        raise SchemaError(f"column {name!r}: a char column needs a width of at least 1 byte")
    return Column(name, "char", width)


def float_column(name: str) -> Column:
    return Column(name, "float64", 8)


class Schema:
    """An ordered list of fixed-width columns; its ``dtype`` is the record as stored on a page."""

    def __init__(self, columns: Sequence[Column]):
        names = [c.name for c in columns]
        if not columns:
            raise SchemaError("a relation needs at least one column")
        if len(set(n.lower() for n in names)) != len(names):
            raise SchemaError(f"duplicate column names in {names}")
        self.columns: tuple[Column, ...] = tuple(columns)
        self.dtype = np.dtype([(c.name, c.numpy_dtype) for c in columns])  # packed, no padding
        self._by_lower = {c.name.lower(): c for c in columns}

    # -- lookups ------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def record_width(self) -> int:
        """Bytes per record (208 for a Wisconsin tuple)."""
        return self.dtype.itemsize

    def column(self, name: str, table: str = "relation") -> Column:
        """The column called ``name`` (case-insensitive), or a one-line error listing columns."""
        try:
            return self._by_lower[name.lower()]
        except KeyError:
            raise UnknownColumnError(
                f"{table} has no column {name!r}; its columns are: {', '.join(self.names)}"
            ) from None

    def has_column(self, name: str) -> bool:
        return name.lower() in self._by_lower

    def project(self, names: Iterable[str]) -> Schema:
        return Schema([self.column(n) for n in names])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and self.columns == other.columns

    def __hash__(self) -> int:
        return hash(self.columns)

    def __repr__(self) -> str:
        return f"Schema({', '.join(str(c) for c in self.columns)}; {self.record_width} bytes)"

    # -- Arrow <-> records --------------------------------------------------------------------
    @classmethod
    def from_arrow(cls, schema: pa.Schema, table: pa.Table | None = None) -> Schema:
        """Derive a layout from an Arrow schema (char widths from metadata or from the data)."""
        columns = []
        for field in schema:
            t = field.type
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                meta = field.metadata or {}
                if WIDTH_KEY in meta:
                    width = int(meta[WIDTH_KEY])
                elif table is not None and table.num_rows:
                    width = max(1, int(pc.max(pc.binary_length(table[field.name])).as_py()))
                else:
                    width = 1
                columns.append(char_column(field.name, width))
            elif pa.types.is_integer(t) and t.bit_width <= 64 and not pa.types.is_unsigned_integer(t):
                columns.append(int_column(field.name, f"int{t.bit_width}"))
            elif pa.types.is_unsigned_integer(t) and t.bit_width <= 32:
                columns.append(int_column(field.name, f"int{t.bit_width * 2}"))
            elif pa.types.is_floating(t):
                columns.append(float_column(field.name))
            else:
                raise SchemaError(
                    f"column {field.name!r} has type {t}, which minidb cannot store; "
                    "use integers, floats or strings"
                )
        return cls(columns)

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([c.arrow_field() for c in self.columns])

    def records_from_arrow(self, table: pa.Table | pa.RecordBatch, what: str = "data") -> np.ndarray:
        """Turn Arrow data into a structured array in this layout, checking types and widths."""
        out = np.empty(table.num_rows, dtype=self.dtype)
        for col in self.columns:
            if col.name not in table.column_names:
                raise SchemaError(f"{what} has no column {col.name!r}; expected {self.names}")
            values = table[col.name]
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            if values.null_count:
                raise SchemaError(f"{what}: column {col.name!r} contains NULLs, which minidb does not store")
            out[col.name] = _to_numpy(values, col, what)
        return out

    def arrow_from_records(self, records: np.ndarray) -> pa.Table:
        """Turn a structured array in this layout into an Arrow table."""
        arrays = [_to_arrow(np.ascontiguousarray(records[c.name]), c) for c in self.columns]
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema())


def _to_numpy(values: pa.Array, col: Column, what: str) -> np.ndarray:
    if col.kind != "char":
        if pa.types.is_string(values.type) or pa.types.is_binary(values.type):
            raise SchemaError(f"{what}: column {col.name!r} holds text but the table stores {col.kind}")
        np_values = values.to_numpy(zero_copy_only=False)
        if col.kind != "float64" and np_values.dtype.kind == "f":
            raise SchemaError(f"{what}: column {col.name!r} holds floats but the table stores {col.kind}")
        if col.kind != "float64" and np_values.size:
            info = np.iinfo(col.numpy_dtype)
            if np_values.min() < info.min or np_values.max() > info.max:
                raise SchemaError(f"{what}: a value of {col.name!r} does not fit in {col.kind}")
        return np_values.astype(col.numpy_dtype, copy=False)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise SchemaError(f"{what}: column {col.name!r} holds {values.type} but the table stores text")
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=col.numpy_dtype)
    lengths = pc.binary_length(values)
    if pc.max(lengths).as_py() > col.width:
        raise SchemaError(f"{what}: a value of {col.name!r} is longer than its {col.width} bytes")
    binary = values.cast(pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary())
    return fixed_width_bytes(binary, col.width)


def fixed_width_bytes(binary: pa.Array, width: int) -> np.ndarray:
    """Arrow binary values as numpy ``S{width}``: each value's UTF-8 bytes, NUL-padded.

    Widths are in bytes, so 'é' takes two of them. The bytes are scattered into an
    ``(n, width)`` grid in one numpy assignment, not copied value by value.
    """
    n = len(binary)
    offsets_type = np.int64 if pa.types.is_large_binary(binary.type) else np.int32
    offsets = np.frombuffer(binary.buffers()[1], dtype=offsets_type)[binary.offset : binary.offset + n + 1]
    offsets = offsets.astype(np.int64)
    buffer = binary.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer else np.empty(0, np.uint8)
    data = data[offsets[0] : offsets[-1]]
    lengths = np.diff(offsets)
    grid = np.zeros((n, width), dtype=np.uint8)
    rows = np.repeat(np.arange(n), lengths)
    positions = np.arange(len(data)) - np.repeat(offsets[:-1] - offsets[0], lengths)
    grid[rows, positions] = data
    return grid.view(f"S{width}").reshape(n)


def _to_arrow(values: np.ndarray, col: Column) -> pa.Array:
    if col.kind != "char":
        return pa.array(values, type=col.arrow_type)
    n = len(values)
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(col.width), n, [None, pa.py_buffer(values)])
    text = pc.cast(pc.cast(fixed, pa.binary()), pa.string())
    return pc.utf8_rtrim(text, characters="\x00")
