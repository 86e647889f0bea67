"""Where a load's tuples come from: any source ``create_table`` accepts, as a stream of batches.

A bulk load never needs the whole relation in memory at once. ``open_source`` turns every kind of
source into a ``BatchSource``: the Arrow schema, the number of rows when it is known before the
load starts (``None`` for a plain iterator), and ``batches(rows)``, which yields Arrow record
batches of at most ``rows`` rows in the source's order. The loader converts and stores one batch
at a time, so its memory is a few batches, not a multiple of the table.

Sources:

* a ``pyarrow.Table`` or ``RecordBatch``: sliced without copying;
* the path of a Parquet file: read row group by row group (``ParquetFile.iter_batches``);
* a generator spec ``"wisconsin:10000"`` / ``"wisconsin:10000:seed"``: generated slice by slice
  (``minidb.datagen.generate_batches``; a slice is exactly those rows of the whole relation);
* any other iterable of record batches or tables (a generator function's result, a
  ``RecordBatchReader``, ``generate_batches(...)``); if it has an integer ``num_rows`` attribute,
  that is its number of rows, otherwise the count is known only at the end.

Char widths. A layout needs each text column's width before the first tuple is stored. An Arrow
table, a Parquet file or a generated table gives it (width metadata, or the longest value of the
column, as ``Schema.from_arrow`` has always taken it); an iterator must carry width metadata in its
schema or come with ``schema=``, since its longest value is known only after the load.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from minidb.errors import MinidbError
from minidb.storage.schema import WIDTH_KEY, Schema

#: rows converted and written per step of a bulk load: 64K Wisconsin tuples are 13 MB
DEFAULT_BATCH_ROWS = 65_536


@dataclass
class BatchSource:
    """A load's input as a stream of Arrow batches (see the module docstring)."""

    schema: pa.Schema
    num_rows: int | None
    _batches: Any  # callable(rows) -> Iterator[pa.RecordBatch]
    whole_table: pa.Table | None = None  # the whole input, when it was given as one table
    _longest: Any = None  # callable(column name) -> longest value in bytes, when the source can
    reusable: bool = True  # False for an iterator: ``batches`` may be called only once

    def batches(self, rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch | pa.Table]:
        """The source's rows in order, in batches of at most ``rows`` rows; an empty source
        gives one empty table (so that its columns are still checked against the layout)."""
        check_batch_rows(rows)
        empty = True
        for batch in self._batches(rows):
            empty = False
            yield batch
        if empty:
            yield self.schema.empty_table()

    def layout(self) -> Schema:
        """The minidb layout the data asks for (char widths from metadata or the data)."""
        return self.layout_with(self.schema)

    def layout_with(self, schema: pa.Schema) -> Schema:
        """The layout of ``schema``, a text column without width metadata as wide as its
        longest value in this source (``Schema.from_arrow``'s rule)."""
        if self.whole_table is not None:
            return Schema.from_arrow(schema, self.whole_table)
        missing = [f.name for f in schema if _is_text(f.type) and WIDTH_KEY not in (f.metadata or {})]
        if missing and self._longest is None:
            raise MinidbError(
                f"text column(s) {', '.join(missing)} of the record batches have no width: load "
                f"them with schema=... (a minidb Schema) or give the Arrow fields width metadata"
            )
        return Schema.from_arrow(_with_widths(schema, {m: max(1, self._longest(m)) for m in missing}))


def check_batch_rows(rows: Any) -> int:
    """A batch size must be a whole number of at least one row."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise MinidbError(f"batch_rows must be a whole number of at least 1, not {rows!r}")
    return rows


def open_source(source: Any) -> BatchSource:
    """Any source ``create_table`` accepts as a ``BatchSource`` (see the module docstring)."""
    if isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    if isinstance(source, pa.Table):
        return table_source(source)
    if isinstance(source, bytes):  # a file name that is not valid UTF-8, as the OS gives it
        source = os.fsdecode(source)
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if path.exists():
            return parquet_source(path)
        spec = re.fullmatch(r"([A-Za-z_]+):(\d+)(?::(\d+))?", str(source))
        if spec:
            from minidb.datagen import generate_batches

            return iterable_source(generate_batches(spec.group(1), int(spec.group(2)),
                                                    seed=int(spec.group(3) or 0)))
        raise MinidbError(
            f"no file {str(source)!r}; source must be a pyarrow Table, a Parquet file path or a "
            "generator spec like 'wisconsin:10000'"
        )
    if isinstance(source, Iterable) and not isinstance(source, dict):
        return iterable_source(source)
    raise MinidbError(
        f"source must be a pyarrow Table, a Parquet file path, a generator spec or an iterable "
        f"of record batches, not {type(source).__name__}"
    )


def table_source(table: pa.Table) -> BatchSource:
    """An Arrow table, cut into zero-copy slices."""

    def batches(rows: int) -> Iterator[pa.RecordBatch]:
        for start in range(0, table.num_rows, rows):
            yield from table.slice(start, rows).to_batches()

    return BatchSource(table.schema, table.num_rows, batches, table)


def parquet_source(path: Path) -> BatchSource:
    """A Parquet file, read a row group or so at a time (the file is opened by each reading)."""
    with _open_parquet(path) as file:
        schema, num_rows = file.schema_arrow, file.metadata.num_rows

    def batches(rows: int) -> Iterator[pa.RecordBatch]:
        with _open_parquet(path) as file:
            try:
                yield from file.iter_batches(batch_size=rows)
            except (pa.ArrowInvalid, OSError) as e:
                raise MinidbError(f"cannot read {str(path)!r} as a Parquet file: {e}") from None

    def longest(name: str) -> int:
        with _open_parquet(path) as file:
            return _longest(file.read(columns=[name]).column(0))

    return BatchSource(schema, num_rows, batches, None, longest)


@contextmanager
def _open_parquet(path: Path) -> Iterator[pq.ParquetFile]:
    """``path`` as a ParquetFile, closed at the end; Python opens the file, since Arrow cannot
    take a name that is not UTF-8."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as e:
        raise MinidbError(f"cannot read {str(path)!r} as a Parquet file: {e}") from None
    with handle:
        try:
            file = pq.ParquetFile(handle)
        except (pa.ArrowInvalid, OSError) as e:
            raise MinidbError(f"cannot read {str(path)!r} as a Parquet file: {e}") from None
        yield file


def iterable_source(items: Iterable) -> BatchSource:
    """An iterable of record batches (or tables); its schema is the ``schema`` attribute or the
    first batch's. An iterable that is not its own iterator (``generate_batches(...)``, a list)
    can be read again; an iterator only once."""
    num_rows = getattr(items, "num_rows", None)
    known = num_rows if isinstance(num_rows, int) and not isinstance(num_rows, bool) else None
    schema = getattr(items, "schema", None)
    if iter(items) is not items:  # re-iterable: every call to batches() starts over
        if not isinstance(schema, pa.Schema):
            schema = _as_batch(_first(iter(items))).schema
        return BatchSource(schema, known, lambda rows: _rebatch_all(iter(items), rows))
    iterator = items
    first = None
    if not isinstance(schema, pa.Schema):
        first = _as_batch(_first(iterator))
        schema = first.schema
    used = False

    def batches(rows: int) -> Iterator[pa.RecordBatch]:
        nonlocal used
        if used:
            raise MinidbError("an iterator of record batches can be loaded only once")
        used = True
        if first is not None:
            yield from _rebatch(first, rows)
        yield from _rebatch_all(iterator, rows)

    return BatchSource(schema, known, batches, reusable=False)


def _first(iterator: Iterator) -> Any:
    first = next(iterator, None)
    if first is None:
        raise MinidbError("the iterable of record batches is empty: it must yield at least "
                          "one batch (an empty one will do) to give the table's columns")
    return first


def _rebatch_all(iterator: Iterator, rows: int) -> Iterator[pa.RecordBatch]:
    for item in iterator:
        yield from _rebatch(_as_batch(item), rows)


def _as_batch(item: Any) -> pa.RecordBatch | pa.Table:
    if isinstance(item, pa.RecordBatch | pa.Table):
        return item
    raise MinidbError(f"an iterable source must yield pyarrow RecordBatches or Tables, "
                      f"not {type(item).__name__}")


def _rebatch(item: pa.RecordBatch | pa.Table, rows: int) -> Iterator[pa.RecordBatch]:
    """``item`` in slices of at most ``rows`` rows (zero-copy)."""
    for start in range(0, item.num_rows, rows):
        part = item.slice(start, rows)
        yield from (part.to_batches() if isinstance(part, pa.Table) else [part])


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _longest(column: pa.ChunkedArray) -> int:
    import pyarrow.compute as pc

    return pc.max(pc.binary_length(column)).as_py() or 0 if len(column) else 0


def _with_widths(schema: pa.Schema, widths: dict[str, int]) -> pa.Schema:
    fields = []
    for f in schema:
        if f.name in widths:
            f = f.with_metadata({**(f.metadata or {}), WIDTH_KEY: str(widths[f.name]).encode()})
        fields.append(f)
    return pa.schema(fields)
