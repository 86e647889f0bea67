"""Shared fixtures: one Ray instance for the whole test session, and the test relations."""

from __future__ import annotations

import logging

import pytest
from cluster_checks import ROWS


@pytest.fixture(scope="session")
def ray_session():
    """Start Ray once (2 CPUs, no dashboard) for every test that needs it; stop it at the end."""
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():  # quiet, as minidb starts it: no banner, no token warning
        ray.init(include_dashboard=False, num_cpus=2, log_to_driver=False,
                 logging_level=logging.ERROR, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def wisconsin_pair():
    from minidb.datagen import wisconsin

    return wisconsin(ROWS), wisconsin(ROWS, seed=1)
