"""Modeled time of Volcano's parallel sort on a shared-memory machine (Volcano paper §3-§7).

``price(run, profile)`` turns what a parallel sort counted (``minidb.volcano.psort``) into the
time the Sequent Symmetry of the paper would need. Each process alternates between work that is
its own and work at resources it shares with the others:

own       its CPU (instructions at ``mips``; §3.3 uses one process per CPU and per disk) and
          its disk arm: a sequential cluster waits ``disk_seq_gap_ms`` (raw devices, no
          read-ahead, §3.2), a random one a seek and half a revolution
shared    * the lock of every buffer pool it calls (§5): held ``lock_hold_unfix_us`` per
            record-unfix call and ``lock_hold_cluster_us`` per cluster-level call (a cluster
            entered or given up, which also updates the hash tables and the memory manager)
          * the disk channel of its disk (§3.1, §3.2: 1.8 MB/s per channel, ``disk_channels``
            channels, disk ``d`` on channel ``d mod disk_channels``): the transfer time
          * the system bus (§3.1: 53 MB/s for all CPUs): every byte a disk transfers and every
            record copied

The pool locks are spin locks, one byte of shared memory each (§6.1). A waiting process spins
on the byte with test-and-set, and on the Symmetry a test-and-set takes the byte's cache line
over the bus like a write (§3.1). So passing the lock on is not free when many wait: the
releasing and the next holder must win the line back from the spinners ("the hardware
negotiation for the exclusive ownership of this lock byte is relatively slow", §6.1; Anderson
1989, the paper's reference 36, measures the same for spin-on-test-and-set). The model charges
every lock call a handoff of ``spin_transfers`` line transfers (``cache_line_bytes`` over the
bus) per other process queued at that lock (``spin_handoff_s``): the lock is held up, the bus
carries the line, and nobody holds the lock meanwhile. The handoff counts as waiting (Table II's
"Total wait" ran from a request to its grant), not as holding. With no other process queued it
costs nothing.

The shared resources are queueing centres of a closed network with one customer per process,
solved by approximate mean value analysis (Bard and Schweitzer's iteration; Lazowska et al.,
*Quantitative System Performance*, 1984, §7.4): a process arriving at a centre finds the other
processes' mean queue there, so its time there is ``demand x (1 + others' queue)``. A process's
elapsed time is its own time plus its time at every centre; the sort's elapsed time is the
slowest process's plus starting the processes one after another. The lock numbers the paper
reports are sums over processes (Table II): total hold = the demands at the pool locks; total
wait = the time at the locks beyond the demand.

CPU path lengths are the profile's shared estimates (``instr_scan`` per record scanned,
``instr_compare`` per comparison, also ``ceil(log2 N)`` of them for the support function that
finds a record's key range, ``instr_copy`` per record copied, ``instr_packet`` per exchange
packet sent or received, ``instr_buffer_call`` per buffer-manager call) plus the gathering cost
of a grouped unfix (``GATHER_INSTRUCTIONS``) and ``instr_next_call`` per record passed up one
iterator (§2.1: every operator is an iterator, and a record climbs the plan by one ``next()``
call per operator). A process passes each record up three times, the same three passes that made
§5's 3,000,000 unfix calls: the file scan hands it to the exchange's producer, the exchange
hands it to the sort, and the sort hands it to the driver. ``instr_next_call`` is the one CPU
constant fitted to a published time (the profile gives its rule and cell); it stands for all
the per-record work of the iterators that the shared path lengths leave out (the call through
the support-function pointer, the state record, the record's descriptor).

Processor affinity (§6.2): each disk I/O a process issues (a cluster read or written) puts it to
sleep until the I/O completes, and the paper says its context switches were of this kind. Without
affinity DYNIX may wake it on any free CPU; the model takes each of the ``C`` CPUs (one per
process, §3.3) as equally likely, an estimate no source gives, so a wake-up lands on another CPU
with probability ``(C - 1) / C``. There the process finds a cache holding another process's data
and refills its own, ``cpu_cache_bytes`` over the bus (a sort's working set is far larger than
the 64 KB cache). With affinity (``price(..., affinity=True)``: DYNIX's firm binding, on from
§6.2) it always resumes where its cache is, and pays nothing. The refills are bus demand like
any other transfer, so they queue with the disks' and the copies' bytes.

The flush (§6.1) is the one phase priced on its own, by ``flush_phase``, and only when asked
for: ``price`` spreads a process's demands evenly over its run and leaves the flush calls out
(as before the flush was counted), so no other number moves. At the end the processes finish
together, and each requests its disk's pool lock to sweep the pool's table; process ``p``
requests it ``p x flush_stagger_ms`` after the end (``SortRun.flush_start_ms``). Each pool lock
serves these requests first come, first served, each holding it ``lock_hold_cluster_us`` (a
sweep priced as one cluster-level call: the paper gives no cost of its own), and each grant pays
the same handoff as above, ``spin_handoff_s`` per other process already spinning. All at once,
the requests queue and spin; staggered by more than one process's hold, each finds the lock
free ("staggered sufficiently to allow one process to acquire the lock before the next
request", §6.1). The flush's writes are I/O, done without the pool lock (§2.1), and already
priced with the driver's output.

Not modeled: cache effects other than the refill after a move to another CPU (the cache side of
record alignment, §4.2; cache misses of a process that stays where it is), the spinners' traffic slowing other transfers on the bus (the handoff is
charged to the lock it holds up, not queued at the bus centre as well), and phases other than
the flush (in ``price`` every demand is spread evenly over the run).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from minidb.cost.profiles import HardwareProfile
    from minidb.volcano.psort import SortRun

GATHER_INSTRUCTIONS = {"procedure": 30.0, "macro": 10.0}
"""estimate: instructions per record to gather an unfix in process-private space (§5.2): compare
the record's cluster with the entry, count it; a procedure adds a call and a return. No paper
gives them; §5.2 only says the macro was "a little faster"."""
HASH_GATHER_INSTRUCTIONS = 10.0
"""estimate: extra instructions per record to hash the cluster id when the table has more than
one entry (§5.2: "multiple entries have a higher computation cost for the hash function")."""

ITERATIONS = 500
TOLERANCE = 1e-9


@dataclass
class SortTime:
    """The modeled time of one parallel sort and where it went."""

    elapsed_s: float
    lock_hold_s: float
    """Total over processes of the time the pool locks were held (Table II "Total lock")."""
    lock_wait_s: float
    """Total over processes of the time spent waiting for a pool lock (Table II "Total wait")."""
    per_process: list[dict[str, float]] = field(default_factory=list)
    """Each process's own CPU and disk time and its time at each kind of shared centre."""

    @property
    def lock_hold_share(self) -> float:
        """Average over processes of the share of elapsed time a process held a lock (Fig. 4)."""
        n = max(1, len(self.per_process))
        return self.lock_hold_s / n / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def lock_wait_share(self) -> float:
        n = max(1, len(self.per_process))
        return self.lock_wait_s / n / self.elapsed_s if self.elapsed_s else 0.0


def migrations(run: SortRun, affinity: bool) -> np.ndarray:
    """Per process, the wake-ups after a disk I/O that land on another CPU (module docstring):
    its clusters read and written x ``(C - 1) / C`` without affinity, none with it."""
    n = run.setup.processes
    if affinity or n < 2:
        return np.zeros(n)
    waits = np.array([w.clusters_read_sequential + w.clusters_read_random
                      + w.clusters_written_sequential for w in run.work], dtype=float)
    return waits * (n - 1) / n


def demands(run: SortRun, profile: HardwareProfile, affinity: bool = False
            ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(own time per process, demand matrix process x centre, centre names), in seconds.
    ``affinity``: processes bound to their CPUs (§6.2), so no cache refills after an I/O."""
    setup, counters = run.setup, run.buffer.counters
    n, pools = setup.processes, setup.pools
    channels = max(1, int(profile.disk_channels) or n)
    unfix = counters.per_process(n, pools, "unfix")
    cluster_calls = (counters.per_process(n, pools, "fix")
                     + counters.per_process(n, pools, "release"))
    scheme_form = run.buffer.unfix_scheme.form
    gather = GATHER_INSTRUCTIONS.get(scheme_form, 0.0)
    if run.buffer.unfix_scheme.entries > 1:
        gather += HASH_GATHER_INSTRUCTIONS
    route = math.ceil(math.log2(n)) if n > 1 else 0
    transfer_s = setup.cluster_bytes / (profile.disk_transfer_mb_s * 1e6)
    names = [f"pool lock {q}" for q in range(pools)] + [f"channel {c}" for c in range(channels)]
    names.append("bus")
    own = np.zeros(n)
    demand = np.zeros((n, len(names)))
    refills = migrations(run, affinity) * profile.cpu_cache_bytes
    for p, w in enumerate(run.work):
        records_unfixed = w.records_scanned + w.records_received + w.records_out
        records_passed = records_unfixed          # one next() call each (see the docstring)
        instructions = (w.records_scanned * (profile.instr_scan + route * profile.instr_compare)
                        + records_passed * profile.instr_next_call
                        + (w.quicksort_comparisons + w.merge_comparisons) * profile.instr_compare
                        + w.record_copies * profile.instr_copy
                        + (w.packets_sent + w.packets_received) * profile.instr_packet
                        + (unfix[p].sum() + cluster_calls[p].sum()) * profile.instr_buffer_call
                        + records_unfixed * gather)
        sequential = w.clusters_read_sequential + w.clusters_written_sequential
        positioning = (sequential * profile.disk_seq_gap_ms
                       + w.clusters_read_random * (profile.disk_seek_ms
                                                   + profile.disk_rotation_ms)) / 1e3
        own[p] = profile.instructions_s(instructions) + positioning
        demand[p, :pools] = (unfix[p] * profile.lock_hold_unfix_us
                             + cluster_calls[p] * profile.lock_hold_cluster_us) / 1e6
        demand[p, pools + p % channels] = (sequential + w.clusters_read_random) * transfer_s
        demand[p, -1] = (w.bus_bytes + refills[p]) / (profile.interconnect_mbit_s / 8 * 1e6)
    return own, demand, names


def spin_handoff_s(profile: HardwareProfile) -> float:
    """Seconds one spinning process adds to each handoff of a pool lock (§6.1): ``spin_transfers``
    bus transfers of the lock byte's cache line, each ``cache_line_bytes`` over the bus."""
    if not profile.spin_transfers or not profile.cache_line_bytes or not profile.interconnect_mbit_s:
        return 0.0
    line_s = profile.cache_line_bytes / (profile.interconnect_mbit_s / 8 * 1e6)
    return profile.spin_transfers * line_s


def lock_handoffs(run: SortRun, profile: HardwareProfile, centres: int) -> np.ndarray:
    """Per process and centre, the handoff seconds each other queued process adds (§6.1): the
    process's calls at a pool lock times ``spin_handoff_s``; zero at the channels and the bus."""
    setup, counters = run.setup, run.buffer.counters
    n, pools = setup.processes, setup.pools
    calls = (counters.per_process(n, pools, "unfix") + counters.per_process(n, pools, "fix")
             + counters.per_process(n, pools, "release"))
    handoff = np.zeros((n, centres))
    handoff[:, :pools] = calls * spin_handoff_s(profile)
    return handoff


def others_queued(own: np.ndarray, time_at: np.ndarray) -> np.ndarray:
    """The mean number of other processes at each centre, as each process finds it there."""
    cycle = own + time_at.sum(axis=1)
    queue = time_at / np.where(cycle > 0, cycle, 1.0)[:, None]   # mean queue per process
    return queue.sum(axis=0)[None, :] - queue


def solve(own: np.ndarray, demand: np.ndarray, handoff: np.ndarray | None = None) -> np.ndarray:
    """Time of each process at each centre (approximate MVA, one customer per process).

    ``handoff``: seconds each other queued process adds to a process's demand at a centre
    (the spin lock's handoffs, ``lock_handoffs``); the demand then grows with the queue."""
    time_at = demand.copy()
    for _ in range(ITERATIONS):
        others = others_queued(own, time_at)
        served = demand if handoff is None else demand + handoff * others
        updated = served * (1.0 + others)
        if np.max(np.abs(updated - time_at)) <= TOLERANCE * max(1.0, float(updated.max(initial=0))):
            time_at = updated
            break
        time_at = updated
    return time_at


def price(run: SortRun, profile: HardwareProfile, affinity: bool = False) -> SortTime:
    """The modeled elapsed time and lock statistics of ``run`` on ``profile``; ``affinity``:
    every process bound to its CPU (§6.2; the paper turned it on for Table V and after)."""
    own, demand, names = demands(run, profile, affinity)
    handoff = lock_handoffs(run, profile, len(names))
    time_at = solve(own, demand, handoff)
    spin = handoff * others_queued(own, time_at)
    pools = run.setup.pools
    startup = run.setup.processes * profile.operator_startup_ms / 1e3
    per_process = []
    for p in range(len(own)):
        per_process.append({
            "own_s": float(own[p]),
            "lock_hold_s": float(demand[p, :pools].sum()),
            "lock_wait_s": float((time_at[p, :pools] - demand[p, :pools]).sum()),
            "lock_handoff_s": float(spin[p, :pools].sum()),
            "channel_s": float(time_at[p, pools:-1].sum()),
            "bus_s": float(time_at[p, -1]),
            "elapsed_s": float(own[p] + time_at[p].sum() + startup),
        })
    return SortTime(
        elapsed_s=max((r["elapsed_s"] for r in per_process), default=startup),
        lock_hold_s=float(demand[:, :pools].sum()),
        lock_wait_s=float((time_at[:, :pools] - demand[:, :pools]).sum()),
        per_process=per_process,
    )


@dataclass
class FlushTime:
    """The flush phase of one sort (§6.1), from the moment the processes end."""

    length_s: float
    """Until the last flush call lets go of its pool lock."""
    lock_wait_s: float
    """Total over processes of the time from a flush request to its grant (queue and handoff)."""
    handoff_s: float
    """The part of ``lock_wait_s`` spent handing the lock on past spinning processes: the lock
    byte's cache line on the bus, the contention §6.1 saw with the bus monitor."""
    peak_spinners: int
    """The most processes spinning on one pool lock when it was granted."""
    per_process: list[dict[str, float]] = field(default_factory=list)
    """Each process's flush: its start, its wait and when it let go of the lock (seconds)."""


def flush_phase(run: SortRun, profile: HardwareProfile) -> FlushTime:
    """Price the flush phase of ``run`` (§6.1, see the module docstring): at each pool lock, the
    processes' ``flush`` calls in the order they are made, first come first served."""
    setup, counters = run.setup, run.buffer.counters
    n, pools = setup.processes, setup.pools
    hold = profile.lock_hold_cluster_us / 1e6
    handoff = spin_handoff_s(profile)
    calls = counters.per_process(n, pools, "flush")
    start = np.array(run.flush_start_ms or [0.0] * n) / 1e3
    wait, spun, end = np.zeros(n), np.zeros(n), start.copy()
    peak = 0
    for q in range(pools):
        left = calls[:, q].copy()
        asking = [(start[p], p) for p in range(n) if left[p]]  # (time of the request, process)
        heapq.heapify(asking)
        free = 0.0                                              # when the lock is next free
        while asking:
            asked, p = heapq.heappop(asking)
            at = max(asked, free)
            spinners = sum(1 for t, _ in asking if t <= at)     # the others already asking
            granted = at + spinners * handoff
            wait[p] += granted - asked
            spun[p] += spinners * handoff
            peak = max(peak, spinners)
            free = end[p] = granted + hold
            left[p] -= 1
            if left[p]:                                         # its next call, right after
                heapq.heappush(asking, (free, p))
    return FlushTime(
        length_s=float(end.max(initial=0.0)),
        lock_wait_s=float(wait.sum()),
        handoff_s=float(spun.sum()),
        peak_spinners=peak,
        per_process=[{"start_s": float(start[p]), "lock_wait_s": float(wait[p]),
                      "end_s": float(end[p])} for p in range(n)],
    )
