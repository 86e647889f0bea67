"""Hostile: the reference Clock, after writing 20 MB straight to file descriptor 1."""

import os

from reference_policy import StudentClock  # noqa: F401  (registers student_clock)

written = 0
try:
    for _ in range(20):
        written += os.write(1, b"z" * 2**20)
except OSError as exc:  # the file size limit stops it
    print(f"stopped after {written:,} bytes: {exc}")
