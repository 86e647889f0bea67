"""Hostile: raises while being imported."""

raise RuntimeError("this submission refuses to be imported")
