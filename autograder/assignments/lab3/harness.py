"""Lab 3's harness: drive a submitted gatherer through one case and write down what it did.

It runs in the sandboxed child (beside a stubbed minidb whose own grouped unfix raises) and
reports raw observations only:

* a ``traces`` case feeds each stream of cluster ids (one array per stream) to a fresh
  gatherer, one ``unfix`` per record, then ``close``, and reports the calls it made, in order
  (with ``close_twice``, it then calls ``close`` again and reports that one's calls apart);
* a ``sort`` case runs minidb's parallel sort with the submission as every operator's gatherer
  and reports the buffer-manager calls counted per process, pool and kind, the records each
  operator unfixed, and a digest of the sorted output.

Whether any of it is right is decided by the grader, in its own process, from its own copy of
the inputs (``autograder.assignments.lab3.unfix_cases``).
"""

from __future__ import annotations

import hashlib
import inspect
import traceback
from pathlib import Path

from minidb.plugins import lookup
from minidb.volcano.psort import SortSetup, parallel_sort
from minidb.volcano.records import sort_records
from minidb.volcano.unfix import UnfixGatherer


def plugin_class(kind: str, name: str) -> type:
    """The class the submission registered as ``name`` of ``kind``, checked to be one."""
    cls = lookup(kind, name)
    if not (isinstance(cls, type) and issubclass(cls, UnfixGatherer)):
        raise TypeError(f"{name!r} is registered as {cls!r}, which is not a subclass of "
                        "minidb.volcano.unfix.UnfixGatherer")
    return cls


def run_case(plugin: type, case: dict, arrays: dict) -> dict:
    if case["kind"] == "traces":
        return run_traces(plugin, case, arrays)
    if case["kind"] == "sort":
        return run_sort(case)
    raise ValueError(f"unknown case kind {case['kind']!r}")


def run_traces(plugin: type, case: dict, arrays: dict) -> dict:
    streams = []
    for i, entries in enumerate(case["entries"]):
        made: list[list[int]] = []
        again: list[list[int]] = []  # calls of a second close (close_twice)
        error = None
        try:
            gatherer = plugin(entries, _recorder(made))
            for cluster in arrays[case["arrays"][i]].tolist():
                gatherer.unfix(cluster)
            gatherer.close()
            if case.get("close_twice"):  # close leaves the table empty: a second one makes no call
                closed = len(made)
                gatherer.close()
                made, again = made[:closed], made[closed:]
        except Exception as exc:  # the grader says which stream and why
            error = f"{type(exc).__name__}: {exc}{_where(exc, plugin)}"[:500]
        streams.append({"calls": made, "again": again, "error": error})
    return {"streams": streams}


def run_sort(case: dict) -> dict:
    error, calls, by, balanced, digest = None, [], {}, False, ""
    try:
        records = sort_records(case["rows"], seed=case["seed"])
        run = parallel_sort(records, SortSetup(
            processes=case["processes"], cluster_bytes=case["cluster_kb"] * 1024,
            pools=case["pools"], unfix=f"student_grouped_{case['entries']}",
            sort_space_bytes=case["sort_space_kb"] * 1024), runtime="inline")  # no threads here
        counters = run.buffer.counters
        calls = sorted([p, q, k, n] for (p, q, k), n in counters.calls.items())
        by = {"records": dict(counters.records_unfixed_by),
              "calls": dict(counters.record_calls_by)}
        balanced = run.buffer.balanced()
        out = run.output()
        digest = hashlib.sha256(out["key"].tobytes() + out["payload"].tobytes()).hexdigest()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    return {"calls": calls, "by_operator": by, "balanced": balanced, "digest": digest,
            "error": error}


def _recorder(made: list[list[int]]):
    """The ``call(cluster, count)`` given to the gatherer: it writes each call down."""
    return lambda cluster, count: made.append([_int(cluster), _int(count)])


def _int(value: object) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"call(cluster, count) needs whole numbers, got "
                        f"{type(value).__name__} {value!r:.60}")
    return int(value.__index__())


def _where(exc: BaseException, plugin: type) -> str:
    """`` (unfix.py, line 12)``: the last place in the submission's file the error passed."""
    try:
        home = inspect.getsourcefile(plugin)
        frames = [t for t in traceback.extract_tb(exc.__traceback__) if t.filename == home]
    except (TypeError, OSError):
        return ""
    return f" ({Path(home).name}, line {frames[-1].lineno})" if frames else ""

