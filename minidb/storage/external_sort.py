"""An external merge sort of records on one column, for loads whose file must be in key order.

A clustered file (``minidb.index.clustered``) stores its relation sorted on the key. Sorting the
whole relation at once needs it all in memory; ``ExternalSorter`` needs a constant number of
batches instead (Knuth's sort-merge, as every database's bulk loader does):

1. ``add`` collects records until ``run_rows`` are held, sorts them on the key and writes them
   to a temporary file: a *sorted run*.
2. ``sorted_batches`` merges the runs: it holds a chunk of ``run_rows / k`` records of each of
   the k runs and repeatedly emits every held record whose key is below the *bound*, the
   smallest last key held from a run that has more records on disk (nothing still on disk can
   be smaller than that), refilling a run's chunk when it is used up.

The result is exactly ``records[np.argsort(records[key], kind="stable")]``: each run is sorted
stably, the runs are the input in order, and records with equal keys are emitted run by run (a
key equal to the bound is emitted only from the first run holding it, and only when nothing
below the bound is left). Comparisons use ``np.searchsorted`` on sorted keys, which orders
values (NaN included) exactly as ``np.sort`` does.

The runs live in a temporary directory outside the database (removed by ``close``); a sort that
never fills one run stays in memory.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from minidb.storage.schema import concat_records


class ExternalSorter:
    """Sort records of ``dtype`` on field ``key`` holding about ``run_rows`` records at a time."""

    def __init__(self, dtype: np.dtype, key: str, run_rows: int):
        self.dtype, self.key, self.run_rows = np.dtype(dtype), key, max(1, int(run_rows))
        self.held: list[np.ndarray] = []
        self.held_rows = 0
        self.runs: list[tuple[Path, int]] = []  # (file, records)
        self._dir: Path | None = None

    def add(self, records: np.ndarray) -> None:
        """Take the next records of the input (in input order)."""
        while len(records):
            take = min(len(records), self.run_rows - self.held_rows)
            self.held.append(records[:take])
            self.held_rows += take
            records = records[take:]
            if self.held_rows == self.run_rows:
                self._spill()

    def sorted_batches(self) -> Iterator[np.ndarray]:
        """All records taken, in key order (stable), in batches of at most about ``run_rows``."""
        if not self.runs:  # everything fits one run: sort it in memory
            run = self._sorted_held()
            if len(run):
                yield run
            return
        if self.held_rows:
            self._spill()
        yield from self._merge()

    def close(self) -> None:
        """Remove the run files."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self.runs, self.held, self.held_rows = [], [], 0

    # -- runs ---------------------------------------------------------------------------------
    def _sorted_held(self) -> np.ndarray:
        run = concat_records(self.held, self.dtype)
        self.held, self.held_rows = [], 0
        return run[np.argsort(run[self.key], kind="stable")]

    def _spill(self) -> None:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="minidb-sort-"))
        run = self._sorted_held()
        path = self._dir / f"run-{len(self.runs)}.bin"
        run.tofile(path)
        self.runs.append((path, len(run)))

    def _merge(self) -> Iterator[np.ndarray]:
        chunk = max(1, self.run_rows // len(self.runs))
        readers = [_RunReader(path, n, self.dtype, chunk) for path, n in self.runs]
        while True:
            for r in readers:
                r.refill()
            live = [r for r in readers if len(r.buf)]
            if not live:
                return
            yield self._step(live)

    def _step(self, live: list[_RunReader]) -> np.ndarray:
        """Emit what can be emitted now (see the module docstring)."""
        key = self.key
        waiting = [r.buf[key][-1] for r in live if r.more_on_disk]
        if not waiting:
            parts = [r.take(len(r.buf)) for r in live]
        else:
            bound = np.sort(np.array(waiting, dtype=self.dtype[key]))[:1]
            below = [int(np.searchsorted(r.buf[key], bound[0], "left")) for r in live]
            if any(below):
                parts = [r.take(n) for r, n in zip(live, below, strict=True) if n]
            else:  # every head equals the bound: the first run holding it goes first
                first = next(r for r in live if np.searchsorted(r.buf[key], bound[0], "right"))
                parts = [first.take(int(np.searchsorted(first.buf[key], bound[0], "right")))]
        merged = concat_records(parts, self.dtype)
        return merged[np.argsort(merged[key], kind="stable")]


class _RunReader:
    """A chunk of one sorted run, read from its file as it is used up."""

    def __init__(self, path: Path, rows: int, dtype: np.dtype, chunk: int):
        self.path, self.rows, self.dtype, self.chunk = path, rows, dtype, chunk
        self.read = 0  # records read from the file so far
        self.buf = np.empty(0, dtype=dtype)

    @property
    def more_on_disk(self) -> bool:
        return self.read < self.rows

    def refill(self) -> None:
        if len(self.buf) or not self.more_on_disk:
            return
        n = min(self.chunk, self.rows - self.read)
        self.buf = np.fromfile(self.path, dtype=self.dtype, count=n,
                               offset=self.read * self.dtype.itemsize)
        self.read += n

    def take(self, n: int) -> np.ndarray:
        out, self.buf = self.buf[:n], self.buf[n:]
        return out
