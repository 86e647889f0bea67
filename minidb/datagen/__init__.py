"""Data generators: the synthetic relations of the five papers, as Arrow tables.

Each generator is a function ``NAME(rows, seed=0, ..., start=0, stop=None) -> pyarrow.Table``:

    wisconsin(rows)      the Wisconsin benchmark relation, 16 attributes, 208 bytes a tuple
                         (Gamma 1988, Section 4)
    tandem(rows)         NonStop SQL's Wisconsin-like table, random values, 200 bytes a row
                         (NonStop SQL 1989, Section 4)
    emp(rows=30000)      EMP(name, salary, manager, age, dept), 38 bytes a tuple
    dept(rows=1500)      DEPT(dname, floor, budget), 18 bytes a tuple (Distributed INGRES 1983)
    sortrec(rows)        100-byte records with a 10-byte key (the Datamation sort layout)
    intpairs(rows)       (key, value) pairs of unique int32s, 8 bytes (LH* on Monet 1997)

Three promises hold for all of them:

* Deterministic: the same (rows, seed) always gives the same table, on any machine; another
  seed gives another table of the same shape.
* Sliceable: ``NAME(rows, seed, start=a, stop=b)`` is exactly rows a..b-1 of the whole
  relation, computed without the other rows, so each node of a cluster can generate just its
  own partition. Unique keys come from dense-unique permutations (``dense_unique``), random
  values from a counter-based generator (``_random``): both compute row i from i alone.
* Fixed width: every table's Arrow schema comes from a ``minidb.storage.schema.Schema``, so
  char(n) columns carry their width in the field metadata and
  ``Schema.from_arrow(t.schema).record_width`` is the paper's tuple size.

Everything is vectorized with numpy: a million Wisconsin tuples take a fraction of a second.
``generate(name, rows, ...)`` picks a generator by name (the names of ``GENERATORS``) and
``write_parquet`` saves a table with its widths.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from minidb.datagen._common import check_slice
from minidb.datagen.dense_unique import dense_unique
from minidb.datagen.ingres import dept, emp
from minidb.datagen.intpairs import intpairs
from minidb.datagen.sortrec import sortrec
from minidb.datagen.tandem import tandem
from minidb.datagen.wisconsin import wisconsin
from minidb.errors import MinidbError

GENERATORS: dict[str, Callable[..., pa.Table]] = {
    "wisconsin": wisconsin,
    "tandem": tandem,
    "emp": emp,
    "dept": dept,
    "sortrec": sortrec,
    "intpairs": intpairs,
}

_COMMON = ("rows", "seed", "start", "stop")


def generate(
    name: str, rows: int, seed: int = 0, start: int = 0, stop: int | None = None, **options
) -> pa.Table:
    """Rows [start, stop) of the generator ``name`` with ``rows`` rows in all.

    ``options`` go to the generator (e.g. ``departments`` for emp). Mistakes raise a one-line
    ``MinidbError`` saying what to change.
    """
    if not isinstance(name, str) or name.lower() not in GENERATORS:
        raise MinidbError(f"unknown generator {name!r}; use one of: {', '.join(GENERATORS)}")
    key = name.lower()
    generator = GENERATORS[key]
    allowed = [p for p in inspect.signature(generator).parameters if p not in _COMMON]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        extra = f"; it accepts: {', '.join(allowed)}" if allowed else "; it takes no other options"
        raise MinidbError(f"generator {key!r} has no option {', '.join(unknown)}{extra}")
    check_slice(key, rows, start, stop)
    return generator(rows, seed=seed, start=start, stop=stop, **options)


def write_parquet(table: pa.Table, path: str | Path) -> Path:
    """Write ``table`` to a Parquet file at ``path``, keeping the char(n) widths; returns the path.

    Arrow stores its schema, field metadata included, inside the Parquet file, so reading it
    back with ``pyarrow.parquet.read_table`` gives the same widths.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, store_schema=True)
    return path


__all__ = [
    "GENERATORS",
    "generate",
    "write_parquet",
    "dense_unique",
    "wisconsin",
    "tandem",
    "emp",
    "dept",
    "sortrec",
    "intpairs",
]
