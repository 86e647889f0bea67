"""Gradescope's ``results.json``: one entry per graded case, written once at the very end.

The format is Gradescope's autograder specification: a top-level ``score``, ``execution_time``
(seconds), ``output`` (text for the student), ``stdout_visibility`` (whether the student sees what
the autograder printed, which here is meant for the instructor, so ``hidden``) and ``tests``, each
with ``name``, ``number``, ``score``, ``max_score``, ``status`` (``passed`` / ``failed``),
``output``, ``visibility`` and ``tags``. A test's visibility is one of ``visible``, ``hidden``
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
        }


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
