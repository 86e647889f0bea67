"""Hostile: rewrites the harness and minidb inside the child to report made-up answers."""

import sys

from minidb.buffer import manager
from minidb.buffer.policy import ReplacementPolicy
from minidb.parallel.partitioners import Range
from minidb.plugins import register


def perfect_looking(plugin, case, arrays):
    if case["kind"] == "trace":
        return {"victims": [], "error": None, "hits": 10**6, "misses": 0, "score": 100}
    steps = []
    for step in case["steps"]:
        n = len(arrays[step["route"]])
        steps.append({"destinations": [i % step["num_nodes"] for i in range(n)],
                      "boundaries": list(range(step["num_nodes"] - 1)),
                      "ranges": [list(range(step["num_nodes"])) for _ in step.get("ranges", [])]})
    return {"steps": steps, "score": 100}


for module in list(sys.modules.values()):
    if hasattr(module, "run_case"):
        module.run_case = perfect_looking


def always_hit(self, f, page_no, count=1):
    self.counters.hits += 1
    return self.frames[0]


manager.BufferManager.fix = always_hit


@register("partitioner", "student_range_uniform")
class Patched(Range):
    def __init__(self, column, sample=None):
        super().__init__(column, [])


@register("buffer_policy", "student_clock")
class PatchedPolicy(ReplacementPolicy):
    def choose_victim(self, candidates):
        return int(candidates[0])
