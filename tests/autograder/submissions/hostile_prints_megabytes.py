"""Hostile: the reference partitioner, printing 30 MB while imported and 8 MB in every fit."""

import sys

from reference_partitioner import StudentRangeUniform

from minidb.plugins import register

for _ in range(30):
    print("x" * 2**20)


@register("partitioner", "student_range_uniform")
class Chatty(StudentRangeUniform):
    def fit(self, batch, num_nodes):
        for _ in range(8):
            sys.stderr.write("y" * 2**20)
        super().fit(batch, num_nodes)
