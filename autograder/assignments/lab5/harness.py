"""Lab 5's harness: run a submitted commit protocol on the simulated network and write down what
happened in every run.

It runs in the sandboxed child, beside the submission. For each run of a case it builds a
``SimulatedNetwork`` (``minidb.txn.commit.simnet``) with the case's participants, votes, crash,
losses and seed, runs one transaction, and reports raw observations only: every decision in the
order made, who voted, whose work a crash wiped out, which sites are up at the end, messages sent
and log forces. A case of crashes first runs the protocol without faults to count the steps of
the crashed site, then crashes it before each of them in turn.

Whether any of it is right is decided by the grader, in its own process
(``autograder.assignments.lab5.commit_cases``).
"""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path

from minidb.plugins import lookup
from minidb.txn.commit import simnet
from minidb.txn.commit.base import CommitProtocol
from minidb.txn.commit.simnet import Crash, SimulatedNetwork

UNTIL = 5000.0
#: the simulator's parts, as they were before the submission was imported
_SIMULATOR = {cls: dict(vars(cls)) for cls in (simnet.Site, simnet.SimulatedNetwork,
                                                simnet.RunResult)}


def plugin_class(kind: str, name: str) -> type:
    """The class the submission registered as ``name`` of ``kind``: a ``CommitProtocol`` written
    for the lab, not one of minidb's own protocols (or a subclass of one)."""
    cls = lookup(kind, name)
    if not (isinstance(cls, type) and issubclass(cls, CommitProtocol)):
        raise TypeError(f"{name!r} is registered as {cls!r}, which is not a subclass of "
                        "minidb.txn.commit.base.CommitProtocol")
    borrowed = [base.__module__ + "." + base.__name__ for base in cls.__mro__[1:]
                if base.__module__.startswith("minidb.txn.commit.") and base is not CommitProtocol
                and base.__module__ != "minidb.txn.commit.base"]
    if borrowed:
        raise TypeError(f"{name!r} builds on minidb's own protocol {borrowed[0]}; the lab asks for "
                        "a two-phase commit of your own on CommitProtocol")
    return cls


def run_case(plugin: type, case: dict, arrays: dict) -> dict:
    runs = []
    for spec in _runs(plugin, case):
        runs.append(_observe(plugin, case, spec))
    changed = [cls.__name__ for cls, before in _SIMULATOR.items() if dict(vars(cls)) != before]
    return {"runs": runs, "tampered": changed}


def _runs(plugin: type, case: dict):
    """The runs of a case: (seed, crash) pairs."""
    seeds = range(case["seed"], case["seed"] + case["seeds"])
    crashed = case.get("crash_site")
    if crashed is None:
        for seed in seeds:
            yield seed, None
        return
    steps = _steps(plugin, case, crashed)
    for step in range(1, steps + 1):
        for seed in seeds:
            yield seed, (crashed, step)


def _steps(plugin: type, case: dict, site: int) -> int:
    net = _network(plugin, case, case["seed"], None, faults=False)
    net.run(until=UNTIL)
    return min(net.sites[site].steps, case.get("max_steps", 40))


def _network(plugin: type, case: dict, seed: int, crash, faults: bool = True) -> SimulatedNetwork:
    votes = {(p, 0): False for p in case.get("no_votes", [])}
    crashes = [] if crash is None else [Crash(crash[0], crash[1], case.get("restart_after", 30))]
    return SimulatedNetwork(plugin(), case["participants"], seed=seed,
                            drop=case.get("drop", 0.0) if faults else 0.0,
                            duplicate=case.get("duplicate", 0.0) if faults else 0.0,
                            crashes=crashes, votes=votes)


def _observe(plugin: type, case: dict, spec) -> dict:
    seed, crash = spec
    error = None
    try:
        net = _network(plugin, case, seed, crash)
        result = net.run(until=UNTIL)
    except Exception as exc:  # the grader says which run and why
        error = f"{type(exc).__name__}: {exc}{_where(exc, plugin)}"[:500]
        return {"seed": seed, "crash": crash, "error": error}
    return {"seed": seed, "crash": crash, "error": None,
            "decisions": [[s, t, o] for _, s, t, o in result.decisions],
            "voted": sorted([s, t] for s, t in result.voted),
            "lost_work": sorted([s, t] for s, t in result.lost_work),
            "up": list(result.up), "messages": result.messages,
            "forces": sum(result.log_forces)}


def _where(exc: BaseException, plugin: type) -> str:
    """`` (commit.py, line 12)``: the last place in the submission's file the error passed."""
    try:
        home = inspect.getsourcefile(plugin)
        frames = [t for t in traceback.extract_tb(exc.__traceback__) if t.filename == home]
    except (TypeError, OSError):
        return ""
    return f" ({Path(home).name}, line {frames[-1].lineno})" if frames else ""
