"""One process at a time in a data directory: an exclusive lock on a file in it.

Two processes that both believe they own a directory each keep their own catalog and overwrite
the other's (a committed table vanishes). ``DirectoryLock`` takes an exclusive, non-blocking
``flock`` on ``minidb.lock`` in the directory for as long as the database is open; a second
opener, in another process or in the same one, is refused with the holder's process id. The
operating system drops the lock when its holder dies, ``kill -9`` included, so a crash never
leaves the directory locked. Where ``fcntl`` does not exist (Windows) there is no lock.
"""

from __future__ import annotations

import os
from pathlib import Path

from minidb.errors import MinidbError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

LOCK_FILE = "minidb.lock"


class DirectoryLock:
    """Held from construction until ``release`` (or until the process ends)."""

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory) / LOCK_FILE
        self._fd = -1
        if fcntl is None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise MinidbError(
                f"data directory {self.path.parent} is open in another minidb database (process "
                f"{holder}); close that one first (one process at a time may open a directory)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = -1
