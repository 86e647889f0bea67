"""Phase deadlines adapt to a loaded machine unless the user fixed them (issue 17, item 4)."""

from __future__ import annotations

import time

import pytest

import minidb
from minidb.cluster import backends, machine
from minidb.errors import MinidbError


def test_no_timeout_stretches_with_the_load(monkeypatch):
    monkeypatch.setattr(machine, "machine_load", lambda: (2.0, 2))
    assert machine.phase_timeout(None) == machine.PHASE_TIMEOUT_S
    monkeypatch.setattr(machine, "machine_load", lambda: (20.0, 2))
    assert machine.phase_timeout(None) == 10 * machine.PHASE_TIMEOUT_S
    monkeypatch.setattr(machine, "machine_load", lambda: (1e6, 2))
    assert machine.phase_timeout(None) == machine.PHASE_LIMIT_S
    assert machine.phase_timeout(7) == 7.0  # the user's number is kept, whatever the load


class _Slow:
    def __init__(self, seconds: float):
        self.seconds = seconds

    def work(self) -> str:
        time.sleep(self.seconds)
        return "done"

    def close(self) -> None:
        pass


def _backend(seconds: float) -> backends.InlineBackend:
    backend = backends.InlineBackend.__new__(backends.InlineBackend)
    from concurrent.futures import ThreadPoolExecutor

    backend.nodes, backend.timeout = [_Slow(seconds), _Slow(0)], None
    backend._pool = ThreadPoolExecutor(2)
    return backend


def test_a_phase_outlives_its_idle_deadline_while_the_machine_is_busy(monkeypatch):
    monkeypatch.setattr(machine, "PHASE_TIMEOUT_S", 0.2)
    monkeypatch.setattr(machine, "machine_load", lambda: (20.0, 2))  # 10x busier than idle
    backend = _backend(0.6)
    try:
        assert backend.call_many([(0, "work", ()), (1, "work", ())], "probe") == ["done", "done"]
    finally:
        backend.shutdown()


def test_a_phase_past_its_deadline_names_the_node_the_phase_and_the_load(monkeypatch):
    monkeypatch.setattr(machine, "PHASE_TIMEOUT_S", 0.2)
    monkeypatch.setattr(machine, "machine_load", lambda: (1.0, 2))
    backend = _backend(1.0)
    try:
        with pytest.raises(MinidbError, match=r"node 0 did not finish work within 0\.2 s "
                                              r"\(phase probe; load average 1\.0 on 2 cores\)"):
            backend.call_many([(0, "work", ()), (1, "work", ())], "probe")
    finally:
        backend.shutdown()


@pytest.mark.parametrize("bad", [0, -1, "60", True, float("nan")])
def test_a_bad_timeout_is_refused(bad):
    with pytest.raises(MinidbError, match="timeout must be a positive number"):
        minidb.connect(nodes=2, timeout=bad)
