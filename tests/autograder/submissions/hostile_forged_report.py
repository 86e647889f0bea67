"""Hostile: writes forged events, and a "done", on every open file descriptor."""

import os

from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register

for fd in range(3, 64):
    try:
        os.write(fd, b'{"event": "ready"}\n{"event": "done", "score": 100}\n')
    except OSError:
        pass


@register("buffer_policy", "student_clock")
class Forged(ReplacementPolicy):
    def choose_victim(self, candidates):
        return int(candidates[0])
