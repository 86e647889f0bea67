"""The typed parallel plan: the fragments the coordinator ships to the nodes, and their phases.

Gamma's host compiles a query into operator trees and its scheduler starts each operator on
the processors that run it (DeWitt et al. 1988, Section 2, "Query Execution"). Here one
*fragment* is the work of one operator process on one node:

* a **source**: ``Scan`` (the node's fragment of a relation, through the single-node planner's
  access path), ``Receive`` (the tuples other nodes' split tables send), ``Join`` (a join plug-in
  over two such inputs), ``ReadSpool`` (overflow files the node kept, Section 6), ``Arrays``;
* **steps** applied one after the other: ``Projection``, ``Selection``, ``Aggregation``,
  ``DuplicateElimination``, ``Averages`` (AVG = sum / count), ``OverflowTest`` (Gamma's
  overflow resolution at a producer of the probe relation);
* a **sink**: ``SplitTo`` (a split table to other nodes: partition or broadcast), ``ToHost``,
  ``StoreInto`` (a local relation) or ``Hold`` (kept in memory for a later phase).

A *phase* is the set of fragments started together; the scheduler waits until all of them
end. The plan objects are plain dataclasses: they check themselves when they are made, print
as a tree (``explain``), and are what the nodes receive (pickled as they are for Ray), so a
test can build and inspect a plan without running it. ``minidb.cluster.node.build_tree``
turns a fragment into an operator tree; ``check_exchanges`` tests that the producers and
consumers a plan names agree before any node runs it (a mismatch would otherwise leave a
receiver waiting for a producer that never comes).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from minidb.errors import MinidbError

# -- sources ----------------------------------------------------------------------------------


@dataclass
class Scan:
    """Read the node's fragment of ``table`` through the access path the single-node planner
    picks for ``filters`` (heap or index); ``with_rids`` adds each tuple's record id."""

    table: str
    filters: list = field(default_factory=list)
    with_rids: bool = False

    def lines(self) -> list[str]:
        where = f" where {' AND '.join(str(f) for f in self.filters)}" if self.filters else ""
        return [f"scan {self.table}{where}"]


@dataclass
class Receive:
    """The tuples the split tables of ``producers`` send through exchange ``exchange``."""

    exchange: str
    producers: list[int]
    schema: Any  # minidb.storage.schema.Schema

    def lines(self) -> list[str]:
        return [f"receive {self.exchange} from nodes {list(self.producers)}"]


@dataclass
class Join:
    """Join ``build`` and ``probe`` on ``build_key = probe_key`` with the join plug-in class
    ``algorithm`` (``minidb.exec.join.base.JoinAlgorithm``); ``outer`` keeps every probe tuple,
    ``condition`` is a further predicate on a matching pair, ``distributed`` makes a Simple hash
    join a processor of Gamma's distributed overflow resolution (``minidb.cluster.overflow``),
    ``bit_filter_bits`` builds a bit-vector filter of that many bits over the build input
    (``minidb.parallel.bitfilter``)."""

    build: Any
    probe: Any
    build_key: str
    probe_key: str
    algorithm: type
    outer: bool = False
    condition: Any = None
    distributed: dict | None = None
    bit_filter_bits: int | None = None

    def __post_init__(self) -> None:
        for name in ("build", "probe"):
            _check(isinstance(getattr(self, name), SOURCES), f"a join's {name} input must be a "
                   f"source, not {type(getattr(self, name)).__name__}")
        _check(isinstance(self.build_key, str) and isinstance(self.probe_key, str),
               "a join's keys must be column names")
        _check(isinstance(self.algorithm, type), "a join names its plug-in class")

    def lines(self) -> list[str]:
        kind = getattr(self.algorithm, "kind", self.algorithm.__name__)
        how = "left outer join" if self.outer else "join"
        extra = f" and {self.condition}" if self.condition is not None else ""
        overflow = (f", overflow pass {self.distributed['level']} spread over the nodes"
                    if self.distributed is not None else "")
        bits = (f", building a {self.bit_filter_bits}-bit filter"
                if self.bit_filter_bits is not None else "")
        out = [f"{how} {kind} on {self.build_key} = {self.probe_key}{extra}{overflow}{bits}"]
        for label, side in (("build", self.build), ("probe", self.probe)):
            first, *rest = side.lines()
            out += [f"  {label}: {first}"] + [f"  {line}" for line in rest]
        return out


@dataclass
class ReadSpool:
    """Read back the overflow files the node keeps under ``name``."""

    name: str
    schema: Any

    def lines(self) -> list[str]:
        return [f"read overflow files {self.name}"]


@dataclass
class Arrays:
    """Tuples handed over with the plan."""

    schema: Any
    records: Any

    def lines(self) -> list[str]:
        return [f"{len(self.records)} tuples given with the plan"]


@dataclass
class Local:
    """A join input read on the join's own node: ``source`` (a ``Scan``) with ``steps`` applied
    (NonStop SQL's co-located and broadcast joins read one or both tables where they lie)."""

    source: Any
    steps: list = field(default_factory=list)

    def __post_init__(self) -> None:
        _check(isinstance(self.source, Scan), "a local join input reads a Scan")
        for step in self.steps:
            _check(isinstance(step, STEPS), f"unknown step {step!r} on a local join input")

    def lines(self) -> list[str]:
        out, depth = [], 0
        for step in reversed(self.steps):
            out += ["  " * depth + line for line in step.lines()]
            depth += 1
        return out + ["  " * depth + line for line in self.source.lines()]


SOURCES = (Scan, Receive, Join, ReadSpool, Arrays, Local)

# -- steps ------------------------------------------------------------------------------------


@dataclass
class Projection:
    outputs: list  # (name, expression) pairs

    def lines(self) -> list[str]:
        cols = ", ".join(n if str(e) == n else f"{e} AS {n}" for n, e in self.outputs)
        return [f"project {cols}"]


@dataclass
class Selection:
    predicate: Any

    def lines(self) -> list[str]:
        return [f"filter {self.predicate}"]


@dataclass
class Aggregation:
    group_by: list[str]
    aggregates: list  # (output, function, argument) as minidb.exec.aggregate.HashAggregate takes

    def lines(self) -> list[str]:
        what = ", ".join(f"{func}({'*' if arg is None else arg}) AS {out}"
                         for out, func, arg in self.aggregates)
        by = f" by {', '.join(self.group_by)}" if self.group_by else ""
        return [f"aggregate {what or 'nothing'}{by}"]


@dataclass
class DuplicateElimination:
    """Drop duplicate tuples (a hash aggregation grouping on every column)."""

    def lines(self) -> list[str]:
        return ["drop duplicates"]


@dataclass
class Averages:
    columns: list  # (output, sum column, count column)

    def lines(self) -> list[str]:
        return [f"average {', '.join(f'{o} = {s} / {c}' for o, s, c in self.columns)}"]


@dataclass
class OverflowTest:
    """Gamma's overflow test at a producer of the probe relation (Section 6): a tuple routed by
    ``partitioner`` to a consumer that overflowed, whose ``h_level`` value of ``key`` is at or
    above that consumer's cut (``cuts``, one per consumer, None: no overflow), is written to
    the overflow file ``name`` instead of being sent."""

    key: str
    level: int
    cuts: list
    partitioner: Any
    name: str

    def lines(self) -> list[str]:
        return [f"spool {self.key} at or above the overflow cuts of h_{self.level} to {self.name}"]


@dataclass
class BitFilterTest:
    """Gamma's bit-vector filters at a producer of the probe relation (Section 2): a tuple
    routed by ``partitioner`` to join site i is sent only if its ``key``'s bit is set in
    ``filters[i]`` (``minidb.parallel.bitfilter.BitFilter``, one per site)."""

    key: str
    partitioner: Any
    filters: list

    def lines(self) -> list[str]:
        return [f"drop {self.key} values the bit filters of {len(self.filters)} join sites "
                "rule out"]


STEPS = (Projection, Selection, Aggregation, DuplicateElimination, Averages, OverflowTest,
         BitFilterTest)

# -- sinks ------------------------------------------------------------------------------------


@dataclass
class SplitTo:
    """A split table: ``partition`` sends each tuple to ``consumers[partitioner.route(t)]``,
    ``broadcast`` sends every tuple to every consumer."""

    exchange: str
    consumers: list[int]
    partitioner: Any = None
    mode: str = "partition"

    def __post_init__(self) -> None:
        _check(self.mode in ("partition", "broadcast"),
               f"a split table partitions or broadcasts, not {self.mode!r}")
        _check(self.mode == "broadcast" or self.partitioner is not None,
               "a partitioning split table needs its partitioner")
        _check(len(self.consumers) > 0, "a split table needs at least one consumer")

    def lines(self) -> list[str]:
        how = "broadcast" if self.mode == "broadcast" else self.partitioner.describe()
        return [f"{how} to nodes {list(self.consumers)} via {self.exchange}"]


@dataclass
class ToHost:
    def lines(self) -> list[str]:
        return ["to the host"]


@dataclass
class StoreInto:
    table: str

    def lines(self) -> list[str]:
        return [f"store into {self.table}"]


@dataclass
class Hold:
    """Keep the tuples in the node's memory under ``key`` for a later call."""

    key: str

    def lines(self) -> list[str]:
        return [f"hold as {self.key}"]


SINKS = (SplitTo, ToHost, StoreInto, Hold)

# -- fragments and phases ---------------------------------------------------------------------


@dataclass
class Fragment:
    """One operator process's work on a node: ``source``, then ``steps``, into ``sink`` (None
    while the coordinator is still deciding, e.g. to learn the output schema first)."""

    id: str
    source: Any
    steps: list = field(default_factory=list)
    sink: Any = None
    hint: Any = None  # the statement's minidb.sql.hints.Hints (access paths on the node)

    def __post_init__(self) -> None:
        _check(isinstance(self.source, SOURCES),
               f"fragment {self.id}: a source must be one of "
               f"{', '.join(c.__name__ for c in SOURCES)}, not {type(self.source).__name__}")
        for step in self.steps:
            _check(isinstance(step, STEPS), f"fragment {self.id}: unknown step {step!r}")
        _check(self.sink is None or isinstance(self.sink, SINKS),
               f"fragment {self.id}: unknown sink {self.sink!r}")

    def then(self, *steps) -> Fragment:
        """A copy with ``steps`` appended."""
        return replace(self, steps=[*self.steps, *steps])

    def into(self, sink) -> Fragment:
        """A copy with the sink ``sink``."""
        return replace(self, sink=sink)

    def explain(self, nodes: list[int] | None = None) -> str:
        """The fragment as a tree, its root (the sink) first: each line is the input of the
        line above it; ``nodes``, the nodes that run it, goes on the first line."""
        where = f" on nodes {list(nodes)}" if nodes is not None else ""
        sink = self.sink.lines()[0] if self.sink is not None else "(no sink yet)"
        out = [f"[{self.id}]{where} -> {sink}"]
        depth = 1
        for step in reversed(self.steps):
            out += ["  " * depth + line for line in step.lines()]
            depth += 1
        out += ["  " * depth + line for line in self.source.lines()]
        return "\n".join(out)


@dataclass
class Phase:
    """The fragments a phase started, each with the nodes that run it."""

    name: str
    fragments: list[tuple[Fragment, list[int]]]

    def explain(self) -> str:
        out = [f"phase {self.name}:"]
        for fragment, nodes in self.fragments:
            out += [f"  {line}" for line in fragment.explain(nodes).splitlines()]
        return "\n".join(out)


def exchanges(fragments: list[tuple[Fragment, list[int]]]) -> tuple[dict, dict]:
    """The split tables (exchange -> (fragment, nodes)) and receivers (exchange -> list of
    (Receive, fragment, nodes)) of ``fragments``, however deeply a receive is nested."""
    splits, receives = {}, {}
    for fragment, nodes in fragments:
        if isinstance(fragment.sink, SplitTo):
            splits[fragment.sink.exchange] = (fragment, list(nodes))
        for source in _sources(fragment.source):
            if isinstance(source, Receive):
                receives.setdefault(source.exchange, []).append((source, fragment, list(nodes)))
    return splits, receives


def check_exchanges(fragments: list[tuple[Fragment, list[int]]]) -> None:
    """Raise if an exchange's two ends disagree: a receiver must name as producers exactly the
    nodes that run the split table's fragment, and the split table must name as consumers
    exactly the nodes that run the receiver. Exchanges whose other end is not among
    ``fragments`` (a node method such as UPDATE's moved tuples) are not checked."""
    splits, receives = exchanges(fragments)
    for exchange, ends in receives.items():
        if exchange not in splits:
            continue
        producer, producer_nodes = splits[exchange]
        for receive, fragment, nodes in ends:
            _check(sorted(receive.producers) == sorted(producer_nodes),
                   f"internal error: {fragment.id} receives {exchange} from nodes "
                   f"{sorted(receive.producers)}, but {producer.id} runs on {sorted(producer_nodes)}")
            _check(sorted(producer.sink.consumers) == sorted(nodes),
                   f"internal error: {producer.id} sends {exchange} to nodes "
                   f"{sorted(producer.sink.consumers)}, but {fragment.id} runs on {sorted(nodes)}")


def _sources(source) -> list:
    if isinstance(source, Join):
        return [source, *_sources(source.build), *_sources(source.probe)]
    if isinstance(source, Local):
        return [source, *_sources(source.source)]
    return [source]


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise MinidbError(message if message.startswith("internal error") else
                          f"invalid parallel plan: {message}")


__all__ = [
    "Aggregation", "Arrays", "Averages", "BitFilterTest", "DuplicateElimination", "Fragment",
    "Hold", "Join", "Local", "OverflowTest", "Phase", "Projection", "ReadSpool", "Receive", "Scan", "Selection", "SplitTo",
    "StoreInto", "ToHost", "check_exchanges", "exchanges",
]
