"""Join iterators. ``JoinAlgorithm`` (``base.py``) is the plug point: every equi-join is a
subclass registered under a name (``minidb.plugins.names("join")``):

==================== ====================================================================
``hash_join``        the default: in-memory hash join, multi-pass fallback (``hash_join.py``)
``simple_hash``      Gamma's Simple hash with overflow resolution (``simple_hash.py``)
``grace_hash``       GRACE: partition both inputs to disk, join pairs (``partitioned.py``)
``hybrid_hash``      Hybrid: partitions stay in memory while they fit (``partitioned.py``)
``sort_merge``       sort both inputs, then merge (``sort_merge.py``)
``teradata_merge``   Teradata's: spool what arrives, then sort-merge (``sort_merge.py``)
``block_nested_loops`` nested loops on the equality (``block_nested_loops.py``)
``index_nested_loops`` one index lookup in the inner table per outer tuple
                     (``index_nested_loops.py``)
==================== ====================================================================

``NestedLoopsJoin`` (any predicate, not only an equality) is the planner's fallback for
non-equi joins. Every join outputs the outer (probe) tuple followed by the inner (build) tuple,
and requires the two inputs to have different column names. All but ``index_nested_loops`` run
a LEFT OUTER JOIN too (``supports_outer``), preserving the probe side; each module docstring
says when its algorithm pads an unmatched probe tuple.
"""

from minidb.exec.join.base import JoinAlgorithm, JoinPluginError
from minidb.exec.join.block_nested_loops import BlockNestedLoopsJoin
from minidb.exec.join.hash_join import HashJoin
from minidb.exec.join.index_nested_loops import IndexLookup, IndexNestedLoopsJoin
from minidb.exec.join.nested_loops import NestedLoopsJoin
from minidb.exec.join.partitioned import GraceHashJoin, HybridHashJoin
from minidb.exec.join.simple_hash import SimpleHashJoin  # noqa: I001  (registers in this order)
from minidb.exec.join.sort_merge import SortMergeJoin, TeradataMergeJoin

__all__ = ["BlockNestedLoopsJoin", "GraceHashJoin", "HashJoin", "HybridHashJoin",
           "IndexLookup", "IndexNestedLoopsJoin", "JoinAlgorithm", "JoinPluginError",
           "NestedLoopsJoin", "SimpleHashJoin", "SortMergeJoin", "TeradataMergeJoin"]
