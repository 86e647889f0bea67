"""The replacement-policy plug point: which unpinned frame gives up its page.

A policy only decides; the buffer manager does the bookkeeping (page table, pin counts, dirty
write-back, Volcano's keep / toss hints). A policy is told about every reference and eviction
and, when the pool needs a frame, picks one among the candidates it is offered. Four methods,
all optional but ``choose_victim``::

    @register("buffer_policy", "fifo")
    class Fifo(ReplacementPolicy):
        def page_loaded(self, frame): ...       # a page was just read into `frame` (a miss)
        def page_hit(self, frame): ...          # a fix found its page already in `frame`
        def choose_victim(self, candidates): ...# pick one frame number from `candidates`
        def page_evicted(self, frame): ...      # `frame` is empty again

``candidates`` is a sorted numpy array of frame numbers whose pages are unpinned; the policy must
return one of them. Frames are numbered 0 .. num_frames - 1.
"""

from __future__ import annotations

import numpy as np


class ReplacementPolicy:
    """Base class of replacement policies; subclasses register under kind ``buffer_policy``."""

    name = "base"

    def __init__(self, num_frames: int) -> None:
        self.num_frames = num_frames

    def page_loaded(self, frame: int) -> None:
        """A page was read into ``frame`` (a miss): it has just been referenced."""

    def page_hit(self, frame: int) -> None:
        """A fix found its page in ``frame`` (a hit)."""

    def choose_victim(self, candidates: np.ndarray) -> int:
        """Return the frame, one of ``candidates``, whose page should be replaced."""
        raise NotImplementedError

    def page_evicted(self, frame: int) -> None:
        """The page in ``frame`` was replaced or discarded; ``frame`` is empty now."""
