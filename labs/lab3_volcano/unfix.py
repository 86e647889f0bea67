"""Lab 3: grouped unfixing (what you hand in, as ``unfix.py``).

Volcano's buffer manager was called once per record to unfix it, and every call took the pool
lock (Graefe and Thakkar 1992, §5). Grouped unfixing gathers those calls in the operator's own
memory and calls the buffer manager once per *group*: consecutive records of one cluster
(§5.2). With a table of ``entries`` slots, a record goes to slot ``slot_of(cluster, entries)``;
a record of another cluster in an occupied slot flushes that slot's group first.

Write ``unfix`` and ``close`` below. This is the only place you write them: the lab notebook
runs the parallel sort on it (``SortSetup(unfix="student_grouped_4")``), ``pytest`` runs the
grader's public cases on it, and ``python -m autograder submit lab3 --out submission.zip`` hands
it in. The contract is ``autograder/assignments/lab3/README.md``.
"""

from minidb.plugins import register
from minidb.volcano.unfix import UnfixGatherer, slot_of


@register("unfix_gatherer", "student_grouped")
class StudentGroupedUnfix(UnfixGatherer):
    """One operator's private table of gathered unfixes: at most one (cluster, count) per slot.

    ``self.entries`` is the number of slots; ``self.call(cluster, count)`` is the buffer-manager
    call that unfixes ``count`` records of ``cluster`` (it takes the pool lock)."""

    def __init__(self, entries, call):
        super().__init__(entries, call)
        self.table = {}  # slot -> [cluster, count]

    def unfix(self, cluster):
        """The operator is done with one record of ``cluster``: gather it, flushing the slot's
        group first (one call) when it belongs to another cluster."""
        # BEGIN SOLUTION: Lab 3: gather the record in its slot, flushing another cluster's group
        slot = slot_of(cluster, self.entries)
        entry = self.table.get(slot)
        if entry is not None and entry[0] != cluster:
            self.call(entry[0], entry[1])  # the only time the pool lock is taken
            entry = None
        if entry is None:
            self.table[slot] = [cluster, 1]
        else:
            entry[1] += 1
        # END SOLUTION

    def close(self):
        """End of stream: one call for every group still gathered, slot by slot (lowest slot
        first), leaving the table empty."""
        # BEGIN SOLUTION: Lab 3: flush what is left, in slot order
        for slot in sorted(self.table):
            cluster, count = self.table[slot]
            self.call(cluster, count)
        self.table.clear()
        # END SOLUTION
