"""Lab 5's cases and the checks the grader runs on them: two-phase commit under faults.

Every case is a set of runs of one transaction on the simulated network (``harness``): a
coordinator and ``participants`` participants, some votes, maybe a crash of one site at each of
its steps (restarted 30 time units later), maybe a lossy network. From what the child reports
the grader rebuilds each run's ``RunResult`` and checks the promises of
``minidb.txn.commit.simnet.RunResult.violations`` (every site decides the same; no commit without
every yes; a commit reaches every participant; no work a crash wiped out is committed), and that
every run ends with every site decided (all of them are back, and the network delivers what is
sent again), with no participant that voted left in doubt. Runs without faults must end with
every site decided as the votes say, within 4 messages per participant.

Nothing the child says about itself is believed beyond what it saw: the checks are the grader's.
"""

from __future__ import annotations

from autograder.grading import Case, Malformed, Verdict
from minidb.txn.commit.base import ABORT, COMMIT
from minidb.txn.commit.simnet import RunResult

CATEGORIES = ("commit without faults", "a no vote", "the coordinator crashes",
              "a participant crashes", "a lossy network")


def commit_case(case_id: str, title: str, points: float, *, category: str, participants: int,
                seed: int, seeds: int = 1, no_votes: tuple[int, ...] = (),
                crash_site: int | None = None, drop: float = 0.0, duplicate: float = 0.0,
                hidden: bool = False, about: str = "") -> Case:
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for case {case_id}")
    problem = _not_of_category(category, participants, no_votes, crash_site, drop, duplicate)
    if problem:
        raise ValueError(f"case {case_id} is not {category!r}: {problem}")
    inputs = {"participants": participants, "seed": seed, "seeds": seeds,
              "no_votes": list(no_votes), "crash_site": crash_site, "drop": drop,
              "duplicate": duplicate}
    return Case(case_id, title, points, hidden, inputs, {},
                check=lambda case, obs: check_runs(case.inputs, obs), about=about,
                category=category)


def _not_of_category(category: str, participants: int, no_votes: tuple[int, ...],
                     crash_site: int | None, drop: float, duplicate: float) -> str | None:
    """Why these inputs are not of ``category`` (None when they are): each category holds by
    construction, whatever the seed."""
    if not set(no_votes) <= set(range(1, participants + 1)):
        return f"no votes {list(no_votes)} from participants that do not exist"
    if crash_site is not None and not 0 <= crash_site <= participants:
        return f"site {crash_site} does not exist"
    faults = crash_site is not None or drop or duplicate
    if category == "commit without faults" and (faults or no_votes):
        return "a fault or a no vote"
    if category == "a no vote" and not no_votes:
        return "every participant votes yes"
    if category == "the coordinator crashes" and crash_site != 0:
        return "the coordinator does not crash"
    if category == "a participant crashes" and not crash_site:
        return "no participant crashes"
    if category == "a lossy network" and not (drop or duplicate):
        return "the network neither loses nor repeats messages"
    return None


def _result(inputs: dict, run: dict) -> RunResult:
    try:
        decisions = [(0.0, int(s), int(t), str(o)) for s, t, o in run["decisions"]]
        voted = {(int(s), int(t)) for s, t in run["voted"]}
        lost = {(int(s), int(t)) for s, t in run["lost_work"]}
        up = [bool(u) for u in run["up"]]
        messages, forces = int(run["messages"]), int(run["forces"])
    except (KeyError, TypeError, ValueError):
        raise Malformed("a run's answer lacks decisions, votes, sites up or counts") from None
    n = inputs["participants"]
    if len(up) != n + 1:
        raise Malformed(f"a run reports {len(up)} sites, not {n + 1}")
    votes = {(p, 0): False for p in inputs["no_votes"]}
    return RunResult(n, votes, decisions, up, messages, [0] * (n + 1), [forces], [], [0],
                     voted, lost)


def _describe(inputs: dict, run: dict) -> str:
    where = f"seed {run.get('seed')}"
    crash = run.get("crash")
    if crash:
        who = "the coordinator" if crash[0] == 0 else f"participant {crash[0]}"
        where += f", {who} crashed before its step {crash[1]} (back 30 units later)"
    if inputs["drop"] or inputs["duplicate"]:
        where += f", {inputs['drop']:.0%} of messages lost, {inputs['duplicate']:.0%} delivered twice"
    return where


def check_runs(inputs: dict, observation: dict) -> Verdict:
    runs = observation.get("runs")
    if not isinstance(runs, list) or not runs:
        raise Malformed("expected a list of runs")
    if observation.get("tampered"):
        reason = f"the submission changed the simulator ({', '.join(observation['tampered'])})"
        return Verdict(False, reason, reason=reason)
    n = inputs["participants"]
    faults = inputs["crash_site"] is not None or inputs["drop"] or inputs["duplicate"]
    wrong: list[str] = []
    for run in runs:
        if not isinstance(run, dict):
            raise Malformed("a run's answer is not an object")
        where = _describe(inputs, run)
        if run.get("error"):
            wrong.append(f"{where}: {run['error']}")
            continue
        r = _result(inputs, run)
        problems = r.violations(everyone_recovers=True)
        in_doubt = r.blocked(0)
        if in_doubt:
            problems.append(f"participant(s) {in_doubt} voted and never learned the outcome, "
                            "although every site is back and the network delivers what is "
                            "sent again")
        expected = ABORT if inputs["no_votes"] else COMMIT
        undecided = [s for s in range(n + 1) if r.outcome(s, 0) is None]
        if not faults and (r.outcome(0, 0) != expected or undecided):
            problems.append(f"without faults every site should {expected}; the coordinator "
                            f"decided {r.outcome(0, 0)}, site(s) {undecided} nothing")
        if not faults and r.messages > 4 * n:
            problems.append(f"{r.messages} messages for {n} participants without faults; "
                            f"two-phase commit needs at most {4 * n}")
        if not faults and inputs["no_votes"] == [] and sum(r.log_forces) < n + 1:
            problems.append(f"{sum(r.log_forces)} log forces: every participant must force its "
                            "vote and the coordinator its decision")
        wrong += [f"{where}: {p}" for p in problems]
    setup = f"{n} participants, {len(runs)} runs"
    if not wrong:
        return Verdict(True, f"{setup}: every promise held in every run")
    shown = "\n".join(f"  {w}" for w in wrong[:4])
    return Verdict(False, f"{setup}: {len(wrong)} problem(s); the first:\n{shown}",
                   reason=wrong[0])


# -- the public cases ---------------------------------------------------------------------------
def public_cases() -> list[Case]:
    """One per category (the hidden ones use other sizes, seeds and sites)."""
    return [
        commit_case("C1", "commit without faults", 10, category="commit without faults",
                    participants=3, seed=501, seeds=2,
                    about="every participant votes yes, nothing fails: everyone commits, with "
                          "at most 4 messages per participant and the votes and decision forced."),
        commit_case("A1", "a participant votes no", 10, category="a no vote", participants=4,
                    seed=502, seeds=3, no_votes=(2,),
                    about="participant 2 cannot commit: nobody may commit, everyone aborts."),
        commit_case("K1", "the coordinator crashes at each of its steps", 20,
                    category="the coordinator crashes", participants=3, seed=503, seeds=2,
                    crash_site=0,
                    about="the coordinator dies just before each of its log writes and messages "
                          "in turn and comes back 30 units later: its forced log is all it has."),
        commit_case("P1", "a participant crashes at each of its steps", 15,
                    category="a participant crashes", participants=3, seed=504, seeds=2,
                    crash_site=1,
                    about="participant 1 dies before each of its steps in turn and comes back: "
                          "a yes it sent must survive, an unforced one must not be committed."),
        commit_case("L1", "a lossy network and a no vote", 6, category="a lossy network",
                    participants=3, seed=505, seeds=6, drop=0.2, duplicate=0.1, no_votes=(3,),
                    about="20% of the messages are lost and 10% delivered twice, and participant "
                          "3 votes no: timers must repeat what was not answered, repeats must be "
                          "harmless, and a late or repeated yes must not tip the decision."),
        commit_case("L3", "yes votes delivered twice before a late no", 4,
                    category="a lossy network", participants=4, seed=515, seeds=6, drop=0.1,
                    duplicate=0.4, no_votes=(4,),
                    about="40% of the messages are delivered twice and participant 4 votes no: "
                          "a yes the network repeats is still one participant's vote, so the "
                          "repeats must not add up to a commit before the no arrives."),
    ]
