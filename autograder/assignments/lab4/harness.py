"""Lab 4's harness: drive a submitted LH* addressing class through one case and write down what
it did.

It runs in the sandboxed child (beside a stubbed minidb whose own addressing rules raise) and
reports raw observations only:

* a ``routes`` case asks questions "the file is in state (i, n), a client with image (i', n')
  sends key C": the harness calls the submission's ``client_address``, then its
  ``server_address`` at every server the request reaches (with that server's true level, which
  the harness knows from the file state), and, after a forward, its ``adjust_image`` for the IAM
  of the first server. It reports the servers visited and the new image, and stops a request
  that reaches a bucket that does not exist or is forwarded more than three times.
* a ``file`` case runs a whole LH* file (``minidb.sdds.LHStarFile``, inline) on the submission
  and reports, for every operation, where the client sent it, where it ended, the forwards, the
  answer, the client's image after it and the requests it took.

Whether any of it is right is decided by the grader, in its own process, from its own copy of
the inputs (``autograder.assignments.lab4.lhstar``).
"""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path

from minidb.plugins import lookup
from minidb.sdds import LHStarFile
from minidb.sdds.addressing import Addressing, FileState, Image

MAX_HOPS = 3  # a route is cut after this many forwards (LH* needs at most two)


def plugin_class(kind: str, name: str) -> type:
    """The class the submission registered as ``name`` of ``kind``, checked to be one."""
    cls = lookup(kind, name)
    if not (isinstance(cls, type) and issubclass(cls, Addressing)):
        raise TypeError(f"{name!r} is registered as {cls!r}, which is not a subclass of "
                        "minidb.sdds.addressing.Addressing")
    return cls


def run_case(plugin: type, case: dict, arrays: dict) -> dict:
    if case["kind"] == "routes":
        return answer_routes(plugin, case)
    if case["kind"] == "file":
        return run_file(plugin, case)
    raise ValueError(f"unknown case kind {case['kind']!r}")


def _int(value: object, rule: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{rule} must return a bucket number (an int), got "
                        f"{type(value).__name__} {value!r:.60}")
    return int(value.__index__())


def answer_routes(plugin: type, case: dict) -> dict:
    """Each question's route and new image, by the submission's rules."""
    n0 = case["n0"]
    answers = []
    for level, split, image_level, image_split, c in case["questions"]:
        state, image = FileState(level, split, n0), Image(image_level, image_split)
        route, new_image, error = [], None, None
        try:
            rules = plugin()
            a = _int(rules.client_address(image, c, n0), "client_address")
            route.append(a)
            while True:
                if not 0 <= a < state.buckets:
                    error = f"bucket {a} does not exist (the file has {state.buckets})"
                    break
                nxt = _int(rules.server_address(a, state.bucket_level(a), c, n0),
                           "server_address")
                if nxt == a:
                    break
                route.append(nxt)
                a = nxt
                if len(route) > MAX_HOPS + 1:
                    error = f"still not home after {MAX_HOPS} forwards"
                    break
            if error is None and len(route) > 1:
                adjusted = rules.adjust_image(image, route[0], state.bucket_level(route[0]), n0)
                if not isinstance(adjusted, Image):
                    raise TypeError(f"adjust_image must return an Image, got "
                                    f"{type(adjusted).__name__} {adjusted!r:.60}")
                new_image = [int(adjusted.level), int(adjusted.split)]
        except Exception as exc:  # the grader says which question and why
            error = f"{type(exc).__name__}: {exc}{_where(exc, plugin)}"[:500]
        answers.append({"route": route, "image": new_image, "error": error})
    return {"answers": answers}


def run_file(plugin: type, case: dict) -> dict:
    """Every operation of the case's workload on an inline LH* file run by the submission."""
    f = LHStarFile(capacity=case["capacity"], n0=case["n0"], machines=case["machines"],
                   split=case["split"], merge_below=case["merge_below"],
                   merge_threshold=case["merge_threshold"], hashed=False, addressing=plugin)
    done, error = [], None
    try:
        for name, op, key in case["ops"]:
            client = f.client(name)
            before = client.messages.requests
            r = client.request(op, key, key * 10 + 1 if op == "insert" else None)
            done.append([r.first, r.home, r.forwards, bool(r.found),
                         r.value if isinstance(r.value, int) else None,
                         client.image.level, client.image.split,
                         client.messages.requests - before])
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}{_where(exc, plugin)}"[:500]
    finally:
        f.close()
    return {"ops": done, "error": error}


def _where(exc: BaseException, plugin: type) -> str:
    """`` (addressing.py, line 12)``: the last place in the submission's file the error passed."""
    try:
        home = inspect.getsourcefile(plugin)
        frames = [t for t in traceback.extract_tb(exc.__traceback__) if t.filename == home]
    except (TypeError, OSError):
        return ""
    return f" ({Path(home).name}, line {frames[-1].lineno})" if frames else ""
