"""Lab 1, part B, model answer: Clock (second chance) replacement."""

import numpy as np

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register


@register("buffer_policy", "student_clock")
class StudentClock(ReplacementPolicy):
    """A reference bit per frame, and a hand sweeping the frames in a circle."""

    name = "student_clock"

    def __init__(self, num_frames):
        super().__init__(num_frames)
        self.ref = [False] * num_frames
        self.hand = 0

    def page_loaded(self, frame):
        self.ref[frame] = True

    def page_hit(self, frame):
        self.ref[frame] = True

    def page_evicted(self, frame):
        self.ref[frame] = False

    def choose_victim(self, candidates):
        offered = set(np.asarray(candidates).tolist())
        while True:  # ends within two turns: the first clears every offered bit it passes
            frame = self.hand
            self.hand = (frame + 1) % self.num_frames
            if frame not in offered:
                continue  # pinned or kept: pass it, bit untouched
            if self.ref[frame]:
                self.ref[frame] = False  # second chance
            else:
                return frame
