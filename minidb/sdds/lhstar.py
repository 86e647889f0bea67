"""An LH* file: servers holding buckets, a split coordinator, and clients with their own images.

LH* (Litwin, Neimat, Schneider, SIGMOD 1993) is the scalable distributed data structure the LH*
paper of the course builds on (Karlsson and Kersten 1997, Section 2): a file that grows one
bucket at a time as data arrives, with no central directory that clients must consult. The
parts, as in the paper:

* **Servers** hold the buckets (``minidb.sdds.servers``). A bucket knows its address and level
  only; a request for a key that is not home is *forwarded* (at most twice, LH*'s bound, which
  every operation here checks and raises ``LHStarInvariantError`` on).
* **The split coordinator** holds the true file state ``(i, n)``. A bucket that overflows sends
  it a *collision* message; the coordinator then splits bucket ``n`` (not necessarily the one
  that overflowed: that is linear hashing). *Uncontrolled* splitting splits on every collision;
  *controlled* splitting only when the estimated load factor is above a threshold. Deletes that
  leave a bucket under ``merge_below`` of its capacity report an *underflow*, and the coordinator
  undoes the last split when the estimated load is low.
* **Clients** compute addresses on their own image ``(i', n')``; images are never broadcast.
  The first server of a forwarded request sends an *image adjustment message* (IAM), and the
  client's next request for that part of the file goes straight home.

Messages are counted by kind (``Messages``): a plain insert is one request, a plain lookup a
request and a reply, as the paper reports; forwards, IAMs, and the coordinator's messages are
counted apart. Every operation returns an ``Operation`` saying where it went.

The network is simulated by the caller's process: a forward is a message that the file delivers
on the forwarding server's behalf, to the server the forwarding rule named. The decisions (which
address, whether to forward, what moves in a split) are all made by the servers and clients
themselves, so inline and Ray runs take the same steps and count the same messages.

Estimating the load (controlled splitting and merging) is minidb's choice, since the sources give
no formula: with a uniform hash a bucket of level ``j`` holds ``1 / (2**j x N0)`` of the keys,
so a bucket reporting ``x`` records implies about ``x x 2**j x N0`` records in the file, and a
load factor of that over ``buckets x capacity``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields

import numpy as np

from minidb.errors import MinidbError
from minidb.plugins import lookup
from minidb.sdds.addressing import MAX_FORWARDS, Addressing, FileState, Image, h
from minidb.sdds.servers import BucketHost, Reply, bucket_number, machine_of, pseudokey

SPLIT_POLICIES = ("uncontrolled", "controlled")
_IDENTITIES = itertools.count(1)


@dataclass(frozen=True)
class SDDSDictionary:
    """What it takes to reach an SDDS, as the LH* paper's Section 3.4 lists it.

    ``identity``: the SDDS's unique number; ``home``: the virtual machine holding logical node
    (bucket) 0; ``mapping``: logical node -> virtual machine number (Section 3.3: several
    logical nodes share a machine, and files that share a mapping keep equal keys together);
    ``machines``: virtual machine number -> where it runs (a Ray actor's id, or this process);
    ``images``: each client's current image ``(i', n')``; ``co_located``: the identities of the
    files that split with this one and so share its mapping. The servers hold the data itself.
    ``as_json()`` is the form kept between loads of a database."""

    identity: int
    home: int
    mapping: dict[int, int]
    machines: dict[int, str]
    images: dict[str, tuple[int, int]]
    co_located: tuple[int, ...]

    def as_json(self) -> dict:
        return {"identity": self.identity, "home": self.home,
                "mapping": {str(k): v for k, v in self.mapping.items()},
                "machines": {str(k): v for k, v in self.machines.items()},
                "images": {k: list(v) for k, v in self.images.items()},
                "co_located": list(self.co_located)}


class LHStarError(MinidbError):
    """A user mistake with an LH* file (a bad parameter, a key of the wrong type)."""


class LHStarInvariantError(AssertionError):
    """LH* broke one of its own guarantees (more than two forwards, a misplaced record)."""


@dataclass
class Messages:
    """Messages sent, by kind. ``+`` adds two counts."""

    requests: int = 0
    """Client -> server: an insert, lookup or delete (one per operation, plus a resend after
    hitting a bucket that a merge removed)."""
    forwards: int = 0
    """Server -> server: a request passed on to the server the forwarding rule names."""
    replies: int = 0
    """Server -> client: the answer of a lookup or delete."""
    iams: int = 0
    """Server -> client: image adjustment messages."""
    collisions: int = 0
    """Server -> coordinator: a bucket holds more than its capacity."""
    underflows: int = 0
    """Server -> coordinator: a bucket fell below ``merge_below`` of its capacity."""
    splits: int = 0
    """Coordinator -> server: split orders (one per split)."""
    transfers: int = 0
    """Server -> server: the records moved by a split or a merge (one message each)."""
    acks: int = 0
    """Server -> coordinator: a split or merge is done."""
    merges: int = 0
    """Coordinator -> server: merge orders (one per merge)."""
    broadcasts: int = 0
    """Client -> server and back: one request and one reply per bucket of a select."""

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self))

    def __add__(self, other: Messages) -> Messages:
        return Messages(**{f.name: getattr(self, f.name) + getattr(other, f.name)
                           for f in fields(self)})

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"total": self.total}


@dataclass
class Operation:
    """What one key operation did: where it was sent, where it ended, and its messages."""

    op: str
    key: int
    first: int
    """The bucket the client addressed (after a resend, the resend's address)."""
    home: int
    """The bucket that held the key's home."""
    forwards: int
    iam: bool
    found: bool
    value: object
    messages: Messages = field(default_factory=Messages)


@dataclass
class _SplitGroup:
    """The split coordinator's state, shared by the files that split together."""

    state: FileState
    files: list = field(default_factory=list)


class Client:
    """A client of an LH* file with its own image of the file state (initially ``(0, 0)``)."""

    def __init__(self, file: LHStarFile, name: str) -> None:
        self.file = file
        self.name = name
        self.image = Image()
        self.messages = Messages()
        self.operations = 0

    def request(self, op: str, key: int, value: object = None) -> Operation:
        """Send one ``op`` ("insert", "lookup" or "delete") for ``key``; returns what it did."""
        if op not in ("insert", "lookup", "delete"):
            raise LHStarError(f"unknown LH* operation {op!r}; choose insert, lookup or delete")
        return self.file._operate(self, op, key, value)

    def insert(self, key: int, value: object = None) -> Operation:
        """Store ``value`` under ``key`` (an existing key's value is replaced)."""
        return self.file._operate(self, "insert", key, value)

    def lookup(self, key: int) -> object:
        """The value stored under ``key``, or None."""
        return self.file._operate(self, "lookup", key).value

    def delete(self, key: int) -> bool:
        """Remove ``key``; True when it was there."""
        return self.file._operate(self, "delete", key).found

    def __repr__(self) -> str:
        return f"Client({self.name!r}, image=(i'={self.image.level}, n'={self.image.split}))"


class LHStarFile:
    """An LH* file over ``machines`` server machines, inline or on Ray actors.

    ``capacity`` is a bucket's size in records; ``n0`` the buckets the file starts with;
    ``split`` the split policy ("uncontrolled": split on every collision; "controlled": only when
    the estimated load factor exceeds ``threshold``); ``merge_below`` the share of its capacity
    under which a bucket reports an underflow after a delete (0 turns merging off).
    ``hashed=False`` addresses integer keys by their own value, as the papers' examples do.
    ``co_locate_with`` makes this file split and merge together with another one (same N0,
    machines and hashing), so that equal keys of the two always live on the same machine: the
    LH* paper's shared logical-to-physical mapping (Section 3.3).
    ``addressing`` names the rules clients and servers run (plugin kind ``lhstar_addressing``:
    the built-in "lhstar", or a student's class, Lab 4), or is such a class or instance.
    """

    def __init__(self, capacity: int = 50, n0: int = 1, machines: int = 4,
                 split: str = "uncontrolled", threshold: float = 0.8, merge_below: float = 0.0,
                 merge_threshold: float = 0.4, hashed: bool = True,
                 backend: str = "inline", addressing: str | type | Addressing = "lhstar",
                 co_locate_with: LHStarFile | None = None) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise LHStarError(f"bucket capacity must be a positive number of records, got "
                              f"{capacity!r}")
        if isinstance(n0, bool) or not isinstance(n0, int) or n0 < 1:
            raise LHStarError(f"N0 (buckets at the start) must be a positive integer, got {n0!r}")
        if isinstance(machines, bool) or not isinstance(machines, int) or machines < 1:
            raise LHStarError(f"machines must be a positive integer, got {machines!r}")
        if split not in SPLIT_POLICIES:
            raise LHStarError(f"unknown split policy {split!r}; choose one of "
                              f"{', '.join(SPLIT_POLICIES)}")
        for name, number in (("threshold", threshold), ("merge_below", merge_below),
                             ("merge_threshold", merge_threshold)):
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise LHStarError(f"{name} must be a number, got {type(number).__name__} "
                                  f"{number!r:.40}")
        if not isinstance(hashed, (bool, np.bool_)):
            raise LHStarError(f"hashed must be True or False, got {hashed!r:.40}")
        if not 0 < threshold <= 1.5:
            raise LHStarError(f"the load-factor threshold must be in (0, 1.5], got {threshold}")
        if not 0 <= merge_below < 1:
            raise LHStarError(f"merge_below must be in [0, 1), got {merge_below}")
        if backend not in ("inline", "ray"):
            raise LHStarError(f"unknown backend {backend!r}; choose inline or ray")
        self.capacity, self.n0, self.machines = capacity, n0, machines
        self.split_policy, self.threshold = split, threshold
        self.merge_below, self.merge_threshold = merge_below, merge_threshold
        self.hashed, self.backend = bool(hashed), backend
        if isinstance(addressing, str):
            addressing = lookup("lhstar_addressing", addressing)
        if isinstance(addressing, type):
            addressing = addressing()
        if not isinstance(addressing, Addressing):
            raise LHStarError(f"addressing must be a registered name or an Addressing, got "
                              f"{type(addressing).__name__}")
        self.addressing = addressing
        self.identity = next(_IDENTITIES)
        self.messages = Messages()
        self.max_forwards_seen = 0
        self._clients: dict[str, Client] = {}
        if co_locate_with is None:
            self._group = _SplitGroup(FileState(0, 0, n0))
        else:
            self._join_group(co_locate_with)
        self._group.files.append(self)
        self._hosts = [self._start_host(m) for m in range(machines)]
        for address in range(self.state.buckets):
            self._call(address, "create", address, self.state.bucket_level(address), {})

    def _join_group(self, other: LHStarFile) -> None:
        if not isinstance(other, LHStarFile):
            raise LHStarError(f"co_locate_with must be an LH* file, got {type(other).__name__}")
        same = {"n0": (self.n0, other.n0), "machines": (self.machines, other.machines),
                "hashed": (self.hashed, other.hashed)}
        for name, (mine, theirs) in same.items():
            if mine != theirs:
                raise LHStarError(f"a co-located file needs the same {name} as the file it "
                                  f"follows ({theirs}), got {mine}")
        self._group = other._group

    @property
    def state(self) -> FileState:
        """The true file state ``(i, n)``, as the split coordinator holds it (shared by files
        that split together, ``co_locate_with``)."""
        return self._group.state

    # -- the servers ------------------------------------------------------------------------
    def _start_host(self, machine: int):
        args = (machine, self.capacity, self.n0, self.hashed, self.addressing)
        if self.backend == "inline":
            return BucketHost(*args)
        import ray

        if not ray.is_initialized():
            from minidb.cluster.backends import start_ray

            start_ray()
        return ray.remote(num_cpus=0)(BucketHost).remote(*args)

    def _call_machine(self, machine: int, method: str, *args):
        if not self._hosts:
            raise LHStarError("this LH* file is closed")
        host = self._hosts[machine]
        if self.backend == "inline":
            return getattr(host, method)(*args)
        import ray

        from minidb.cluster.machine import load_note, phase_timeout

        allowed = phase_timeout(None)
        try:
            return ray.get(getattr(host, method).remote(*args), timeout=allowed)
        except ray.exceptions.GetTimeoutError:
            raise MinidbError(f"LH* server machine {machine} did not answer {method} within "
                              f"{allowed:.0f} s ({load_note()})") from None

    def _call(self, address: int, method: str, *args):
        return self._call_machine(machine_of(address, self.machines), method, *args)

    def close(self) -> None:
        """Stop the server actors (nothing to do inline); a co-located file splits on without
        this one."""
        if self in self._group.files:
            self._group.files.remove(self)
            self._group = _SplitGroup(self.state, [self])  # its own state from now on
        if self.backend == "ray":
            import ray

            for host in self._hosts:
                ray.kill(host)
        self._hosts = []

    def __enter__(self) -> LHStarFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- clients ----------------------------------------------------------------------------
    def client(self, name: str = "client") -> Client:
        """The client called ``name`` (made on first use, with the image ``(0, 0)``)."""
        if name not in self._clients:
            self._clients[name] = Client(self, name)
        return self._clients[name]

    @property
    def clients(self) -> list[Client]:
        return list(self._clients.values())

    def _operate(self, client: Client, op: str, key: int, value: object = None) -> Operation:
        """One request as LH* runs it: the client addresses a bucket from its image, servers
        forward it (at most twice), the first server's IAM adjusts the image, and an overflow
        or underflow is reported to the coordinator. Every message is counted."""
        if isinstance(key, np.integer):  # a numpy integer is an integer key like any other
            key = int(key)
        try:
            c = pseudokey(key, self.hashed)
        except (TypeError, ValueError) as err:
            raise LHStarError(str(err)) from None
        msgs = Messages(requests=1)
        address = self._client_address(client, c)
        reply: Reply | None = self._call(address, "receive", address, op, key, value)
        if reply is None:  # the image is ahead of a file that merged: start again from (0, 0)
            client.image = Image()
            address = self._client_address(client, c)
            msgs.requests += 1
            reply = self._call(address, "receive", address, op, key, value)
            if reply is None:
                raise LHStarInvariantError(f"the image (0, 0) sent key {key} to bucket "
                                           f"{address}, which does not exist (file state "
                                           f"{self.state})")
        first, first_level, forwards = address, reply.level, 0
        while not reply.home:
            forwards += 1
            msgs.forwards += 1
            if forwards > MAX_FORWARDS:
                raise LHStarInvariantError(
                    f"key {key} forwarded a third time (to bucket {reply.forward_to}); LH* "
                    f"allows two (client image {client.image}, file state {self.state})")
            sender, address = reply.address, reply.forward_to
            reply = self._call(address, "receive", address, op, key, value)
            if reply is None:
                raise LHStarInvariantError(f"bucket {sender} forwarded key {key} to bucket "
                                           f"{address}, which does not exist (file state "
                                           f"{self.state})")
        if forwards:
            msgs.iams += 1
            image = self.addressing.adjust_image(client.image, first, first_level, self.n0)
            if not isinstance(image, Image):
                raise TypeError(f"adjust_image must return an Image, got "
                                f"{type(image).__name__} {image!r:.60}")
            client.image = image
        if op != "insert":
            msgs.replies += 1
        self.max_forwards_seen = max(self.max_forwards_seen, forwards)
        done = Operation(op, key, first, reply.address, forwards, bool(forwards), reply.found,
                         reply.value, msgs)
        client.messages = client.messages + msgs
        client.operations += 1
        self.messages = self.messages + msgs
        if reply.overflowing and op == "insert":
            self._collision(reply)
        elif (op == "delete" and self.merge_below
              and reply.records < self.merge_below * self.capacity):
            self._underflow(reply)
        return done

    def _client_address(self, client: Client, c: int) -> int:
        return bucket_number(self.addressing.client_address(client.image, c, self.n0),
                             "client_address")

    # -- the split coordinator --------------------------------------------------------------
    def estimated_load(self, records: int, level: int) -> float:
        """The file's load factor as the coordinator estimates it from one bucket's report."""
        return records * (self.n0 << level) / (self.state.buckets * self.capacity)

    def _collision(self, reply: Reply) -> None:
        self.messages.collisions += 1
        if (self.split_policy == "uncontrolled"
                or self.estimated_load(reply.records, reply.level) > self.threshold):
            self.split_once()

    def _underflow(self, reply: Reply) -> None:
        self.messages.underflows += 1
        if (self.state.buckets > self.n0
                and self.estimated_load(reply.records, reply.level) < self.merge_threshold):
            self.merge_once()

    def split_once(self) -> None:
        """Split bucket ``n`` into ``n`` and ``n + 2**i x N0`` and advance the file state; every
        file co-located with this one splits its bucket ``n`` too (the synchronous splitting
        the LH* paper's footnote 3 names as what co-location takes)."""
        state = self.state
        n, new = state.split, state.split + (self.n0 << state.level)
        for f in self._group.files:
            f.messages.splits += 1
            moving = f._call(n, "split", n, new)
            f._call(new, "create", new, state.level + 1, moving)
            f.messages.transfers += 1
            f.messages.acks += 1
        self._group.state = state.after_split()

    def merge_once(self) -> None:
        """Undo the last split: the bucket it made gives its records back to its parent (in
        every co-located file)."""
        parent, sibling = self.state.last_split()
        for f in self._group.files:
            f.messages.merges += 1
            records = f._call(sibling, "give_up", sibling)
            f._call(parent, "absorb", parent, records)
            f.messages.transfers += 1
            f.messages.acks += 1
        self._group.state = self.state.before_split()

    # -- whole-file operations ----------------------------------------------------------------
    def insert_many(self, items: Iterable[tuple[int, object]], client: str = "loader") -> None:
        """Insert every ``(key, value)`` through one client."""
        c = self.client(client)
        for key, value in items:
            c.insert(key, value)

    def select(self, predicate: Callable[[int, object], bool] | None = None
               ) -> list[tuple[int, object]]:
        """Every (key, value) satisfying ``predicate``: the select operator of the LH* paper
        (Section 4.1), sent to every bucket's server, the results gathered here."""
        self.messages.broadcasts += 2 * self.state.buckets
        out: list[tuple[int, object]] = []
        for machine in range(self.machines):
            out += self._call_machine(machine, "select", predicate)
        return out

    def buckets(self) -> dict[int, tuple[int, dict[int, object]]]:
        """Address -> (level, records) of every bucket (no messages counted: a checker's view)."""
        out: dict[int, tuple[int, dict[int, object]]] = {}
        for machine in range(self.machines):
            out.update(self._call_machine(machine, "snapshot"))
        return dict(sorted(out.items()))

    def bucket_sizes(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for machine in range(self.machines):
            out.update(self._call_machine(machine, "sizes"))
        return dict(sorted(out.items()))

    def __len__(self) -> int:
        return sum(self.bucket_sizes().values())

    def load_factor(self) -> float:
        """Records over the file's room (buckets x capacity)."""
        return len(self) / (self.state.buckets * self.capacity)

    def check(self) -> None:
        """Raise ``LHStarInvariantError`` unless the file is as LH* says it must be: buckets
        ``0 .. 2**i x N0 + n - 1`` exist, each at the level the file state gives it, each on its
        machine, and each record in the bucket its key hashes to (so no key is in two)."""
        for machine in range(self.machines):
            strays = [a for a in self._call_machine(machine, "sizes")
                      if machine_of(a, self.machines) != machine]
            if strays:
                raise LHStarInvariantError(f"buckets {strays} are on machine {machine}; the "
                                           "mapping puts them elsewhere")
        buckets = self.buckets()
        expected = list(range(self.state.buckets))
        if list(buckets) != expected:
            raise LHStarInvariantError(f"buckets {list(buckets)} exist; the file state "
                                       f"{self.state} says {expected}")
        for address, (level, records) in buckets.items():
            if level != self.state.bucket_level(address):
                raise LHStarInvariantError(f"bucket {address} is at level {level}; the file "
                                           f"state says {self.state.bucket_level(address)}")
            for key in records:
                home = self.state.address(pseudokey(key, self.hashed))
                if home != address or h(level, pseudokey(key, self.hashed), self.n0) != address:
                    raise LHStarInvariantError(f"key {key} is in bucket {address}; its home is "
                                               f"bucket {home}")

    def dictionary(self) -> SDDSDictionary:
        """The SDDS dictionary of this file (LH* paper §3.4): home, mapping, machines, clients'
        images and the files it is co-located with."""
        if not self._hosts:
            raise LHStarError("this LH* file is closed")
        mapping = {a: machine_of(a, self.machines) for a in range(self.state.buckets)}
        where = {}
        for m, host in enumerate(self._hosts):
            actor = getattr(host, "_actor_id", None)  # a Ray actor handle's id, when there is one
            where[m] = ("this process" if self.backend == "inline"
                        else f"Ray actor {actor.hex() if actor is not None else m}")
        images = {c.name: (c.image.level, c.image.split) for c in self.clients}
        others = tuple(f.identity for f in self._group.files if f is not self)
        return SDDSDictionary(self.identity, mapping[0], mapping, where, images, others)

    def describe(self) -> str:
        """One line: the file state, buckets, records, load factor and messages so far."""
        return (f"LH* file: i={self.state.level}, n={self.state.split}, "
                f"{self.state.buckets} buckets on {self.machines} machines, {len(self)} records, "
                f"load factor {self.load_factor():.2f}, {self.messages.total} messages")
