"""The host's execution context: what the operators that finish a query at the host need.

Gamma's host (DeWitt et al. 1988, Section 2) runs the query manager, which compiles a query
into operator trees that the scheduler starts on the nodes, and the catalog manager, which
keeps the description of every relation (``minidb.cluster.catalog``); it returns each query's
result to the user. It stores no relation: every tuple of a declustered relation is on a disk
node.

Some queries end with operators at the host, over the tuples the nodes send it: the final step
of a scalar or DISTINCT aggregate, the duplicate elimination of a UNION, ORDER BY (an external
sort) and LIMIT (``minidb.cluster.planner``). Those operators need what a node's operators need
(``minidb.exec.iterator.ExecContext``): a memory budget in pages, the machine's hash-table
entry size (``hash_entry_bytes``), and a disk and a buffer pool where a sort or an aggregate
that outgrows its budget writes its temporary runs. That disk is a temporary directory of
scratch files only, which ``close`` removes; its counters are the host's own and are never
added to a statement's (the papers measure the nodes).

The coordinator also builds a fragment's operator tree here before any node runs it, to learn
the schema of what it produces (``minidb.cluster.node.build_tree``): over the catalog's
descriptions, where the scan of a stored table reads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from minidb.buffer.manager import BufferManager
from minidb.cluster.catalog import ClusterCatalog
from minidb.database import memory_budget
from minidb.exec.iterator import ExecContext
from minidb.storage.disk import Disk


@dataclass
class HostContext:
    """The host's operators' context (``ctx``, ``memory_pages``) and the catalog whose
    descriptions a fragment's tree is built over at the host."""

    catalog: ClusterCatalog
    ctx: ExecContext
    memory_pages: int

    @classmethod
    def open(cls, catalog: ClusterCatalog, page_size: int, buffer_pages: int, buffer_policy: str,
             memory_pages: int | None, hash_entry_bytes: int) -> HostContext:
        """A context over a new temporary scratch disk; ``memory_pages`` as a node takes it
        (None: the buffer pool's frames less a few, see ``minidb.database.memory_budget``)."""
        disk = Disk(None, page_size)
        try:
            buffer = BufferManager(disk, buffer_pages, policy=buffer_policy)
            budget = memory_budget(memory_pages, buffer)
        except BaseException:
            disk.close()
            raise
        return cls(catalog, ExecContext(disk, buffer, hash_entry_bytes=hash_entry_bytes), budget)

    def close(self) -> None:
        """Remove the scratch disk and whatever an operator left on it."""
        self.ctx.disk.close()


__all__ = ["HostContext"]
