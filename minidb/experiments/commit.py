"""The commit protocols' fault matrix as an experiment: ``ingres.commit_protocols``.

Distributed INGRES commits a multi-site update by sending the changes to every site and having
each apply them (Stonebraker et al. 1983, the paper's distributed updates); how the sites agree to
apply them is the commit protocol's business. This experiment runs every registered commit
protocol (``minidb.txn.commit``: 2PC, presumed abort, presumed commit, 3PC, group commit, and any
a student registers) over the fault matrix of ``minidb.txn.commit.matrix`` and reports, per
protocol: runs, runs that broke a promise (must be 0), runs in which a coordinator that never
came back left a participant in doubt (2PC-style protocols block; 3PC must not), and the
messages and log forces of a fault-free commit, of a fault-free abort, and of a fault-free
commit in which participant 1 changed nothing (``read_only_*``: fewer only for a protocol with
R*'s read-only votes, presumed abort). No paper cell: these are checks and counts, not a
reproduction.
"""

from __future__ import annotations

from minidb.experiments.registry import ExperimentError, Params, Progress, experiment, make_row
from minidb.plugins import names

NAME = "ingres.commit_protocols"
#: the most participants and fault-matrix seeds one run may ask for: the matrix injects every
#: fault at every participant, so its work grows faster than the participants (64: minutes)
MAX_PARTICIPANTS = 32
MAX_SEEDS = 1_000
METRICS = ("runs", "violations", "blocked_runs", "commit_messages", "commit_forces",
           "abort_messages", "abort_forces", "read_only_messages", "read_only_forces")


def _protocols(value) -> list[str]:
    """``"all"``, a comma-separated string or a list of registered protocol names."""
    known = names("commit")
    if value == "all":
        return known
    chosen = [x.strip() for x in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [x for x in chosen if not isinstance(x, str) or x.lower() not in known]
    if unknown or not chosen:
        raise ExperimentError(f"{NAME}: unknown commit protocol {unknown[0] if unknown else ''!r}; "
                              f"choose 'all' or some of: {', '.join(known)}")
    return [x.lower() for x in chosen]


@experiment(NAME, title="Commit protocols under injected faults (the fault matrix)",
            references=(),
            defaults={"protocols": "all", "participants": 3, "seeds": 5, "seed": 0,
                      "backend": "inline"},
            quick={"seeds": 2})
def commit_protocols(p: Params, progress: Progress) -> list[dict]:
    from minidb.txn.commit.matrix import fault_matrix, summarize

    chosen = _protocols(p["protocols"])
    if not isinstance(p["participants"], int) or not 2 <= p["participants"] <= MAX_PARTICIPANTS:
        raise ExperimentError(f"{NAME}: participants must be a whole number of at least 2 "
                              f"and at most {MAX_PARTICIPANTS}, not {p['participants']!r}")
    if not isinstance(p["seeds"], int) or not 1 <= p["seeds"] <= MAX_SEEDS:
        raise ExperimentError(f"{NAME}: seeds must be a whole number of at least 1 and at "
                              f"most {MAX_SEEDS:,}, not {p['seeds']!r}")
    progress.start(len(chosen))
    rows = []
    for name in chosen:
        matrix = fault_matrix([name], p["participants"],
                              seeds=range(p["seed"], p["seed"] + p["seeds"]))
        (summary,) = summarize(matrix, p["participants"])
        params = {"protocol": name, "participants": p["participants"], "seeds": p["seeds"]}
        for metric in METRICS:
            rows.append(make_row(NAME, "", name, metric, params, metric,
                                 getattr(summary, metric), "count"))
        progress.advance()
    return rows
