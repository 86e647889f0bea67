"""Hostile: spins forever while being imported (stopped by the CPU limit)."""

while True:
    pass
