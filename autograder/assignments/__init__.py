"""The assignments the autograder knows, by name (``python -m autograder grade lab1 ...``).

Each is a package here whose ``assignment()`` returns its ``grading.Assignment``, whose
``release_files()`` names files the student release adds to it, and whose ``STUDENT_DIR`` is the
folder (from the repository root) holding the files students write and hand in.
"""

from __future__ import annotations

import importlib

from autograder.grading import Assignment
from autograder.sandbox import AutograderError

NAMES = ("lab1", "lab2", "lab3", "lab4", "lab5")


def module(name: str):
    if name not in NAMES:
        raise AutograderError(f"unknown assignment {name!r}; choose one of: {', '.join(NAMES)}")
    return importlib.import_module(f"autograder.assignments.{name}")


def load(name: str, include_hidden: bool = True) -> Assignment:
    return module(name).assignment(include_hidden)
