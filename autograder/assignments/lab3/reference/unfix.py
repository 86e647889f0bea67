"""Lab 3, model answer: grouped unfixing, one (cluster, count) entry per slot."""

from minidb.plugins import register
from minidb.volcano.unfix import UnfixGatherer, slot_of


@register("unfix_gatherer", "student_grouped")
class StudentGroupedUnfix(UnfixGatherer):
    """Volcano §5.2's gathering, written record by record."""

    def __init__(self, entries, call):
        super().__init__(entries, call)
        self.table = {}

    def unfix(self, cluster):
        slot = slot_of(cluster, self.entries)
        entry = self.table.get(slot)
        if entry is not None and entry[0] != cluster:
            self.call(entry[0], entry[1])
            entry = None
        if entry is None:
            self.table[slot] = [cluster, 1]
        else:
            entry[1] += 1

    def close(self):
        for slot in sorted(self.table):
            self.call(*self.table[slot])
        self.table.clear()
