"""Wrong only where values repeat: the boundaries are quantiles of the distinct values
(``np.unique`` instead of ``np.sort``), which are the right ones when no value repeats."""

import numpy as np

from minidb.parallel.partitioners import Partitioner, Range
from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class DistinctValues(Range):
    def __init__(self, column, sample=None):
        Partitioner.__init__(self, column)
        self.sample = sample
        self.boundaries, self._bounds = None, None

    def fit(self, batch, num_nodes):
        Partitioner.fit(self, batch, num_nodes)
        if num_nodes == 1:
            self._set_boundaries([], strict=False)
            return
        if batch is None:
            return
        values = batch[self.column]
        if self.sample is not None and len(values) > self.sample:
            values = values[np.random.default_rng(0).choice(len(values), self.sample, replace=False)]
        ordered = np.unique(values)
        ranks = np.arange(1, num_nodes) * len(ordered) // num_nodes
        self._set_boundaries(ordered[ranks].tolist(), strict=False)
