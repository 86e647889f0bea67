"""Issue 18, item 12: ``backend="ray"`` starts its own local Ray instance, and a Ray that cannot
start is one line with nothing left running.

Every scenario runs in its own Python process with its own Ray temporary directory
(``RAY_TMPDIR``, short: Ray's socket paths must stay under 108 bytes), so it neither meets the
test session's Ray instance (``ray_session``) nor writes into the machine's ``/tmp/ray``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ray_tmp():
    """A private, short Ray temporary directory; removed afterwards."""
    directory = tempfile.mkdtemp(prefix="r18-", dir="/tmp")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _run(code: str, ray_tmp: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=str(ROOT), RAY_TMPDIR=ray_tmp, **env)
    environment.pop("RAY_ADDRESS", None)
    environment.pop("MINIDB_RAY_ADDRESS", None)
    environment.update(env)
    return subprocess.run([sys.executable, *args] if not code else
                          [sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=240, env=environment)


def _processes_naming(text: str) -> list[str]:
    """Command lines of running processes that mention ``text`` (Ray's ones name its temp dir)."""
    import psutil  # noqa: F401  (Ray ships psutil; importing ray puts it on the path)

    found = []
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or [])
        if text in line and process.pid != os.getpid():
            found.append(f"{process.pid} {line[:120]}")
    return found


def _import_psutil() -> None:
    pytest.importorskip("ray")  # puts ray/thirdparty_files (psutil) on sys.path


def test_a_recorded_cluster_and_ray_address_are_not_joined(ray_tmp):
    """`ray start` (and ray.cluster_utils.Cluster) record their cluster; plain ray.init() would
    join it and refuse num_cpus. minidb starts its own instance, as the README says."""
    recorded = Path(ray_tmp) / "ray"
    recorded.mkdir()
    (recorded / "ray_current_cluster").write_text("127.0.0.1:1\n")  # a cluster long gone
    done = _run("""
        import minidb
        with minidb.connect(nodes=2, backend="ray", timeout=120) as db:
            db.create_table("a", "wisconsin:500", partition="hash(unique1)")
            print("ROWS", db.sql("SELECT COUNT(*) FROM a").to_pylist())
    """, ray_tmp, RAY_ADDRESS="127.0.0.1:1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ROWS [(500,)]" in done.stdout
    _import_psutil()
    assert _processes_naming(ray_tmp) == []  # closing the database stopped its Ray


START_THAT_TIMES_OUT = """
    import minidb
    import psutil  # shipped with Ray
    from minidb.errors import MinidbError
    try:
        minidb.connect(nodes=2, backend="ray")
    except MinidbError as err:
        print("ERROR", err)
    left = [p for p in psutil.Process().children(recursive=True)]
    print("LEFT", len(left), [" ".join(p.cmdline())[:80] for p in left])
"""


def test_a_ray_start_that_times_out_is_one_line_and_leaves_nothing(ray_tmp):
    # RAY_gcs_server_port_wait_time_s=0: Ray's start gives up waiting for its GCS server at once,
    # as a start on an overloaded machine does after 30 s; the GCS server is already running
    done = _run(START_THAT_TIMES_OUT, ray_tmp, RAY_gcs_server_port_wait_time_s="0")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stdout.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "could not start a local Ray instance" in errors[0]
    assert "backend='inline'" in errors[0]
    assert "LEFT 0 []" in done.stdout, done.stdout  # while the driver still runs
    _import_psutil()
    assert _processes_naming(ray_tmp) == []


def test_a_ray_start_failure_on_the_command_line_is_one_line(ray_tmp, tmp_path):
    store = tmp_path / "results.duckdb"
    done = _run("", ray_tmp, "-m", "minidb.cli", "run", "gamma.page_size", "--quick",
                "--backend", "ray", "--store", str(store), RAY_gcs_server_port_wait_time_s="0")
    assert done.returncode == 2, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("minidb: error: could not start a local Ray")
    from minidb.results import ResultsStore

    (run,) = ResultsStore(store).runs()
    assert run["status"] == "failed" and "could not start a local Ray instance" in run["error"]
    _import_psutil()
    assert _processes_naming(ray_tmp) == []


def test_a_cluster_that_cannot_be_joined_is_one_line(ray_tmp):
    done = _run("""
        import ray
        import minidb
        from minidb.errors import MinidbError

        def refuse(*args, **kwargs):
            raise ConnectionError("Failed to connect to Ray cluster at 10.1.2.3:6379")

        ray.init = refuse  # joining a real unreachable cluster takes Ray over a minute
        try:
            minidb.connect(nodes=2, backend="ray", address="10.1.2.3:6379")
        except MinidbError as err:
            print("ERROR", err)
    """, ray_tmp)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("ERROR")]
    assert "could not join the Ray cluster at 10.1.2.3:6379 (ConnectionError: Failed to " \
           "connect" in line and "leave the address out" in line


def test_the_command_line_shows_no_ray_chatter(ray_tmp, tmp_path):
    """Issue 17, item 5: a Ray run of 20 nodes (more worker processes than this machine's
    cores, which makes the raylet warn) prints minidb's lines only: no token-authentication
    warning, no "Started a local Ray instance", no raylet warning, no colour codes; into a
    pipe, a line says what runs instead of a progress bar."""
    store = tmp_path / "results.duckdb"
    done = _run("", ray_tmp, "-m", "minidb.cli", "run", "gamma.selection_speedup", "--quick",
                "--nodes", "20", "--scale", "0.01", "--backend", "ray", "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    for chatter in ("\x1b[", "raylet", "startup concurrency", "Token authentication",
                    "Started a local Ray", "WARNING", "INFO"):
        assert chatter not in output, output[-3000:]
    assert done.stderr.splitlines()[0] == "gamma.selection_speedup: running (1 steps)"
    assert done.stderr.splitlines()[-1].startswith("run ")
    _import_psutil()
    assert _processes_naming(ray_tmp) == []
