"""Wrong: each boundary is the value one rank past the right one."""

import numpy as np

from minidb.parallel.partitioners import Partitioner, Range
from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class OffByOne(Range):
    def __init__(self, column, sample=None):
        Partitioner.__init__(self, column)
        self.sample = sample
        self.boundaries, self._bounds = None, None

    def fit(self, batch, num_nodes):
        Partitioner.fit(self, batch, num_nodes)
        if batch is None:
            return
        ordered = np.sort(batch[self.column])
        ranks = np.arange(1, num_nodes) * len(ordered) // num_nodes + 1
        self._set_boundaries(ordered[np.minimum(ranks, len(ordered) - 1)].tolist(), strict=False)
