"""Presumed commit (Mohan, Lindsay and Obermarck, R*, 1986).

The mirror of presumed abort: "no information" means commit. Commits get cheap (participants do
not force their commit record and do not acknowledge; the coordinator forgets at once), aborts
pay (forced, acknowledged). The price: before the first PREPARE the coordinator forces a
COLLECTING record naming the transaction, so that after a crash it can abort a transaction that
was still collecting votes instead of letting "no information" read as commit. On the parallel
engine (``connect(commit="presumed_commit")``) a node in doubt whose coordinator has forgotten
the transaction commits it, and one whose coordinator holds COLLECTING and no outcome aborts it
(``minidb.txn.two_phase.coordinator_decisions``).
"""

from __future__ import annotations

from minidb.plugins import register
from minidb.txn.commit.base import ABORT, COMMIT
from minidb.txn.commit.simnet import Site
from minidb.txn.commit.two_pc import TwoPhaseCommit

COLLECTING = "collecting"


@register("commit", "presumed_commit")
class PresumedCommit(TwoPhaseCommit):
    name = "presumed_commit"
    unknown_outcome = COMMIT

    def coordinator_begin(self, c: Site, txn: int) -> None:
        c.log(COLLECTING, txn, force=True)

    def commit_needs_ack(self) -> bool:
        return False

    def participant_commit_forced(self) -> bool:
        return False  # lost in a crash, the commit is asked for again and presumed

    def recover_undecided(self, c: Site, txn: int) -> None:
        """COLLECTING and no outcome: the crash came before the decision; abort, loudly."""
        self.decide_at_coordinator(c, txn, ABORT)
