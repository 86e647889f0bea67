"""Relational operators over LH* files, choosing their own strategy as they run.

The LH* paper of the course (Karlsson and Kersten 1997, Section 4) makes Monet's select, join
and semijoin work on tables stored in LH* files ("SDDSs") as well as on ordinary main-memory
tables ("BATs"), without the query optimizer knowing which is which: each operator decides
*while it runs*, from the sizes it finds, how to move the data (Section 4.1, "Live
Optimization"). Tables are binary, as in Monet: pairs (head, tail) of integers; an SDDS is an
LH* file whose keys are the heads and whose values are the tails.

The operators and their strategies (Section 4.1):

* ``select(sdds, low, high)``: sent to every bucket; the matching pairs stay where they were
  found (a result distributed like the SDDS), or are gathered at the front.
* ``join(sdds, bat)`` (on sdds.tail = bat.head): either the BAT is broadcast to every server
  machine and each bucket joins locally (the result stays distributed like the SDDS), or the
  SDDS is materialized at the front and joined there, whichever moves fewer bytes.
* ``join(bat, sdds)`` (bat.tail = sdds.head): either the BAT is hash-partitioned on its tail to
  the buckets that hold those heads (a distributed hash join), or the SDDS is materialized.
* ``join(sdds1, sdds2)`` (sdds1.tail = sdds2.head): sdds1 redistributed onto sdds2's buckets, or
  sdds2 broadcast to sdds1's machines, or both materialized at the front.
* ``semijoin(sdds, other)``: the pairs of ``sdds`` whose head is a head of ``other``. When
  ``other`` is an SDDS with the same file state on the same machines (the same mapping: equal
  keys live on the same machine), every bucket semijoins locally and nothing moves; otherwise
  the heads of ``other`` are routed to the buckets of ``sdds``.

Every result carries its ``Plan`` (the alternatives with the bytes each would move, the one
chosen and why; ``explain()``) and its ``Work``: messages, bytes moved between machines, and
entries scanned per machine, the counters a cost model prices. A pair is 16 bytes (two 64-bit
integers, as Monet stored them). In this simulation the bytes travel through the calling
process; the counts are those of the strategy's own transfers (server to server when the
strategy says so).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from minidb.sdds.lhstar import LHStarError, LHStarFile
from minidb.sdds.servers import PAIR, equi_join, machine_of, pseudokey

PAIR_BYTES = PAIR.itemsize
"""Bytes of one (head, tail) pair on the wire: two 64-bit integers."""


@dataclass
class Work:
    """What an operator did, counted."""

    messages: int = 0
    """Messages sent: requests to machines, replies, and data transfers."""
    bytes_moved: int = 0
    """Bytes of pairs moved between machines (the front node counts as one)."""
    scanned: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    """Entries looked at per machine (``-1``: the front node)."""

    def ship(self, pairs: int, messages: int = 1) -> None:
        self.bytes_moved += pairs * PAIR_BYTES
        self.messages += messages


@dataclass
class Plan:
    """The strategy an operator chose while it ran, and the alternatives it weighed."""

    operator: str
    alternatives: dict[str, int]
    """Strategy -> bytes it would move."""
    chosen: str
    why: str

    def explain(self) -> str:
        lines = [f"{self.operator}: {self.chosen} ({self.why})"]
        for name, cost in self.alternatives.items():
            mark = "*" if name == self.chosen else " "
            lines.append(f"  {mark} {name}: {cost:,} bytes moved")
        return "\n".join(lines)


@dataclass
class Result:
    """An operator's result: fragments kept on the machines that made them (``front`` False),
    or one array at the front node."""

    fragments: dict[int, np.ndarray]
    """Where each part of the result is: bucket address (or -1 for the front) -> pairs."""
    distributed: bool
    plan: Plan
    work: Work

    def pairs(self) -> np.ndarray:
        """The whole result as one pair array (a reader's view: no messages are counted)."""
        parts = [f for f in self.fragments.values() if len(f)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=PAIR)

    def __len__(self) -> int:
        return sum(len(f) for f in self.fragments.values())

    def explain(self) -> str:
        where = "distributed over the buckets" if self.distributed else "at the front node"
        return (f"{self.plan.explain()}\nresult: {len(self):,} pairs {where}; "
                f"{self.work.messages} messages, {self.work.bytes_moved:,} bytes moved")


def bat(heads, tails) -> np.ndarray:
    """A main-memory binary table at the front node, from two integer sequences."""
    heads, tails = np.asarray(heads), np.asarray(tails)
    if heads.shape != tails.shape or heads.ndim != 1:
        raise LHStarError("a BAT needs two one-dimensional sequences of the same length")
    for name, column in (("heads", heads), ("tails", tails)):
        if len(column) and column.dtype.kind not in "iu":
            raise LHStarError(f"a BAT holds integer pairs; its {name} are {column.dtype} "
                              "(round or convert them first: nothing is truncated silently)")
        if len(column) and column.dtype.kind == "u" and column.max() > np.iinfo(np.int64).max:
            raise LHStarError(f"a BAT holds 64-bit signed integers; its {name} include "
                              f"{int(column.max())}, which does not fit (it would wrap around)")
    out = np.empty(len(heads), dtype=PAIR)
    out["head"], out["tail"] = heads, tails
    return out


def load(file: LHStarFile, pairs: np.ndarray, client: str = "loader") -> LHStarFile:
    """Insert every (head, tail) of ``pairs`` into ``file``. The heads are the file's keys, so
    they must be distinct (a repeated head would silently replace the pair before it)."""
    _check_bat(pairs, "the pairs to load")
    if len(np.unique(pairs["head"])) != len(pairs):
        raise LHStarError("the heads of an SDDS are its keys and must be distinct; these "
                          "repeat some")
    c = file.client(client)
    for head, tail in zip(pairs["head"].tolist(), pairs["tail"].tolist(), strict=True):
        c.insert(head, tail)
    return file


# -- helpers ------------------------------------------------------------------------------------
def _sizes(file: LHStarFile, work: Work) -> dict[int, int]:
    """Bucket -> records, asked of every machine (a request and a reply each)."""
    work.messages += 2 * file.machines
    return file.bucket_sizes()


def _each_machine(file: LHStarFile, method: str, work: Work, per_machine_args=None,
                  args: tuple = ()) -> dict[int, np.ndarray]:
    """Run ``method`` on every machine; returns the union of their bucket -> pairs."""
    out: dict[int, np.ndarray] = {}
    for m in range(file.machines):
        margs = per_machine_args[m] if per_machine_args is not None else args
        fragments, scanned = file._call_machine(m, method, *margs)
        work.scanned[m] += scanned
        work.messages += 1  # the request; replies are counted where data moves
        out.update(fragments)
    return out


def _materialize(file: LHStarFile, work: Work) -> np.ndarray:
    """Ship every bucket to the front node."""
    parts = []
    for m in range(file.machines):
        buckets = file._call_machine(m, "pairs")
        for p in buckets.values():
            parts.append(p)
            work.ship(len(p))
    return np.concatenate(parts) if parts else np.empty(0, dtype=PAIR)


def _route(file: LHStarFile, keys: np.ndarray) -> np.ndarray:
    """The bucket of every key under the file's true state (the coordinator's; one message to
    learn it is counted by the caller); -1 for a key the file cannot hold (a negative key of
    an unhashed file), which matches nothing there and goes nowhere."""
    state = file.state
    return np.fromiter((state.address(pseudokey(int(k), file.hashed))
                        if file.hashed or k >= 0 else -1 for k in keys),
                       dtype=np.int64, count=len(keys))


def _by_machine(file: LHStarFile, buckets: dict[int, np.ndarray]) -> list[dict]:
    out: list[dict] = [dict() for _ in range(file.machines)]
    for a, rows in buckets.items():
        out[machine_of(a, file.machines)][a] = rows
    return out


def _check_file(x: object, what: str) -> LHStarFile:
    if not isinstance(x, LHStarFile):
        raise LHStarError(f"{what} must be an LH* file (an SDDS), got {type(x).__name__}")
    return x


def _check_bat(x: object, what: str) -> np.ndarray:
    if not (isinstance(x, np.ndarray) and x.dtype == PAIR):
        raise LHStarError(f"{what} must be a BAT of (head, tail) pairs (minidb.sdds.operators."
                          f"bat), got {type(x).__name__}")
    return x


def _choose(operator: str, alternatives: dict[str, int], strategy: str | None = None) -> Plan:
    if strategy is not None:
        imposed = [a for a in alternatives if a.startswith(strategy)]
        if not imposed:
            names = ", ".join(repr(a.split()[0]) for a in alternatives)
            raise LHStarError(f"{operator} has no strategy {strategy!r}; choose one of {names}")
        return Plan(operator, alternatives, imposed[0],
                    f"imposed by the caller; it moves {alternatives[imposed[0]]:,} bytes")
    chosen = min(alternatives, key=alternatives.get)  # the first listed wins a tie
    others = ", ".join(f"{k} {v:,}" for k, v in alternatives.items() if k != chosen)
    return Plan(operator, alternatives, chosen,
                f"moves the fewest bytes: {alternatives[chosen]:,}" +
                (f" against {others}" if others else ""))


# -- the operators --------------------------------------------------------------------------------
def select(sdds: LHStarFile, low: int, high: int, gather: bool = False) -> Result:
    """The pairs of ``sdds`` with ``low <= tail <= high``, kept where they were found (or, with
    ``gather``, sent to the front node)."""
    _check_file(sdds, "select's input")
    for name, bound in (("low", low), ("high", high)):
        if isinstance(bound, bool) or not isinstance(bound, (int, float, np.integer, np.floating)):
            raise LHStarError(f"select's {name} bound is a number (tails are integers), got "
                              f"{type(bound).__name__} {bound!r:.40}")
    work = Work()
    fragments = _each_machine(sdds, "select_range", work, args=(low, high))
    plan = Plan("select", {"broadcast to every bucket": 0}, "broadcast to every bucket",
                "an SDDS is scanned where it is stored")
    if gather:
        for rows in fragments.values():
            work.ship(len(rows))
        return Result({-1: np.concatenate(list(fragments.values())) if fragments
                       else np.empty(0, dtype=PAIR)}, False, plan, work)
    work.messages += len(fragments)  # each bucket reports its fragment's handle
    return Result(fragments, True, plan, work)


def join(left, right, strategy: str | None = None) -> Result:
    """``{(a, d) | (a, b) in left, (c, d) in right, b = c}`` where either side, or both, is an
    SDDS (an ``LHStarFile`` of integer pairs) or a BAT (``bat(...)``).

    The operator chooses how to move the data by itself (live optimization); ``strategy``
    ("broadcast", "hash-partition", "redistribute" or "materialize") imposes one instead, as
    the LH* paper's Section 5 experiments did ("all other data is broadcasted to all nodes").
    ``explain()`` then says the strategy was imposed."""
    left_sdds, right_sdds = isinstance(left, LHStarFile), isinstance(right, LHStarFile)
    if left_sdds and not right_sdds:
        return _join_sdds_bat(left, _check_bat(right, "join's right side"), strategy)
    if right_sdds and not left_sdds:
        return _join_bat_sdds(_check_bat(left, "join's left side"), right, strategy)
    if left_sdds and right_sdds:
        return _join_sdds_sdds(left, right, strategy)
    raise LHStarError("join needs at least one SDDS; join two BATs with numpy or DuckDB")


def _join_sdds_bat(sdds: LHStarFile, table: np.ndarray, strategy: str | None = None) -> Result:
    work = Work()
    sizes = _sizes(sdds, work)
    plan = _choose("join(SDDS, BAT)", {
        "broadcast the BAT to every server machine": len(table) * PAIR_BYTES * sdds.machines,
        "materialize the SDDS at the front": sum(sizes.values()) * PAIR_BYTES}, strategy)
    if plan.chosen.startswith("broadcast"):
        for _ in range(sdds.machines):
            work.ship(len(table))
        fragments = _each_machine(sdds, "join_tails", work, args=(table,))
        return Result(fragments, True, plan, work)
    whole = _materialize(sdds, work)
    work.scanned[-1] += len(whole) + len(table)
    return Result({-1: equi_join(whole, "tail", table, "head")}, False, plan, work)


def _join_bat_sdds(table: np.ndarray, sdds: LHStarFile, strategy: str | None = None) -> Result:
    work = Work()
    sizes = _sizes(sdds, work)
    plan = _choose("join(BAT, SDDS)", {
        "hash-partition the BAT onto the SDDS's buckets": len(table) * PAIR_BYTES,
        "broadcast the BAT to every server machine": len(table) * PAIR_BYTES * sdds.machines,
        "materialize the SDDS at the front": sum(sizes.values()) * PAIR_BYTES}, strategy)
    if plan.chosen.startswith("hash"):
        return _redistribute_onto(table, sdds, work, plan)
    if plan.chosen.startswith("broadcast"):
        for _ in range(sdds.machines):
            work.ship(len(table))
        fragments = _each_machine(sdds, "probe_heads", work, args=(table,))
        return Result(fragments, True, plan, work)
    whole = _materialize(sdds, work)
    work.scanned[-1] += len(whole) + len(table)
    return Result({-1: equi_join(table, "tail", whole, "head")}, False, plan, work)


def _redistribute_onto(rows: np.ndarray, sdds: LHStarFile, work: Work, plan: Plan) -> Result:
    """Send each row (a, b) to the bucket of ``sdds`` that holds head b, and join there."""
    work.messages += 2  # the file state, from the coordinator
    destination = _route(sdds, rows["tail"])
    routed = {int(a): rows[destination == a] for a in np.unique(destination) if a >= 0}
    for part in routed.values():
        work.ship(len(part))
    per_machine = [(m,) for m in _by_machine(sdds, routed)]
    fragments = _each_machine(sdds, "join_heads", work, per_machine_args=per_machine)
    return Result(fragments, True, plan, work)


def _join_sdds_sdds(left: LHStarFile, right: LHStarFile, strategy: str | None = None) -> Result:
    work = Work()
    left_size = sum(_sizes(left, work).values())
    right_size = sum(_sizes(right, work).values())
    plan = _choose("join(SDDS, SDDS)", {
        "redistribute the left SDDS onto the right one's buckets": left_size * PAIR_BYTES,
        "broadcast the right SDDS to the left one's machines":
            right_size * PAIR_BYTES * left.machines,
        "materialize both at the front": (left_size + right_size) * PAIR_BYTES}, strategy)
    if plan.chosen.startswith("redistribute"):
        rows = np.concatenate([p for m in range(left.machines)
                               for p in left._call_machine(m, "pairs").values()]
                              or [np.empty(0, dtype=PAIR)])
        return _redistribute_onto(rows, right, work, plan)  # each left bucket sends its rows
    if plan.chosen.startswith("broadcast"):
        whole_right = _materialize(right, work)
        for _ in range(left.machines - 1):  # the first copy was counted by the gathering
            work.ship(len(whole_right))
        fragments = _each_machine(left, "join_tails", work, args=(whole_right,))
        return Result(fragments, True, plan, work)
    a, b = _materialize(left, work), _materialize(right, work)
    work.scanned[-1] += len(a) + len(b)
    return Result({-1: equi_join(a, "tail", b, "head")}, False, plan, work)


def co_located(a: LHStarFile, b: LHStarFile) -> bool:
    """True when equal keys of ``a`` and ``b`` are on the same machine: the two files have the
    same state, key hashing and N0, and map buckets to the same number of machines (the LH*
    paper's shared logical-to-physical mapping, Section 3.3)."""
    return (a.state == b.state and a.machines == b.machines and a.hashed == b.hashed
            and a.n0 == b.n0)


def semijoin(sdds: LHStarFile, other) -> Result:
    """``{(a, b) in sdds | a is a head of other}``; ``other`` is an SDDS or a BAT. The result
    is a subset of ``sdds``, distributed as ``sdds`` is."""
    _check_file(sdds, "semijoin's left side")
    work = Work()
    if isinstance(other, LHStarFile) and co_located(sdds, other):
        plan = Plan("semijoin(SDDS, SDDS)", {"local semijoin on each bucket": 0},
                    "local semijoin on each bucket",
                    "both files share a mapping: equal heads are on the same machine")
        heads = {a: p["head"] for m in range(other.machines)
                 for a, p in other._call_machine(m, "pairs").items()}
        work.messages += other.machines  # each machine reads its own bucket of the other file
    else:
        if isinstance(other, LHStarFile):
            other_pairs = np.concatenate([p for m in range(other.machines)
                                          for p in other._call_machine(m, "pairs").values()]
                                         or [np.empty(0, dtype=PAIR)])
            name = "semijoin(SDDS, SDDS)"
        else:
            other_pairs = _check_bat(other, "semijoin's right side")
            name = "semijoin(SDDS, BAT)"
        plan = Plan(name, {"route the other side's heads to the SDDS's buckets":
                           len(other_pairs) * 8}, "route the other side's heads to the SDDS's "
                    "buckets", "only the heads are needed, at the buckets that hold them")
        work.messages += 2  # the file state
        destination = _route(sdds, other_pairs["head"])
        heads = {int(a): other_pairs["head"][destination == a] for a in np.unique(destination)
                 if a >= 0}
        for h in heads.values():
            work.bytes_moved += len(h) * 8
            work.messages += 1
    per_machine = [(m,) for m in _by_machine(sdds, heads)]
    fragments = _each_machine(sdds, "semijoin_heads", work, per_machine_args=per_machine)
    return Result(fragments, True, plan, work)
