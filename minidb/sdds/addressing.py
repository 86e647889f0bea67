"""LH* addressing: the arithmetic every client, server and coordinator of an LH* file shares.

LH* (Litwin, Neimat, Schneider, SIGMOD 1993; TODS 1996) is linear hashing spread over servers,
the scalable distributed data structure the LH* paper of the course (Karlsson and Kersten 1997,
Section 2) stores its tables in. The rules below are those of ``docs/facts.md`` ("LH*"):

* ``h(i, C) = C mod (2**i x N0)``: the hash function of level ``i``; ``C`` is a key's pseudo-key
  (a non-negative integer), ``N0`` the number of buckets the file starts with.
* The file state ``(i, n)``: level ``i`` and split pointer ``n``; the file has
  ``2**i x N0 + n`` buckets, and bucket ``m`` is at level ``i + 1`` when ``m < n`` or
  ``m >= 2**i x N0`` (it was split, or made by a split, in this round), otherwise at level ``i``.
* A client's image ``(i', n')`` is its own, possibly stale, guess at the file state.
  ``client_address`` is linear hashing's address computation run on the image.
* A server that receives a key it does not hold forwards it (``server_address``); LH* guarantees
  the key reaches its bucket after at most two forwards.
* The first server addressed sends the client an image adjustment message (IAM) with its address
  and level; ``adjust_image`` is the client's update.

Everything here is a pure function of integers, so a student can check each rule by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from minidb.plugins import register

MAX_FORWARDS = 2
"""LH*'s bound: a request reaches the right bucket after at most two forwards (LNS93)."""


def h(level: int, pseudokey: int, n0: int) -> int:
    """The linear-hashing function of ``level``: ``C mod (2**level x N0)``."""
    return pseudokey % (n0 << level)


@dataclass(frozen=True)
class FileState:
    """The true state of an LH* file, held only by its split coordinator."""

    level: int = 0
    """``i``: the current round; buckets below ``n`` are already split into level ``i + 1``."""
    split: int = 0
    """``n``: the next bucket to split."""
    n0: int = 1
    """``N0``: buckets the file starts with."""

    @property
    def buckets(self) -> int:
        """How many buckets the file has: ``2**i x N0 + n``."""
        return (self.n0 << self.level) + self.split

    def bucket_level(self, m: int) -> int:
        """The level ``j`` of bucket ``m``: ``i + 1`` if split (or made) in this round, else ``i``."""
        if not 0 <= m < self.buckets:
            raise ValueError(f"bucket {m} does not exist in a file of {self.buckets} buckets")
        return self.level + 1 if m < self.split or m >= self.n0 << self.level else self.level

    def address(self, pseudokey: int) -> int:
        """The bucket that holds ``pseudokey`` (linear hashing's address on the true state)."""
        a = h(self.level, pseudokey, self.n0)
        return h(self.level + 1, pseudokey, self.n0) if a < self.split else a

    def after_split(self) -> FileState:
        """The state once bucket ``n`` has split into ``n`` and ``n + 2**i x N0``."""
        n = self.split + 1
        if n >= self.n0 << self.level:
            return FileState(self.level + 1, 0, self.n0)
        return FileState(self.level, n, self.n0)

    def before_split(self) -> FileState:
        """The state before the last split (a merge undoes it); the file never shrinks below N0."""
        if self.split > 0:
            return FileState(self.level, self.split - 1, self.n0)
        if self.level == 0:
            raise ValueError(f"a file of N0 = {self.n0} buckets cannot shrink further")
        return FileState(self.level - 1, (self.n0 << (self.level - 1)) - 1, self.n0)

    def last_split(self) -> tuple[int, int]:
        """``(bucket, its sibling)`` made by the last split: what a merge folds back together."""
        before = self.before_split()
        return before.split, before.split + (self.n0 << before.level)


@dataclass(frozen=True)
class Image:
    """A client's image ``(i', n')`` of the file state; it starts at ``(0, 0)``."""

    level: int = 0
    split: int = 0


def client_address(image: Image, pseudokey: int, n0: int) -> int:
    """Where a client with ``image`` sends a request for ``pseudokey``: linear hashing's
    address computed on the image, ``h_i'(C)``, or ``h_(i'+1)(C)`` when that bucket is below the
    image's split pointer ``n'`` (the client believes it split)."""
    # BEGIN SOLUTION: Lab 4 (LH* addressing): the built-in lhstar addressing is the lab's model answer, left out of the student release; write yours in labs/lab4_lhstar/addressing.py and use it as student_lhstar
    a = h(image.level, pseudokey, n0)
    if a < image.split:
        a = h(image.level + 1, pseudokey, n0)
    return a
    # END SOLUTION


def server_address(address: int, level: int, pseudokey: int, n0: int) -> int:
    """Where server ``address`` of level ``level`` sends ``pseudokey``: ``address`` itself when
    the key is home, otherwise the next server to forward to. The forwarding rule: ``a' =
    h_j(C)``; when ``a' != a``, the server also computes ``a'' = h_(j-1)(C)`` and forwards to
    ``a''`` instead when ``a < a'' < a'`` (``a'`` may not exist yet; ``a''`` does)."""
    # BEGIN SOLUTION: Lab 4 (LH* addressing): the built-in lhstar addressing is the lab's model answer, left out of the student release; write yours in labs/lab4_lhstar/addressing.py and use it as student_lhstar
    a1 = h(level, pseudokey, n0)
    if a1 == address:
        return address
    if level > 0:
        a2 = h(level - 1, pseudokey, n0)
        if address < a2 < a1:
            a1 = a2
    return a1
    # END SOLUTION


def adjust_image(image: Image, address: int, level: int, n0: int) -> Image:
    """A client's image after an IAM from server ``address`` of level ``level`` (the first
    server it addressed): when ``level > i'``, the image becomes ``(level - 1, address + 1)``,
    moved on to ``(level, 0)`` when that split pointer completes the round (``n' >= 2**i' x
    N0``); a server no deeper than the image teaches nothing."""
    # BEGIN SOLUTION: Lab 4 (LH* addressing): the built-in lhstar addressing is the lab's model answer, left out of the student release; write yours in labs/lab4_lhstar/addressing.py and use it as student_lhstar
    if level <= image.level:
        return image
    i, n = level - 1, address + 1
    if n >= n0 << i:
        i, n = i + 1, 0
    return Image(i, n)
    # END SOLUTION


class Addressing:
    """The three rules of LH* that clients and servers run, as one pluggable class (plugin kind
    ``lhstar_addressing``): Lab 4's assignment. ``LHStarFile(addressing=NAME)`` runs every
    client and server of a file with the class registered as NAME; the coordinator's own
    arithmetic (``FileState``) is not part of it."""

    def client_address(self, image: Image, pseudokey: int, n0: int) -> int:
        """Where a client with ``image`` sends a request for ``pseudokey``."""
        raise NotImplementedError

    def server_address(self, address: int, level: int, pseudokey: int, n0: int) -> int:
        """``address`` when the key is home there, else the server to forward it to."""
        raise NotImplementedError

    def adjust_image(self, image: Image, address: int, level: int, n0: int) -> Image:
        """The client's image after an IAM from server ``address`` of level ``level``."""
        raise NotImplementedError


@register("lhstar_addressing", "lhstar")
class LHStarAddressing(Addressing):
    """The rules of docs/facts.md ("LH*"), as the functions above compute them."""

    def client_address(self, image: Image, pseudokey: int, n0: int) -> int:
        return client_address(image, pseudokey, n0)

    def server_address(self, address: int, level: int, pseudokey: int, n0: int) -> int:
        return server_address(address, level, pseudokey, n0)

    def adjust_image(self, image: Image, address: int, level: int, n0: int) -> Image:
        return adjust_image(image, address, level, n0)
