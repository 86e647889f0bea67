"""LH* servers: buckets, and the machines (inline objects or Ray actors) that host them.

A *bucket* is LH*'s unit of storage (Litwin, Neimat, Schneider 1993): it knows its own address
and level and nothing else about the file, so it can check whether a key it receives is its own
and forward it otherwise (``minidb.sdds.addressing.server_address``). A bucket holds up to
``capacity`` records; more go to its overflow area and are reported to the split coordinator
as a *collision*.

A *host* is one server machine. The LH* paper of the course maps several logical buckets onto
each machine (Karlsson and Kersten 1997, Section 3: the logical-to-physical mapping), so a file of
thousands of buckets runs on a handful of processes; ``machine_of`` is that mapping (bucket ``m``
on machine ``m mod machines``, which keeps every machine's share even as the file grows). The same
``BucketHost`` class runs inline (a plain object, for tests and labs) or as a Ray actor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from minidb.sdds.addressing import h, server_address

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def pseudokey(key: int, hashed: bool = True) -> int:
    """The non-negative integer ``C`` that LH* addresses a key by.

    ``hashed=True`` spreads integer keys with SplitMix64 (the same 64 bits as
    ``minidb.hashing.hash_keys`` gives an int64 column, so a table and its LH* file agree);
    ``hashed=False`` uses the key itself, as the LH* papers' examples do (it must be >= 0).
    """
    if isinstance(key, bool) or not isinstance(key, int):
        raise TypeError(f"LH* keys are integers, got {type(key).__name__} {key!r}")
    if not hashed:
        if key < 0:
            raise ValueError(f"an unhashed LH* key must be >= 0, got {key}")
        return key
    if not -(1 << 63) <= key < 1 << 63:
        raise ValueError(f"LH* keys are 64-bit integers, got {key}")
    z = ((key & MASK64) + GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


@dataclass
class Reply:
    """A server's answer to one request."""

    home: bool
    """True when the receiving bucket held the key's home; False when it forwards."""
    address: int
    """The bucket that answered (the receiver)."""
    level: int
    """Its level ``j`` (an IAM carries it when the bucket was the first addressed)."""
    forward_to: int = -1
    """Where the request goes next when ``home`` is False."""
    found: bool = False
    """For a lookup or delete: whether the key was there."""
    value: object = None
    """For a lookup: the value found."""
    overflowing: bool = False
    """True when the bucket holds more than its capacity after this request (a collision)."""
    records: int = 0
    """Records in the bucket after the request (reported with a collision or an underflow)."""


class Bucket:
    """One LH* bucket: its address, its level, and the records whose home it is."""

    def __init__(self, address: int, level: int, capacity: int, n0: int, hashed: bool,
                 records: dict[int, object] | None = None) -> None:
        self.address = address
        self.level = level
        self.capacity = capacity
        self.n0 = n0
        self.hashed = hashed
        self.records: dict[int, object] = dict(records or {})

    def receive(self, op: str, key: int, value: object = None) -> Reply:
        """Run ``op`` ("insert", "lookup", "delete") on ``key`` if it is home, else forward."""
        c = pseudokey(key, self.hashed)
        target = server_address(self.address, self.level, c, self.n0)
        if target != self.address:
            return Reply(False, self.address, self.level, forward_to=target)
        found, out = key in self.records, None
        if op == "insert":
            self.records[key] = value
        elif op == "lookup":
            out = self.records.get(key)
        elif op == "delete":
            self.records.pop(key, None)
        else:
            raise ValueError(f"unknown LH* operation {op!r}")
        return Reply(True, self.address, self.level, found=found, value=out,
                     overflowing=len(self.records) > self.capacity, records=len(self.records))

    def split(self, new_address: int) -> dict[int, object]:
        """Split into this bucket and ``new_address`` by the next level's hash: this bucket's
        level grows by one, and the records whose new home is ``new_address`` are returned."""
        self.level += 1
        moving = {k: v for k, v in self.records.items()
                  if h(self.level, pseudokey(k, self.hashed), self.n0) == new_address}
        for k in moving:
            del self.records[k]
        return moving


class BucketHost:
    """One server machine: the buckets mapped to it. Runs inline or as a Ray actor."""

    def __init__(self, machine: int, capacity: int, n0: int, hashed: bool) -> None:
        self.machine = machine
        self.capacity = capacity
        self.n0 = n0
        self.hashed = hashed
        self.buckets: dict[int, Bucket] = {}

    def create(self, address: int, level: int, records: dict[int, object]) -> int:
        """Make bucket ``address`` at ``level`` holding ``records``; returns its record count."""
        if address in self.buckets:
            raise ValueError(f"bucket {address} already exists on machine {self.machine}")
        self.buckets[address] = Bucket(address, level, self.capacity, self.n0, self.hashed,
                                       records)
        return len(records)

    def receive(self, address: int, op: str, key: int, value: object = None) -> Reply | None:
        """Deliver a request to bucket ``address``; None when no such bucket lives here (it was
        merged away, and the sender's image is ahead of the file)."""
        bucket = self.buckets.get(address)
        return None if bucket is None else bucket.receive(op, key, value)

    def split(self, address: int, new_address: int) -> dict[int, object]:
        """Split bucket ``address``; returns the records that go to ``new_address``."""
        return self.buckets[address].split(new_address)

    def give_up(self, address: int) -> dict[int, object]:
        """Remove bucket ``address`` (the second half of a merge); returns its records."""
        return self.buckets.pop(address).records

    def absorb(self, address: int, records: dict[int, object]) -> int:
        """Merge ``records`` into bucket ``address``, whose level drops by one."""
        bucket = self.buckets[address]
        bucket.records.update(records)
        bucket.level -= 1
        return len(bucket.records)

    def select(self, predicate: Callable[[int, object], bool] | None) -> list[tuple[int, object]]:
        """Every (key, value) on this machine that satisfies ``predicate`` (all when None)."""
        return [(k, v) for b in self.buckets.values() for k, v in b.records.items()
                if predicate is None or predicate(k, v)]

    def snapshot(self) -> dict[int, tuple[int, dict[int, object]]]:
        """Address -> (level, records) of every bucket here (for checks and the explorer)."""
        return {a: (b.level, dict(b.records)) for a, b in self.buckets.items()}

    def sizes(self) -> dict[int, int]:
        """Address -> record count of every bucket here."""
        return {a: len(b.records) for a, b in self.buckets.items()}


def machine_of(address: int, machines: int) -> int:
    """The machine that hosts bucket ``address`` (the logical-to-physical mapping)."""
    return address % machines
