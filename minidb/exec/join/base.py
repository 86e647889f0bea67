"""The plug point for join algorithms: one base class, each equi-join a registered subclass.

The Gamma paper (Section 6) compares joins that differ only in *how* they pair tuples: Gamma's
Simple hash with overflow resolution, Teradata's sort-merge, and the Hybrid hash join the authors
announce as the fix for overflow. In minidb each is a subclass of ``JoinAlgorithm`` registered
under a name, and the planner, the parallel nodes and the experiments pick one by that name
(``minidb.connect(join="hybrid_hash")``, the hint ``/*+ hybrid_hash */``, an experiment's
``join`` parameter). A student's join is written the same way and runs everywhere::

    from minidb.exec.join.base import JoinAlgorithm
    from minidb.plugins import register

    @register("join", "my_hash")
    class MyHashJoin(JoinAlgorithm):
        priced_counters = {"build_tuples": "hash_build", "probe_tuples": "hash_probe"}

        def run(self, memory_pages):
            build = self.read_all(self.build_batches())       # NULL keys already removed
            self.count("build_tuples", len(build))
            for batch in self.probe_batches():
                self.count("probe_tuples", len(batch))
                probe_idx, build_idx = self.equal_pairs(batch, build)
                yield from self.emit(batch, build, probe_idx, build_idx)

What the base class gives:

* the output schema (probe columns, then build columns: the outer tuple first, as every minidb
  join does) and the check that the two keys are comparable (text only with text);
* ``build_batches`` / ``probe_batches``: the inputs without their NULL-key tuples (NULL equals
  nothing, not even NULL), counted as this operator's input;
* ``equal_pairs``: every pair of equal keys between a probe batch and an in-memory table, through
  the hash table of ``key_directory.py``; ``emit``: the joined tuples of those pairs;
* ``spool`` and ``scan_spool``: temporary files whose pages are counted (``spill_pages_written``,
  ``spill_pages_read``) besides the disk's own counters, which price them on the modeled clock;
* ``count``: a counter in ``stats.extra``;
* for a LEFT OUTER JOIN (``self.outer``): ``probe_table``, which joins a probe batch with an
  in-memory table and pads the tuples that matched nothing, ``pad_all`` (probe tuples that
  cannot match: their partition of the build input is empty) and ``pad_unmatched``; the NULL-key
  probe tuples are padded at the end without the subclass doing anything.

Preserving the probe side (LEFT OUTER JOIN). A probe tuple comes out padded with a build tuple
of NULLs exactly once, and only when no build tuple it could match is left to meet: a join pads
it when it has met *every* build tuple of its key, never before. Where that moment is depends on
the algorithm, and the helpers follow it:

* a probe batch against a table that holds all the build tuples it can meet (an in-memory hash
  table, the partition of a GRACE or Hybrid join, the table of one Simple hash pass below its
  cut): ``probe_table`` pads at once;
* a probe tuple written to an overflow or partition file is not decided yet: it is padded when
  its file is joined (``join_in_memory``, a deeper level, ``pad_all`` for an empty partition);
* a probe file that meets the build input one memory-load at a time (``join_by_memory_loads``)
  keeps a flag per probe tuple across the loads and pads during the last one;
* ``emit(..., matched=flags)`` sets the flags, after the ON condition: a pair that fails it does
  not count as a match.

What a subclass declares:

* ``run(memory_pages)``: a generator of output batches. ``memory_pages`` is the budget the planner
  gave the join (the pages its in-memory tables and output buffers may hold); respecting it is
  part of the algorithm (the autograder checks it through ``peak_memory_pages``, which
  ``note_memory`` records). ``capacity()`` and ``pages(n)`` count a hash table's tuples per page
  of memory: on a machine whose profile sets ``hash_entry_bytes`` (Gamma's) an entry takes that
  much more than its tuple, so a page holds fewer tuples than a heap page;
* ``priced_counters``: which of its counters the modeled clock charges, and as which operator
  kind of ``minidb.cost.model.OPERATOR_COST_FIELD`` (``hash_build``, ``hash_probe``,
  ``partition``, ``sort_compare``, ``merge_compare`` ...). A join that declares none is refused
  when it is built, so a new algorithm cannot run for free on the modeled clock;
* ``min_memory_pages`` and ``supports_outer`` (whether it runs a LEFT OUTER JOIN; a class that
  leaves it False gets no ``outer=True``: the planners run such a join with the default hash
  join and say so in the plan);
* optionally ``announces_build = True``, yielding ``BUILD_DONE`` from ``run`` once the build input
  is consumed: ``open`` then builds, so in a parallel plan the build work falls in the build
  phase as in Gamma. Without it the join builds when its first output is asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar

import numpy as np

from minidb.errors import MinidbError, SchemaError
from minidb.exec.expr import Expr, is_true
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.join.key_directory import KeyDirectory
from minidb.exec.join.nested_loops import concat_rows, joined_schema
from minidb.exec.store import SpoolWriter, hash_table_capacity
from minidb.hashing import hash_column
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import NULLS, Schema, null_mask, take_records


class _BuildDone:
    def __repr__(self) -> str:
        return "BUILD_DONE"


BUILD_DONE = _BuildDone()
"""What ``run`` may yield (once) when it has consumed its whole build input and not yet read the
probe input; with ``announces_build = True`` the join's ``open`` runs it up to there."""


class JoinPluginError(MinidbError):
    """A join plug-in that cannot run as declared (no priced counters, no LEFT JOIN support)."""


def check_join_class(cls: type) -> None:
    """Refuse a join class that is not a ``JoinAlgorithm`` or that the modeled clock cannot price."""
    from minidb.cost.model import OPERATOR_COST_FIELD

    if not (isinstance(cls, type) and issubclass(cls, JoinAlgorithm)):
        raise JoinPluginError(f"a join plug-in must subclass JoinAlgorithm; {cls!r} does not")
    if not cls.priced_counters:
        raise JoinPluginError(
            f"join {cls.__name__} declares no priced_counters: the modeled clock would charge it "
            "nothing; map its counters to operator kinds, e.g. {'build_tuples': 'hash_build'}")
    unknown = sorted(set(cls.priced_counters.values()) - set(OPERATOR_COST_FIELD))
    if unknown:
        raise JoinPluginError(
            f"join {cls.__name__} prices counters as {', '.join(unknown)}, which the cost model "
            f"does not know; use one of: {', '.join(sorted(OPERATOR_COST_FIELD))}")


class JoinAlgorithm(Operator):
    """An equi-join ``probe.probe_key = build.build_key``; output = probe columns, then build's."""

    kind = "join"
    #: counter in ``stats.extra`` -> the operator kind the cost model prices it as
    priced_counters: ClassVar[Mapping[str, str]] = {}
    min_memory_pages: ClassVar[int] = 1
    supports_outer: ClassVar[bool] = False
    #: ``run`` yields ``BUILD_DONE`` once its build input is consumed: ``open`` then runs it that
    #: far, so a parallel plan's build phase does the building (Gamma §6: build, then probe)
    announces_build: ClassVar[bool] = False

    def __init__(self, ctx: ExecContext, build: Operator, probe: Operator, build_key: str,
                 probe_key: str, memory_pages: int, outer: bool = False,
                 condition: Expr | None = None):
        check_join_class(type(self))
        super().__init__(build, probe, memory_pages=memory_pages)
        if outer and not self.supports_outer:
            raise JoinPluginError(f"join {type(self).__name__} cannot run a LEFT OUTER JOIN")
        self.ctx, self.outer, self.condition = ctx, outer, condition
        build_col = build.schema.column(build_key, "the build input")
        probe_col = probe.schema.column(probe_key, "the probe input")
        if (build_col.kind == "char") != (probe_col.kind == "char"):
            raise SchemaError(
                f"{type(self).__name__} compares {probe_col} with {build_col}: text can only be "
                "joined with text")
        self.build_key, self.probe_key = build_col.name, probe_col.name
        padded = build.schema.nullable() if outer else build.schema  # NULLs pad unmatched rows
        self.schema = joined_schema(probe.schema, padded, type(self).__name__)
        self._padding = padded.new_records(1)
        if outer:
            self._padding[NULLS] = 0xFF  # every build column NULL
        self._output: Iterator[np.ndarray] | None = None
        self._null_probe: list[np.ndarray] = []

    # -- what a subclass writes ------------------------------------------------------------

    def run(self, memory_pages: int) -> Iterator[np.ndarray]:
        """The joined tuples, a batch at a time, within ``memory_pages`` pages of memory."""
        raise NotImplementedError(f"{type(self).__name__}.run is not written yet")

    # -- the iterator protocol ---------------------------------------------------------------

    def _open(self) -> None:
        memory = self.require_memory(self.min_memory_pages)
        super()._open()
        for name in ("matches", "peak_memory_pages", *self.priced_counters,
                     *(("padded",) if self.outer else ())):
            self.stats.extra.setdefault(name, 0)
        self._null_probe = []
        self._output = self._with_padding(self.run(memory))
        self._pending = None
        if self.announces_build:  # build now: in a parallel plan, in the build phase
            first = next(self._output, None)
            if first is not BUILD_DONE:
                self._pending = first  # an output batch (or the end) came first

    def _with_padding(self, rows: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        yield from rows
        if self.outer and self._null_probe:  # a NULL probe key matched nothing: pad it
            yield self.pad(np.concatenate(self._null_probe))

    def _next(self) -> np.ndarray | None:
        if self._pending is not None:
            batch, self._pending = self._pending, None
            return batch
        while (batch := next(self._output, None)) is BUILD_DONE:
            pass  # a later level's build: nothing to hand out
        return batch

    def _close(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None
        super()._close()

    def describe(self) -> str:
        how = "LEFT OUTER " if self.outer else ""
        return (f"{how}{type(self).__name__}({self.probe_key} = {self.build_key}; "
                f"{self.memory_pages} pages)")

    # -- helpers for subclasses --------------------------------------------------------------

    @property
    def build_schema(self) -> Schema:
        return self.children[0].schema

    @property
    def probe_schema(self) -> Schema:
        return self.children[1].schema

    def count(self, name: str, n: int = 1) -> None:
        self.stats.add(name, int(n))

    def note_memory(self, pages: int) -> None:
        """Record that the join now holds ``pages`` pages (the peak is ``peak_memory_pages``)."""
        extra = self.stats.extra
        extra["peak_memory_pages"] = max(extra.get("peak_memory_pages", 0), int(pages))

    def pages(self, rows: int, schema: Schema | None = None) -> int:
        """Pages of memory that ``rows`` tuples of ``schema`` (the build input's by default) fill
        in a hash table (``capacity``)."""
        return -(-int(rows) // self.capacity(schema))

    def capacity(self, schema: Schema | None = None) -> int:
        """Tuples of ``schema`` (the build input's by default) that one page of memory holds in
        a hash table: a heap page's worth, less what the machine's table spends on each entry
        beyond its tuple (``ctx.hash_entry_bytes``: bucket pointer, chain link, hash value; 0,
        so a heap page's worth exactly, unless the hardware profile models it, as Gamma's does)."""
        return hash_table_capacity(self.ctx.page_size, schema or self.build_schema,
                                   self.ctx.hash_entry_bytes)

    def build_batches(self) -> Iterator[np.ndarray]:
        """The build input a batch at a time, without tuples whose key is NULL."""
        while (batch := self._pull(self.children[0])) is not None:
            if (nulls := null_mask(batch, self.build_key)) is not None:
                batch = take_records(batch, ~nulls)
            if len(batch):
                yield batch

    def probe_batches(self) -> Iterator[np.ndarray]:
        """The probe input a batch at a time, without tuples whose key is NULL (a LEFT JOIN
        pads those at the end)."""
        while (batch := self._pull(self.children[1])) is not None:
            if (nulls := null_mask(batch, self.probe_key)) is not None:
                if self.outer and nulls.any():
                    self._null_probe.append(take_records(batch, nulls))
                batch = take_records(batch, ~nulls)
            if len(batch):
                yield batch

    def read_all(self, batches, dtype: np.dtype | None = None) -> np.ndarray:
        """Every tuple of an iterator of batches, as one array (an empty one of ``dtype``, the
        build input's by default, when there is none)."""
        parts = list(batches)
        if not parts:
            return np.empty(0, dtype=self.build_schema.dtype if dtype is None else dtype)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def table(self, build_rows: np.ndarray) -> tuple[KeyDirectory, np.ndarray]:
        """An in-memory hash table of ``build_rows``: the directory and the rows in its order."""
        directory = KeyDirectory(build_rows[self.build_key],
                                 self.probe_schema.dtype[self.probe_key])
        return directory, take_records(build_rows, directory.order)

    def equal_pairs(self, probe_rows: np.ndarray, build_rows: np.ndarray,
                    directory: KeyDirectory | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(probe index, build index) of every pair with equal keys. With ``directory`` (from
        ``table``), ``build_rows`` must be the rows in the directory's order."""
        if directory is None:
            directory, build_rows = self.table(build_rows)
            probe_idx, build_idx = directory.matches(probe_rows[self.probe_key])
            return probe_idx, directory.order[build_idx]
        return directory.matches(probe_rows[self.probe_key])

    def emit(self, probe_rows: np.ndarray, build_rows: np.ndarray, probe_idx: np.ndarray,
             build_idx: np.ndarray, matched: np.ndarray | None = None) -> Iterator[np.ndarray]:
        """The joined tuples of the pairs ``(probe_idx[i], build_idx[i])``, at most a batch at a
        time; the ON condition (if any) filters them; ``matched`` marks the probe tuples that
        found a partner."""
        step = self.ctx.batch_rows
        for start in range(0, len(probe_idx), step):
            sl = slice(start, start + step)
            pairs = concat_rows(take_records(probe_rows, probe_idx[sl]),
                                take_records(build_rows, build_idx[sl]), self.schema.dtype)
            if self.condition is not None:
                keep = is_true(self.condition, pairs)
                pairs = take_records(pairs, keep)
                if matched is not None:
                    matched[probe_idx[sl][keep]] = True
            elif matched is not None:
                matched[probe_idx[sl]] = True
            self.stats.add("matches", len(pairs))
            if len(pairs):
                yield pairs

    def pad(self, rows: np.ndarray) -> np.ndarray:
        """Unmatched probe tuples of a LEFT JOIN, each followed by a build tuple of NULLs."""
        self.stats.add("padded", len(rows))
        return concat_rows(rows, np.repeat(self._padding, len(rows)), self.schema.dtype)

    def pad_unmatched(self, rows: np.ndarray, matched: np.ndarray) -> Iterator[np.ndarray]:
        """In a LEFT JOIN, the tuples of ``rows`` whose ``matched`` flag is False, padded (call it
        once a tuple has met every build tuple it could match); nothing in an inner join."""
        if self.outer and not matched.all():
            yield self.pad(take_records(rows, ~matched))

    def pad_all(self, probe_batches: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        """In a LEFT JOIN, every tuple of ``probe_batches`` padded: probe tuples that no build
        tuple can match (their partition of the build input is empty); nothing in an inner
        join (the batches are not read)."""
        if self.outer:
            for batch in probe_batches:
                if len(batch):
                    yield self.pad(batch)

    def probe_table(self, batch: np.ndarray, table: np.ndarray,
                    directory: KeyDirectory | None = None, matched: np.ndarray | None = None,
                    final: bool = True) -> Iterator[np.ndarray]:
        """The joined tuples of one probe ``batch`` and the in-memory ``table`` (with
        ``directory``: as ``table()`` returned them), then, in a LEFT JOIN, the batch's tuples
        that matched nothing, padded. That is right when ``table`` holds every build tuple these
        probe tuples can match. When a later pass may still match them (one memory-load of
        several), pass ``final=False`` and ``matched`` (one flag per tuple of ``batch``, kept
        across the passes): the matches are recorded there and only the last pass pads."""
        if matched is None and self.outer:
            matched = np.zeros(len(batch), dtype=bool)
        if len(batch) and len(table):
            probe_idx, build_idx = self.equal_pairs(batch, table, directory)
            yield from self.emit(batch, table, probe_idx, build_idx,
                                 matched if self.outer else None)
        if final and self.outer:
            yield from self.pad_unmatched(batch, matched)

    def spool(self, schema: Schema, purpose: str) -> SpoolWriter:
        """A temporary file to write tuples to (one page buffer's worth at a time)."""
        return SpoolWriter(self.ctx.temp_heap(schema, f"{self.kind}-{purpose}"), flush_pages=1)

    def close_spool(self, writer: SpoolWriter) -> HeapFile:
        heap = writer.close()
        self.count("spill_pages_written", writer.pages_written)
        return heap

    def scan_spool(self, heap: HeapFile, drop: bool = True) -> Iterator[np.ndarray]:
        """The tuples of a spooled file, a batch at a time; the file is dropped afterwards."""
        self.count("spill_pages_read", heap.num_pages)
        try:
            for batch, _ in heap.scan(keep=False):
                yield batch
        finally:
            if drop:
                self.ctx.drop_temp(heap)

    def level_hash(self, rows: np.ndarray, key: str, level: int) -> np.ndarray:
        """The hash function of recursion ``level`` (0, 1, ...): a different, unrelated function at
        every level, and equal values hash alike on both sides whatever their numpy types."""
        return hash_column(rows[key], seed=level + 1)

    def join_in_memory(self, build_rows: np.ndarray, probe_batches: Iterator[np.ndarray],
                       matched: np.ndarray | None = None,
                       final: bool = True) -> Iterator[np.ndarray]:
        """Build a hash table of ``build_rows`` and probe it with every batch (counted). In a
        LEFT JOIN each batch's unmatched tuples are padded (``probe_table``), unless
        ``build_rows`` is one memory-load of several: then ``matched`` holds one flag per probe
        tuple, in the order the batches come, kept from load to load, and only the last load
        (``final``) pads."""
        self.count("build_tuples", len(build_rows))
        directory, table = self.table(build_rows)
        at = 0
        for batch in probe_batches:
            self.count("probe_tuples", len(batch))
            flags = None if matched is None else matched[at:at + len(batch)]  # a view
            at += len(batch)
            yield from self.probe_table(batch, table, directory, flags, final)

    def join_by_memory_loads(self, build: HeapFile, probe: HeapFile,
                             limit: int) -> Iterator[np.ndarray]:
        """The last resort when no hash function can split a partition (its build tuples share
        one key): each memory-load of ``limit`` build tuples meets the whole probe file once
        (counter ``memory_load_passes``). Both files are dropped afterwards. In a LEFT JOIN a
        flag per probe tuple records whether some load matched it, and the last load's pass
        pads those no load matched (a probe file with no build tuple at all is padded whole)."""
        loads = -(-build.num_records // limit)  # known beforehand: the last load pads
        matched = np.zeros(probe.num_records if self.outer else 0, dtype=bool)
        try:
            if not loads:
                yield from self.pad_all(self.scan_spool(probe, drop=False))
                return
            held, rows, done = [], 0, 0
            for batch in self.scan_spool(build, drop=False):
                held.append(batch)
                rows += len(batch)
                while rows >= limit:
                    load = np.concatenate(held)
                    held, rows, done = [load[limit:]], rows - limit, done + 1
                    yield from self._one_load(load[:limit], probe, matched, done == loads)
            if rows:
                yield from self._one_load(np.concatenate(held), probe, matched, True)
        finally:
            self.ctx.drop_temp(build)
            self.ctx.drop_temp(probe)

    def _one_load(self, load: np.ndarray, probe: HeapFile, matched: np.ndarray,
                  last: bool) -> Iterator[np.ndarray]:
        self.count("memory_load_passes")
        self.note_memory(self.pages(len(load)) + 1)
        yield from self.join_in_memory(load, self.scan_spool(probe, drop=False),
                                       matched if self.outer else None, last)

    def priced_work(self) -> dict[str, int]:
        """Counted work for the modeled clock: operator kind -> tuples (see ``priced_counters``)."""
        out: dict[str, int] = {}
        for counter, kind in self.priced_counters.items():
            n = int(self.stats.extra.get(counter, 0))
            if n:
                out[kind] = out.get(kind, 0) + n
        return out


def batches_of(rows: np.ndarray, step: int) -> Iterator[np.ndarray]:
    """``rows`` cut into batches of at most ``step`` tuples."""
    for start in range(0, len(rows), step):
        yield rows[start:start + step]


__all__ = ["BUILD_DONE", "JoinAlgorithm", "JoinPluginError", "batches_of", "check_join_class"]
