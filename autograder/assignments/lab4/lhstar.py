"""Lab 4's cases and the checks the grader runs on them: LH* addressing.

Two kinds of case (see ``harness``):

* **routes**: questions "file state (i, n), client image (i', n'), key C". The grader computes
  each answer itself with minidb's rules (docs/facts.md, "LH*") and checks the submission's
  route server by server: the first address, every forward, the bucket where it ended (the
  key's true home), never more than two forwards; in the cases that check image adjustment,
  also the image after the IAM.
* **file**: a workload of inserts, lookups and deletes from several clients on a whole LH*
  file. The grader runs the same workload on a file with minidb's rules and compares every
  operation: where it was sent, where it ended, its forwards and requests, its answer (which a
  dict of what was inserted also checks) and the client's image after it. Message counts are
  part of this: a missing IAM or a needless forward shows as a difference.

Nothing the child says about itself is believed: it reports routes and images only.
"""

from __future__ import annotations

import random

from autograder.grading import Case, Malformed, Verdict
from minidb.sdds.addressing import (
    MAX_FORWARDS,
    FileState,
    Image,
    LHStarAddressing,
    adjust_image,
    client_address,
    server_address,
)

# What a case tries. Every category a hidden case has, a public case has too (with other data).
CATEGORIES = ("client address", "forwarding from a stale image", "two forwards",
              "image adjustment", "several first buckets", "a growing file", "a shrinking file")


# -- the questions ------------------------------------------------------------------------------
def reference_route(state: FileState, image: Image, c: int) -> tuple[list[int], Image | None]:
    """The servers a request visits under LH*'s rules, and the image after its IAM (None when
    it was not forwarded)."""
    n0 = state.n0
    route = [client_address(image, c, n0)]
    while (nxt := server_address(route[-1], state.bucket_level(route[-1]), c, n0)) != route[-1]:
        route.append(nxt)
    if len(route) == 1:
        return route, None
    return route, adjust_image(image, route[0], state.bucket_level(route[0]), n0)


def file_history(n0: int, splits: int) -> list[FileState]:
    s, out = FileState(0, 0, n0), [FileState(0, 0, n0)]
    for _ in range(splits):
        s = s.after_split()
        out.append(s)
    return out


def questions(seed: int, n0: int, count: int, *, image: str, forwards: int | None = None,
              max_splits: int = 300, big_keys: bool = True) -> list[list[int]]:
    """``count`` questions [i, n, i', n', C]: file states reached by up to ``max_splits`` splits;
    ``image`` is "exact" (the client knows the state), "stale" (any earlier state) or "fresh"
    ((0, 0)); with ``forwards`` set, only questions LH* answers with exactly that many."""
    rng = random.Random(seed)
    history = file_history(n0, max_splits)
    out: list[list[int]] = []
    while len(out) < count:
        k = rng.randrange(len(history))
        state = history[k]
        past = {"exact": state, "fresh": history[0],
                "stale": history[rng.randrange(k + 1)]}[image]
        c = (rng.getrandbits(64) if big_keys and rng.random() < 0.5
             else rng.randrange(8 * state.buckets))
        route, _ = reference_route(state, Image(past.level, past.split), c)
        if forwards is None or len(route) - 1 == forwards:
            out.append([state.level, state.split, past.level, past.split, c])
    return out


def routes_case(case_id: str, title: str, points: float, *, n0: int, qs: list[list[int]],
                category: str, check_images: bool, hidden: bool = False,
                about: str = "") -> Case:
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for case {case_id}")
    inputs = {"kind": "routes", "n0": n0, "questions": qs}
    return Case(case_id, title, points, hidden, inputs, {},
                check=lambda case, obs: check_routes(case, obs, n0, qs, check_images),
                about=about, category=category)


def _route_text(route: list[int]) -> str:
    return " -> ".join(str(a) for a in route) if route else "nowhere"


def check_routes(case: Case, observation: dict, n0: int, qs: list[list[int]],
                 check_images: bool) -> Verdict:
    answers = observation.get("answers")
    if not isinstance(answers, list) or len(answers) != len(qs):
        raise Malformed(f"expected {len(qs)} answers")
    wrong: list[str] = []
    for (level, split, il, isp, c), got in zip(qs, answers, strict=True):
        if not isinstance(got, dict) or not isinstance(got.get("route"), list):
            raise Malformed("an answer is not an object with a route")
        state, image = FileState(level, split, n0), Image(il, isp)
        route, new_image = reference_route(state, image, c)
        where = (f"file state (i={level}, n={split}, N0={n0}, {state.buckets} buckets), client "
                 f"image (i'={il}, n'={isp}), key C={c}")
        mine = got["route"]
        if got.get("error"):
            wrong.append(f"{where}: you routed {_route_text(mine)}, then: {got['error']}; LH* "
                         f"routes {_route_text(route)}")
        elif mine != route:
            extra = (f" ({len(mine) - 1} forwards; LH* never needs more than {MAX_FORWARDS})"
                     if len(mine) - 1 > MAX_FORWARDS else "")
            wrong.append(f"{where}: you routed {_route_text(mine)}{extra}; LH* routes "
                         f"{_route_text(route)}")
        elif check_images and new_image is not None:
            theirs = got.get("image")
            expected = [new_image.level, new_image.split]
            if theirs != expected:
                wrong.append(f"{where}: routed {_route_text(route)} (right), then the IAM of "
                             f"bucket {route[0]} (level {state.bucket_level(route[0])}) gave "
                             f"image {_image_text(theirs)}; LH* gives ({expected[0]}, "
                             f"{expected[1]})")
    right = len(qs) - len(wrong)
    what = "routes and images" if check_images else "routes"
    if not wrong:
        return Verdict(True, f"all {len(qs)} {what} right")
    shown = "\n".join(f"  {w}" for w in wrong[:5])
    more = f"\n  ... and {len(wrong) - 5} more" if len(wrong) > 5 else ""
    return Verdict(False, f"{right} of {len(qs)} {what} right; the first wrong:\n{shown}{more}",
                   reason=f"{right} of {len(qs)} right; {wrong[0]}")


def _image_text(value: object) -> str:
    if isinstance(value, list) and len(value) == 2:
        return f"({value[0]}, {value[1]})"
    return "none"


# -- whole files --------------------------------------------------------------------------------
def workload(seed: int, ops: int, clients: int, keys: int, delete_share: float,
             grow_first: int = 0) -> list[list]:
    """[client, op, key] steps: ``grow_first`` inserts by one client, then a random mix."""
    rng = random.Random(seed)
    out: list[list] = [["loader", "insert", k] for k in rng.sample(range(keys), grow_first)]
    names = [f"client{i}" for i in range(clients)]
    for _ in range(ops):
        r = rng.random()
        op = "delete" if r < delete_share else ("insert" if r < 0.6 else "lookup")
        out.append([rng.choice(names), op, rng.randrange(keys)])
    return out


def file_case(case_id: str, title: str, points: float, *, n0: int, capacity: int,
              ops: list[list], category: str, merge_below: float = 0.0,
              hidden: bool = False, about: str = "") -> Case:
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for case {case_id}")
    inputs = {"kind": "file", "n0": n0, "capacity": capacity, "machines": 3,
              "split": "uncontrolled", "merge_below": merge_below, "merge_threshold": 0.5,
              "ops": ops}
    return Case(case_id, title, points, hidden, inputs, {},
                check=lambda case, obs: check_file(case, obs), about=about, category=category)


def reference_file(inputs: dict) -> list[list]:
    """Every operation of the workload on a file with minidb's rules, recorded by the harness's
    own ``run_file`` (the same code that records the submission, in the child)."""
    from autograder.assignments.lab4.harness import run_file

    done = run_file(LHStarAddressing, inputs)
    if done["error"]:
        raise RuntimeError(f"minidb's own LH* rules failed the workload: {done['error']}")
    return done["ops"]


FIELDS = ("sent to bucket", "ended at bucket", "forwards", "found", "value", "image i'",
          "image n'", "requests")


def check_file(case: Case, observation: dict) -> Verdict:
    ops = case.inputs["ops"]
    got = observation.get("ops")
    if not isinstance(got, list) or not all(isinstance(x, list) and len(x) == 8 for x in got):
        raise Malformed("expected one 8-item record per operation")
    expected = reference_file(case.inputs)
    truth: dict[int, int] = {}
    for i, (name, op, key) in enumerate(ops):
        want = expected[i]
        if op == "lookup" and want[4] != truth.get(key):  # the reference must agree with a dict
            raise RuntimeError(f"minidb's own LH* file answered {want[4]} for key {key}, "
                               f"not {truth.get(key)}: the grader cannot judge this case")
        truth_found = key in truth
        if op == "insert":
            truth[key] = key * 10 + 1
        elif op == "delete":
            truth.pop(key, None)
        verb = {"insert": "inserts", "lookup": "looks up", "delete": "deletes"}[op]
        step = f"operation {i + 1} of {len(ops)} ({name} {verb} key {key})"
        if i >= len(got):
            error = observation.get("error") or "the run stopped"
            reason = f"{step}: {error}"
            return Verdict(False, f"{i} of {len(ops)} operations as LH* does them, then\n  "
                                  f"{reason}", reason=reason)
        mine = got[i]
        if mine != want:
            diffs = [f"{field}: yours {a}, LH*'s {b}"
                     for field, a, b in zip(FIELDS, mine, want, strict=True) if a != b]
            if op != "insert" and mine[3] != truth_found:
                diffs.insert(0, f"the key was {'' if truth_found else 'not '}in the file")
            reason = f"{step}: " + "; ".join(diffs)
            return Verdict(False, f"{i} of {len(ops)} operations as LH* does them; then\n  "
                                  f"{reason}", reason=reason)
    forwards = sum(x[2] for x in expected)
    return Verdict(True, f"all {len(ops)} operations as LH* does them ({forwards} forwards, "
                         f"none beyond {MAX_FORWARDS} per operation)")


# -- the public cases ---------------------------------------------------------------------------
def public_cases() -> list[Case]:
    """The public cases: one per category (the hidden ones use other seeds and sizes)."""
    return [
        routes_case("C1", "client address with an exact image", 7, n0=1, category="client address",
                    qs=questions(101, 1, 300, image="exact"), check_images=False,
                    about="the client's image is the file state, so every key goes straight "
                          "home: client_address alone decides."),
        routes_case("C2", "forwarding from stale images", 7, n0=1,
                    category="forwarding from a stale image",
                    qs=questions(102, 1, 400, image="stale"), check_images=False,
                    about="images of any earlier file state; each request must reach its "
                          "home, server by server as LH* forwards it."),
        routes_case("C3", "keys LH* forwards twice", 7, n0=1, category="two forwards",
                    qs=questions(103, 1, 120, image="stale", forwards=2), check_images=False,
                    about="only requests that need two forwards: the h_(j-1) step decides."),
        routes_case("C4", "image adjustment messages", 7, n0=1, category="image adjustment",
                    qs=questions(104, 1, 300, image="stale", forwards=1)
                    + questions(105, 1, 100, image="fresh"), check_images=True,
                    about="after a forward, the first server's IAM must move the image as LH* "
                          "does (and leave it when the server is no deeper)."),
        routes_case("C5", "three first buckets", 7, n0=3, category="several first buckets",
                    qs=questions(106, 3, 400, image="stale"), check_images=True,
                    about="N0 = 3: every rule must use 2**i x N0, not 2**i."),
        file_case("C6", "a growing file, five clients", 8, n0=1, capacity=4,
                  category="a growing file", ops=workload(107, 1500, 5, 2000, 0.0),
                  about="inserts split the file under the clients; lookups must find every "
                        "key, with LH*'s forwards, IAMs and message counts."),
        file_case("C7", "a file that shrinks by merges", 7, n0=2, capacity=4, merge_below=0.5,
                  category="a shrinking file",
                  ops=workload(108, 1200, 4, 600, 0.45, grow_first=500),
                  about="deletes merge buckets back; clients whose images are ahead start "
                        "again from (0, 0)."),
    ]
