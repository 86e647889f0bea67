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
from dataclasses import dataclass, field

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


def tuples_per_page() -> int:
    """The build tuples a page of memory holds in the cases' hash tables (``capacity()``)."""
    from autograder.assignments.lab2.harness import PAGE_SIZE, relation
    from minidb.exec.store import hash_table_capacity

    return hash_table_capacity(PAGE_SIZE, relation("b", np.zeros(1, np.int64))[0])


def fanout(memory: int) -> int:
    """The partitions of a level (the README's ``P``)."""
    return max(2, min(memory - 1, 16, 2 * math.isqrt(memory)))


def _level0(keys: np.ndarray, memory: int) -> np.ndarray:
    """Each key's partition at level 0."""
    from minidb.hashing import hash_column

    return (hash_column(keys, seed=1) % np.uint64(fanout(memory))).astype(np.intp)


def _first_batch(memory: int) -> tuple[int, int]:
    """``fills_memory``'s tuples of partitions 1 and 2 in the first build batch (a tie), and of
    partition 1 in all (``limit``, ``memory - 1`` full pages)."""
    from autograder.assignments.lab2.harness import BUILD_BATCH

    limit = (memory - 1) * tuples_per_page()
    return min(limit, BUILD_BATCH // 2), limit


def fills_memory_budgets() -> range:
    """The budgets ``fills_memory`` can build its case for: partitions 1 and 2 exist (at least 3
    partitions) and its first batch (one build batch: partitions 1 and 2 alone) needs more than
    the budget, so the tie is met when memory first runs out. With a larger budget one batch
    fits, the tie is never met, and partition 1 is spilled only as the largest."""
    ok = [m for m in range(4, 64)
          if fanout(m) >= 3 and -(-2 * _first_batch(m)[0] // tuples_per_page()) > m]
    assert ok == list(range(ok[0], ok[-1] + 1)), ok
    return range(ok[0], ok[-1] + 1)


def fills_memory(seed: int, memory: int, n_probe: int) -> tuple[np.ndarray, np.ndarray]:
    """Two partitions (1 and 2 of level 0) that tie for the largest when the first build batch
    overflows the budget, so the lower one is spilled; later batches bring partition 1's tuples
    up to exactly ``limit`` = ``(memory - 1) * capacity`` (``memory - 1`` full pages), so the
    spilled pair fits and is joined in memory, not partitioned again. Two thirds of the probe
    tuples fall in partition 1, a third in partition 2 (so spilling the other one shows).

    Only budgets in ``fills_memory_budgets()`` allow it (a ValueError says so); the case built
    is checked to be what this says (``fills_memory_problem``) for any seed."""
    budgets = fills_memory_budgets()
    if memory not in budgets:
        raise ValueError(f"fills_memory needs a budget of {budgets.start} to {budgets.stop - 1} "
                         f"pages, not {memory}: with fewer there is no partition 2, with more "
                         "one build batch fits and partitions 1 and 2 never tie for the largest")
    if n_probe < 3:
        raise ValueError(f"fills_memory needs 3 probe tuples or more (partitions 1 and 2 each "
                         f"need one, or their pair is skipped, not joined), not {n_probe}")
    first, limit = _first_batch(memory)
    rng = np.random.default_rng(seed)

    def keys_of(part: int, n: int, start: int) -> np.ndarray:
        candidates = rng.permutation(np.arange(start, start + 8 * fanout(memory) * n,
                                               dtype=np.int64))
        found = candidates[_level0(candidates, memory) == part][:n]
        if len(found) < n:  # about 8 n are expected: never seen, but never silently short
            raise ValueError(f"fills_memory(seed={seed}): only {len(found)} keys of {n} found "
                             f"for partition {part}")
        return found

    one, two = keys_of(1, limit, 0), keys_of(2, first, 10**7)
    head = np.empty(2 * first, np.int64)
    head[0::2], head[1::2] = one[:first], two
    build = np.concatenate([head, one[first:]])
    probe = np.concatenate([rng.choice(one, n_probe - n_probe // 3), rng.choice(two, n_probe // 3),
                            rng.integers(2 * 10**7, 3 * 10**7, n_probe // 10)])
    problem = _static_fills_memory_problem(build, memory)
    if problem:
        raise ValueError(f"fills_memory(seed={seed}, memory={memory}): {problem}")
    return build, rng.permutation(probe).astype(np.int64)


def _static_fills_memory_problem(build: np.ndarray, memory: int) -> str | None:
    """Why ``build`` is not a "partition that exactly fills memory" input, judged from its keys."""
    from autograder.assignments.lab2.harness import BUILD_BATCH

    if fanout(memory) < 3:
        return f"{fanout(memory)} partitions: there is no partition 2"
    parts = _level0(build, memory)
    limit = _first_batch(memory)[1]
    sizes = np.bincount(parts, minlength=fanout(memory))
    if sizes[1] != limit:
        return f"partition 1 has {sizes[1]} build tuples, not limit = {limit}"
    head = np.bincount(parts[:BUILD_BATCH], minlength=fanout(memory))
    if not head[1] == head[2] == head.max():
        return f"partitions 1 and 2 do not tie for the largest in the first batch: {head.tolist()}"
    if -(-int(head.sum()) // tuples_per_page()) <= memory:
        return "the first batch fits in memory: nothing is spilled while the two tie"
    return None


@dataclass
class SpillReport:
    """What minidb's own Hybrid hash join did on an input (``spill_report``)."""

    build_pages: int  # the pages the build input fills
    spilled: list[int] = field(default_factory=list)  # level 0's partitions spilled, in order
    deepest: int = 0  # the deepest level a spilled pair was partitioned to
    memory_loads: int = 0  # spilled pairs joined by memory-loads
    in_memory: list[tuple[int, int]] = field(default_factory=list)  # (level, build tuples)


def spill_report(build: np.ndarray, probe: np.ndarray, memory: int) -> SpillReport:
    """Run minidb's own Hybrid hash join on the input (through the harness) and say what it
    spilled, how deep it went and how it joined each spilled pair: what a category such as "a
    partition bigger than memory" is about."""
    from autograder.assignments.lab2.harness import run_join
    from minidb.exec.join.partitioned import HybridHashJoin

    report = SpillReport(-(-len(build) // tuples_per_page()))

    class Watched(HybridHashJoin):
        def _level(self, builds, probes, level):
            self.level = level
            report.deepest = max(report.deepest, level)
            yield from super()._level(builds, probes, level)

        def spool(self, schema, purpose):
            if purpose.startswith("build-") and getattr(self, "level", 0) == 0:
                report.spilled.append(int(purpose.split("-")[1]))
            return super().spool(schema, purpose)

        def join_in_memory(self, build_rows, probe_batches, *args, **kwargs):
            report.in_memory.append((getattr(self, "level", 0), len(build_rows)))
            yield from super().join_in_memory(build_rows, probe_batches, *args, **kwargs)

        def join_by_memory_loads(self, *args, **kwargs):
            report.memory_loads += 1
            yield from super().join_by_memory_loads(*args, **kwargs)

    done = run_join(Watched, memory, build, probe)
    if done["error"]:
        raise RuntimeError(f"minidb's own Hybrid hash join failed: {done['error']}")
    return report


def fills_memory_problem(build: np.ndarray, probe: np.ndarray, memory: int) -> str | None:
    """Why a case is not "a partition that exactly fills memory": its keys (``fills_memory``'s
    promise) and what minidb's own join does with them (partition 1 spilled first, then joined
    in memory with exactly ``limit`` build tuples, nothing partitioned again)."""
    problem = _static_fills_memory_problem(build, memory)
    if problem:
        return problem
    run = spill_report(build, probe, memory)
    limit = _first_batch(memory)[1]
    if run.spilled[:1] != [1]:
        return f"the first partition spilled is {run.spilled[:1]}, not partition 1"
    if (0, limit) not in run.in_memory or run.deepest:
        return (f"partition 1 was not joined in memory with exactly {limit} build tuples "
                f"(joined in memory: {run.in_memory}, deepest level {run.deepest})")
    return None


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
