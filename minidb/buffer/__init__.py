"""Buffer manager and replacement policies (Volcano, Section 2).

Importing this package registers the built-in policies under kind ``buffer_policy``.
"""

from minidb.buffer import lru  # noqa: F401  (registers "lru")
from minidb.buffer.manager import BufferCounters, BufferManager
from minidb.buffer.policy import ReplacementPolicy

__all__ = ["BufferManager", "BufferCounters", "ReplacementPolicy"]
