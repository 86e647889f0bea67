"""Copying the results stores the explorer's tests share between xdist workers."""

from __future__ import annotations

import shutil
from pathlib import Path

from filelock import FileLock


def copy_store(source: Path, copy: Path) -> None:
    """Copy a shared store while holding its lock (``ResultsStore``'s ``<path>.lock``), so that
    no worker copies it halfway through another's call on it."""
    with FileLock(str(Path(source).resolve()) + ".lock"):
        shutil.copyfile(source, copy)
