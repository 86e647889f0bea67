"""Lab 5: two-phase commit (what you hand in, as ``commit.py``).

Write the coordinator and the participants of two-phase commit as one ``CommitProtocol`` (the
four handlers of ``minidb.txn.commit.base``). The coordinator is site 0, the participants are
``s.participants`` (1..n). Everything a site does goes through its ``Site``:

* ``s.log(kind, txn, force=True)``: a log record; only forced records (and every record before
  a force) survive a crash. ``s.stable_log()`` is what a restarted site finds.
* ``s.send(to, kind, txn)``: a message. It may be lost, delayed or delivered twice.
* ``s.set_timer(txn, tag)``: ``timeout(s, txn, tag)`` is called later (if the site is still up).
* ``s.vote(txn)``: can this participant commit? ``s.decide(txn, COMMIT or ABORT)``: apply the
  outcome (the coordinator's: tell the client). A site must never decide both ways.
* ``s.state``: a dict for your volatile state; a crash empties it.

The promises the grader checks in every run, whatever crashes and whatever the network does: all
sites that decide decide the same; nothing commits unless every participant voted yes; a commit
the coordinator decided reaches every participant once the crashed sites are back; at most
4 messages per participant in a run without faults. The contract is
``autograder/assignments/lab5/README.md``. The lab notebook runs the fault matrix on this class
(``fault_matrix(["student_2pc"])``), ``pytest`` runs the grader's public cases on it, and
``python -m autograder submit lab5 --out submission.zip`` hands it in. Once it passes, it can
commit a real parallel database's statements too: ``minidb.connect(nodes=3, data_dir=...,
commit="student_2pc")`` runs your participant role on each node's undo journal
(``minidb.txn.commit.enginenet``; ``counters["commit.messages"]`` counts your messages).
"""

from minidb.plugins import register
from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR, CommitProtocol

PREPARED = "prepared"


@register("commit", "student_2pc")
class StudentTwoPhaseCommit(CommitProtocol):
    """Two-phase commit: PREPARE, votes, a forced decision, the decision, acknowledgements."""

    name = "student_2pc"

    def start(self, s, txn):
        """The coordinator is asked to commit ``txn``: ask every participant to prepare."""
        s.state[txn] = {"votes": set(), "acks": set()}
        for p in s.participants:
            s.send(p, "prepare", txn)
        s.set_timer(txn, "votes")

    def receive(self, s, m):
        """Site ``s`` got message ``m`` (``m.src``, ``m.kind``, ``m.txn``)."""
        txn = m.txn
        if s.id == COORDINATOR:
            st, outcome = s.state.get(txn), s.decided(txn)
            if m.kind == "ask":  # a participant in doubt: answer once decided; no record = abort
                known = outcome or self.last_record(s, txn, (COMMIT, ABORT))
                if known is None and st is None:
                    known = ABORT
                if known is not None:
                    s.send(m.src, known, txn)
            elif st is None:
                return
            elif m.kind == "no" and outcome is None:
                self._decide(s, txn, ABORT)
            elif m.kind == "yes" and outcome is None:
                st["votes"].add(m.src)
                if len(st["votes"]) == len(s.participants):
                    self._decide(s, txn, COMMIT)
            elif m.kind == "ack" and outcome is not None:
                st["acks"].add(m.src)
                if len(st["acks"]) == len(s.participants) and not st.get("ended"):
                    st["ended"] = True
                    s.log("end", txn)
            return
        outcome = s.decided(txn)
        if m.kind == "prepare":
            if outcome == ABORT:
                s.send(m.src, "no", txn)
            elif outcome is None and s.state.get(txn) == PREPARED:
                s.send(m.src, "yes", txn)  # the vote again: the first one may have been lost
            elif outcome is None and s.vote(txn):
                s.log(PREPARED, txn, force=True)  # before the vote: a yes must survive a crash
                s.state[txn] = PREPARED
                s.send(m.src, "yes", txn)
                s.set_timer(txn, "outcome")
            elif outcome is None:
                s.log(ABORT, txn, force=True)
                s.decide(txn, ABORT)
                s.send(m.src, "no", txn)
        elif m.kind in (COMMIT, ABORT):
            if outcome is None:
                s.log(m.kind, txn, force=True)
                s.decide(txn, m.kind)
            s.send(m.src, "ack", txn)

    def timeout(self, s, txn, tag):
        """A timer of ``s`` went off: give up on missing votes, repeat what was not answered."""
        if s.id != COORDINATOR:
            if s.decided(txn) is None:
                s.send(COORDINATOR, "ask", txn)
                s.set_timer(txn, "outcome")
            return
        st, outcome = s.state.get(txn), s.decided(txn)
        if st is None:
            return
        if tag == "votes" and outcome is None:
            self._decide(s, txn, ABORT)
        elif tag == "acks" and outcome is not None and not st.get("ended"):
            for p in s.participants:
                if p not in st["acks"]:
                    s.send(p, outcome, txn)
            s.set_timer(txn, "acks")

    def recover(self, s):
        """``s`` restarted after a crash: rebuild what it must from ``s.stable_log()``."""
        for txn in self.logged_txns(s):
            last = self.last_record(s, txn, (PREPARED, COMMIT, ABORT, "end"))
            if s.id == COORDINATOR:
                if last in (COMMIT, ABORT):
                    s.decide(txn, last)
                    s.state[txn] = {"votes": set(), "acks": set()}
                    for p in s.participants:
                        s.send(p, last, txn)
                    s.set_timer(txn, "acks")
            elif last in (COMMIT, ABORT):
                s.decide(txn, last)
            elif last == PREPARED:
                s.state[txn] = PREPARED
                s.send(COORDINATOR, "ask", txn)
                s.set_timer(txn, "outcome")

    def _decide(self, s, txn, outcome):
        """The coordinator's decision: forced before anyone hears it, then sent to everyone."""
        s.log(outcome, txn, force=True)
        s.decide(txn, outcome)
        for p in s.participants:
            s.send(p, outcome, txn)
        s.set_timer(txn, "acks")
