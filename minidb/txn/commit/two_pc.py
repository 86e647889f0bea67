"""Two-phase commit, as Gray described it (1978; docs/facts.md, "Commit protocols").

Coordinator: send PREPARE to every participant; a NO or a silence past the timeout is an abort;
all YES: force COMMIT, tell the client, send COMMIT; when every participant has acknowledged,
write END (not forced) and forget. An abort is forced and acknowledged the same way.
Participant: on PREPARE, force PREPARED and vote YES (or force ABORT and vote NO); then wait.
On COMMIT or ABORT, force it, apply it, acknowledge. A participant that waits too long asks the
coordinator again and again: having voted YES it may not decide alone (the *blocking* window).
Recovery reads the stable log: a coordinator with COMMIT (or ABORT) and no END sends it again; a
participant with PREPARED and no outcome asks. A coordinator asked about a transaction it has no
record of never decided to commit it, and answers ABORT.

``PresumedAbort`` and ``PresumedCommit`` change what is forced and acknowledged through the hooks
``log_abort``, ``abort_needs_ack``, ``participant_commit_forced``, ``commit_needs_ack`` and
``unknown_outcome``. ``read_only_votes`` turns on R*'s read-only optimization (Mohan, Lindsay
and Obermarck 1986; presumed abort uses it): a participant that changed nothing logs nothing,
votes READ and leaves; the coordinator tells the outcome only to the others (its COMMIT record
names them, for recovery), and when every participant voted READ it logs nothing at all.
"""

from __future__ import annotations

from minidb.plugins import register
from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR, READ, CommitProtocol, Message
from minidb.txn.commit.simnet import Site

PREPARED, END = "prepared", "end"


@register("commit", "2pc")
class TwoPhaseCommit(CommitProtocol):
    name = "2pc"
    #: what a coordinator answers about a transaction it has no record of
    unknown_outcome = ABORT
    #: R*'s read-only optimization: a participant that changed nothing votes READ and leaves
    #: (off in plain 2PC: every participant prepares and learns the outcome)
    read_only_votes = False

    # -- the variants' hooks ----------------------------------------------------------------------
    def coordinator_begin(self, c: Site, txn: int) -> None:
        """Before the first PREPARE (presumed commit forces a record here)."""

    def log_abort(self, s: Site, txn: int) -> None:
        s.log(ABORT, txn, force=True)

    def abort_needs_ack(self) -> bool:
        return True

    def commit_needs_ack(self) -> bool:
        return True

    def participant_commit_forced(self) -> bool:
        return True

    # -- coordinator ------------------------------------------------------------------------------
    def start(self, c: Site, txn: int) -> None:
        c.state[txn] = {"votes": {}, "acks": set()}
        self.coordinator_begin(c, txn)
        for p in c.participants:
            c.send(p, "prepare", txn)
        c.set_timer(txn, "votes")

    def decide_at_coordinator(self, c: Site, txn: int, outcome: str) -> None:
        st = c.state.setdefault(txn, {"votes": {}, "acks": set()})
        told = st["told"] = [p for p in c.participants if st["votes"].get(p) != READ]
        if outcome == COMMIT and not told:
            self.commit_read_only(c, txn, st)
            return
        if outcome == COMMIT:
            c.log(COMMIT, txn, force=True, told=told)  # recovery tells these again
        else:
            self.log_abort(c, txn)
        c.decide(txn, outcome)
        self.send_outcome(c, txn, outcome, told)
        if self.needs_ack(outcome):
            c.set_timer(txn, "acks")
        else:
            self.forget(c, txn, st)

    def commit_read_only(self, c: Site, txn: int, st: dict) -> None:
        """Every participant voted READ (R*, Mohan et al. 1986): nothing changed anywhere, so
        there is nothing to make durable and nobody to tell. The coordinator logs nothing, not
        even END, and commits; a crash afterwards forgets a transaction that changed nothing."""
        c.decide(txn, COMMIT)
        st["done"] = True

    @staticmethod
    def told(c: Site, st: dict) -> list[int]:
        """The participants the outcome goes to: all but those that voted READ and left."""
        return st.get("told", c.participants)

    def needs_ack(self, outcome: str) -> bool:
        return self.commit_needs_ack() if outcome == COMMIT else self.abort_needs_ack()

    def send_outcome(self, c: Site, txn: int, outcome: str, to) -> None:
        for p in to:
            c.send(p, outcome, txn)

    def forget(self, c: Site, txn: int, st: dict) -> None:
        """Every participant knows the outcome (or never needs to): END, not forced."""
        st["done"] = True
        if self.needs_ack(c.decided(txn) or ABORT):
            c.log(END, txn)

    def coordinator_receive(self, c: Site, m: Message) -> None:
        txn, st, outcome = m.txn, c.state.get(m.txn), c.decided(m.txn)
        if m.kind == "ask":
            if outcome is None and st is None:  # no record of it: never decided
                outcome = self.remembered(c, txn)
            if outcome is not None:
                c.send(m.src, outcome, txn)
            return
        if st is None:
            return
        if m.kind in ("yes", "no", READ) and outcome is None:
            st["votes"][m.src] = m.kind
            if m.kind == "no":
                self.decide_at_coordinator(c, txn, ABORT)
            elif len(st["votes"]) == len(c.participants):
                self.decide_at_coordinator(c, txn, COMMIT)
        elif m.kind == "ack" and outcome is not None and not st.get("done"):
            st["acks"].add(m.src)
            if st["acks"] >= set(self.told(c, st)):
                self.forget(c, txn, st)

    def remembered(self, c: Site, txn: int) -> str:
        """The outcome of ``txn`` from the stable log, or the presumption when there is none."""
        last = self.last_record(c, txn, (COMMIT, ABORT))
        return last if last is not None else self.unknown_outcome

    # -- participant ------------------------------------------------------------------------------
    def participant_receive(self, p: Site, m: Message) -> None:
        txn, outcome = m.txn, p.decided(m.txn)
        if m.kind == "prepare":
            if outcome is not None:
                if outcome == ABORT:
                    p.send(m.src, "no", txn)
                return
            if p.state.get(txn) == PREPARED:
                p.send(m.src, "yes", txn)  # a repeated PREPARE: the vote again
                return
            if not p.vote(txn):
                self.log_abort(p, txn)
                p.decide(txn, ABORT)
                p.send(m.src, "no", txn)
            elif self.read_only_votes and not p.changed(txn):
                self.vote_read(p, txn, m.src)
            else:
                p.log(PREPARED, txn, force=True)
                p.state[txn] = PREPARED
                p.send(m.src, "yes", txn)
                p.set_timer(txn, "outcome")
        elif m.kind in (COMMIT, ABORT):
            if outcome is None:
                if m.kind == COMMIT:
                    p.log(COMMIT, txn, force=self.participant_commit_forced())
                else:
                    self.log_abort(p, txn)
                p.decide(txn, m.kind)
            if self.needs_ack(m.kind):
                p.send(m.src, "ack", txn)

    def vote_read(self, p: Site, txn: int, coordinator: int) -> None:
        """R*'s read-only vote (Mohan, Lindsay and Obermarck 1986): this participant changed
        nothing, so it logs nothing (a crash leaves nothing to redo or undo), answers READ and
        leaves. It is not told the outcome and sends no acknowledgement; a PREPARE that comes
        again gets READ again."""
        p.leave(txn)
        p.send(coordinator, READ, txn)

    # -- the four handlers --------------------------------------------------------------------------
    def receive(self, s: Site, m: Message) -> None:
        if s.id == COORDINATOR:
            self.coordinator_receive(s, m)
        else:
            self.participant_receive(s, m)

    def timeout(self, s: Site, txn: int, tag: str) -> None:
        if s.id != COORDINATOR:
            if s.decided(txn) is None:  # in doubt: ask, and ask again later
                s.send(COORDINATOR, "ask", txn)
                s.set_timer(txn, "outcome")
            return
        st, outcome = s.state.get(txn), s.decided(txn)
        if st is None or st.get("done"):
            return
        if tag == "votes" and outcome is None:
            self.decide_at_coordinator(s, txn, ABORT)
        elif tag == "acks" and outcome is not None:
            missing = [p for p in self.told(s, st) if p not in st["acks"]]
            self.send_outcome(s, txn, outcome, missing)
            s.set_timer(txn, "acks")

    def recover(self, s: Site) -> None:
        if s.id == COORDINATOR:
            for txn in self.logged_txns(s):
                last = self.last_record(s, txn, (COMMIT, ABORT, END))
                if last in (COMMIT, ABORT):
                    s.decide(txn, last)
                    st = s.state[txn] = {"votes": {}, "acks": set(),
                                         "told": self.told_in_log(s, txn, last)}
                    if self.needs_ack(last):
                        self.send_outcome(s, txn, last, st["told"])
                        s.set_timer(txn, "acks")
                    else:
                        st["done"] = True
                elif last is None:
                    self.recover_undecided(s, txn)
            return
        for txn in self.logged_txns(s):
            last = self.last_record(s, txn, (PREPARED, COMMIT, ABORT))
            if last in (COMMIT, ABORT):
                s.decide(txn, last)
            elif last == PREPARED:  # in doubt: the coordinator knows
                s.state[txn] = PREPARED
                s.send(COORDINATOR, "ask", txn)
                s.set_timer(txn, "outcome")

    @staticmethod
    def told_in_log(c: Site, txn: int, outcome: str) -> list[int]:
        """Whom the outcome record of ``txn`` says to tell (every participant if it names
        nobody: an abort record, or a protocol without read-only votes)."""
        told = c.participants
        for r in c.stable_log():
            if r.txn == txn and r.kind == outcome and "told" in r.data:
                told = list(r.data["told"])
        return told

    def recover_undecided(self, c: Site, txn: int) -> None:
        """A transaction the coordinator has a record of but no outcome (presumed commit's
        COLLECTING): nothing to do in plain 2PC, where no such record is written."""
