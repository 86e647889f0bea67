"""Query execution: Volcano-style iterators over batches of fixed-width tuples.

Every operator follows the open / next / close protocol of ``iterator.py`` (Volcano, Graefe and
Thakkar 1992, Section 2), returns numpy structured arrays in its output ``schema``, takes an
explicit memory budget in pages where its algorithm needs memory, and counts what it did in
``stats``. Scalar expressions (predicates, computed columns) live in ``expr.py``.

Where each iterator lives:

    scan.py               HeapScan (heap file, optional predicate and record ids), ArrayScan
    filter.py             Filter (selection)
    project.py            Project (computed output columns)
    aggregate.py          HashAggregate (MIN, MAX, SUM, COUNT, AVG; scalar or GROUP BY;
                          spills hash partitions when the group table outgrows its memory)
    sort.py               ExternalSort (quicksort runs, multi-level merge)
    join/nested_loops.py  NestedLoopsJoin (block nested loops, any predicate)
    join/hash_join.py     HashJoin (simple in-memory hash join on one equality)
    store.py              Store (write a stream into a table or heap file); SpoolWriter for
                          temporary files
    modify.py             Insert, Delete, Update (one-row result: the count of tuples affected)
"""

from minidb.exec.aggregate import HashAggregate
from minidb.exec.filter import Filter
from minidb.exec.iterator import BATCH_ROWS, ExecContext, Operator, OperatorStats
from minidb.exec.join import HashJoin, NestedLoopsJoin
from minidb.exec.modify import Delete, Insert, Update
from minidb.exec.project import Project
from minidb.exec.scan import ArrayScan, HeapScan
from minidb.exec.sort import ExternalSort
from minidb.exec.store import SpoolWriter, Store

__all__ = [
    "BATCH_ROWS",
    "ArrayScan",
    "Delete",
    "ExecContext",
    "ExternalSort",
    "Filter",
    "HashAggregate",
    "HashJoin",
    "HeapScan",
    "Insert",
    "NestedLoopsJoin",
    "Operator",
    "OperatorStats",
    "Project",
    "SpoolWriter",
    "Store",
    "Update",
]
