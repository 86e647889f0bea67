"""Gradescope's leaderboard in ``results.json``: entries of name, value and order, written only
when a lab has one."""

from __future__ import annotations

import json

import pytest

from autograder.results import Results, leaderboard_entry, write_results
from autograder.results import TestResult as CaseResult


def test_leaderboard_entries_follow_gradescopes_format(tmp_path):
    results = Results(tests=[CaseResult("B1", "2.1", 10, 10, True)])
    results.leaderboard = [leaderboard_entry("hit ratio (hidden trace)", 0.612345),
                           leaderboard_entry("misses", 388, order="asc")]
    path = tmp_path / "results.json"
    write_results(path, results)
    written = json.loads(path.read_text())
    assert written["leaderboard"] == [
        {"name": "hit ratio (hidden trace)", "value": 0.6123, "order": "desc"},
        {"name": "misses", "value": 388.0, "order": "asc"}]
    assert written["score"] == 10  # the score is the tests', never the leaderboard's


def test_no_leaderboard_key_without_entries():
    assert "leaderboard" not in Results().as_json()


@pytest.mark.parametrize(("value", "order"), [(0.5, "up"), (float("nan"), "desc"),
                                              (True, "desc"), (None, "desc")])
def test_bad_entries_are_refused(value, order):
    with pytest.raises(ValueError):
        leaderboard_entry("x", value, order)
