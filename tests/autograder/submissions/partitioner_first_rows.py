"""Wrong: the boundaries come from the first 1,000 rows, as if they were a sample."""

import numpy as np

from minidb.parallel.partitioners import Partitioner, Range
from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class FirstRows(Range):
    def __init__(self, column, sample=None):
        Partitioner.__init__(self, column)
        self.sample = sample
        self.boundaries, self._bounds = None, None

    def fit(self, batch, num_nodes):
        Partitioner.fit(self, batch, num_nodes)
        if batch is None:
            return
        ordered = np.sort(batch[self.column][: self.sample or 1000])
        ranks = np.arange(1, num_nodes) * len(ordered) // num_nodes
        self._set_boundaries(ordered[ranks].tolist(), strict=False)
