"""How busy this machine is, and how long a phase may therefore take.

The machines minidb runs on are often shared: a laptop running a notebook, a 2-core CI runner
running other jobs. A fixed deadline ("a phase that takes more than 60 s has failed") is then a
guess that fails a user's correct but slow query. So every wait of the parallel engine is
stretched by how loaded the machine is (``busy_factor``), measured when the wait starts and
again when it would end, and an error that ends a wait says what the load was.
"""

from __future__ import annotations

import os

#: seconds one phase (or one exchange wait) may take on an idle machine, when ``connect`` was
#: given no ``timeout``
PHASE_TIMEOUT_S = 60.0
#: a phase never waits longer than this, however loaded the machine: past it, it has failed
PHASE_LIMIT_S = 3600.0
#: the most nodes one database (or an experiment's machine) may have: inline, every node lives
#: in this process, and a typo such as nodes=10**9 would build nodes until memory ran out
MAX_NODES = 256


def machine_load() -> tuple[float, int]:
    """(1-minute load average, cores) of this machine; the load is 0 where the OS has none."""
    cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0], cores
    except (AttributeError, OSError):  # Windows
        return 0.0, cores


def busy_factor() -> float:
    """How many times slower than idle this machine runs: its load average per core, at least 1."""
    load, cores = machine_load()
    return max(1.0, load / cores)


def phase_timeout(timeout: float | None) -> float:
    """Seconds a phase may take now: ``timeout`` as the user gave it, or, when None,
    ``PHASE_TIMEOUT_S`` stretched by ``busy_factor`` (at most ``PHASE_LIMIT_S``)."""
    if timeout is not None:
        return float(timeout)
    return min(PHASE_LIMIT_S, PHASE_TIMEOUT_S * busy_factor())


def load_note() -> str:
    """The machine's load in words, for an error message about a wait that ran out."""
    load, cores = machine_load()
    return f"load average {load:.1f} on {cores} core{'s' if cores != 1 else ''}"


__all__ = ["MAX_NODES", "PHASE_LIMIT_S", "PHASE_TIMEOUT_S", "busy_factor", "load_note", "machine_load",
           "phase_timeout"]
