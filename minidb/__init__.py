"""minidb: a teaching engine for parallel and distributed database systems."""

__version__ = "0.1.0"

from minidb.cluster.coordinator import ParallelDatabase, ParallelResult  # noqa: E402
from minidb.database import Database, Result, connect  # noqa: E402

__all__ = ["__version__", "connect", "Database", "Result", "ParallelDatabase", "ParallelResult"]
