"""The commit benchmark runs at ``--quick`` and prints its tables; the counts behind them hold what
each protocol and each log promise. No timing is asserted (the machine is shared)."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_commit  # noqa: E402

BUILT_IN = ["2pc", "presumed_abort", "presumed_commit", "3pc", "group_commit"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> tuple[dict, str]:
    """One quick run (a few seconds), its data directories in a fresh folder: (results, output)."""
    where = tmp_path_factory.mktemp("bench_commit")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        results = bench_commit.main(["--quick", "--dir", str(where)])
    assert not list(where.iterdir()), "the data directories were left behind"
    return results, out.getvalue()


def test_the_output_has_every_table(quick):
    results, out = quick
    for line in ("python", "os.cpu_count", "load average (1 min)", "data directories in",
                 "load average (1 min), after"):
        assert f"\n{line} " in f"\n{out}"
    lines = out.splitlines()
    for title in ("messages per commit, participants", "log forces per commit, participants"):
        header = next(line for line in lines if line.startswith(title))
        assert header.split()[-4:] == ["1", "2", "3", "4"]  # --quick: up to 4 participants
        rows = lines[lines.index(header) + 1:]
        seen = {c.protocol for c in results["costs"]}  # what was registered when it ran
        assert {row.split()[0] for row in rows[:len(seen)]} == seen >= set(BUILT_IN)
    load = next(line for line in lines if line.lstrip().startswith("protocol"))
    for column in ("commits/unit", "latency", "forces/commit", "coord forces/commit"):
        assert column in load
    assert "force time 0.0: group_commit / presumed_abort: forces per commit" in out
    assert f"force time {bench_commit.FORCE_TIME}: group_commit / presumed_abort" in out
    engine = next(line for line in lines if line.startswith("configuration"))
    for column in ("statements/s", "forces/stmt", "2PC msgs/stmt", "no log / log"):
        assert column in engine
    table = lines[lines.index(engine) + 1:][:6]
    assert [row.split(",")[0] for row in table] == [
        "1 node", "1 node", "parallel 1 node(s)", "parallel 1 node(s)", "parallel 2 node(s)",
        "parallel 2 node(s)"]
    assert all(row.rstrip().endswith("x") for row in table[1::2])  # the ratio on logged rows


def test_simulated_costs_grow_with_the_participants(quick):
    results, _ = quick
    costs = {(c.protocol, c.participants): c for c in results["costs"]}
    assert {p for p, _ in costs} >= set(BUILT_IN)
    for p in BUILT_IN:
        messages = [costs[p, n].messages for n in range(1, 5)]
        forces = [costs[p, n].forces for n in range(1, 5)]
        assert messages == sorted(set(messages)) and forces == sorted(set(forces)), p
    for n in range(1, 5):
        two, three = costs["2pc", n], costs["3pc", n]
        assert three.messages > two.messages and three.forces > two.forces  # the extra round
        assert costs["presumed_commit", n].messages < two.messages  # no commit acknowledgements
        assert costs["group_commit", n].messages == costs["presumed_abort", n].messages


def test_group_commit_forces_less_per_commit_under_load(quick):
    results, _ = quick
    loads = {r.protocol: r for r in results["loads"] if r.force_time == 0}
    pa, gc = loads["presumed_abort"], loads["group_commit"]
    assert pa.commits == gc.commits == pa.txns == bench_commit.QUICK["load_txns"]
    assert gc.forces_per_commit < pa.forces_per_commit
    assert pa.coordinator_forces_per_commit == 1.0  # one COMMIT record forced per transaction
    assert gc.coordinator_forces_per_commit <= 1 / 3  # groups of up to 4
    assert gc.messages == pa.messages  # the same messages, fewer forces
    assert gc.commits_per_unit > 0 and pa.commits_per_unit > 0


def test_the_engine_forces_only_with_a_data_directory(quick):
    results, _ = quick
    runs = results["engine"]
    assert [(r.nodes, r.logged) for r in runs] == [(0, False), (0, True), (1, False), (1, True),
                                                   (2, False), (2, True)]
    for r in runs:
        assert r.statements == bench_commit.QUICK["statements"] and r.per_second > 0
        if r.logged:
            assert r.forces_per_statement > 0
        else:
            assert r.forces == r.log_records == r.messages == 0
    single = runs[1]
    assert single.forces_per_statement >= 1  # at least the COMMIT record's force
    assert single.messages == 0
    for r in runs[3::2]:  # two-phase commit, presumed abort: a one-row UPDATE changes one node
        # it gets a request and sends an answer per phase (4 messages); each other node changed
        # nothing, votes READ and leaves after phase one (2 messages; R*'s read-only vote)
        assert r.messages == (4 + 2 * (r.nodes - 1)) * r.statements
        # the changed node forces PREPARE and COMMIT, the coordinator its decision
        assert r.forces_per_statement >= 3


def test_a_broken_protocol_stops_the_benchmark(monkeypatch):
    from minidb.txn.commit.simnet import RunResult

    monkeypatch.setattr(RunResult, "violations", lambda self, everyone_recovers=True: ["broken"])
    with pytest.raises(bench_commit.BrokenCommit, match="2pc, 1 participant"):
        bench_commit.commit_costs(["2pc"], 1)


def test_command_line_errors():
    with pytest.raises(SystemExit):
        bench_commit.main(["--nodes", "1,x"])
    with pytest.raises(SystemExit):
        bench_commit.main(["--nodes", "0"])
    with pytest.raises(SystemExit):
        bench_commit.main(["--statements", "0"])


def test_when_forces_take_time_group_commit_commits_more(quick):
    results, _ = quick
    loads = {r.protocol: r for r in results["loads"] if r.force_time > 0}
    pa, gc = loads["presumed_abort"], loads["group_commit"]
    assert gc.commits == gc.txns  # its logs keep up
    assert gc.commits_per_unit > pa.commits_per_unit  # presumed abort's logs fall behind
    assert gc.mean_latency < pa.mean_latency


def test_the_transports_table_times_the_simulated_network(quick):
    results, out = quick
    simulated = [r for r in results["transports"] if r.transport == "simulated"]
    assert {r.protocol for r in simulated} == {c.protocol for c in results["costs"]}
    assert {r.protocol for r in simulated} >= set(BUILT_IN)
    assert all(r.commits > 0 and r.per_second > 0 for r in simulated)
    assert "note: no Ray rows (--no-ray)." in out  # --quick leaves Ray out


def test_group_commit_in_the_engine_shares_forces(quick):
    results, out = quick
    runs = {r.size: r for r in results["group_commit"]}
    assert sorted(runs) == list(bench_commit.GROUP_SIZES)
    commits = {r.commits for r in runs.values()}
    assert commits == {bench_commit.QUICK["group_threads"] * bench_commit.QUICK["group_each"]
                       * bench_commit.GROUP_ROUNDS}
    alone = runs[1]
    assert alone.commit_forces == alone.commits and alone.txn_forces == 2 * alone.commits
    for size, r in runs.items():
        assert r.all_forces > r.txn_forces >= r.commit_forces  # the statement journal's on top
        if size > 1:
            assert r.txn_forces <= alone.txn_forces
    assert "group commit in the engine" in out and "commits/s vs size 1" in out
