"""Lab 1, part B: the Clock replacement policy (what you hand in, as ``policy.py``).

Write the methods below; the rules are in the lab (section 8, Part B) and in
``autograder/assignments/lab1/README.md``. This is the only place you write it: the lab notebook
imports this file (``from policy import StudentClock``), ``pytest`` runs the grader's public
cases on it, and ``python -m autograder submit lab1 --out submission.zip`` hands it in.
"""

import numpy as np

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register


@register("buffer_policy", "student_clock")
class StudentClock(ReplacementPolicy):
    """Clock (second chance): one reference bit per frame and a hand sweeping the frames."""

    name = "student_clock"

    def __init__(self, num_frames):
        super().__init__(num_frames)
        # BEGIN SOLUTION: Lab 1, part B: one reference bit per frame, and the hand at frame 0
        self.ref = np.zeros(num_frames, dtype=bool)
        self.hand = 0
        # END SOLUTION

    def page_loaded(self, frame):
        """A page was read into ``frame``."""
        # BEGIN SOLUTION: Lab 1, part B: a page loaded into a frame sets its bit
        self.ref[frame] = True
        # END SOLUTION

    def page_hit(self, frame):
        """A fix found its page in ``frame``."""
        # BEGIN SOLUTION: Lab 1, part B: a hit sets the frame's bit
        self.ref[frame] = True
        # END SOLUTION

    def page_evicted(self, frame):
        """``frame`` is empty again."""
        # BEGIN SOLUTION: Lab 1, part B: an emptied frame loses its bit
        self.ref[frame] = False
        # END SOLUTION

    def choose_victim(self, candidates):
        """Return one frame of ``candidates`` (a sorted array of replaceable frames)."""
        # BEGIN SOLUTION: Lab 1, part B: sweep the hand, giving frames with a set bit a second chance
        replaceable = np.zeros(self.num_frames, dtype=bool)
        replaceable[candidates] = True
        for _ in range(2 * self.num_frames):  # one turn clears every candidate's bit
            frame = self.hand
            self.hand = (frame + 1) % self.num_frames
            if not replaceable[frame]:
                continue
            if self.ref[frame]:
                self.ref[frame] = False
            else:
                return frame
        raise RuntimeError("no candidate frame to replace")
        # END SOLUTION
