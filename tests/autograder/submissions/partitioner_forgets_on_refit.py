"""Wrong: fit(None, n) forgets the boundaries it learned and falls back to 1, 2, ..., n - 1."""

from reference_partitioner import StudentRangeUniform

from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class ForgetsOnRefit(StudentRangeUniform):
    def fit(self, batch, num_nodes):
        super().fit(batch, num_nodes)
        if batch is None and num_nodes > 1:
            self._set_boundaries(list(range(1, num_nodes)), strict=False)
