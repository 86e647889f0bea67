"""Running untrusted submission code in a child process, and hearing what it observed.

The grader never imports a submission. It prepares a sandbox directory and starts one child
Python process per part (restarting it after a case that killed it), which runs
``autograder/_child.py``:

1. The child lowers its own limits before anything else runs: CPU seconds (``RLIMIT_CPU``),
   address space (``RLIMIT_AS``), the size of any file it writes (``RLIMIT_FSIZE``, which bounds
   what it prints), open files, no core dumps and, under a user of its own, few processes.
2. It reads its job (as the grader's user), imports numpy, the assignment's harness and a copy of
   minidb with every solution block stubbed, so the submission cannot reuse the reference code.
3. When the grader runs as root it then drops to an unprivileged user for good (``setgroups``,
   ``setgid``, ``setuid``): by default a user id of its own that no account and no process uses
   (so every process it leaves behind can be found and killed by that id), or a named account
   such as ``nobody``. Only now is the submission imported.
4. For every case it writes one JSON line to a report file the grader opened for it: the raw
   observations (rows' destinations, the victims chosen), never a score. What it prints goes to a
   bounded buffer sent along, the rest is counted and dropped.

The parent watches the report as it grows: each stage (importing the submission, each case) has
its own wall-clock deadline; a child past it, or gone without finishing, is killed with its whole
process group (and, under its own user id, every process of that id). The parent trusts nothing
in the report: ``grading`` checks every observation against the inputs and the reference.

Simplification: when the grader does not run as root (a student trying the public tests on a
laptop) the child keeps the student's own user; the limits still hold, but nothing keeps it from
reading files that user can read, and a process that leaves its process group is not hunted.
"""

from __future__ import annotations

import atexit
import compileall
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autograder.markers import strip_solutions
from minidb.errors import MinidbError

CHILD_SCRIPT = Path(__file__).with_name("_child.py")
DEDICATED_UIDS = range(61_000, 65_000)
SUBMISSION_MAX_FILES = 100
SUBMISSION_MAX_BYTES = 5 * 2**20


class AutograderError(MinidbError):
    """A mistake in how the autograder was called (one line on stderr, exit status 2)."""


@dataclass(frozen=True)
class Limits:
    """What one child may use. ``wall_s`` holds for each stage: importing, then each case."""

    wall_s: float = 30.0
    cpu_s: float = 60.0
    memory_mb: int = 2048
    output_mb: float = 4.0

    @property
    def output_bytes(self) -> int:
        return int(self.output_mb * 2**20)

    def describe(self) -> str:
        return (f"{self.wall_s:g} s wall-clock per stage, {self.cpu_s:g} s CPU per process, "
                f"{self.memory_mb} MB memory, {self.output_mb:g} MB per file written")


@dataclass(frozen=True)
class SandboxUser:
    """The unprivileged user a child becomes; ``dedicated`` when no one else has that id."""

    uid: int
    gid: int
    name: str
    dedicated: bool


def sandbox_user(spec: str = "auto") -> SandboxUser | None:
    """The user children run as: None when the grader is not root (they stay the same user).

    ``spec`` is ``auto`` (each child gets a user id that no account, no running process and no
    other child has: ``claim_uid``) or the name of an account (``nobody``).
    """
    if os.geteuid() != 0:
        return None
    if spec != "auto":
        try:
            entry = pwd.getpwnam(spec)
        except KeyError:
            raise AutograderError(f"there is no user {spec!r} to run submissions as; "
                                  "name an existing account or use 'auto'") from None
        if entry.pw_uid == 0:
            raise AutograderError(f"user {spec!r} is root; submissions must run unprivileged")
        return SandboxUser(entry.pw_uid, entry.pw_gid, spec, dedicated=False)
    return SandboxUser(-1, -1, "a user id of its own for each child", dedicated=True)


_claimed: set[int] = set()
_claim_lock = threading.Lock()


def claim_uid() -> int:
    """A user id no account, no process and no other child of this grader has; see release."""
    with _claim_lock:
        busy = _uids_running()
        start = os.getpid() % len(DEDICATED_UIDS)
        for i in range(len(DEDICATED_UIDS)):
            uid = DEDICATED_UIDS[(start + i) % len(DEDICATED_UIDS)]
            if uid in busy or uid in _claimed:
                continue
            try:
                pwd.getpwuid(uid)
            except KeyError:
                _claimed.add(uid)
                return uid
    raise AutograderError("found no free user id to run submissions under; use --user nobody")


def release_uid(uid: int) -> None:
    with _claim_lock:
        _claimed.discard(uid)


def _uids_running() -> dict[int, list[int]]:
    """Real user id -> ids of its live processes (zombies left out: they are gone), from /proc."""
    found: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if status.get("State", "").strip().startswith("Z") or "Uid" not in status:
            continue
        found.setdefault(int(status["Uid"].split()[0]), []).append(int(entry.name))
    return found


# -- the sandbox directory ----------------------------------------------------------------------
class Sandbox:
    """A temporary directory holding what children need; removed by ``close``.

    ``lib/`` (readable by all): ``_child.py``, the harness and minidb with its solutions stubbed
    (copied from a compiled template made once per grader process);
    ``submission/`` (readable by all): the regular files of the submission; ``private/`` (the
    grader's only): jobs, inputs, reports and captured output; ``work-N/``: a child's own
    directory (its cwd, HOME and TMPDIR), owned by the sandbox user.
    """

    def __init__(self, harness: Path, submission: Path, user: SandboxUser | None) -> None:
        self.user = user
        self.root = Path(tempfile.mkdtemp(prefix="minidb-grade-"))
        self._count = 0
        self._lock = threading.Lock()
        self.running: dict[subprocess.Popen, SandboxUser | None] = {}
        try:
            os.chmod(self.root, 0o755)
            self.lib = self.root / "lib"
            self.private = self.root / "private"
            self.private.mkdir(mode=0o700)
            self.lib.mkdir()
            shutil.copyfile(CHILD_SCRIPT, self.lib / "_child.py")
            self.harness_module = "lab_harness"
            shutil.copyfile(harness, self.lib / f"{self.harness_module}.py")
            shutil.copytree(_stubbed_minidb(), self.lib / "minidb")
            self.submission = self.root / "submission"
            self.skipped = _copy_submission(submission, self.submission)
            _open_up(self.lib)
            _open_up(self.submission)
        except BaseException:
            self.close()
            raise

    def next_id(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def child_user(self) -> SandboxUser | None:
        """The user the next child runs as (for ``auto``, a fresh user id; release it after)."""
        if self.user is None or not self.user.dedicated:
            return self.user
        uid = claim_uid()
        return SandboxUser(uid, uid, f"uid {uid}", dedicated=True)

    def work_dir(self, n: int, user: SandboxUser | None) -> Path:
        work = self.root / f"work-{n}"
        work.mkdir(mode=0o700)
        if user is not None:
            os.chown(work, user.uid, user.gid)
        return work

    def close(self) -> None:
        """Kill any child still running (the grader is being stopped), then remove the files."""
        for proc, user in list(self.running.items()):
            _kill_all(proc, user)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_stubbed: dict[tuple, Path] = {}


def _stubbed_minidb() -> Path:
    """A private copy of the minidb package the grader runs on, solution blocks stubbed and
    compiled; made once per grader process (and again if minidb's files change)."""
    import minidb

    source = Path(minidb.__file__).resolve().parent
    files = sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)
    key = (str(source), tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files))
    if key in _stubbed and _stubbed[key].is_dir():
        return _stubbed[key]
    holder = Path(tempfile.mkdtemp(prefix="minidb-stubbed-"))
    atexit.register(shutil.rmtree, holder, True)
    target = holder / "minidb"
    _copy_stubbed(source, target)
    compileall.compile_dir(target, quiet=2, workers=1)
    _stubbed[key] = target
    return target


def _copy_stubbed(source: Path, target: Path) -> None:
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if "__pycache__" in rel.parts or path.is_symlink():
            continue
        out = target / rel
        if path.is_dir():
            out.mkdir(parents=True, exist_ok=True)
        elif path.suffix == ".py":
            out.parent.mkdir(parents=True, exist_ok=True)
            text, _ = strip_solutions(path.read_text(encoding="utf-8"), f"minidb/{rel.as_posix()}")
            out.write_text(text, encoding="utf-8")
        elif path.is_file():
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)


def _copy_submission(source: Path, target: Path) -> list[str]:
    """Copy the regular files of a submission (no links, no caches); return what was left out."""
    target.mkdir()
    skipped: list[str] = []
    count, size = 0, 0
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if "__pycache__" in rel.parts or any(p.startswith(".") for p in rel.parts):
            continue
        if path.is_symlink():
            skipped.append(f"{rel} (a symbolic link)")
            continue
        if path.is_dir():
            continue
        if not path.is_file():
            skipped.append(f"{rel} (not a regular file)")
            continue
        length = path.stat().st_size
        if count >= SUBMISSION_MAX_FILES or size + length > SUBMISSION_MAX_BYTES:
            skipped.append(f"{rel} (over the limit of {SUBMISSION_MAX_FILES} files, "
                           f"{SUBMISSION_MAX_BYTES // 2**20} MB)")
            continue
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out)
        count, size = count + 1, size + length
    return skipped


def _open_up(top: Path) -> None:
    """Make ``top`` readable (not writable) by everyone, so the sandbox user can import it."""
    for dirpath, _, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


# -- one child process --------------------------------------------------------------------------
@dataclass
class CaseOutcome:
    """What became of one case in the child: an observation, or why there is none."""

    case_id: str
    observation: dict | None = None
    error: str | None = None
    printed: str = ""
    seconds: float = 0.0


@dataclass
class _Watch:
    """The parent's reading of one child's report, event by event."""

    cases: list[str]
    events: int = 0
    ready: bool = False
    import_error: str | None = None
    import_printed: str = ""
    current: str | None = None
    started_at: float = 0.0
    done: bool = False
    malformed: str | None = None
    outcomes: list[CaseOutcome] = field(default_factory=list)

    def next_case(self) -> str | None:
        i = len(self.outcomes)
        return self.cases[i] if i < len(self.cases) else None

    def take(self, line: bytes) -> None:
        """Advance on one line of the report; anything out of order makes it malformed."""
        self.events += 1
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            self.malformed = "a line of the report is not JSON"
            return
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            self.malformed = "a line of the report is not an event"
            return
        kind = event["event"]
        printed = _text(event.get("printed"))
        if not self.ready:
            if kind == "ready":
                self.ready = True
                self.import_printed = printed
            elif kind == "import_error":
                self.import_error = _text(event.get("error")) or "importing it failed"
                self.import_printed = printed
            else:
                self.malformed = f"the report starts with {kind!r} instead of the import"
            return
        if kind == "start" and self.current is None and event.get("case") == self.next_case():
            self.current = event["case"]
            self.started_at = time.monotonic()
        elif kind == "result" and self.current is not None and event.get("case") == self.current:
            seconds = event.get("seconds")  # the child's own timing: shown, never trusted
            if type(seconds) is not float or not 0 <= seconds < 1e6:
                seconds = time.monotonic() - self.started_at
            if event.get("ok") is True and isinstance(event.get("observation"), dict):
                self.outcomes.append(CaseOutcome(self.current, event["observation"], None, printed, seconds))
            elif event.get("ok") is False:
                error = _text(event.get("error")) or "it failed"
                self.outcomes.append(CaseOutcome(self.current, None, error, printed, seconds))
            else:
                self.malformed = f"the result of case {self.current} has no observation"
                return
            self.current = None
        elif kind == "done" and self.current is None and self.next_case() is None:
            self.done = True
        else:
            self.malformed = f"unexpected {kind!r} event in the report"


def _text(value: object, limit: int = 4000) -> str:
    return value[:limit] if isinstance(value, str) else ""


@dataclass
class ChildJob:
    """What one child is asked to do: import ``module_file`` and run ``cases`` through it."""

    part: str
    module_file: str
    plugin_kind: str
    plugin_name: str
    cases: list[dict]
    arrays: dict[str, np.ndarray]


def run_cases(sandbox: Sandbox, job: ChildJob, limits: Limits, log=print) -> list[CaseOutcome]:
    """Run every case of ``job``, one child after another until each case has an outcome.

    A child that fails to import the submission fails all the cases left; one that dies or
    hangs in a case fails that case, and a fresh child takes the cases after it.
    """
    outcomes: list[CaseOutcome] = []
    pending = list(job.cases)
    while pending:
        watch, reason = _run_child(sandbox, job, pending, limits)
        if not outcomes and watch.outcomes and watch.import_printed.strip():
            first = watch.outcomes[0]  # what importing printed is shown once, with the first case
            first.printed = f"(while {job.module_file} was imported)\n{watch.import_printed}" + \
                (f"\n(during this case)\n{first.printed}" if first.printed.strip() else "")
        outcomes.extend(watch.outcomes)
        done_ids = {o.case_id for o in watch.outcomes}
        pending = [c for c in pending if c["id"] not in done_ids]
        if not pending:
            break
        if watch.malformed or not watch.ready:
            # a report out of order was written by the submission itself: no credit for the rest
            why = watch.import_error or reason or "it ended before reporting"
            message = why if watch.malformed else f"importing {job.module_file} failed: {why}"
            log(f"  {job.part}: {message}")
            outcomes.extend(CaseOutcome(c["id"], error=message, printed=watch.import_printed)
                            for c in pending)
            break
        failed = pending.pop(0)
        why = reason or "the process ended before finishing this case"
        seconds = time.monotonic() - watch.started_at if watch.current else 0.0
        log(f"  {job.part}: case {failed['id']} failed in the child: {why}")
        outcomes.append(CaseOutcome(failed["id"], error=why, seconds=seconds))
    return outcomes


def _run_child(sandbox: Sandbox, job: ChildJob, cases: list[dict],
               limits: Limits) -> tuple[_Watch, str | None]:
    """Start one child on ``cases`` and follow it to its end; return the reading and, when it
    did not finish, the reason."""
    n = sandbox.next_id()
    private = sandbox.private
    job_path, arrays_path = private / f"job-{n}.json", private / f"inputs-{n}.npz"
    report_path = private / f"report-{n}.jsonl"
    needed = {name for c in cases for name in _array_names(c)}
    np.savez(arrays_path, **{k: v for k, v in job.arrays.items() if k in needed})
    job_path.write_text(json.dumps({
        "part": job.part,
        "harness": sandbox.harness_module,
        "module_file": str(sandbox.submission / job.module_file),
        "submission_dir": str(sandbox.submission),
        "module_name": "submission_" + Path(job.module_file).stem,
        "plugin": [job.plugin_kind, job.plugin_name],
        "cases": cases,
        "arrays": str(arrays_path),
    }))
    user = sandbox.child_user()
    try:
        return _run_child_as(sandbox, job, cases, limits, n, user, job_path, report_path)
    finally:
        if user is not None and user.dedicated:
            release_uid(user.uid)


def _run_child_as(sandbox: Sandbox, job: ChildJob, cases: list[dict], limits: Limits, n: int,
                  user: SandboxUser | None, job_path: Path,
                  report_path: Path) -> tuple[_Watch, str | None]:
    private = sandbox.private
    work = sandbox.work_dir(n, user)
    config = {
        "lib": str(sandbox.lib),
        "job": str(job_path),
        "report_fd": None,
        "cpu_s": limits.cpu_s,
        "memory": limits.memory_mb * 2**20,
        "fsize": limits.output_bytes,
        "nproc": 4 if user is not None and user.dedicated else None,
        "uid": user.uid if user else None,
        "gid": user.gid if user else None,
        "work": str(work),
    }
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "TMPDIR": str(work), "LANG": "C.UTF-8",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1"}
    report_fd = os.open(report_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    config["report_fd"] = report_fd
    watch = _Watch([c["id"] for c in cases])
    reason: str | None = None
    with open(private / f"out-{n}.txt", "wb") as out, open(private / f"err-{n}.txt", "wb") as err:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-B", str(sandbox.lib / "_child.py"), json.dumps(config)],
                cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                pass_fds=(report_fd,), start_new_session=True)
        finally:
            os.close(report_fd)
        sandbox.running[proc] = user
        try:
            reason = _follow(proc, report_path, watch, limits)
        finally:
            _kill_all(proc, user)
            sandbox.running.pop(proc, None)
    if reason is None and not watch.done:
        reason = _why_it_ended(proc.returncode, limits, private / f"err-{n}.txt")
    if watch.malformed:
        reason = f"the report of this part was tampered with ({watch.malformed})"
    return watch, reason


def _array_names(case: dict) -> set[str]:
    return set(case.get("arrays", []))


def _follow(proc: subprocess.Popen, report: Path, watch: _Watch, limits: Limits) -> str | None:
    """Read the report while the child runs; return why it was stopped, or None."""
    offset, partial = 0, b""
    deadline = time.monotonic() + limits.wall_s
    started = None
    pause = 0.002
    while True:
        exited = _has_exited(proc.pid)
        with open(report, "rb") as f:
            f.seek(offset)
            chunk = f.read(limits.output_bytes + 1)
        if chunk:
            offset += len(chunk)
            pause = 0.002
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()
            for line in lines:
                watch.take(line)
                if watch.malformed:
                    return None
            if watch.current != started:  # a new stage: its own deadline
                started = watch.current
                if started is not None:
                    deadline = time.monotonic() + limits.wall_s
            if watch.done or watch.import_error:
                return None
        if len(partial) > limits.output_bytes:
            watch.malformed = f"a line of the report is longer than {limits.output_mb:g} MB"
            return None
        if exited:  # a last line cut short: the child died while writing it
            return None
        if time.monotonic() > deadline:
            stage = f"case {watch.current}" if watch.current else (
                "importing the submission" if not watch.ready else "between cases")
            return f"{stage} took longer than {limits.wall_s:g} s (wall-clock limit)"
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _has_exited(pid: int) -> bool:
    """True once the child has ended; it stays unreaped, so its process group stays reserved."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_all(proc: subprocess.Popen, user: SandboxUser | None) -> None:
    """Kill the child, its process group and (under a dedicated user id) every process of it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    if user is not None and user.dedicated:
        for _ in range(100):
            left = _uids_running().get(user.uid, [])
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)


def _why_it_ended(returncode: int, limits: Limits, stderr: Path) -> str:
    if returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU:
            return f"it used more than {limits.cpu_s:g} s of CPU time (the limit)"
        if sig == signal.SIGXFSZ:
            return f"it wrote more than {limits.output_mb:g} MB to one file or to its output"
        if sig == signal.SIGKILL:
            return "it was killed (CPU time or memory limit)"
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"the process crashed ({name}); the memory limit is {limits.memory_mb} MB"
    head = ""
    try:
        with open(stderr, "rb") as f:
            head = f.read(600).decode("utf-8", "replace").strip()
    except OSError:
        pass
    what = f"the process ended early with exit status {returncode} (os._exit, or a crash)"
    return f"{what}; it wrote to stderr: {head}" if head else what
