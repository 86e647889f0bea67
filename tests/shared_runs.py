"""Experiment runs several test modules check, each computed once per session through the
``computed_once`` fixture of tests/conftest.py (the name is the key: one name, one computation).
"""

from __future__ import annotations

from minidb.experiments import run_experiment


def tandem_speedup_quick_vlx(computed_once) -> list[dict]:
    """``minidb run tandem.speedup --quick`` on the VLX (10% scale, 2 to 16 partitions, the
    audit log on cpu 1): about 30 s."""
    return computed_once("tandem_speedup_quick_vlx",
                         lambda: run_experiment("tandem.speedup", quick=True, machines=["vlx"]))
