"""Commit protocols (``minidb.txn.commit``) on the seeded simulated network.

* Fault-free costs: messages and log forces per commit and per abort, as each protocol's
  definition says (docs/facts.md, "Commit protocols"), for 3 and 5 participants.
* The fault matrix: every built-in protocol, crashed at every step of the coordinator and of a
  participant, over reliable and lossy (drop + duplicate) links, several seeds: no run breaks a
  promise (atomicity, no commit without every yes, no lost commit).
* Blocking: a coordinator that never comes back leaves 2PC-style participants in doubt; 3PC's
  termination protocol finishes every time.
* The checks catch broken protocols: deciding before every vote, not forcing PREPARED, not
  forcing COMMIT each fail somewhere in the matrix.
* Replay: one seed gives the same trace event for event.
* Group commit shares forces under load; a protocol registered under a new name runs everywhere.
* R*'s read-only optimization (presumed abort): a participant that changed nothing votes READ,
  logs nothing and leaves; exact costs, all read-only, a NO beside a READ, the matrix with
  read-only participants, and the checks still catching what they should.
"""

from __future__ import annotations

import pytest

from minidb.plugins import names, register
from minidb.txn.commit.base import ABORT, COMMIT, COORDINATOR, READ
from minidb.txn.commit.matrix import fault_matrix, one_run, protocol, summarize
from minidb.txn.commit.presumed_abort import PresumedAbort
from minidb.txn.commit.simnet import Crash, Partition, RunResult
from minidb.txn.commit.two_pc import PREPARED, TwoPhaseCommit

BUILT_IN = ["2pc", "presumed_abort", "presumed_commit", "3pc", "group_commit"]


def test_every_built_in_protocol_is_registered():
    assert set(BUILT_IN) <= set(names("commit"))


# (messages, forces) of a fault-free commit and of an abort (participant 1 votes no), n sites
COSTS = {
    "2pc": lambda n: ((4 * n, 2 * n + 1), (4 * n, 2 * n)),
    "presumed_abort": lambda n: ((4 * n, 2 * n + 1), (3 * n, n - 1)),
    "presumed_commit": lambda n: ((3 * n, n + 2), (4 * n, 2 * n + 1)),
    "3pc": lambda n: ((5 * n, 3 * n + 2), (3 * n, 2 * n)),
    # the abort's cost depends on whether a vote's group was forced before the abort arrived
    "group_commit": lambda n: ((4 * n, 2 * n + 1), None),
}


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("name", BUILT_IN)
def test_fault_free_messages_and_forces(name, n):
    commit = one_run(name, n)
    abort = one_run(name, n, votes={(1, 0): False})
    assert commit.outcome(COORDINATOR, 0) == COMMIT
    assert all(commit.outcome(p, 0) == COMMIT for p in range(1, n + 1))
    assert abort.outcome(COORDINATOR, 0) == ABORT
    assert not commit.violations() and not abort.violations()
    want_commit, want_abort = COSTS[name](n)
    assert (commit.messages, sum(commit.log_forces)) == want_commit
    if want_abort is None:  # at most presumed abort's, plus a late yes per participant
        assert abort.messages <= 4 * n - 1 and sum(abort.log_forces) <= n - 1
    else:
        assert (abort.messages, sum(abort.log_forces)) == want_abort


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_fault_matrix_holds_every_promise(name):
    rows = fault_matrix([name], participants=3, seeds=range(3))
    broken = [(r.crashed, r.step, r.drop, r.seed, r.violations) for r in rows if r.violations]
    assert not broken, broken[:3]
    restarted = [r for r in rows if r.restart and r.crashed != "none"]
    assert len(restarted) >= 40  # every step of both sites, two kinds of links, three seeds
    assert {r.outcome for r in restarted} >= {COMMIT, ABORT}  # crashes do change outcomes


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILT_IN)
def test_the_fault_matrix_over_many_seeds_and_five_participants(name):
    rows = fault_matrix([name], participants=5, seeds=range(25))
    assert not [r for r in rows if r.violations]


def test_two_phase_protocols_block_where_three_phase_commit_terminates():
    summary = {s.protocol: s for s in summarize(fault_matrix(BUILT_IN, seeds=range(1)))}
    for name in ("2pc", "presumed_abort", "presumed_commit", "group_commit"):
        assert summary[name].blocked_runs >= 3, name
    assert summary["3pc"].blocked_runs == 0
    # the window: crash for good right after deciding commit, before telling anyone
    for name in ("2pc", "3pc"):
        steps = one_run(name).messages  # a step count large enough to pass the votes
        blocked = []
        for step in range(1, steps + 1):
            r = one_run(name, crash=Crash(COORDINATOR, step, None))
            blocked.append(len(r.blocked(0)))
            assert not r.violations(everyone_recovers=False)
        assert (max(blocked) == 3) if name == "2pc" else (max(blocked) == 0)


def test_a_partition_delays_but_does_not_split_the_decision():
    cut = [Partition(4, 80, frozenset({COORDINATOR}))]  # the coordinator cut off for a while
    for name in BUILT_IN:
        for seed in range(5):
            r = one_run(name, seed=seed, partitions=cut)
            assert not r.violations(), (name, seed)
            assert all(r.outcome(s, 0) is not None for s in range(4)), (name, seed)


# -- broken protocols: the checks must catch them -------------------------------------------------
class DecidesBeforeAllVotes(TwoPhaseCommit):
    """Commits on the first YES."""

    def coordinator_receive(self, c, m):
        if m.kind == "yes" and c.decided(m.txn) is None and m.txn in c.state:
            self.decide_at_coordinator(c, m.txn, COMMIT)
            return
        super().coordinator_receive(c, m)


class ForgetsToForcePrepared(TwoPhaseCommit):
    """Votes YES with its PREPARED record still in memory."""

    def participant_receive(self, p, m):
        if m.kind == "prepare" and p.decided(m.txn) is None and p.state.get(m.txn) is None \
                and p.vote(m.txn):
            p.log(PREPARED, m.txn)  # not forced
            p.state[m.txn] = PREPARED
            p.send(m.src, "yes", m.txn)
            p.set_timer(m.txn, "outcome")
            return
        super().participant_receive(p, m)

    def recover(self, s):
        if s.id != COORDINATOR:  # no PREPARED in the log: "I never voted", so abort alone
            for txn in self.logged_txns(s):
                if self.last_record(s, txn, (COMMIT, ABORT)) is None:
                    s.decide(txn, ABORT)
        super().recover(s)


class ForgetsToForceCommit(TwoPhaseCommit):
    """Tells the client and the participants before its COMMIT record is stable."""

    def decide_at_coordinator(self, c, txn, outcome):
        if outcome == COMMIT:
            c.log(COMMIT, txn)  # not forced: a crash now forgets the decision it already sent
            c.decide(txn, COMMIT)
            self.send_outcome(c, txn, COMMIT, c.participants)
            c.set_timer(txn, "acks")
            return
        super().decide_at_coordinator(c, txn, outcome)


@pytest.mark.parametrize("broken", [DecidesBeforeAllVotes, ForgetsToForcePrepared,
                                    ForgetsToForceCommit])
def test_the_matrix_catches_a_broken_protocol(broken):
    rows = fault_matrix([broken], seeds=range(3))
    with_no_vote = one_run(broken, votes={(2, 0): False})
    assert [r for r in rows if r.violations] or with_no_vote.violations()


def test_a_seed_replays_exactly_and_seeds_differ():
    def run(seed):
        return one_run("3pc", seed=seed, drop=0.3, duplicate=0.2, crash=Crash(0, 5, 25),
                       trace=True).trace

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_group_commit_shares_log_forces_under_load():
    txns = 24
    grouped = one_run("group_commit", txns=txns, start_every=0.5)
    single = one_run("presumed_abort", txns=txns, start_every=0.5)
    assert not grouped.violations() and not single.violations()
    assert all(grouped.outcome(COORDINATOR, t) == COMMIT for t in range(txns))
    assert single.log_forces[COORDINATOR] == txns
    assert grouped.log_forces[COORDINATOR] <= txns / 3  # batches of up to 4
    assert all(f <= txns * 2 / 3 for f in grouped.log_forces[1:])  # participants group too


def test_when_forces_take_time_group_commit_commits_more_per_unit_of_time():
    """A force costs 0.4 time units on a site's one log device and a transaction starts every
    0.5: presumed abort's participants need 0.8 units of forces per transaction and fall behind
    (votes time out, transactions abort); grouped forces keep up."""
    def committed(name):
        r = one_run(name, txns=120, start_every=0.5, force_time=0.4)
        assert not r.violations()
        return sum(r.outcome(COORDINATOR, t) == COMMIT for t in range(120)), r

    grouped, g = committed("group_commit")
    single, s = committed("presumed_abort")
    assert grouped == 120 and single < 0.8 * grouped
    assert sum(g.log_forces) < sum(s.log_forces) / 2


def test_a_protocol_registered_under_a_new_name_runs_in_the_matrix():
    @register("commit", "test_students_2pc")
    class Students2PC(TwoPhaseCommit):
        name = "test_students_2pc"

    assert "test_students_2pc" in names("commit")
    rows = fault_matrix(["test_students_2pc"], seeds=range(1))
    assert rows and not [r for r in rows if r.violations]


# -- R*'s read-only optimization (presumed abort) -------------------------------------------------
def _sent(r, src: int, kind: str | None = None, dst: int | None = None) -> list[dict]:
    return [e for e in r.trace if e["event"] in ("send", "lost") and e["src"] == src
            and (kind is None or e["kind"] == kind) and (dst is None or e["dst"] == dst)]


def test_presumed_abort_with_one_read_only_participant_costs_exactly_this():
    """Three participants, participant 1 changed nothing. Messages: 3 PREPAREs, 3 votes (one
    READ, two YES), then COMMIT and ACK with the two YES voters only: 3 + 3 + 2 + 2 = 10
    (12 without the optimization). Forces: the coordinator's COMMIT (1), the two YES voters'
    PREPARED (2) and COMMIT (2): 5 (7 without); participant 1 writes no record at all. The
    coordinator's records: COMMIT (forced) and END (not)."""
    r = one_run("presumed_abort", 3, read_only=(1,), trace=True)
    plain = one_run("presumed_abort", 3)
    assert (plain.messages, sum(plain.log_forces)) == (12, 7)
    assert (r.messages, sum(r.log_forces)) == (10, 5)
    assert r.log_forces == [1, 0, 2, 2] and r.log_records == [2, 0, 2, 2]
    assert [e["kind"] for e in _sent(r, 1)] == [READ]
    assert not _sent(r, COORDINATOR, dst=1, kind=COMMIT)  # it is not told the outcome
    assert [r.outcome(s, 0) for s in range(4)] == [COMMIT, None, COMMIT, COMMIT]
    assert r.has_left(1, 0) and not r.blocked(0) and not r.violations()


def test_presumed_abort_with_every_participant_read_only_logs_nothing():
    """3 PREPAREs and 3 READs; the coordinator writes no COMMIT and no END, and commits."""
    r = one_run("presumed_abort", 3, read_only=(1, 2, 3))
    assert (r.messages, r.log_forces, r.log_records) == (6, [0] * 4, [0] * 4)
    assert r.outcome(COORDINATOR, 0) == COMMIT and not r.violations()


@pytest.mark.parametrize("name", ["2pc", "presumed_commit", "3pc", "group_commit"])
def test_the_other_protocols_let_a_read_only_participant_take_part(name):
    r, plain = one_run(name, 3, read_only=(1,)), one_run(name, 3)
    assert (r.messages, r.log_forces) == (plain.messages, plain.log_forces)
    assert r.outcome(1, 0) == COMMIT and not r.left


def test_a_no_beside_a_read_only_participant_still_aborts():
    """Participant 2 votes no, participant 1 is read-only. Whoever had not voted READ when the
    coordinator decided is told ABORT (a NO that overtakes participant 1's READ gets it told
    too, harmlessly); participant 1 never forces anything."""
    left_out = 0
    for seed in range(6):
        r = one_run("presumed_abort", 3, seed=seed, read_only=(1,), votes={(2, 0): False},
                    trace=True)
        assert [r.outcome(s, 0) for s in (0, 2, 3)] == [ABORT] * 3, seed
        assert r.outcome(1, 0) in (None, ABORT) and r.log_forces[1] == 0
        assert not r.violations()
        left_out += r.outcome(1, 0) is None and not _sent(r, COORDINATOR, dst=1, kind=ABORT)
    assert left_out  # in some runs its READ came first: it is not told at all


def test_a_repeated_prepare_gets_read_again():
    r = one_run("presumed_abort", 3, read_only=(1,), duplicate=1.0, trace=True)
    reads = [e for e in r.trace if e["event"] == "deliver" and e["src"] == 1]
    assert len(reads) >= 2 and {e["kind"] for e in reads} == {READ}
    assert r.log_records[1] == 0 and r.outcome(COORDINATOR, 0) == COMMIT
    assert not r.violations()


def test_a_read_only_participant_that_crashes_is_harmless():
    for step in (1, 2):  # before its READ; after it (a step it never takes: nothing happens)
        r = one_run("presumed_abort", 3, crash=Crash(1, step, 30), read_only=(1,))
        assert not r.violations() and not r.blocked(0)
        assert r.outcome(COORDINATOR, 0) == (ABORT if step == 1 else COMMIT)


def test_the_matrix_with_read_only_participants_holds_every_promise():
    rows = [r for r in fault_matrix(["presumed_abort"], seeds=range(3)) if r.read_only]
    assert {r.read_only for r in rows} == {(1,), (1, 2, 3)}
    assert {r.crashed for r in rows} >= {"coordinator", "participant 1", "participant 2"}
    assert len(rows) >= 60 and {r.outcome for r in rows} >= {COMMIT, ABORT}
    assert not [(r.crashed, r.step, r.seed, r.violations) for r in rows if r.violations]
    assert fault_matrix(["presumed_abort"], seeds=range(3)) == \
        fault_matrix(["presumed_abort"], seeds=range(3))  # seeded: the same runs again
    every = fault_matrix(BUILT_IN, seeds=range(2), read_only=True)  # the others ignore the mark
    assert not [(r.protocol, r.crashed, r.step, r.violations) for r in every if r.violations]


class ReadsAlthoughItChanged(PresumedAbort):
    """Votes READ without asking whether the participant changed anything."""

    def participant_receive(self, p, m):
        if m.kind == "prepare" and p.id == 1 and p.decided(m.txn) is None:
            self.vote_read(p, m.txn, m.src)
            return
        super().participant_receive(p, m)


def test_the_checks_catch_a_read_vote_from_a_participant_that_changed_something():
    r = one_run(ReadsAlthoughItChanged(), 3)
    assert any("voted read-only and left, but had changed something" in v
               for v in r.violations())


def test_a_read_only_mark_does_not_excuse_a_participant_that_did_not_leave():
    """The lost-commit check skips only participants that voted READ and left."""
    def result(left):
        return RunResult(2, {}, [(1.0, 0, 0, COMMIT), (2.0, 2, 0, COMMIT)], [True] * 3, 6,
                         [0] * 3, [0] * 3, [], [0], {(1, 0), (2, 0)}, set(), {(1, 0)}, left)

    assert any("participant(s) [1] never did" in v for v in result(set()).violations())
    assert not result({(1, 0)}).violations()


# -- the same protocols with every site a Ray actor --------------------------------------------
def _same_run(a, b) -> None:
    assert a.decisions == b.decisions
    assert (a.messages, a.log_forces, a.up) == (b.messages, b.log_forces, b.up)
    assert a.voted == b.voted and a.lost_work == b.lost_work


@pytest.mark.ray
def test_on_ray_actors_a_seed_gives_the_simulated_run(ray_session, tmp_path):
    from minidb.txn.commit.raynet import RayNetwork
    from minidb.txn.commit.simnet import SimulatedNetwork

    for i, (name, crash) in enumerate([("2pc", None), ("3pc", Crash(COORDINATOR, 5, 20)),
                                       ("presumed_abort", Crash(2, 2, 20))]):
        kw = dict(participants=3, seed=11, drop=0.2, duplicate=0.1,
                  crashes=[crash] if crash else [])
        simulated = SimulatedNetwork(protocol(name), **kw).run()
        net = RayNetwork(protocol(name), directory=tmp_path / str(i), **kw)
        try:
            on_ray = net.run()
        finally:
            net.close()
        _same_run(on_ray, simulated)
        assert not on_ray.violations()
        if crash is not None:  # the crashed site restarted as another process, from its file
            assert len(net.sites[crash.site].pids) == 2
            assert (tmp_path / str(i) / f"site-{crash.site}.log").stat().st_size > 0


@pytest.mark.ray
def test_a_students_protocol_runs_on_ray_actors(ray_session, tmp_path):
    from minidb.txn.commit.raynet import RayNetwork

    net = RayNetwork(ForgetsToForcePrepared(), crashes=[Crash(1, 3, 20)], directory=tmp_path)
    try:
        result = net.run()
    finally:
        net.close()
    assert result.violations()  # its unforced vote died with the process


def test_the_experiment_reports_every_protocol_and_refuses_bad_parameters():
    from minidb.experiments import get_experiment
    from minidb.experiments.registry import ExperimentError

    exp = get_experiment("ingres.commit_protocols")
    rows = exp.run({"protocols": "2pc, 3pc, presumed_abort", "seeds": 1})
    table = {(r["row"], r["metric"]): r["value"] for r in rows}
    assert table["2pc", "violations"] == table["3pc", "violations"] == 0
    assert table["presumed_abort", "violations"] == 0
    assert table["2pc", "blocked_runs"] > 0 and table["3pc", "blocked_runs"] == 0
    assert (table["2pc", "commit_messages"], table["3pc", "commit_messages"]) == (12, 15)
    # a participant that changed nothing: 2PC ignores it, presumed abort lets it vote READ
    assert (table["2pc", "read_only_messages"], table["2pc", "read_only_forces"]) == (12, 7)
    assert (table["presumed_abort", "read_only_messages"],
            table["presumed_abort", "read_only_forces"]) == (10, 5)
    for bad, says in (({"protocols": "nope"}, "unknown commit protocol 'nope'"),
                      ({"protocols": ""}, "unknown commit protocol"),
                      ({"participants": 1}, "at least 2"), ({"seeds": 0}, "at least 1")):
        with pytest.raises(ExperimentError, match=says):
            exp.run(bad)
