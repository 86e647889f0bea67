"""The shared-nothing parallel runtime: how a relation is spread over nodes and queried there.

So far this package holds the partitioning functions (``partitioners``): which node stores each
tuple of a relation, and the ``split`` primitive that cuts a batch into one piece per node.
Importing ``minidb.parallel.partitioners`` registers the built-in partitioners under kind
``partitioner``: "round_robin", "hash", "range", "range_uniform" and "predicates".
"""

from minidb.parallel.partitioners import (
    FragmentCoverageError,
    Hash,
    Partitioner,
    PartitioningError,
    PredicateFragments,
    Range,
    RangeUniform,
    RoundRobin,
    parse_partitioning,
    split,
)

__all__ = [
    "Partitioner",
    "RoundRobin",
    "Hash",
    "Range",
    "RangeUniform",
    "PredicateFragments",
    "PartitioningError",
    "FragmentCoverageError",
    "parse_partitioning",
    "split",
]
