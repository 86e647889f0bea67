"""Three-phase commit with its termination protocol (Skeen, 1981; docs/facts.md).

Between "everyone voted yes" and "commit" sits a PRE-COMMIT round: the coordinator forces
PRECOMMIT and sends it; a participant forces PRECOMMITTED and acknowledges; with every
acknowledgement in, the coordinator forces COMMIT and sends it. The point is the rule it makes
possible: no site can be committed while another is still merely prepared (*waiting*). So when
the coordinator falls silent, the participants can finish without it. A participant whose timer
goes off becomes a *backup coordinator* (the first time participant 1, then 2, ...: each one's
turn comes with its own count of timeouts) and asks every participant for its state:

* someone committed -> commit;  someone aborted -> abort;
* someone pre-committed -> pre-commit the others, then commit;
* every participant answered and all are waiting -> abort.

A participant that has told a backup its state ignores the old coordinator's PRE-COMMIT from then
on (only the backup it follows may move it), which is what keeps a late coordinator and a backup
from deciding differently. Aborting needs *every* participant's answer, so the protocol does not
block when one site fails, but it may when several do, and it is not safe across a partition
that lets both halves go on (here a partition only loses messages; the checks show the cost).
"""

from __future__ import annotations

from minidb.plugins import register
from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR, CommitProtocol, Message
from minidb.txn.commit.simnet import Site

PREPARED, PRECOMMITTED = "prepared", "precommitted"
WAITING, UNKNOWN = "waiting", "unknown"


@register("commit", "3pc")
class ThreePhaseCommit(CommitProtocol):
    name = "3pc"

    # -- coordinator ------------------------------------------------------------------------------
    def start(self, c: Site, txn: int) -> None:
        c.state[txn] = {"votes": {}, "acks": set(), "phase": "votes"}
        for p in c.participants:
            c.send(p, "prepare", txn)
        c.set_timer(txn, "votes")

    def coordinator_receive(self, c: Site, m: Message) -> None:
        txn, st, outcome = m.txn, c.state.get(m.txn), c.decided(m.txn)
        if m.kind == "ask":
            known = outcome or self.last_record(c, txn, (COMMIT, ABORT))
            if known is not None:
                c.send(m.src, known, txn)
            return
        if st is None or outcome is not None:
            return
        if m.kind in (COMMIT, ABORT):  # a backup coordinator finished it: follow
            c.log(m.kind, txn, force=True)
            c.decide(txn, m.kind)
        elif m.kind == "no" and st["phase"] == "votes":
            self._finish(c, txn, ABORT, c.participants)
        elif m.kind == "yes" and st["phase"] == "votes":
            st["votes"][m.src] = "yes"
            if len(st["votes"]) == len(c.participants):
                st["phase"] = "precommit"
                c.log("precommit", txn, force=True)
                for p in c.participants:
                    c.send(p, "precommit", txn)
                c.set_timer(txn, "acks")
        elif m.kind == "ack" and st["phase"] == "precommit":
            st["acks"].add(m.src)
            if len(st["acks"]) == len(c.participants):
                self._finish(c, txn, COMMIT, c.participants)

    def _finish(self, s: Site, txn: int, outcome: str, tell) -> None:
        s.log(outcome, txn, force=True)
        s.decide(txn, outcome)
        for p in tell:
            if p != s.id:
                s.send(p, outcome, txn)

    # -- participant ------------------------------------------------------------------------------
    def participant_receive(self, p: Site, m: Message) -> None:
        txn, outcome = m.txn, p.decided(m.txn)
        st = p.state.setdefault(txn, {"state": UNKNOWN, "follows": COORDINATOR, "turn": 0})
        if outcome is not None:  # decided: say so to whoever asks or pushes
            if m.kind not in (COMMIT, ABORT, "state"):
                p.send(m.src, outcome, txn)
            return
        if m.kind == "prepare" and st["state"] == UNKNOWN:
            if p.vote(txn):
                p.log(PREPARED, txn, force=True)
                st["state"] = WAITING
                p.send(m.src, "yes", txn)
                p.set_timer(txn, "silence")
            else:
                self._finish(p, txn, ABORT, [])
                p.send(m.src, "no", txn)
        elif m.kind == "prepare" and st["state"] == WAITING:
            p.send(m.src, "yes", txn)
        elif m.kind == "precommit" and m.src == st["follows"]:
            if st["state"] == WAITING:
                p.log(PRECOMMITTED, txn, force=True)
                st["state"] = PRECOMMITTED
            if st["state"] == PRECOMMITTED:
                p.send(m.src, "ack", txn)
        elif m.kind in (COMMIT, ABORT):
            self._finish(p, txn, m.kind, [])
        elif m.kind == "state_req":
            st["follows"] = m.src
            p.send(m.src, "state", txn, state=st["state"])
        elif m.kind == "state":
            self._backup_collect(p, txn, st, m)
        elif m.kind == "ack" and st.get("backup") == "precommit":
            st["acks"].add(m.src)
            if st["acks"] >= set(st["answers"]):
                self._finish(p, txn, COMMIT, p.participants)

    # -- the backup coordinator (the termination protocol) -----------------------------------------
    def _become_backup(self, p: Site, txn: int, st: dict) -> None:
        st.update(backup="collecting", answers={p.id: st["state"]}, acks={p.id}, follows=p.id)
        for q in p.participants:
            if q != p.id:
                p.send(q, "state_req", txn)
        p.set_timer(txn, "states")

    def _backup_collect(self, p: Site, txn: int, st: dict, m: Message) -> None:
        if st.get("backup") != "collecting":
            return
        st["answers"][m.src] = m.data["state"]
        if len(st["answers"]) == len(p.participants):
            self._backup_decide(p, txn, st)

    def _backup_decide(self, p: Site, txn: int, st: dict) -> None:
        states = set(st["answers"].values())
        if COMMIT in states:
            self._finish(p, txn, COMMIT, p.participants + [COORDINATOR])
        elif ABORT in states:
            self._finish(p, txn, ABORT, p.participants + [COORDINATOR])
        elif PRECOMMITTED in states:
            if st["state"] == WAITING:
                p.log(PRECOMMITTED, txn, force=True)
                st["state"] = PRECOMMITTED
            st["backup"] = "precommit"
            for q in st["answers"]:
                if q != p.id:
                    p.send(q, "precommit", txn)
            if st["acks"] >= set(st["answers"]):
                self._finish(p, txn, COMMIT, p.participants + [COORDINATOR])
            else:
                p.set_timer(txn, "backup_acks")
        elif len(st["answers"]) == len(p.participants):  # everyone waiting: nobody committed
            self._finish(p, txn, ABORT, p.participants + [COORDINATOR])
        else:
            st["backup"] = None  # someone did not answer: wait for the next turn

    # -- the four handlers --------------------------------------------------------------------------
    def receive(self, s: Site, m: Message) -> None:
        if s.id == COORDINATOR:
            self.coordinator_receive(s, m)
        else:
            self.participant_receive(s, m)

    def timeout(self, s: Site, txn: int, tag: str) -> None:
        if s.decided(txn) is not None:
            return
        if s.id == COORDINATOR:
            st = s.state.get(txn)
            if st is None:
                return
            if tag == "votes" and st["phase"] == "votes":
                self._finish(s, txn, ABORT, s.participants)
            elif tag == "acks" and st["phase"] == "precommit":  # ask again, never commit alone
                for p in s.participants:
                    if p not in st["acks"]:
                        s.send(p, "precommit", txn)
                s.set_timer(txn, "acks")
            return
        st = s.state.get(txn)
        if st is None:
            return
        if tag == "states" and st.get("backup") == "collecting":
            self._backup_decide(s, txn, st)
        elif tag == "backup_acks" and st.get("backup") == "precommit":
            for q in st["answers"]:
                if q not in st["acks"]:
                    s.send(q, "precommit", txn)
            s.set_timer(txn, "backup_acks")
            return
        if st.get("backup") in ("collecting", "precommit"):
            return
        st["turn"] += 1  # the coordinator is silent: whose turn is it to take over?
        if s.participants[(st["turn"] - 1) % len(s.participants)] == s.id:
            self._become_backup(s, txn, st)
        else:
            s.send(COORDINATOR, "ask", txn)
        s.set_timer(txn, "silence")

    def recover(self, s: Site) -> None:
        for txn in self.logged_txns(s):
            last = self.last_record(s, txn, (PREPARED, "precommit", PRECOMMITTED, COMMIT, ABORT))
            if last in (COMMIT, ABORT):
                s.decide(txn, last)
            elif s.id == COORDINATOR:
                if last == "precommit":  # a backup may have finished it: ask everyone
                    s.state[txn] = {"votes": {}, "acks": set(), "phase": "precommit"}
                    for p in s.participants:
                        s.send(p, "precommit", txn)
                    s.set_timer(txn, "acks")
            else:  # waiting or pre-committed: the others know more
                state = PRECOMMITTED if last == PRECOMMITTED else WAITING
                s.state[txn] = {"state": state, "follows": COORDINATOR, "turn": 0}
                s.send(COORDINATOR, "ask", txn)
                s.set_timer(txn, "silence")
