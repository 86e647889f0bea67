"""Fixtures of the explorer's tests: results stores seeded once per session with small runs, a
fresh copy of one for each test that writes, and the ``browser`` marker.

The explorer's modules (``app/explorer.py``, ``app/explorer_ui.py``) are imported the way
``streamlit run app/Home.py`` imports them: with ``app/`` on ``sys.path``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from app_stores import copy_store

APP = Path(__file__).resolve().parents[2] / "app"
if str(APP) not in sys.path:
    sys.path.insert(0, str(APP))

#: the small runs every page test sees (about 4 s in all); the speedup experiment runs twice, on
#: Teradata's profile and then on Gamma's, so a comparison has two runs of one experiment
SEED_RUNS = (
    ("gamma.selection_speedup", {"scale": 0.05, "nodes": [1, 2], "profile": "teradata"}),
    ("gamma.selection_speedup", {"scale": 0.05, "nodes": [1, 2]}),
    ("gamma.page_size", {"scale": 0.05, "page_sizes": [4096, 8192]}),
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives the explorer in a headless chromium (playwright); in the "
                   "default run, skipped only with MINIDB_SKIP_BROWSER=1")


@pytest.fixture(scope="session")
def seeded_store_path(computed_once) -> Path:
    """A results store holding ``SEED_RUNS``, made once per session for every worker (read it
    through a copy: ``store_path``)."""
    from minidb.experiments.reproduce import run_and_store
    from minidb.results import ResultsStore

    def seed() -> Path:
        path = computed_once.folder / "seeded" / "results.duckdb"
        path.parent.mkdir()
        store = ResultsStore(path)
        for name, overrides in SEED_RUNS:
            run_and_store(name, store, overrides)
        return path

    return computed_once("app_seeded_store", seed)


@pytest.fixture(scope="session")
def paper_store_path(computed_once) -> Path:
    """A store with one run at the paper's configuration (100,000 tuples, 1 and 8 nodes, about
    4 s), so that its rows meet published cells: some within 2x, one outside. Made once per
    session for every worker."""
    from minidb.experiments.reproduce import run_and_store
    from minidb.results import ResultsStore

    def run() -> Path:
        path = computed_once.folder / "paper" / "results.duckdb"
        path.parent.mkdir()
        run_and_store("gamma.selection_speedup", ResultsStore(path), {"nodes": [1, 8]})
        return path

    return computed_once("app_paper_store", run)


def _use_copy(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "results.duckdb"
    copy_store(source, copy)
    monkeypatch.setenv("MINIDB_RESULTS", str(copy))
    return copy


@pytest.fixture
def store_path(seeded_store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the seeded store, named by $MINIDB_RESULTS for the app under test."""
    return _use_copy(seeded_store_path, tmp_path, monkeypatch)


@pytest.fixture
def paper_store(paper_store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the paper-configuration store, named by $MINIDB_RESULTS."""
    return _use_copy(paper_store_path, tmp_path, monkeypatch)


@pytest.fixture
def empty_store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$MINIDB_RESULTS naming a file that does not exist yet."""
    path = tmp_path / "nothing" / "results.duckdb"
    monkeypatch.setenv("MINIDB_RESULTS", str(path))
    return path
