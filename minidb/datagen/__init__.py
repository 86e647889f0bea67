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

Two safety rules. ``generate`` first estimates the memory the table needs (``MEMORY_PER_ROW``) and
refuses, in one line saying how much, when the machine does not have it available, instead of
swapping or being killed half way. ``write_parquet`` never damages the path it is given: it
writes a temporary file beside it and renames it into place only when the whole file is written
(a failed write, a full disk, leaves the old file as it was and removes only the temporary file),
and it refuses a path that exists and is not a regular file (a directory, a device, a pipe).
"""

from __future__ import annotations

import inspect
import os
import secrets
import stat
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
from minidb.storage.schema import Schema

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
    rows, start, stop = check_slice(key, rows, start, stop)
    check_memory(key, stop - start, generator(rows, seed=seed, start=0, stop=0, **options))
    return generator(rows, seed=seed, start=start, stop=stop, **options)



class GeneratedBatches:
    """The relation ``generate(name, rows, seed, **options)`` gives, as an iterable of slices of
    ``batch_rows`` rows (each exactly those rows of the whole relation, see *Sliceable*), so a
    load can store it without ever holding all of it. ``num_rows`` and ``schema`` are known
    before the first slice is made; the memory check is made per slice."""

    def __init__(self, name: str, rows: int, seed: int = 0, batch_rows: int = 65_536, **options):
        self.name, self.seed, self.options = name, seed, options
        self.num_rows = rows
        self.batch_rows = batch_rows
        self.schema = generate(name, rows, seed=seed, start=0, stop=0, **options).schema

    def __iter__(self):
        for start in range(0, self.num_rows, self.batch_rows):
            stop = min(self.num_rows, start + self.batch_rows)
            yield generate(self.name, self.num_rows, seed=self.seed, start=start, stop=stop,
                           **self.options)


def generate_batches(name: str, rows: int, seed: int = 0, batch_rows: int = 65_536,
                     **options) -> GeneratedBatches:
    """``generate(name, rows, seed, **options)`` as slices of ``batch_rows`` rows, for loading
    in bounded memory: ``create_table("t", generate_batches("wisconsin", 10**7))``."""
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise MinidbError(f"batch_rows must be a whole number of at least 1, not {batch_rows!r}")
    return GeneratedBatches(name, rows, seed, batch_rows, **options)

#: bytes of memory a generated row needs, as ``(factor, extra)``: factor x the record width plus
#: extra (the Arrow table, the generators' numpy intermediates and Parquet's buffers; measured
#: on the six generators, the largest is below 2 x width + 64)
MEMORY_PER_ROW = (2, 64)


def memory_needed(rows: int, record_width: int) -> int:
    """Estimated bytes of memory to generate ``rows`` rows of ``record_width`` bytes."""
    factor, extra = MEMORY_PER_ROW
    return rows * (factor * record_width + extra)


def available_memory() -> int | None:
    """Bytes of memory a new allocation can get: the machine's available memory (Linux
    MemAvailable, else psutil's), lowered to this process's address-space limit if it has one;
    None if unknown."""
    found = [n for n in (_machine_available(), _address_space_limit()) if n is not None]
    return min(found) if found else None


def _machine_available() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def _address_space_limit() -> int | None:
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def check_memory(name: str, rows: int, empty: pa.Table) -> None:
    """Refuse, before allocating anything, a table that needs more memory than is available."""
    needed = memory_needed(rows, Schema.from_arrow(empty.schema).record_width)
    available = available_memory()
    if available is not None and needed > available:
        raise MinidbError(
            f"{name}: {rows:,} rows need about {_gb(needed)} of memory and this machine has "
            f"{_gb(available)} available; generate fewer rows (or a slice with start/stop)"
        )


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def write_parquet(table: pa.Table, path: str | Path) -> Path:
    """Write ``table`` to a Parquet file at ``path``, keeping the char(n) widths; returns the path.

    Arrow stores its schema, field metadata included, inside the Parquet file, so reading it
    back with ``pyarrow.parquet.read_table`` gives the same widths. The file is written under a
    temporary name in the same directory and renamed over ``path`` once complete, so ``path`` is
    either its old self or the whole new file; a ``path`` that exists and is not a regular file
    is refused. A symbolic link to a regular file is followed: the file it names is replaced.
    """
    path = Path(path)
    target = path.resolve() if path.is_symlink() else path
    check_output_path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp, fd = _create_temporary_beside(target)
    except OSError as e:
        raise MinidbError(f"cannot write {shown_path(path)}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as fh:  # a file object: pyarrow never removes what it did not open
            pq.write_table(table, fh, store_schema=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as e:
        tmp.unlink(missing_ok=True)  # the one file this function created
        raise MinidbError(f"cannot write {shown_path(path)}: {e.strerror or e}; "
                          f"{shown_path(path)} was left as it was") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def check_output_path(path: Path) -> None:
    """An output path must be a regular file or not exist yet (never a directory or device)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise MinidbError(f"cannot write {shown_path(path)}: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a device or pipe)"
        raise MinidbError(f"{shown_path(path)} is {kind}; give the path of a Parquet file to write")


def _create_temporary_beside(target: Path) -> tuple[Path, int]:
    """A new, empty file in ``target``'s directory under a name no other file has (O_EXCL)."""
    while True:
        tmp = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def shown_path(path: Path) -> str:
    """A path as text that can always be printed (undecodable bytes shown as escapes)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


__all__ = [
    "GENERATORS",
    "generate",
    "generate_batches",
    "GeneratedBatches",
    "write_parquet",
    "check_output_path",
    "shown_path",
    "dense_unique",
    "wisconsin",
    "tandem",
    "emp",
    "dept",
    "sortrec",
    "intpairs",
]
