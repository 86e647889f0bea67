"""2Q: a FIFO probation queue for pages seen once, an LRU queue for pages seen again.

Johnson and Shasha, "2Q: A Low Overhead High Performance Buffer Management Replacement
Algorithm" (VLDB 1994). 2Q aims at the scan resistance of LRU-2 at the constant cost per
reference of plain LRU. A page brought in by a miss joins queue *A1*, a FIFO. If it is
referenced again while still in A1 it has proved to be more than a one-off and moves to *Am*,
an LRU queue. When a frame is needed, the oldest page of A1 goes first as long as A1 is larger
than its share of the pool (a quarter of the frames here); otherwise the least recently used
page of Am goes. A scan thus only ever churns A1, and the hot pages in Am survive it.

This is the paper's *simplified* 2Q (the version it describes before the full one). The full
algorithm splits A1 into A1in (pages in memory) and A1out, a list of the ids of pages recently
evicted from A1 that holds no data; a miss on a page listed in A1out sends it straight to Am,
while a second reference during the page's stay in A1in is taken as correlated and promotes
nothing. A policy in minidb sees frame numbers, never page ids, so it cannot remember pages it no longer
holds and A1out is left out. The threshold is fixed at a quarter of the frames (the paper tunes
it; 25 % is the value it suggests for Kin).

Mechanism: per frame, the queue it is on (A1 or Am) and a stamp from a logical clock: the load
time on A1 (FIFO order) and the last reference on Am (LRU order). Victims come from A1 when A1
holds more than a quarter of the frames or Am offers no candidate, and from Am otherwise.
"""

from __future__ import annotations

import numpy as np

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register

NONE, A1, AM = 0, 1, 2


@register("buffer_policy", "2q")
class TwoQPolicy(ReplacementPolicy):
    name = "2q"

    def __init__(self, num_frames: int) -> None:
        super().__init__(num_frames)
        self.queue = np.full(num_frames, NONE, dtype=np.int8)
        self.stamp = np.zeros(num_frames, dtype=np.int64)
        self.clock = 0
        self.a1_max = num_frames / 4  # A1 may hold this many frames before it must give one up

    def page_loaded(self, frame: int) -> None:
        self.clock += 1
        self.queue[frame] = A1
        self.stamp[frame] = self.clock  # FIFO: the stamp stays the load time while on A1

    def page_hit(self, frame: int) -> None:
        self.clock += 1
        self.queue[frame] = AM  # a second reference promotes an A1 page; Am pages stay
        self.stamp[frame] = self.clock

    def page_evicted(self, frame: int) -> None:
        self.queue[frame] = NONE
        self.stamp[frame] = 0

    def choose_victim(self, candidates: np.ndarray) -> int:
        in_am = self.queue[candidates] == AM
        a1_frames = int((self.queue == A1).sum())
        if a1_frames > self.a1_max or not in_am.any():
            pool = candidates[~in_am]
            if not len(pool):  # A1 is over its share but all its pages are pinned
                pool = candidates
        else:
            pool = candidates[in_am]
        return int(pool[np.argmin(self.stamp[pool])])
