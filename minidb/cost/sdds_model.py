"""Modeled time of a query over an LH* file on a network of workstations (LH* paper, Section 5).

The LH* paper measures four queries over ``big``, an LH* file of integer pairs spread over one
or more SGI O2 workstations, with ``t5``, a 100,000-pair table, at the front node (Section 5):

* ``select(5)`` and ``select(1, 10)``: every server scans its whole partition (Section 5.1:
  "The operator select uses scanning of the whole LH*-table");
* ``join(t5, big)``: on ``t5.tail = big.head``; ``big``'s heads are its LH* keys, so each server
  looks the broadcast ``t5`` up in its buckets by key and reads only the entries it finds;
* ``join(big, t5)``: on ``big.tail = t5.head``; each server builds a hash table on the broadcast
  ``t5`` and scans its whole partition, probing it with every entry.

Section 5.1 says how the experiments move data: "All other data is broadcasted to all nodes,
which execute the operators in parallel, sending back the results. Then the results are
combined", and the times include collecting the result at the front node. Monet runs one
operator at a time and materializes every intermediate (Section 4.1), so the phases below add
up rather than overlap.

What this module prices is counted by the experiment (``minidb.experiments.lhstar``) from the
LH* file itself: per server, the entries it holds, scans, probes and returns, the hash entries it
builds, and the virtual-memory pages its query touched. The price of each is a constant of the
hardware profile (``minidb.cost.profiles``, ``sgi_o2``):

``local`` (the file on the front node itself, Section 5.1)::

    T = cpu + faults x page_fault_ms

``remote`` (the file on ``n`` other nodes, Sections 5.2 and 5.3)::

    T = n x control_message_ms                    the front sends the operator to each node
      + operator_startup_ms                       the nodes start it (in parallel)
      + n x wire(t5)                              t5 leaves the front's interface once per node
      + max over nodes (receive(t5) + cpu + faults x page_fault_ms)
      + wire(results) + receive(results)          every node's result reaches the front
      + n x control_message_ms                    each node reports its end

with ``cpu = instructions / mips``, ``wire(x) = bytes / net_mbit_s`` and ``receive(x) = KiB x
receive_ms_per_kb``. A node's pages fault only when its partition exceeds the memory the node
leaves for data (``data_memory_bytes``); then, under LRU, every page a query touches faults:
a scan sweeps the partition in the same order each time, so the page it needs next is always the
one evicted longest ago (the sequential flooding that makes LRU the worst policy for cyclic
scans). Section 5.1's second table shows exactly that: from 48 MB on, the faults of a
``select(1, 10)`` track the file's size page for page.

An entry is 8 bytes, two 32-bit integers: the paper's file sizes are 8 MB per million entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minidb.cost.profiles import HardwareProfile

ENTRY_BYTES = 8
"""Bytes of one (int, int) entry (LH* paper §5: 1 M entries make an 8 MB file)."""

QUERIES = ("select_5", "select_1_10", "join_t5_big", "join_big_t5")
"""The paper's four queries, named as the columns of its tables."""


@dataclass(frozen=True)
class NodeWork:
    """What one server did for one query, counted on the LH* file."""

    entries: int
    """Entries of the partition the node holds (what must fit in its memory)."""
    scanned: int = 0
    """Entries read one after the other (a scan, or the probing side of a hash join)."""
    probes: int = 0
    """Hash-table look-ups: a key looked up in the node's buckets, or an entry of the partition
    looked up in the hash table built on the broadcast table."""
    built: int = 0
    """Entries inserted into a hash table (the broadcast ``t5`` of ``join(big, t5)``)."""
    results: int = 0
    """Result entries the node produced (copied into its result table)."""
    pages_touched: int = 0
    """Distinct virtual-memory pages of the partition the query read."""
    received: int = 0
    """Entries the node received from the front (the broadcast table)."""


@dataclass(frozen=True)
class QueryWork:
    """One query's counted work: per node, and what crossed the network."""

    nodes: tuple[NodeWork, ...]
    remote: bool
    """False: the file lives on the front node and nothing crosses the network (§5.1)."""
    broadcast: int = 0
    """Entries sent to every node before it starts (``t5`` for the joins, 0 for a select)."""
    results: int = 0
    """Result entries gathered at the front node."""


@dataclass(frozen=True)
class QueryTime:
    """A query's modeled time (ms) and where it went."""

    total_ms: float
    parts: dict[str, float] = field(default_factory=dict)
    """Phase -> ms; the phases add up to ``total_ms``."""
    faults: int = 0
    """Page faults on the slowest node."""
    cpu_ms: float = 0.0
    """CPU time of the slowest node (user time: the paper's 'user' column)."""


def cpu_ms(profile: HardwareProfile, work: NodeWork) -> float:
    """CPU time of one node: instructions of scanning, hashing and copying at the profile's
    speed."""
    instructions = (work.scanned * profile.instr_scan
                    + (work.probes + work.built) * profile.instr_hash
                    + work.results * profile.instr_copy)
    return instructions / (profile.mips * 1e3)


def faults(profile: HardwareProfile, work: NodeWork, memory_bytes: float) -> int:
    """Page faults of one node: every page the query touched, once its partition no longer
    fits in ``memory_bytes`` (LRU under cyclic sweeps, see the module docstring); none before."""
    return work.pages_touched if work.entries * ENTRY_BYTES > memory_bytes else 0


def wire_ms(profile: HardwareProfile, entries: int) -> float:
    """Time for ``entries`` to pass one node's network interface."""
    return entries * ENTRY_BYTES * 8 / (profile.net_mbit_s * 1e3)


def receive_ms(profile: HardwareProfile, entries: int) -> float:
    """Time for a node to take ``entries`` off the network into a main-memory table."""
    return entries * ENTRY_BYTES / 1024 * profile.receive_ms_per_kb


def data_memory(profile: HardwareProfile, scale: float = 1.0) -> float:
    """Bytes a node leaves for a partition, times ``scale`` (a scaled run scales memory with the
    data, so a partition crosses it at the same relative size)."""
    memory = profile.data_memory_bytes or profile.memory_bytes
    return memory * scale


def price(profile: HardwareProfile, work: QueryWork, scale: float = 1.0) -> QueryTime:
    """The modeled time of ``work`` on ``profile`` (the formulas of the module docstring).

    ``scale`` < 1 prices a run on ``scale`` times the paper's data: memory and the fixed costs
    (messages, operator startup) are scaled with it, so the result divided by ``scale`` is the
    time at the paper's size (every other term is already proportional to the data)."""
    memory = data_memory(profile, scale)
    per_node = [(cpu_ms(profile, w), faults(profile, w, memory), w) for w in work.nodes]
    node_ms = [c + f * profile.page_fault_ms + (receive_ms(profile, w.received)
                                                 if work.remote else 0.0)
               for c, f, w in per_node]
    slowest = max(range(len(per_node)), key=lambda i: node_ms[i])
    cpu, fault_count, _ = per_node[slowest]
    if not work.remote:
        return QueryTime(node_ms[slowest], {"nodes": node_ms[slowest]}, fault_count, cpu)
    n = len(work.nodes)
    message = profile.control_message_ms * scale
    parts = {
        "dispatch": n * message,
        "startup": profile.operator_startup_ms * scale,
        "broadcast": n * wire_ms(profile, work.broadcast),
        "nodes": node_ms[slowest],
        "gather": wire_ms(profile, work.results) + receive_ms(profile, work.results),
        "replies": n * message,
    }
    return QueryTime(sum(parts.values()), parts, fault_count, cpu)
