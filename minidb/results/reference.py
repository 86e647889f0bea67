"""The papers' published numbers, read from the reference CSVs in ``datasets/reference/``.

Each CSV file holds *reference cells*: one number of one table or figure of a paper, with its
provenance. The header is exactly::

    paper,reference,row,column,metric,value,unit,status,source,note

``paper`` is one of the five papers (``PAPERS``); ``reference`` names the table or figure
(``"Table 1"``, ``"Figure 2"``); ``row`` and ``column`` are slugs that name the cell the same way
an experiment's result rows do, so that a reproduced value and its published value meet on
``(paper, reference, row, column, metric)``. ``status`` says how far the cell could be read:

========== ==========================================================================
ok         the number is printed in the paper; ``value`` holds it
prose      the number is stated in the text rather than a table; ``value`` may be empty
unreadable the scan cannot be read with confidence; ``value`` is empty
shape      only the shape of a curve is published (a figure); ``value`` is empty
========== ==========================================================================

``load_reference`` reads every ``*.csv`` of the directory, checks each line and returns the
cells as one ``pyarrow.Table`` (schema ``REFERENCE_SCHEMA``, with the ``file`` and ``line`` each
cell came from). A malformed file stops the load with an error naming the file and the line.

Simplifications (on purpose): the files are small, so they are read whole with Python's ``csv``
module; units are checked for presence, not converted (a reproduction in ms against a cell in s
is the experiment's mistake to avoid).
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from minidb.errors import MinidbError

REFERENCE_DIR_ENV = "MINIDB_REFERENCE_DIR"
"""Environment variable naming the directory of reference CSVs (overrides the default)."""

REFERENCE_COLUMNS: tuple[str, ...] = (
    "paper", "reference", "row", "column", "metric", "value", "unit", "status", "source", "note",
)
"""The header every reference CSV must have, in this order."""

STATUSES: tuple[str, ...] = ("ok", "prose", "unreadable", "shape")
"""How far a cell could be read from the paper (see the module docstring)."""

PAPERS: tuple[str, ...] = ("gamma", "tandem", "volcano", "lhstar", "ingres")
"""The five papers minidb rebuilds, by the short name used in rows and reference cells."""

_VALUE_REQUIRED = frozenset({"ok"})
_VALUE_FORBIDDEN = frozenset({"unreadable", "shape"})
_REQUIRED_TEXT = ("paper", "reference", "row", "column", "metric", "status")

REFERENCE_SCHEMA = pa.schema([
    ("paper", pa.string()),
    ("reference", pa.string()),
    ("row", pa.string()),
    ("column", pa.string()),
    ("metric", pa.string()),
    ("value", pa.float64()),
    ("unit", pa.string()),
    ("status", pa.string()),
    ("source", pa.string()),
    ("note", pa.string()),
    ("file", pa.string()),
    ("line", pa.int32()),
])
"""Columns of ``load_reference``'s table: the CSV columns (``value`` as a float, null when
empty) plus the file name and the line number each cell was read from."""


class ReferenceDataError(MinidbError):
    """A reference CSV is malformed; the message names the file and the line."""


class MissingReferenceError(ReferenceDataError):
    """The directory of reference CSVs does not exist."""


@dataclass(frozen=True)
class ReferenceSnapshot:
    """The reference cells of one directory as read at one moment, with a checksum of the files.

    The checksum covers every file's name and bytes, so a store can tell whether the CSVs changed
    since it last loaded them without parsing them again.
    """

    directory: Path
    checksum: str
    table: pa.Table


def reference_dir() -> Path:
    """The directory of reference CSVs: ``$MINIDB_REFERENCE_DIR`` if set, else the checkout's
    ``datasets/reference`` (found next to the installed ``minidb`` package)."""
    configured = os.environ.get(REFERENCE_DIR_ENV, "").strip()
    if configured:
        directory = Path(configured).expanduser()
        where = f"{REFERENCE_DIR_ENV}={configured}"
    else:
        directory = Path(__file__).resolve().parents[2] / "datasets" / "reference"
        where = "the default next to the minidb package"
    if not directory.is_dir():
        raise MissingReferenceError(
            f"reference directory {directory} ({where}) does not exist; set {REFERENCE_DIR_ENV} "
            f"to the folder holding the papers' reference CSVs (datasets/reference in a checkout)")
    return directory


def reference_files(directory: str | Path | None = None) -> list[Path]:
    """The ``*.csv`` files of ``directory`` (default ``reference_dir()``), sorted by name."""
    root = Path(directory) if directory is not None else reference_dir()
    if not root.is_dir():
        raise MissingReferenceError(f"reference directory {root} does not exist")
    return sorted(p for p in root.glob("*.csv") if p.is_file())


def snapshot_reference(directory: str | Path | None = None) -> ReferenceSnapshot:
    """Read, check and checksum every reference CSV of ``directory`` (default ``reference_dir()``)."""
    root = Path(directory) if directory is not None else reference_dir()
    files = [(path, path.read_bytes()) for path in reference_files(root)]
    cells: list[dict] = []
    for path, data in files:
        cells.extend(parse_reference_csv(data, path))
    _check_unique(cells)
    table = pa.Table.from_pylist(cells, schema=REFERENCE_SCHEMA)
    return ReferenceSnapshot(directory=root, checksum=_checksum(files), table=table)


def reference_checksum(directory: str | Path | None = None) -> str:
    """The checksum of ``snapshot_reference`` without parsing the files: tells cheaply whether
    the CSVs changed."""
    root = Path(directory) if directory is not None else reference_dir()
    return _checksum([(path, path.read_bytes()) for path in reference_files(root)])


def _checksum(files: Sequence[tuple[Path, bytes]]) -> str:
    digest = hashlib.sha256()
    for path, data in files:
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(data).digest() + b"\n")
    return digest.hexdigest()


def load_reference(paper: str | None = None,
                   directory: str | Path | None = None) -> pa.Table:
    """Every reference cell (of one ``paper`` if given) as a ``pyarrow.Table`` (``REFERENCE_SCHEMA``).

    An empty directory gives an empty table; a malformed file raises ``ReferenceDataError``.
    """
    table = snapshot_reference(directory).table
    if paper is not None:
        table = table.filter(pc.equal(table["paper"], paper))
    return table


def parse_reference_csv(data: bytes | str, path: str | Path = "<reference csv>") -> list[dict]:
    """Check one reference CSV (its text or bytes) and return its cells as dicts.

    ``path`` only names the file in errors and in each cell's ``file``.
    """
    path = Path(path)
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ReferenceDataError(f"{path}: not UTF-8 text ({err.reason} at byte "
                                     f"{err.start}); save the file as UTF-8") from None
    reader = csv.reader(io.StringIO(data, newline=""))
    try:
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != list(REFERENCE_COLUMNS):
            found = ",".join(header) if header else "an empty file"
            raise _error(path, 1, f"header must be exactly {','.join(REFERENCE_COLUMNS)!r}, "
                                  f"found {found!r}")
        cells = []
        line = reader.line_num + 1
        for fields in reader:
            if fields and any(f.strip() for f in fields):
                cells.append(_parse_cell(fields, path, line))
            line = reader.line_num + 1
    except csv.Error as err:
        raise _error(path, reader.line_num, f"not valid CSV ({err})") from None
    return cells


def _parse_cell(fields: Sequence[str], path: Path, line: int) -> dict:
    if len(fields) != len(REFERENCE_COLUMNS):
        raise _error(path, line, f"{len(fields)} fields, expected {len(REFERENCE_COLUMNS)} "
                                 f"({','.join(REFERENCE_COLUMNS)}); quote text that holds commas")
    cell: dict = {name: text.strip() for name, text in zip(REFERENCE_COLUMNS, fields, strict=True)}
    for name in _REQUIRED_TEXT:
        if not cell[name]:
            raise _error(path, line, f"{name!r} is empty")
    if cell["paper"] not in PAPERS:
        raise _error(path, line, f"paper {cell['paper']!r} is not one of {', '.join(PAPERS)}")
    status = cell["status"]
    if status not in STATUSES:
        raise _error(path, line, f"status {status!r} is not one of {', '.join(STATUSES)}")
    text = cell["value"]
    if status in _VALUE_FORBIDDEN and text:
        raise _error(path, line, f"status {status!r} needs an empty value, found {text!r}")
    if status in _VALUE_REQUIRED and not text:
        raise _error(path, line, f"status {status!r} needs a value; use 'unreadable' if the "
                                 f"paper's number cannot be read")
    value = None
    if text:
        try:
            value = float(text)
        except ValueError:
            raise _error(path, line, f"value {text!r} is not a number (write 1234.5, no "
                                     f"thousands separators or units)") from None
        if not math.isfinite(value):
            raise _error(path, line, f"value {text!r} is not a finite number")
    cell["value"] = value
    cell["file"] = path.name
    cell["line"] = line
    return cell


def _check_unique(cells: list[dict]) -> None:
    """Two cells with the same key would each match the same reproduction: refuse them."""
    seen: dict[tuple, dict] = {}
    for cell in cells:
        key = (cell["paper"], cell["reference"], cell["row"], cell["column"], cell["metric"])
        if key in seen:
            first = seen[key]
            raise ReferenceDataError(
                f"{cell['file']}, line {cell['line']}: cell {'/'.join(key)} is already defined in "
                f"{first['file']}, line {first['line']}; keep one of them")
        seen[key] = cell


def _error(path: Path, line: int, message: str) -> ReferenceDataError:
    return ReferenceDataError(f"{path}, line {line}: {message}")


# ---------------------------------------------------------------------- prose facts

PROSE_FACTS_FILE = Path("prose") / "prose_facts.csv"
"""Under the reference directory: the figures the papers state in their text that the cost
model uses or should be checked against (page layouts, machine speeds, messages per operation,
stated conclusions). They are inputs and sanity checks, not cells a run reproduces, so they live
in a subfolder that ``load_reference`` does not read."""

PROSE_FACT_COLUMNS: tuple[str, ...] = (
    "paper", "section", "quantity", "value", "unit", "source", "description",
)


def load_prose_facts(directory: str | Path | None = None) -> list[dict]:
    """Every prose fact (``PROSE_FACTS_FILE`` under ``directory``, default ``reference_dir()``)
    as a dict with ``PROSE_FACT_COLUMNS`` (``value`` a float, or None where the paper gives no
    number, e.g. a conclusion) and the ``line`` it was read from. A row without a paper,
    quantity, unit or source, or with a value that is not a number, is a ``ReferenceDataError``."""
    path = (Path(directory) if directory is not None else reference_dir()) / PROSE_FACTS_FILE
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as err:
        raise MissingReferenceError(f"cannot read the prose facts {path} ({err.strerror or err})"
                                    ) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if tuple(reader.fieldnames or ()) != PROSE_FACT_COLUMNS:
        raise _error(path, 1, f"header must be exactly {','.join(PROSE_FACT_COLUMNS)!r}")
    facts = []
    for record in reader:
        line = reader.line_num
        fact = {k: (record.get(k) or "").strip() for k in PROSE_FACT_COLUMNS}
        for name in ("paper", "section", "quantity", "unit", "source", "description"):
            if not fact[name]:
                raise _error(path, line, f"{name!r} is empty")
        if fact["paper"] not in PAPERS:
            raise _error(path, line, f"paper {fact['paper']!r} is not one of {', '.join(PAPERS)}")
        try:
            fact["value"] = float(fact["value"]) if fact["value"] else None
        except ValueError:
            raise _error(path, line, f"value {fact['value']!r} is not a number") from None
        fact["line"] = line
        facts.append(fact)
    return facts
