"""Helpers of the autograder's tests: submissions assembled from files, graded with small limits.

Every grade runs the real sandbox (child processes, limits, a separate user when the tests run
as root) and its results.json is checked against Gradescope's format before a test looks at it.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `python -m autograder` runs from the root; so do these tests
    sys.path.insert(0, str(ROOT))

from autograder.results import VISIBILITIES  # noqa: E402
from autograder.sandbox import Limits  # noqa: E402

HERE = Path(__file__).resolve().parent
SUBMISSIONS = HERE / "submissions"
REFERENCE = ROOT / "autograder" / "assignments" / "lab1" / "reference"
# Wall-clock limits are generous where no test waits for them: a busy machine slows imports.
FAST = Limits(wall_s=30, cpu_s=5, memory_mb=1024, output_mb=4)
HOSTILE = Limits(wall_s=30, cpu_s=2, memory_mb=1024, output_mb=4)  # endless loops: 2 s of CPU
SLEEPY = Limits(wall_s=3, cpu_s=2, memory_mb=1024, output_mb=4)  # endless sleeps: 3 s per stage


@dataclass
class Graded:
    doc: dict  # results.json as written
    seconds: float

    @property
    def score(self) -> float:
        return self.doc["score"]

    def part(self, key: str) -> float:
        return sum(t["score"] for t in self.doc["tests"] if f"part {key}" in t["tags"])

    def test(self, case_id: str) -> dict:
        (found,) = [t for t in self.doc["tests"] if f": {case_id} " in t["name"]]
        return found

    def failed(self) -> list[str]:
        return [t["name"].split(": ")[1].split()[0] for t in self.doc["tests"]
                if t["status"] == "failed"]


def check_gradescope(doc: dict) -> None:
    """``doc`` follows Gradescope's results.json specification, and its score adds up."""
    assert {"score", "execution_time", "output", "stdout_visibility", "tests"} <= set(doc)
    assert isinstance(doc["score"], int | float) and isinstance(doc["execution_time"], int | float)
    assert isinstance(doc["output"], str) and doc["stdout_visibility"] in VISIBILITIES
    numbers = set()
    for t in doc["tests"]:
        assert set(t) == {"name", "number", "score", "max_score", "status", "output",
                          "visibility", "tags"}
        assert isinstance(t["name"], str) and isinstance(t["output"], str)
        assert t["status"] in ("passed", "failed") and t["visibility"] in VISIBILITIES
        assert all(isinstance(tag, str) for tag in t["tags"])
        assert 0 <= t["score"] <= t["max_score"]
        assert (t["score"] == t["max_score"]) == (t["status"] == "passed")
        assert t["number"] not in numbers
        numbers.add(t["number"])
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]))


def assemble(target: Path, partitioner: str | Path | None = "reference",
             policy: str | Path | None = "reference") -> Path:
    """A submission folder: each file is "reference", a file of submissions/, source text, or
    None (left out). The reference files also come along as helper modules
    (``reference_partitioner``, ``reference_policy``) that hostile code can build on."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("partitioner.py", "policy.py"):
        shutil.copyfile(REFERENCE / name, target / f"reference_{name}")
    for name, what in (("partitioner.py", partitioner), ("policy.py", policy)):
        if what is None:
            continue
        if what == "reference":
            shutil.copyfile(REFERENCE / name, target / name)
        elif isinstance(what, Path) or (what.endswith(".py") and "\n" not in what):
            shutil.copyfile(SUBMISSIONS / what, target / name)
        else:
            (target / name).write_text(what)
    return target


#: ``computed_once`` of tests/conftest.py, set for the session by tests/autograder/conftest.py
SHARED = None


def grade_one_file(lab: str, filename: str, tmp_path: Path, source: Path | str,
                   limits: Limits) -> Graded:
    """Grade a submission of one file, ``source`` (a path or its text), as ``filename`` for
    ``lab`` through ``grade_to_file``; check and return results.json. The same text, file name
    and limits are graded once per session (several tests look at one wrong answer), then
    shared by every test and worker."""
    import hashlib

    from autograder.grading import grade_to_file

    text = source.read_text() if isinstance(source, Path) else source

    def grade() -> dict:
        sub = tmp_path / "submission"
        sub.mkdir(parents=True)
        (sub / filename).write_text(text)
        results = tmp_path / "results.json"
        grade_to_file(lab, sub, results, limits=limits, log=lambda line: None)
        return json.loads(results.read_text())

    key = hashlib.sha256(repr((lab, filename, text, limits)).encode()).hexdigest()[:20]
    doc = grade() if SHARED is None else SHARED(f"graded-{lab}-{key}", grade)
    check_gradescope(doc)
    return Graded(doc, 0.0)


def grade_to_doc(submission: Path, results: Path, limits: Limits = FAST) -> Graded:
    """Grade through ``grade_to_file``, as the command line does; check and return results.json."""
    import time

    from autograder.grading import grade_to_file

    start = time.monotonic()
    grade_to_file("lab1", submission, results, limits=limits, log=lambda line: None)
    seconds = time.monotonic() - start
    doc = json.loads(results.read_text())
    check_gradescope(doc)
    return Graded(doc, seconds)
