"""Hostile: fit allocates memory until there is none left."""

import numpy as np

from minidb.parallel.partitioners import Range
from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class Hog(Range):
    def __init__(self, column, sample=None):
        super().__init__(column, [])

    def fit(self, batch, num_nodes):
        blocks = []
        while True:
            blocks.append(np.empty(2**25))  # 256 MB more each time
