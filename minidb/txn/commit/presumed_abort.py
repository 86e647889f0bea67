"""Presumed abort (Mohan, Lindsay and Obermarck, R*, 1986).

Two-phase commit where "no information" means abort: nobody forces an abort record, nobody
acknowledges an abort, and a coordinator asked about a transaction it has forgotten answers ABORT.
A commit costs what it costs in 2PC (coordinator and participants force, participants
acknowledge); an abort costs no force and half the messages.

R*'s read-only optimization comes with it (``read_only_votes``, ``TwoPhaseCommit.vote_read``): a
participant that changed nothing logs nothing, votes READ and leaves; the outcome and the
acknowledgements are exchanged with the YES voters only. Presumed abort is what makes this safe
without any record: a read-only participant never asks, and if the coordinator crashes before
its COMMIT is forced, "no record" already means abort, which undoes nothing at a site that
changed nothing. With 3 participants of which one is read-only a commit costs 10 messages and 5
forces (12 and 7 without it); with all three read-only, 6 messages and no force. It is the
protocol the parallel
engine commits its statements with unless ``connect(commit=...)`` names another
(``minidb.txn.two_phase``, ``minidb.txn.commit.enginenet``).
"""

from __future__ import annotations

from minidb.plugins import register
from minidb.txn.commit.base import ABORT
from minidb.txn.commit.simnet import Site
from minidb.txn.commit.two_pc import TwoPhaseCommit


@register("commit", "presumed_abort")
class PresumedAbort(TwoPhaseCommit):
    name = "presumed_abort"
    unknown_outcome = ABORT
    read_only_votes = True

    def log_abort(self, s: Site, txn: int) -> None:
        s.log(ABORT, txn)  # not forced: a lost abort record reads as "abort" anyway

    def abort_needs_ack(self) -> bool:
        return False
