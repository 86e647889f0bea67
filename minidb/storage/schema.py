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

NULLs. A column is ``nullable`` or NOT NULL. A layout with at least one nullable column ends
each record with a hidden *null bitmap* field, ``__nulls``, like the null bitmap of a PostgreSQL
heap tuple (``t_bits``): one bit per column of the record, in column order (bit ``i`` of byte
``i // 8`` is column ``i``), set when that field is NULL; the value bytes of a NULL field are
zero. As in PostgreSQL the bitmap has a bit for every column, not only the nullable ones, so a
batch describes itself: a column's bit is its position in the batch's ``dtype``, and every
operator that moves whole records (exchange, sort runs, spills, stores) carries NULLs unchanged.
A layout whose columns are all NOT NULL has no bitmap, so a Wisconsin tuple stays 208 bytes.
The API, used everywhere NULLs are read or written:

    null_mask(batch, column)          bool array (True = NULL) or None when no NULL is possible
    set_null_mask(batch, column, m)   mark rows NULL (and zero their value bytes)
    Schema.new_records(n)             n records with an all-zero (no NULL) bitmap
    Schema.gather(batch)              the columns of this layout, with their bits, from a batch

Arrow fields carry nullability (``nullable=True`` is Arrow's default, so a user's table gets
nullable columns; minidb's generators declare NOT NULL fields).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minidb.errors import SchemaError, UnknownColumnError

WIDTH_KEY = b"minidb.width"
NULLS = "__nulls"  # the hidden null-bitmap field at the end of a record with nullable columns

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
    """One field of a record: a name, a kind, its width in bytes and whether it may be NULL."""

    name: str
    kind: str
    width: int
    nullable: bool = False

    def with_nullable(self, nullable: bool) -> Column:
        return self if self.nullable == nullable else replace(self, nullable=nullable)

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
        return pa.field(self.name, self.arrow_type, nullable=self.nullable, metadata=metadata)

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
        if NULLS in names:
            raise SchemaError(f"{NULLS!r} is reserved for the null bitmap; rename that column")
        self.columns: tuple[Column, ...] = tuple(columns)
        fields = [(c.name, c.numpy_dtype) for c in columns]
        if any(c.nullable for c in columns):
            fields.append((NULLS, np.uint8, (bitmap_bytes(len(columns)),)))
        self.dtype = np.dtype(fields)  # packed, no padding
        self._by_lower = {c.name.lower(): c for c in columns}

    # -- lookups ------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def record_width(self) -> int:
        """Bytes per record (208 for a Wisconsin tuple), null bitmap included."""
        return self.dtype.itemsize

    @property
    def has_nulls(self) -> bool:
        """Whether records of this layout carry a null bitmap (some column is nullable)."""
        return NULLS in self.dtype.names

    def null_mask(self, batch: np.ndarray, column: str) -> np.ndarray | None:
        """Which rows of ``batch`` hold NULL in ``column`` (None: no NULL there)."""
        return null_mask(batch, self.column(column).name)

    def new_records(self, n: int) -> np.ndarray:
        """``n`` uninitialised records of this layout whose null bitmap says "no NULLs"."""
        return np.zeros(n, dtype=self.dtype) if self.has_nulls else np.empty(n, dtype=self.dtype)

    def gather(self, batch: np.ndarray) -> np.ndarray:
        """This layout's columns (values and NULL bits) taken by name from ``batch``."""
        if batch.dtype == self.dtype:
            return batch
        out = self.new_records(len(batch))
        for c in self.columns:
            out[c.name] = batch[c.name]
            if self.has_nulls and (mask := null_mask(batch, c.name)) is not None:
                set_null_mask(out, c.name, mask)
        return out

    def nullable(self, names: Iterable[str] | None = None) -> Schema:
        """The same layout with ``names`` (default: every column) made nullable."""
        wanted = None if names is None else {n.lower() for n in names}
        return Schema([c.with_nullable(c.nullable or wanted is None or c.name.lower() in wanted)
                       for c in self.columns])

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
        columns = ", ".join(f"{c}{' null' if c.nullable else ''}" for c in self.columns)
        return f"Schema({columns}; {self.record_width} bytes)"

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
                    width = max(1, pc.max(pc.binary_length(table[field.name])).as_py() or 0)
                else:
                    width = 1
                column = char_column(field.name, width)
            elif pa.types.is_integer(t) and t.bit_width <= 64 and not pa.types.is_unsigned_integer(t):
                column = int_column(field.name, f"int{t.bit_width}")
            elif pa.types.is_unsigned_integer(t) and t.bit_width <= 32:
                column = int_column(field.name, f"int{t.bit_width * 2}")
            elif pa.types.is_floating(t):
                column = float_column(field.name)
            else:
                raise SchemaError(
                    f"column {field.name!r} has type {t}, which minidb cannot store; "
                    "use integers, floats or strings"
                )
            columns.append(column.with_nullable(field.nullable))
        return cls(columns)

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([c.arrow_field() for c in self.columns])

    def records_from_arrow(self, table: pa.Table | pa.RecordBatch, what: str = "data") -> np.ndarray:
        """Turn Arrow data into a structured array in this layout, checking types and widths."""
        out = self.new_records(table.num_rows)
        for col in self.columns:
            if col.name not in table.column_names:
                raise SchemaError(f"{what} has no column {col.name!r}; expected {self.names}")
            values = table[col.name]
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            nulls = None
            if values.null_count:
                if not col.nullable:
                    raise SchemaError(f"{what}: column {col.name!r} is NOT NULL but the data has NULLs")
                nulls = values.is_null().to_numpy(zero_copy_only=False)
                values = _fill_nulls(values, col)
            out[col.name] = _to_numpy(values, col, what)
            if nulls is not None:
                set_null_mask(out, col.name, nulls)
        return out

    def arrow_from_records(self, records: np.ndarray) -> pa.Table:
        """Turn a structured array in this layout into an Arrow table (NULL bits become nulls)."""
        arrays = []
        for c in self.columns:
            array = _to_arrow(np.ascontiguousarray(records[c.name]), c)
            mask = null_mask(records, c.name)
            if mask is not None:
                array = pc.if_else(pa.array(mask), pa.scalar(None, type=array.type), array)
            arrays.append(array)
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema())


def bitmap_bytes(columns: int) -> int:
    """Bytes of null bitmap for a record of ``columns`` columns: one bit each, rounded up."""
    return (columns + 7) // 8


def _bit_of(dtype: np.dtype, column: str) -> int | None:
    """The bitmap position of ``column`` in records of ``dtype`` (None: past the bitmap)."""
    names = [n for n in dtype.names if n != NULLS]
    position = names.index(column)
    return position if position < dtype[NULLS].shape[0] * 8 else None


def null_mask(batch: np.ndarray, column: str) -> np.ndarray | None:
    """True where ``column`` of ``batch`` is NULL; None when the batch holds no NULL there."""
    names = batch.dtype.names
    if not names or NULLS not in names:
        return None
    bit = _bit_of(batch.dtype, column)
    if bit is None:
        return None
    mask = (batch[NULLS][:, bit >> 3] & np.uint8(1 << (bit & 7))) != 0
    return mask if mask.any() else None


def set_null_mask(batch: np.ndarray, column: str, mask: np.ndarray | None) -> None:
    """Mark the rows of ``batch`` where ``mask`` is True as NULL in ``column`` (others: not NULL).

    The value bytes of a NULL field are set to zero, so equal records stay byte-equal.
    """
    bit = _bit_of(batch.dtype, column) if NULLS in (batch.dtype.names or ()) else None
    if bit is None:
        if mask is not None and np.any(mask):
            raise SchemaError(f"column {column!r} is NOT NULL; it cannot hold NULL")
        return
    flag = np.uint8(1 << (bit & 7))
    bits = batch[NULLS]
    if mask is None:
        bits[:, bit >> 3] &= ~flag
        return
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), (len(batch),))
    bits[:, bit >> 3] = np.where(mask, bits[:, bit >> 3] | flag, bits[:, bit >> 3] & ~flag)
    if mask.any():
        batch[column][mask] = np.zeros(1, dtype=batch.dtype[column])[0]


def take_records(batch: np.ndarray, which: np.ndarray) -> np.ndarray:
    """``batch[which]`` (an index array or a boolean mask) for a batch of records, copied as raw
    bytes: numpy gathers a structured array field by field, about ten times slower than the same
    bytes gathered as whole records (measured on 208-byte Wisconsin tuples). The result has the
    batch's dtype, and equals ``batch[which]`` byte for byte. Other arrays are indexed as usual."""
    if batch.dtype.names is None or batch.ndim != 1:
        return batch[which]
    raw = np.ascontiguousarray(batch).view(np.dtype((np.void, batch.dtype.itemsize)))
    return raw[which].view(batch.dtype)


def concat_records(parts: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """``np.concatenate(parts)`` for batches of records that all have layout ``dtype``, copied as
    raw bytes: numpy's own concatenate first works out a common structured type field by field,
    part after part, which costs more than copying a small batch (a 1% scan of a million tuples
    returns 200 batches of 50). Parts of any other layout go through ``np.concatenate``."""
    if not parts:
        return np.empty(0, dtype=dtype)
    if not all(p.dtype == dtype and p.ndim == 1 for p in parts):
        return np.concatenate(parts)
    raw = np.dtype((np.void, dtype.itemsize))
    return np.concatenate([np.ascontiguousarray(p).view(raw) for p in parts]).view(dtype)


def glue_records(parts: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """Row i of every part side by side, as records of ``dtype`` (the parts' columns in order).

    The value bytes are copied as blocks (no per-column loop); the null bitmaps of the parts, if
    any, are merged into the bitmap of the result.
    """
    n = len(parts[0])
    nulls = NULLS in dtype.names
    out = np.zeros(n, dtype=dtype) if nulls else np.empty(n, dtype=dtype)
    raw = out.view(np.uint8).reshape(n, dtype.itemsize)
    pos = 0
    bits = []
    for part in parts:
        part = np.ascontiguousarray(part)
        has_bitmap = NULLS in part.dtype.names
        width = part.dtype.itemsize - (part.dtype[NULLS].itemsize if has_bitmap else 0)
        raw[:, pos : pos + width] = part.view(np.uint8).reshape(n, part.dtype.itemsize)[:, :width]
        pos += width
        if nulls:
            columns = len(part.dtype.names) - has_bitmap
            if has_bitmap:
                bits.append(np.unpackbits(part[NULLS], axis=1, bitorder="little")[:, :columns])
            else:
                bits.append(np.zeros((n, columns), dtype=np.uint8))
    if nulls:
        out[NULLS] = np.packbits(np.concatenate(bits, axis=1), axis=1, bitorder="little")
    return out


def _fill_nulls(values: pa.Array, col: Column) -> pa.Array:
    """``values`` with every null replaced by the zero of its type (the bytes stored for NULL)."""
    if pa.types.is_null(values.type):
        return pa.array([0 if col.is_numeric else ""] * len(values), type=col.arrow_type)
    zero = "" if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else 0
    return pc.fill_null(values, pa.scalar(zero).cast(values.type))


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
    ``(n, width)`` grid in one masked numpy assignment, not copied value by value.
    """
    n = len(binary)
    offsets_type = np.int64 if pa.types.is_large_binary(binary.type) else np.int32
    offsets = np.frombuffer(binary.buffers()[1], dtype=offsets_type)[binary.offset : binary.offset + n + 1]
    offsets = offsets.astype(np.int64)
    buffer = binary.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer else np.empty(0, np.uint8)
    data = data[offsets[0] : offsets[-1]]
    lengths = np.diff(offsets)
    if (lengths == width).all():  # every value fills its field (Wisconsin's strings): no padding
        return data.reshape(n, width).copy().view(f"S{width}").reshape(n)
    grid = np.zeros((n, width), dtype=np.uint8)
    # True at each byte a value fills; numpy fills True cells in row-major order, which is the
    # order of the values' bytes in Arrow's data buffer
    grid[np.arange(width) < lengths[:, None]] = data
    return grid.view(f"S{width}").reshape(n)


def _to_arrow(values: np.ndarray, col: Column) -> pa.Array:
    if col.kind != "char":
        return pa.array(values, type=col.arrow_type)
    n = len(values)
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(col.width), n, [None, pa.py_buffer(values)])
    text = pc.cast(pc.cast(fixed, pa.binary()), pa.string())
    return pc.utf8_rtrim(text, characters="\x00")
