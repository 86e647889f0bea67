"""Gradescope's ``results.json``: one entry per graded case, written once at the very end.

The format is Gradescope's autograder specification: a top-level ``score``, ``execution_time``
(seconds), ``output`` (text for the student), ``stdout_visibility`` (whether the student sees what
the autograder printed, which here is meant for the instructor, so ``hidden``) and ``tests``, each
with ``name``, ``number``, ``score``, ``max_score``, ``status`` (``passed`` / ``failed``),
``output``, ``visibility`` and ``tags``, and, for a lab with a performance dimension, an optional
``leaderboard`` (``leaderboard_entry``). A test's visibility is one of ``visible``, ``hidden``
(never shown to the student), ``after_due_date`` and ``after_published``.

``write_results`` replaces the file in one step (a temporary file renamed over it), so a reader
never sees half a file, and every string is cut to a bounded length and made encodable first,
whatever a submission printed.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
TEST_OUTPUT_LIMIT = 8_000
OUTPUT_LIMIT = 16_000


def clean_text(text: object, limit: int) -> str:
    """``text`` as a string that encodes to UTF-8, cut to ``limit`` characters with a note."""
    s = str(text).encode("utf-8", "replace").decode("utf-8")
    if len(s) > limit:
        s = s[: limit - 60] + f"\n... ({len(s) - limit + 60:,} more characters not shown)"
    return s


@dataclass
class TestResult:
    """One graded case as Gradescope shows it."""

    name: str
    number: str
    max_score: float
    score: float = 0.0
    passed: bool = False
    output: str = ""
    visibility: str = "visible"
    tags: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        if self.visibility not in VISIBILITIES:
            raise ValueError(f"visibility {self.visibility!r} is not one of {VISIBILITIES}")
        return {
            "name": clean_text(self.name, 200),
            "number": self.number,
            "score": round(float(self.score), 4),
            "max_score": round(float(self.max_score), 4),
            "status": "passed" if self.passed else "failed",
            "output": clean_text(self.output, TEST_OUTPUT_LIMIT),
            "visibility": self.visibility,
            "tags": [clean_text(t, 60) for t in self.tags],
        }


@dataclass
class Results:
    """The whole ``results.json``: tests, a summary for the student and the time taken."""

    tests: list[TestResult] = field(default_factory=list)
    output: str = ""
    execution_time: float = 0.0
    leaderboard: list[dict] = field(default_factory=list)
    """Gradescope leaderboard columns (``leaderboard_entry``); left out of the file when empty."""

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.max_score for t in self.tests)

    def as_json(self) -> dict:
        return {
            "score": round(float(self.score), 4),
            "execution_time": round(float(self.execution_time), 2),
            "output": clean_text(self.output, OUTPUT_LIMIT),
            "stdout_visibility": "hidden",
            "tests": [t.as_json() for t in self.tests],
            **({"leaderboard": list(self.leaderboard)} if self.leaderboard else {}),
        }


LEADERBOARD_ORDERS = ("asc", "desc")


def leaderboard_entry(name: str, value: float | str, order: str = "desc") -> dict:
    """One column of Gradescope's leaderboard, for a lab with a performance dimension (say the
    hit ratio of a student's replacement policy on a hidden trace): ``{"name", "value",
    "order"}``, ``order`` ``desc`` when larger is better and ``asc`` when smaller is. A number
    is rounded to 4 digits; a string value is shown as is (Gradescope sorts it as text)."""
    if order not in LEADERBOARD_ORDERS:
        raise ValueError(f"leaderboard order {order!r} is not one of {LEADERBOARD_ORDERS}")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"a leaderboard value is a number or a string, not {value!r}")
    if isinstance(value, float) and value != value:  # NaN: JSON cannot hold it
        raise ValueError(f"leaderboard value of {name!r} is not a number")
    shown = round(float(value), 4) if not isinstance(value, str) else clean_text(value, 60)
    return {"name": clean_text(name, 60), "value": shown, "order": order}


def write_results(path: str | os.PathLike, results: Results) -> None:
    """Write ``results`` to ``path`` as JSON, replacing the file in one step."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results.as_json(), indent=2) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
