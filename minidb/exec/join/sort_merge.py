"""Sort-merge join: Teradata's join method in the Gamma paper's comparison (§6.1).

Teradata joins by redistributing both relations on the join attribute (a step it skips when
they are already hashed on it: the "key" rows of Table 3), sorting each relation's fragment on
every AMP, and merging the two sorted streams. Here the redistribution is the parallel plan's
job; this operator is what runs at one site:

1. *Sort* each input on its join attribute with ``ExternalSort`` (Volcano's external merge sort,
   ``minidb/exec/sort.py``), the build input with half the memory and the probe input with the
   other half, since both sorts' final merges run at the same time during the merge.
2. *Merge.* Read the two sorted streams side by side: for a batch of probe tuples (ascending
   keys), read build tuples until one has a key above the batch's largest, pair every probe tuple
   with the build tuples of equal key (two binary searches per probe key in the held build
   tuples), then drop the held build tuples whose key is below the batch's largest. Build tuples
   of one key stay held until the probe keys pass it, so duplicates pair up correctly.

The output comes in join-key order, unlike a hash join's.

LEFT OUTER JOIN (``outer=True``, the probe input preserved): when a probe batch is merged, the
held build tuples include every build tuple of each of its keys, so the batch's tuples that
matched nothing (or whose matches all failed the ON ``condition``) are padded with a build
tuple of NULLs right after the batch's pairs, each once (counter ``padded``); once the build
input is used up, the rest of the probe input is read only to be padded. The padded tuples come
in key order too; NULL probe keys (sorted nowhere: they match nothing) come out last.

Counters: ``sort_comparisons`` (what a textbook sort compares: ``n ceil(log2 r)`` to quicksort
runs of ``r`` tuples, ``n ceil(log2 k)`` per merge pass of fan-in ``k``; priced as
``sort_compare``), ``merge_tuples`` (tuples read by the merge, priced as ``merge_compare``),
``runs`` and ``sort_pages_written`` / ``sort_pages_read`` (the sorts' temporary runs, which the
disk counters price too).

Simplification: the build tuples of one key are held in memory during the merge (a key with
more duplicates than memory holds is not spilled, as a real sort-merge join would do).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from minidb.exec.iterator import Operator
from minidb.exec.join.base import BUILD_DONE, JoinAlgorithm
from minidb.exec.join.key_directory import _expand
from minidb.exec.sort import ExternalSort
from minidb.exec.store import tuples_per_page
from minidb.plugins import register
from minidb.storage.schema import Schema


class StreamScan(Operator):
    """An operator over batches that are already being produced (an iterator)."""

    kind = "stream"

    def __init__(self, schema: Schema, batches: Iterator[np.ndarray]):
        super().__init__()
        self.schema, self._batches = schema, batches

    def _open(self) -> None:
        pass

    def _next(self) -> np.ndarray | None:
        return next(self._batches, None)


def sort_comparisons(n: int, run_tuples: int, runs: int, merge_passes: int, fan_in: int) -> int:
    """Comparisons of an external sort of ``n`` tuples: quicksort of each run of at most
    ``run_tuples`` tuples, then ``merge_passes`` merges of fan-in at most ``fan_in``."""
    if n < 2:
        return 0
    quick = n * math.ceil(math.log2(max(2, min(n, run_tuples))))
    if runs <= 1:
        return quick
    return quick + n * merge_passes * math.ceil(math.log2(max(2, min(runs, fan_in))))


@register("join", "sort_merge")
class SortMergeJoin(JoinAlgorithm):
    """Sort both inputs on the join attribute, then merge them (Teradata, Gamma paper §6.1)."""

    kind = "sort_merge_join"
    priced_counters = {"sort_comparisons": "sort_compare", "merge_tuples": "merge_compare"}
    min_memory_pages = 6
    supports_outer = True
    announces_build = True

    #: write each input to a temporary file before sorting it (Teradata, see ``TeradataMergeJoin``)
    spool_inputs = False

    def run(self, memory_pages: int) -> Iterator[np.ndarray]:
        half = memory_pages // 2
        builds, probes = self.build_batches(), self.probe_batches()
        if self.spool_inputs:
            builds = self._through_spool(builds, self.build_schema, "build")
            probes = self._through_spool(probes, self.probe_schema, "probe")
        build = ExternalSort(self.ctx, StreamScan(self.build_schema, builds),
                             [(self.build_key, True)], half)
        probe = ExternalSort(self.ctx, StreamScan(self.probe_schema, probes),
                             [(self.probe_key, True)], memory_pages - half)
        try:
            build.open()
            yield BUILD_DONE
            probe.open()
            self.note_memory(memory_pages)
            yield from self._merge(build, probe)
        finally:
            for sort in (build, probe):
                self._count_sort(sort)
                sort.close()

    def _merge(self, build: ExternalSort, probe: ExternalSort) -> Iterator[np.ndarray]:
        common = _common_dtype(self.build_schema.dtype[self.build_key],
                               self.probe_schema.dtype[self.probe_key])
        held = np.empty(0, dtype=self.build_schema.dtype)
        build_done = False
        while (batch := probe.next()) is not None:
            self.count("merge_tuples", len(batch))
            keys = batch[self.probe_key].astype(common)
            last = keys[-1]
            # NaN sorts last and equals NaN (DuckDB's order): every key is <= a NaN ``last``
            while not build_done and (not len(held) or last != last
                                      or held[self.build_key][-1:].astype(common)[0] <= last):
                more = build.next()
                if more is None:
                    build_done = True
                else:
                    self.count("merge_tuples", len(more))
                    held = np.concatenate([held, more]) if len(held) else more
            held_keys = held[self.build_key].astype(common)
            low = np.searchsorted(held_keys, keys, side="left")
            high = np.searchsorted(held_keys, keys, side="right")
            probe_idx, build_idx = _expand(low, high - low)
            # every build tuple of these keys is held: a LEFT JOIN pads the unmatched ones now
            matched = np.zeros(len(batch), dtype=bool) if self.outer else None
            yield from self.emit(batch, held, probe_idx, build_idx, matched)
            if self.outer:
                yield from self.pad_unmatched(batch, matched)
            held = held[np.searchsorted(held_keys, last, side="left"):]
            if build_done and not len(held):
                break  # no build tuple is left to match the rest of the probe input
        if self.outer:  # ... which a LEFT JOIN still reads, to pad it
            while (batch := probe.next()) is not None:
                self.count("merge_tuples", len(batch))
                yield self.pad(batch)

    def _through_spool(self, batches: Iterator[np.ndarray], schema, purpose: str):
        """Every tuple of ``batches`` written to a temporary file, then read back."""
        writer = self.spool(schema, f"received-{purpose}")
        for batch in batches:
            writer.write(batch)
        yield from self.scan_spool(self.close_spool(writer))

    def _count_sort(self, sort: ExternalSort) -> None:
        extra = sort.stats.extra
        n = sort.stats.tuples_in
        self.count("runs", extra.get("runs", 0))
        self.count("sort_pages_written", extra.get("pages_written", 0))
        self.count("sort_pages_read", extra.get("pages_read", 0))
        capacity = tuples_per_page(self.ctx.page_size, sort.schema)  # sort runs: heap pages
        self.count("sort_comparisons", sort_comparisons(
            n, (sort.memory_pages or 1) * capacity, max(1, extra.get("runs", 0)),
            extra.get("merge_passes", 0), max(2, (sort.memory_pages or 3) - 1)))


def _common_dtype(a: np.dtype, b: np.dtype) -> np.dtype:
    """The type both join keys are compared in: the wider text, or numpy's common number type."""
    if a.kind == "S" and b.kind == "S":
        return np.dtype(f"S{max(a.itemsize, b.itemsize)}")
    return np.result_type(a, b)


@register("join", "teradata_merge")
class TeradataMergeJoin(SortMergeJoin):
    """Teradata's join as the Gamma paper describes it (§6, "Join Algorithms"): "As each AMP
    receives tuples, it stores them in temporary files sorted in hash-key order"; after the
    redistribution each AMP sort-merges them.

    * An input that came through an exchange (a redistributed relation) is written to a
      temporary file and read back before the sort-merge join above runs on it. Every tuple in
      it that another AMP sent is counted as ``tuples_spooled``: the hardware profile prices
      each with ``spool_ios_per_tuple`` random I/Os, the cost of keeping the file in hash-key
      order one tuple at a time (``minidb.cost.model``). A tuple that stayed on its AMP is
      written with the file's pages only.
    * An input read where it lies (the co-located strategy: both relations hashed on the join
      attribute, the "key" rows of Table 3, where "the redistribution step of the join algorithm
      could be skipped") is not spooled at all.

    Not modeled: Teradata sorts by the hash of the key and keeps its files in that order, so a
    join on the attribute the relations are hashed on could also skip the sort; here it still
    sorts (on the CPU, ``sort_compare``)."""

    kind = "teradata_merge_join"
    spool_inputs = True
    priced_counters = {**SortMergeJoin.priced_counters}

    def _through_spool(self, batches: Iterator[np.ndarray], schema, purpose: str):
        source = self.children[0 if purpose == "build" else 1]
        if not hasattr(source, "last_producer"):  # read in place: nothing was redistributed
            yield from batches
            return
        self.stats.extra.setdefault("tuples_spooled", 0)
        writer = self.spool(schema, f"received-{purpose}")
        for batch in batches:
            writer.write(batch)
            if source.last_producer != self.ctx.node_id:  # it came over the network
                self.count("tuples_spooled", len(batch))
        yield from self.scan_spool(self.close_spool(writer))
