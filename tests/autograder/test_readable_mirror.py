"""A package imported before the privilege drop finds its submodules in the readable copy."""

from __future__ import annotations

import os

from autograder import _child


def test_a_package_path_moves_into_the_copy_of_the_entry_that_holds_it():
    mirror = {"/home/me/.venv/lib/site-packages": "/tmp/copy/2-site-packages"}
    inside = os.path.join("/home/me/.venv/lib/site-packages", "numpy")
    assert _child._mirrored(inside, mirror) == os.path.join("/tmp/copy/2-site-packages", "numpy")
    # a sibling whose name only starts the same is not inside the entry
    assert _child._mirrored("/home/me/.venv/lib/site-packages-old/x", mirror) == \
        "/home/me/.venv/lib/site-packages-old/x"
    assert _child._mirrored("/usr/lib/python3/numpy", mirror) == "/usr/lib/python3/numpy"
