"""Most-recently-used replacement: evict the page referenced last.

MRU seems perverse at first sight, but it is the right answer for one access pattern that databases
produce all the time: a loop over a file slightly larger than the pool (the inner relation of a
nested-loops join, a repeated scan). Under LRU each page is thrown out just before the loop comes
back to it, so every reference misses ("sequential flooding"); MRU sacrifices the page it just
used and keeps the rest, so most of the next pass hits. Chou and DeWitt's DBMIN study (VLDB 1985,
the query locality set model) recommends MRU for such looping references. Volcano (Graefe and
Thakkar 1992, the LRU footnote in Section 4.1) keeps LRU and gets a similar effect per page with
its toss hint; MRU is the pool-wide version of the same idea.

Mechanism: the same logical clock as LRU stamps every reference (a load or a hit); the victim
is the candidate with the largest stamp instead of the smallest. Simplification: one global policy for the pool; a real system
would choose MRU per file or per query (DBMIN), which minidb leaves to Volcano's keep / toss
hints applied by the buffer manager.
"""

from __future__ import annotations

import numpy as np

from minidb.buffer.lru import LRUPolicy
from minidb.plugins import register


@register("buffer_policy", "mru")
class MRUPolicy(LRUPolicy):
    """LRU's bookkeeping (a stamp per reference); only the end it evicts from differs."""

    name = "mru"

    def choose_victim(self, candidates: np.ndarray) -> int:
        return int(candidates[np.argmax(self.last_use[candidates])])
