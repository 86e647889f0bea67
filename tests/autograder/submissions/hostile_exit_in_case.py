"""Hostile: the reference partitioner, except that it ends the process when fitting 8 nodes."""

import os

from reference_partitioner import StudentRangeUniform

from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class ExitsOnEight(StudentRangeUniform):
    def fit(self, batch, num_nodes):
        if num_nodes == 8:
            os._exit(0)
        super().fit(batch, num_nodes)
