"""Wrong: the hand clears the reference bit of a pinned frame as it passes it."""

import numpy as np
from reference_policy import StudentClock

from minidb.plugins import register


@register("buffer_policy", "student_clock")
class ClearsPinned(StudentClock):
    def choose_victim(self, candidates):
        offered = set(np.asarray(candidates).tolist())
        while True:
            frame = self.hand
            self.hand = (frame + 1) % self.num_frames
            if frame not in offered:
                self.ref[frame] = False
                continue
            if self.ref[frame]:
                self.ref[frame] = False
            else:
                return frame
