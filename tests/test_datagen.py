"""Tests of minidb.datagen: permutations, the papers' relations, slices, widths and errors.

DuckDB serves as the independent oracle for the Wisconsin definitions and the EMP/DEPT join.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minidb.datagen as dg
from minidb.datagen import _random as rnd
from minidb.datagen.dense_unique import PAIRS, dense_unique, find_pair, is_primitive_root, root_for
from minidb.errors import MinidbError
from minidb.storage.schema import Schema

SMALL = {name: 1000 for name in dg.GENERATORS}


def query(sql: str, **tables: pa.Table):
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return con.execute(sql).fetchall()


def is_permutation(values: np.ndarray, n: int) -> bool:
    return len(values) == n and np.array_equal(np.sort(values), np.arange(n))


# -- dense-unique permutation -----------------------------------------------------------------------
def test_published_pairs_are_prime_and_primitive():
    for _, g, p in PAIRS:
        assert is_primitive_root(g, p)
        assert all(p % d for d in range(2, math.isqrt(p) + 1))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 999, 1000, 1001, 9999, 10_000, 12_345, 100_001])
def test_dense_unique_is_a_permutation(n):
    for seed in (0, 1, 42):
        assert is_permutation(dense_unique(n, seed), n)


def test_seed_zero_follows_the_published_walk():
    # The walk of docs/facts.md, one step at a time: x <- G*x mod P from x = G, keep x <= N, emit x-1.
    for n in (1000, 4321):
        g, p = find_pair(n)
        expected, x = [], g
        while len(expected) < n:
            if x <= n:
                expected.append(x - 1)
            x = x * g % p
        assert dense_unique(n).tolist() == expected


def test_seeds_and_streams_give_different_permutations():
    n = 5000
    base = dense_unique(n)
    assert not np.array_equal(base, dense_unique(n, seed=1))
    assert not np.array_equal(base, dense_unique(n, stream=1))
    assert not np.array_equal(dense_unique(n, seed=1), dense_unique(n, seed=2))
    g1, p = root_for(n, 7, 0)
    assert is_primitive_root(g1, p)


def test_dense_unique_slices_concatenate_to_the_whole():
    n = 23_456
    whole = dense_unique(n, seed=3)
    cuts = [0, 1, 5000, 5001, 17_000, n]
    parts = [dense_unique(n, 3, a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    assert np.array_equal(np.concatenate(parts), whole)


def test_pair_beyond_the_table_is_found():
    g, p = find_pair(100_000_001)
    assert p > 100_000_001 and is_primitive_root(g, p)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 5000), seed=st.integers(0, 2**32), data=st.data())
def test_property_any_slice_of_a_permutation(n, seed, data):
    whole = dense_unique(n, seed)
    assert is_permutation(whole, n)
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    assert np.array_equal(dense_unique(n, seed, start, stop), whole[start:stop])


# -- counter-based random numbers -----------------------------------------------------------------
def test_counter_based_values_do_not_depend_on_the_slice():
    c = rnd.rows(0, 1000)
    a = rnd.uniform_int(5, 1, c, 0, 9)
    assert np.array_equal(a[300:400], rnd.uniform_int(5, 1, rnd.rows(300, 400), 0, 9))
    assert a.min() == 0 and a.max() == 9
    assert not np.array_equal(a, rnd.uniform_int(5, 2, c, 0, 9))
    chars = rnd.random_chars(0, 3, c, 52, ord("A"), 26)
    assert chars.min() >= ord("A") and chars.max() <= ord("Z")


# -- every generator --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(dg.GENERATORS))
def test_deterministic_and_seeded(name):
    rows = SMALL[name]
    a = dg.generate(name, rows, seed=1)
    assert a.num_rows == rows
    assert a.equals(dg.generate(name, rows, seed=1))
    assert not a.equals(dg.generate(name, rows, seed=2))


@pytest.mark.parametrize("name", list(dg.GENERATORS))
def test_slices_concatenate_to_the_whole(name):
    rows = SMALL[name]
    whole = dg.generate(name, rows, seed=4)
    cuts = [0, 1, 250, 250, 333, 999, rows]
    parts = [
        dg.generate(name, rows, seed=4, start=a, stop=b)
        for a, b in zip(cuts, cuts[1:], strict=False)
    ]
    assert pa.concat_tables(parts).equals(whole)
    # the generator functions themselves take the same slice arguments
    assert dg.GENERATORS[name](rows, seed=4, start=250, stop=333).equals(whole.slice(250, 83))


@pytest.mark.parametrize(
    "name, width",
    [
        ("wisconsin", 208),
        ("tandem", 200),
        ("emp", 38),
        ("dept", 18),
        ("sortrec", 100),
        ("intpairs", 8),
    ],
)
def test_record_widths(name, width):
    table = dg.generate(name, 50)
    assert Schema.from_arrow(table.schema).record_width == width
    assert table.schema == Schema.from_arrow(table.schema).arrow_schema()


# -- Wisconsin ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [10_000, 12_345])
def test_wisconsin_definitions_checked_by_duckdb(n):
    w = dg.wisconsin(n, seed=0)
    (row,) = query(
        """
        SELECT count(*), count(DISTINCT unique1), min(unique1), max(unique1),
               count(DISTINCT unique2), min(unique2), max(unique2),
               count(*) FILTER (WHERE two <> unique1 % 2 OR four <> unique1 % 4
                   OR ten <> unique1 % 10 OR twenty <> unique1 % 20
                   OR onePercent <> unique1 % 100 OR tenPercent <> unique1 % 10
                   OR twentyPercent <> unique1 % 5 OR fiftyPercent <> unique1 % 2
                   OR unique3 <> unique1 OR evenOnePercent <> onePercent * 2
                   OR oddOnePercent <> onePercent * 2 + 1),
               min(length(stringu1)), max(length(stringu1)), min(length(stringu2)),
               max(length(stringu2)), min(length(string4)), max(length(string4)),
               count(DISTINCT onePercent)
        FROM w
        """,
        w=w,
    )
    assert row == (n, n, 0, n - 1, n, 0, n - 1, 0, 52, 52, 52, 52, 52, 52, 100)


def test_wisconsin_strings_decode_with_duckdb():
    w = dg.wisconsin(3000, seed=2)
    decode = " + ".join(
        f"(ascii(substr({{c}}, {i + 1}, 1)) - 65) * {26 ** (6 - i)}" for i in range(7)
    )
    (row,) = query(
        f"""
        SELECT count(*) FILTER (WHERE {decode.format(c="stringu1")} <> unique1),
               count(*) FILTER (WHERE {decode.format(c="stringu2")} <> unique2),
               count(*) FILTER (WHERE substr(stringu1, 8) <> repeat('x', 45)
                                   OR substr(stringu2, 8) <> repeat('x', 45)
                                   OR substr(string4, 5) <> repeat('x', 48))
        FROM w
        """,
        w=w,
    )
    assert row == (0, 0, 0)
    s1 = dg.wisconsin(30, start=26, stop=28).column("stringu1").to_pylist()
    assert all(len(s) == 52 for s in s1)
    assert dg.wisconsin(30).column("stringu1")[26].as_py() == s1[0]


def test_convert_examples():
    from minidb.datagen.wisconsin import convert

    rows = convert(np.array([0, 1, 26])).view("S52").ravel()
    assert [r[:7] for r in rows] == [b"AAAAAAA", b"AAAAAAB", b"AAAAABA"]


def test_string4_cycles_by_global_row():
    s4 = dg.wisconsin(100, start=5, stop=9).column("string4").to_pylist()
    assert [s[:4] for s in s4] == ["HHHH", "OOOO", "VVVV", "AAAA"]  # rows 5, 6, 7, 8


def test_unique1_and_unique2_are_uncorrelated():
    w = dg.wisconsin(10_000)
    ((r,),) = query("SELECT corr(unique1, unique2) FROM w", w=w)
    assert abs(r) < 0.05


@pytest.mark.slow
def test_a_million_wisconsin_tuples_are_permutations():
    w = dg.wisconsin(1_000_000)
    assert w.num_rows == 1_000_000
    assert is_permutation(w["unique1"].to_numpy(), 1_000_000)
    assert is_permutation(w["unique2"].to_numpy(), 1_000_000)


# -- Tandem -----------------------------------------------------------------------------------------
def test_tandem_ranges():
    n = 20_000
    t = dg.tandem(n, seed=1)
    assert is_permutation(t["unique1"].to_numpy(), n)
    assert is_permutation(t["unique2"].to_numpy(), n)
    from minidb.datagen.tandem import ranges

    for name, (low, high) in ranges(n).items():
        values = t[name].to_numpy()
        assert low <= values.min() and values.max() <= high, name
        if high - low < 2000:  # small ranges: both ends are drawn (almost surely)
            assert values.min() == low and values.max() == high, name
    assert np.array_equal(t["even1pct"].to_numpy(), 2 * t["odd1pct"].to_numpy())
    assert ranges(n)["four"] == (0, 4) and ranges(n)["odd1pct"] == (1, 199)
    ((bad,),) = query(
        "SELECT count(*) FROM t WHERE NOT regexp_full_match(stringu1 || stringu2 || stringu3, '[A-Z]{156}')",
        t=t,
    )
    assert bad == 0


def test_tandem_tiny_table():
    t = dg.tandem(3)
    assert t.num_rows == 3 and set(t["odd1pct"].to_pylist()) == {1}
    assert set(t["onepct"].to_pylist()) == {0}


# -- EMP and DEPT ------------------------------------------------------------------------------------
def test_emp_and_dept_sizes_and_referential_integrity():
    emp, dept = dg.emp(), dg.dept()
    assert (emp.num_rows, dept.num_rows) == (30_000, 1_500)
    ((orphans,),) = query(
        "SELECT count(*) FROM emp e WHERE NOT EXISTS (SELECT 1 FROM dept d WHERE d.dname = e.dept)",
        emp=emp,
        dept=dept,
    )
    assert orphans == 0
    (row,) = query(
        """
        SELECT count(DISTINCT dname), count(*) FILTER (WHERE floor = 1),
               count(*) FILTER (WHERE budget > 5), count(*) FILTER (WHERE budget <= 5)
        FROM dept
        """,
        dept=dept,
    )
    assert row[0] == 1500 and 0 < row[1] < 1500 and row[2] > 0 and row[3] > 0
    assert dept["dname"].to_pylist()[:3] == ["shoe", "toy", "dept00000002"]
    (row,) = query(
        """
        SELECT count(DISTINCT name), count(*) FILTER (WHERE manager = name),
               count(*) FILTER (WHERE manager NOT IN (SELECT name FROM emp)),
               count(*) FILTER (WHERE dept IN ('shoe', 'toy')),
               count(*) FILTER (WHERE salary > 10000)
        FROM emp
        """,
        emp=emp,
    )
    assert row[0] == 30_000 and row[1] == 0 and row[2] == 0 and row[3] > 0
    assert 0 < row[4] < 30_000


def test_emp_departments_argument():
    emp = dg.emp(500, departments=3)
    assert set(emp["dept"].to_pylist()) == {"shoe", "toy", "dept00000002"}
    assert dg.emp(1)["manager"].to_pylist() == ["emp0000000"]


# -- sort records and integer pairs -----------------------------------------------------------------
def test_sortrec_layout():
    t = dg.sortrec(2000, seed=5)
    keys = np.array(t["key"].to_pylist(), dtype="S10")
    codes = keys.view(np.uint8)
    assert len(codes) == 2000 * 10 and codes.min() >= 33 and codes.max() <= 126
    payload = t["payload"].to_pylist()
    assert all(len(p) == 90 for p in payload)
    assert [int(p[:20]) for p in payload] == list(range(2000))


def test_intpairs_are_two_permutations():
    t = dg.intpairs(7777, seed=3)
    key, value = t["key"].to_numpy(), t["value"].to_numpy()
    assert is_permutation(key, 7777) and is_permutation(value, 7777)
    assert not np.array_equal(key, value)


# -- Parquet and errors ----------------------------------------------------------------------------
def test_write_parquet_keeps_widths(tmp_path):
    path = dg.write_parquet(dg.dept(20), tmp_path / "sub" / "dept.parquet")
    back = pq.read_table(path)
    assert Schema.from_arrow(back.schema).record_width == 18
    assert back.equals(dg.dept(20))


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: dg.generate("wisconsn", 10), "wisconsin"),
        (lambda: dg.generate("wisconsin", 0), "at least 1"),
        (lambda: dg.generate("wisconsin", -5), "at least 1"),
        (lambda: dg.generate("wisconsin", 2.5), "whole number"),
        (lambda: dg.generate("wisconsin", 10, start=5, stop=3), "start"),
        (lambda: dg.generate("wisconsin", 10, stop=11), "stop"),
        (lambda: dg.generate("emp", 10, dept=3), "departments"),
        (lambda: dg.emp(10, departments=0), "departments"),
        (lambda: dg.tandem(10, seed="x"), "seed"),
        (lambda: dense_unique(0), "at least 1"),
    ],
)
def test_bad_input_raises_a_clear_error(call, words):
    with pytest.raises(MinidbError) as info:
        call()
    message = str(info.value)
    assert words in message and "\n" not in message


def test_empty_slice_is_an_empty_table_with_the_schema():
    t = dg.wisconsin(10, start=4, stop=4)
    assert t.num_rows == 0 and Schema.from_arrow(t.schema).record_width == 208
