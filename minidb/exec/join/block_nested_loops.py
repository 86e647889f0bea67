"""Block nested loops as a join plug-in: the fallback every engine keeps (Gamma paper, §6).

``NestedLoopsJoin`` (``nested_loops.py``) joins on any predicate; this plug-in runs it on the
join's equality, so it can be chosen by name like the hash and sort-merge joins and compared
with them on the same experiments. The build input is the inner file (written once, then read
once per block of ``memory_pages - 2`` pages of probe tuples); the probe input is the outer one,
so a LEFT OUTER JOIN keeps every probe tuple: ``NestedLoopsJoin`` flags the tuples of an outer
block as the inner file's clusters match them (after the ON condition) and pads those still
unflagged once the block has met the whole inner file, each once; probe tuples with a NULL key
are padded by the base class at the end.

Counters: ``pairs`` (probe-build pairs tested, priced like a predicate on a tuple), and the
nested-loops join's ``outer_blocks``, ``inner_scans``, ``inner_pages_written``,
``inner_pages_read``, ``padded``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minidb.exec.expr import And, Col, Compare
from minidb.exec.join.base import BUILD_DONE, JoinAlgorithm
from minidb.exec.join.nested_loops import MIN_PAGES, NestedLoopsJoin
from minidb.exec.join.sort_merge import StreamScan
from minidb.plugins import register


@register("join", "block_nested_loops")
class BlockNestedLoopsJoin(JoinAlgorithm):
    """Block nested loops on ``probe_key = build_key`` (and the ON condition, if any)."""

    kind = "block_nested_loops_join"
    priced_counters = {"pairs": "filter"}
    min_memory_pages = MIN_PAGES
    supports_outer = True
    announces_build = True

    def run(self, memory_pages: int) -> Iterator[np.ndarray]:
        on = Compare("=", Col(self.probe_key), Col(self.build_key))
        if self.condition is not None:
            on = And((on, self.condition))
        loops = NestedLoopsJoin(self.ctx, StreamScan(self.probe_schema, self.probe_batches()),
                                StreamScan(self.build_schema, self.build_batches()), on,
                                memory_pages, left_outer=self.outer)
        loops.open()
        self.note_memory(memory_pages)
        try:
            yield BUILD_DONE
            while (batch := loops.next()) is not None:
                yield batch
        finally:
            extra = loops.stats.extra
            for key in ("pairs", "outer_blocks", "inner_scans", "inner_pages_written",
                        "inner_pages_read", "padded"):
                self.count(key, extra.get(key, 0))
            self.count("matches", loops.stats.tuples_out - extra.get("padded", 0))
            loops.close()
