"""Hostile: ends the process, status 0, while being imported."""

import os

os._exit(0)
