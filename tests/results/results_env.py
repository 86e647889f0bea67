"""Shared set-up for the results tests (a plain module: a conftest.py here would shadow the
``conftest`` that other test modules import by name).

Every test gets its own reference directory and store path, so no test reads the checkout's
reference CSVs or writes to the user's cache.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HEADER = "paper,reference,row,column,metric,value,unit,status,source,note"


def isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point MINIDB_REFERENCE_DIR at a new, empty directory and MINIDB_RESULTS into tmp_path."""
    directory = tmp_path / "reference"
    directory.mkdir()
    monkeypatch.setenv("MINIDB_REFERENCE_DIR", str(directory))
    monkeypatch.setenv("MINIDB_RESULTS", str(tmp_path / "default-results.duckdb"))
    return directory


def write_reference_csv(directory: Path, name: str, *lines: str, header: str = HEADER) -> Path:
    """A reference CSV with the standard header (unless told otherwise) and these lines."""
    path = directory / name
    path.write_text("\n".join((header, *lines)) + "\n", encoding="utf-8")
    return path
