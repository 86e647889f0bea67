"""minidb: a teaching engine for parallel and distributed database systems."""

__version__ = "0.1.0"
