"""Part A, the range-uniform partitioner: its cases and the checks the grader runs on them.

A case builds the submitted partitioner for one column and runs one or more steps on the same
object: ``fit(batch, N)``, ``route(batch)``, then ``boundaries`` and ``nodes_for_range`` for a
few ranges. The child reports what it saw; this module decides, from the grader's own copy of
the data and from nothing the child says about itself:

* every tuple went to exactly one existing node (one destination per row, each in 0..N-1);
* the boundaries are N - 1 values of the column's kind, in non-decreasing order;
* every tuple's node is the one its value gets under those boundaries (Range's convention: node
  i holds b_i <= v < b_(i+1), node 0 everything below b_1, node N-1 everything from b_(N-1) up);
* the nodes are balanced: with n tuples fitted, N nodes and m the count of the most repeated
  value, each node holds between floor(n/N) - (m-1) and ceil(n/N) + (m-1) tuples (with distinct
  values, exactly the share or one more); when the boundaries come from a sample, each node
  holds its share n/N within a stated tolerance;
* ``nodes_for_range(low, high)`` names exactly the nodes whose range meets [low, high];
* ``fit(None, N)`` after a fit for the same N keeps the boundaries learned then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from autograder.grading import Case, Malformed, Verdict, shown_list

# What a case tries. Every category a hidden case has, a public case has too (with other data),
# so a mistake that costs a hidden case shows in a public one first.
CATEGORIES = ("exact split", "keys in random order", "keys in ascending order", "nodes_for_range",
              "repeated values", "floating-point column", "text column", "sample",
              "one node, and fit(None)")


@dataclass
class Step:
    """One fit / route / ask on the partitioner; ``balance`` is "exact", a tolerance, or None."""

    fit: str | None
    route: str
    num_nodes: int
    ranges: list[tuple] = field(default_factory=list)
    balance: str | float | None = "exact"

    def as_job(self) -> dict:
        return {"fit": self.fit, "route": self.route, "num_nodes": self.num_nodes,
                "ranges": [list(r) for r in self.ranges]}


def relation(values: np.ndarray, column: str) -> np.ndarray:
    """A small relation: a row number and the partitioning column."""
    rows = np.zeros(len(values), dtype=[("rowid", "<i8"), (column, values.dtype)])
    rows["rowid"] = np.arange(len(values))
    rows[column] = values
    return rows


def partition_case(case_id: str, title: str, points: float, *, column: str,
                   steps: list[Step], arrays: dict[str, np.ndarray], category: str,
                   hidden: bool = False, sample: int | None = None, about: str = "") -> Case:
    """A part A case; ``category`` is one of ``CATEGORIES`` (public and hidden cases share them)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for case {case_id}")
    # array names are the case's own: several cases are sent to one child
    own = {name: f"{case_id}_{name}" for name in arrays}
    steps = [replace(s, fit=s.fit and own[s.fit], route=own[s.route]) for s in steps]
    names = sorted({s.route for s in steps} | {s.fit for s in steps if s.fit})
    inputs = {"kind": "partition", "column": column, "sample": sample,
              "steps": [s.as_job() for s in steps], "arrays": names}
    return Case(case_id, title, points, hidden, inputs, {own[k]: v for k, v in arrays.items()},
                check=lambda case, obs: check_partition(case, obs, column, steps), about=about,
                category=category)


# -- the checks ---------------------------------------------------------------------------------
def check_partition(case: Case, observation: dict, column: str, steps: list[Step]) -> Verdict:
    got = observation.get("steps")
    if not isinstance(got, list) or len(got) != len(steps):
        raise Malformed(f"expected {len(steps)} step(s) in the answer")
    passed = True
    blocks: list[str] = []
    reason = ""
    for i, (step, answer) in enumerate(zip(steps, got, strict=True)):
        if not isinstance(answer, dict):
            raise Malformed(f"step {i + 1} of the answer is not an object")
        problems, notes = _check_step(case, step, answer, column)
        if step.fit is None and i > 0 and steps[i - 1].num_nodes == step.num_nodes:
            _check_kept(step, got[i - 1].get("boundaries"), answer.get("boundaries"),
                        problems, notes)
        passed = passed and not problems
        label = _describe_step(step, case, column)
        label = f"step {i + 1}, {label}" if len(steps) > 1 else label
        if problems and not reason:
            reason = f"{label}: {problems[0]}"
        blocks.append("\n".join([label + ("" if problems else ": right")]
                                + [f"  {x}" for x in problems + notes]))
    return Verdict(passed, "\n".join(blocks), reason)


def _check_kept(step: Step, learned: object, now: object, problems: list[str],
                notes: list[str]) -> None:
    """``fit(None, N)`` right after a fit for N nodes must leave the boundaries as they were."""
    call = f"fit(None, {step.num_nodes})"
    if now == learned:
        notes.append(f"{call} kept the boundaries learned before")
        return
    shown = [shown_list([_show(b) for b in x]) if isinstance(x, list) else "none"
             for x in (now, learned)]
    problems.append(f"after {call} the boundaries are {shown[0]}, but {call} keeps the "
                    f"boundaries learned before for {step.num_nodes} nodes: {shown[1]}")


def _describe_step(step: Step, case: Case, column: str) -> str:
    n = len(case.arrays[step.route])
    fitted = "no data" if step.fit is None else f"{len(case.arrays[step.fit]):,} tuples"
    return f"fit({fitted}, {step.num_nodes}), route {n:,} tuples"


def _check_step(case: Case, step: Step, answer: dict, column: str) -> tuple[list[str], list[str]]:
    rows = case.arrays[step.route]
    values = rows[column]
    n_nodes = step.num_nodes
    problems: list[str] = []
    notes: list[str] = []

    dest = _int_list(answer.get("destinations"), "destinations")
    if len(dest) != len(values):
        problems.append(f"route gave {len(dest):,} destinations for {len(values):,} tuples; "
                        "every tuple needs exactly one node")
        return problems, notes
    dest_arr = np.asarray(dest, dtype=np.int64)
    bad = np.flatnonzero((dest_arr < 0) | (dest_arr >= n_nodes))
    if len(bad):
        i = int(bad[0])
        problems.append(f"tuple {i} ({column}={_show(values[i])}) went to node {dest[i]}, but the "
                        f"nodes are 0..{n_nodes - 1}")
        return problems, notes
    sizes = np.bincount(dest_arr, minlength=n_nodes)
    notes.append(f"node sizes {shown_list(sizes.tolist())}")

    bounds = answer.get("boundaries")
    usable = _check_boundaries(bounds, n_nodes, values, problems)
    if usable is not None:
        notes.append(f"your boundaries {shown_list([_show(b) for b in bounds])}")
        expected = np.searchsorted(usable, values, side="right")
        wrong = np.flatnonzero(expected != dest_arr)
        if len(wrong):
            i = int(wrong[0])
            problems.append(
                f"{len(wrong):,} tuple(s) are not on the node their value belongs to under your "
                f"boundaries; the first is tuple {i} ({column}={_show(values[i])}): sent to node "
                f"{dest[i]}, but node {int(expected[i])} holds that value (node i holds "
                "boundary[i-1] <= value < boundary[i])")

    if step.balance is not None and step.fit is not None:
        problems += _check_balance(case.arrays[step.fit][column], sizes, step, n_nodes,
                                   step.fit == step.route)

    if step.ranges:
        got = answer.get("ranges")
        if not isinstance(got, list) or len(got) != len(step.ranges):
            raise Malformed("the answers to nodes_for_range are missing")
        if usable is not None:
            for (lo, hi), nodes in zip(step.ranges, got, strict=True):
                want = nodes_meeting(usable, lo, hi, n_nodes, values.dtype.kind == "S")
                mine = None if nodes is None else _int_list(nodes, "nodes_for_range")
                if mine != want:
                    problems.append(f"nodes_for_range({_show(lo)}, {_show(hi)}) gave {mine}, but "
                                    f"with your boundaries the nodes whose range meets it are {want}")
                    break
            else:
                notes.append(f"nodes_for_range right on all {len(step.ranges)} ranges")
    return problems, notes


def _check_boundaries(bounds: object, n_nodes: int, values: np.ndarray,
                      problems: list[str]) -> np.ndarray | None:
    """The boundaries as an array routing can use, or None (with the problem said)."""
    if bounds is None:
        problems.append("after fit, the partitioner has no `boundaries` (a list of N - 1 values)")
        return None
    if not isinstance(bounds, list):
        raise Malformed("boundaries are not a list")
    if len(bounds) != n_nodes - 1:
        problems.append(f"there are {len(bounds)} boundaries for {n_nodes} nodes; "
                        f"N nodes need N - 1 = {n_nodes - 1}")
        return None
    text = values.dtype.kind == "S"
    if text:
        if not all(isinstance(b, str) for b in bounds):
            problems.append("the column is text, so the boundaries must be strings")
            return None
        usable = np.array([b.encode() for b in bounds], dtype=bytes) if bounds else \
            np.array([], dtype=values.dtype)
    else:
        if not all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds):
            problems.append("the column is numeric, so the boundaries must be numbers")
            return None
        if not all(math.isfinite(b) for b in bounds):
            problems.append("a boundary is not a finite number")
            return None
        usable = np.array(bounds, dtype=np.float64 if any(isinstance(b, float) for b in bounds)
                          else np.int64)
    if len(usable) > 1 and not np.all(usable[1:] >= usable[:-1]):
        i = int(np.argmin(usable[1:] >= usable[:-1]))
        problems.append(f"boundaries must not decrease, but {_show(bounds[i])} is followed by "
                        f"{_show(bounds[i + 1])}")
        return None
    return usable


def _check_balance(fitted: np.ndarray, sizes: np.ndarray, step: Step, n_nodes: int,
                   same: bool) -> list[str]:
    n = len(fitted)
    if step.balance == "exact":
        if not same:
            return []
        _, counts = np.unique(fitted, return_counts=True)
        m = int(counts.max()) if len(counts) else 1
        low, high = max(0, n // n_nodes - (m - 1)), -(-n // n_nodes) + (m - 1)
        if sizes.min() >= low and sizes.max() <= high:
            return []
        repeats = "no value repeats" if m == 1 else f"the most frequent value occurs {m:,} times"
        worst = int(np.argmax(np.maximum(sizes - high, low - sizes)))
        return [f"unbalanced: node {worst} holds {int(sizes[worst]):,} tuples; with {n:,} tuples "
                f"over {n_nodes} nodes ({repeats}) every node must hold {low:,} to {high:,}"]
    share = sizes.sum() / n_nodes
    tol = float(step.balance)
    low, high = share * (1 - tol), share * (1 + tol)
    if sizes.min() >= low and sizes.max() <= high:
        return []
    worst = int(np.argmax(np.abs(sizes - share)))
    return [f"unbalanced: node {worst} holds {int(sizes[worst]):,} tuples; boundaries taken from "
            f"a sample must give every node {share:,.0f} tuples within {tol:.0%} "
            f"({math.ceil(low):,} to {math.floor(high):,})"]


def nodes_meeting(bounds: np.ndarray, low: object, high: object, n_nodes: int,
                  text: bool) -> list[int]:
    """The nodes whose range of values meets [low, high] under ``bounds`` (None: unbounded)."""
    def key(v):
        return None if v is None else (v.encode() if text else v)

    lo, hi = key(low), key(high)
    if lo is not None and hi is not None and lo > hi:
        return []
    edges = [None, *[bytes(b) if text else b.item() for b in bounds], None]
    out = []
    for i in range(n_nodes):
        lower, upper = edges[i], edges[i + 1]
        if lower is not None and upper is not None and not lower < upper:
            continue  # between two equal boundaries: the node holds nothing
        if hi is not None and lower is not None and lower > hi:
            continue
        if lo is not None and upper is not None and upper <= lo:
            continue
        out.append(i)
    return out


def _int_list(value: object, what: str) -> list[int]:
    if not isinstance(value, list) or not all(type(v) is int for v in value):
        raise Malformed(f"{what} is not a list of whole numbers")
    return value


def _show(value: object) -> str:
    if isinstance(value, bytes | np.bytes_):
        value = bytes(value).rstrip(b"\0").decode("utf-8", "replace")
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value) if isinstance(value, str) else str(value)


# -- the public cases ---------------------------------------------------------------------------
def public_cases() -> list[Case]:
    """Part A's public cases: one or more per category (the hidden ones use other data)."""
    rng = np.random.default_rng(20240101)
    exact = relation(rng.permutation(24).astype(np.int32), "key")
    shuffled = relation(rng.permutation(10_000).astype(np.int32), "unique1")
    ascending = relation((np.arange(10_000) * 3 + 7).astype(np.int32), "unique2")
    small = relation(rng.permutation(60).astype(np.int32), "key")
    ranges = [(None, None), (None, 15), (20, None), (20, 20), (12, 12), (11, 12), (5, 3),
              (-5, -1), (70, 90), (0, 59)]
    ranges += [tuple(sorted(rng.integers(-5, 66, size=2).tolist())) for _ in range(20)]
    # repeated values: a gamma-shaped amount (about 3,000 distinct values, the most frequent
    # one about 20 times) and a column where one value is a third of the relation
    amounts = relation(np.floor(rng.gamma(2.0, 300.0, 12_000)).astype(np.int32), "amount")
    lumpy = relation(np.where(rng.random(3_000) < 0.35, 500,
                              rng.integers(0, 1_000, 3_000)).astype(np.int32), "amount")
    # a floating-point column, dense around zero
    temps = relation(rng.laplace(0.0, 40.0, 6_000), "temperature")
    temp_ranges = [(None, None), (-0.5, 0.5), (None, -60.0), (45.0, None), (3.0, -3.0)]
    temp_ranges += [tuple(sorted(rng.laplace(0, 60, 2).round(3).tolist())) for _ in range(10)]
    # a text column (20 bytes): every value starts with the same letters
    words = relation(np.array([f"row{v:05d}".encode() for v in rng.permutation(2_100)],
                              dtype="S20"), "label")
    word_ranges = [(None, "row00500"), ("row00100", "row00199"), ("row01500", None),
                   ("row9", "row0"), (None, None), ("row01000", "row01000")]
    # sample: keys stored in descending order, so the first rows are not a sample
    descending = relation((30_000 - np.arange(30_000) * 2).astype(np.int32), "rank")
    # few values over more nodes, one node, then new data and fit(None)
    five = relation(rng.integers(10, 15, 700).astype(np.int32), "grp")
    fresh = relation(rng.permutation(400).astype(np.int32) * 3, "grp")
    grp_ranges = [(10, 10), (11, 12), (14, 14), (9, 20), (0, 9), (15, 30), (None, 11), (13, None)]
    return [
        partition_case(
            "A1", "exact split: 24 distinct keys over 4 nodes", 4, column="key",
            category="exact split", steps=[Step("exact", "exact", 4)], arrays={"exact": exact},
            about="24 distinct values in random order over 4 nodes: every node holds exactly 6."),
        partition_case(
            "A2", "keys in random order: 10,000 over 8 nodes", 4, column="unique1",
            category="keys in random order", steps=[Step("shuffled", "shuffled", 8)],
            arrays={"shuffled": shuffled},
            about="unique1 of a Wisconsin relation (a permutation, stored in random order)."),
        partition_case(
            "A3", "keys in ascending load order: 10,000 over 5 nodes", 3, column="unique2",
            category="keys in ascending order", steps=[Step("ascending", "ascending", 5)],
            arrays={"ascending": ascending},
            about="values stored in ascending order, so the first rows are all small values."),
        partition_case(
            "A4", "nodes_for_range agrees with route: 60 keys over 5 nodes", 3, column="key",
            category="nodes_for_range", steps=[Step("small", "small", 5, ranges=ranges)],
            arrays={"small": small},
            about="nodes_for_range(low, high) must name exactly the nodes whose range meets it."),
        partition_case(
            "A5", "repeated values: 12,000 skewed amounts over 6 nodes, then a frequent value",
            4, column="amount", category="repeated values",
            steps=[Step("amounts", "amounts", 6), Step("lumpy", "lumpy", 4)],
            arrays={"amounts": amounts, "lumpy": lumpy},
            about="values repeat (in the second step one value is about a third of the "
                  "relation): nodes must still hold equal shares, up to the repeats."),
        partition_case(
            "A6", "a floating-point column, dense around zero, 5 nodes", 3,
            column="temperature", category="floating-point column",
            steps=[Step("temps", "temps", 5, ranges=temp_ranges)],
            arrays={"temps": temps},
            about="negative and positive doubles, many within 1 of each other near zero."),
        partition_case(
            "A7", "a text column, 3 nodes", 3, column="label", category="text column",
            steps=[Step("words", "words", 3, ranges=word_ranges)], arrays={"words": words},
            about="20-byte strings compared as their bytes; they all start with 'row'."),
        partition_case(
            "A8", "boundaries from a sample of 3,000 of 30,000 descending keys, 5 nodes", 3,
            column="rank", category="sample", sample=3_000,
            steps=[Step("descending", "descending", 5, balance=0.15)],
            arrays={"descending": descending},
            about="RangeUniform(column, sample=3000) on keys stored in descending order: the "
                  "sample must represent the whole relation."),
        partition_case(
            "A9", "few values, one node, and fitting again", 3, column="grp",
            category="one node, and fit(None)",
            steps=[Step("five", "five", 7, ranges=grp_ranges), Step("five", "five", 1),
                   Step("fresh", "fresh", 4), Step(None, "fresh", 4)],
            arrays={"five": five, "fresh": fresh},
            about="5 distinct values over 7 nodes; then 1 node; then new data over 4 nodes, "
                  "then fit(None, 4), which keeps those boundaries."),
    ]
