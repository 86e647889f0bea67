"""Lab 1, part A: the range-uniform partitioner (what you hand in, as ``partitioner.py``).

Write ``fit`` below; the rules are in the lab (section 8, Part A) and in
``autograder/assignments/lab1/README.md``. This is the only place you write it: the lab notebook
imports this file (``from partitioner import StudentRangeUniform``), ``pytest`` runs the grader's
public cases on it, and ``python -m autograder submit lab1 --out submission.zip`` hands it in.
"""

import numpy as np

from minidb.parallel.partitioners import Partitioner, Range
from minidb.plugins import register


@register("partitioner", "student_range_uniform")
class StudentRangeUniform(Range):
    """Range partitioning whose N - 1 boundaries cut the fitted column into equal counts."""

    name = "student_range_uniform"

    def __init__(self, column, sample=None):
        Partitioner.__init__(self, column)  # not Range.__init__: no boundaries until fit
        self.sample = sample
        self.boundaries, self._bounds = None, None

    @classmethod
    def from_spec(cls, columns, values, schema):
        """Build from the spec ``student_range_uniform(col)`` (Range's version wants values)."""
        return cls(*columns)

    def fit(self, batch, num_nodes):
        """Choose the num_nodes - 1 boundaries from ``batch`` (see the rules in the lab)."""
        Partitioner.fit(self, batch, num_nodes)  # checks and records self.num_nodes
        # BEGIN SOLUTION: Lab 1, part A: choose the num_nodes - 1 boundaries from the batch
        n = self.num_nodes
        if n == 1:
            self._set_boundaries([], strict=False)  # one node: everything goes to node 0
            return
        if batch is None or len(batch) == 0:
            if self.boundaries is not None and len(self.boundaries) != n - 1:
                self._set_boundaries(None, strict=False)  # learned for another node count
            return
        values = batch[self.column]
        if self.sample is not None and len(values) > self.sample:
            rng = np.random.default_rng(0)
            values = values[rng.choice(len(values), size=self.sample, replace=False)]
        ordered = np.sort(values)
        ranks = np.arange(1, n) * len(ordered) // n  # node i starts at rank i * len / n
        self._set_boundaries(ordered[ranks].tolist(), strict=False)
        # END SOLUTION
