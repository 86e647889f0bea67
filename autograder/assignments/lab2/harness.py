"""Lab 2's harness: run a submitted join plug-in on one case and write down what it did.

It runs in the sandboxed child (beside a stubbed minidb whose own Hybrid and GRACE joins raise)
and reports raw observations only: the pairs it joined (the ``a_id`` of the probe tuple and the
``b_id`` of the build tuple of every output row) and the counters it kept. Whether they are right
is decided by the grader, in its own process, from its own copy of the inputs; the grader also
runs minidb's own Hybrid hash join through ``run_join`` below, the same code, for the counters
to compare with.
"""

from __future__ import annotations

import inspect
import tempfile
import traceback
from pathlib import Path

import numpy as np

from minidb.buffer.manager import BufferManager
from minidb.exec.iterator import ExecContext
from minidb.exec.join.base import JoinAlgorithm
from minidb.exec.scan import ArrayScan
from minidb.plugins import lookup
from minidb.storage.disk import Disk
from minidb.storage.schema import Schema, char_column, int_column

PAGE_SIZE = 4096
BUFFER_PAGES = 64
BATCH_ROWS = 1000
BUILD_BATCH, PROBE_BATCH = 700, 900  # rows per input batch: the spill decisions depend on them
COUNTERS = ("build_tuples", "probe_tuples", "partitions_spilled", "spill_pages_written",
            "spill_pages_read", "partitioned_tuples", "peak_memory_pages", "matches")


def plugin_class(kind: str, name: str) -> type:
    """The class the submission registered as ``name`` of ``kind``, checked to be a join."""
    cls = lookup(kind, name)
    if not (isinstance(cls, type) and issubclass(cls, JoinAlgorithm)):
        raise TypeError(f"{name!r} is registered as {cls!r}, which is not a subclass of "
                        "minidb.exec.join.base.JoinAlgorithm")
    return cls


def relation(prefix: str, keys: np.ndarray) -> tuple[Schema, np.ndarray]:
    """A relation ``{prefix}_id`` (0, 1, ...), ``{prefix}_key`` (the case's keys) and a 40-byte
    pad, so a page holds about 70 tuples."""
    key = (int_column(f"{prefix}_key", "int64") if keys.dtype.kind == "i"
           else char_column(f"{prefix}_key", keys.dtype.itemsize))
    schema = Schema([int_column(f"{prefix}_id", "int64"), key, char_column(f"{prefix}_pad", 40)])
    rows = np.zeros(len(keys), dtype=schema.dtype)
    rows[f"{prefix}_id"] = np.arange(len(keys))
    rows[f"{prefix}_key"] = keys
    rows[f"{prefix}_pad"] = b"pad"
    return schema, rows


def run_case(plugin: type, case: dict, arrays: dict[str, np.ndarray]) -> dict:
    if case["kind"] != "join":
        raise ValueError(f"unknown case kind {case['kind']!r}")
    return run_join(plugin, case["memory"], arrays[case["build"]], arrays[case["probe"]])


def run_join(plugin: type, memory: int, build_keys: np.ndarray, probe_keys: np.ndarray) -> dict:
    """Join ``probe.a_key = build.b_key`` with ``plugin`` in ``memory`` pages; report the pairs
    (sorted) and the counters, or the error and where in the submission it happened."""
    (bs, b), (ps, p) = relation("b", build_keys), relation("a", probe_keys)
    with tempfile.TemporaryDirectory(prefix="lab2-") as where:
        disk = Disk(where, PAGE_SIZE)
        ctx = ExecContext(disk, BufferManager(disk, BUFFER_PAGES), batch_rows=BATCH_ROWS)
        try:
            op = plugin(ctx, ArrayScan(bs, b, BUILD_BATCH), ArrayScan(ps, p, PROBE_BATCH),
                        "b_key", "a_key", memory)
            out = op.collect()
            pairs = sorted(zip(out["a_id"].tolist(), out["b_id"].tolist(), strict=True))
            counters = {k: int(op.stats.extra.get(k, 0)) for k in COUNTERS}
            return {"pairs": [list(x) for x in pairs], "counters": counters, "error": None}
        except Exception as exc:  # the grader says why
            return {"pairs": [], "counters": {},
                    "error": f"{type(exc).__name__}: {exc}{_where(exc, plugin)}"[:500]}
        finally:
            disk.close()


def _where(exc: BaseException, plugin: type) -> str:
    """`` (hybrid_hash.py, line 12)``: the last place in the submission's file the error passed."""
    try:
        home = inspect.getsourcefile(plugin)
        frames = [t for t in traceback.extract_tb(exc.__traceback__) if t.filename == home]
    except (TypeError, OSError):
        return ""
    return f" ({Path(home).name}, line {frames[-1].lineno})" if frames else ""
