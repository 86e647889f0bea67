"""Fixtures for the autograder's tests (helpers in ``ag_helpers``)."""

from __future__ import annotations

from pathlib import Path

import ag_helpers
import pytest
from ag_helpers import FAST, REFERENCE, Graded, Limits, grade_to_doc


@pytest.fixture(scope="session", autouse=True)
def _share_gradings(computed_once):
    """Lets ``ag_helpers.grade_one_file`` grade each submission once per session."""
    ag_helpers.SHARED = computed_once
    yield
    ag_helpers.SHARED = None


@pytest.fixture
def grade(tmp_path):
    """grade(submission_dir, limits=FAST) -> Graded; results.json goes under tmp_path."""

    def run(submission: Path, limits: Limits = FAST, results: Path | None = None) -> Graded:
        return grade_to_doc(submission, results or tmp_path / "results" / "results.json", limits)

    return run


@pytest.fixture(scope="session")
def reference_graded(tmp_path_factory) -> Graded:
    return grade_to_doc(REFERENCE, tmp_path_factory.mktemp("reference") / "results.json")
