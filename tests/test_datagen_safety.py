"""`minidb datagen --out PATH` never destroys PATH and never runs the machine out of memory.

Each scenario runs the real command in a subprocess. A failing write is a real one: the child's
file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored) makes the kernel refuse the write half way
with EFBIG, as a full disk refuses it with ENOSPC. A device node is one made for the test in its
own temporary directory (as root; the same driver as /dev/full, whose writes fail with ENOSPC), so
no system file is at risk even on code that would remove it.
"""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from minidb import datagen as dg
from minidb.errors import MinidbError

REPO = Path(__file__).resolve().parents[1]


def run_datagen(*args, cwd: Path, preexec=None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "minidb.cli", "datagen", *args], cwd=cwd,
                          env=env, capture_output=True, timeout=timeout, preexec_fn=preexec)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("minidb: error: "), err
    assert "Traceback" not in err
    return err


def small_file_limit() -> None:
    """In the child: files may grow to 64 KiB; past that a write fails (EFBIG), not a signal."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


def test_a_failing_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "old.parquet"
    target.write_bytes(b"the user's previous file")
    r = run_datagen("wisconsin", "--rows", "20000", "--out", "old.parquet", cwd=tmp_path,
                    preexec=small_file_limit)
    err = one_error_line(r)
    assert "cannot write old.parquet" in err and "left as it was" in err
    assert target.read_bytes() == b"the user's previous file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.parquet"]  # no temporary left


def test_a_failing_write_of_a_new_file_leaves_nothing(tmp_path):
    r = run_datagen("wisconsin", "--rows", "20000", "--out", "new.parquet", cwd=tmp_path,
                    preexec=small_file_limit)
    one_error_line(r)
    assert list(tmp_path.iterdir()) == []


def test_a_successful_write_replaces_the_old_file(tmp_path):
    target = tmp_path / "t.parquet"
    target.write_bytes(b"old")
    r = run_datagen("dept", "--rows", "30", "--out", "t.parquet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert pq.read_table(target).num_rows == 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_is_refused_and_kept(tmp_path):
    node = tmp_path / "full"
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 7))  # the /dev/full driver
    r = run_datagen("dept", "--rows", "30", "--out", str(node), cwd=tmp_path)
    assert "not a regular file" in one_error_line(r)
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_dev_null_is_refused_and_kept(tmp_path):
    r = run_datagen("dept", "--rows", "30", "--out", "/dev/null", cwd=tmp_path)
    assert "/dev/null is not a regular file" in one_error_line(r)
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_pipe_and_a_directory_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = run_datagen("dept", "--rows", "30", "--out", str(fifo), cwd=tmp_path, timeout=30)
    assert "not a regular file" in one_error_line(r)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    (tmp_path / "d").mkdir()
    r = run_datagen("dept", "--rows", "30", "--out", "d", cwd=tmp_path)
    assert "d is a directory" in one_error_line(r)
    assert (tmp_path / "d").is_dir()


def test_a_symlink_to_a_file_replaces_the_file_it_names(tmp_path):
    real = tmp_path / "real.parquet"
    real.write_bytes(b"old")
    (tmp_path / "link.parquet").symlink_to(real)
    r = run_datagen("dept", "--rows", "12", "--out", "link.parquet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "link.parquet").is_symlink()
    assert pq.read_table(real).num_rows == 12


def test_a_file_name_that_is_not_utf8_works(tmp_path):
    name = b"rel\xff.parquet"
    r = run_datagen("dept", "--rows", "7", "--out", name, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert b"rel\\xff.parquet" in r.stdout
    assert os.listdir(os.fsencode(tmp_path)) == [name]
    with open(os.path.join(os.fsencode(tmp_path), name), "rb") as fh:
        assert pq.read_table(fh).num_rows == 7


def test_more_rows_than_memory_fail_at_once_with_the_size(tmp_path):
    start = time.perf_counter()
    r = run_datagen("wisconsin", "--rows", "200000000", "--out", "big.parquet", cwd=tmp_path)
    err = one_error_line(r)
    assert "200,000,000 rows need about 96.0 GB of memory" in err and "available" in err
    assert time.perf_counter() - start < 30
    assert list(tmp_path.iterdir()) == []


def test_the_memory_check_holds_under_an_address_space_limit(tmp_path):
    """Under a 3 GB address-space limit, 20 million Wisconsin tuples (about 9.6 GB to build) are
    refused by the check, not by a MemoryError half way through the generation."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    r = run_datagen("wisconsin", "--rows", "20000000", "--out", "w.parquet", cwd=tmp_path,
                    preexec=limit)
    assert "need about 9.6 GB of memory" in one_error_line(r)


def test_library_write_parquet_refuses_a_directory_and_keeps_a_file_on_failure(tmp_path,
                                                                               monkeypatch):
    with pytest.raises(MinidbError, match="is a directory"):
        dg.write_parquet(dg.dept(5), tmp_path)
    target = tmp_path / "keep.parquet"
    target.write_bytes(b"precious")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", fail)
    with pytest.raises(MinidbError, match="No space left on device; .*left as it was"):
        dg.write_parquet(dg.dept(5), target)
    assert target.read_bytes() == b"precious"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.parquet"]
