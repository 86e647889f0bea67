"""Shared fixtures: one Ray instance for the whole test session, the test relations, and
``computed_once``, which runs an expensive computation once per session for every xdist worker."""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cluster_checks import ROWS
from filelock import FileLock


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


def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this test session that every xdist worker sees (pytest-xdist's documented
    pattern: the parent of a worker's base temporary folder is the session's); in one process,
    the session's own base temporary folder."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def computed_once(tmp_path_factory) -> Callable[[str, Callable[[], Any]], Any]:
    """``computed_once(name, compute)``: ``compute()``'s value, computed by the first worker that
    asks for ``name`` in this test session and pickled beside the session's temporary folders;
    every other worker (and every later caller) waits for it and reads a fresh copy. For the
    deterministic experiment runs several modules, or both halves of one module, need. Files
    that ``compute`` makes for everyone (results stores) go under ``computed_once.folder``."""
    folder = shared_dir(tmp_path_factory) / "computed_once"
    folder.mkdir(exist_ok=True)

    def get(name: str, compute: Callable[[], Any]) -> Any:
        path = folder / f"{name}.pickle"
        with FileLock(str(path) + ".lock"):
            if not path.is_file():
                value = compute()
                partial = path.with_suffix(".partial")
                partial.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
                partial.replace(path)
                return value
        return pickle.loads(path.read_bytes())

    get.folder = folder
    return get
