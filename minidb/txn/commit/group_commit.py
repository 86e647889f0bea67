"""Group commit (Helland, Sammer, Lyon, Carr, Garrett and Reuter, Tandem, 1988).

Presumed abort, except that no site forces its log for one transaction alone. A record that must
be stable before the site may go on (the coordinator's COMMIT, a participant's PREPARED before
its yes, its COMMIT before its acknowledgement) is appended unforced, and what the site was about
to do is queued behind it. When ``batch`` such records wait at a site, or ``wait`` time units
after the first of them, one force makes them all stable and the queued actions run, in order.
Under load many transactions share a force; the price is the wait. With ``force_time`` set on the
network (a force takes time on the site's one log device) the saving becomes throughput:
``benchmarks/bench_commit.py`` measures both. A crash before the force loses the queued records
and actions together: nothing was promised on them.
"""

from __future__ import annotations

from collections.abc import Callable

from minidb.plugins import register
from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR, Message
from minidb.txn.commit.presumed_abort import PresumedAbort
from minidb.txn.commit.simnet import Site
from minidb.txn.commit.two_pc import PREPARED

GROUP = -1  # the timer of the waiting group is not about one transaction
PENDING = "pending"  # a participant whose PREPARED waits for the group's force


@register("commit", "group_commit")
class GroupCommit(PresumedAbort):
    name = "group_commit"
    batch = 4
    wait = 3
    #: R*'s read-only votes are left to presumed abort: here a vote waits in a group, and a READ
    #: that skips the group would make the lab's comparison of forces harder to read; a
    #: read-only participant prepares and learns the outcome as any other
    read_only_votes = False

    # -- the group: records waiting for one force, with what to do once it is done -------------
    def _after_force(self, s: Site, action: Callable[[], None]) -> None:
        group = s.state.setdefault("group", [])
        group.append(action)
        if len(group) >= self.batch:
            self._release(s)
        elif len(group) == 1:  # the first of a new group starts its clock
            s.state["groups"] = s.state.get("groups", 0) + 1
            s.set_timer(GROUP, f"group {s.state['groups']}", self.wait)

    def _release(self, s: Site) -> None:
        group = s.state.pop("group", [])
        if not group:
            return
        s.state["groups"] = s.state.get("groups", 0) + 1  # the running clock is for this group
        s.force()  # one force for the whole group
        for action in group:
            action()

    # -- coordinator: the COMMIT record waits for the group -------------------------------------
    def decide_at_coordinator(self, c: Site, txn: int, outcome: str) -> None:
        if outcome != COMMIT:
            super().decide_at_coordinator(c, txn, outcome)
            return
        c.state[txn]["pending"] = True  # decided, not yet stable: no timeout may abort it
        c.log(COMMIT, txn)

        def tell() -> None:
            c.decide(txn, COMMIT)
            self.send_outcome(c, txn, COMMIT, c.participants)
            c.set_timer(txn, "acks")

        self._after_force(c, tell)

    # -- participant: PREPARED and COMMIT wait for the group ------------------------------------
    def participant_receive(self, p: Site, m: Message) -> None:
        txn, outcome, state = m.txn, p.decided(m.txn), p.state.get(m.txn)
        if m.kind != ABORT and (state == PENDING or (m.kind == COMMIT and state == COMMIT)):
            return  # its answer goes out with the group
        if m.kind == "prepare" and outcome is None and state is None and p.vote(txn):
            p.log(PREPARED, txn)
            p.state[txn] = PENDING

            def vote_yes() -> None:
                if p.decided(txn) is not None:  # an abort overtook the vote
                    return
                p.state[txn] = PREPARED
                p.send(m.src, "yes", txn)
                p.set_timer(txn, "outcome")

            self._after_force(p, vote_yes)
        elif m.kind == COMMIT and outcome is None:
            p.log(COMMIT, txn)
            p.state[txn] = COMMIT

            def apply() -> None:
                p.decide(txn, COMMIT)
                p.send(m.src, "ack", txn)

            self._after_force(p, apply)
        else:
            super().participant_receive(p, m)

    def timeout(self, s: Site, txn: int, tag: str) -> None:
        if tag.startswith("group"):
            if tag == f"group {s.state.get('groups')}":  # the clock of the group now waiting
                self._release(s)
            return
        st = s.state.get(txn)
        if s.id == COORDINATOR and isinstance(st, dict) and st.get("pending") \
                and s.decided(txn) is None:
            return  # its COMMIT waits for the group's force
        super().timeout(s, txn, tag)

    def remembered(self, c: Site, txn: int) -> str:
        return super().remembered(c, txn) if c.decided(txn) is None else c.decided(txn)

