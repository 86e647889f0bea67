"""Hostile: the reference Clock, except that it spins forever on the 16-frame trace."""

from reference_policy import StudentClock

from minidb.plugins import register


@register("buffer_policy", "student_clock")
class SpinsOnSixteen(StudentClock):
    def choose_victim(self, candidates):
        while self.num_frames == 16:
            pass
        return super().choose_victim(candidates)
