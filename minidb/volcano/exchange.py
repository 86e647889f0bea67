"""Volcano's exchange on a shared-memory machine (Volcano paper §2.1), built from the engine's
one exchange (``minidb.parallel.exchange``).

Exchange is the operator that knows about parallelism. Below it a *producer* drives its input
subtree and packs the records into *packets*; above it a *consumer* is an ordinary iterator
whose input happens to come from other processes. minidb has one implementation of both sides,
the one the shared-nothing plans use (``SplitTo`` and ``Receive`` in
``minidb.cluster.plan``):

* ``SplitTable``, the producer side: a *support function* (a ``Partitioner``: here key ranges,
  for the parallel sort; round robin or hashing are others) picks each record's consumer;
  records for one consumer are counted in packets of ``packet_bytes``, full packets leave as
  they fill (here always whole: ``whole_packets``), and the last message to each consumer
  carries the *end-of-stream* tag;
* ``ExchangeReceive``, the consumer side: an iterator over what arrives in its *inbox* for this
  exchange, until every producer's end of stream is there.

What makes it Volcano's rather than Gamma's is only the transport, built here: all processes
share memory, so a message is put straight into the consumer's inbox (nothing is sent over a
network), and the inbox is bounded: once ``flow_control`` messages wait for a consumer, its
producers wait too (§2.1: producers may get only a few packets ahead of the consumers). A packet
is one cluster's worth of records, so the packets counted are the buffer clusters §2.1's port
fills. A process that fails puts its error into every inbox, so no consumer waits for an end of
stream that will never come.

Processes are threads here (Volcano forks UNIX processes). Simplification: a packet carries
copies of the records, where Volcano's carries pointers to records pinned in the shared buffer;
either way each record crosses the bus once between processes (§7 counts that crossing).
"""

from __future__ import annotations

import contextlib
import queue
import time

import numpy as np

from minidb.errors import MinidbError
from minidb.exec.iterator import Operator
from minidb.parallel.exchange import ExchangeReceive, Inbox, SplitTable
from minidb.parallel.partitioners import Partitioner
from minidb.storage.schema import Schema

POLL_S = 0.2
"""A waiting producer looks this often whether a process failed."""
WAIT_S = 600.0
"""How long a producer waits for room in a consumer's inbox, and a consumer for the next
message, before the exchange gives up saying which side was slow. Sorting a run never takes
this long; only a process that stopped does."""


class ProcessFailed(Exception):
    """Put into every inbox when a process fails, so that no consumer waits for it."""


class SharedMemoryExchange:
    """One exchange among the ``processes`` processes of one machine: every process produces
    into it and consumes from it (the parallel sort's redistribution, §2.3)."""

    def __init__(self, exchange_id: str, processes: int, packet_bytes: int,
                 flow_control: int | None = 4):
        if processes < 1:
            raise MinidbError("an exchange needs at least one process")
        if flow_control is not None and flow_control < 1:
            raise MinidbError(f"flow control allows at least one packet ahead, not {flow_control}")
        self.exchange_id, self.processes, self.packet_bytes = exchange_id, processes, packet_bytes
        # Inbox(0): unbounded, for runtimes that run producers before consumers
        self.inboxes = [Inbox(flow_control or 0) for _ in range(processes)]
        self.failed: BaseException | None = None

    def deliver(self, dest: int, exchange_id: str, producer: int, item, packets: int) -> None:
        """The transport: the consumer's inbox is in the same memory. A full inbox makes the
        producer wait (flow control), in short waits that stop as soon as a process failed."""
        inbox = self.inboxes[dest].queue(exchange_id)
        deadline = time.monotonic() + WAIT_S
        while True:
            if self.failed is not None:
                raise MinidbError(f"exchange {exchange_id}: stopped, another process failed "
                                  f"({self.failed})")
            try:
                inbox.put((producer, item), timeout=POLL_S)
                return
            except queue.Full:
                if time.monotonic() > deadline:
                    raise MinidbError(f"exchange {exchange_id}: process {dest} took no packet "
                                      f"for {WAIT_S:.0f} s") from None

    def local(self, exchange_id: str, producer: int, item, packets: int) -> None:
        """A process sending to itself: the same put into its own inbox."""
        self.deliver(producer, exchange_id, producer, item, packets)

    def producer(self, child: Operator, process: int, support: Partitioner) -> SplitTable:
        """The producer side for ``process``: route ``child``'s records with ``support``."""
        return SplitTable(child, process, self.exchange_id, "partition",
                          list(range(self.processes)), partitioner=support,
                          transport=self.deliver, wait=lambda handle: None, local=self.local,
                          packet_bytes=self.packet_bytes, flush_bytes=self.packet_bytes,
                          whole_packets=True)

    def consumer(self, process: int, schema: Schema) -> ExchangeReceive:
        """The consumer side for ``process``: every record sent to it, as batches; after
        each batch, ``last_producer`` says who sent it."""
        return ExchangeReceive(self.inboxes[process], self.exchange_id,
                               list(range(self.processes)), schema, timeout=WAIT_S)

    def fail(self, error: BaseException) -> None:
        """A process failed: stop every producer and wake every consumer with the error. A
        full inbox gives up its oldest message for the news (the sort is lost anyway); this
        never waits, so a process failing while others wait cannot hang the machine."""
        if self.failed is None:
            self.failed = error
        news = (-1, ProcessFailed(str(self.failed)))
        for inbox in self.inboxes:
            pending = inbox.queue(self.exchange_id)
            while True:
                try:
                    pending.put_nowait(news)
                    break
                except queue.Full:
                    with contextlib.suppress(queue.Empty):
                        pending.get_nowait()


class RecordsSource(Operator):
    """A leaf operator over batches of records that some Python code yields (the sort's scan of
    its disk, which counts its buffer calls as it goes)."""

    kind = "records"

    def __init__(self, batches, schema: Schema):
        super().__init__()
        self.batches, self.schema = batches, schema

    def _open(self) -> None:
        self._it = iter(self.batches)

    def _next(self) -> np.ndarray | None:
        return next(self._it, None)

    def describe(self) -> str:
        return "RecordsSource"
