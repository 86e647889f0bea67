"""Least-recently-used replacement: evict the page whose last reference is oldest.

The policy behind Volcano's buffer manager (Graefe and Thakkar, Section 2, where LRU is
augmented with keep / toss hints; the hints live in ``BufferManager``). A logical clock stamps
each reference; the victim is the candidate with the smallest stamp.
"""

from __future__ import annotations

import numpy as np

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register


@register("buffer_policy", "lru")
class LRUPolicy(ReplacementPolicy):
    name = "lru"

    def __init__(self, num_frames: int) -> None:
        super().__init__(num_frames)
        self.last_use = np.zeros(num_frames, dtype=np.int64)
        self.clock = 0

    def _touch(self, frame: int) -> None:
        self.clock += 1
        self.last_use[frame] = self.clock

    page_loaded = _touch
    page_hit = _touch

    def choose_victim(self, candidates: np.ndarray) -> int:
        return int(candidates[np.argmin(self.last_use[candidates])])
