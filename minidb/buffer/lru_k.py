"""LRU-K: evict the page whose K-th most recent reference is oldest (here K = 2).

O'Neil, O'Neil and Weikum, "The LRU-K Page Replacement Algorithm for Database Disk Buffering"
(SIGMOD 1993), Section 2. Plain LRU ranks a page by its last reference only, so one pass of a
big scan makes every scanned page look as hot as the pages used all the time and pushes them
out. LRU-K ranks a page by its *backward K-distance*, the time since its K-th most recent
reference: a page touched once by a scan has no K-th reference at all, counts as infinitely old,
and leaves before any page that has been referenced K times. Among such pages (and for any other
tie) the subsidiary rule is plain LRU on the last reference. With K = 1 this is exactly LRU;
the paper finds K = 2 gives most of the benefit, and that is the registered default ("lru2",
also "lruk"). K is a class attribute, so ``class LRU3(LRUKPolicy): K = 3`` is LRU-3.

Mechanism: a logical clock stamps references; each frame keeps the stamps of its last K
references (newest first, 0 = no such reference, i.e. infinitely old). The victim is the
candidate with the smallest K-th stamp, ties broken by the smallest last stamp.

Simplifications: the paper keeps the reference history of a page for a while after it is
evicted (the *retained information period*) and treats references close together in time as one
(the *correlated reference period*). A policy here sees frames, not page ids, so the history is
dropped when a page leaves its frame and a reloaded page starts again with one reference; and
every fix counts as a separate reference.
"""

from __future__ import annotations

import numpy as np

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register


@register("buffer_policy", "lruk")
@register("buffer_policy", "lru2")
class LRUKPolicy(ReplacementPolicy):
    name = "lru2"
    K = 2

    def __init__(self, num_frames: int) -> None:
        super().__init__(num_frames)
        # history[f, 0] = stamp of the latest reference to the page in f, history[f, K-1] the K-th
        self.history = np.zeros((num_frames, self.K), dtype=np.int64)
        self.clock = 0

    def page_loaded(self, frame: int) -> None:
        self.clock += 1
        self.history[frame] = 0
        self.history[frame, 0] = self.clock

    def page_hit(self, frame: int) -> None:
        self.clock += 1
        self.history[frame, 1:] = self.history[frame, :-1].copy()
        self.history[frame, 0] = self.clock

    def page_evicted(self, frame: int) -> None:
        self.history[frame] = 0

    def choose_victim(self, candidates: np.ndarray) -> int:
        h = self.history[candidates]
        # np.lexsort sorts by the last key first: oldest K-th reference, then oldest last one
        return int(candidates[np.lexsort((h[:, 0], h[:, -1]))[0]])
