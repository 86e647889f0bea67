"""Wrong: the hand never clears a bit it passes; when every bit is set it takes the first
candidate."""

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register


@register("buffer_policy", "student_clock")
class NeverClears(ReplacementPolicy):
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
        offered = set(candidates.tolist())
        for _ in range(2 * self.num_frames):
            frame = self.hand
            self.hand = (frame + 1) % self.num_frames
            if frame in offered and not self.ref[frame]:
                return frame
        return int(candidates[0])
