"""Part B, the Clock replacement policy: its traces and the checks the grader runs on them.

A case is a trace of page references (``["r", p]`` fix and unfix, ``["f", p]`` fix and keep
pinned, ``["u", p]`` unfix) run through minidb's ``BufferManager`` with a few frames. The child
reports only the frame the submitted policy chose at each eviction. The grader then replays the
trace itself with those choices: each must be one of the frames the buffer manager offered
(resident and unpinned), and the hits and misses are counted by the grader's own buffer manager.
The reference is Clock as minidb's ``ClockPolicy`` implements it, run here in the grader; in a
student release, whose ``ClockPolicy`` is a stub, its answers for the public traces were
recorded when the release was made (``expected_public.json``). A case passes when every victim
is the reference's, which also gives the reference's hits and misses.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autograder.assignments.lab1.harness import PAGE_SIZE, make_file, recording, run_ops
from autograder.grading import Case, Malformed, Verdict, shown_list
from minidb.buffer import BufferManager
from minidb.buffer.policy import ReplacementPolicy
from minidb.storage.disk import Disk

RECORDED = Path(__file__).with_name("expected_public.json")
# What a trace tries. Every category a hidden case has, a public case has too (another trace).
CATEGORIES = ("sequential flooding", "hot pages", "second chances", "pinned pages",
              "random references with pins", "moving working set")


def trace_case(case_id: str, title: str, points: float, *, frames: int, ops: list,
               category: str, hidden: bool = False, about: str = "") -> Case:
    """A part B case; ``category`` is one of ``CATEGORIES``."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for case {case_id}")
    ops = [[op, int(page)] for op, page in ops]
    inputs = {"kind": "trace", "frames": frames, "pages": max(p for _, p in ops) + 1, "ops": ops}
    return Case(case_id, title, points, hidden, inputs, {}, check=check_trace, about=about,
                category=category)


def refs(pages) -> list:
    """A trace that fixes and unfixes each page in turn."""
    return [["r", int(p)] for p in pages]


def random_trace(rng: np.random.Generator, pages: int, length: int, skew: float) -> list:
    """Zipf-distributed references to ``pages`` pages; now and then a page is pinned (at most
    three at a time) and later unpinned."""
    ops, pinned = [], []
    for _ in range(length):
        page = int(rng.zipf(skew) % pages)
        if len(pinned) < 3 and page not in pinned and rng.random() < 0.05:
            ops.append(["f", page])
            pinned.append(page)
        else:
            ops.append(["r", page])
        if pinned and rng.random() < 0.08:
            ops.append(["u", pinned.pop(0)])
    ops += [["u", p] for p in pinned]
    return ops


def shifting_trace(rng: np.random.Generator, phases: int, step: int, width: int,
                   length: int) -> list:
    """A working set of ``width`` pages that moves ``step`` pages forward each phase; each phase
    ends with a pinned page and two references around it."""
    ops = []
    for phase in range(phases):
        base = phase * step
        ops += refs(base + rng.integers(0, width, length))
        ops += [["f", base], ["r", base + width + 1], ["r", base + 1], ["u", base]]
    return ops


# -- replaying a trace in the grader ------------------------------------------------------------
@dataclass
class Eviction:
    step: int  # index in the trace of the reference that needed a frame
    frame: int
    resident: list[int]  # page held by each frame just before (-1: empty)
    candidates: list[int]


@dataclass
class Run:
    hits: int = 0
    misses: int = 0
    evictions: list[Eviction] = field(default_factory=list)
    victims: list[int] = field(default_factory=list)
    stopped: str | None = None  # why the replay could not go on


class _NoVictim(Exception):
    pass


def run_trace(inputs: dict, policy: type[ReplacementPolicy] | None = None,
              victims: list[int] | None = None) -> Run:
    """Run ``inputs``' trace with ``policy``, or with the choices ``victims`` (checked)."""
    run = Run()
    step = [0]
    holder: dict[str, BufferManager] = {}
    if policy is None:
        class Scripted(ReplacementPolicy):
            def choose_victim(self, candidates):
                k = len(run.evictions)
                offered = candidates.tolist()
                if k >= len(victims):
                    raise _NoVictim(f"no choice was reported for eviction {k + 1}")
                if victims[k] not in offered:
                    raise _NoVictim(
                        f"at eviction {k + 1} (step {step[0] + 1}, page "
                        f"{inputs['ops'][step[0]][1]} requested) your policy chose frame "
                        f"{victims[k]}, which was not offered: the candidates were {offered} "
                        f"(frames {_pinned(holder['buf'])} are pinned)")
                return victims[k]
        policy = Scripted
    base, recorded = recording(policy)

    class Logged(base):
        def choose_victim(self, candidates):
            buf = holder["buf"]
            before = buf.frame_page.tolist()
            victim = super().choose_victim(candidates)
            run.evictions.append(Eviction(step[0], int(victim), before, candidates.tolist()))
            return victim

    with tempfile.TemporaryDirectory(prefix="minidb-replay-") as d:
        disk = Disk(d, PAGE_SIZE)
        f = make_file(disk, inputs["pages"])
        buf = holder["buf"] = BufferManager(disk, inputs["frames"], Logged)
        try:
            run_ops(buf, f, inputs["ops"], before=lambda i: step.__setitem__(0, i))
        except _NoVictim as stop:
            run.stopped = str(stop)
        finally:
            disk.close()
    run.hits, run.misses, run.victims = buf.counters.hits, buf.counters.misses, recorded
    return run


def _pinned(buf: BufferManager) -> list[int]:
    return np.flatnonzero(buf.pins > 0).tolist()


# -- the reference ------------------------------------------------------------------------------
def reference(case: Case) -> dict:
    """The reference policy's victims, hits and misses on ``case``: recorded in a student
    release, computed with minidb's ClockPolicy otherwise."""
    if RECORDED.exists():
        recorded = json.loads(RECORDED.read_text())
        return recorded[case.id]
    from minidb.buffer.clock import ClockPolicy

    run = run_trace(case.inputs, ClockPolicy)
    return {"victims": run.victims, "hits": run.hits, "misses": run.misses}


def record_public(cases: list[Case]) -> str:
    """The reference's answers for ``cases`` as the JSON a student release carries."""
    return json.dumps({c.id: reference(c) for c in cases}, indent=1, sort_keys=True) + "\n"


# -- the check ----------------------------------------------------------------------------------
def check_trace(case: Case, observation: dict) -> Verdict:
    victims = observation.get("victims")
    error = observation.get("error")
    if not isinstance(victims, list) or not all(type(v) is int for v in victims):
        raise Malformed("victims are not a list of frame numbers")
    if len(victims) > len(case.inputs["ops"]):
        raise Malformed("more victims than references in the trace")
    if error is not None and not isinstance(error, str):
        raise Malformed("the error is not text")
    want = reference(case)
    mine = run_trace(case.inputs, victims=victims)
    counts = f"the reference Clock gets hits {want['hits']}, misses {want['misses']}"
    lines: list[str] = []
    if mine.stopped and not (error is not None and mine.stopped.startswith("no choice")):
        lines.append(mine.stopped)  # the grader's own finding comes first
    if error is not None:
        where = observation.get("step")
        at = f" at step {where + 1}" if type(where) is int else ""
        lines.append(f"your policy raised an error{at} after {len(victims)} eviction(s): {error}")
    if not lines and len(mine.evictions) != len(victims):
        raise Malformed(f"{len(victims)} victims reported, but the trace needs "
                        f"{len(mine.evictions)} evictions with them")
    if lines:
        lines.append(counts + ".")
        reason = lines[0]
        lines += _trace_lines(case)
        return Verdict(False, "\n".join(lines), reason)
    summary = f"hits {mine.hits}, misses {mine.misses}; {counts}"
    if mine.victims == want["victims"] and (mine.hits, mine.misses) == (want["hits"], want["misses"]):
        return Verdict(True, f"{summary}; all {len(victims)} evictions chose the reference's frame.")
    lines.append(summary + ".")
    lines.append(_first_difference(case, mine, want["victims"]))
    reason = f"{lines[-1]} ({summary})"
    lines += _trace_lines(case)
    return Verdict(False, "\n".join(lines), reason)


def _first_difference(case: Case, mine: Run, expected: list[int]) -> str:
    for k, (got, ev) in enumerate(zip(mine.victims, mine.evictions, strict=False)):
        if k >= len(expected) or got != expected[k]:
            ops = case.inputs["ops"]
            at = f"eviction {k + 1}, at step {ev.step + 1} (page {ops[ev.step][1]} requested; " \
                 f"frames held pages {ev.resident}, candidates {ev.candidates})"
            if k >= len(expected):
                return f"first difference: {at}: the reference needs no such eviction."
            ref = expected[k]
            return (f"first difference: {at}: the reference evicts frame {ref} (page "
                    f"{ev.resident[ref]}), your policy evicted frame {got} (page {ev.resident[got]}).")
    return (f"your policy made {len(mine.victims)} evictions and the reference "
            f"{len(expected)}; the first {len(mine.victims)} agree.")


def _trace_lines(case: Case) -> list[str]:
    if case.hidden:
        return []
    ops = case.inputs["ops"]
    text = " ".join(f"{op}{p}" for op, p in ops)
    return [f"the trace ({case.inputs['frames']} frames; r = fix and unfix, f = fix and keep "
            f"pinned, u = unfix): {text if len(ops) <= 60 else shown_list(ops, 60)}"]


# -- the public traces --------------------------------------------------------------------------
def public_cases() -> list[Case]:
    """Part B's public traces: one or more per category (the hidden ones use other traces)."""
    hot_and_scan = []
    for s in range(2, 10):
        hot_and_scan += [0, 1, s]
    pinned = refs([0, 1, 2, 3]) + [["f", 0], ["f", 1]] + refs([4, 5, 2, 6]) + [["u", 0]] + \
        refs([7, 0, 3, 8]) + [["u", 1]] + refs([9, 1, 0, 10])
    return [
        trace_case("B1", "sequential flooding: a loop over 5 pages with 4 frames", 6, frames=4,
                   ops=refs(list(range(5)) * 4), category="sequential flooding",
                   about="every page is referenced once per pass, so every bit is set when the "
                         "hand comes: Clock degrades to FIFO, and misses every time."),
        trace_case("B2", "two hot pages and a scan, 4 frames", 6, frames=4, ops=refs(hot_and_scan),
                   category="hot pages",
                   about="pages 0 and 1 are referenced between every scan page; their bits keep "
                         "being set, so the hand passes them by."),
        trace_case("B3", "second chances, 4 frames", 6, frames=4,
                   ops=refs([0, 1, 2, 3, 4, 1, 2, 5, 1, 6, 2, 1, 7]), category="second chances",
                   about="pages 1 and 2 are hit again after the hand cleared their bits."),
        trace_case("B4", "pinned pages, 4 frames", 6, frames=4, ops=pinned,
                   category="pinned pages",
                   about="pages 0 and 1 stay pinned for a while: the hand passes their frames "
                         "without touching their bits."),
        trace_case("B5", "Zipf-distributed references with pins, 12 frames", 6, frames=12,
                   ops=random_trace(np.random.default_rng(11), 40, 800, 1.4),
                   category="random references with pins",
                   about="800 references to 40 pages, a few of them pinned for a while."),
        trace_case("B6", "a working set that moves, 5 frames", 6, frames=5,
                   ops=shifting_trace(np.random.default_rng(3), 5, 3, 5, 30),
                   category="moving working set",
                   about="5 pages referenced at random, 3 pages further on every 34 steps, with "
                         "a page pinned at the end of each phase."),
    ]
