"""Lab 1, part A, model answer: range partitioning with boundaries at the data's quantiles."""

import numpy as np

from minidb.parallel.partitioners import Partitioner, Range
from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class StudentRangeUniform(Range):
    """Range partitioning whose N - 1 boundaries split the fitted column into equal counts."""

    name = "student_range_uniform"

    def __init__(self, column, sample=None):
        Partitioner.__init__(self, column)
        self.sample = sample
        self.boundaries, self._bounds = None, None

    def fit(self, batch, num_nodes):
        Partitioner.fit(self, batch, num_nodes)
        n = self.num_nodes
        if n == 1:
            self._set_boundaries([], strict=False)
            return
        if batch is None or len(batch) == 0:
            if self.boundaries is not None and len(self.boundaries) != n - 1:
                self._set_boundaries(None, strict=False)  # they were for another node count
            return
        values = batch[self.column]
        if self.sample is not None and len(values) > self.sample:
            picks = np.random.default_rng(0).choice(len(values), size=self.sample, replace=False)
            values = values[picks]
        ordered = np.sort(values)
        # boundary i is the value at rank i * len / n: node i gets the ranks in between
        ranks = np.arange(1, n) * len(ordered) // n
        self._set_boundaries(ordered[ranks].tolist(), strict=False)
