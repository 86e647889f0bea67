"""Wrong: a hit does not set the reference bit (only loading a page does)."""

from reference_policy import StudentClock

from minidb.plugins import register


@register("buffer_policy", "student_clock")
class IgnoresHits(StudentClock):
    def page_hit(self, frame):
        pass
