"""Volcano's parallel external sort on a shared-memory machine (Volcano paper §2.2, §2.3, §3).

The paper's workload (§3.2): the input is spread randomly and evenly over ``processes`` disks,
one process per disk (§3.3); the output must be *range-partitioned* over the same disks and
sorted within each range. Every process does two things:

1. **produce** (exchange's producer side): scan its disk cluster by cluster and send every record
   through the exchange to the process that owns the record's key range. The support
   function compares the key with the ``processes - 1`` quantiles (§2.3: "the i/N quantiles ...
   e.g., by sampling"): ``given`` quantiles are exact, as the paper assumes them known a priori;
   ``sampled`` ones come from a sample of every input.
2. **sort** (exchange's consumer side, then Volcano's sort iterator, §2.2): copy the records
   that arrive into a sort space of ``sort_space_bytes / processes`` bytes (the space is shared
   memory allocated once, §3.2, so each process gets its share); whenever it is full, quicksort
   it and write it to disk as a level-0 run. At the end, merge runs ``fan_in`` at a time until at
   most ``fan_in`` remain (``fan_in`` = clusters of sort space minus one for output), then do
   the last merge as the output is consumed: the query's *driver* writes each output record to
   the process's disk and unfixes it.

Every record is unfixed three times, as §5 counts them: by the *filter* (the producer side,
done with an input record once it is routed), by the *sort* (once the record is copied into the
sort space) and by the *driver* (once an output record is written). ``SharedBuffer`` counts the
calls each unfix scheme makes, and the cluster-level calls (a cluster read or allocated, a run
cluster given up) on the pool of the cluster's device.

Counters per process (``ProcessWork``): records scanned, sent and received; exchange packets;
quicksort and merge comparisons; record copies; clusters read sequentially (input), written
sequentially (runs, output) and read at random (merge input, which jumps between runs); bytes
over the bus. ``minidb.cost.volcano_model`` prices them.

Simplifications: the sort and the merges are numpy's (a stable sort of the concatenated pieces
is a merge); the comparison counts are the textbook ones (``n log2 n`` for quicksorting ``n``
records, ``log2 fan_in`` per record merged), not counted one by one; packets carry copies of
the records (see ``minidb.volcano.exchange``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, fields

import numpy as np

from minidb.datagen.sortrec import SCHEMA
from minidb.errors import MinidbError
from minidb.parallel.partitioners import Partitioner
from minidb.volcano.exchange import RecordsSource, SharedMemoryExchange
from minidb.volcano.pool import SharedBuffer, cluster_id
from minidb.volcano.records import RECORD_BYTES, RECORD_DTYPE, Layout
from minidb.volcano.unfix import scheme

MB = 1024 * 1024
QUANTILES = ("given", "sampled")
SAMPLE_PER_PROCESS = 1000
SCAN_CLUSTERS = 32


@dataclass(frozen=True)
class SortSetup:
    """One configuration of the tuning study (defaults: the paper's initial software, §3.2)."""

    processes: int = 16
    cluster_bytes: int = 4096
    alignment: int = 1
    sort_space_bytes: int = 12 * MB
    pools: int = 1
    unfix: str = "simple"
    flow_control: int | None = 4
    quantiles: str = "given"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.processes < 1:
            raise MinidbError(f"the sort needs at least one process, not {self.processes}")
        if self.quantiles not in QUANTILES:
            raise MinidbError(f"quantiles are {' or '.join(QUANTILES)}, not {self.quantiles!r}")
        scheme(self.unfix)  # an unknown scheme is an error now, not in a thread
        if self.space_clusters < 3:
            raise MinidbError(
                f"{self.sort_space_bytes} bytes of sort space over {self.processes} processes "
                f"leave under 3 clusters of {self.cluster_bytes} bytes each; a merge needs two "
                "inputs and an output")

    @property
    def layout(self) -> Layout:
        return Layout(self.cluster_bytes, self.alignment)

    @property
    def space_clusters(self) -> int:
        """Clusters of sort space each process has."""
        return self.sort_space_bytes // self.processes // self.cluster_bytes

    @property
    def fan_in(self) -> int:
        return self.space_clusters - 1


@dataclass
class ProcessWork:
    """What one process did (see the module docstring)."""

    records_scanned: int = 0
    records_sent: int = 0
    """Records this process routed to another process."""
    records_received: int = 0
    records_out: int = 0
    """Records of this process's output range (written by its driver)."""
    packets_sent: int = 0
    packets_received: int = 0
    runs: int = 0
    merge_levels: int = 0
    """Merge levels, the final merge in ``next`` included; 0 when the input fit in memory."""
    quicksort_comparisons: float = 0.0
    merge_comparisons: float = 0.0
    record_copies: int = 0
    """Records copied: into a packet, into the sort space, into a run or output cluster."""
    clusters_read_sequential: int = 0
    clusters_written_sequential: int = 0
    clusters_read_random: int = 0
    bus_bytes: int = 0
    """Bytes this process moved over the bus: disk transfers plus record copies."""

    def add(self, other: ProcessWork) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class SortRun:
    """The outcome of one parallel sort: the output partitions and the counts."""

    setup: SortSetup
    partitions: list[np.ndarray]
    """Process i's output: the records of the i-th key range, sorted."""
    bounds: np.ndarray
    """The quantiles used (``processes - 1`` keys; range i holds keys <= bounds[i])."""
    work: list[ProcessWork]
    buffer: SharedBuffer
    wall_s: float = 0.0

    def output(self) -> np.ndarray:
        """All output records in order (the concatenation of the ranges)."""
        return np.concatenate(self.partitions) if self.partitions else np.empty(0, RECORD_DTYPE)

    def counts_only(self) -> SortRun:
        """This run without its output records (what pricing needs, a few KB to keep)."""
        return SortRun(self.setup, [], self.bounds, self.work, self.buffer, self.wall_s)

    def total(self) -> ProcessWork:
        out = ProcessWork()
        for w in self.work:
            out.add(w)
        return out


def input_partitions(records: np.ndarray, processes: int) -> list[np.ndarray]:
    """§3.2: the input "partitioned randomly but evenly over all disks" (record i on disk
    i mod processes; the generator's keys are random, so this is a random spread)."""
    return [records[p::processes] for p in range(processes)]


def quantiles(parts: list[np.ndarray], processes: int, how: str, seed: int = 0) -> np.ndarray:
    """The ``processes - 1`` key bounds of the ranges: exact (``given``) or from a sample of
    ``SAMPLE_PER_PROCESS`` keys per input (``sampled``)."""
    if processes == 1:
        return np.empty(0, dtype=RECORD_DTYPE["key"])
    if how == "given":
        keys = np.concatenate([p["key"] for p in parts])
    else:
        rng = np.random.default_rng(seed)
        keys = np.concatenate([np.empty(0, RECORD_DTYPE["key"])] + [
            p["key"][rng.choice(len(p), min(len(p), SAMPLE_PER_PROCESS), replace=False)]
            for p in parts if len(p)])
    if not len(keys):
        return np.full(processes - 1, b"", dtype=RECORD_DTYPE["key"])
    keys = np.sort(keys)
    at = [min(len(keys) - 1, max(0, math.ceil(i * len(keys) / processes) - 1))
          for i in range(1, processes)]
    return keys[at]


RUNTIMES = ("threads", "inline", "ray")


def parallel_sort(records: np.ndarray, setup: SortSetup, runtime: str = "threads") -> SortRun:
    """Sort ``records`` (``RECORD_DTYPE``) the way §2.3 and §3 describe (module docstring).

    ``runtime``: "threads" runs every process's producer and sort as threads at once, as
    Volcano's processes run; "inline" runs every producer to its end and then every sort, one
    after another in this thread (no flow control then: the inboxes hold everything), for places
    that may not start threads (the autograder's sandbox); "ray" runs the whole machine in one
    Ray worker, its processes threads there (a shared-memory machine is one node: its processes
    share the buffer, so they cannot be separate actors). Ray must be running
    (``minidb.cluster.backends.start_ray``). The counts are the same on every runtime."""
    import time

    if records.dtype != RECORD_DTYPE:
        raise MinidbError(f"parallel_sort takes sort records ({RECORD_DTYPE}), not {records.dtype}")
    if runtime not in RUNTIMES:
        raise MinidbError(f"runtime is {', '.join(RUNTIMES)}, not {runtime!r}")
    if runtime == "ray":
        return _on_ray(records, setup)
    n = setup.processes
    start = time.perf_counter()
    parts = input_partitions(records, n)
    bounds = quantiles(parts, n, setup.quantiles, setup.seed)
    buffer = SharedBuffer(setup.pools, scheme(setup.unfix))
    exchange = SharedMemoryExchange(
        "redistribute", n, packet_bytes=setup.layout.records_per_cluster * RECORD_BYTES,
        flow_control=setup.flow_control if runtime == "threads" else None)
    run = SortRun(setup, [np.empty(0, RECORD_DTYPE)] * n, bounds,
                  [ProcessWork() for _ in range(n)], buffer)
    bodies = [(_produce, (p, parts[p], run, exchange), f"volcano-producer-{p}")
              for p in range(n)]
    bodies += [(_sort, (c, run, exchange), f"volcano-sort-{c}") for c in range(n)]
    if runtime == "inline":
        for body, args, _ in bodies:
            _guarded(exchange, body, *args)
            if exchange.failed is not None:
                break
    else:
        workers = [threading.Thread(target=_guarded, args=(exchange, body, *args), name=name)
                   for body, args, name in bodies]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    if exchange.failed is not None:
        raise MinidbError(f"parallel sort failed: {exchange.failed}") from exchange.failed
    run.wall_s = time.perf_counter() - start
    return run


def _on_ray(records: np.ndarray, setup: SortSetup) -> SortRun:
    """The sort in one Ray worker (the machine), with threads for its processes."""
    import ray

    if not ray.is_initialized():
        raise MinidbError("runtime='ray' needs a running Ray instance: start it first "
                          "(minidb.cluster.backends.start_ray, or an experiment's "
                          "backend='ray')")
    machine = ray.remote(num_cpus=1)(_sort_on_machine)
    return ray.get(machine.remote(records, setup))


def _sort_on_machine(records: np.ndarray, setup: SortSetup) -> SortRun:
    return parallel_sort(records, setup, runtime="threads")


def _guarded(exchange: SharedMemoryExchange, body, *args) -> None:
    try:
        body(*args)
    except BaseException as error:  # noqa: BLE001 - handed to the caller through the exchange
        exchange.fail(error)


class KeyRanges(Partitioner):
    """The sort's support function (§2.3): range ``i`` holds the keys up to ``bounds[i]``, the
    last range the keys above every bound."""

    name = "key_ranges"

    def __init__(self, bounds: np.ndarray, processes: int):
        super().__init__("key")
        self.bounds = bounds
        self.fit(None, processes)

    def route(self, batch: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.bounds, batch["key"], side="left").astype(np.int64)


def _produce(p: int, data: np.ndarray, run: SortRun, exchange: SharedMemoryExchange) -> None:
    setup, buffer, work = run.setup, run.buffer, run.work[p]
    per_cluster = setup.layout.records_per_cluster

    def scan() -> Iterator[np.ndarray]:
        # The scan reads cluster after cluster; it hands the exchange SCAN_CLUSTERS of them at
        # a time (fewer Python steps), and every count stays per cluster.
        step = per_cluster * SCAN_CLUSTERS
        for first in range(0, len(data), step):
            batch = data[first:first + step]
            clusters = -(-len(batch) // per_cluster)
            buffer.fix(p, p, clusters, len(batch))
            work.clusters_read_sequential += clusters
            work.bus_bytes += clusters * setup.cluster_bytes
            work.records_scanned += len(batch)
            yield batch
            # the filter is done with the records once they are routed
            numbers = (first + np.arange(len(batch), dtype=np.int64)) // per_cluster
            buffer.unfix(p, "filter", cluster_id(p, numbers))
        buffer.close(p, "filter")

    split = exchange.producer(RecordsSource(scan(), SCHEMA), p,
                              KeyRanges(run.bounds, setup.processes))
    routed = split.run()
    # every packet was a cluster of the producer's packet space, fixed with its records
    packets = split.counters["packets_sent_remote"] + split.counters["packets_short_circuited"]
    buffer.fix(p, packet_device(setup, p), packets, routed)
    work.packets_sent += packets
    work.record_copies += routed
    work.bus_bytes += routed * setup.layout.record_bytes
    work.records_sent += split.counters["bytes_sent_remote"] // RECORD_BYTES


def packet_device(setup: SortSetup, producer: int) -> int:
    """Packets live in the producer's part of shared memory, a device of their own for the
    pool assignment (device numbers after the disks)."""
    return setup.processes + producer


def _sort(c: int, run: SortRun, exchange: SharedMemoryExchange) -> None:
    setup, buffer, work = run.setup, run.buffer, run.work[c]
    layout = setup.layout
    capacity = setup.space_clusters * layout.records_per_cluster
    space: list[np.ndarray] = []
    held = 0
    runs: list[np.ndarray] = []

    def spill() -> None:
        nonlocal space, held
        data = np.concatenate(space)
        runs.append(data[np.argsort(data["key"], kind="stable")])
        work.quicksort_comparisons += len(data) * math.log2(max(2, len(data)))
        _write_clusters(c, len(data), run, copies=True)
        space, held = [], 0

    per_packet = layout.records_per_cluster
    received = [0] * setup.processes  # records from each producer so far
    receive = exchange.consumer(c, SCHEMA)
    for records in receive:
        q = receive.last_producer
        work.records_received += len(records)
        # the packet of each record: packets fill one after another, per producer and consumer
        numbers = (c << 30) + (received[q] + np.arange(len(records), dtype=np.int64)) // per_packet
        received[q] += len(records)
        ids = cluster_id(packet_device(setup, q), numbers)
        while len(records):
            take = min(capacity - held, len(records))
            space.append(records[:take])
            held += take
            work.record_copies += take
            work.bus_bytes += take * layout.record_bytes
            buffer.unfix(c, "sort", ids[:take])
            records, ids = records[take:], ids[take:]
            if held == capacity:
                spill()
    work.packets_received += sum(-(-k // per_packet) for k in received)
    buffer.close(c, "sort")
    if held and runs:
        spill()  # the last run of a sort that already spilled is written like the others
    if runs:
        work.runs = len(runs)
        while len(runs) > setup.fan_in:  # every level but the last is written back to disk
            runs = [_merge(c, runs[i:i + setup.fan_in], run, final=False)
                    for i in range(0, len(runs), setup.fan_in)]
            work.merge_levels += 1
        output = _merge(c, runs, run, final=True)
        work.merge_levels += 1
    else:
        data = np.concatenate(space) if space else np.empty(0, RECORD_DTYPE)
        output = data[np.argsort(data["key"], kind="stable")]
        work.quicksort_comparisons += len(data) * math.log2(max(2, len(data)))
    _drive(c, output, run)
    run.partitions[c] = output


def _write_clusters(c: int, records: int, run: SortRun, copies: bool) -> None:
    """Records copied into fresh clusters of process ``c``'s disk, written and given up."""
    layout, buffer, work = run.setup.layout, run.buffer, run.work[c]
    clusters = layout.clusters(records)
    buffer.fix(c, c, clusters, 0)
    buffer.release(c, c, clusters)
    work.clusters_written_sequential += clusters
    work.bus_bytes += clusters * run.setup.cluster_bytes
    if copies:
        work.record_copies += records
        work.bus_bytes += records * layout.record_bytes


def _merge(c: int, runs: list[np.ndarray], run: SortRun, final: bool) -> np.ndarray:
    """Merge ``runs``: read their clusters (at random: the merge jumps from run to run), and
    unless this is the final merge write the result as one run of the next level."""
    layout, buffer, work = run.setup.layout, run.buffer, run.work[c]
    data = np.concatenate(runs)
    merged = data[np.argsort(data["key"], kind="stable")]
    read = sum(layout.clusters(len(r)) for r in runs)
    buffer.fix(c, c, read, 0)
    buffer.release(c, c, read)
    work.clusters_read_random += read
    work.bus_bytes += read * run.setup.cluster_bytes
    work.merge_comparisons += len(merged) * math.log2(max(2, len(runs)))
    if not final:
        _write_clusters(c, len(merged), run, copies=True)
    return merged


def _drive(c: int, output: np.ndarray, run: SortRun) -> None:
    """The query driver: the sort hands its output out a cluster at a time (fixed in the
    buffer); the driver writes every record to the output file and unfixes it."""
    layout, buffer, work = run.setup.layout, run.buffer, run.work[c]
    per_cluster = layout.records_per_cluster
    clusters = layout.clusters(len(output))
    work.records_out += len(output)
    buffer.fix(c, c, clusters, len(output))
    work.record_copies += len(output)
    work.bus_bytes += len(output) * layout.record_bytes
    numbers = (1 << 38) + np.arange(len(output), dtype=np.int64) // per_cluster
    buffer.unfix(c, "driver", cluster_id(c, numbers))
    buffer.close(c, "driver")
    work.clusters_written_sequential += clusters
    work.bus_bytes += clusters * run.setup.cluster_bytes
