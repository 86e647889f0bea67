"""Wrong: routes right, but nodes_for_range names every node whatever the range."""

import numpy as np
from reference_partitioner import StudentRangeUniform

from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class EveryNode(StudentRangeUniform):
    def nodes_for_range(self, low, high):
        return np.arange(self.num_nodes)
