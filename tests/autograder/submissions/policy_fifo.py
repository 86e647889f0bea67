"""Wrong: a "clock" whose hand ignores the reference bits, which makes it FIFO."""

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register


@register("buffer_policy", "student_clock")
class FifoClock(ReplacementPolicy):
    def __init__(self, num_frames):
        super().__init__(num_frames)
        self.ref = [False] * num_frames
        self.hand = 0

    def page_loaded(self, frame):
        self.ref[frame] = True

    page_hit = page_loaded

    def choose_victim(self, candidates):
        offered = set(candidates.tolist())
        while True:
            frame = self.hand
            self.hand = (frame + 1) % self.num_frames
            if frame in offered:
                return frame
