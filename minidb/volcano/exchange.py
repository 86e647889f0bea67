"""Volcano's exchange operator on a shared-memory machine (Volcano paper §2.1).

Exchange is the one operator that knows about parallelism. Below it, a *producer* drives its
input subtree as an ordinary iterator and packs the records it gets into *packets*; above it, a
*consumer* is an ordinary iterator whose input happens to come from other processes. They meet in
a *port* in shared memory:

* one queue per consumer (horizontal, partitioned parallelism): a producer's *support function*
  tells, for every record, which consumer's packet it goes into (here: a key range, for the
  parallel sort; round robin or hashing would be other support functions);
* a packet is handed over when it is full; the last one of each producer carries the
  end-of-stream tag, and a consumer is done when it has one from every producer;
* flow control: after putting a packet into the port a producer takes one unit of a semaphore,
  and a consumer gives one back for every packet it removes, so producers can get at most
  ``flow_control`` packets ahead of the consumers (§2.1: "e.g., 4"); ``None`` turns it off.

Processes are threads here (Volcano forks UNIX processes). A producer that fails puts its error
into every queue, so no consumer waits forever; waits are short polls that re-check for errors,
never a fixed overall timeout.

Simplification: a packet here carries copies of the records, where Volcano's carries pointers to
records pinned in the shared buffer; either way each record crosses the bus once between the
processes (§7 counts that crossing).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from minidb.errors import MinidbError

POLL_S = 0.5


@dataclass
class Packet:
    """Records from one producer for one consumer; ``last`` is the end-of-stream tag."""

    producer: int
    records: np.ndarray
    number: int
    """The producer's serial number of this packet for this consumer."""
    last: bool = False


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


class Port:
    """The shared structure of one exchange: a queue per consumer, a flow-control semaphore."""

    def __init__(self, producers: int, consumers: int, flow_control: int | None = 4):
        if producers < 1 or consumers < 1:
            raise MinidbError("an exchange needs at least one producer and one consumer")
        if flow_control is not None and flow_control < 1:
            raise MinidbError(f"flow control allows at least one packet ahead, not {flow_control}")
        self.producers, self.consumers = producers, consumers
        self.queues: list[queue.Queue] = [queue.Queue() for _ in range(consumers)]
        self.flow = threading.Semaphore(flow_control) if flow_control else None
        self.failed: BaseException | None = None
        self.packets_put = 0
        self._count_lock = threading.Lock()

    def put(self, consumer: int, packet: Packet) -> None:
        self.queues[consumer].put(packet)
        with self._count_lock:
            self.packets_put += 1
        if self.flow is not None and not packet.last:
            while not self.flow.acquire(timeout=POLL_S):
                if self.failed is not None:
                    raise MinidbError("exchange stopped: another process failed")

    def get(self, consumer: int) -> Packet:
        while True:
            try:
                item = self.queues[consumer].get(timeout=POLL_S)
            except queue.Empty:
                if self.failed is not None:
                    raise MinidbError(f"exchange stopped: {self.failed}") from self.failed
                continue
            if isinstance(item, _Failed):
                raise MinidbError(f"exchange stopped: {item.error}") from item.error
            if self.flow is not None and not item.last:
                self.flow.release()
            return item

    def fail(self, error: BaseException) -> None:
        """A process failed: wake every consumer with the error."""
        self.failed = error
        for q in self.queues:
            q.put(_Failed(error))


def produce(port: Port, producer: int, batches: Iterable[np.ndarray],
            support: Callable[[np.ndarray], np.ndarray], packet_records: int, dtype: np.dtype,
            on_packet: Callable[[int, Packet], None] | None = None) -> list[int]:
    """Drive ``batches`` (the producer's input) into the port: ``support(batch)`` gives each
    record's consumer; a packet leaves when it holds ``packet_records`` records, and the last
    one to every consumer carries the end-of-stream tag (possibly with no records). Returns the
    number of packets sent to each consumer; ``dtype`` is the records' (for empty packets). ``on_packet(consumer, packet)`` is called before a
    packet is put (to fix it in the buffer)."""
    pending: list[list[np.ndarray]] = [[] for _ in range(port.consumers)]
    held = [0] * port.consumers
    sent = [0] * port.consumers

    def ship(c: int, records: np.ndarray, last: bool) -> None:
        packet = Packet(producer, records, sent[c], last)
        if on_packet is not None:
            on_packet(c, packet)
        port.put(c, packet)
        sent[c] += 1

    try:
        for batch in batches:
            targets = support(batch)
            order = np.argsort(targets, kind="stable")
            bounds = np.searchsorted(targets[order], np.arange(port.consumers + 1))
            for c in range(port.consumers):
                part = batch[order[bounds[c]:bounds[c + 1]]]
                if not len(part):
                    continue
                pending[c].append(part)
                held[c] += len(part)
                while held[c] >= packet_records:
                    whole = np.concatenate(pending[c])
                    ship(c, whole[:packet_records], last=False)
                    pending[c] = [whole[packet_records:]]
                    held[c] -= packet_records
        for c in range(port.consumers):
            rest = np.concatenate(pending[c]) if pending[c] else np.empty(0, dtype=dtype)
            ship(c, rest, last=True)
    except BaseException as error:  # a failing producer must not leave consumers waiting
        port.fail(error)
        raise
    return sent


def consume(port: Port, consumer: int) -> Iterator[Packet]:
    """The consumer side as an iterator: every packet for ``consumer`` until each producer's
    end-of-stream tag has arrived (the tagged packets are yielded too; they may hold records)."""
    open_producers = port.producers
    while open_producers:
        packet = port.get(consumer)
        if packet.last:
            open_producers -= 1
        yield packet
