"""Tests of the partitioning functions (minidb/parallel/partitioners.py).

Invariants on Wisconsin, EMP and DEPT data: no tuple lost or duplicated by route + split,
destinations in range, the same answer every time, round-robin's turn carried across batches,
range nodes holding exactly their intervals, balance of hash and range_uniform, predicate
fragments checked for gaps and overlaps (the Distributed INGRES examples), every spec form and
every spec mistake, and a student's partitioner chosen by name.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minidb import plugins
from minidb.datagen import dept, emp, wisconsin
from minidb.datagen.ingres import DEPT_SCHEMA, EMP_SCHEMA
from minidb.datagen.wisconsin import SCHEMA as WISC
from minidb.errors import MinidbError, UnknownColumnError, UnknownPluginError
from minidb.parallel import (
    FragmentCoverageError,
    Hash,
    Partitioner,
    PartitioningError,
    PredicateFragments,
    Range,
    RangeUniform,
    RoundRobin,
    parse_partitioning,
    split,
)
from minidb.plugins import lookup, register

N = 100_000
EMP_FRAGMENTS = {0: "dept = 'shoe'", 1: "dept = 'toy'", 2: "dept <> 'toy' AND dept <> 'shoe'"}
DEPT_FRAGMENTS = {0: "budget > 5", 1: "budget <= 5"}


@pytest.fixture(scope="module")
def wisc() -> np.ndarray:
    return WISC.records_from_arrow(wisconsin(N))


@pytest.fixture(scope="module")
def small() -> np.ndarray:
    return WISC.records_from_arrow(wisconsin(3000))


@pytest.fixture(scope="module")
def emps() -> np.ndarray:
    return EMP_SCHEMA.records_from_arrow(emp())


@pytest.fixture(scope="module")
def depts() -> np.ndarray:
    return DEPT_SCHEMA.records_from_arrow(dept())


def make(spec, num_nodes, data, schema=WISC) -> Partitioner:
    p = parse_partitioning(spec, schema, num_nodes)
    p.fit(data, num_nodes)
    return p


def same_tuples(a: np.ndarray, b: np.ndarray) -> bool:
    return len(a) == len(b) and bool(np.array_equal(np.sort(a), np.sort(b)))


def check_partition(p: Partitioner, batch: np.ndarray, num_nodes: int) -> np.ndarray:
    """route + split lose and duplicate nothing, keep input order, and land in 0..N-1."""
    dest = p.route(batch)
    assert dest.dtype == np.int64 and dest.shape == (len(batch),)
    assert len(dest) == 0 or (dest.min() >= 0 and dest.max() < num_nodes)
    parts = split(batch, dest, num_nodes)
    assert len(parts) == num_nodes
    assert same_tuples(np.concatenate(parts), batch)
    for i, part in enumerate(parts):
        assert np.array_equal(part, batch[dest == i])  # stable: input order kept
    return dest


SPECS = [
    "round_robin",
    "hash(unique1)",
    "hash(unique2, stringu1)",
    "range(unique1: 20000, 40000, 60000, 80000)",
    "range(stringu1: 'AAAA', 'AAAB', 'AAAC', 'AAAD')",
    "range_uniform(unique2)",
    "range_uniform(stringu2)",
]


# -- every partitioner on Wisconsin data --------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_no_tuple_lost_or_duplicated(wisc, spec):
    check_partition(make(spec, 5, wisc), wisc, 5)


@pytest.mark.parametrize("spec", SPECS)
def test_routing_is_deterministic(wisc, spec):
    first = make(spec, 5, wisc).route(wisc)
    second = make(spec, 5, wisc).route(wisc)
    assert np.array_equal(first, second)


@pytest.mark.parametrize("spec", SPECS)
def test_describe_parses_back_to_the_same_partitioner(wisc, spec):
    p = make(spec, 5, wisc)
    q = make(p.describe(), 5, wisc)
    assert q.describe() == p.describe() == spec
    assert np.array_equal(p.route(wisc[:5000]), q.route(wisc[:5000]))


@pytest.mark.parametrize("spec", SPECS)
def test_empty_batch_routes_to_nothing(wisc, spec):
    p = make(spec, 5, wisc)
    parts = p.partition(wisc[:0])
    assert [len(x) for x in parts] == [0] * 5
    assert all(x.dtype == wisc.dtype for x in parts)


def test_one_node_gets_everything(wisc):
    for spec in ["round_robin", "hash(unique1)", "range(unique1:)", "range_uniform(unique1)"]:
        p = make(spec, 1, wisc)
        assert not p.route(wisc[:100]).any()


# -- round-robin --------------------------------------------------------------------------------
@pytest.mark.parametrize("num_nodes", [1, 2, 3, 7, 16])
def test_round_robin_continues_its_turn_across_batches(small, num_nodes):
    p = make("round_robin", num_nodes, small)
    cuts = [0, 1, 1, 8, 20, 333, 334, 1000, 2999, 3000]
    dest = np.concatenate([p.route(small[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)])
    assert np.array_equal(dest, np.arange(len(small)) % num_nodes)


@pytest.mark.parametrize("num_nodes,rows", [(2, 2999), (7, 100), (8, 3000), (16, 5)])
def test_round_robin_balances_perfectly(small, num_nodes, rows):
    p = make("round_robin", num_nodes, small)
    sizes = [0] * num_nodes
    for start in range(0, rows, 37):
        for i, part in enumerate(p.partition(small[start:min(start + 37, rows)])):
            sizes[i] += len(part)
    assert sum(sizes) == rows and max(sizes) - min(sizes) <= 1


def test_round_robin_fit_starts_a_new_load(small):
    p = make("round_robin", 4, small)
    p.route(small[:3])
    p.fit(None, 4)
    assert p.route(small[:2]).tolist() == [0, 1]


# -- hash ---------------------------------------------------------------------------------------
def test_hash_spreads_unique1_evenly_over_8_nodes(wisc):
    sizes = np.bincount(make("hash(unique1)", 8, wisc).route(wisc), minlength=8)
    assert sizes.sum() == N
    assert np.all(np.abs(sizes - N / 8) <= 0.10 * N / 8)


def test_hash_is_a_function_of_the_column_only(wisc):
    p = make("hash(unique1)", 8, wisc)
    dest = p.route(wisc)
    by_value = np.empty(N, dtype=np.int64)
    by_value[wisc["unique1"]] = dest
    shuffled = wisc[np.random.default_rng(1).permutation(N)[:5000]]
    assert np.array_equal(p.route(shuffled), by_value[shuffled["unique1"]])


@pytest.mark.parametrize("column", ["unique1", "stringu1"])
def test_hash_exact_match_names_the_one_node(wisc, column):
    p = make(f"hash({column})", 8, wisc)
    dest = p.route(wisc)
    for row in (0, 17, 99_999):
        value = wisc[column][row]
        key = value.decode() if isinstance(value, bytes) else int(value)
        assert p.nodes_for_range(key, key) == [int(dest[row])]
    assert p.nodes_for_range(10, 20) is None
    assert p.nodes_for_range(None, 5) is None
    assert make("hash(unique1, unique2)", 8, wisc).nodes_for_range(3, 3) is None


def test_hash_exact_match_on_text_without_any_batch_seen():
    p = Hash("stringu1", schema=WISC)
    p.fit(None, 4)
    batch = WISC.records_from_arrow(wisconsin(50))
    assert p.nodes_for_range("AAAAABx" + "x" * 44, "AAAAABx" + "x" * 44) is not None
    value = batch["stringu1"][3].decode()
    assert p.nodes_for_range(value, value) == [int(p.route(batch)[3])]


# -- range --------------------------------------------------------------------------------------
def interval_of(bounds, i):
    return (None if i == 0 else bounds[i - 1]), (None if i == len(bounds) else bounds[i])


@pytest.mark.parametrize("spec,column,num_nodes", [
    ("range(unique1: 1000, 2000, 3000)", "unique1", 4),
    ("range(unique2: 10, 50000, 50001, 99000)", "unique2", 5),
    ("range(stringu1: 'AAAAB', 'AAAAC', 'ABAAA')", "stringu1", 4),
])
def test_range_puts_every_tuple_in_its_nodes_interval(wisc, spec, column, num_nodes):
    p = parse_partitioning(spec, WISC, num_nodes)
    bounds = [b.encode() if isinstance(b, str) else b for b in p.boundaries]
    for i, part in enumerate(p.partition(wisc)):
        lo, hi = interval_of(bounds, i)
        values = part[column]
        if lo is not None:
            assert np.all(values >= lo)
        if hi is not None:
            assert np.all(values < hi)


def brute_force_nodes(p: Partitioner, low, high, domain: np.ndarray) -> list[int]:
    """The nodes that the values of ``domain`` within [low, high] are routed to."""
    keep = np.ones(len(domain), dtype=bool)
    if low is not None:
        keep &= domain >= low
    if high is not None:
        keep &= domain <= high
    batch = np.zeros(int(keep.sum()), dtype=WISC.dtype)
    batch[p.column] = domain[keep]
    return sorted(set(p.route(batch).tolist()))


@pytest.mark.parametrize("spec", ["range(unique1: 10, 20, 21, 40)", "range_uniform(unique1)"])
def test_nodes_for_range_are_exactly_the_nodes_that_can_hold_the_range(spec):
    data = np.zeros(60, dtype=WISC.dtype)
    data["unique1"] = np.arange(60)
    p = make(spec, 5, data)
    domain = np.arange(-10, 80)  # every integer a bound or a tuple can take here, and more
    rng = np.random.default_rng(7)
    cases = [(None, None), (None, 15), (20, None), (20, 20), (21, 21), (5, 3), (-5, -1), (70, 90)]
    cases += [tuple(sorted(rng.integers(-10, 80, size=2).tolist())) for _ in range(200)]
    for low, high in cases:
        assert p.nodes_for_range(low, high) == brute_force_nodes(p, low, high, domain), (low, high)


def test_nodes_for_range_on_text_and_with_repeated_values():
    data = np.zeros(100, dtype=WISC.dtype)
    data["two"] = np.arange(100) % 2  # two values for four nodes: boundaries repeat
    p = make("range_uniform(two)", 4, data)
    assert [len(x) for x in p.partition(data)].count(0) >= 2
    for low, high in [(0, 0), (1, 1), (0, 1), (None, None), (-3, 5)]:
        assert p.nodes_for_range(low, high) == brute_force_nodes(p, low, high, np.arange(-5, 8))
    q = make("range(stringu1: 'B', 'D')", 3, None)
    assert q.nodes_for_range("A", "A") == [0]
    assert q.nodes_for_range("B", "C") == [1]
    assert q.nodes_for_range("Bz", "Dz") == [1, 2]
    assert q.nodes_for_range(None, "B") == [0, 1]
    with pytest.raises(PartitioningError, match="text"):
        q.nodes_for_range(1, 2)


@pytest.mark.parametrize("num_nodes", range(2, 17))
def test_range_uniform_balances_within_5_percent(wisc, num_nodes):
    p = make("range_uniform(unique2)", num_nodes, wisc)
    sizes = np.bincount(p.route(wisc), minlength=num_nodes)
    assert sizes.sum() == N
    assert np.all(np.abs(sizes - N / num_nodes) <= 0.05 * N / num_nodes)


def test_range_uniform_from_a_sample_is_close_to_balanced(wisc):
    p = RangeUniform("unique1", sample=5000)
    p.fit(wisc, 8)
    sizes = np.bincount(p.route(wisc), minlength=8)
    assert np.all(np.abs(sizes - N / 8) <= 0.15 * N / 8)


def test_range_uniform_refit_for_another_node_count(wisc):
    p = make("range_uniform(unique1)", 4, wisc)
    p.fit(None, 4)  # same count: boundaries kept
    assert len(p.boundaries) == 3
    p.fit(None, 6)  # another count: boundaries forgotten until data comes
    with pytest.raises(PartitioningError, match="no boundaries yet"):
        p.route(wisc)
    p.fit(wisc, 6)
    assert p.route(wisc).max() == 5


# -- predicate fragments (Distributed INGRES, Section 2) ----------------------------------------
def test_emp_fragments_by_department(emps):
    p = parse_partitioning(EMP_FRAGMENTS, EMP_SCHEMA, 3)
    assert isinstance(p, PredicateFragments) and p.column == "dept"
    check_partition(p, emps, 3)
    parts = p.partition(emps)
    assert set(parts[0]["dept"].tolist()) == {b"shoe"}
    assert set(parts[1]["dept"].tolist()) == {b"toy"}
    assert not np.isin(parts[2]["dept"], [b"shoe", b"toy"]).any()
    assert min(len(x) for x in parts) > 0
    assert p.nodes_for_range("toy", "toy") == [1]
    assert p.nodes_for_range("dept00000042", "dept00000042") == [2]
    assert p.nodes_for_range("shoe", "toy") is None


def test_dept_fragments_by_budget(depts):
    p = parse_partitioning(DEPT_FRAGMENTS, DEPT_SCHEMA, 2)
    check_partition(p, depts, 2)
    parts = p.partition(depts)
    assert np.all(parts[0]["budget"] > 5) and np.all(parts[1]["budget"] <= 5)
    assert p.nodes_for_range(5, 5) == [1] and p.nodes_for_range(6, 6) == [0]


def test_fragments_accept_qualified_columns_and_expressions(emps):
    from minidb.exec.expr import Col, Compare, Const

    spec = {0: "E.salary > 10000", 1: Compare("<=", Col("salary"), Const(10000))}
    parts = parse_partitioning(spec, EMP_SCHEMA, 2).partition(emps)
    assert np.all(parts[0]["salary"] > 10000) and np.all(parts[1]["salary"] <= 10000)


def test_a_gap_names_the_tuple_and_the_nodes(emps):
    p = parse_partitioning({0: "dept = 'shoe'", 1: "dept = 'toy'"}, EMP_SCHEMA, 2)
    with pytest.raises(FragmentCoverageError) as err:
        p.route(emps)
    message = str(err.value)
    first = int(np.flatnonzero(~np.isin(emps["dept"], [b"shoe", b"toy"]))[0])
    assert "\n" not in message and "gap" in message and "exactly once" in message
    assert f"tuple {first}" in message
    assert f"dept='{emps['dept'][first].decode()}'" in message
    assert "nodes 0 and 1" in message


def test_an_overlap_names_the_tuple_and_the_nodes(emps, depts):
    p = parse_partitioning({0: "dept = 'shoe'", 1: "dept <> 'toy'"}, EMP_SCHEMA, 2)
    with pytest.raises(FragmentCoverageError) as err:
        p.route(emps)
    message = str(err.value)
    first = int(np.flatnonzero(emps["dept"] == b"shoe")[0])
    assert "\n" not in message and "overlap" in message
    assert f"tuple {first} of the batch (dept='shoe')" in message and "nodes 0 and 1" in message
    q = parse_partitioning({0: "budget >= 5", 1: "budget <= 5"}, DEPT_SCHEMA, 2)
    with pytest.raises(FragmentCoverageError, match=r"budget=5\).*overlap"):
        q.route(depts)


# -- spec forms ---------------------------------------------------------------------------------
@pytest.mark.parametrize("spec,cls,columns", [
    ("round_robin", RoundRobin, ()),
    ("  ROUND_ROBIN ", RoundRobin, ()),
    ("hash(unique1)", Hash, ("unique1",)),
    ("hash(UNIQUE1)", Hash, ("unique1",)),
    ("hash(a, b)", Hash, ("a", "b")),
    ("range(unique1: 1000, 2000, 3000)", Range, ("unique1",)),
    ("range(stringu1: 'B', \"D\", 'F')", Range, ("stringu1",)),
    ("range(unique1: -5, 2.5, 1e3)", Range, ("unique1",)),
    ("range_uniform(unique1)", RangeUniform, ("unique1",)),
])
def test_every_spec_form(spec, cls, columns):
    from minidb.storage.schema import Schema, int_column

    schema = Schema([*WISC.columns, int_column("a"), int_column("b")])
    p = parse_partitioning(spec, schema, 4)
    assert type(p) is cls and p.columns == columns and p.num_nodes == 4
    assert p.column == (columns[0] if len(columns) == 1 else None)


def test_boundary_values_are_kept_as_given():
    assert parse_partitioning("range(unique1: -5, 2.5, 1e3)", WISC, 4).boundaries == [-5, 2.5, 1000.0]
    assert parse_partitioning("range(stringu1: 'B', \"D\")", WISC, 3).boundaries == ["B", "D"]


def test_a_partitioner_instance_is_returned_as_is(wisc):
    p = Range("unique1", [10, 20])
    assert parse_partitioning(p, WISC, 3) is p and p.num_nodes == 3
    q = RangeUniform("unique1")
    q.fit(wisc, 4)
    bounds = list(q.boundaries)
    assert parse_partitioning(q, WISC, 4) is q and q.boundaries == bounds  # already fit: untouched
    with pytest.raises(UnknownColumnError, match="no column 'nope'"):
        parse_partitioning(Hash("nope"), WISC, 3)


SPEC_ERRORS = [
    ("zigzag(unique1)", 4, UnknownPluginError,
     "unknown partitioner 'zigzag'; choose one of: hash, lh_star, predicates, range, range_uniform, round_robin"),
    ("hash(nope)", 4, UnknownColumnError, "no column 'nope'; its columns are: unique1"),
    ("range_uniform(Unique9)", 4, UnknownColumnError, "no column 'Unique9'"),
    ("hash(unique1", 4, PartitioningError, "malformed partitioning 'hash(unique1'"),
    ("hash unique1", 4, PartitioningError, "malformed partitioning"),
    ("hash(1abc)", 4, PartitioningError, "not a list of column names"),
    ("range(unique1: 10, [20])", 3, PartitioningError, "numbers or quoted strings"),
    ("range(unique1: 10, 20,, 30)", 4, PartitioningError, "malformed partitioning"),
    ("range(unique1: 10, True)", 3, PartitioningError, "numbers or quoted strings"),
    ("hash()", 4, PartitioningError, "hash takes column names only: write hash(unique1)"),
    ("hash(unique1: 3)", 4, PartitioningError, "hash takes column names only"),
    ("round_robin(unique1)", 4, PartitioningError, "round_robin takes no column"),
    ("range(unique1)", 4, PartitioningError, "range needs one column and its boundaries"),
    ("range_uniform(unique1, unique2)", 4, PartitioningError, "range_uniform takes one column"),
    ("range(unique1: 3000, 2000, 1000)", 4, PartitioningError,
     "boundaries must increase strictly, but 3000 is followed by 2000"),
    ("range(unique1: 1000, 1000, 2000)", 4, PartitioningError, "must increase strictly"),
    ("range(unique1: 1000, 2000)", 4, PartitioningError,
     "has 2 boundaries, which make 3 ranges, but there are 4 nodes; give num_nodes - 1 = 3"),
    ("range(unique1: 1000, 2000, 3000, 4000)", 4, PartitioningError, "has 4 boundaries"),
    ("range(unique1: 'x', 'y')", 3, PartitioningError, "unique1 is numeric, so give numbers"),
    ("range(stringu1: 1, 2)", 3, PartitioningError, "stringu1 is text, so give quoted strings"),
    ("range(stringu1: 'a', 2)", 3, PartitioningError, "boundaries mix numbers and strings"),
    ("predicates", 2, PartitioningError, "given as a dict"),
    ("round_robin", 0, PartitioningError, "at least one node"),
    ("hash(unique1)", -1, PartitioningError, "at least one node"),
    ("round_robin", 2.0, PartitioningError, "whole number"),
    (42, 2, PartitioningError, "a spec string, a dict of predicates or a Partitioner"),
]


@pytest.mark.parametrize("spec,num_nodes,error,text", SPEC_ERRORS)
def test_spec_mistakes_are_one_line_errors(spec, num_nodes, error, text):
    with pytest.raises(error) as err:
        parse_partitioning(spec, WISC, num_nodes)
    assert isinstance(err.value, MinidbError)
    assert "\n" not in str(err.value)
    assert text in str(err.value)


FRAGMENT_ERRORS = [
    ({0: "dept = 'shoe'", 1: "dept <> 'shoe'"}, 3, "no fragment for node(s) 2"),
    ({0: "dept = 'shoe'", 2: "dept <> 'shoe'"}, 2, "no fragment for node(s) 1; node(s) 2 do not exist"),
    ({1: "dept = 'shoe'", 2: "dept <> 'shoe'"}, 2, "nodes 0..1"),
    ({}, 2, "a dict {node: 'SQL predicate'}"),
    ({"a": "dept = 'x'"}, 1, "fragment nodes must be numbers"),
    ({0: "dept = 1"}, 1, "fragment of node 0: cannot compare text with a number"),
    ({0: "colour = 'red'"}, 1, "fragment of node 0: relation has no column 'colour'"),
    ({0: "dept"}, 1, "not a condition"),
    ({0: "SELECT 1"}, 1, "is a statement"),
    ({0: "dept = "}, 1, "SQL syntax error"),
    ({0: "  "}, 1, "empty predicate"),
    ({0: "TRY_CAST(dept AS INTEGER) = 1"}, 1, "TRY_CAST"),
]


@pytest.mark.parametrize("spec,num_nodes,text", FRAGMENT_ERRORS)
def test_fragment_mistakes_are_one_line_errors(spec, num_nodes, text):
    with pytest.raises(MinidbError) as err:
        parse_partitioning(spec, EMP_SCHEMA, num_nodes)
    assert text in str(err.value) and "\n" not in str(err.value)


def test_routing_before_the_node_count_is_known_is_an_error(small):
    with pytest.raises(PartitioningError, match="fit"):
        Hash("unique1").route(small)
    with pytest.raises(PartitioningError, match="must increase strictly"):
        Range("unique1", [5, 5])
    with pytest.raises(PartitioningError, match="as a list"):
        Range("stringu1", "AB")


# -- split --------------------------------------------------------------------------------------
def test_split_keeps_input_order_and_checks_destinations(small):
    dest = np.asarray(small["unique1"] % 3, dtype=np.int64)
    parts = split(small, dest, 4)
    assert [len(p) for p in parts] == [int((dest == i).sum()) for i in range(4)]
    for i, part in enumerate(parts):
        assert np.array_equal(part, small[dest == i])
    assert split(small, np.zeros(len(small), dtype=np.int64), 1)[0] is small
    with pytest.raises(PartitioningError, match="destination 3 is not a node"):
        split(small, dest + 1, 3)
    with pytest.raises(PartitioningError, match="destination -1"):
        split(small, dest - 1, 3)
    with pytest.raises(PartitioningError, match="one destination per tuple"):
        split(small, dest[:-1], 3)


# -- property: any node count, any cut into pieces ----------------------------------------------
KINDS = ["round_robin", "hash(unique1)", "hash(stringu1, ten)", "range_uniform(unique2)",
         "range_uniform(string4)", "range"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(KINDS),
    num_nodes=st.integers(1, 12),
    rows=st.integers(0, 3000),
    cuts=st.lists(st.integers(0, 3000), max_size=12),
    seed=st.integers(0, 2**16),
)
def test_any_batch_cut_into_any_pieces_is_partitioned_exactly(small, kind, num_nodes, rows, cuts, seed):
    rng = np.random.default_rng(seed)
    batch = small[rng.permutation(len(small))[:rows]]
    if kind == "range":
        bounds = np.sort(rng.choice(3000, size=num_nodes - 1, replace=False)).tolist()
        spec = f"range(unique1: {', '.join(map(str, bounds))})"
    else:
        spec = kind
    whole = make(spec, num_nodes, batch).route(batch)
    p = make(spec, num_nodes, batch)
    edges = sorted({0, rows, *(c for c in cuts if c <= rows)})
    nodes: list[list[np.ndarray]] = [[] for _ in range(num_nodes)]
    pieces = []
    for a, b in zip(edges, edges[1:], strict=False):
        piece = batch[a:b]
        dest = p.route(piece)
        pieces.append(dest)
        for i, part in enumerate(split(piece, dest, num_nodes)):
            nodes[i].append(part)
    routed = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64)
    assert np.array_equal(routed, whole)  # piece by piece = all at once (round-robin included)
    union = np.concatenate([part for node in nodes for part in node] + [batch[:0]])
    assert same_tuples(union, batch)
    for i in range(num_nodes):
        mine = np.concatenate(nodes[i] + [batch[:0]])
        assert np.array_equal(mine, batch[whole == i])


# -- a student's partitioner --------------------------------------------------------------------
@pytest.fixture
def restore_registry():
    saved = dict(plugins._REGISTRY.get("partitioner", {}))
    yield
    plugins._REGISTRY["partitioner"] = saved


def test_builtins_are_registered():
    assert {"round_robin", "hash", "range", "range_uniform", "predicates"} <= set(
        plugins.names("partitioner"))
    assert lookup("partitioner", "hash") is Hash
    assert lookup("partitioner", "RANGE_UNIFORM") is RangeUniform
    assert lookup("partitioner", "predicates") is PredicateFragments


def test_student_partitioner_is_selectable_by_name(wisc, restore_registry):
    @register("partitioner", "by_last_digit")
    class ByLastDigit(Partitioner):
        """Node = the column's last decimal digit, modulo the number of nodes."""

        def route(self, batch):
            return (batch[self.column] % 10).astype(np.int64) % self.num_nodes

        def nodes_for_range(self, low, high):
            return [low % 10 % self.num_nodes] if low is not None and low == high else None

    assert "by_last_digit" in plugins.names("partitioner")
    p = parse_partitioning("by_last_digit(UNIQUE1)", WISC, 4)
    assert isinstance(p, ByLastDigit) and p.column == "unique1" and p.num_nodes == 4
    assert p.describe() == "by_last_digit(unique1)"
    dest = check_partition(p, wisc, 4)
    assert np.array_equal(dest, wisc["unique1"] % 10 % 4)
    assert p.nodes_for_range(13, 13) == [3]
    with pytest.raises(UnknownColumnError):
        parse_partitioning("by_last_digit(nope)", WISC, 4)
    with pytest.raises(PartitioningError, match="cannot be built with arguments"):
        parse_partitioning("by_last_digit(unique1, unique2)", WISC, 4)


def test_student_partitioner_without_a_column(small, restore_registry):
    @register("partitioner", "everything_to_zero")
    class EverythingToZero(Partitioner):
        name = "everything_to_zero"

        def route(self, batch):
            return np.zeros(len(batch), dtype=np.int64)

    p = parse_partitioning("everything_to_zero", WISC, 3)
    assert [len(x) for x in p.partition(small)] == [len(small), 0, 0]
    assert p.describe() == "everything_to_zero" and p.nodes_for_range(1, 1) is None


def test_a_broken_student_partitioner_is_caught_by_split(small, restore_registry):
    @register("partitioner", "off_by_one")
    class OffByOne(Partitioner):
        def route(self, batch):
            return np.full(len(batch), self.num_nodes, dtype=np.int64)

    with pytest.raises(PartitioningError, match="destination 2 is not a node; with 2 nodes"):
        parse_partitioning("off_by_one", WISC, 2).partition(small)


def test_a_registered_class_that_is_not_a_partitioner(restore_registry):
    register("partitioner", "not_one")(dict)
    with pytest.raises(PartitioningError, match="not a Partitioner"):
        parse_partitioning("not_one", WISC, 2)


def test_each_producer_routes_with_its_own_copy():
    """Split tables on different nodes must not share a round-robin turn (inline nodes are
    threads of one process; Ray nodes get copies anyway): producer p starts at node p mod N."""
    import numpy as np

    from minidb.parallel.partitioners import RoundRobin

    rr = RoundRobin()
    rr.fit(None, 4)
    batch = np.zeros(3, dtype=[("a", "<i4")])
    mine, theirs = rr.for_producer(1), rr.for_producer(6)
    assert mine.route(batch).tolist() == [1, 2, 3]
    assert theirs.route(batch).tolist() == [2, 3, 0]
    assert mine.route(batch).tolist() == [0, 1, 2]  # its own turn carried over
    assert rr.next_node == 0  # the original is untouched
