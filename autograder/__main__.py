"""``python -m autograder ...``: see ``autograder.cli``."""

import sys

from autograder.cli import run

sys.exit(run())
