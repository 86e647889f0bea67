"""What a commit protocol is in minidb: message handlers of a coordinator and its participants.

A protocol is a class registered under kind ``"commit"`` (``minidb.plugins``). It holds no state of
its own: every site (the coordinator, site 0, and participants 1..n) keeps its state in a
``Site``, which is also how it acts on the world. A protocol reacts to four things:

``start(c, txn)``
    the coordinator ``c`` is asked to commit transaction ``txn`` (the work is done everywhere).
``receive(s, m)``
    site ``s`` got message ``m`` (a ``Message``: sender, kind, transaction, data).
``timeout(s, txn, tag)``
    a timer that ``s`` set with ``s.set_timer`` went off (the site is still up).
``recover(s)``
    site ``s`` restarted after a crash: its volatile state is gone, its *forced* log records are
    all it knows (``s.stable_log()``).

and acts only through its site: ``s.log(kind, txn, force=...)`` (a force is what survives a
crash; an unforced record survives only if a later force covers it), ``s.send(to, kind, txn)``,
``s.set_timer(delay, txn, tag)``, ``s.vote(txn)`` (the participant's local answer: can it commit?)
and ``s.decide(txn, COMMIT or ABORT)`` (the outcome the site applies; it must never change).
A protocol with R*'s read-only optimization also asks ``s.changed(txn)`` (did this participant
change anything?) and lets one that did not vote ``READ`` and ``s.leave(txn)``.

The same protocol object runs under the seeded simulated network of
``minidb.txn.commit.simnet`` (drop, delay, duplicate, partition, crash at any step), which is what
the fault matrix (``minidb.txn.commit.matrix``) and the autograder drive. What must hold, whatever
fails: every site that decides decides the same; nothing commits unless every participant voted
yes; and once the coordinator has told the client "committed", every participant commits once
it is up and can hear the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minidb.txn.commit.simnet import Site

COMMIT, ABORT = "commit", "abort"
#: the vote of a participant that changed nothing (R*'s read-only optimization, Mohan, Lindsay
#: and Obermarck 1986): it has nothing to commit or undo, logs nothing and leaves after phase one
READ = "read"
COORDINATOR = 0  # the coordinator is site 0; participants are 1..n


@dataclass(frozen=True)
class Message:
    """One message between sites; ``data`` holds what a protocol wants to carry (a vote, a state)."""

    src: int
    dst: int
    kind: str
    txn: int
    data: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class LogRecord:
    kind: str
    txn: int
    data: dict = field(default_factory=dict, compare=False)


class CommitProtocol:
    """Base class of the commit protocols; see the module docstring. Subclasses override the four
    handlers. ``timeout_after`` is how long (in the network's time units; a message takes 1-3)
    a site waits before its timer goes off."""

    name = "base"
    timeout_after = 20

    def start(self, c: Site, txn: int) -> None:
        raise NotImplementedError(f"{type(self).__name__}.start")

    def receive(self, s: Site, m: Message) -> None:
        raise NotImplementedError(f"{type(self).__name__}.receive")

    def timeout(self, s: Site, txn: int, tag: str) -> None:
        """Default: nothing (override to retry, ask around, or give up)."""

    def recover(self, s: Site) -> None:
        raise NotImplementedError(f"{type(self).__name__}.recover")

    # helpers every protocol uses -----------------------------------------------------------------
    @staticmethod
    def last_record(s: Site, txn: int, kinds: tuple[str, ...]) -> str | None:
        """The kind of the last stable log record of ``txn`` among ``kinds`` (None: none)."""
        found = None
        for r in s.stable_log():
            if r.txn == txn and r.kind in kinds:
                found = r.kind
        return found

    @staticmethod
    def logged_txns(s: Site) -> list[int]:
        """The transactions the site's stable log mentions, in order of first mention."""
        return list(dict.fromkeys(r.txn for r in s.stable_log()))
