"""SDDS-aware operators (minidb.sdds.operators) against DuckDB on the same pairs, their live
choice of strategy, and counters that agree with the strategy chosen."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from minidb.sdds import LHStarError, LHStarFile
from minidb.sdds import operators as op
from minidb.sdds.servers import pseudokey


def make_sdds(n: int, seed: int, tails: int, machines: int = 3, capacity: int = 40,
              backend: str = "inline", hashed: bool = True) -> tuple[LHStarFile, np.ndarray]:
    rng = np.random.default_rng(seed)
    pairs = op.bat(rng.permutation(n * 3)[:n], rng.integers(0, tails, n))
    f = LHStarFile(capacity=capacity, machines=machines, backend=backend, hashed=hashed)
    return op.load(f, pairs), pairs


def rows(x: np.ndarray) -> list[tuple[int, int]]:
    return sorted(zip(x["head"].tolist(), x["tail"].tolist(), strict=True))


def duck(sql: str, **tables: np.ndarray) -> list[tuple[int, int]]:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, {"head": t["head"], "tail": t["tail"]})
    return sorted(tuple(r) for r in con.execute(sql).fetchall())


@pytest.fixture(scope="module")
def data():
    big, big_pairs = make_sdds(3000, 1, tails=4000)
    t5 = op.bat(np.random.default_rng(2).integers(0, 4000, 300),
                np.random.default_rng(3).integers(0, 10**6, 300))
    other, other_pairs = make_sdds(800, 4, tails=9000, machines=2)
    return big, big_pairs, t5, other, other_pairs


@pytest.mark.parametrize(("low", "high"), [(0, 40), (1000, 1000), (5000, 6000), (0, 10**9)])
def test_select_against_duckdb_distributed_and_gathered(data, low, high):
    big, pairs = data[0], data[1]
    expected = duck(f"SELECT head, tail FROM t WHERE tail BETWEEN {low} AND {high}", t=pairs)
    kept = op.select(big, low, high)
    gathered = op.select(big, low, high, gather=True)
    assert rows(kept.pairs()) == rows(gathered.pairs()) == expected
    assert kept.distributed and not gathered.distributed
    # a distributed result stays where it was found: in the bucket of its head
    for bucket, part in kept.fragments.items():
        assert all(big.state.address(pseudokey(int(h))) == bucket for h in part["head"])
    assert gathered.work.bytes_moved == len(expected) * op.PAIR_BYTES
    assert kept.work.bytes_moved == 0
    assert sum(kept.work.scanned.values()) == len(pairs)


def test_joins_and_semijoins_against_duckdb(data):
    big, pairs, t5, other, other_pairs = data
    cases = [
        (op.join(big, t5), "SELECT a.head, b.tail FROM a JOIN b ON a.tail = b.head",
         {"a": pairs, "b": t5}),
        (op.join(t5, big), "SELECT a.head, b.tail FROM a JOIN b ON a.tail = b.head",
         {"a": t5, "b": pairs}),
        (op.join(other, big), "SELECT a.head, b.tail FROM a JOIN b ON a.tail = b.head",
         {"a": other_pairs, "b": pairs}),
        (op.join(big, other), "SELECT a.head, b.tail FROM a JOIN b ON a.tail = b.head",
         {"a": pairs, "b": other_pairs}),
        (op.semijoin(big, t5), "SELECT * FROM a WHERE head IN (SELECT head FROM b)",
         {"a": pairs, "b": t5}),
        (op.semijoin(big, other), "SELECT * FROM a WHERE head IN (SELECT head FROM b)",
         {"a": pairs, "b": other_pairs}),
    ]
    for result, sql, tables in cases:
        expected = duck(sql, **tables)
        assert rows(result.pairs()) == expected, result.plan.explain()
        assert len(expected) > 0, sql  # the data must make each join non-empty


def test_the_strategy_follows_the_sizes_and_the_counters_follow_the_strategy():
    big, pairs = make_sdds(2000, 5, tails=3000, machines=4)
    small = op.bat(np.arange(50), np.arange(50) * 7)
    huge = op.bat(np.arange(5000), np.arange(5000) % 3000)
    # a small BAT is cheaper to broadcast (50 x 16 x 4 machines) than 2,000 pairs to gather
    r = op.join(big, small)
    assert r.plan.chosen.startswith("broadcast") and r.distributed
    assert r.work.bytes_moved == r.plan.alternatives[r.plan.chosen] == 50 * 16 * 4
    # a BAT larger than the SDDS: materializing the SDDS moves less
    r = op.join(big, huge)
    assert r.plan.chosen.startswith("materialize") and not r.distributed
    assert r.work.bytes_moved == 2000 * 16
    # join(BAT, SDDS): hash-partitioning a small BAT beats materializing
    r = op.join(small, big)
    assert r.plan.chosen.startswith("hash") and r.work.bytes_moved == 50 * 16
    assert "moves the fewest bytes" in r.explain() and "*" in r.plan.explain()


def test_a_semijoin_of_co_located_files_moves_nothing():
    keys = np.arange(0, 2000, 2)
    a = LHStarFile(capacity=30, machines=3)
    b = LHStarFile(capacity=30, machines=3, co_locate_with=a)  # splits when a splits
    op.load(a, op.bat(keys, keys * 3))
    op.load(b, op.bat(keys[::3], keys[::3]))
    assert op.co_located(a, b) and a.state == b.state
    a.check()
    b.check()
    assert b.messages.splits == a.messages.splits > 0  # b's own inserts never overflowed
    r = op.semijoin(a, b)
    assert r.work.bytes_moved == 0 and "local" in r.plan.chosen
    assert rows(r.pairs()) == rows(op.bat(keys[::3], keys[::3] * 3))
    # a file with its own splits is not co-located: the heads must travel
    c = op.load(LHStarFile(capacity=30, machines=3), op.bat(keys[::3], keys[::3]))
    r2 = op.semijoin(a, c)
    assert not op.co_located(a, c) and r2.work.bytes_moved == len(keys[::3]) * 8
    assert rows(r2.pairs()) == rows(r.pairs())
    with pytest.raises(LHStarError, match="same machines"):
        LHStarFile(machines=2, co_locate_with=a)
    b.close()  # a closed file leaves the group: a keeps splitting alone
    op.load(a, op.bat(np.arange(1, 3001, 2), np.arange(1500)))
    a.check()
    assert a.state != b.state


def test_empty_inputs_give_empty_results_as_duckdb_does(data):
    big, pairs = data[0], data[1]
    none = op.bat([], [])
    empty = LHStarFile(capacity=10, machines=2)
    assert len(op.select(empty, 0, 10**9)) == 0
    assert len(op.join(big, none)) == len(op.join(none, big)) == 0
    assert len(op.join(empty, data[2])) == len(op.semijoin(big, none)) == 0
    assert len(op.join(big, empty)) == len(op.semijoin(big, empty)) == 0
    expected = duck("SELECT head, tail FROM t WHERE tail BETWEEN 5 AND 4", t=pairs)
    assert expected == [] and len(op.select(big, 5, 4)) == 0  # an empty range


def test_mistakes_are_clear_errors(data):
    big, t5 = data[0], data[2]
    with pytest.raises(LHStarError, match="at least one SDDS"):
        op.join(t5, t5)
    with pytest.raises(LHStarError, match="BAT of"):
        op.join(big, [1, 2, 3])
    with pytest.raises(LHStarError, match="same length"):
        op.bat([1, 2], [3])
    with pytest.raises(LHStarError, match="integer pairs; its tails are float64"):
        op.bat([1, 2], [3.5, 4.0])  # never truncated to 3
    with pytest.raises(LHStarError, match="must be distinct"):
        op.load(LHStarFile(), op.bat([1, 1], [2, 3]))
    # a uint64 beyond 2**63 - 1 used to wrap around silently (to -1 here)
    with pytest.raises(LHStarError, match="does not fit"):
        op.bat([(1 << 64) - 1], [1])
    with pytest.raises(LHStarError, match="does not fit"):
        op.bat(np.array([1], np.int64), np.array([1 << 63], np.uint64))
    assert rows(op.bat(np.array([3], np.uint64), [4])) == [(3, 4)]
    with pytest.raises(LHStarError, match="low bound is a number"):
        op.select(big, "a", 3)  # was a numpy UFuncTypeError
    words = LHStarFile()
    words.client().insert(1, "one")
    with pytest.raises(TypeError, match="integer pairs"):
        op.select(words, 0, 1)
    huge = LHStarFile(hashed=False)  # an unhashed file takes any key >= 0
    huge.client().insert(1 << 64, 7)
    with pytest.raises(TypeError, match="64-bit integer pairs"):  # was an OverflowError
        op.select(huge, 0, 10)


@pytest.mark.ray
def test_operators_give_the_same_results_and_counts_on_ray(ray_session):
    out = {}
    for backend in ("inline", "ray"):
        big, _ = make_sdds(600, 7, tails=900, backend=backend)
        t5 = op.bat(np.arange(0, 900, 3), np.arange(300))
        try:
            results = [op.select(big, 100, 300), op.join(big, t5), op.join(t5, big),
                       op.semijoin(big, t5)]
            out[backend] = [(rows(r.pairs()), r.plan.chosen, r.work.bytes_moved,
                             r.work.messages) for r in results]
        finally:
            big.close()
    assert out["inline"] == out["ray"]


@pytest.mark.parametrize("strategy", [None, "hash-partition", "broadcast", "materialize"])
def test_negative_keys_probing_an_unhashed_file_match_nothing_as_in_duckdb(strategy):
    """An unhashed file holds only keys >= 0; a BAT (or an SDDS) whose join or semijoin keys
    are negative used to crash the routing with a ValueError. Those rows match nothing."""
    pairs = op.bat([0, 1, 2, 5, 9], [10, -3, 7, -(1 << 63), 0])
    f = op.load(LHStarFile(capacity=1, machines=2, hashed=False), pairs)
    probe = op.bat([-5, 0, 2, -(1 << 63), 7, 3], [1, -1, 2, 9, -(1 << 63), 5])
    expect = duck("SELECT p.head, f.tail FROM p JOIN f ON p.tail = f.head", p=probe, f=pairs)
    assert rows(op.join(probe, f, strategy=strategy).pairs()) == expect
    assert rows(op.semijoin(f, probe).pairs()) == duck(
        "SELECT * FROM f WHERE head IN (SELECT head FROM p)", p=probe, f=pairs)
    other = op.load(LHStarFile(capacity=1, machines=2, hashed=False),
                    op.bat([0, 1, 2], [-4, 5, 9]))
    for how in (None, "redistribute", "broadcast", "materialize"):
        assert rows(op.join(f, other, strategy=how).pairs()) == duck(
            "SELECT f.head, o.tail FROM f JOIN o ON f.tail = o.head", f=pairs,
            o=op.bat([0, 1, 2], [-4, 5, 9]))
