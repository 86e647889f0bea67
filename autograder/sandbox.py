"""Running untrusted submission code in child processes, and hearing what it observed.

The grader never imports a submission. It prepares a sandbox directory and starts a child Python
process per part (a fresh one after a case that killed it), which runs ``autograder/_child.py``:

1. The child lowers its own limits before anything else runs: CPU seconds (``RLIMIT_CPU``),
   address space (``RLIMIT_AS``), the size of any file it writes (``RLIMIT_FSIZE``, which bounds
   what it prints), open files, no core dumps and, under another user, few processes.
2. It reads its job (as the grader's user), imports numpy, the assignment's harness and a copy of
   minidb with every solution block stubbed, so the submission cannot reuse the reference code.
3. When the grader runs as root it then drops to an unprivileged user for good (``setgroups``,
   ``setgid``, ``setuid``): by default a user id of its own that no account and no process uses,
   or a named account such as ``nobody``. Only now is the submission imported.
4. The grader then sends it one case at a time through a pipe, the next only when the last has
   its result; the child forks a process for each case, so each case has its own CPU time and
   its process holds no other case. Cases are inputs only: what they must produce stays here.
   The case's process writes one JSON line per event to a report file the grader opened for it:
   the raw observations (rows' destinations, the victims chosen), never a score. What it prints
   goes to a bounded buffer sent along, the rest is counted and dropped.

The parent watches the report as it grows: each stage (importing the submission, each case) has
its own wall-clock deadline, stretched on a loaded machine (``stage_wall_s``); a child past it,
or gone without finishing, is killed with its whole process group and, under another user,
every task of that user it started (``hunt``: threads of zombie-led thread groups too), and the
files that user left in the shared temporary folders are
removed. A user id of its own is handed out again only once no task of it is left. Under a named
account, children run one at a time, so that what is new of that account is theirs. The parent
trusts nothing in the report: ``grading`` checks every observation against the inputs.

Simplification: when the grader does not run as root (a student trying the public tests on a
laptop) the child keeps the student's own user; the limits still hold, but nothing keeps it from
reading files that user can read, and a process that leaves its process group is not hunted.
"""

from __future__ import annotations

import atexit
import compileall
import fcntl
import io
import json
import os
import pwd
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autograder import hunt
from autograder.markers import strip_solutions
from autograder.submission import Found, copy_submission
from minidb.cluster.machine import busy_factor, load_note
from minidb.errors import MinidbError

CHILD_SCRIPT = Path(__file__).with_name("_child.py")
DEDICATED_UIDS = range(61_000, 65_000)
WALL_STRETCH_MAX = 5.0  # a stage's wall-clock limit grows with the load up to this factor
CHILD_NPROC = 4  # processes or threads a submission may start besides its own


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
        return (f"{self.wall_s:g} s wall-clock per stage, {self.cpu_s:g} s CPU per case, "
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


_claimed: dict[int, int] = {}  # user id -> the open file whose lock holds it
_claim_lock = threading.Lock()
#: one lock file per dedicated user id, shared by every grader process of this machine
UID_LOCKS = Path(tempfile.gettempdir()) / "minidb-grade-uids"


def _uid_lock_dir() -> Path:
    """The folder of the user-id lock files: made by the grader (root) and writable by it only,
    since a child that could make or hold a lock file there could keep a grader waiting."""
    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    st = UID_LOCKS.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise AutograderError(f"{UID_LOCKS} is not a folder that only the grader can write; "
                              "remove it and grade again")
    return UID_LOCKS


def claim_uid() -> int:
    """A user id no account, no process and no other child has, of this grader or of another
    grader process on the machine; see ``release_uid``.

    Two graders running at once (a batch of submissions graded in parallel, or parallel test
    workers) each see a free id before either has started a child under it, so looking at the
    running tasks is not enough: an id is also locked (``flock`` on its file in ``UID_LOCKS``)
    from its claim to its release. The lock dies with the grader, so a grader killed mid-run
    holds nothing, and its children are found by ``users_with_tasks`` as before."""
    with _claim_lock:
        locks = _uid_lock_dir()
        busy = hunt.users_with_tasks()
        start = os.getpid() % len(DEDICATED_UIDS)
        for i in range(len(DEDICATED_UIDS)):
            uid = DEDICATED_UIDS[(start + i) % len(DEDICATED_UIDS)]
            if uid in busy or uid in _claimed:
                continue
            try:
                pwd.getpwuid(uid)
                continue  # an account has it
            except KeyError:
                pass
            fd = os.open(locks / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another grader holds it
                os.close(fd)
                continue
            _claimed[uid] = fd
            return uid
    raise AutograderError("found no free user id to run submissions under; use --user nobody")


def release_uid(uid: int) -> None:
    """Give ``uid`` back (once no task of it is left): its lock is released."""
    with _claim_lock:
        fd = _claimed.pop(uid, None)
        if fd is not None:
            os.close(fd)


# -- the sandbox directory ----------------------------------------------------------------------
class Sandbox:
    """A temporary directory holding what children need; removed by ``close``.

    ``lib/`` (readable by all): ``_child.py``, the harness and minidb with its solutions stubbed
    (copied from a compiled template made once per grader process);
    ``submission/`` (readable by all): the regular files of the submission, the graded ones
    (``wanted``) found by name (``found``); ``private/`` (the grader's only): jobs, reports and
    captured output; ``work-N/``: a child's own directory (its cwd, HOME and TMPDIR), owned by
    the sandbox user.
    """

    def __init__(self, harness: Path, submission: Path, user: SandboxUser | None,
                 wanted: list[str] | None = None) -> None:
        self.user = user
        self.root = Path(tempfile.mkdtemp(prefix="minidb-grade-"))
        self._count = 0
        self._lock = threading.Lock()
        self.one_at_a_time = threading.Lock()  # children under a shared account
        self.running: dict[subprocess.Popen, hunt.Snapshot | None] = {}
        self.found = Found()
        self.skipped: list[str] = []
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
            self.found = copy_submission(submission, self.submission, wanted or [])
            self.skipped = self.found.skipped
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
        for proc, before in list(self.running.items()):
            _kill_all(proc, before)
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


# Parts of the standard library no submission needs (tests, GUIs, installers, build files).
STDLIB_LEFT_OUT = {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo",
                   "ensurepip", "lib2to3", "__phello__"}
#: where an environment keeps its installed packages
PACKAGE_FOLDERS = {"site-packages", "dist-packages"}
_stdlib_mirror: dict[str, str] | None = None


def readable_stdlib() -> dict[str, str]:
    """Where the sandbox user can read Python's standard library and the environment's
    packages: ``{entry of sys.path: a readable copy}`` for each such entry other users cannot
    read (empty when they can, the usual case: Python in ``/usr``, a readable virtual
    environment).

    An interpreter installed under a private home (pyenv or uv under ``/root``, as in many
    containers) is readable by root only. A child that has become another user then finds no
    module it had not imported before: ``import pandas`` fails with "No module named
    'zoneinfo'", a standard module. So the grader mirrors the standard library once per
    process, with hard links where it can (no copy of the data), into a folder everyone can
    read, and children look there first.
    """
    global _stdlib_mirror
    if _stdlib_mirror is not None:
        return _stdlib_mirror
    private = [p for p in _interpreter_entries() if not others_can_read(p)]
    mirror: dict[str, str] = {}
    if private:
        holder = Path(tempfile.mkdtemp(prefix="minidb-stdlib-"))
        atexit.register(shutil.rmtree, holder, True)
        os.chmod(holder, 0o755)
        for i, entry in enumerate(private):
            target = holder / f"{i}-{entry.name}"
            inner = [p.name for p in private if p.parent == entry]  # mirrored on their own
            packages = entry.name in PACKAGE_FOLDERS  # copied whole: a submission may use any
            left_out = inner if packages else [*STDLIB_LEFT_OUT, "config-*", *inner]
            if entry.is_dir():
                shutil.copytree(entry, target, symlinks=True, copy_function=_link_or_copy,
                                ignore=shutil.ignore_patterns(*left_out))
                for dirpath, _, _ in os.walk(target):  # folders only: files may be links
                    os.chmod(dirpath, 0o755)
            else:
                _link_or_copy(entry, target)
            mirror[str(entry)] = str(target)
    _stdlib_mirror = mirror
    return mirror


def _interpreter_entries() -> list[Path]:
    """The entries of ``sys.path`` that belong to this interpreter: its standard library, and
    the installed packages of its environment (a virtual environment in a private folder, e.g.
    a course checkout made with ``mktemp -d``, is as unreadable as a private Python: numpy's
    own lazily imported ``numpy.ma`` then fails). The base installation's own site-packages is
    left out, as before: a virtual environment does not use it."""
    base, env = Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()
    entries = []
    for p in sys.path:
        if not p or not Path(p).exists():
            continue
        where = Path(p).resolve()
        if where.name in PACKAGE_FOLDERS:
            if env != base and where.is_relative_to(env):
                entries.append(Path(p))
        elif where.is_relative_to(base) and where.name not in STDLIB_LEFT_OUT:
            entries.append(Path(p))
    return entries


def _link_or_copy(source: str | Path, target: str | Path) -> None:
    """A hard link (the same file, no bytes copied) when the file is readable by others, else a
    copy made readable. A link is never chmod-ed: that would change the interpreter's file."""
    try:
        if os.stat(source).st_mode & stat.S_IROTH:
            os.link(source, target)
            return
    except OSError:
        pass
    shutil.copy2(source, target)
    os.chmod(target, 0o644)


def others_can_read(path: Path) -> bool:
    """True when a user who is neither owner nor in the group can reach and read ``path``."""
    path = path.resolve()
    for parent in reversed(path.parents):
        if not parent.stat().st_mode & stat.S_IXOTH:
            return False
    return bool(path.stat().st_mode & stat.S_IROTH)


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
    seconds: float = 0.0  # the child's own timing, shown to the student
    wall_s: float = 0.0  # the grader's clock, from sending the case to its result (leaderboard)


@dataclass
class _Watch:
    """The parent's reading of one child's report, event by event.

    ``current`` is the case sent to the child and not finished (the next is sent once the last
    one's process has ``ended``: it never meets another case); ``explain`` turns how its process
    ended (``{"exit": status}`` or ``{"signal": number}``) into the reason it failed.
    """

    cases: list[str]
    explain: Callable[[dict], str] = lambda how: "its process ended"
    events: int = 0
    ready: bool = False
    import_error: str | None = None
    import_printed: str = ""
    current: str | None = None
    finishing: bool = False  # the last case has its result; its process is ending
    started_at: float = 0.0
    err_from: int = 0
    malformed: str | None = None
    outcomes: list[CaseOutcome] = field(default_factory=list)

    def next_case(self) -> str | None:
        i = len(self.outcomes)
        return self.cases[i] if i < len(self.cases) else None

    @property
    def done(self) -> bool:
        return len(self.outcomes) == len(self.cases)

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
        if kind == "start" and self.current is not None and event.get("case") == self.current:
            pass
        elif kind == "result" and self.current is not None and event.get("case") == self.current:
            self._result(event, printed)
        elif kind == "ended" and self.current is None and self.finishing:
            self.finishing = False  # the case's process ended after its result
        elif kind == "ended" and self.current is not None and _how_ended(event) is not None:
            seconds = time.monotonic() - self.started_at
            self.outcomes.append(CaseOutcome(self.current, None, self.explain(_how_ended(event)),
                                             "", seconds))
            self.current = None
        else:
            self.malformed = f"unexpected {kind!r} event in the report"

    def _result(self, event: dict, printed: str) -> None:
        measured = time.monotonic() - self.started_at
        seconds = event.get("seconds")  # the child's own timing: shown, never trusted
        if type(seconds) is not float or not 0 <= seconds < 1e6:
            seconds = measured
        if event.get("ok") is True and isinstance(event.get("observation"), dict):
            self.outcomes.append(CaseOutcome(self.current, event["observation"], None, printed,
                                             seconds, measured))
        elif event.get("ok") is False:
            error = _text(event.get("error")) or "it failed"
            self.outcomes.append(CaseOutcome(self.current, None, error, printed, seconds))
        else:
            self.malformed = f"the result of case {self.current} has no observation"
            return
        self.current = None
        self.finishing = True


def _how_ended(event: dict) -> dict | None:
    for key in ("exit", "signal"):
        if type(event.get(key)) is int and 0 <= event[key] < 256:
            return {key: event[key]}
    return None


def _text(value: object, limit: int = 4000) -> str:
    return value[:limit] if isinstance(value, str) else ""


@dataclass
class ChildJob:
    """What one child is asked to do: import ``module_file`` (its path in the submission) and
    run ``cases`` through it, each with the ``arrays`` it names."""

    part: str
    module_file: str
    plugin_kind: str
    plugin_name: str
    cases: list[dict]
    arrays: dict[str, np.ndarray]


@dataclass
class PartRun:
    """The outcome of every case of a job; ``import_error`` when the submission never imported."""

    outcomes: list[CaseOutcome]
    import_error: str | None = None


def run_cases(sandbox: Sandbox, job: ChildJob, limits: Limits, log=print,
              show_import_output: bool = True) -> PartRun:
    """Run every case of ``job``, one child after another until each case has an outcome.

    A child that fails to import the submission fails all the cases left; one that hangs in a
    case, or dies in it, fails that case, and a fresh child takes the cases after it.
    """
    outcomes: list[CaseOutcome] = []
    pending = list(job.cases)
    while pending:
        watch, reason = _run_child(sandbox, job, pending, limits, log)
        if show_import_output and not outcomes and watch.outcomes and \
                watch.import_printed.strip():
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
            printed = watch.import_printed if show_import_output else ""
            outcomes.extend(CaseOutcome(c["id"], error=message, printed=printed) for c in pending)
            return PartRun(outcomes, None if watch.malformed else message)
        failed = pending.pop(0)
        why = reason or "the process ended before finishing this case"
        seconds = time.monotonic() - watch.started_at if watch.current else 0.0
        log(f"  {job.part}: case {failed['id']} failed in the child: {why}")
        outcomes.append(CaseOutcome(failed["id"], error=why, seconds=seconds))
    return PartRun(outcomes)


def _run_child(sandbox: Sandbox, job: ChildJob, cases: list[dict], limits: Limits,
               log) -> tuple[_Watch, str | None]:
    """Start one child on ``cases`` and follow it to its end; return the reading and, when it
    did not finish, the reason."""
    n = sandbox.next_id()
    job_path = sandbox.private / f"job-{n}.json"
    job_path.write_text(json.dumps({
        "part": job.part,
        "harness": sandbox.harness_module,
        "module_file": str(sandbox.submission / job.module_file),
        "submission_dir": str(sandbox.submission),
        "module_name": "submission_" + Path(job.module_file).stem,
        "plugin": [job.plugin_kind, job.plugin_name],
    }))
    user = sandbox.child_user()
    shared = user is not None and not user.dedicated
    if shared:
        sandbox.one_at_a_time.acquire()
    try:
        before = hunt.Snapshot.take(user.uid, user.gid, sandbox.root) if user else None
        watch, reason, clean = _run_child_as(sandbox, job, cases, limits, n, user, before,
                                             job_path)
    finally:
        if shared:
            sandbox.one_at_a_time.release()
    if user is not None and user.dedicated:
        if clean:
            release_uid(user.uid)
        else:  # something of it survived every kill: never hand this id out again
            log(f"  {job.part}: tasks of uid {user.uid} survived; the id stays reserved")
    return watch, reason


class _CaseSender:
    """Writes cases into the child's case pipe without ever blocking the grader."""

    def __init__(self, fd: int, job: ChildJob) -> None:
        self.fd = fd
        self.job = job
        self.pending = b""
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)

    def send(self, case: dict) -> None:
        """One frame (8 bytes of length, then the bytes) of the case as JSON, then one frame
        per array it names, in ``.npy`` format."""
        frames = [json.dumps(case).encode()]
        for name in case.get("arrays", []):
            buffer = io.BytesIO()
            np.save(buffer, self.job.arrays[name], allow_pickle=False)
            frames.append(buffer.getvalue())
        self.pending += b"".join(struct.pack(">Q", len(f)) + f for f in frames)
        self.pump()

    def pump(self) -> None:
        while self.pending:
            try:
                written = os.write(self.fd, self.pending[: 1 << 16])
            except BlockingIOError:
                return
            except OSError:  # nobody reads any more: the case will time out or the child end
                self.pending = b""
                return
            self.pending = self.pending[written:]

    def close(self) -> None:
        os.close(self.fd)


def _run_child_as(sandbox: Sandbox, job: ChildJob, cases: list[dict], limits: Limits, n: int,
                  user: SandboxUser | None, before: hunt.Snapshot | None,
                  job_path: Path) -> tuple[_Watch, str | None, bool]:
    private = sandbox.private
    work = sandbox.work_dir(n, user)
    report_path, err_path = private / f"report-{n}.jsonl", private / f"err-{n}.txt"
    config = {
        "lib": str(sandbox.lib),
        "job": str(job_path),
        "report_fd": None,
        "case_fd": None,
        "cpu_s": limits.cpu_s,
        "memory": limits.memory_mb * 2**20,
        "fsize": limits.output_bytes,
        "nproc": CHILD_NPROC if user is not None else None,
        "nproc_base": len(before.tasks) if before is not None else 0,
        "uid": user.uid if user else None,
        "gid": user.gid if user else None,
        "stdlib": readable_stdlib() if user else {},
        "work": str(work),
    }
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "TMPDIR": str(work), "LANG": "C.UTF-8",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1"}
    report_fd = os.open(report_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    case_read, case_write = os.pipe()
    config["report_fd"], config["case_fd"] = report_fd, case_read
    watch = _Watch([c["id"] for c in cases])
    reason: str | None = None
    clean = True
    with open(private / f"out-{n}.txt", "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-B", str(sandbox.lib / "_child.py"), json.dumps(config)],
                cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                pass_fds=(report_fd, case_read), start_new_session=True)
        except BaseException:
            os.close(case_write)
            raise
        finally:
            os.close(report_fd)
            os.close(case_read)
        sandbox.running[proc] = before
        sender = _CaseSender(case_write, job)
        try:
            reason = _follow(proc, report_path, watch, limits, sender, err_path)
        finally:
            sender.close()
            clean = _kill_all(proc, before)
            sandbox.running.pop(proc, None)
    if reason is None and not watch.done and not watch.import_error:
        reason = _why_it_ended({"exit": proc.returncode} if proc.returncode >= 0 else
                               {"signal": -proc.returncode}, limits, err_path, watch.err_from)
    if watch.malformed:
        reason = f"the report of this part was tampered with ({watch.malformed})"
    return watch, reason, clean


def _follow(proc: subprocess.Popen, report: Path, watch: _Watch, limits: Limits,
            sender: _CaseSender, err_path: Path) -> str | None:
    """Read the report while the child runs, sending each case once the last one is done;
    return why the child was stopped, or None."""
    offset, partial = 0, b""
    deadline = time.monotonic()  # when the stage began: its limit is added as it is checked
    pause = 0.002
    watch.err_from = 0
    watch.explain = lambda how: _why_it_ended(how, limits, err_path, watch.err_from)
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
            if watch.done or watch.import_error:
                return None
        if len(partial) > limits.output_bytes:
            watch.malformed = f"a line of the report is longer than {limits.output_mb:g} MB"
            return None
        if watch.ready and watch.current is None and not watch.finishing and not exited:
            watch.current = watch.next_case()
            watch.started_at = time.monotonic()
            watch.err_from = _size(err_path)
            deadline = watch.started_at
            sender.send(next(c for c in sender.job.cases if c["id"] == watch.current))
            pause = 0.002
        sender.pump()
        if exited:  # a last line cut short: the child died while writing it
            return None
        if time.monotonic() > deadline + limits.wall_s:
            allowed, why = stage_wall_s(limits)
            if time.monotonic() > deadline + allowed:
                stage = f"case {watch.current}" if watch.current else "importing the submission"
                return f"{stage} took longer than {allowed:g} s (wall-clock limit{why})"
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def stage_wall_s(limits: Limits) -> tuple[float, str]:
    """Seconds a stage may take now, and why when that is more than ``limits.wall_s``: on a busy
    machine (a shared CI runner, a grading host running other containers) a correct submission
    runs slower, so the limit is stretched by the load per core (``busy_factor``, measured each
    time the deadline is checked), at most ``WALL_STRETCH_MAX`` times. The CPU limit, which does
    not depend on the load, is what stops an endless loop."""
    factor = min(WALL_STRETCH_MAX, busy_factor())
    if factor <= 1.0:
        return limits.wall_s, ""
    allowed = round(limits.wall_s * factor, 1)
    return allowed, f" of {limits.wall_s:g} s stretched x{factor:.1f} for the {load_note()}"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _has_exited(pid: int) -> bool:
    """True once the child has ended; it stays unreaped, so its process group stays reserved."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_all(proc: subprocess.Popen, before: hunt.Snapshot | None) -> bool:
    """Kill the child and its process group and, under another user, every task of that user
    it started; remove the files that user left in the shared folders. True when nothing of it
    is left running."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    if before is None:
        return True
    clean = hunt.kill_new_tasks(before)
    hunt.remove_new_files(before)
    return clean


def _why_it_ended(how: dict, limits: Limits, stderr: Path, offset: int = 0) -> str:
    """Why a process ended, as ``{"exit": status}`` or ``{"signal": number}`` says, with the
    start of what it wrote to stderr from ``offset`` on."""
    sig = how.get("signal")
    if sig is not None:
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
            f.seek(offset)
            head = f.read(600).decode("utf-8", "replace").strip()
    except OSError:
        pass
    what = f"the process ended early with exit status {how.get('exit')} (os._exit, or a crash)"
    return f"{what}; it wrote to stderr: {head}" if head else what
