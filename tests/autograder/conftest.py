"""Fixtures for the autograder's tests (helpers in ``ag_helpers``)."""

from __future__ import annotations

import hashlib
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


@pytest.fixture
def grade_once(tmp_path, computed_once):
    """grade_once(submission_dir, limits=FAST) -> Graded: as ``grade``, but a submission of the
    same files graded with the same limits is graded once per session and shared by every test
    and worker (only for tests that look at results.json alone, not at what grading leaves
    behind)."""

    def run(submission: Path, limits: Limits = FAST) -> Graded:
        files = sorted((str(f.relative_to(submission)), f.read_bytes())
                       for f in submission.rglob("*") if f.is_file())
        key = hashlib.sha256(repr((files, limits)).encode()).hexdigest()[:20]
        doc = computed_once(f"graded-lab1-{key}", lambda: grade_to_doc(
            submission, tmp_path / "results" / "results.json", limits).doc)
        return Graded(doc, 0.0)

    return run


@pytest.fixture(scope="session")
def reference_graded(tmp_path_factory) -> Graded:
    return grade_to_doc(REFERENCE, tmp_path_factory.mktemp("reference") / "results.json")
