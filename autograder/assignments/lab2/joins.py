"""Lab 2's cases and the checks the grader runs on them: a Hybrid hash join plug-in.

Every case is one join (``harness.run_join``): a build input and a probe input of the given
keys, a memory budget in pages. The grader decides, in its own process and from its own copy of
the inputs:

* **rows**: the pairs (probe ``a_id``, build ``b_id``) must be exactly DuckDB's for
  ``SELECT a_id, b_id FROM a JOIN b ON a_key = b_key`` (each pair once);
* **counters**: the tuples entered into and looked up in hash tables, the tuples hashed to a
  partition (every level), the partitions spilled and
  the pages written to and read from temporary files must equal those of minidb's own Hybrid
  hash join (``minidb.exec.join.partitioned.HybridHashJoin``) on the same inputs and budget,
  run by the grader through the same harness code: they follow from the rules in the README, and
  a join that ignores its budget, spills the wrong partition, forgets to recurse or partitions
  again a spilled partition that fits (exactly ``M - 1`` pages) shows here;
* **the budget**: the largest memory the join recorded (``note_memory``) must not exceed it.

Nothing the child says is believed beyond what it reports; the reference and the expected rows
never reach it.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa

from autograder.grading import Case, Malformed, Verdict

CATEGORIES = ("fits in memory", "duplicate keys", "a quarter of the memory",
              "a partition bigger than memory", "one key for every tuple", "an empty input",
              "text keys", "a partition that exactly fills memory")
CHECKED = ("build_tuples", "probe_tuples", "partitions_spilled", "spill_pages_written",
           "spill_pages_read", "partitioned_tuples")


def join_case(case_id: str, title: str, points: float, *, build: np.ndarray, probe: np.ndarray,
              memory: int, category: str, hidden: bool = False, about: str = "") -> Case:
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for case {case_id}")
    # array names are the case's own: several cases are sent to one child
    names = {"build": f"{case_id}_build", "probe": f"{case_id}_probe"}
    arrays = {names["build"]: build, names["probe"]: probe}
    inputs = {"kind": "join", "memory": memory, **names, "arrays": sorted(arrays)}
    return Case(case_id, title, points, hidden, inputs, arrays,
                check=lambda case, obs: check_join(case, obs), about=about, category=category)


def expected_pairs(build: np.ndarray, probe: np.ndarray) -> list[list[int]]:
    """DuckDB's pairs (probe position, build position) of equal keys, sorted."""
    con = duckdb.connect()
    con.register("a", pa.table({"a_id": np.arange(len(probe)), "a_key": _keys(probe)}))
    con.register("b", pa.table({"b_id": np.arange(len(build)), "b_key": _keys(build)}))
    return [list(r) for r in sorted(con.sql("SELECT a_id, b_id FROM a JOIN b ON a_key = b_key")
                                    .fetchall())]


def case_keys(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """The build and the probe keys of a case (the grader's own copy)."""
    return case.arrays[case.inputs["build"]], case.arrays[case.inputs["probe"]]


def _keys(keys: np.ndarray):
    if keys.dtype.kind == "S":
        return pa.array([k.decode() for k in keys.tolist()], pa.string())
    return pa.array(keys)


def reference_counters(case: Case) -> dict:
    """What minidb's own Hybrid hash join counts on the case, through the harness's code."""
    from autograder.assignments.lab2.harness import run_join
    from minidb.exec.join.partitioned import HybridHashJoin

    build, probe = case_keys(case)
    done = run_join(HybridHashJoin, case.inputs["memory"], build, probe)
    if done["error"]:
        raise RuntimeError(f"minidb's own Hybrid hash join failed the case: {done['error']}")
    return done["counters"]


def check_join(case: Case, observation: dict) -> Verdict:
    pairs, counters, error = (observation.get(k) for k in ("pairs", "counters", "error"))
    if error:
        return Verdict(False, f"your join raised {error}", f"raised {error}"[:300])
    if not isinstance(pairs, list) or not isinstance(counters, dict):
        raise Malformed("expected pairs (a list) and counters (an object)")
    memory = case.inputs["memory"]
    build, probe = case_keys(case)
    want = expected_pairs(build, probe)
    sizes = (f"{len(build):,} build and {len(probe):,} probe tuples, {memory} pages of memory")
    problems = []
    if pairs != want:
        got = {tuple(x) for x in pairs if isinstance(x, list)}
        should = {tuple(x) for x in want}
        missing, extra = sorted(should - got), sorted(got - should)
        dupes = len(pairs) - len(got)
        problems.append(
            f"rows: you returned {len(pairs):,} pairs, DuckDB {len(want):,}"
            + (f"; missing (a_id, b_id) {missing[:5]}" if missing else "")
            + (f"; not a match {extra[:5]}" if extra else "")
            + (f"; {dupes} pairs more than once" if dupes > 0 else ""))
    ref = reference_counters(case)
    for name in CHECKED:
        mine = counters.get(name)
        if mine != ref[name]:
            problems.append(f"{name}: yours {mine}, the reference's {ref[name]}")
    peak = counters.get("peak_memory_pages")
    if not isinstance(peak, int) or peak > memory or (len(build) and peak <= 0):
        problems.append(f"memory: your join recorded a peak of {peak} pages (note_memory) "
                        f"with a budget of {memory}")
    if problems:
        text = f"{sizes}:\n" + "\n".join(f"- {p}" for p in problems)
        return Verdict(False, text, problems[0][:300])
    return Verdict(True, f"{sizes}: every pair, every counter and the budget as expected "
                         f"({ref['partitions_spilled']} partitions spilled, "
                         f"{ref['spill_pages_written']} pages written)")


# -- the inputs ---------------------------------------------------------------------------------
def unique(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n).astype(np.int64)


def draws(seed: int, n: int, high: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, high, n).astype(np.int64)


def text(seed: int, n: int, distinct: int, width: int) -> np.ndarray:
    values = np.random.default_rng(seed).integers(0, distinct, n)
    return np.array([b"k%d" % v for v in values], dtype=f"S{width}")


def skewed(seed: int, n_build: int, n_probe: int, key: int) -> tuple[np.ndarray, np.ndarray]:
    """Every build tuple has ``key``; a fifth of the probe tuples too."""
    rng = np.random.default_rng(seed)
    probe = rng.integers(1000, 5000, n_probe)
    probe[: n_probe // 5] = key
    return np.full(n_build, key, dtype=np.int64), rng.permutation(probe).astype(np.int64)


def sorted_runs(seed: int, keys: int, repeats: int, n_probe: int,
                matching: int) -> tuple[np.ndarray, np.ndarray]:
    """A build input sorted by key, each of ``keys`` keys ``repeats`` times: every batch holds
    one or two keys, so the tuples a partition gets from one batch all have the same key even
    where the partition holds several (it must go one level down, not to memory-loads). Only
    ``matching`` probe tuples find a key, the others none (the output stays small)."""
    rng = np.random.default_rng(seed)
    distinct = np.sort(rng.choice(10**6, keys, replace=False))
    build = np.repeat(distinct, repeats).astype(np.int64)
    probe = np.concatenate([rng.choice(distinct, matching),
                            rng.integers(10**6, 2 * 10**6, n_probe - matching)])
    return build, rng.permutation(probe).astype(np.int64)


def fills_memory(seed: int, memory: int, n_probe: int) -> tuple[np.ndarray, np.ndarray]:
    """Two partitions (1 and 2 of level 0) that tie for the largest when the first build batch
    overflows the budget, so the lower one is spilled; later batches bring partition 1's tuples
    up to exactly ``limit`` = ``(memory - 1) * capacity`` (``memory - 1`` full pages), so the
    spilled pair fits and is joined in memory, not partitioned again. Two thirds of the probe
    tuples fall in partition 1, a third in partition 2 (so spilling the other one shows)."""
    from autograder.assignments.lab2.harness import BUILD_BATCH, PAGE_SIZE, relation
    from minidb.exec.store import hash_table_capacity
    from minidb.hashing import hash_column

    fanout = max(2, min(memory - 1, 16, 2 * math.isqrt(memory)))
    limit = (memory - 1) * hash_table_capacity(PAGE_SIZE, relation("b", np.zeros(1, np.int64))[0])
    first = min(limit, BUILD_BATCH // 2)  # of each partition in the first batch: a tie
    rng = np.random.default_rng(seed)

    def keys_of(part: int, n: int, start: int) -> np.ndarray:
        candidates = rng.permutation(np.arange(start, start + 8 * fanout * n, dtype=np.int64))
        where = hash_column(candidates, seed=1) % np.uint64(fanout)  # level 0's hash function
        return candidates[where == part][:n]

    one, two = keys_of(1, limit, 0), keys_of(2, first, 10**7)
    head = np.empty(2 * first, np.int64)
    head[0::2], head[1::2] = one[:first], two
    build = np.concatenate([head, one[first:]])
    probe = np.concatenate([rng.choice(one, n_probe - n_probe // 3), rng.choice(two, n_probe // 3),
                            rng.integers(2 * 10**7, 3 * 10**7, n_probe // 10)])
    return build, rng.permutation(probe).astype(np.int64)


def public_cases() -> list[Case]:
    sk_b, sk_p = skewed(15, 500, 150, 7)
    fm_b, fm_p = fills_memory(23, 6, 1800)
    sr_b, sr_p = sorted_runs(24, 8, 700, 1500, 20)
    return [
        join_case("D1", "the build input fits in memory", 7, build=unique(11, 2000),
                  probe=draws(12, 4000, 3000), memory=60, category="fits in memory"),
        join_case("D2", "keys repeated on both sides", 4, build=draws(13, 3500, 1200),
                  probe=draws(14, 2400, 1200), memory=8, category="duplicate keys"),
        join_case("D3", "a quarter of the memory the build input needs", 7,
                  build=unique(16, 6000), probe=draws(17, 6000, 7000), memory=22,
                  category="a quarter of the memory"),
        join_case("D4", "partitions bigger than memory: one level down", 7,
                  build=unique(18, 20000), probe=draws(19, 3000, 20000), memory=6,
                  category="a partition bigger than memory"),
        join_case("D5", "every build tuple has the same key", 7, build=sk_b, probe=sk_p,
                  memory=5, category="one key for every tuple"),
        join_case("D6", "an empty probe input, a build input that spills", 7,
                  build=unique(20, 900), probe=np.zeros(0, dtype=np.int64), memory=5,
                  category="an empty input"),
        join_case("D7", "text keys of different widths", 7, build=text(21, 3000, 1500, 6),
                  probe=text(22, 2500, 2000, 9), memory=8, category="text keys"),
        join_case("D15", "a spilled partition of exactly M - 1 pages, two tied for the largest", 7,
                  build=fm_b, probe=fm_p, memory=6,
                  category="a partition that exactly fills memory",
                  about="partitions 1 and 2 tie for the largest when the first batch overflows "
                        "memory: the lower number is spilled; partition 1 ends with exactly "
                        "M - 1 full pages, so it fits (at most limit tuples) and is joined in "
                        "memory, not partitioned again."),
        join_case("D17", "a build input sorted by key: several keys in a spilled partition", 3,
                  build=sr_b, probe=sr_p, memory=6, category="duplicate keys",
                  about="8 keys, 700 tuples each, in order: a spilled partition gets one key "
                        "per batch but several keys in all, so it goes one level down; only "
                        "a partition whose every build tuple has one key goes to memory-loads."),
    ]
