"""The program a sandboxed child runs: limits, imports, privilege drop, then one case at a time.

Started by ``autograder.sandbox`` as ``python -I -B _child.py CONFIG`` with CONFIG a JSON object
(paths, limits, the user to become, the file descriptors of the report and of the cases). It is
copied into the sandbox and runs from there, so it imports nothing from the grader: only the
standard library, numpy, the assignment's harness and the stubbed minidb copied beside it.

After importing the submission this process holds no case. For each case it forks a process
that reads that one case (its inputs and arrays, never an expected answer) from the case pipe,
runs it and ends; the grader writes the next case into the pipe only once the last one has its
result. So a case's process starts with its own CPU-time allowance (the limit is per case) and
can find in its memory, by any means, only its own case and what importing left.

The report is one JSON object per line: ``ready`` (or ``import_error``) once the submission is
imported, then for each case ``start``, ``result`` and, from this process, ``ended`` with how the
case's process ended. The grader checks the order and believes nothing else in it.
"""

import io
import json
import os
import resource
import struct
import sys
import time

PRINT_LIMIT = 2000
NO_MORE_CASES = 3  # how a case's process ends when the grader has closed the case pipe
# Imported before the privilege drop: where the interpreter's own files are not readable by the
# sandbox user (a Python installed under /root), a submission can use only modules loaded before.
WARM_IMPORTS = ("numpy.random", "collections", "heapq", "bisect", "itertools", "functools",
                "math", "random", "statistics", "fractions", "dataclasses", "typing", "array",
                "copy", "enum", "operator", "traceback", "contextlib", "io", "subprocess",
                "hashlib", "glob", "pprint", "struct")


def set_limits(config):
    """Lower this process's limits; hard limits too, so the submission cannot raise them."""
    cpu = max(1, int(config["cpu_s"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (config["memory"], config["memory"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (config["fsize"], config["fsize"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def use_readable_stdlib(mirror):
    """Look for standard modules in the grader's readable copy (``sandbox.readable_stdlib``)
    wherever the interpreter's own folder is not readable by the sandbox user."""
    if mirror:
        sys.path[:] = [mirror.get(p, p) for p in sys.path]
        # packages imported already (numpy) find their submodules (numpy.ma) by __path__
        for module in list(sys.modules.values()):
            paths = getattr(module, "__path__", None)
            if isinstance(paths, list):
                paths[:] = [_mirrored(p, mirror) for p in paths]
        sys.path_importer_cache.clear()


def _mirrored(path, mirror):
    """``path`` inside the readable copy of the sys.path entry that holds it, if one does."""
    for entry, copy in mirror.items():
        if path == entry or path.startswith(entry + os.sep):
            return copy + path[len(entry):]
    return path


def drop_privileges(config):
    """Become the sandbox user for good (only when started as root), allowed ``nproc`` more
    processes or threads than this process has now and the user had (``nproc_base``); the
    process of each case is one of them."""
    if config["uid"] is None:
        return
    if config["nproc"] is not None:
        with open("/proc/self/status", encoding="ascii") as f:
            threads = int(next(line for line in f if line.startswith("Threads:")).split()[1])
        limit = config["nproc_base"] + threads + config["nproc"]
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    os.setgroups([])
    os.setgid(config["gid"])
    os.setuid(config["uid"])
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("could not drop root privileges")


class Capture:
    """A write-only text stream keeping the first PRINT_LIMIT characters and counting the rest."""

    def __init__(self):
        self.kept = []
        self.size = 0

    def write(self, text):
        text = str(text)
        room = PRINT_LIMIT - self.size
        if room > 0:
            self.kept.append(text[:room])
        self.size += len(text)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def text(self):
        shown = "".join(self.kept)
        if self.size > PRINT_LIMIT:
            shown += f"\n... ({self.size - PRINT_LIMIT:,} more characters printed, not shown)"
        return shown


class Reporter:
    def __init__(self, fd):
        self.fd = fd

    def emit(self, event):
        data = (json.dumps(event, allow_nan=False) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]


def describe(exc, submission_dir):
    """The exception as a student can act on it: where in their files, and what."""
    import traceback

    try:
        lines = []
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename.startswith(submission_dir):
                name = os.path.relpath(frame.filename, submission_dir)
                lines.append(f"  {name}, line {frame.lineno}, in {frame.name}: {frame.line}")
        if isinstance(exc, SyntaxError) and exc.filename:
            name = os.path.relpath(exc.filename, submission_dir) if exc.filename.startswith(
                submission_dir) else os.path.basename(exc.filename)
            lines.append(f"  {name}, line {exc.lineno}: {(exc.text or '').strip()}")
        message = str(exc)
        top = (getattr(exc, "name", None) or "").split(".")[0]
        if isinstance(exc, ModuleNotFoundError) and top in sys.stdlib_module_names:
            message += (f" ({top} is part of Python's standard library, but the user the grader "
                        "runs submissions as could not read it; tell your instructor)")
        return "\n".join(lines[-6:] + [f"{type(exc).__name__}: {message}"])[:4000]
    except BaseException:  # a hostile __str__: say what we can
        return f"{type(exc).__name__} (its message could not be shown)"


def main():
    config = json.loads(sys.argv[1])
    set_limits(config)
    reporter = Reporter(config["report_fd"])
    with open(config["job"], encoding="utf-8") as f:
        job = json.load(f)
    sys.path.insert(0, config["lib"])
    import contextlib
    import importlib
    import importlib.util

    for name in WARM_IMPORTS:  # before the drop: the interpreter's files may not be readable after
        importlib.import_module(name)
    harness = importlib.import_module(job["harness"])
    use_readable_stdlib(config.get("stdlib") or {})
    drop_privileges(config)
    os.chdir(config["work"])
    os.umask(0o077)
    submission_dir = job["submission_dir"]
    sys.path.append(os.path.dirname(job["module_file"]))
    if os.path.dirname(job["module_file"]) != submission_dir:
        sys.path.append(submission_dir)

    capture = Capture()
    try:
        with contextlib.redirect_stdout(capture), contextlib.redirect_stderr(capture):
            if not os.path.isfile(job["module_file"]):
                raise FileNotFoundError(f"{os.path.basename(job['module_file'])} is not in the submission")
            spec = importlib.util.spec_from_file_location(job["module_name"], job["module_file"])
            module = importlib.util.module_from_spec(spec)
            sys.modules[job["module_name"]] = module
            spec.loader.exec_module(module)
            plugin = harness.plugin_class(*job["plugin"])
    except BaseException as exc:  # noqa: BLE001  (SystemExit and KeyboardInterrupt too)
        reporter.emit({"event": "import_error", "error": describe(exc, submission_dir),
                       "printed": capture.text()})
        return
    reporter.emit({"event": "ready", "printed": capture.text()})
    serve(reporter, config["case_fd"], harness, plugin, submission_dir)


def serve(reporter, case_fd, harness, plugin, submission_dir):
    """Fork one process per case until the grader closes the case pipe; report how each ended."""
    while True:
        try:
            pid = os.fork()
        except OSError as exc:
            os.write(2, f"could not start a process for the next case ({exc.strerror}): too "
                        "many processes of the submission are running\n".encode())
            os._exit(75)
        if pid == 0:
            code = 1
            try:
                code = run_one(reporter, case_fd, harness, plugin, submission_dir)
            except BaseException:  # noqa: BLE001  (the grader shows the start of stderr)
                import traceback

                traceback.print_exc(limit=3)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == NO_MORE_CASES:
            return
        how = ({"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status)
               else {"exit": os.WEXITSTATUS(status)})
        reporter.emit({"event": "ended", **how})


def read_exactly(fd, size):
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd):
    (size,) = struct.unpack(">Q", read_exactly(fd, 8))
    return read_exactly(fd, size)


def run_one(reporter, case_fd, harness, plugin, submission_dir):
    """In a case's own process: read the case, run it, report; return the exit status."""
    import contextlib

    import numpy as np

    try:
        case = json.loads(read_frame(case_fd))
        arrays = {name: np.load(io.BytesIO(read_frame(case_fd)), allow_pickle=False)
                  for name in case.get("arrays", [])}
    except EOFError:
        return NO_MORE_CASES
    reporter.emit({"event": "start", "case": case["id"]})
    capture = Capture()
    started = time.perf_counter()
    try:
        with contextlib.redirect_stdout(capture), contextlib.redirect_stderr(capture):
            observation = harness.run_case(plugin, case, arrays)
        event = {"event": "result", "case": case["id"], "ok": True,
                 "seconds": time.perf_counter() - started,
                 "observation": observation, "printed": capture.text()}
        try:
            reporter.emit(event)
            return 0
        except (TypeError, ValueError) as exc:
            error = f"the answer could not be written down: {exc}"
    except BaseException as exc:  # noqa: BLE001
        error = describe(exc, submission_dir)
    reporter.emit({"event": "result", "case": case["id"], "ok": False, "error": error,
                   "seconds": time.perf_counter() - started, "printed": capture.text()})
    return 0


if __name__ == "__main__":
    main()
