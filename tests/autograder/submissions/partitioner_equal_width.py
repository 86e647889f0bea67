"""Wrong for skewed data: the value range cut into equal widths instead of equal counts."""

import numpy as np

from minidb.parallel.partitioners import Partitioner, Range
from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class EqualWidth(Range):
    def __init__(self, column, sample=None):
        Partitioner.__init__(self, column)
        self.sample = sample
        self.boundaries, self._bounds = None, None

    def fit(self, batch, num_nodes):
        Partitioner.fit(self, batch, num_nodes)
        if batch is None:
            return
        values = batch[self.column].astype(np.float64)
        low, high = values.min(), values.max()
        steps = np.arange(1, num_nodes) / num_nodes
        self._set_boundaries((low + steps * (high - low)).tolist(), strict=False)
