"""Hostile: sleeps forever while being imported (stopped by the wall-clock limit)."""

import time

while True:
    time.sleep(60)
