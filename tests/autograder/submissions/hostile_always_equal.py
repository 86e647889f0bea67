"""Hostile: answers with objects equal to everything."""

import numpy as np

from minidb.buffer.policy import ReplacementPolicy
from minidb.parallel.partitioners import Range
from minidb.plugins import register


class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__

    def __int__(self):
        return 99

    def __index__(self):
        return 99


@register("partitioner", "student_range_uniform")
class EqualPartitioner(Range):
    def __init__(self, column, sample=None):
        super().__init__(column, [])

    def fit(self, batch, num_nodes):
        self.num_nodes = num_nodes
        self.boundaries = [AlwaysEqual() for _ in range(num_nodes - 1)]

    def route(self, batch):
        return np.array([AlwaysEqual() for _ in range(len(batch))], dtype=object)

    def nodes_for_range(self, low, high):
        return AlwaysEqual()


@register("buffer_policy", "student_clock")
class EqualPolicy(ReplacementPolicy):
    def choose_victim(self, candidates):
        return AlwaysEqual()
