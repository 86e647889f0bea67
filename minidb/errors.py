"""One exception hierarchy for every mistake a user can make.

Each message says what was wrong and what to change, in one line. The command line turns a
``MinidbError`` into that line on stderr and exit status 2; anything else is a bug in minidb and
keeps its traceback.
"""

from __future__ import annotations


class MinidbError(Exception):
    """Base class: a user mistake or an expected failure, reported in one line."""


class UnknownTableError(MinidbError):
    """A statement names a table the catalog does not hold."""


class UnknownColumnError(MinidbError):
    """A statement names a column its table does not have."""


class SchemaError(MinidbError):
    """Data does not fit the declared layout (type mismatch, string too long, ...)."""


class PageSizeError(MinidbError):
    """The page size is out of range or too small to hold one record."""


class MemoryBudgetError(MinidbError):
    """An operator was given less memory than its algorithm needs to run at all."""


class UnsupportedSQLError(MinidbError):
    """The statement uses SQL outside minidb's subset; the message names the construct."""


class NumericOverflowError(MinidbError):
    """An integer result does not fit in 64 bits; minidb raises instead of wrapping around."""


class DivisionByZeroError(MinidbError):
    """``x % 0``: SQL (DuckDB) raises; minidb does too. (``x / 0`` is IEEE's inf or nan.)"""


class UnknownPluginError(MinidbError):
    """A plugin name (policy, partitioner, ...) is not registered; the message lists known ones."""


class CorruptPageError(MinidbError):
    """A page read from disk failed its checksum; the message names the file and the page."""


class DamagedTableError(CorruptPageError):
    """A table of a reopened database could not be opened; the message says why. The other
    tables of the database work; drop this one and load it again."""


class MinidbWarning(UserWarning):
    """Something minidb did on the user's behalf that they should know about (e.g. page files
    no catalog names were moved aside when a data directory was opened)."""


class BufferPoolFullError(MinidbError):
    """Every frame of the buffer pool is pinned, so no page can be brought in."""


class PartitioningError(MinidbError):
    """A partitioning spec or partitioner is wrong; the message says what to change."""


class FragmentCoverageError(PartitioningError):
    """Predicate fragments left a tuple without a node (a gap) or gave it several (an overlap)."""


class NotImplementedYet(MinidbError, NotImplementedError):
    """A part of minidb left for a lab assignment: the message names the lab part to write.

    The student release replaces the reference code of each assignment with a line raising this
    error, so running a built-in that depends on it (an experiment using ``range_uniform`` or
    ``clock``) says which part of which lab to implement, instead of failing somewhere deeper.
    """


class LockError(MinidbError):
    """A transaction could not get a lock (``minidb.txn.locks``); it has been aborted."""


class DeadlockError(LockError):
    """The transaction was chosen as the victim of a deadlock; the message names the cycle."""


class LockTimeoutError(LockError):
    """A lock wait lasted longer than the transaction's lock timeout; the message names the
    lock and who held it."""
