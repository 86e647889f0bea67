"""Modeled time: how long the papers' hardware would have taken for the work minidb really did.

Every query reports two clocks (ARCHITECTURE.md, "Two clocks"): the wall time of the run, and
``modeled_s``, computed here from counters of work actually done (``WorkCounters``, one per node
and phase) and the constants of a ``HardwareProfile``. Nothing in this module knows a paper's
results; it only turns counts into seconds.

The formula
-----------
For each node in a phase (all times in seconds)::

    cpu_s     = ( sum over operator kinds k of  tuples[k] x instr[class of k]
                + buffer_calls x instr_buffer_call
                + (packets_sent_remote + packets_received) x instr_packet
                + control_messages x instr_control_message
                + bytes_short_circuited / 1024 x instr_short_circuit_kb ) / (mips x 10**6)
    disk_s    = (pages_read_random + pages_written_random) x (seek + rotation + transfer)
              + (pages_read_seq + pages_written_seq) x (seq_gap + transfer)
                where transfer = page_size / (disk_transfer_mb_s x 10**6)
                and seq_gap is the time lost before each page of a sequential run (a lost
                revolution on a drive read one page at a time, 0 with read-ahead)
    net_s     = bytes_sent_remote x 8 / (net_mbit_s x 10**6)
              + packets_sent_remote x packet_latency
    startup_s = operators_started x operator_startup
    busy_s    = max(cpu_s, disk_s, net_s) + (1 - overlap) x (cpu_s + disk_s + net_s - max(...))
    node_s    = startup_s + busy_s

Three mechanisms that only some machines have (0 in the other profiles) add to these:

* ``random_pages`` also counts ``tuples_inserted x insert_ios_per_tuple``: Teradata inserts one
  tuple at a time with its log, "at least 3 I/Os ... for each tuple inserted" (Gamma paper §4);
* ``random_pages`` also counts ``tuples_spooled x spool_ios_per_tuple``: Teradata's join stores
  each tuple it receives from another AMP into a temporary file kept in hash-key order, one
  tuple at a time (Gamma paper §6, "Join Algorithms");
* a node whose statement changed an index entry (``index_entries_changed``) pays
  ``deferred_update_ios`` random I/Os and one more operator (startup, and 3 scheduler messages at
  the coordinator): Gamma's deferred-update file for indexes (Gamma paper §8);
* each phase begins with ``step_overhead_ms`` per node that took part in it (read or wrote a
  page, processed a tuple), one node after another at the coordinator: Teradata's fixed cost of
  a query step, which its 10,000-tuple times show (Gamma paper, Tables 1 and 7).

A phase ends when its slowest node ends; if the nodes share one medium (a token ring, a bus, a
shared Ethernet: ``interconnect_mbit_s``), the phase also lasts at least as long as that medium
needs to carry every node's remote bytes::

    phase_s = dispatch_s + max( max over nodes of node_s,
                                sum over nodes of bytes_sent_remote x 8 / interconnect )
    total_s = sum over phases of phase_s + coordinator_messages x control_message

``overlap`` (0..1) says how much of a node's CPU, disk and network time runs at the same time:
1 means perfect overlap (read-ahead, DMA and operators as concurrent processes: the node takes as
long as its busiest resource), 0 means none (the parts add up). The default is 1, because the
systems modeled are built to overlap (Gamma runs every operator as its own process in a dataflow
and reads ahead; NonStop SQL's disc process reads ahead asynchronously so it "never waits for
disc"; Volcano's exchange runs producers and consumers as separate processes), and because the
papers explain their own results in terms of the one resource that bounds a node (Gamma §5.2:
"disk bound", "CPU bound", the network interface as the bottleneck). 1 is also the value that
involves no fitting. Lower it to see how sensitive a result is to that assumption.

Short-circuited packets (sent to an operator on the same node) cost only the memory copy, on the
CPU; they use neither the network interface nor the protocol code.

On a machine whose processor moves each packet to the network interface itself
(``net_cpu_share`` > 0: Gamma's VAX on its Unibus), that share of ``net_s`` is added to
``cpu_s``: sending and computing add up instead of overlapping (``net_s`` still shows the
interface's whole time, and the sum under ``overlap`` < 1 counts it once).

Operator startup is charged to each node by default (``startup="per_node"``: every node starts
its own operators, in parallel with the other nodes). ``startup="serial"`` models one scheduler
that starts the operators of the phase one node after another (Gamma's scheduler sends four
messages per operator and node, §6.2.3; NonStop SQL Release 2 starts its executors one after the
other, text under Figure 6): the phase then begins with the sum of all nodes' startup times.

Simplifications (on purpose)
----------------------------
* Sequential pages pay their transfer and the profile's fixed gap (no track-to-track seeks).
  Random pages pay a full average seek and half a revolution.
* Writes cost as much as reads; mirrored or logged writes are not doubled.
* Instruction counts per unit of work are fixed averages; caches, pipelines and contention
  (for a lock, for a shared bus between two disks on one channel) are not modeled.
* The network interface is charged on the sending node only; the receiving node pays the protocol
  CPU (``packets_received``). A shared medium is modeled by its aggregate bandwidth only (no
  collisions, no token waits).
* Within a phase every node starts at time 0; pipelining between phases is not modeled (a phase
  is a barrier).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields

from minidb.cost.profiles import HardwareProfile, get_profile
from minidb.errors import MinidbError

DEFAULT_OVERLAP = 1.0
"""Default overlap of CPU, disk and network within a node and phase (see the module docstring)."""

DEFERRED_APPLY_MESSAGES = 3
"""Scheduler messages for the operator that applies a deferred-update file on one node: start,
reply, completion (Gamma §2, as for every operator)."""

# Operator kind (as counted by the executor) -> the profile's instruction field that prices it.
OPERATOR_COST_FIELD: dict[str, str] = {
    "heap_scan": "instr_scan",
    "index_scan": "instr_scan",
    "scan": "instr_scan",
    "filter": "instr_scan",
    "select": "instr_scan",
    "hash_build": "instr_hash",
    "hash_probe": "instr_hash",
    "partition": "instr_hash",
    "bit_filter": "instr_hash",
    "aggregate": "instr_aggregate",
    "sort_compare": "instr_compare",
    "merge_compare": "instr_compare",
    "store": "instr_copy",
    "project": "instr_copy",
    "copy": "instr_copy",
    "result": "instr_copy",
}


class UnknownOperatorKindError(MinidbError):
    """A counter names an operator kind the cost model cannot price."""


def register_operator_kind(kind: str, cost_field: str) -> None:
    """Price tuples of operator ``kind`` with the profile's ``cost_field`` (e.g. ``instr_hash``)."""
    valid = sorted(set(OPERATOR_COST_FIELD.values()))
    if cost_field not in valid:
        raise ValueError(f"cost field {cost_field!r} is not one of: {', '.join(valid)}")
    OPERATOR_COST_FIELD[kind] = cost_field


@dataclass
class WorkCounters:
    """Work done by one node in one phase. Every field is a count; ``+`` adds counters."""

    pages_read_seq: int = 0
    """Pages read from disk in sequence (a scan with read-ahead)."""
    pages_read_random: int = 0
    """Pages read from disk at a random place (an index probe, a seek for each page)."""
    pages_written_seq: int = 0
    """Pages written in sequence (storing a result, spooling a run or a partition)."""
    pages_written_random: int = 0
    """Pages written at a random place (an update in place)."""
    tuples: dict[str, int] = field(default_factory=dict)
    """Tuples processed, by operator kind (keys of ``OPERATOR_COST_FIELD``); for sorting,
    ``sort_compare`` counts comparisons."""
    packets_sent_remote: int = 0
    """Packets sent to another node (through the network interface)."""
    bytes_sent_remote: int = 0
    """Bytes in those packets."""
    packets_short_circuited: int = 0
    """Packets delivered to an operator on the same node (no network)."""
    bytes_short_circuited: int = 0
    """Bytes in those packets."""
    packets_received: int = 0
    """Packets received from other nodes (short-circuited ones are not counted here)."""
    control_messages: int = 0
    """Control messages this node sent or received (end of stream, done, bit filters), beyond
    the ones that start its operators (those are in ``operators_started``)."""
    buffer_calls: int = 0
    """Buffer-manager fix/unfix pairs (one per page handled)."""
    operators_started: int = 0
    """Operators started on this node in this phase."""
    tuples_inserted: int = 0
    """Tuples inserted into a stored relation (INSERT, CREATE TABLE AS, a moved tuple); the
    profile's ``insert_ios_per_tuple`` prices each with that many random I/Os."""
    tuples_spooled: int = 0
    """Tuples a join received from another node and stored one at a time into a temporary file
    kept in hash-key order (Teradata); the profile's ``spool_ios_per_tuple`` prices each."""
    index_entries_changed: int = 0
    """Index entries added or removed by an INSERT, UPDATE or DELETE; a node with any pays the
    profile's deferred-update file (``deferred_update_ios``) once per phase."""

    def took_part(self) -> bool:
        """True when the node read or wrote a page or processed a tuple in this phase."""
        pages = (self.pages_read_seq + self.pages_read_random + self.pages_written_seq
                 + self.pages_written_random)
        return bool(pages or any(self.tuples.values()) or self.tuples_inserted
                    or self.tuples_spooled)

    def add_tuples(self, kind: str, n: int) -> None:
        """Count ``n`` more tuples for operator ``kind``."""
        self.tuples[kind] = self.tuples.get(kind, 0) + n

    def __add__(self, other: WorkCounters) -> WorkCounters:
        if not isinstance(other, WorkCounters):
            return NotImplemented
        summed = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
            if f.name != "tuples"
        }
        tuples = dict(self.tuples)
        for kind, n in other.tuples.items():
            tuples[kind] = tuples.get(kind, 0) + n
        return WorkCounters(tuples=tuples, **summed)

    def __radd__(self, other: object) -> WorkCounters:
        if other == 0:  # so that sum(counters) works
            return WorkCounters() + self
        return NotImplemented

    def as_dict(self) -> dict[str, object]:
        """Plain dict of every counter (for results rows and for sending between processes)."""
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["tuples"] = dict(self.tuples)
        return out


@dataclass(frozen=True)
class NodeTime:
    """Modeled time of one node in one phase, by resource (seconds)."""

    node: Hashable
    cpu_s: float
    disk_s: float
    net_s: float
    startup_s: float
    busy_s: float
    """CPU, disk and network combined under the overlap assumption."""
    total_s: float
    """``startup_s + busy_s`` (``busy_s`` alone when startup is serial)."""
    bottleneck: str
    """The part that bounded the node: "cpu", "disk", "net", "startup" or "idle"."""
    insert_ios: float = 0.0
    """Random I/Os charged for tuple-at-a-time inserts and spooled tuples (in ``disk_s``)."""
    deferred_update_ios: float = 0.0
    """Random I/Os charged for a deferred-update file (in ``disk_s``)."""


@dataclass(frozen=True)
class PhaseTime:
    """Modeled time of one phase: the slowest node, or the shared interconnect."""

    index: int
    name: str
    nodes: dict[Hashable, NodeTime]
    startup_s: float
    """Serial startup before the nodes run (0 unless ``startup="serial"``)."""
    interconnect_s: float
    """Time the shared medium needs for all remote bytes of the phase (0 if switched)."""
    total_s: float
    slowest_node: Hashable | None
    bottleneck: str
    """The slowest node's bottleneck, or "interconnect" when the shared medium bounded the phase."""
    dispatch_s: float = 0.0
    """Serial coordinator time for the nodes that took part (``step_overhead_ms`` each)."""


@dataclass(frozen=True)
class ModeledTime:
    """The modeled time of a query with its breakdown by phase, node and resource."""

    profile: str
    page_size: int
    overlap: float
    startup: str
    phases: list[PhaseTime]
    coordinator_s: float
    total_s: float

    def rows(self) -> list[dict[str, object]]:
        """One tidy row per phase and node (for the explorer and the results store)."""
        out: list[dict[str, object]] = []
        for phase in self.phases:
            for node in phase.nodes.values():
                out.append(
                    {
                        "profile": self.profile,
                        "phase": phase.index,
                        "phase_name": phase.name,
                        "node": node.node,
                        "cpu_s": node.cpu_s,
                        "disk_s": node.disk_s,
                        "net_s": node.net_s,
                        "startup_s": node.startup_s,
                        "busy_s": node.busy_s,
                        "node_s": node.total_s,
                        "bottleneck": node.bottleneck,
                        "phase_s": phase.total_s,
                        "slowest": node.node == phase.slowest_node,
                    }
                )
        return out

    def explain(self) -> str:
        """A few lines: the total, each phase and what bounded it, each node's parts."""
        lines = [
            f"modeled on {self.profile} (page {self.page_size} B, overlap {self.overlap:g}, "
            f"startup {self.startup}): {self.total_s:.3f} s"
        ]
        for phase in self.phases:
            bound = (
                "the shared interconnect"
                if phase.bottleneck == "interconnect"
                else f"node {phase.slowest_node} ({phase.bottleneck})"
            )
            lines.append(
                f"  phase {phase.index} {phase.name}: {phase.total_s:.3f} s, bounded by {bound}"
            )
            if phase.startup_s:
                lines.append(f"    serial startup {phase.startup_s:.3f} s")
            if phase.dispatch_s:
                lines.append(f"    step overhead at the coordinator {phase.dispatch_s:.3f} s")
            if phase.interconnect_s:
                lines.append(f"    interconnect {phase.interconnect_s:.3f} s")
            for n in phase.nodes.values():
                lines.append(
                    f"    node {n.node}: cpu {n.cpu_s:.3f}  disk {n.disk_s:.3f}  "
                    f"net {n.net_s:.3f}  startup {n.startup_s:.3f}  -> {n.total_s:.3f} s "
                    f"[{n.bottleneck}]"
                    + (f" incl. {n.insert_ios:g} insert I/Os" if n.insert_ios else "")
                    + (f" incl. {n.deferred_update_ios:g} deferred-update I/Os"
                       if n.deferred_update_ios else "")
                )
        if self.coordinator_s:
            lines.append(f"  coordinator messages: {self.coordinator_s:.3f} s")
        return "\n".join(lines)


def node_time(
    node: Hashable,
    work: WorkCounters,
    profile: HardwareProfile,
    page_size: int,
    overlap: float = DEFAULT_OVERLAP,
    charge_startup: bool = True,
) -> NodeTime:
    """Modeled time of one node's work in one phase (the per-node part of the formula)."""
    p = profile
    instructions = 0.0
    for kind, n in work.tuples.items():
        try:
            cost_field = OPERATOR_COST_FIELD[kind]
        except KeyError:
            known = ", ".join(sorted(OPERATOR_COST_FIELD))
            raise UnknownOperatorKindError(
                f"cost model cannot price operator kind {kind!r}; use one of: {known} "
                "(or register_operator_kind)"
            ) from None
        instructions += n * getattr(p, cost_field)
    instructions += work.buffer_calls * p.instr_buffer_call
    instructions += (work.packets_sent_remote + work.packets_received) * p.instr_packet
    instructions += work.control_messages * p.instr_control_message
    instructions += work.bytes_short_circuited / 1024 * p.instr_short_circuit_kb
    cpu_s = p.instructions_s(instructions)

    insert_ios = (work.tuples_inserted * p.insert_ios_per_tuple
                  + work.tuples_spooled * p.spool_ios_per_tuple)
    deferred_ios = p.deferred_update_ios if work.index_entries_changed else 0.0
    random_pages = work.pages_read_random + work.pages_written_random + insert_ios + deferred_ios
    seq_pages = work.pages_read_seq + work.pages_written_seq
    disk_s = random_pages * p.random_page_s(page_size) + seq_pages * p.sequential_page_s(page_size)

    net_s = (
        work.bytes_sent_remote * 8 / (p.net_mbit_s * 1e6)
        + work.packets_sent_remote * p.packet_latency_ms / 1e3
    )

    # applying a deferred-update file is one more operator on the node
    operators = work.operators_started + (1 if deferred_ios else 0)
    startup_s = operators * p.operator_startup_ms / 1e3
    # a processor that moves its packets to the interface itself cannot compute meanwhile:
    # that share of the interface's time is CPU time too (net_s still shows all of it)
    cpu_s += net_s * p.net_cpu_share
    parts = {"cpu": cpu_s, "disk": disk_s, "net": net_s}
    biggest = max(parts.values())
    total = cpu_s + disk_s + net_s * (1.0 - p.net_cpu_share)  # each second counted once
    busy_s = biggest + (1.0 - overlap) * (total - biggest)
    total_s = busy_s + (startup_s if charge_startup else 0.0)

    if biggest == 0.0 and startup_s == 0.0:
        bottleneck = "idle"
    elif charge_startup and startup_s > biggest:
        bottleneck = "startup"
    else:
        bottleneck = max(parts, key=lambda k: parts[k])
    return NodeTime(node, cpu_s, disk_s, net_s, startup_s, busy_s, total_s, bottleneck,
                    insert_ios, deferred_ios)


def modeled_time(
    phases: Sequence[Mapping[Hashable, WorkCounters]],
    profile: HardwareProfile | str,
    page_size: int,
    *,
    overlap: float = DEFAULT_OVERLAP,
    coordinator_messages: int = 0,
    startup: str = "per_node",
    phase_names: Sequence[str] | None = None,
) -> ModeledTime:
    """Turn per-node, per-phase counters into modeled seconds on ``profile``.

    ``phases`` is a list with one dict per phase, mapping node id to that node's counters.
    ``page_size`` is in bytes. ``coordinator_messages`` are control messages exchanged by the
    coordinator outside any node's phase work (each costs ``control_message_ms``, one after the
    other). ``startup`` is ``"per_node"`` or ``"serial"`` (see the module docstring).
    """
    prof = get_profile(profile)
    if not 0.0 <= overlap <= 1.0:
        raise ValueError(f"overlap must be between 0 and 1, got {overlap}")
    if page_size <= 0:
        raise ValueError(f"page_size must be a positive number of bytes, got {page_size}")
    if startup not in ("per_node", "serial"):
        raise ValueError(f"startup must be 'per_node' or 'serial', got {startup!r}")
    if phase_names is not None and len(phase_names) != len(phases):
        raise ValueError(f"{len(phase_names)} phase names for {len(phases)} phases")

    serial = startup == "serial"
    out: list[PhaseTime] = []
    deferred_nodes = 0
    for i, phase in enumerate(phases):
        nodes = {
            node: node_time(node, work, prof, page_size, overlap, charge_startup=not serial)
            for node, work in phase.items()
        }
        serial_startup_s = sum(n.startup_s for n in nodes.values()) if serial else 0.0
        dispatch_s = sum(w.took_part() for w in phase.values()) * prof.step_overhead_ms / 1e3
        deferred_nodes += sum(1 for n in nodes.values() if n.deferred_update_ios)
        if prof.interconnect_mbit_s is None:
            interconnect_s = 0.0
        else:
            remote_bytes = sum(w.bytes_sent_remote for w in phase.values())
            interconnect_s = remote_bytes * 8 / (prof.interconnect_mbit_s * 1e6)
        slowest = max(nodes.values(), key=lambda n: n.total_s, default=None)
        node_bound_s = slowest.total_s if slowest else 0.0
        if serial_startup_s > max(node_bound_s, interconnect_s):
            bottleneck = "startup"
        elif interconnect_s > node_bound_s:
            bottleneck = "interconnect"
        elif slowest is None:
            bottleneck = "idle"
        else:
            bottleneck = slowest.bottleneck
        out.append(
            PhaseTime(
                index=i,
                name=phase_names[i] if phase_names is not None else "",
                nodes=nodes,
                startup_s=serial_startup_s,
                interconnect_s=interconnect_s,
                total_s=dispatch_s + serial_startup_s + max(node_bound_s, interconnect_s),
                slowest_node=slowest.node if slowest else None,
                bottleneck=bottleneck,
                dispatch_s=dispatch_s,
            )
        )
    # each deferred-update operator is scheduled like any other (its messages are serial)
    messages = coordinator_messages + deferred_nodes * DEFERRED_APPLY_MESSAGES
    coordinator_s = messages * prof.control_message_ms / 1e3
    return ModeledTime(
        profile=prof.name,
        page_size=page_size,
        overlap=overlap,
        startup=startup,
        phases=out,
        coordinator_s=coordinator_s,
        total_s=sum(p.total_s for p in out) + coordinator_s,
    )
