"""Lab 3's cases and the checks the grader runs on them: grouped unfixing (Volcano §5.2).

Two kinds of case (see ``harness``):

* **traces**: streams of cluster ids, one per record an operator unfixes, each with a table
  size. The grader works out the calls with minidb's own grouped unfix
  (``minidb.volcano.unfix.GroupedUnfix``) and compares them call by call: which cluster, how
  many records, in which order (a group is flushed when a record of another cluster takes its
  slot, and at ``close`` in slot order).
* **sort**: minidb's parallel sort with the submission as every operator's gatherer. The
  grader runs the same sort with minidb's grouped unfix and compares the buffer-manager calls
  counted per process, pool and kind (the lock acquisitions), and checks that every record was
  unfixed exactly once and that the output is DuckDB's ``ORDER BY`` of the same records.

Nothing the child says about itself is believed: it reports calls, counts and a digest only.
"""

from __future__ import annotations

import hashlib

import duckdb
import numpy as np

from autograder.grading import Case, Malformed, Verdict
from minidb.volcano.psort import SortSetup, parallel_sort
from minidb.volcano.records import sort_records, to_table
from minidb.volcano.unfix import GroupedUnfix

CATEGORIES = ("one entry", "a hash table", "end of stream", "sort: lock acquisitions",
              "sort: output")


# -- traces -------------------------------------------------------------------------------------
def stream(seed: int, records: int, clusters: int, *, run: tuple[int, int] = (1, 40),
           interleave: int = 1) -> np.ndarray:
    """Cluster ids of ``records`` records: runs of ``run`` records of one cluster (out of
    ``clusters``), ``interleave`` clusters alternating at a time (a merge's output). The ids are
    spread out (``13 + 7919 k``, k < ``clusters``) so their slots differ from ``k``'s."""
    if not 1 <= interleave <= clusters:
        raise ValueError(f"{interleave} clusters alternating at a time need 1 to {clusters}")
    rng = np.random.default_rng(seed)
    out: list[int] = []
    while len(out) < records:
        # (not ``rng.choice(clusters * 7919 + 13)``: that drew from ~7919 x clusters ids)
        group = rng.choice(clusters, size=interleave, replace=False) * 7919 + 13
        length = int(rng.integers(run[0], run[1] + 1))
        for i in range(length):
            out.append(int(group[i % interleave]))
    return np.array(out[:records], dtype=np.int64)


def traces_case(case_id: str, title: str, points: float, *, streams: list[tuple[int, np.ndarray]],
                category: str, hidden: bool = False, about: str = "",
                close_twice: bool = False) -> Case:
    """``close_twice``: ``close`` is called a second time after each stream; the table it left
    must be empty, so that call makes no call of its own."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for case {case_id}")
    names = [f"{case_id}_stream_{i}" for i in range(len(streams))]  # unique over all cases
    inputs = {"kind": "traces", "entries": [k for k, _ in streams], "arrays": names,
              "close_twice": close_twice}
    arrays = {name: s for name, (_, s) in zip(names, streams, strict=True)}
    return Case(case_id, title, points, hidden, inputs, arrays,
                check=lambda case, obs: check_traces(obs, streams), about=about,
                category=category)


def expected_calls(entries: int, clusters: np.ndarray) -> list[list[int]]:
    ids, counts = GroupedUnfix(entries).calls(clusters)
    return [[int(a), int(b)] for a, b in zip(ids.tolist(), counts.tolist(), strict=True)]


def check_traces(observation: dict, streams: list[tuple[int, np.ndarray]]) -> Verdict:
    got = observation.get("streams")
    if not isinstance(got, list) or len(got) != len(streams):
        raise Malformed(f"expected {len(streams)} streams")
    wrong: list[str] = []
    for i, ((entries, clusters), mine) in enumerate(zip(streams, got, strict=True)):
        if not isinstance(mine, dict) or not isinstance(mine.get("calls"), list):
            raise Malformed("a stream's answer is not an object with calls")
        want = expected_calls(entries, clusters)
        where = f"stream {i + 1} ({len(clusters)} records, {entries} entries)"
        calls = mine["calls"]
        if mine.get("error"):
            wrong.append(f"{where}: after {len(calls)} calls: {mine['error']}")
            continue
        again = mine.get("again") or []
        if not isinstance(again, list):
            raise Malformed("a stream's calls of a second close are not a list")
        if calls == want and again:
            wrong.append(f"{where}: every call right, but close() called a second time made "
                         f"{len(again)} more, first {again[0]} ([cluster, count]); grouped "
                         "unfix's second close makes none: close must leave the table empty")
            continue
        if calls == want:
            continue
        first = next((j for j, (a, b) in enumerate(zip(calls, want, strict=False)) if a != b),
                     min(len(calls), len(want)))
        context = clusters[:40].tolist()
        yours = calls[first] if first < len(calls) else "no call"
        theirs = want[first] if first < len(want) else "no call"
        wrong.append(f"{where}, first records {context}{' ...' if len(clusters) > 40 else ''}: "
                     f"{len(calls)} calls where grouping makes {len(want)}; call {first + 1} "
                     f"is yours {yours}, grouped unfix's {theirs} ([cluster, count])")
    if not wrong:
        total = sum(len(expected_calls(k, c)) for k, c in streams)
        records = sum(len(c) for _, c in streams)
        return Verdict(True, f"all {len(streams)} streams right: {total} calls for {records} "
                             "records")
    shown = "\n".join(f"  {w}" for w in wrong[:3])
    return Verdict(False, f"{len(streams) - len(wrong)} of {len(streams)} streams right; the "
                          f"first wrong:\n{shown}", reason=wrong[0])


# -- whole sorts ----------------------------------------------------------------------------------
def sort_case(case_id: str, title: str, points: float, *, rows: int, seed: int, processes: int,
              entries: int, pools: int, category: str, cluster_kb: int = 4,
              sort_space_kb: int | None = None, hidden: bool = False, about: str = "") -> Case:
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for case {case_id}")
    inputs = {"kind": "sort", "rows": rows, "seed": seed, "processes": processes,
              "entries": entries, "pools": pools, "cluster_kb": cluster_kb,
              "sort_space_kb": sort_space_kb or processes * 12 * cluster_kb}
    check = check_counters if category == "sort: lock acquisitions" else check_output
    return Case(case_id, title, points, hidden, inputs, {},
                check=lambda case, obs: check(case.inputs, obs), about=about, category=category)


def reference_sort(inputs: dict):
    """The same sort with minidb's own grouped unfix (the macro form: the same calls)."""
    return parallel_sort(sort_records(inputs["rows"], seed=inputs["seed"]), SortSetup(
        processes=inputs["processes"], cluster_bytes=inputs["cluster_kb"] * 1024,
        pools=inputs["pools"], unfix=f"macro_{inputs['entries']}",
        sort_space_bytes=inputs["sort_space_kb"] * 1024))


def _shape(observation: dict) -> None:
    if not isinstance(observation.get("calls"), list) or not isinstance(
            observation.get("by_operator"), dict):
        raise Malformed("expected calls and by_operator")


def check_counters(inputs: dict, observation: dict) -> Verdict:
    _shape(observation)
    if observation.get("error"):
        reason = f"the sort stopped: {observation['error']}"
        return Verdict(False, reason, reason=reason)
    run = reference_sort(inputs)
    counters = run.buffer.counters
    want = {(p, q, k): n for (p, q, k), n in counters.calls.items()}
    try:
        mine = {(int(p), int(q), str(k)): int(n) for p, q, k, n in observation["calls"]}
    except (TypeError, ValueError):
        raise Malformed("a call count is not [process, pool, kind, n]") from None
    setup = (f"{inputs['rows']} records, {inputs['processes']} processes, "
             f"{inputs['pools']} pools, {inputs['entries']} entries")
    diffs = [f"process {p}, pool {q}, {k} calls: yours {mine.get((p, q, k), 0)}, grouped "
             f"unfix's {n}" for (p, q, k), n in sorted(want.items())
             if mine.get((p, q, k), 0) != n]
    diffs += [f"process {p}, pool {q}, {k} calls: yours {n}, grouped unfix makes none"
              for (p, q, k), n in sorted(mine.items()) if (p, q, k) not in want and n]
    by = observation["by_operator"]
    for operator, n in sorted(counters.record_calls_by.items()):
        theirs = by.get("calls", {}).get(operator)
        if theirs != n:
            diffs.append(f"the {operator} made {theirs} unfix calls; grouped unfix makes {n}")
    if not diffs:
        total = sum(n for (_, _, k), n in want.items() if k == "unfix")
        return Verdict(True, f"{setup}: the same {sum(want.values())} buffer calls "
                             f"({total} unfix calls) as grouped unfix, pool by pool")
    shown = "\n".join(f"  {d}" for d in diffs[:5])
    return Verdict(False, f"{setup}: the lock acquisitions differ:\n{shown}", reason=diffs[0])


def duckdb_digest(rows: int, seed: int) -> str:
    """SHA-256 of the keys then the payloads of the records in DuckDB's ``ORDER BY key``."""
    con = duckdb.connect()
    con.register("records", to_table(sort_records(rows, seed=seed)))
    ordered = con.sql("SELECT key, payload FROM records ORDER BY key").fetchnumpy()
    keys = np.array(ordered["key"].tolist(), dtype="S10")
    payloads = np.array(ordered["payload"].tolist(), dtype="S90")
    return hashlib.sha256(keys.tobytes() + payloads.tobytes()).hexdigest()


def check_output(inputs: dict, observation: dict) -> Verdict:
    _shape(observation)
    setup = f"{inputs['rows']} records on {inputs['processes']} processes"
    if observation.get("error"):
        reason = f"the sort stopped: {observation['error']}"
        return Verdict(False, reason, reason=reason)
    unfixed = observation["by_operator"].get("records", {})
    rows = inputs["rows"]
    lost = {op: n for op, n in unfixed.items() if n != rows}
    if lost or set(unfixed) != {"filter", "sort", "driver"}:
        reason = (f"{setup}: every operator must unfix every record once; unfixed "
                  f"{dict(sorted(unfixed.items()))}")
        return Verdict(False, reason, reason=reason)
    if observation.get("balanced") is not True:
        reason = f"{setup}: records fixed and unfixed do not balance"
        return Verdict(False, reason, reason=reason)
    if observation.get("digest") != duckdb_digest(rows, inputs["seed"]):
        reason = f"{setup}: the sorted output is not DuckDB's ORDER BY of the same records"
        return Verdict(False, reason, reason=reason)
    return Verdict(True, f"{setup}: output equal to DuckDB's ORDER BY key; every record "
                         "unfixed once by the filter, the sort and the driver")


# -- the public cases ---------------------------------------------------------------------------
def public_cases() -> list[Case]:
    """The public cases: one per category (the hidden ones use other seeds and sizes)."""
    return [
        traces_case("T1", "one entry: records arriving cluster by cluster", 10,
                    category="one entry",
                    streams=[(1, stream(301, 400, 30)), (1, stream(302, 300, 5, run=(1, 3))),
                             (1, np.repeat(np.arange(7, dtype=np.int64), 25))],
                    about="a single entry: one call per stretch of records of one cluster."),
        traces_case("T2", "a hash table: interleaved clusters", 15, category="a hash table",
                    streams=[(4, stream(303, 500, 40, interleave=3)),
                             (16, stream(304, 800, 200, interleave=5)),
                             (2, stream(305, 300, 10, interleave=2, run=(2, 12)))],
                    about="records of a few clusters interleaved, as a merge outputs them: "
                          "the slot decides who is flushed."),
        traces_case("T3", "end of stream", 10, category="end of stream",
                    streams=[(4, np.array([], dtype=np.int64)), (1, np.array([5], np.int64)),
                             (16, stream(306, 60, 50, interleave=4, run=(1, 4))),
                             (8, stream(307, 30, 6, interleave=3, run=(3, 6)))],
                    close_twice=True,
                    about="close must flush every group still gathered, slot by slot, and "
                          "leave the table empty (close is called twice: the second makes no "
                          "call); an empty stream makes no call."),
        sort_case("S1", "a parallel sort: lock acquisitions", 10, rows=12_000, seed=311,
                  processes=4, entries=1, pools=2, category="sort: lock acquisitions",
                  about="every operator of every process gathers with your class: the calls "
                        "per process, pool and kind must be grouped unfix's."),
        sort_case("S2", "a parallel sort: the output", 5, rows=10_000, seed=312, processes=3,
                  entries=4, pools=1, category="sort: output",
                  about="the sort still sorts (DuckDB's ORDER BY) and every record is unfixed "
                        "exactly once."),
    ]
