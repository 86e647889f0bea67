"""Helpers shared by the generators: argument checks and fast fixed-width text columns.

Text columns are built as numpy ``uint8`` matrices, one row per tuple and one column per byte
(the same bytes a ``char(n)`` field holds on a page), then handed to Arrow without a Python
loop: the matrix *is* the data buffer of an Arrow string array, and the offsets are computed.
"""

from __future__ import annotations

import numbers

import numpy as np
import pyarrow as pa

from minidb.errors import MinidbError, SchemaError
from minidb.storage.schema import Schema

# Arrow's ``string`` type uses 32-bit offsets, so one array holds at most 2**31 - 1 bytes.
_MAX_CHUNK_BYTES = (1 << 31) - 1


def check_int(value: object, what: str) -> int:
    """``value`` as a Python int, or a one-line error if it is not a whole number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise MinidbError(f"{what} must be a whole number, not {value!r}")
    return int(value)


def check_slice(
    generator: str,
    rows: object,
    start: object = 0,
    stop: object = None,
    max_rows: int | None = None,
) -> tuple[int, int, int]:
    """Validate (rows, start, stop) and return them as ints; stop=None means the end."""
    rows = check_int(rows, f"{generator}: rows")
    if rows < 1:
        raise MinidbError(f"{generator}: rows must be at least 1, got {rows}")
    if max_rows is not None and rows > max_rows:
        raise MinidbError(f"{generator}: rows must be at most {max_rows:,}, got {rows:,}")
    start = check_int(start, f"{generator}: start")
    stop = rows if stop is None else check_int(stop, f"{generator}: stop")
    if not 0 <= start <= stop <= rows:
        raise MinidbError(
            f"{generator}: need 0 <= start <= stop <= rows, got start={start}, stop={stop}, "
            f"rows={rows}; pick a slice inside the relation"
        )
    return rows, start, stop


def check_seed(seed: object) -> int:
    return check_int(seed, "seed")


def text_array(mat: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """An Arrow string array from a (rows, width) uint8 matrix of ASCII bytes.

    Trailing NUL bytes are padding (as in a ``char(n)`` field) and are left out of the values,
    so a matrix row b"shoe\\0\\0..." becomes the string 'shoe'. NULs must only be trailing.
    """
    mat = np.ascontiguousarray(mat, dtype=np.uint8)
    n, width = mat.shape
    if width and n * width > _MAX_CHUNK_BYTES:
        step = _MAX_CHUNK_BYTES // width
        chunks = [text_array(mat[i : i + step]) for i in range(0, n, step)]
        return pa.chunked_array(chunks, type=pa.string())
    if width == 0 or mat[:, -1].all():  # NULs only ever trail, so no NUL in the last byte: none
        offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
        data = mat.reshape(-1)
    else:
        nonzero = mat != 0
        lengths = nonzero.sum(axis=1, dtype=np.int32)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        data = mat[nonzero]  # row-major order keeps each row's bytes together
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def _unsigned(values: np.ndarray) -> np.ndarray:
    """Non-negative integers as uint32 when they fit (much faster to divide), else uint64."""
    v = np.asarray(values)
    if v.size and int(v.min()) < 0:
        raise ValueError("digits of a negative number")
    fits = not v.size or int(v.max()) < 1 << 32
    return v.astype(np.uint32 if fits else np.uint64)


def decimal_digits(values: np.ndarray, width: int) -> np.ndarray:
    """A (rows, width) uint8 matrix: each non-negative value in zero-padded ASCII decimal."""
    v = _unsigned(values)
    out = np.empty((len(v), width), dtype=np.uint8)
    for j in range(width - 1, -1, -1):
        q = v // 10
        out[:, j] = v - q * 10
        out[:, j] += ord("0")
        v = q
    return out


def base26_letters(values: np.ndarray, width: int, out: np.ndarray | None = None) -> np.ndarray:
    """A (rows, width) uint8 matrix: each value written in base 26, 'A' = 0, last digit rightmost.

    With ``out`` (a uint8 matrix view of at least ``width`` columns) the letters are written
    there, saving a copy of a large matrix.
    """
    v = _unsigned(values)
    if out is None:
        out = np.empty((len(v), width), dtype=np.uint8)
    for j in range(width - 1, -1, -1):
        q = v // 26
        out[:, j] = v - q * 26
        out[:, j] += ord("A")
        v = q
    return out


def filled(rows: int, width: int, byte: bytes) -> np.ndarray:
    """A (rows, width) uint8 matrix holding one repeated byte."""
    return np.full((rows, width), ord(byte), dtype=np.uint8)


def build_table(schema: Schema, columns: dict[str, object]) -> pa.Table:
    """An Arrow table in ``schema``'s column order, with its char widths in the field metadata."""
    arrow_schema = schema.arrow_schema()
    arrays = []
    for field in arrow_schema:
        values = columns[field.name]
        if isinstance(values, np.ndarray):
            values = pa.array(values, type=field.type)
        arrays.append(values)
    if len(arrays) != len(columns):
        raise SchemaError(f"columns {sorted(columns)} do not match the schema {schema.names}")
    return pa.Table.from_arrays(arrays, schema=arrow_schema)
