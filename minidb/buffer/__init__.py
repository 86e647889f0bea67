"""Buffer manager and replacement policies (Volcano, Section 2).

Importing this package registers the built-in policies under kind ``buffer_policy``:
"lru", "mru", "clock", "lru2" (also "lruk") and "2q".
"""

from minidb.buffer import clock, lru, lru_k, mru, two_q  # noqa: F401  (register the policies)
from minidb.buffer.manager import BufferCounters, BufferManager
from minidb.buffer.policy import ReplacementPolicy

__all__ = ["BufferManager", "BufferCounters", "ReplacementPolicy"]
