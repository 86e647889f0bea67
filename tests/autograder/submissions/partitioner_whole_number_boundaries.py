"""Wrong: boundaries rounded down to whole numbers, as if every numeric column held integers."""

import math

from reference_partitioner import StudentRangeUniform

from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class WholeNumbers(StudentRangeUniform):
    def fit(self, batch, num_nodes):
        super().fit(batch, num_nodes)
        if self.boundaries and isinstance(self.boundaries[0], float):
            self._set_boundaries([math.floor(b) for b in self.boundaries], strict=False)
