"""The shared-nothing engine: nodes (inline objects or Ray actors) driven by a coordinator.

``node.py`` is one site, ``backends.py`` where the sites live, ``coordinator.py`` the scheduler
and the parallel plans; the split tables between them are in ``minidb.parallel.exchange``.
"""

from minidb.cluster.coordinator import ParallelDatabase, ParallelResult

__all__ = ["ParallelDatabase", "ParallelResult"]
