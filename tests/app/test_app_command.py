"""``minidb app``: stopping it (Ctrl-C or SIGTERM to the minidb process, even SIGKILL on Linux)
stops its Streamlit server; no orphan keeps the port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    """The process ids whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL],
                         ids=["SIGTERM", "SIGINT", "SIGKILL"])
def test_stopping_minidb_app_stops_streamlit(sig, tmp_path):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MINIDB_RESULTS": str(tmp_path / "r.duckdb")}
    log = (tmp_path / "app.log").open("w")
    started = time.monotonic()
    app = subprocess.Popen([sys.executable, "-m", "minidb.cli", "app", "--headless",
                            "--port", str(port)], cwd=ROOT, env=env, stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True)
    servers: list[int] = []
    try:
        url = f"http://127.0.0.1:{port}/_stcore/health"
        while True:
            assert app.poll() is None, (tmp_path / "app.log").read_text()
            assert time.monotonic() - started < START_TIMEOUT_S, "streamlit never answered"
            servers = servers or _children(app.pid)
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if answer.read().strip() == b"ok":
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        startup_s = time.monotonic() - started
        servers = _children(app.pid)
        assert servers, "minidb app started no child process"
        # the deadline adapts to this machine: a slow start means a slow stop
        deadline_s = max(15.0, 3 * startup_s)
        app.send_signal(sig)  # to the minidb process only, as `kill` does
        app.wait(timeout=deadline_s)
        stop_by = time.monotonic() + deadline_s
        while any(_alive(pid) for pid in servers) and time.monotonic() < stop_by:
            time.sleep(0.1)
        left = [pid for pid in servers if _alive(pid)]
        assert not left, f"streamlit {left} still runs {deadline_s:.0f} s after {sig.name}"
        # a signal minidb handles ends it with 128 + the signal; SIGKILL cannot be handled
        assert app.returncode == (-sig if sig == signal.SIGKILL else 128 + sig)
    finally:
        for pid in servers:
            _kill_group(pid)
        _kill_group(app.pid)
        if app.poll() is None:
            app.wait(timeout=10)
        log.close()
