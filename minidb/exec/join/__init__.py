"""Join iterators: block nested loops (any predicate) and the simple in-memory hash join.

Both output the outer (probe) tuple followed by the inner (build) tuple, and both require the
two inputs to have different column names.
"""

from minidb.exec.join.hash_join import HashJoin
from minidb.exec.join.nested_loops import NestedLoopsJoin

__all__ = ["HashJoin", "NestedLoopsJoin"]
