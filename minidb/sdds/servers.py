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

import numpy as np

from minidb.sdds.addressing import Addressing, h

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
                 addressing: Addressing, records: dict[int, object] | None = None) -> None:
        self.address = address
        self.addressing = addressing
        self.level = level
        self.capacity = capacity
        self.n0 = n0
        self.hashed = hashed
        self.records: dict[int, object] = dict(records or {})

    def receive(self, op: str, key: int, value: object = None) -> Reply:
        """Run ``op`` ("insert", "lookup", "delete") on ``key`` if it is home, else forward."""
        c = pseudokey(key, self.hashed)
        target = bucket_number(self.addressing.server_address(self.address, self.level, c,
                                                              self.n0), "server_address")
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

    def __init__(self, machine: int, capacity: int, n0: int, hashed: bool,
                 addressing: Addressing) -> None:
        self.machine = machine
        self.addressing = addressing
        self.capacity = capacity
        self.n0 = n0
        self.hashed = hashed
        self.buckets: dict[int, Bucket] = {}

    def create(self, address: int, level: int, records: dict[int, object]) -> int:
        """Make bucket ``address`` at ``level`` holding ``records``; returns its record count."""
        if address in self.buckets:
            raise ValueError(f"bucket {address} already exists on machine {self.machine}")
        self.buckets[address] = Bucket(address, level, self.capacity, self.n0, self.hashed,
                                       self.addressing, records)
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

    # -- bulk operators (minidb.sdds.operators), on (head, tail) pairs --------------------------
    def pairs(self) -> dict[int, np.ndarray]:
        """Every bucket's records as (head, tail) pairs: the bucket shipped whole."""
        return {a: as_pairs(b.records) for a, b in self.buckets.items()}

    def select_range(self, low: int, high: int) -> tuple[dict[int, np.ndarray], int]:
        """Each bucket's pairs with ``low <= tail <= high`` (kept where they are), and the
        entries scanned."""
        out, scanned = {}, 0
        for a, b in self.buckets.items():
            p = as_pairs(b.records)
            scanned += len(p)
            out[a] = p[(p["tail"] >= low) & (p["tail"] <= high)]
        return out, scanned

    def join_tails(self, bat: np.ndarray) -> tuple[dict[int, np.ndarray], int]:
        """join(this SDDS, BAT) on every bucket: (a, d) for local (a, b) and BAT (c, d), b = c."""
        out, scanned = {}, 0
        for a, b in self.buckets.items():
            p = as_pairs(b.records)
            scanned += len(p) + len(bat)
            out[a] = equi_join(p, "tail", bat, "head")
        return out, scanned

    def join_heads(self, routed: dict[int, np.ndarray]) -> tuple[dict[int, np.ndarray], int]:
        """join(BAT, this SDDS) on the buckets that received BAT rows: (a, d) for received
        (a, b) and local (c, d), b = c."""
        out, scanned = {}, 0
        for a, rows in routed.items():
            p = as_pairs(self.buckets[a].records)
            scanned += len(p) + len(rows)
            out[a] = equi_join(rows, "tail", p, "head")
        return out, scanned

    def probe_heads(self, bat: np.ndarray) -> tuple[dict[int, np.ndarray], int]:
        """join(BAT, this SDDS) with the whole BAT broadcast here: each BAT row (a, b) is looked
        up by key b in the local buckets, giving (a, d) for the local (b, d); the entries
        looked at are the BAT's rows (one key look-up each)."""
        local = {a: as_pairs(b.records) for a, b in self.buckets.items()}
        out = {a: np.empty(0, dtype=PAIR) for a in local}
        if not local or not len(bat):
            return out, len(bat)
        heads = np.concatenate([p["head"] for p in local.values()])
        owner = np.concatenate([np.full(len(p), a, dtype=np.int64) for a, p in local.items()])
        both = np.concatenate(list(local.values()))
        hit = np.isin(bat["tail"], heads)
        rows = bat[hit]
        position = {int(k): i for i, k in enumerate(heads.tolist())}
        at = np.fromiter((position[int(k)] for k in rows["tail"]), dtype=np.int64,
                         count=len(rows))
        joined = np.empty(len(rows), dtype=PAIR)
        joined["head"], joined["tail"] = rows["head"], both["tail"][at]
        for a in local:
            out[a] = joined[owner[at] == a]
        return out, len(bat)

    def semijoin_heads(self, heads: dict[int, np.ndarray]) -> tuple[dict[int, np.ndarray], int]:
        """semijoin(this SDDS, X) on every bucket: the local pairs whose head is in ``heads``
        (the heads of X that were routed to this bucket)."""
        out, scanned = {}, 0
        for a, b in self.buckets.items():
            p = as_pairs(b.records)
            mine = heads.get(a, np.zeros(0, dtype=np.int64))
            scanned += len(p) + len(mine)
            out[a] = p[np.isin(p["head"], mine)]
        return out, scanned

    def snapshot(self) -> dict[int, tuple[int, dict[int, object]]]:
        """Address -> (level, records) of every bucket here (for checks and the explorer)."""
        return {a: (b.level, dict(b.records)) for a, b in self.buckets.items()}

    def sizes(self) -> dict[int, int]:
        """Address -> record count of every bucket here."""
        return {a: len(b.records) for a, b in self.buckets.items()}


PAIR = np.dtype([("head", "<i8"), ("tail", "<i8")])
"""A binary association table's row (the LH* paper's tables hold pairs of integers)."""


def as_pairs(records: dict[int, object]) -> np.ndarray:
    """A bucket's records (head -> tail) as a pair array; tails must be integers."""
    out = np.empty(len(records), dtype=PAIR)
    try:
        out["head"] = np.fromiter(records.keys(), dtype=np.int64, count=len(records))
    except OverflowError:  # an unhashed file takes keys of any size
        raise TypeError("the SDDS operators work on files of 64-bit integer pairs; this file "
                        "holds a key outside -2**63 .. 2**63 - 1") from None
    try:
        out["tail"] = np.fromiter(records.values(), dtype=np.int64, count=len(records))
    except (TypeError, ValueError, OverflowError):
        raise TypeError("the SDDS operators work on files of integer pairs (key -> integer "
                        "value); this file holds other values") from None
    return out


def equi_join(left: np.ndarray, left_on: str, right: np.ndarray, right_on: str) -> np.ndarray:
    """(left.head, right.tail) for every pair of rows with ``left[left_on] == right[right_on]``:
    a hash join with the right side as the build input (``minidb.exec.join.KeyDirectory``)."""
    from minidb.exec.join.key_directory import KeyDirectory

    out = np.empty(0, dtype=PAIR)
    if len(left) and len(right):
        directory = KeyDirectory(right[right_on], left[left_on].dtype)
        li, bi = directory.matches(left[left_on])
        out = np.empty(len(li), dtype=PAIR)
        out["head"] = left["head"][li]
        out["tail"] = right[directory.order]["tail"][bi]
    return out


def bucket_number(value: object, rule: str) -> int:
    """``value`` as a bucket address, or a TypeError naming the addressing ``rule`` that gave it
    (a plugged-in rule may return anything)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import numpy as np

            if isinstance(value, np.integer):
                return int(value)
        except ImportError:  # pragma: no cover
            pass
        raise TypeError(f"{rule} must return a bucket number (an int), got "
                        f"{type(value).__name__} {value!r:.60}")
    if value < 0:
        raise ValueError(f"{rule} returned bucket {value}; bucket numbers are >= 0")
    return value


def machine_of(address: int, machines: int) -> int:
    """The machine that hosts bucket ``address`` (the logical-to-physical mapping)."""
    return address % machines
