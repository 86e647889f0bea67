"""Hash aggregation: scalar aggregates and aggregate functions (GROUP BY) in bounded memory.

Gamma runs both kinds of aggregate query the same way (Gamma paper, Section 7, Table 7): every
node first computes a *partial* result for each group over its own tuples, the partial results
are then brought together by hashing on the grouping attribute, and the final value of each
group is computed from its partials. A scalar aggregate is the special case of a single group.
This iterator applies that idea twice inside one node:

* **Per batch.** Each input batch is reduced to one partial tuple per group it contains (count,
  sum, min or max; AVG keeps a sum and a count). This is numpy work over the whole batch.
* **Across batches.** Partials are collected and merged into the group table (the same reduction
  applied to partials), so the table holds one entry per group seen so far.

Partial states merge associatively (counts and sums add, minima take the minimum), which is what
lets Gamma combine the pieces computed on different nodes, and what lets this operator combine
pieces computed on different batches or in different partitions.

Memory and overflow. The group table must fit in ``memory_pages`` pages; an entry takes the width of its partial tuple plus 16 bytes of hash-table
overhead. When the table outgrows that, the operator stops building it and, like the overflow
handling of Gamma's hash join (Section 6.2.2), *spills*: the table so far, and every later
batch's partials, are partitioned by a hash of the group key into up to ``memory_pages - 1``
(at most 32) temporary heap files. Each partition is then aggregated on its own, and a partition
that still overflows is partitioned again with a different hash function (recursion, as in a
Grace-style hash algorithm). Because all partials of a group land in the same partition, each
group is finished inside one partition. Counters: ``groups``, ``max_groups``, ``spills``,
``spill_partitions``, ``spill_pages_written``, ``spill_pages_read``.

Finding the groups of a batch. numpy has no vectorized hash table. When the batch is grouped on
one integer column whose values span a small range (at most ``DIRECT_SPAN`` times the batch's
length), the key itself is the address of the group's slot: ``key - min`` indexes a dense table,
and each partial is one unbuffered ``ufunc.at`` (``np.add.at``, ``np.minimum.at``) over the batch
into that table, about a nanosecond a tuple (the textbook's hash table with the identity as its
hash function). Otherwise groups are found by sorting the batch on the group columns and cutting
it where the key changes (``ufunc.reduceat``). Both give the same partial tuples, one per group
in key order, so the group table, its counters and its spills do not depend on which was used.
Partials are always merged by sorting (they are few). Hashing is used where Gamma uses it to
split the data, not to probe. Results of a table that fit in memory come out in group-key order,
which SQL does not promise.

NULLs, as in SQL: MIN, MAX, SUM and AVG skip NULL arguments and are NULL over a group with no
non-NULL value (each keeps a count of the non-NULL values it saw; a NULL argument enters the
partial as the combine's identity, 0 for a sum, the largest value for a minimum); COUNT(x)
counts non-NULL values, COUNT(*) rows. A scalar aggregate over no rows gives one row (COUNT 0,
the others NULL); with GROUP BY, an empty input gives no rows, and the NULLs of a group column
form one group.

NaN, as in DuckDB, is the largest number: MAX is NaN where a value is NaN (``np.maximum``
propagates it), MIN is the smallest other value and NaN only where every value is NaN
(``np.fmin`` skips NaN, and NaN is a float minimum's identity); NaN keys are one group.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from minidb.errors import MemoryBudgetError, MinidbError, NumericOverflowError, SchemaError
from minidb.exec.expr import Arith, Col, Const, Expr
from minidb.exec.iterator import ExecContext, Operator
from minidb.exec.sort import sort_order
from minidb.exec.store import SpoolWriter
from minidb.hashing import hash_columns
from minidb.storage.heapfile import HeapFile
from minidb.storage.schema import (
    Column,
    Schema,
    concat_records,
    float_column,
    int_column,
    null_mask,
    set_null_mask,
    take_records,
)

FUNCTIONS = ("MIN", "MAX", "SUM", "COUNT", "AVG")
#: internal: the sum of partial counts that finishes a COUNT (0 over no partials, never NULL)
SUM_COUNTS = "SUM_COUNTS"
#: internal: the high / low word of an exact integer sum (see exact_sum), so that an AVG split
#: into partials (split_aggregates) carries its sum exactly from node to node
SUM_HI, SUM_LO = "SUM_HI", "SUM_LO"
MIN_PAGES = 3
ENTRY_OVERHEAD = 16  # bytes of hash-table bookkeeping per group (bucket pointer and hash value)
MAX_FANOUT = 32
MAX_LEVELS = 12
#: a batch is grouped by direct addressing when its key spans at most this many values per tuple
DIRECT_SPAN = 4

@dataclass(frozen=True)
class _State:
    """One field of the partial tuple: where its values come from and how partials combine."""

    name: str
    column: Column
    combine: str  # "add", "min" or "max"
    source: int | None  # index of the aggregate whose argument feeds it; None: a count of 1s
    word: str | None = None  # "hi" / "lo": a half of an exact integer sum (see ``exact_sum``)
    counts: bool = False  # a count of the source's non-NULL values instead of the values


@dataclass(frozen=True)
class _Aggregate:
    output: str
    func: str
    argument: Expr | None
    states: tuple[int, ...]  # indexes into the state list
    nonnull: int | None = None  # the state counting non-NULL arguments (NULL result when 0)


class HashAggregate(Operator):
    """GROUP BY ``group_by`` computing ``aggregates`` = [(output name, function, argument)]."""

    kind = "hash_aggregate"

    def __init__(self, ctx: ExecContext, child: Operator, group_by: list[str],
                 aggregates: list[tuple[str, str, Expr | None]], memory_pages: int):
        super().__init__(child, memory_pages=memory_pages)
        self.ctx = ctx
        source = child.schema
        self.group_columns = [source.column(g) for g in group_by]
        self.group_names = [c.name for c in self.group_columns]
        if not aggregates and not group_by:
            raise SchemaError("an aggregation needs a GROUP BY column or an aggregate function")

        states: list[_State] = []

        def state(kind: str, width: int, combine: str, src: int | None,
                  word: str | None = None, counts: bool = False) -> int:
            name = f"__state{len(states)}"
            states.append(_State(name, Column(name, kind, width), combine, src, word, counts))
            return len(states) - 1

        def sum_states(src: int) -> tuple[int, ...]:
            if sum_kind == "float64":
                return (state("float64", 8, "add", src),)
            return (state("int64", 8, "add", src, "hi"), state("int64", 8, "add", src, "lo"))

        aggs: list[_Aggregate] = []
        out_columns: list[Column] = list(self.group_columns)
        for i, (output, func, arg) in enumerate(aggregates):
            func = func.upper()
            if func not in FUNCTIONS + (SUM_COUNTS, SUM_HI, SUM_LO):
                raise SchemaError(f"unknown aggregate function {func}; use one of {', '.join(FUNCTIONS)}")
            if arg is None and func != "COUNT":
                raise SchemaError(f"{func} needs an argument; only COUNT(*) has none")
            arg_col = None if arg is None else _argument_column(arg, source, func)
            if arg_col is not None and arg_col.kind == "char" and func in ("SUM", "AVG", SUM_HI,
                                                                          SUM_LO):
                raise SchemaError(f"{func}({arg}) is not defined on text")

            # sums of integers are exact (two int64 words, see exact_sum), sums of floats float64
            sum_kind = "float64" if arg_col is not None and arg_col.kind == "float64" else "int64"
            nonnull = None
            if func == "COUNT":
                idx = (state("int64", 8, "add", None if arg is None else i, counts=True),)
                out = int_column(output, "int64")
            elif func == SUM_COUNTS:
                idx = (state("int64", 8, "add", i),)
                out = int_column(output, "int64")
            else:
                if func == "SUM":
                    idx = sum_states(i)
                    out = Column(output, sum_kind, 8)
                elif func in (SUM_HI, SUM_LO):
                    if sum_kind == "float64":
                        raise SchemaError(f"internal error: {func} of the float {arg}")
                    idx = sum_states(i)
                    out = int_column(output, "int64")
                elif func == "AVG":
                    idx = sum_states(i)
                    out = float_column(output)
                else:  # MIN / MAX keep the layout of their argument
                    idx = (state(arg_col.kind, arg_col.width, func.lower(), i),)
                    out = Column(output, arg_col.kind, arg_col.width)
                nonnull = state("int64", 8, "add", i, counts=True)  # last: AVG's divisor too
                idx = idx + (nonnull,)
                out = out.with_nullable(True)
            aggs.append(_Aggregate(output, func, arg, idx, nonnull))
            out_columns.append(out)

        self.states = states
        self.aggregates = aggs
        self.schema = Schema(out_columns)
        self.partial_schema = Schema(list(self.group_columns) + [s.column for s in self.states])
        # direct addressing (``_direct_slots``): one integer group column, no state keeping text
        self._state_dtypes = [s.column.numpy_dtype for s in states]
        self._identities = [_identity(s) for s in states]
        self._direct = len(self.group_columns) == 1 and all(d.kind != "S" for d in self._state_dtypes)
        self._output: Iterator[np.ndarray] | None = None
        self._temps: list[HeapFile] = []

    # -- protocol --------------------------------------------------------------------------------
    def _open(self) -> None:
        memory = self.require_memory(MIN_PAGES)
        super()._open()
        entry = self.partial_schema.record_width + ENTRY_OVERHEAD
        self.max_groups = max(1, memory * self.ctx.page_size // entry)
        for key in ("groups", "spills", "spill_partitions", "spill_pages_written", "spill_pages_read"):
            self.stats.extra.setdefault(key, 0)
        self.stats.extra["max_groups"] = self.max_groups
        self._output = self._run()

    def _next(self) -> np.ndarray | None:
        return next(self._output, None)

    def _close(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None
        for heap in self._temps:
            self.ctx.drop_temp(heap)
        self._temps = []
        super()._close()

    def describe(self) -> str:
        parts = [f"{a.func}({a.argument if a.argument is not None else '*'}) AS {a.output}"
                 for a in self.aggregates]
        if self.group_names:
            parts.append(f"BY {', '.join(self.group_names)}")
        return f"HashAggregate({', '.join(parts)}; {self.memory_pages} pages)"

    # -- driver ----------------------------------------------------------------------------------
    def _run(self) -> Iterator[np.ndarray]:
        child = self.children[0]

        def partials() -> Iterator[np.ndarray]:
            while (batch := self._pull(child)) is not None:
                yield self._partial(batch)

        produced = False
        for out in self._aggregate(partials(), level=0):
            produced = True
            yield out
        if not produced and not self.group_names:  # SQL: one row, COUNT 0 and the others NULL
            out = np.zeros(1, dtype=self.schema.dtype)
            for a in self.aggregates:
                if a.nonnull is not None:
                    set_null_mask(out, a.output, np.ones(1, dtype=bool))
            self.stats.add("groups")
            yield out

    def _aggregate(self, partials: Iterable[np.ndarray], level: int) -> Iterator[np.ndarray]:
        """Aggregate a stream of partial tuples; spill to hash partitions when the table overflows."""
        table: np.ndarray | None = None
        pending: list[np.ndarray] = []
        pending_rows = 0
        spill: _Spill | None = None
        for part in partials:
            if not len(part):
                continue
            if spill is not None:
                spill.write(part)
                continue
            pending.append(part)
            pending_rows += len(part)
            held = 0 if table is None else len(table)
            if pending_rows + held > self.max_groups or pending_rows >= max(4096, held):
                table = self._reduce(concat_records(([table] if table is not None else []) + pending,
                                                     self.partial_schema.dtype))
                pending, pending_rows = [], 0
                if len(table) > self.max_groups:
                    if level >= MAX_LEVELS:
                        raise MemoryBudgetError(
                            f"{self.kind}: groups still do not fit in {self.memory_pages} pages after "
                            f"{level} rounds of partitioning; raise memory_pages"
                        )
                    spill = _Spill(self, level)
                    spill.write(table)
                    table = None
        if spill is None:
            if pending:
                table = self._reduce(concat_records(([table] if table is not None else []) + pending,
                                                     self.partial_schema.dtype))
            if table is not None:
                yield from self._finish(table)
            return
        for heap in spill.close():
            yield from self._aggregate(self._read_partition(heap), level + 1)
            self._temps.remove(heap)
            self.ctx.drop_temp(heap)

    def _read_partition(self, heap: HeapFile) -> Iterator[np.ndarray]:
        self.stats.add("spill_pages_read", heap.num_pages)
        for records, _ in heap.scan(keep=False):
            yield records

    # -- partial aggregation -----------------------------------------------------------------------
    def _partial(self, batch: np.ndarray) -> np.ndarray:
        """One batch of input turned into one partial tuple per group in the batch."""
        if (slots := self._direct_slots(batch)) is not None:
            return self._partial_direct(batch, *slots)
        part = self.partial_schema.new_records(len(batch))
        for name in self.group_names:
            part[name] = batch[name]
            set_null_mask(part, name, null_mask(batch, name))
        arguments: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}
        for s in self.states:
            if s.source is None:
                part[s.name] = 1
                continue
            if s.source not in arguments:
                agg = self.aggregates[s.source]
                arguments[s.source] = (_check_values(agg, batch), agg.argument.null_mask(batch))
            values, nulls = arguments[s.source]
            if s.counts:
                part[s.name] = 1 if nulls is None else ~nulls
                continue
            if nulls is not None:
                values = np.where(nulls, _identity(s), values)
            part[s.name] = split_word(values, s.word)
        return self._reduce(part)

    def _direct_slots(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Group the batch by direct addressing, when it can be: ``(slot of each tuple, the
        slots in use, tuples in each slot)``, where a tuple's slot is its key minus the batch's
        smallest key; None when the batch is not grouped on one integer column without NULLs
        whose values span at most ``DIRECT_SPAN`` per tuple, or an aggregate keeps text (no
        ``ufunc.at`` for it)."""
        if not self._direct or not len(batch):
            return None
        name = self.group_names[0]
        key = batch[name]
        if key.dtype.kind != "i" or null_mask(batch, name) is not None:
            return None
        low, high = key.min(), key.max()
        span = int(high) - int(low) + 1
        if span > DIRECT_SPAN * len(batch):
            return None
        slot = key.astype(np.intp)
        slot -= np.intp(low)  # 0 .. span - 1 (exact in 64 bits: the keys are close together)
        sizes = np.bincount(slot, minlength=span)
        used = np.flatnonzero(sizes)
        return slot, used, sizes[used]

    def _partial_direct(self, batch: np.ndarray, slot: np.ndarray, used: np.ndarray,
                        sizes: np.ndarray) -> np.ndarray:
        """``_partial`` by direct addressing (``_direct_slots``): each state is one ``ufunc.at``
        of the batch's values into a table of one entry per slot, of which the slots in use
        (the groups, in key order) are kept.

        An exact integer SUM of values of at most 32 bits is summed in one int64 table and
        split into its two words afterwards: a batch of fewer than 2**31 tuples cannot overflow
        it, and (hi, lo) of the total is exactly what summing the words and carrying gives."""
        span = int(used[-1]) + 1
        part = self.partial_schema.new_records(len(used))
        key = batch[self.group_names[0]]
        part[self.group_names[0]] = used.astype(key.dtype) + key.min()  # wraps back: exact
        arguments: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}
        totals: dict[int, np.ndarray] = {}  # exact sums of narrow integers, by source
        for s, dtype, identity in zip(self.states, self._state_dtypes, self._identities, strict=True):
            if s.source is None:  # COUNT(*)
                part[s.name] = sizes
                continue
            if s.source not in arguments:
                agg = self.aggregates[s.source]
                arguments[s.source] = (_check_values(agg, batch), agg.argument.null_mask(batch))
            values, nulls = arguments[s.source]
            if s.counts:  # COUNT(x), and the non-NULL count of the others
                part[s.name] = sizes if nulls is None else np.bincount(slot[~nulls], minlength=span)[used]
                continue
            if nulls is not None:
                values = np.where(nulls, identity, values)
            if s.word is not None and values.dtype.itemsize <= 4:
                if s.source not in totals:
                    totals[s.source] = _at(np.add, np.zeros(span, np.int64), slot, values)[used]
                part[s.name] = split_word(totals[s.source], s.word)
                continue
            table = np.full(span, identity, dtype=dtype)
            part[s.name] = _at(_COMBINE[s.combine], table, slot, split_word(values, s.word))[used]
        return self._carry(part)

    def _reduce(self, part: np.ndarray) -> np.ndarray:
        """Merge partial tuples of the same group (sort on the group key, cut where it changes)."""
        n = len(part)
        if n <= 1:
            return part
        if not self.group_names:
            out = part[:1].copy()
            for s in self.states:
                col = part[s.name]
                if s.combine == "add":
                    with np.errstate(invalid="ignore"):  # inf + -inf is NaN, as in DuckDB
                        out[s.name] = col.sum()
                elif col.dtype.kind == "S":
                    out[s.name] = col[np.argmin(col) if s.combine == "min" else np.argmax(col)]
                else:
                    out[s.name] = _COMBINE[s.combine].reduce(col)
            return self._carry(out)
        ordered = part[sort_order(self._group_keys(part))]
        change = np.zeros(n, dtype=bool)
        change[0] = True
        for col in self._group_keys(ordered):
            change[1:] |= col[1:] != col[:-1]
        starts = np.flatnonzero(change)
        if len(starts) == n:
            return ordered
        out = ordered[starts]
        group_ids = None
        for s in self.states:
            col = ordered[s.name]
            if s.combine == "add":
                with np.errstate(invalid="ignore"):  # inf + -inf is NaN, as in DuckDB
                    out[s.name] = np.add.reduceat(col, starts)
            elif col.dtype.kind != "S":
                with np.errstate(invalid="ignore"):
                    out[s.name] = _COMBINE[s.combine].reduceat(col, starts)
            else:  # text: no min/max ufunc, so sort each group's values and take an end
                if group_ids is None:
                    group_ids = np.cumsum(change) - 1
                by_value = col[np.lexsort((col, group_ids))]
                ends = np.append(starts[1:], n) - 1
                out[s.name] = by_value[starts if s.combine == "min" else ends]
        return self._carry(out)

    def _carry(self, part: np.ndarray) -> np.ndarray:
        """Move the carry of each exact sum's low word into its high word (keeps lo < 2**32)."""
        for a in self.aggregates:
            if self.states[a.states[0]].word == "hi":
                hi, lo = (self.states[k].name for k in a.states[:2])
                part[hi] += part[lo] >> 32
                part[lo] &= _LOW_MASK
        return part

    def _group_keys(self, part: np.ndarray) -> list[np.ndarray]:
        """The group columns, each followed by its null mask: NULL is a group of its own. NaN
        is one group too, as in DuckDB (NaN != NaN would make a group of every NaN row): a float
        key with NaNs is compared with them zeroed, beside a NaN flag."""
        keys = []
        for g in self.group_names:
            col = part[g]
            if col.dtype.kind == "f" and (nan := np.isnan(col)).any():
                keys += [np.where(nan, 0.0, col), nan]
            else:
                keys.append(col)
            if (nulls := null_mask(part, g)) is not None:
                keys.append(nulls)
        return keys

    def _finish(self, table: np.ndarray) -> Iterator[np.ndarray]:
        """Final values of each group from its partial tuple, in batches."""
        self.stats.add("groups", len(table))
        out = self.schema.new_records(len(table))
        for name in self.group_names:
            out[name] = table[name]
            set_null_mask(out, name, null_mask(table, name))
        for a in self.aggregates:
            names = [self.states[k].name for k in a.states]
            exact = self.states[a.states[0]].word == "hi"
            if a.func == "AVG":
                total = exact_sum_float(table[names[0]], table[names[1]]) if exact \
                    else table[names[0]]
                with np.errstate(divide="ignore", invalid="ignore"):
                    out[a.output] = total / np.maximum(table[names[-1]], 1)
            elif a.func == "SUM" and exact:
                out[a.output] = exact_sum(table[names[0]], table[names[1]], a)
            elif a.func in (SUM_HI, SUM_LO):
                out[a.output] = table[names[0] if a.func == SUM_HI else names[1]]
            else:
                out[a.output] = table[names[0]]
            if a.nonnull is not None:
                set_null_mask(out, a.output, table[self.states[a.nonnull].name] == 0)
        step = self.ctx.batch_rows
        for start in range(0, len(out), step):
            yield out[start : start + step]


class _Spill:
    """Hash-partitions partial tuples into temporary heap files (one spill round)."""

    def __init__(self, op: HashAggregate, level: int):
        self.op = op
        self.level = level
        fanout = max(2, min(op.memory_pages - 1, MAX_FANOUT))
        flush_pages = max(1, (op.memory_pages - 1) // fanout)
        self.writers = []
        for _ in range(fanout):
            heap = op.ctx.temp_heap(op.partial_schema, "agg-partition")
            op._temps.append(heap)
            self.writers.append(SpoolWriter(heap, flush_pages=flush_pages))
        op.stats.add("spills")
        op.stats.add("spill_partitions", fanout)

    def write(self, part: np.ndarray) -> None:
        fanout = len(self.writers)
        pid = (hash_columns(part, self.op.group_names, seed=self.level) % np.uint64(fanout)).astype(np.int64)
        order = np.argsort(pid, kind="stable")
        bounds = np.cumsum(np.bincount(pid, minlength=fanout))[:-1]
        for writer, piece in zip(self.writers, np.split(take_records(part, order), bounds), strict=True):
            writer.write(piece)

    def close(self) -> list[HeapFile]:
        heaps = []
        for writer in self.writers:
            heap = writer.close()
            self.op.stats.add("spill_pages_written", writer.pages_written)
            heaps.append(heap)
        return heaps


# -- exact integer sums -------------------------------------------------------------------------
# A SUM over integers must not wrap around: 10 values of 8e18 add up to 8e19, beyond int64. Each
# value x is split into a high word x >> 32 (signed) and a low word x & (2**32 - 1) (0 .. 2**32-1),
# and the two words are summed separately; after every merge the low word's carry moves into the
# high word, so both sums stay far from int64's limits (together they are a 96-bit integer).
# At the end, hi * 2**32 + lo is the exact total: SUM returns it when it fits in int64 and raises
# NumericOverflowError otherwise; AVG divides it as a float and never overflows.
_LOW_MASK = np.int64(0xFFFFFFFF)


def split_word(values: np.ndarray, word: str | None) -> np.ndarray:
    """The ``word`` ("hi" / "lo") of each integer in ``values``; the values themselves if None."""
    if word is None:
        return values
    values = np.asarray(values).astype(np.int64)
    return values >> 32 if word == "hi" else values & _LOW_MASK


def exact_sum(hi: np.ndarray, lo: np.ndarray, agg: _Aggregate | None = None) -> np.ndarray:
    """hi * 2**32 + lo as int64, or NumericOverflowError naming the aggregate."""
    fits = (hi >= -(2**31)) & (hi < 2**31)
    if not fits.all():
        bad = int(np.flatnonzero(~fits)[0])
        total = int(hi[bad]) * 2**32 + int(lo[bad])
        what = f"SUM({agg.argument})" if agg is not None else "a SUM"
        raise NumericOverflowError(
            f"{what} is {total}, which does not fit in a 64-bit integer; minidb does not wrap "
            "around: sum a float instead, e.g. SUM(x * 1.0)")
    return (hi.astype(np.int64) << 32) + lo


def exact_sum_float(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """hi * 2**32 + lo as float64 (for AVG: never overflows)."""
    return hi.astype(np.float64) * 4294967296.0 + lo.astype(np.float64)


#: MIN skips NaN (``fmin``), MAX keeps it (``maximum``): NaN is the largest number in DuckDB
_COMBINE = {"add": np.add, "min": np.fmin, "max": np.maximum}


def _at(ufunc: np.ufunc, table: np.ndarray, slot: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``ufunc.at(table, slot, values)`` (values cast to the table's type, contiguous: numpy's
    fast path) and the table."""
    with np.errstate(invalid="ignore"):  # NaN is a value (MAX of NaN is NaN), not an error
        ufunc.at(table, slot, np.ascontiguousarray(values, dtype=table.dtype))
    return table


def _argument_column(arg: Expr, schema: Schema, func: str) -> Column:
    try:
        return arg.output_column("_", schema)
    except NotImplementedError:
        raise SchemaError(f"{func}({arg}): the argument must be a column, a constant or arithmetic") from None


def _identity(state: _State):
    """The value a NULL argument contributes to a partial: one that changes nothing."""
    dtype = state.column.numpy_dtype
    if state.combine == "add":
        return np.zeros(1, dtype=dtype)[0]
    if dtype.kind == "S":
        return b"\xff" * dtype.itemsize if state.combine == "min" else b""
    if dtype.kind == "f":  # NaN, DuckDB's largest float, is what fmin skips
        return np.nan if state.combine == "min" else -np.inf
    info = np.iinfo(dtype)
    return info.max if state.combine == "min" else info.min


def _check_values(agg: _Aggregate, batch: np.ndarray) -> np.ndarray:
    values = np.asarray(agg.argument.evaluate(batch))
    if values.ndim == 0:
        values = np.broadcast_to(values, (len(batch),))
    return values


# -- aggregation in steps (parallel partials, DISTINCT aggregates) ----------------------------------
AggregateList = list[tuple[str, str, "Expr | None"]]


def split_aggregates(aggregates: AggregateList, schema: Schema | None = None
                     ) -> tuple[AggregateList, AggregateList, list]:
    """Gamma's two steps for ``aggregates`` (Section 7): the *partial* aggregates each piece of
    the input computes, the *final* ones that combine partials (counts are summed, and are 0, not
    NULL, when there are no partials at all), and for each AVG the (output, sum, count column)
    it is divided from at the end (``average_expr``).

    An AVG of integers (its argument's type read from ``schema``) carries its sum exactly, as the
    two words of an exact sum (``SUM_HI``, ``SUM_LO``): [4e18, 11, -4e18] averages to 11 / 3,
    where summing doubles would give 0. An AVG of floats sums doubles."""
    partials, finals, averages = [], [], []
    for name, func, arg in aggregates:
        if func == "AVG":
            c = f"{name}_count"
            if _is_integer(arg, schema):
                hi, lo = f"{name}_sum_hi", f"{name}_sum_lo"
                partials += [(hi, SUM_HI, arg), (lo, SUM_LO, arg), (c, "COUNT", arg)]
                finals += [(hi, "SUM", Col(hi)), (lo, "SUM", Col(lo)), (c, SUM_COUNTS, Col(c))]
                averages.append((name, (hi, lo), c))
            else:
                s = f"{name}_sum"
                partials += [(s, "SUM", Arith("*", arg, Const(1.0))), (c, "COUNT", arg)]
                finals += [(s, "SUM", Col(s)), (c, SUM_COUNTS, Col(c))]
                averages.append((name, s, c))
        else:
            partials.append((name, func, arg))
            finals.append((name, SUM_COUNTS if func == "COUNT" else func, Col(name)))
    return partials, finals, averages


def _is_integer(arg: Expr | None, schema: Schema | None) -> bool:
    if arg is None or schema is None:
        return False
    try:
        kind = arg.output_column("_", schema).kind
    except (NotImplementedError, MinidbError):
        return False
    return kind not in ("float64", "char")


def average_expr(total: str | tuple[str, str], count: str) -> Expr:
    """AVG = sum / count, the sum one column or the two words of an exact integer sum. Over no
    values the sum is NULL, so the average is NULL too (the division is strict), as in SQL."""
    if isinstance(total, tuple):
        hi, lo = total
        value = Arith("+", Arith("*", Col(hi), Const(4294967296.0)), Col(lo))
        return Arith("/", value, Col(count))
    return Arith("/", Col(total), Col(count))


DISTINCT_COLUMN = "_distinct"


@dataclass
class DistinctStages:
    """COUNT / SUM / AVG(DISTINCT x) next to ordinary aggregates, as aggregations in sequence.

    ``first`` groups the input on (group columns, x): one tuple per distinct x of each group,
    with partials of the ordinary aggregates (which is the duplicate elimination); ``merge``
    combines such tuples computed on different nodes. ``second`` groups those tuples on the
    group columns: counts / sums over x (now free of duplicates) and the ordinary aggregates
    combined; its results are partials again, which ``final`` combines across nodes.
    ``averages`` lists the AVG outputs still to divide (output, sum column, count column).
    The input must carry x as the column ``DISTINCT_COLUMN``.
    """

    first: AggregateList
    merge: AggregateList
    second: AggregateList
    final: AggregateList
    averages: list


def distinct_stages(aggregates: AggregateList, distinct: frozenset[str] | set[str],
                    schema: Schema | None = None, argument: Expr | None = None) -> DistinctStages:
    """The stages for ``aggregates``, those named in ``distinct`` over DISTINCT ``argument``
    (``schema``: the input's layout, so that AVGs of integers stay exact)."""
    plain = [a for a in aggregates if a[0] not in distinct]
    first, merge, averages = split_aggregates(plain, schema)
    on_x = [(name, func, Col(DISTINCT_COLUMN)) for name, func, _ in aggregates if name in distinct]
    x_schema = None
    if schema is not None and argument is not None:
        x_schema = Schema([argument.output_column(DISTINCT_COLUMN, schema)])
    second_x, final_x, averages_x = split_aggregates(on_x, x_schema)
    return DistinctStages(first, merge, merge + second_x, merge + final_x, averages + averages_x)
