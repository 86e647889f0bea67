"""The hidden cases rebuilt from other seeds: the course's graders are checked with hidden cases of
the same categories built from seeds and data other than ours, so every category must hold by
construction, whatever the seed, and the reference must pass every case so built.

Each lab's ``hidden`` module builds its cases from a ``seed`` (the shipped one by default). For a
few other seeds this file builds them again and checks, for every case:

* its **category** holds, judged from the case's own inputs (and, where the category is about
  what the reference does, such as "a partition that exactly fills memory", from a run of
  minidb's own code on them): nothing here is a stored answer;
* the **reference** submission passes it: the lab's harness runs the reference in this process
  (a solution's observations are the same inside the sandbox or out) and the case's own check
  judges them, computing what is expected as the grader does.

The default run tries two seeds per lab (a few seconds each); ``-m slow`` sweeps many more, with
lab 2's builders at other sizes too, and grades the student release's stubs in the sandbox.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import os
import sys
import tempfile

import numpy as np
import pytest
from ag_helpers import FAST, ROOT

from autograder.assignments import load
from autograder.grading import Case, Part
from autograder.markers import strip_solutions
from autograder.results import Results

HIDDEN_BUILDERS = {
    "lab1": ("partitioner_cases", "policy_cases"),
    "lab2": ("join_cases",),
    "lab3": ("unfix_cases",),
    "lab4": ("addressing_cases",),
    "lab5": ("commit_cases",),
}
# hidden cases whose data no seed changes: A13 sorts 0..39,999, B8 is a fixed loop
SEEDLESS = {("lab1", "A13"), ("lab1", "B8")}
FEW_SEEDS = (1, 2026)
MANY_SEEDS = tuple(range(3, 33))


# -- building the cases again -------------------------------------------------------------------
def other_cases(lab: str, seed: int) -> list[tuple[Part, Case]]:
    """The hidden cases of ``lab`` built from ``seed``, each with the part that grades it (the
    builders are matched to parts by the ids of the shipped cases)."""
    hidden = importlib.import_module(f"autograder.assignments.{lab}.hidden")
    parts = load(lab).parts
    out = []
    for builder in HIDDEN_BUILDERS[lab]:
        for case in getattr(hidden, builder)(seed):
            (part,) = [p for p in parts if any(c.id == case.id for c in p.cases)]
            out.append((part, case))
    return out


def test_the_default_seed_builds_the_shipped_cases():
    for lab in HIDDEN_BUILDERS:
        shipped = {c.id: c for p in load(lab).parts for c in p.cases if c.hidden}
        hidden = importlib.import_module(f"autograder.assignments.{lab}.hidden")
        rebuilt = [c for b in HIDDEN_BUILDERS[lab] for c in getattr(hidden, b)()]
        assert {c.id for c in rebuilt} == set(shipped)
        for case in rebuilt:
            assert case.inputs == shipped[case.id].inputs
            assert all(np.array_equal(a, shipped[case.id].arrays[k])
                       for k, a in case.arrays.items())


def test_another_seed_builds_other_data():
    for lab in HIDDEN_BUILDERS:
        ours = {c.id: c for _, c in other_cases(lab, FEW_SEEDS[0])}
        for _, case in other_cases(lab, FEW_SEEDS[1]):
            other = ours[case.id]
            assert case.category == other.category
            fixed = case.inputs == other.inputs and all(
                np.array_equal(a, other.arrays[k]) for k, a in case.arrays.items())
            assert not fixed or (lab, case.id) in SEEDLESS, (lab, case.id)


# -- grading the reference in this process ------------------------------------------------------
_PLUGINS: dict[tuple[str, str], tuple[object, type]] = {}


def reference_plugin(lab: str, part: Part) -> tuple[object, type]:
    """The lab's harness and the class the reference registers for ``part``."""
    if (lab, part.key) not in _PLUGINS:
        harness = importlib.import_module(f"autograder.assignments.{lab}.harness")
        path = ROOT / "autograder" / "assignments" / lab / "reference" / part.file
        name = f"_other_seeds_{lab}_{part.key}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _PLUGINS[lab, part.key] = harness, harness.plugin_class(part.plugin_kind, part.plugin_name)
    harness, cls = _PLUGINS[lab, part.key]
    from minidb.plugins import register

    register(part.plugin_kind, part.plugin_name)(cls)  # another lab's test may have replaced it
    return harness, cls


def reference_verdict(lab: str, part: Part, case: Case):
    """The case's own check of what the reference does on it (its answer as JSON, as the
    sandboxed child writes it). The harness runs in a folder of its own, as in the sandbox
    (lab 1's traces write their page files in the current folder)."""
    harness, cls = reference_plugin(lab, part)
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="other-seeds-") as work:
        os.chdir(work)
        try:
            observation = harness.run_case(cls, case.job(), dict(case.arrays))
        finally:
            os.chdir(here)
    return case.check(case, json.loads(json.dumps(observation)))


# -- does the category hold? --------------------------------------------------------------------
def category_problem(lab: str, part: Part, case: Case) -> str | None:
    """Why ``case`` is not of its category, or None when it is."""
    return CATEGORY_CHECKS[lab](part, case)


def _lab1(part: Part, case: Case) -> str | None:
    inputs, cat = case.inputs, case.category
    if inputs["kind"] == "trace":
        from autograder.assignments.lab1.clock import run_trace
        from minidb.buffer.clock import ClockPolicy

        ops = inputs["ops"]
        if not run_trace(inputs, ClockPolicy).evictions:
            return "the trace needs no eviction: it checks no choice"
        pinned = [p for op, p in ops if op == "f"]
        if cat in ("random references with pins", "pinned pages", "moving working set"):
            if not pinned:
                return "no page is ever pinned"
        if sorted(pinned) != sorted(p for op, p in ops if op == "u"):
            return "a pinned page is never unpinned"
        return None
    steps = inputs["steps"]
    fitted = [case.arrays[s["fit"]][inputs["column"]] for s in steps if s["fit"]]
    if cat == "repeated values":
        if not all(len(np.unique(v)) < len(v) for v in fitted):
            return "a fitted column has no repeated value"
    elif cat == "floating-point column":
        if not all(v.dtype.kind == "f" for v in fitted):
            return "the column is not floating-point"
    elif cat == "text column":
        if not all(v.dtype.kind == "S" for v in fitted):
            return "the column is not text"
    elif cat == "sample":
        if inputs["sample"] is None or not all(inputs["sample"] < len(v) for v in fitted):
            return "the boundaries do not come from a sample"
    elif cat == "one node, and fit(None)":
        few = any(s["fit"] and len(np.unique(case.arrays[s["fit"]][inputs["column"]]))
                  < s["num_nodes"] for s in steps)
        one = any(s["num_nodes"] == 1 for s in steps)
        kept = any(b["fit"] is None and a["num_nodes"] == b["num_nodes"]
                   for a, b in zip(steps, steps[1:], strict=False))
        if not (few and one and kept):
            return f"fewer values than nodes {few}, one node {one}, fit(None) kept {kept}"
    return None


def _lab2(part: Part, case: Case) -> str | None:
    from autograder.assignments.lab2 import joins

    build, probe = joins.case_keys(case)
    memory = case.inputs["memory"]
    run = joins.spill_report(build, probe, memory)
    cat = case.category
    if cat == "fits in memory" and run.spilled:
        return f"{len(run.spilled)} partitions spilled"
    if cat == "duplicate keys" and len(np.unique(build)) == len(build):
        return "no build key repeats"
    if cat == "a quarter of the memory" and not 3 <= run.build_pages / memory <= 5:
        return f"the build input needs {run.build_pages} pages, memory is {memory}"
    if cat == "a partition bigger than memory" and run.deepest < 1:
        return "no spilled partition is partitioned again"
    if cat == "one key for every tuple" and (len(np.unique(build)) != 1 or not run.memory_loads):
        return f"{len(np.unique(build))} build keys, {run.memory_loads} memory-loads joins"
    if cat == "an empty input" and len(build) and len(probe):
        return "neither input is empty"
    if cat == "text keys" and not (build.dtype.kind == probe.dtype.kind == "S"):
        return "the keys are not text"
    if cat == "a partition that exactly fills memory":
        return joins.fills_memory_problem(build, probe, memory)
    return None


def _lab3(part: Part, case: Case) -> str | None:
    from minidb.volcano.unfix import GroupedUnfix

    inputs, cat = case.inputs, case.category
    if inputs["kind"] == "sort":
        return None if inputs["processes"] > 1 and inputs["rows"] > 0 else "not a parallel sort"
    streams = [(k, case.arrays[name]) for k, name in zip(inputs["entries"], inputs["arrays"],
                                                         strict=True)]

    def open_at_end(entries: int, clusters: np.ndarray) -> int:
        gatherer = GroupedUnfix(entries).gatherer()
        gatherer.unfix(clusters)
        return len(gatherer.close()[0])

    if cat == "one entry" and not all(k == 1 and len(s) for k, s in streams):
        return "a stream has more than one entry, or no record"
    if cat == "a hash table":
        # the table gathers what one entry cannot: fewer calls than with a single entry
        if not any(k > 1 and len(GroupedUnfix(k).calls(s)[0]) < len(GroupedUnfix(1).calls(s)[0])
                   for k, s in streams):
            return "no stream where the table saves a call over a single entry"
    if cat == "end of stream":
        if not inputs["close_twice"] or not any(len(s) == 0 for _, s in streams):
            return "close is not called twice, or no stream is empty"
        if not any(open_at_end(k, s) > 1 for k, s in streams):
            return "no stream ends with more than one group still gathered"
    return None


def _lab4(part: Part, case: Case) -> str | None:
    from autograder.assignments.lab4.lhstar import reference_route
    from minidb.sdds.addressing import FileState, Image

    inputs, cat = case.inputs, case.category
    n0 = inputs["n0"]
    if inputs["kind"] == "file":
        from minidb.sdds.lhstar import LHStarFile

        f = LHStarFile(capacity=inputs["capacity"], n0=n0, machines=inputs["machines"],
                       split=inputs["split"], merge_below=inputs["merge_below"],
                       merge_threshold=inputs["merge_threshold"], hashed=False)
        try:
            forwards = sum(f.client(name).request(op, key, key * 10 + 1).forwards
                           for name, op, key in inputs["ops"])
            splits, merges = f.messages.splits, f.messages.merges
        finally:
            f.close()
        if not forwards or not splits:
            return f"{splits} splits, {forwards} forwards"
        if cat == "a growing file" and any(op == "delete" for _, op, _ in inputs["ops"]):
            return "the workload deletes"
        if cat == "a shrinking file" and not merges:
            return "no bucket is merged"
        return None
    routes = []
    for level, split, il, isp, c in inputs["questions"]:
        route, image = reference_route(FileState(level, split, n0), Image(il, isp), c)
        routes.append((len(route) - 1, image is not None and image != Image(il, isp)))
    forwarded = [f for f, _ in routes]
    if cat == "client address" and any(forwarded):
        return "a question is forwarded: the image is not exact"
    if cat == "forwarding from a stale image" and not any(forwarded):
        return "no question is forwarded"
    if cat == "two forwards" and set(forwarded) != {2}:
        return f"forwards {sorted(set(forwarded))}, not only 2"
    if cat == "image adjustment" and not any(moved for _, moved in routes):
        return "no IAM moves an image"
    if cat == "several first buckets" and n0 < 2:
        return "one first bucket"
    return None


def _lab5(part: Part, case: Case) -> str | None:
    from autograder.assignments.lab5.commit_cases import _not_of_category
    from minidb.txn.commit.simnet import SimulatedNetwork

    i, cat = case.inputs, case.category
    problem = _not_of_category(cat, i["participants"], tuple(i["no_votes"]), i["crash_site"],
                               i["drop"], i["duplicate"])
    if problem:
        return problem
    if cat == "a lossy network":  # and in some run of the case, the network does lose one
        _, cls = reference_plugin("lab5", part)
        dropped = 0
        for seed in range(i["seed"], i["seed"] + i["seeds"]):
            net = SimulatedNetwork(cls(), i["participants"], seed=seed, drop=i["drop"],
                                   duplicate=i["duplicate"], trace=True,
                                   votes={(p, 0): False for p in i["no_votes"]})
            net.run()
            dropped += sum(e.get("why") == "dropped" for e in net.trace)
        if not dropped:
            return "no message is lost in any run"
    return None


CATEGORY_CHECKS = {"lab1": _lab1, "lab2": _lab2, "lab3": _lab3, "lab4": _lab4, "lab5": _lab5}


def check_lab(lab: str, seeds) -> None:
    failures = []
    for seed in seeds:
        for part, case in other_cases(lab, seed):
            problem = category_problem(lab, part, case)
            if problem:
                failures.append(f"seed {seed}, {case.id} ({case.category!r}): {problem}")
            verdict = reference_verdict(lab, part, case)
            if not verdict.passed:
                failures.append(f"seed {seed}, {case.id}: the reference fails: {verdict.why()}")
    assert not failures, "\n".join(failures)


# -- the tests ----------------------------------------------------------------------------------
@pytest.mark.parametrize("lab", sorted(HIDDEN_BUILDERS))
def test_other_seeds_keep_each_category_and_the_reference_passes(lab):
    check_lab(lab, FEW_SEEDS)


def test_public_cases_hold_their_categories_too():
    for lab in HIDDEN_BUILDERS:
        for part in load(lab).parts:
            for case in part.cases:
                assert category_problem(lab, part, case) is None, (lab, case.id)


@pytest.mark.slow
@pytest.mark.parametrize("lab", sorted(HIDDEN_BUILDERS))
def test_many_other_seeds(lab):
    check_lab(lab, MANY_SEEDS)


@pytest.mark.slow
def test_lab2_builders_at_other_sizes():
    """Lab 2's builders over the sizes their categories allow, memory budgets included."""
    from autograder.assignments.lab2 import joins

    part = load("lab2").parts[0]
    failures = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        budgets = joins.fills_memory_budgets()
        memory = int(rng.integers(budgets.start, budgets.stop))
        build, probe = joins.fills_memory(seed, memory, int(rng.integers(3, 2000)))
        low = int(rng.integers(3, 8))
        held = low * joins.tuples_per_page()  # more than memory holds: spilled, memory-loads
        sk_b, sk_p = joins.skewed(seed, int(rng.integers(held + 1, 3 * held)),
                                  int(rng.integers(0, 300)), int(rng.integers(0, 10**6)))
        sr_b, sr_p = joins.sorted_runs(seed, int(rng.integers(2, 12)),
                                       int(rng.integers(200, 800)), 1000, 20)
        cases = [
            joins.join_case("fm", "", 1, build=build, probe=probe, memory=memory,
                            category="a partition that exactly fills memory"),
            joins.join_case("sk", "", 1, build=sk_b, probe=sk_p, memory=low,
                            category="one key for every tuple"),
            joins.join_case("sr", "", 1, build=sr_b, probe=sr_p, memory=int(rng.integers(4, 12)),
                            category="duplicate keys"),
        ]
        for case in cases:
            problem = category_problem("lab2", part, case)
            verdict = reference_verdict("lab2", part, case)
            if problem or not verdict.passed:
                failures.append(f"seed {seed}, {case.category}, memory {case.inputs['memory']}: "
                                f"{problem or verdict.why()}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("lab", sorted(HIDDEN_BUILDERS))
def test_the_stubs_fail_the_cases_of_other_seeds(tmp_path, lab):
    """The student release's stubs, graded in the sandbox on other seeds' cases: every case
    fails."""
    from autograder.grading import grade

    assignment = load(lab)
    cases = other_cases(lab, FEW_SEEDS[1])
    parts = [dataclasses.replace(p, cases=[c for q, c in cases if q.key == p.key])
             for p in assignment.parts]
    sub = tmp_path / "stub"
    sub.mkdir()
    for part in assignment.parts:
        student_dir = importlib.import_module(f"autograder.assignments.{lab}").STUDENT_DIR
        path = ROOT / student_dir / part.file
        stub, blocks = strip_solutions(path.read_text(), str(path))
        assert blocks
        (sub / part.file).write_text(stub)
    results = grade(dataclasses.replace(assignment, parts=parts), sub, Results(), limits=FAST,
                    log=lambda line: None)
    assert results.tests and not any(t.passed for t in results.tests)
    assert math.isclose(results.score, 0)


# -- what the sweeps found: builders that did not keep their promise for every input ---------------
@pytest.mark.parametrize("memory", [3, 10, 20])
def test_fills_memory_refuses_a_budget_it_cannot_build_for(memory):
    """With 3 pages there are 2 partitions, so no partition 2 (it failed in numpy); from 10 pages
    one build batch fits, so partitions 1 and 2 never tie when memory runs out (it built a case
    without the tie its title promises, silently)."""
    from autograder.assignments.lab2 import joins

    assert list(joins.fills_memory_budgets()) == [4, 5, 6, 7, 8, 9]
    with pytest.raises(ValueError, match="budget of 4 to 9 pages"):
        joins.fills_memory(1, memory, 100)


def test_fills_memory_keeps_its_promise_on_every_budget():
    from autograder.assignments.lab2 import joins

    for memory in joins.fills_memory_budgets():
        build, probe = joins.fills_memory(memory, memory, 3)
        assert joins.fills_memory_problem(build, probe, memory) is None, memory
    with pytest.raises(ValueError, match="3 probe tuples"):
        joins.fills_memory(1, 6, 2)


def test_a_stream_draws_its_clusters_from_the_ones_it_names():
    """``stream(seed, n, clusters)`` drew from about 7919 x ``clusters`` ids (an operator
    precedence slip), so "5 clusters" gave some 150."""
    from autograder.assignments.lab3.unfix_cases import stream

    for seed in range(10):
        ids = np.unique(stream(seed, 500, 5, interleave=2))
        assert len(ids) <= 5 and set(ids.tolist()) <= {13 + 7919 * k for k in range(5)}
    with pytest.raises(ValueError):
        stream(1, 10, 2, interleave=3)


def test_a_commit_case_not_of_its_category_is_refused():
    from autograder.assignments.lab5.commit_cases import commit_case

    with pytest.raises(ValueError, match="not 'a lossy network'"):
        commit_case("X", "", 1, category="a lossy network", participants=3, seed=1)
    with pytest.raises(ValueError, match="do not exist"):
        commit_case("X", "", 1, category="a no vote", participants=3, seed=1, no_votes=(4,))
