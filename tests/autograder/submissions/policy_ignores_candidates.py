"""Wrong: the hand sweeps every frame, offered or not, so it may return a pinned one."""

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register


@register("buffer_policy", "student_clock")
class IgnoresCandidates(ReplacementPolicy):
    def __init__(self, num_frames):
        super().__init__(num_frames)
        self.ref = [False] * num_frames
        self.hand = 0

    def page_loaded(self, frame):
        self.ref[frame] = True

    page_hit = page_loaded

    def page_evicted(self, frame):
        self.ref[frame] = False

    def choose_victim(self, candidates):
        while True:
            frame = self.hand
            self.hand = (frame + 1) % self.num_frames
            if self.ref[frame]:
                self.ref[frame] = False
            else:
                return frame
