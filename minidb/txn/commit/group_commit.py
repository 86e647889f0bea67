"""Group commit (Helland, Sammer, Lyon, Carr, Garrett and Reuter, Tandem, 1988).

Presumed abort, except that the coordinator does not force each COMMIT record on its own. It
appends it and waits: when ``batch`` decisions are waiting, or ``wait`` time units after the first
of them, one force makes them all stable, and only then are the client told and the COMMIT
messages sent. Under load many transactions share a force (the benchmark counts forces per
commit); the price is the wait. A crash before the force loses the unforced COMMIT records: those
transactions were never reported committed, and "no record" reads as abort, as in presumed abort.
"""

from __future__ import annotations

from minidb.plugins import register
from minidb.txn.commit.base import COMMIT
from minidb.txn.commit.presumed_abort import PresumedAbort
from minidb.txn.commit.simnet import Site

GROUP = -1  # the timer of the waiting group is not about one transaction


@register("commit", "group_commit")
class GroupCommit(PresumedAbort):
    name = "group_commit"
    batch = 4
    wait = 3

    def decide_at_coordinator(self, c: Site, txn: int, outcome: str) -> None:
        if outcome != COMMIT:
            super().decide_at_coordinator(c, txn, outcome)
            return
        c.log(COMMIT, txn)  # not forced yet
        group = c.state.setdefault("group", [])
        group.append(txn)
        if len(group) >= self.batch:
            self._release(c)
        elif len(group) == 1:  # the first of a new group starts its clock
            c.state["groups"] = c.state.get("groups", 0) + 1
            c.set_timer(GROUP, f"group {c.state['groups']}", self.wait)

    def _release(self, c: Site) -> None:
        group = c.state.pop("group", [])
        if not group:
            return
        c.state["groups"] = c.state.get("groups", 0) + 1  # the running clock is for this group
        c.force()  # one force for the whole group
        for txn in group:
            c.decide(txn, COMMIT)
            self.send_outcome(c, txn, COMMIT, c.participants)
            c.set_timer(txn, "acks")

    def timeout(self, s: Site, txn: int, tag: str) -> None:
        if tag.startswith("group"):
            if tag == f"group {s.state.get('groups')}":  # the clock of the group now waiting
                self._release(s)
        else:
            super().timeout(s, txn, tag)
