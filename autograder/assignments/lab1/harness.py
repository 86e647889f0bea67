"""Lab 1's harness: drive a submitted plugin through one case and write down what it did.

It runs in the sandboxed child (copied there beside a stubbed minidb) and reports raw
observations only: for a partitioner, the boundaries it chose, the node of every tuple and its
answers to ``nodes_for_range``; for a replacement policy, the frame it chose at every eviction
while a trace of page references runs through minidb's real ``BufferManager``. Whether they are
right is decided by the grader, in its own process, from its own copy of the inputs.

The grader imports this module too: ``run_ops`` replays a trace in the parent (with the
student's recorded victims, and with the reference policy) exactly as the child ran it.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from minidb.buffer import BufferManager
from minidb.buffer.policy import ReplacementPolicy
from minidb.parallel.partitioners import Partitioner
from minidb.plugins import lookup
from minidb.storage.disk import Disk, PagedFile
from minidb.storage.page import HeapPageFormat

PAGE_SIZE = 2048
BASES = {"partitioner": Partitioner, "buffer_policy": ReplacementPolicy}


def plugin_class(kind: str, name: str) -> type:
    """The class the submission registered as ``name`` of ``kind``, checked to be one."""
    cls = lookup(kind, name)
    base = BASES[kind]
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise TypeError(f"{name!r} is registered as {cls!r}, which is not a subclass of "
                        f"{base.__module__}.{base.__name__}")
    return cls


def run_case(plugin: type, case: dict, arrays: dict[str, np.ndarray]) -> dict:
    if case["kind"] == "partition":
        return partition_steps(plugin, case, arrays)
    if case["kind"] == "trace":
        return trace_victims(plugin, case)
    raise ValueError(f"unknown case kind {case['kind']!r}")


# -- partitioners -------------------------------------------------------------------------------
def partition_steps(plugin: type, case: dict, arrays: dict[str, np.ndarray]) -> dict:
    """Build the partitioner, then for each step: fit, route, read boundaries, ask ranges."""
    p = plugin(case["column"]) if case.get("sample") is None else plugin(case["column"], sample=case["sample"])
    steps = []
    for step in case["steps"]:
        fit = None if step["fit"] is None else arrays[step["fit"]]
        kept = None if fit is None else fit.copy()
        p.fit(fit, step["num_nodes"])
        if fit is not None and not np.array_equal(fit, kept):
            raise ValueError("fit changed the batch it was given (sorted it in place?); the "
                             "relation must stay as it is: sort a copy, e.g. np.sort(values)")
        destinations = _node_numbers(p.route(arrays[step["route"]]), "route")
        boundaries = _values(getattr(p, "boundaries", None))
        ranges = [_node_numbers(p.nodes_for_range(lo, hi), "nodes_for_range", allow_none=True)
                  for lo, hi in step.get("ranges", [])]
        steps.append({"destinations": destinations, "boundaries": boundaries, "ranges": ranges})
    return {"steps": steps}


def _node_numbers(value: object, what: str, allow_none: bool = False) -> list[int] | None:
    if value is None and allow_none:
        return None
    array = np.asarray(value)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise TypeError(f"{what} must give a one-dimensional array of integer node numbers, "
                        f"got {type(value).__name__} of dtype {array.dtype} and shape {array.shape}")
    return array.astype(np.int64).tolist()


def _values(boundaries: object) -> list | None:
    if boundaries is None:
        return None
    if not isinstance(boundaries, list | tuple | np.ndarray):
        raise TypeError(f"boundaries must be a list, got {type(boundaries).__name__}")
    out = []
    for b in list(boundaries):
        if isinstance(b, np.generic):
            b = b.item()
        if isinstance(b, bytes):
            b = b.rstrip(b"\0").decode("utf-8", "replace")
        if isinstance(b, bool) or not isinstance(b, int | float | str):
            raise TypeError(f"a boundary must be a number or a string, got {type(b).__name__}")
        out.append(b)
    return out


# -- replacement policies -----------------------------------------------------------------------
def make_file(disk: Disk, num_pages: int) -> PagedFile:
    """A page file of ``num_pages`` small heap pages for a trace to reference."""
    fmt = HeapPageFormat(PAGE_SIZE, np.dtype("<i8"))
    f = disk.create("trace")
    f.append_pages(fmt.pack(np.arange(num_pages * fmt.capacity, dtype=np.int64), 0))
    return f


def run_ops(buf: BufferManager, f: PagedFile, ops: list, before: Callable[[int], None] | None = None) -> None:
    """Apply a trace: ``["r", p]`` fixes and unfixes page p, ``["f", p]`` fixes it (pinned until
    a later ``["u", p]``), ``["u", p]`` unfixes it. ``before(i)`` is called before step i."""
    for i, (op, page) in enumerate(ops):
        if before is not None:
            before(i)
        if op == "r":
            buf.fix(f, page)
            buf.unfix(f, page)
        elif op == "f":
            buf.fix(f, page)
        elif op == "u":
            buf.unfix(f, page)
        else:
            raise ValueError(f"unknown trace step {op!r}")


def recording(policy: type) -> tuple[type, list[int]]:
    """A subclass of ``policy`` that writes down every victim it returns, and that list."""
    victims: list[int] = []

    class Recording(policy):
        def choose_victim(self, candidates):
            victim = super().choose_victim(candidates)
            try:
                victims.append(int(victim))
            except (TypeError, ValueError, OverflowError):
                raise TypeError(f"choose_victim must return a frame number, got {victim!r:.80}") from None
            return victim

    Recording.__name__ = Recording.__qualname__ = policy.__name__
    return Recording, victims


def trace_victims(plugin: type, case: dict) -> dict:
    """Run the case's trace with the submitted policy; report the victims, and where and why it
    stopped if it raised."""
    disk = Disk(Path.cwd() / f"case-{case['id']}", PAGE_SIZE)
    f = make_file(disk, case["pages"])
    policy, victims = recording(plugin)
    step = [0]
    error = None
    try:
        buf = BufferManager(disk, case["frames"], policy)
        run_ops(buf, f, case["ops"], before=lambda i: step.__setitem__(0, i))
    except Exception as exc:  # the grader replays the victims and says where it went wrong
        error = f"{type(exc).__name__}: {exc}{_where(exc, plugin)}"[:1000]
    finally:
        disk.close()
    return {"victims": victims, "error": error, "step": step[0] if error else None}


def _where(exc: BaseException, plugin: type) -> str:
    """`` (policy.py, line 12)``: the last place in the submission's file the error passed."""
    try:
        home = inspect.getsourcefile(plugin)
        frames = [t for t in traceback.extract_tb(exc.__traceback__) if t.filename == home]
    except (TypeError, OSError):
        return ""
    return f" ({Path(home).name}, line {frames[-1].lineno})" if frames else ""
