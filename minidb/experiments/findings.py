"""The papers' headline findings, written as checks over experiment rows.

A finding is what a paper concludes from its numbers ("nonindexed selections speed up almost
linearly"), not a number. Each one here names the section it comes from, states the claim in
the project's words, and tests it on the rows an experiment produced: it compares rows with each
other (a speedup with the number of nodes, one query with another, a time at two sizes), so
passing says the mechanism is there rather than that a constant was chosen to land on a number.
The cell-by-cell comparison with the published values is the other half of ``minidb report``.

A finding must be able to fail. Where the paper's claim is a magnitude ("grows in proportion",
"about the same", "19% then 50%"), the bar comes from the paper's own numbers and the claim
states it: the spread of the paper's ratios widened by ``SPREAD_MARGIN``, or the report's factor
of 2 around a number the text gives. ``tests/test_experiments.py`` shows each such finding pass on
the paper's numbers and fail on a deliberately broken model.

``check_findings(rows)`` returns one ``FindingResult`` per finding: passed, failed, or not
checked (the rows it needs are missing, e.g. the experiment was not run).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from minidb.experiments.registry import check_paper


@dataclass(frozen=True)
class Finding:
    name: str
    paper: str
    source: str
    claim: str
    experiment: str
    check: Callable[[list[dict]], tuple[bool, str]]


@dataclass(frozen=True)
class FindingResult:
    name: str
    paper: str
    source: str
    claim: str
    status: str
    """"pass", "fail" or "not checked"."""
    detail: str

    @property
    def passed(self) -> bool:
        return self.status == "pass"


FINDINGS: list[Finding] = []

NEAR_LINEAR = 0.85
"""A speedup is called near-linear here when it reaches this share of the ideal. The papers give
no threshold; the lowest of the curves they call near-linear reaches 0.87 of ideal (NonStop SQL
Table 2), so 0.85 is the bar, set from the papers and not from minidb's results."""


SPREAD_MARGIN = 0.10
"""A bar set from the spread of a paper's own numbers (its lowest to its highest ratio) is widened
by this share on each side: the printed numbers are rounded to 0.01 s, and a modeled run is one
run where the paper's numbers are one measurement each. Chosen with the bars, before any run."""

FACTOR_2 = 2.0
"""The factor within which ``minidb report`` counts a published number as reproduced; a finding
that compares a magnitude with one number of the paper uses the same bar."""


def spread_bar(paper_ratios: Iterable[float]) -> tuple[float, float]:
    """The paper's lowest and highest ratio, widened by ``SPREAD_MARGIN``."""
    ratios = list(paper_ratios)
    return min(ratios) * (1 - SPREAD_MARGIN), max(ratios) * (1 + SPREAD_MARGIN)


# Gamma's ratios per tenfold size from 10,000 tuples up, from its own tables (the tests check them
# against datasets/reference): Table 1's nonindexed 1% (13.83 / 1.63, 134.86 / 13.83) and 10%
# (17.44 / 2.11, 181.72 / 17.44) selections; Table 7's MIN (15.53 / 1.89, 151.10 / 15.53) and
# SUM over 100 partitions (19.54 / 2.89, 185.05 / 19.54).
PAPER_SELECTION_GROWTH = (13.83 / 1.63, 134.86 / 13.83, 17.44 / 2.11, 181.72 / 17.44)
PAPER_AGGREGATE_GROWTH = (15.53 / 1.89, 151.10 / 15.53, 19.54 / 2.89, 185.05 / 19.54)
SELECTION_GROWTH_BAR = spread_bar(PAPER_SELECTION_GROWTH)   # 8.27-10.42 -> 7.44-11.46
AGGREGATE_GROWTH_BAR = spread_bar(PAPER_AGGREGATE_GROWTH)   # 6.76-9.73 -> 6.09-10.70

# Table 8, Gamma: the largest over the smallest of each update's three times (10,000 / 100,000 /
# 1,000,000 tuples); the widest is the delete, 0.61 / 0.44 = 1.39.
PAPER_UPDATE_SPREAD = (0.20 / 0.18, 0.66 / 0.60, 0.61 / 0.44, 1.13 / 0.86, 0.36 / 0.36,
                       0.52 / 0.46)
UPDATE_SPREAD_BAR = spread_bar(PAPER_UPDATE_SPREAD)[1]      # 1.39 -> 1.53

# §5.2.2: the 10% nonindexed selection is 19% slower than the 0% one with 2 KB pages, 50% with
# 32 KB pages.
PAPER_NETWORK_GAP = {"page_2kb": 0.19, "page_32kb": 0.50}


class Missing(Exception):
    """The rows a finding needs are not there."""


class NotANumber(Exception):
    """A row a finding needs holds NaN (or no value): the run produced no number where the
    claim needs one. That is a failure of the run, not a missing run, so the finding fails
    (with this message) rather than being "not checked", and ``report --strict`` exits 1."""


def finding(name: str, paper: str, source: str, claim: str, experiment: str) -> Callable:
    def wrap(check: Callable[[list[dict]], tuple[bool, str]]) -> Callable:
        FINDINGS.append(Finding(name, paper, source, claim, experiment, check))
        return check
    return wrap


def _value(row: dict) -> float:
    """The value of a stored row. A NaN compares false with every bar, so a check would pass or
    fail by accident on it: it raises ``NotANumber`` instead, which fails the finding by name."""
    value = row["value"]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise NotANumber(f"{row['experiment']} stored no number (NaN) for {row['row']} at "
                         f"{row['column']} ({row['metric']}); a run that yields no number "
                         f"cannot bear the claim out")
    return value


def _values(rows: Iterable[dict], experiment: str, metric: str, **match) -> dict[tuple, float]:
    """(row slug, column slug) -> value of the modeled rows of ``experiment`` with ``metric``."""
    out = {}
    for r in rows:
        if r["experiment"] != experiment or r["metric"] != metric or r["clock"] != "modeled":
            continue
        if all(r["parameters"].get(k) == v for k, v in match.items()):
            out[(r["row"], r["column"])] = _value(r)
    if not out:
        raise Missing(f"no {metric} rows of {experiment}")
    return out


def _get(values: dict, row: str, column: str) -> float:
    try:
        return values[(row, column)]
    except KeyError:
        raise Missing(f"no value for {row} at {column}") from None


def _columns(values: dict, prefix: str) -> list[str]:
    """The columns of ``values`` starting with ``prefix``, ordered by their number."""
    cols = {c for _, c in values if c.startswith(prefix)}
    return sorted(cols, key=lambda c: int("".join(ch for ch in c if ch.isdigit()) or 0))


def _path_name(used_index: float) -> str:
    return "index" if used_index else "file scan"


def _nodes(column: str) -> int:
    return int(column.split("_")[-1])


def _growth_per_tenfold(values: dict, queries: Iterable[str]) -> list[float]:
    """For each query and each pair of successive Gamma relation sizes of 10,000 tuples or more,
    how many times longer the larger one took, scaled to a tenfold size step."""
    cols = [c for c in _columns(values, "gamma_") if int(c.split("_")[1]) >= 10_000]
    if len(cols) < 2:
        raise Missing("fewer than two Gamma relation sizes of 10,000 tuples or more")
    ratios = []
    for q in queries:
        for a, b in itertools.pairwise(cols):
            size_ratio = int(b.split("_")[1]) / int(a.split("_")[1])
            ratios.append(_get(values, q, b) / _get(values, q, a) * 10 / size_ratio)
    return ratios


def _grows_tenfold(rows, experiment: str, queries: tuple[str, ...],
                   bar: tuple[float, float]) -> tuple[bool, str]:
    """Whether Gamma's time for ``queries`` grows within ``bar`` per tenfold relation size."""
    t = _values(rows, experiment, "response_time", system="gamma")
    ratios = _growth_per_tenfold(t, queries)
    low, high = bar
    ok = all(low <= r <= high for r in ratios)
    return ok, (f"time ratios per tenfold size (bar {low:.2f}-{high:.2f}): "
                + ", ".join(f"{r:.2f}" for r in ratios))


# -- Gamma, Section 5 -----------------------------------------------------------------------------
@finding("gamma.selection_time_linear_in_size", "gamma", "§5.1, Table 1",
         "The time of a nonindexed selection grows in proportion to the relation. Per tenfold size "
         "(from 10,000 tuples up) Gamma's 1% and 10% selections took 8.27 to 10.42 times as "
         "long (Table 1); the bar is that spread widened by 10%: 7.44 to 11.46.",
         "gamma.selection")
def _linear(rows):
    return _grows_tenfold(rows, "gamma.selection",
                          ("select_1pct_nonindexed", "select_10pct_nonindexed"),
                          SELECTION_GROWTH_BAR)


@finding("gamma.optimizer_scans_for_10pct", "gamma", "§5.1, §5.2.1, §5.2.2, Figure 8",
         "The optimizer picks the access path the paper reports for the selections through the "
         "non-clustered index on unique2: the index for 1% and a file scan for 10% at every "
         "relation size on both machines (Table 1, 4 KB pages), and the index for 1% at every "
         "page size from 2 to 32 KB (Figure 8 plots it at each; at 32 KB a fragment's 125 "
         "matches outnumber its data pages, so a rule comparing the two would scan).",
         "gamma.selection")
def _optimizer(rows):
    expected = {"select_1pct_nonclustered_index": 1.0, "select_10pct_nonclustered_index": 0.0}
    by_size = _values(rows, "gamma.selection", "used_index")
    by_page = _values(rows, "gamma.access_paths", "used_index")
    checked, wrong = [], []
    for (query, column), used in sorted(by_size.items()):
        if query in expected:
            checked.append(column)
            if used != expected[query]:
                wrong.append(f"{query} at {column} ({_path_name(used)} chosen)")
    page_columns = _columns(by_page, "page_")
    if len(page_columns) < 2:
        raise Missing("the optimizer's choice at fewer than two page sizes (gamma.access_paths)")
    for column in page_columns:
        query = "select_1pct_nonclustered_index"  # the paper reports no 10% path per page size
        used = _get(by_page, query, column)
        checked.append(column)
        if used != 1.0:
            wrong.append(f"{query} at {column} ({_path_name(used)} chosen)")
    detail = (f"{len(checked) - len(wrong)} of {len(checked)} choices as the paper reports "
              f"(sizes and systems of Table 1; pages {', '.join(page_columns)})")
    if wrong:
        detail += "; differs: " + ", ".join(wrong)
    return not wrong, detail


@finding("gamma.nonindexed_speedup_near_linear", "gamma", "§5.2.1, Figure 3",
         "The 0%, 1% and 10% selections without an index all speed up almost linearly (the "
         "paper says so of all three, the 10% one a little less): each reaches at least 0.85 "
         "of the ideal speedup on the largest configuration.", "gamma.selection_speedup")
def _near_linear(rows):
    s = _values(rows, "gamma.selection_speedup", "speedup")
    top = _columns(s, "nodes_")[-1]
    n = _nodes(top)
    if n < 4:
        raise Missing("needs a configuration of 4 nodes or more")
    got = {q: _get(s, q, top) for q in ("select_0pct_nonindexed", "select_1pct_nonindexed",
                                        "select_10pct_nonindexed")}
    ok = all(v >= NEAR_LINEAR * n for v in got.values())
    return ok, ", ".join(f"{q}: {v:.2f} of {n}" for q, v in got.items())


@finding("gamma.10pct_speeds_up_less", "gamma", "§5.2.1, Figure 3",
         "The 10% nonindexed selection speeds up less than the 1% one: with more nodes fewer of "
         "its result packets are short-circuited and the network interface slows it.",
         "gamma.selection_speedup")
def _ten_less(rows):
    s = _values(rows, "gamma.selection_speedup", "speedup")
    top = _columns(s, "nodes_")[-1]
    one, ten = _get(s, "select_1pct_nonindexed", top), _get(s, "select_10pct_nonindexed", top)
    return ten < one, f"speedup at {top}: 1% {one:.3f}, 10% {ten:.3f}"


@finding("gamma.0pct_indexed_slower_with_nodes", "gamma", "§5.2.1, Figure 5",
         "A 0% selection through an index gets slower as nodes are added (0.25 to 0.58 s in the "
         "paper): starting operators on every node costs more than the 1-2 index I/Os saved.",
         "gamma.selection_speedup")
def _zero_slower(rows):
    t = _values(rows, "gamma.selection_speedup", "response_time")
    cols = _columns(t, "nodes_")
    times = [_get(t, "select_0pct_nonclustered_index", c) for c in cols]
    ok = times[-1] > times[0] and all(b >= a for a, b in itertools.pairwise(times))
    return ok, " -> ".join(f"{v:.3f} s" for v in times) + f" over {cols}"


@finding("gamma.nonclustered_1pct_best_indexed_speedup", "gamma", "§5.2.1, Figure 5",
         "Of the indexed selections only the 1% one through the non-clustered index comes close "
         "to linear speedup; the clustered-index selections fall behind.",
         "gamma.selection_speedup")
def _nc_best(rows):
    s = _values(rows, "gamma.selection_speedup", "speedup")
    top = _columns(s, "nodes_")[-1]
    nc = _get(s, "select_1pct_nonclustered_index", top)
    others = {q: _get(s, q, top) for q in ("select_1pct_clustered_index",
                                           "select_10pct_clustered_index")}
    ok = all(nc > v for v in others.values())
    return ok, f"at {top}: 1% non-clustered {nc:.2f}; " + ", ".join(
        f"{q} {v:.2f}" for q, v in others.items())


@finding("gamma.page_size_levels_off", "gamma", "§5.2.2, Figure 6",
         "Larger pages help a nonindexed scan a lot at first (2 KB pages are disk bound) and "
         "little past 8 KB: going from 8 to 32 KB saves under 20% of the time.",
         "gamma.page_size")
def _levels_off(rows):
    t = _values(rows, "gamma.page_size", "response_time")
    q = "select_0pct_nonindexed"
    t2, t4, t8, t32 = (_get(t, q, f"page_{k}kb") for k in (2, 4, 8, 32))
    ok = t4 < 0.8 * t2 and t32 >= 0.8 * t8
    return ok, f"0% selection: 2 KB {t2:.2f} s, 4 KB {t4:.2f} s, 8 KB {t8:.2f} s, 32 KB {t32:.2f} s"


@finding("gamma.page_size_hurts_nonclustered", "gamma", "§5.2.2, Figure 8",
         "Every increase of the page size makes the 1% selection through the non-clustered "
         "index slower: each tuple costs a random page read, and a bigger page takes longer to "
         "transfer (the paper: any increase degrades it).", "gamma.page_size")
def _hurts(rows):
    t = _values(rows, "gamma.page_size", "response_time")
    q = "select_1pct_nonclustered_index"
    cols = _columns(t, "page_")
    if len(cols) < 2:
        raise Missing("fewer than two page sizes")
    times = [_get(t, q, c) for c in cols]
    flat = [f"{a} -> {b}" for (a, ta), (b, tb) in itertools.pairwise(zip(cols, times, strict=True))
            if not tb > ta]
    detail = " -> ".join(f"{v:.2f} s" for v in times) + f" over {cols}"
    if flat:
        detail += "; not slower from " + ", ".join(flat)
    return not flat, detail


@finding("gamma.network_share_grows_with_page_size", "gamma", "§5.2.2, Figure 6",
         "The 10% selection loses more to the 0% one as pages grow, because results come faster "
         "than the network interface takes them: the paper's 10% selection is 19% slower than "
         "the 0% one with 2 KB pages and 50% slower with 32 KB pages. Bar: each gap within a "
         "factor of 2 of the paper's (9.5-38% at 2 KB, 25-100% at 32 KB), the 32 KB one larger.",
         "gamma.page_size")
def _share(rows):
    t = _values(rows, "gamma.page_size", "response_time")
    gap = {c: _get(t, "select_10pct_nonindexed", c) / _get(t, "select_0pct_nonindexed", c) - 1
           for c in PAPER_NETWORK_GAP}
    near = all(paper / FACTOR_2 <= gap[c] <= paper * FACTOR_2
               for c, paper in PAPER_NETWORK_GAP.items())
    ok = near and gap["page_32kb"] > gap["page_2kb"]
    return ok, ", ".join(f"10% slower than 0% by {gap[c]:.0%} at {c} (paper {paper:.0%})"
                         for c, paper in PAPER_NETWORK_GAP.items())


@finding("gamma.aggregates_linear_in_size", "gamma", "§7, Table 7",
         "Aggregates scan the whole relation, so their time grows in proportion to it. Per tenfold "
         "size (from 10,000 tuples up) Gamma's MIN and SUM over 100 partitions took 6.76 to "
         "9.73 times as long (Table 7); the bar is that spread widened by 10%: 6.09 to 10.70.",
         "gamma.aggregates")
def _agg_linear(rows):
    return _grows_tenfold(rows, "gamma.aggregates", ("min_scalar", "sum_100_partitions"),
                          AGGREGATE_GROWTH_BAR)


@finding("gamma.single_tuple_updates_independent_of_size", "gamma", "§8, Table 8",
         "Appending, deleting or modifying one tuple through an index costs about the same at "
         "every relation size (from 10,000 tuples up, the paper's sizes): in Table 8 each "
         "update's slowest of the three sizes is at most 1.39 times its fastest (the delete, "
         "0.61 / 0.44 s); the bar is that spread widened by 10%: 1.52.", "gamma.updates")
def _updates_flat(rows):
    t = _values(rows, "gamma.updates", "response_time", system="gamma")
    cols = [c for c in _columns(t, "gamma_") if int(c.split("_")[1]) >= 10_000]
    if len(cols) < 2:
        raise Missing("fewer than two relation sizes of 10,000 tuples or more")
    spreads = {}
    for q in sorted({q for q, _ in t}):
        times = [_get(t, q, c) for c in cols]
        spreads[q] = max(times) / min(times)
    ok = all(v <= UPDATE_SPREAD_BAR for v in spreads.values())
    return ok, (f"slowest / fastest over {cols} (bar {UPDATE_SPREAD_BAR:.2f}): "
                + ", ".join(f"{q} x{v:.2f}" for q, v in spreads.items()))


# -- Gamma, Section 6.1 (joins) -------------------------------------------------------------------
JOIN_QUERIES = ("joinabprime", "joinaselb", "joincselaselb")
JOIN_ROWS = tuple(f"{q}_{v}" for v in ("nonkey", "key") for q in JOIN_QUERIES)


def _table3_ratios(system: str, small: int, large: int) -> list[float]:
    """The paper's Table 3 time at ``large`` tuples over the time at ``small``, each query."""
    t = _published("gamma", "Table 3", "response_time")
    return [t[(r, f"{system}_{large}")] / t[(r, f"{system}_{small}")] for r in JOIN_ROWS]


def _join_ratios(rows, system: str, small: int, large: int) -> list[float]:
    t = _values(rows, "gamma.joins", "response_time", system=system)
    return [_get(t, r, f"{system}_{large}") / _get(t, r, f"{system}_{small}") for r in JOIN_ROWS]


def _within(ratios: list[float], bar: tuple[float, float]) -> tuple[bool, str]:
    low, high = bar
    return (all(low <= r <= high for r in ratios),
            f"bar {low:.2f}-{high:.2f}: " + ", ".join(f"{r:.2f}" for r in ratios))


@finding("gamma.joins_linear_until_overflow", "gamma", "§6.1, Table 3",
         "Without overflow a join's time grows about in proportion to the relations: from "
         "10,000 to 100,000 tuples Gamma's six joins took 5.19 to 8.00 times as long (Table 3); "
         "the bar is that spread widened by 10%, 4.67 to 8.80.", "gamma.joins")
def _joins_linear(rows):
    return _within(_join_ratios(rows, "gamma", 10_000, 100_000),
                   spread_bar(_table3_ratios("gamma", 10_000, 100_000)))


@finding("gamma.joins_overflow_breaks_linearity", "gamma", "§6.1, Table 3",
         "At 1,000,000 tuples the building relation no longer fits the joining processors' "
         "memory and Simple hash's overflow passes make Gamma's joins far worse than linear: "
         "from 100,000 to 1,000,000 tuples its six joins took 19.1 to 64.2 times as long (bar "
         "widened by 10%: 17.2 to 70.6), and each diskless processor resolved six overflows "
         "(bar: within a factor of 2, 3 to 12), where the smaller joins resolved none. The "
         "overflow count is partly calibration: Gamma's hash_entry_bytes (space per hash-table "
         "entry) was derived from these six overflows, so the count checks only that the "
         "calibration carries to every query (joinCselAselB included) and to the scaled run; "
         "the time ratios stay a prediction.",
         "gamma.joins")
def _joins_overflow(rows):
    ok, detail = _within(_join_ratios(rows, "gamma", 100_000, 1_000_000),
                         spread_bar(_table3_ratios("gamma", 100_000, 1_000_000)))
    over = _values(rows, "gamma.joins", "overflows", system="gamma")
    big = [_get(over, r, "gamma_1000000") for r in JOIN_ROWS]
    small = [_get(over, r, c) for r in JOIN_ROWS for c in ("gamma_10000", "gamma_100000")]
    counts_ok = all(6 / FACTOR_2 <= n <= 6 * FACTOR_2 for n in big) and not any(small)
    return ok and counts_ok, (f"time ratios ({detail}); overflows per processor at 1,000,000: "
                              + ", ".join(f"{n:.0f}" for n in big)
                              + f"; below: {max(small):.0f} at most")


@finding("gamma.teradata_joins_linear_in_size", "gamma", "§6.1, Table 3",
         "Teradata's sort-merge joins grow about in proportion to the relations at every size: "
         "per tenfold size its six joins took 5.91 to 10.66 times as long (Table 3); the bar is "
         "that spread widened by 10%, 5.32 to 11.73.", "gamma.joins")
def _teradata_linear(rows):
    bar = spread_bar(_table3_ratios("teradata", 10_000, 100_000)
                     + _table3_ratios("teradata", 100_000, 1_000_000))
    return _within(_join_ratios(rows, "teradata", 10_000, 100_000)
                   + _join_ratios(rows, "teradata", 100_000, 1_000_000), bar)


@finding("gamma.joins_beat_teradata_without_overflow", "gamma", "§6.1, Table 3, §9",
         "Where Gamma's hash tables fit (10,000 and 100,000 tuples) Gamma runs every one of the "
         "six joins faster than the Teradata (by 2.9 to 9.5 times in Table 3).", "gamma.joins")
def _joins_beat_teradata(rows):
    g = _values(rows, "gamma.joins", "response_time", system="gamma")
    t = _values(rows, "gamma.joins", "response_time", system="teradata")
    ratios = [_get(t, r, f"teradata_{n}") / _get(g, r, f"gamma_{n}")
              for n in (10_000, 100_000) for r in JOIN_ROWS]
    return all(x > 1 for x in ratios), "Teradata / Gamma: " + ", ".join(f"{x:.2f}" for x in ratios)


@finding("gamma.joinaselb_order_differs", "gamma", "§6.1, Table 3",
         "Gamma runs joinAselB faster than joinABprime (selection propagation sends only a "
         "tenth of A over the network), while the Teradata runs joinABprime faster (it reads "
         "less), at every size and on both join attributes.", "gamma.joins")
def _joinaselb_order(rows):
    g = _values(rows, "gamma.joins", "response_time", system="gamma")
    t = _values(rows, "gamma.joins", "response_time", system="teradata")
    checks, parts = [], []
    for v in ("nonkey", "key"):
        for n in _sizes(g, "gamma"):
            a, b = _get(g, f"joinaselb_{v}", f"gamma_{n}"), _get(g, f"joinabprime_{v}", f"gamma_{n}")
            checks.append(a < b)
            parts.append(f"Gamma {v} {n:,}: {a:.1f} vs {b:.1f}")
        for n in _sizes(t, "teradata"):
            a, b = _get(t, f"joinabprime_{v}", f"teradata_{n}"), _get(t, f"joinaselb_{v}",
                                                                       f"teradata_{n}")
            checks.append(a < b)
            parts.append(f"Teradata {v} {n:,}: {a:.1f} vs {b:.1f}")
    return all(checks), "; ".join(parts)


def _sizes(values: dict, system: str) -> list[int]:
    return sorted({int(c.split("_")[1]) for _, c in values if c.startswith(system + "_")})


@finding("gamma.teradata_key_join_faster", "gamma", "§6.1, Table 3",
         "On the key attribute the Teradata skips redistributing the relations and runs each "
         "join substantially faster than on a non-key attribute (the text: 25-50%; Table 3: "
         "14.4% to 63.0% faster); the bar is every join at least 13.0% faster (the smallest "
         "gap less 10%).", "gamma.joins")
def _teradata_key(rows):
    t = _values(rows, "gamma.joins", "response_time", system="teradata")
    gaps = []
    for q in JOIN_QUERIES:
        for n in _sizes(t, "teradata"):
            gaps.append(1 - _get(t, f"{q}_key", f"teradata_{n}") / _get(t, f"{q}_nonkey",
                                                                        f"teradata_{n}"))
    bar = TERADATA_KEY_GAP * (1 - SPREAD_MARGIN)
    return all(g >= bar for g in gaps), (f"key faster by (bar {bar:.1%}): "
                                         + ", ".join(f"{g:.1%}" for g in gaps))


TERADATA_KEY_GAP = 1 - 23.8 / 27.8
"""The smallest gain of Teradata's key join over its non-key join in Table 3 (joinCselAselB at
10,000 tuples: 23.8 s against 27.8 s)."""


# -- Gamma, Section 6.2.1 (joins on 1 to 8 processors) -------------------------------------------
def _mode_times(rows) -> dict[tuple, float]:
    return _values(rows, "gamma.join_speedup", "response_time")


@finding("gamma.join_modes_mirror", "gamma", "§6.2.1, Figures 10 and 11",
         "On the larger configurations the placements rank in mirror image: joining on the "
         "partitioning attribute, Local is fastest, then Allnodes, then Remote (Local "
         "short-circuits every tuple); on another attribute, Remote is fastest, then Allnodes, "
         "then Local. Checked at every configuration of 4 processors or more.",
         "gamma.join_speedup")
def _join_modes(rows):
    t = _mode_times(rows)
    sizes = sorted({_nodes(c) for _, c in t if _nodes(c) >= 4})
    if not sizes:
        raise Missing("no configuration of 4 processors or more")
    ok, parts = True, []
    for n in sizes:
        def at(variant, mode, n=n):
            return _get(t, f"joinabprime_{variant}_{mode}", f"nodes_{n}")
        key = at("key", "local") < at("key", "allnodes") < at("key", "remote")
        nonkey = at("nonkey", "remote") < at("nonkey", "allnodes") < at("nonkey", "local")
        ok &= key and nonkey
        parts.append(f"{n}: key L/A/R {at('key', 'local'):.1f}/{at('key', 'allnodes'):.1f}/"
                     f"{at('key', 'remote'):.1f}, non-key L/A/R {at('nonkey', 'local'):.1f}/"
                     f"{at('nonkey', 'allnodes'):.1f}/{at('nonkey', 'remote'):.1f}")
    return ok, "; ".join(parts)


def _doubling_bar() -> float:
    """The one speedup §6.2.1 prints for Figures 12-13, Local on a non-key attribute from 4 to 8
    processors ("approximately 1.75"), less ``SPREAD_MARGIN``: the bar each doubling must reach."""
    t = _published("gamma", "Figure 13", "speedup")
    return t[("joinabprime_nonkey_local", "nodes_4_to_8")] * (1 - SPREAD_MARGIN)


@finding("gamma.join_speedup_near_linear", "gamma", "§6.2.1, Figures 12 and 13",
         "joinABprime speeds up near linearly in every placement and on both attributes. The "
         "paper's one number for these curves is Local on a non-key attribute going from 4 to 8 "
         "processors, approximately 1.75, the curve it names as the one short-circuiting "
         "understates most; the bar is that number less 10% (1.575) for every doubling of the "
         "processors from 2 (the paper's reference point): 2 to 4, 4 to 8.",
         "gamma.join_speedup")
def _join_speedup(rows):
    from minidb.experiments.gamma_joins import SPEEDUP_BASE

    t = _mode_times(rows)
    configs = sorted({_nodes(c) for _, c in t})
    steps = [(n, 2 * n) for n in configs if n >= SPEEDUP_BASE and 2 * n in configs]
    if not steps:
        raise Missing("no doubling of the processors from 2 among the stored configurations")
    bar = _doubling_bar()
    gains = {(r, n): _get(t, r, f"nodes_{n}") / _get(t, r, f"nodes_{m}")
             for r in sorted({r for r, _ in t}) for n, m in steps}
    return (all(g >= bar for g in gains.values()),
            f"speedup per doubling (bar {bar:.3f}): "
            + ", ".join(f"{r.removeprefix('joinabprime_')} {n}->{2 * n} {g:.2f}"
                        for (r, n), g in gains.items()))


@finding("gamma.remote_not_twice_local", "gamma", "§6.2.1, Figures 10 and 11",
         "Remote joins use twice the processors of Local ones yet are not twice as fast: the "
         "build and probe phases do not overlap, so the time is at least the sum of the two. "
         "Checked at every configuration and on both attributes: Local's time is less than twice "
         "Remote's.", "gamma.join_speedup")
def _remote_not_twice(rows):
    t = _mode_times(rows)
    ratios = [_get(t, f"joinabprime_{v}_local", c) / _get(t, f"joinabprime_{v}_remote", c)
              for v in ("key", "nonkey") for c in sorted({c for _, c in t}, key=_nodes)]
    return all(r < 2 for r in ratios), "Local / Remote: " + ", ".join(f"{r:.2f}" for r in ratios)


@finding("gamma.join_attributes_coincide_on_one_processor", "gamma", "§6.2.1, Figures 10 and 11",
         "With one processor nothing is partitioned, so the key and the non-key join take the "
         f"same time in each placement (within {SPREAD_MARGIN:.0%}).", "gamma.join_speedup")
def _coincide(rows):
    t = _mode_times(rows)
    gaps = [abs(_get(t, f"joinabprime_key_{m}", "nodes_1")
                / _get(t, f"joinabprime_nonkey_{m}", "nodes_1") - 1) for m in
            ("local", "remote", "allnodes")]
    return all(g <= SPREAD_MARGIN for g in gaps), "key vs non-key at 1 processor: " + ", ".join(
        f"{g:.1%}" for g in gaps)


# -- Gamma, Section 2 (bit-vector filters) ---------------------------------------------------------
#: §6.1's definition of joinABprime: Bprime is a tenth of A and each of its tuples joins one of A's
JOINABPRIME_SHARE = 0.1


@finding("gamma.bit_filters_cut_probe_by_selectivity", "gamma", "§2, §6.1",
         "Bit-vector filters drop the probe tuples that cannot join, and only those: in "
         f"joinABprime {JOINABPRIME_SHARE:.0%} of A joins Bprime, so the producers send at least "
         "that share of A and more only by the filters' false positives (at most the share of "
         "bits set, plus three standard deviations); in joinAselB the selection propagated to A "
         "leaves nothing to drop, so every A tuple is still sent.", "gamma.bit_filters")
def _bit_filters(rows):
    sent = _values(rows, "gamma.bit_filters", "probe_sent_fraction")
    fill = _values(rows, "gamma.bit_filters", "filter_fill")
    tested = _values(rows, "gamma.bit_filters", "probe_tuples_tested")
    ok, parts = True, []
    for v in ("key", "nonkey"):
        row = f"joinabprime_{v}"
        s, f = _get(sent, row, "with_filters"), _get(fill, row, "with_filters")
        others = (1 - JOINABPRIME_SHARE) * _get(tested, row, "with_filters")
        high = JOINABPRIME_SHARE + (1 - JOINABPRIME_SHARE) * (
            f + 3 * math.sqrt(f * (1 - f) / max(others, 1)))
        ok &= JOINABPRIME_SHARE - 1e-9 <= s <= high
        parts.append(f"{row} sent {s:.3f} (bar {JOINABPRIME_SHARE:.2f}-{high:.3f})")
        s = _get(sent, f"joinaselb_{v}", "with_filters")
        ok &= s >= 1 - 1e-9
        parts.append(f"joinaselb_{v} sent {s:.3f} (bar 1)")
    return ok, "; ".join(parts)


# -- Gamma, Section 6.2.3 (page size, Figures 15 and 16) -----------------------------------------
@finding("gamma.join_page_size_levels_off", "gamma", "§6.2.3, Figures 15 and 16",
         "Larger disk pages cut joinAselB's time a lot, and the gain levels off at 16 KB: in every "
         "placement and on both join attributes, each doubling of the page from 2 to 16 KB makes "
         "the join faster, the first doubling saves the most, and the step from 16 to 32 KB saves "
         "the least.", "gamma.join_page_size")
def _join_page_size(rows):
    t = _values(rows, "gamma.join_page_size", "response_time")
    pages = [f"page_{k}kb" for k in (2, 4, 8, 16, 32)]
    ok, parts = True, []
    for row in sorted({r for r, _ in t}):
        times = [_get(t, row, c) for c in pages]
        saved = [1 - b / a for a, b in zip(times, times[1:], strict=False)]
        holds = (all(s > 0 for s in saved[:3]) and all(saved[0] > s for s in saved[1:])
                 and all(saved[-1] < s for s in saved[:-1]))
        ok &= holds
        parts.append(f"{row.removeprefix('joinaselb_')}: saved per doubling "
                     + "/".join(f"{s:.0%}" for s in saved))
    return ok, "; ".join(parts)


# -- Gamma, Section 6.2.2 (join overflow, Figure 14) ----------------------------------------------
def _memory_points(rows, metric: str) -> dict[tuple, float]:
    return _values(rows, "gamma.join_memory", metric)


def _shares(values: dict) -> list[int]:
    return sorted({int(c.split("_")[1]) for _, c in values}, reverse=True)


@finding("gamma.join_memory_local_remote_cross", "gamma", "§6.2.2, Figure 14",
         "On the partitioning attribute, Local beats Remote while no processor overflows; once "
         "they overflow, Remote beats Local, because after the first overflow Gamma switches hash "
         "functions and the join attribute is no longer the partitioning one. Checked with "
         "Simple hash at the most memory and at the least.", "gamma.join_memory")
def _memory_cross(rows):
    t, o = _memory_points(rows, "response_time"), _memory_points(rows, "overflows")
    shares = _shares(t)
    if len(shares) < 2:
        raise Missing("fewer than two memory sizes")
    most, least = f"memory_{shares[0]}", f"memory_{shares[-1]}"
    local, remote = "joinabprime_key_simple_hash_local", "joinabprime_key_simple_hash_remote"
    no_overflow = not _get(o, local, most) and not _get(o, remote, most)
    overflowed = _get(o, local, least) > 0 and _get(o, remote, least) > 0
    ok = (no_overflow and overflowed and _get(t, local, most) < _get(t, remote, most)
          and _get(t, remote, least) < _get(t, local, least))
    return ok, (f"{shares[0]}% memory: Local {_get(t, local, most):.1f} s, Remote "
                f"{_get(t, remote, most):.1f} s, overflows {_get(o, local, most):.0f}; "
                f"{shares[-1]}%: Local {_get(t, local, least):.1f} s, Remote "
                f"{_get(t, remote, least):.1f} s, overflows {_get(o, local, least):.0f}")


@finding("gamma.hybrid_beats_simple_under_overflow", "gamma", "§6.2.2, §9",
         "With many overflows Simple hash deteriorates and Hybrid hash, which partitions so that "
         "each piece fits, does not (the reason §9 announces it): at the least memory Hybrid is "
         "faster than Simple hash in both placements.", "gamma.join_memory")
def _hybrid_beats_simple(rows):
    t = _memory_points(rows, "response_time")
    least = f"memory_{_shares(t)[-1]}"
    pairs = [(m, _get(t, f"joinabprime_key_hybrid_hash_{m}", least),
              _get(t, f"joinabprime_key_simple_hash_{m}", least)) for m in ("local", "remote")]
    return all(h < s for _, h, s in pairs), "; ".join(
        f"{m}: Hybrid {h:.1f} s, Simple {s:.1f} s" for m, h, s in pairs)


# -- NonStop SQL --------------------------------------------------------------------------------
@finding("tandem.speedup_near_linear", "tandem", "Table 2, Figures 6-9",
         "Scan, 1% select and insert, average, 1% update and the co-located join (CLX) speed "
         "up almost linearly: at least "
         "0.85 of the ideal n / 2 relative to 2 partitions (the paper's lowest is 0.87).", "tandem.speedup")
def _tandem_speedup(rows):
    shares = []  # (share of the ideal speedup n / baseline, query, column)
    for r in rows:
        if r["experiment"] == "tandem.speedup" and r["metric"] == "speedup":
            ideal = r["parameters"]["partitions"] / r["parameters"]["baseline_partitions"]
            shares.append((_value(r) / ideal, r["row"], r["column"]))
    if not shares:
        raise Missing("no speedup rows of tandem.speedup")
    share, query, column = min(shares)
    return share >= NEAR_LINEAR, f"lowest share of ideal: {share:.2f} ({query} at {column})"


TANDEM_RATIO_TOLERANCE = 0.10
"""Largest relative error of a modeled batch scaleup against the paper's value for its cell: the
bar ``minidb report`` uses for every ratio cell of Table 2 (``reproduce.RATIO_TABLES``)."""


def _published(paper: str, reference: str, metric: str) -> dict[tuple, float]:
    """(row, column) -> the published value of every numbered cell of ``reference``."""
    from minidb.results.reference import load_reference

    table = load_reference(paper).to_pylist()
    return {(c["row"], c["column"]): c["value"] for c in table
            if c["reference"] == reference and c["metric"] == metric and c["value"] is not None}


@finding("tandem.scaleup_near_one", "tandem", "Table 2, Figures 6-9",
         "Growing the table with the partitions keeps the elapsed time nearly constant: every "
         "batch scaleup lies within 10% of the paper's value for its cell (the paper's scaleups "
         "run from 0.98 to 1.10, its worst).", "tandem.scaleup")
def _tandem_scaleup(rows):
    s = _values(rows, "tandem.scaleup", "scaleup")
    published = _published("tandem", "Table 2", "scaleup")
    errors = [(v / published[key] - 1, key, v) for key, v in s.items() if key in published]
    if not errors:
        raise Missing("no scaleup row of tandem.scaleup matches a published Table 2 cell")
    error, (query, column), value = max(errors, key=lambda e: abs(e[0]))
    ok = abs(error) <= TANDEM_RATIO_TOLERANCE
    return ok, (f"largest error {error:+.1%}: {query} at {column}, {value:.3f} against "
                f"{published[(query, column)]:.2f} ({len(errors)} cells)")


def _top_column(values: dict, prefix: str) -> str:
    columns = _columns(values, prefix)
    if not columns:
        raise Missing(f"no {prefix}* column")
    return columns[-1]


@finding("tandem.insert_less_distorted_by_startup", "tandem", "Figure 7 and its discussion",
         "Startup distorts the 1% select & insert less than the scan: the inserts are pipelined "
         "behind the scan, so the job is longer and the serial startup a smaller share of it. "
         "On the VLX's largest configuration its speedup is higher and its batch scaleup lower "
         "than the scan's (7.31 vs 7.21, 1.04 vs 1.05 in Table 2; the CLX's differences go the "
         "other way by as little and are not checked).", "tandem.speedup")
def _insert_less_distorted(rows):
    checks = []  # (holds, text)
    for experiment, metric, prefix in (("tandem.speedup", "speedup", "vlx_f"),
                                       ("tandem.scaleup", "scaleup", "vlx_g")):
        try:
            v = _values(rows, experiment, metric, machine="vlx")
            top = _top_column(v, prefix)
            insert, scan = _get(v, "select_1pct_insert", top), _get(v, "table_scan", top)
        except Missing:
            continue
        holds = insert > scan if metric == "speedup" else insert < scan
        checks.append((holds, f"{metric} at {top}: insert {insert:.4f}, scan {scan:.4f}"))
    if not checks:
        raise Missing("no VLX speedup or scaleup rows of the insert and the scan")
    return all(h for h, _ in checks), "; ".join(t for _, t in checks)


@finding("tandem.update_least_linear", "tandem", "Figure 9 and its discussion",
         "The 1% update is the least linear query, 12.5% short of linear at 16 VLX processors: "
         "the transaction log is written by one processor (cpu 1), whose log work slows its "
         "share of the update.", "tandem.speedup")
def _update_least_linear(rows):
    from minidb.experiments import tandem

    v = _values(rows, "tandem.speedup", "speedup", machine="vlx")
    top = _top_column(v, "vlx_f")
    speedups = {q: _get(v, q, top) for q in tandem.QUERIES}
    others = min((s, q) for q, s in speedups.items() if q != "update_1pct")
    seen = (f"update {speedups['update_1pct']:.2f} at {top}, lowest other {others[1]} "
            f"{others[0]:.2f}")
    if not tandem.MODELS_AUDIT_LOG:
        raise Missing("minidb writes no transaction log, so the cause the paper gives (log work "
                      f"on cpu 1) is not in the model; for information: {seen}")
    return speedups["update_1pct"] < others[0], seen


@finding("tandem.oltp_scaleup_linear", "tandem", "Figure 3 and section 'OLTP Scaleup'",
         "DebitCredit throughput grows almost linearly as processors, terminals and database grow "
         "together from 4 to 32 processors: at every size the throughput reaches at least 0.85 "
         "of n / 4 times the 4-processor throughput (NEAR_LINEAR, the bar of the speedups).",
         "tandem.oltp_scaleup")
def _oltp_scaleup_linear(rows):
    shares = []
    for r in rows:
        if (r["experiment"] == "tandem.oltp_scaleup" and r["metric"] == "oltp_scaleup"
                and r["clock"] == "modeled"):
            ideal = r["parameters"]["processors"] / r["parameters"]["baseline_processors"]
            shares.append((_value(r) / ideal, r["column"]))
    if len(shares) < 2:
        raise Missing("fewer than two processor counts of tandem.oltp_scaleup")
    share, column = min(shares)
    return share >= NEAR_LINEAR, f"lowest share of linear: {share:.2f} (at {column})"


TANDEM_CONSTANT_TIME = spread_bar([1.10])[1]
"""Largest ratio of two times the paper still calls about the same: its worst batch scaleup
(Table 2, update on 16 VLX processors, 1.10: "near-linear", the elapsed time kept constant),
widened by ``SPREAD_MARGIN`` = 1.21. Set from the paper, before any run."""


@finding("tandem.index_maintenance_parallel", "tandem",
         "section 'OLTP Scaleup', Release 2's parallel index maintenance",
         "Release 2 maintains the indices in parallel, so an insert takes about the same time "
         "whatever the number of indices: with the most indices it takes at most 1.21 times "
         "(TANDEM_CONSTANT_TIME) as long as with one, while Release 1's one-index-at-a-time "
         "maintenance exceeds that bar.", "tandem.index_maintenance")
def _index_maintenance_parallel(rows):
    v = _values(rows, "tandem.index_maintenance", "insert_time")
    counts = sorted({int(c.split("_")[1]) for _, c in v if int(c.split("_")[1]) >= 1})
    if len(counts) < 2:
        raise Missing("fewer than two index counts of at least one")
    one, most = f"indices_{counts[0]}", f"indices_{counts[-1]}"
    r2 = _get(v, "insert_release2", most) / _get(v, "insert_release2", one)
    r1 = _get(v, "insert_release1", most) / _get(v, "insert_release1", one)
    ok = r2 <= TANDEM_CONSTANT_TIME < r1
    return ok, (f"{counts[-1]} indices over {counts[0]}: Release 2 {r2:.2f}, "
                f"Release 1 {r1:.2f} (bar {TANDEM_CONSTANT_TIME:.2f})")


# -- LH* in Monet, Section 5 ---------------------------------------------------------------------
# Bars from the paper's own numbers (datasets/reference/lhstar_*.csv), fixed before any run.
# Section 5.1, one node: time per M entries of the scans at 40 and 48 MB, and from 8 to 40 MB.
PAPER_KNEE_JUMP = {"select_1_10": (14874 / 6) / (2216 / 5),   # 5.59
                   "select_5": (15777 / 6) / (1582 / 5)}     # 8.31
KNEE_JUMP_BAR = min(PAPER_KNEE_JUMP.values()) / FACTOR_2      # 2.80
PAPER_SCAN_FLATNESS = (2216 / 5) / 427, (1582 / 5) / 276      # 1.04, 1.15 (largest / 1 M)
SCAN_FLATNESS_BAR = spread_bar(PAPER_SCAN_FLATNESS)[1]        # 1.26
# Section 5.1, second table: faults of select(1,10) per 4 KB page of the file.
PAPER_FAULTS_PER_PAGE = (11408 / (48e6 / 4096), 13676 / (56e6 / 4096), 16037 / (64e6 / 4096))
FAULTS_PER_PAGE_BAR = spread_bar(PAPER_FAULTS_PER_PAGE)       # 0.97-1.03 -> 0.88-1.13
FAULTS_BELOW_KNEE_BAR = 213 / (40e6 / 4096) * FACTOR_2        # 2.2% of the 40 MB file's pages
# join(big, t5) per M entries from 1 to 5 M (8 to 40 MB): 2,846 to 3,569 ms.
PAPER_JOIN_FLATNESS = ((17846 / 5) / 2846,)                   # 1.25
JOIN_FLATNESS_BAR = spread_bar(PAPER_JOIN_FLATNESS)[1]        # 1.38
# Section 5.2: overhead of one remote node for select(1,10) on 40 MB; the joins' overhead over
# the scan's at 1, 2 and 4 M entries, the smallest of either join column: 1,385 / 236 = 5.9.
PAPER_REMOTE_SCAN_OVERHEAD_MS = 380.0
PAPER_JOIN_OVER_SCAN_OVERHEAD = min((5191 - 498) / (781 - 427), (11952 - 516) / (1200 - 896),
                                    (7939 - 5653) / (1200 - 896), (20553 - 774) / (1999 - 1763),
                                    (13427 - 12042) / (1999 - 1763))
JOIN_OVER_SCAN_BAR = PAPER_JOIN_OVER_SCAN_OVERHEAD / FACTOR_2  # 2.93
# Section 5.3, fixed 1 M file: joins on 8 nodes over 1 node (9,315 / 5,191 and 8,955 / 8,378).
PAPER_JOIN_GROWTH_8_NODES = (9315 / 5191, 8955 / 8378)
JOIN_NODES_BAR = max(PAPER_JOIN_GROWTH_8_NODES) * FACTOR_2    # 3.59
# Section 5.4: joins on 8 nodes from 1 M to 8 M entries, "only 46%".
PAPER_JOIN_SIZE_GROWTH = 0.46
# Section 5.3, 4 M entries per node on 1 to 8 nodes: largest / smallest time of each query.
PAPER_CONSTANT_SPREAD = (273 / 174, 1999 / 1999, 53145 / 20553, 42992 / 13427)
CONSTANT_SPREAD_BAR = spread_bar(PAPER_CONSTANT_SPREAD)[1]    # 3.20 -> 3.52


def _millions(row: str) -> float:
    """8 from ``entries_8m`` or ``nodes_1_entries_8m``."""
    return float(row.rsplit("_", 1)[-1].rstrip("m"))


def _per_million(values: dict, query: str) -> dict[float, float]:
    """entries in M -> ms per M entries of ``query`` (rows entries_*m)."""
    out = {_millions(row): v / _millions(row) for (row, col), v in values.items() if col == query}
    if len(out) < 2:
        raise Missing(f"fewer than two file sizes of {query}")
    return dict(sorted(out.items()))


@finding("lhstar.knee_between_40_and_48mb", "lhstar", "§5.1 first table, §5.4",
         "On one node a scan's time per entry stays flat while the file fits in memory and jumps "
         "once it does not, between the 40 MB and the 48 MB file. The paper's select(1,10) and "
         "select(5) take 5.6 and 8.3 times as long per entry at 48 MB as at 40 MB, and vary by "
         "at most 1.15 times per entry from 8 to 40 MB. Bar: a jump of at least half the "
         "smaller (2.8 times), and at most 1.26 times from 8 to 40 MB (the spread widened by "
         "10%). Where the knee falls is calibrated (the memory left for data is §5.4's 40 MB); "
         "its height for select(1,10) is the page-fault calibration cell, for select(5) a "
         "prediction.", "lhstar.partition_size")
def _lhstar_knee(rows):
    t = _values(rows, "lhstar.partition_size", "elapsed")
    details, ok = [], True
    for query in ("select_5", "select_1_10"):
        per = _per_million(t, query)
        if 5.0 not in per or 6.0 not in per:
            raise Missing("the 40 MB and 48 MB files (5 M and 6 M entries)")
        below = [v for m, v in per.items() if m <= 5.0]
        jump, flat = per[6.0] / per[5.0], max(below) / min(below)
        ok = ok and jump >= KNEE_JUMP_BAR and flat <= SCAN_FLATNESS_BAR
        details.append(f"{query}: x{jump:.2f} per entry from 40 to 48 MB (bar >= "
                       f"{KNEE_JUMP_BAR:.2f}), x{flat:.2f} from 8 to 40 MB (bar <= "
                       f"{SCAN_FLATNESS_BAR:.2f})")
    return ok, "; ".join(details)


@finding("lhstar.faults_track_file_past_knee", "lhstar", "§5.1 second table",
         "The page faults of select(1,10) stay few while the file fits (the paper: 213 at "
         "40 MB, 2.2% of its 4 KB pages) and then follow the file's size page for page (the "
         "paper: 0.97 to 1.03 faults per 4 KB page from 48 to 64 MB). Bar: at most 4.4% of the "
         "pages up to 40 MB (twice the paper's share), 0.88 to 1.13 per page from 48 MB (the "
         "spread widened by 10%).", "lhstar.partition_size")
def _lhstar_faults(rows):
    f = _values(rows, "lhstar.partition_size", "page_faults")
    shares = {}
    for (row, _), v in f.items():
        m = _millions(row)
        shares[m] = v / (m * 8e6 / 4096)
    if not any(m <= 5 for m in shares) or not any(m >= 6 for m in shares):
        raise Missing("fault counts on both sides of 40 MB")
    low, high = FAULTS_PER_PAGE_BAR
    ok = all(s <= FAULTS_BELOW_KNEE_BAR for m, s in shares.items() if m <= 5)
    ok = ok and all(low <= s <= high for m, s in shares.items() if m >= 6)
    return ok, "faults per 4 KB page of the file: " + ", ".join(
        f"{m * 8:g} MB {s:.3f}" for m, s in sorted(shares.items()))


@finding("lhstar.joins_linear_then_dearer", "lhstar", "§5.1 first table and text",
         "join(big, t5) scans the file, so up to 40 MB its time grows about in proportion to the "
         "file (the paper: 2,846 to 3,569 ms per M entries, a spread of 1.25; bar 1.38); past "
         "the knee both joins cost more per entry than at any size that fits (the paper: "
         "join(big, t5) 3,783 to 4,237 ms per M from 48 MB on; join(t5, big), which reads only "
         "the entries it looks up, 1,203 ms and more against at most 965 below).",
         "lhstar.partition_size")
def _lhstar_joins_knee(rows):
    t = _values(rows, "lhstar.partition_size", "elapsed")
    scan = _per_million(t, "join_big_t5")
    below = [v for m, v in scan.items() if m <= 5]
    above = [v for m, v in scan.items() if m >= 6]
    if not below or not above:
        raise Missing("join sizes on both sides of 40 MB")
    flat = max(below) / min(below)
    probe = {_millions(r): v for (r, c), v in t.items() if c == "join_t5_big"}
    probe_below = [v for m, v in probe.items() if m <= 5]
    probe_above = [v for m, v in probe.items() if m >= 6]
    ok = (flat <= JOIN_FLATNESS_BAR and min(above) > max(below)
          and min(probe_above) > max(probe_below))
    return ok, (f"join(big, t5) per M: x{flat:.2f} from 8 to 40 MB (bar <= "
                f"{JOIN_FLATNESS_BAR:.2f}), {min(above):,.0f}-{max(above):,.0f} ms past 40 MB "
                f"against at most {max(below):,.0f}; join(t5, big) {min(probe_above):,.0f} ms "
                f"and more past 40 MB against at most {max(probe_below):,.0f}")


@finding("lhstar.remote_scan_overhead_low", "lhstar", "§5.2 text",
         "Putting the file on one remote node adds little to a scan: the paper puts the "
         "overhead of select(1,10) on a 40 MB file at about 380 ms. Bar: within a factor of 2 "
         "(190 to 760 ms).", "lhstar.remote_overhead")
def _lhstar_remote_scan(rows):
    o = _values(rows, "lhstar.remote_overhead", "overhead")
    v = _get(o, "select_1_10_overhead", "bytes_40mb")
    low, high = PAPER_REMOTE_SCAN_OVERHEAD_MS / FACTOR_2, PAPER_REMOTE_SCAN_OVERHEAD_MS * FACTOR_2
    return low <= v <= high, f"remote minus local select(1,10) at 40 MB: {v:,.0f} ms"


@finding("lhstar.remote_joins_lose", "lhstar", "§5.2 table and text",
         "Joins lose at once on a remote node, because t5 has to travel: in the paper a join's "
         "remote overhead is at least 5.9 times the scan's at every size (1,385 against 236 ms "
         "at 4 M, the closest). Bar: at every size each join's overhead at least half that, "
         "2.9 times the scan's.", "lhstar.remote_overhead")
def _lhstar_remote_joins(rows):
    o = _values(rows, "lhstar.remote_overhead", "overhead")
    sizes = sorted({r for (r, c) in o if r.startswith("entries_")}, key=_millions)
    if not sizes:
        raise Missing("no per-size overheads")
    worst = []
    for row in sizes:
        scan = _get(o, row, "select_1_10")
        for join in ("join_t5_big", "join_big_t5"):
            worst.append((_get(o, row, join) / scan, row, join))
    ratio, row, join = min(worst)
    return ratio >= JOIN_OVER_SCAN_BAR, (f"smallest join overhead over the scan's: x{ratio:.1f} "
                                         f"({join} at {row}; bar >= {JOIN_OVER_SCAN_BAR:.1f})")


def _scalability(rows, reference: str, metric: str = "elapsed") -> dict:
    out = {}
    for r in rows:
        if (r["experiment"] == "lhstar.scalability" and r["metric"] == metric
                and r["clock"] == "modeled" and r["parameters"].get("table") == reference):
            out[(r["row"], r["column"])] = _value(r)
    if not out:
        raise Missing(f"no {reference} rows of lhstar.scalability")
    return out


def _nodes_of_row(row: str) -> int:
    return int(row.split("_")[1])


@finding("lhstar.scans_speed_up_with_nodes", "lhstar", "§5.3 first table, §5.4",
         "Spreading the fixed 1 M-entry file over more nodes makes the scan faster than on one "
         "node: the paper's select(1,10) takes 388, 400 and 330 ms on 2, 4 and 8 nodes against "
         "781 on one (its 16-node 1,363 ms goes the other way and is not checked). Bar: faster "
         "than on one node on 2, 4 and 8 nodes.", "lhstar.scalability")
def _lhstar_scan_speedup(rows):
    t = _scalability(rows, "fixed_size")
    times = {_nodes_of_row(r): v for (r, c), v in t.items() if c == "select_1_10"}
    if 1 not in times or not any(n in times for n in (2, 4, 8)):
        raise Missing("select(1,10) on 1 node and on 2, 4 or 8")
    checked = {n: v for n, v in times.items() if n in (2, 4, 8)}
    ok = all(v < times[1] for v in checked.values())
    return ok, f"1 node {times[1]:,.0f} ms; " + ", ".join(
        f"{n} nodes {v:,.0f} ms" for n, v in sorted(checked.items()))


@finding("lhstar.joins_moderately_dearer_on_more_nodes", "lhstar", "§5.3 first table, §5.4",
         "Spreading the fixed 1 M-entry file over more nodes makes the joins dearer, since t5 "
         "goes to every node, but much less than in proportion: on 8 nodes the paper's joins "
         "take 1.79 and 1.07 times their one-node time. Bar: dearer than on one node, and at "
         "most twice the paper's larger factor (3.6; in proportion would be 8).",
         "lhstar.scalability")
def _lhstar_join_nodes(rows):
    t = _scalability(rows, "fixed_size")
    details, ok = [], True
    for join in ("join_t5_big", "join_big_t5"):
        times = {_nodes_of_row(r): v for (r, c), v in t.items() if c == join}
        if 1 not in times or 8 not in times:
            raise Missing("the joins on 1 and on 8 nodes")
        factor = times[8] / times[1]
        ok = ok and 1 < factor <= JOIN_NODES_BAR
        details.append(f"{join} x{factor:.2f}")
    return ok, "8 nodes over 1: " + ", ".join(details) + f" (bar 1-{JOIN_NODES_BAR:.2f})"


@finding("lhstar.join_cost_grows_slowly_with_size", "lhstar", "§5.3 second table, §5.4",
         "On a fixed 8 nodes, growing the file from 1 M to 8 M entries makes the joins dearer, "
         "but much less than in proportion: 'only 46%' in §5.4 (join(t5, big); the two joins "
         "together +40%). Checked on the two joins together: dearer, by at most twice 46% (92%; "
         "in proportion would be +700%). minidb's join(t5, big) alone looks up the same 100,000 "
         "keys whatever the file's size, so only join(big, t5) can grow.", "lhstar.scalability")
def _lhstar_join_size(rows):
    t = _scalability(rows, "fixed_nodes")
    total = {}
    for (r, c), v in t.items():
        if c in ("join_t5_big", "join_big_t5"):
            total[_millions(r)] = total.get(_millions(r), 0.0) + v
    if 1.0 not in total or 8.0 not in total:
        raise Missing("the joins at 1 M and 8 M entries on 8 nodes")
    growth = total[8.0] / total[1.0] - 1
    ok = 0 < growth <= PAPER_JOIN_SIZE_GROWTH * FACTOR_2
    return ok, f"both joins from 1 M to 8 M entries: {growth:+.1%} (bar above 0, at most +92%)"


@finding("lhstar.constant_load_per_node_constant_time", "lhstar", "§5.3 third table, §5.4",
         "With 4 M entries on every node, from 1 to 8 nodes, each query takes 'vaguely' the same "
         "time: the paper's slowest over fastest is 1.57 (select(5)), 1.00 (select(1,10)), 2.59 "
         "and 3.20 (the joins). Bar: every query within the widest, widened by 10% (3.52); in "
         "proportion to the data would be 8.", "lhstar.scalability")
def _lhstar_constant(rows):
    t = _scalability(rows, "constant_ratio")
    spreads = {}
    for q in ("select_5", "select_1_10", "join_t5_big", "join_big_t5"):
        times = [v for (r, c), v in t.items() if c == q]
        if len(times) < 2:
            raise Missing(f"{q} on fewer than two configurations")
        spreads[q] = max(times) / min(times)
    ok = all(v <= CONSTANT_SPREAD_BAR for v in spreads.values())
    return ok, (f"slowest / fastest (bar {CONSTANT_SPREAD_BAR:.2f}): "
                + ", ".join(f"{q} x{v:.2f}" for q, v in spreads.items()))


# -- LH*'s own guarantees (LH* 1993 / 1996, docs/facts.md) ----------------------------------------
LHSTAR_MESSAGES = {"insert": 1.0, "lookup": 2.0}
"""Messages per operation LH* reports in the normal case (docs/facts.md, LH* section)."""
MESSAGES_BAR = 0.10
"""'About' one and two messages: the mean may exceed them by this share (forwards are rare)."""
CONTROLLED_LOAD_RANGE = (0.65, 0.95)
"""The load factor LH* keeps, 'about constant, 65-95%, depending on the file parameters': the
abstract of Litwin, Neimat, Schneider, SIGMOD 1993 (also HP Labs report HPL-93-21). The journal
version (TODS 1996) is sharper: 65-70% on average without load control, 80-95% with it; minidb's
small test buckets (50 records) fall short of the latter (see lhstar.controlled_load_factor)."""


@finding("lhstar.at_most_two_forwards", "lhstar", "LH* addressing (docs/facts.md)",
         "No request is forwarded more than twice, whatever the client's image: checked on "
         "every operation of many clients, most of them stale, while the file grows.",
         "lhstar.algorithm")
def _lhstar_forwards(rows):
    a = _values(rows, "lhstar.algorithm", "forwards")
    most, ops = _get(a, "max_forwards", "all"), _get(a, "operations", "all")
    return most <= 2, f"at most {most:.0f} forwards over {ops:,.0f} operations"


@finding("lhstar.messages_per_operation", "lhstar", "LH* addressing (docs/facts.md)",
         "An insert takes about one message and a lookup about two (request and reply): "
         "forwards are rare. Bar: the mean at most 10% above 1 and 2.", "lhstar.algorithm")
def _lhstar_messages(rows):
    a = _values(rows, "lhstar.algorithm", "messages")
    got = {op: _get(a, f"per_{op}", "all") for op in LHSTAR_MESSAGES}
    ok = all(base <= got[op] <= base * (1 + MESSAGES_BAR) for op, base in LHSTAR_MESSAGES.items())
    return ok, ", ".join(f"{v:.4f} per {op}" for op, v in got.items())


@finding("lhstar.images_converge", "lhstar", "LH* image adjustment (docs/facts.md)",
         "A new client's image, (0, 0) at first, converges: the image adjustment messages bring "
         "it to the file's state, after which it addresses every key right. Checked on fresh "
         "clients of a file that stopped growing: every image equals the file's state after "
         "their lookups, and the last half of the lookups needed no forward.",
         "lhstar.algorithm")
def _lhstar_converge(rows):
    a = _values(rows, "lhstar.algorithm", "convergence")
    share = _get(a, "clients_converged", "all")
    late = _get(a, "late_forwards", "all")
    iams = _get(a, "max_iams", "all")
    return share == 1.0 and late == 0, (f"{share:.0%} of fresh clients converged, with at most "
                                        f"{iams:.0f} IAMs; {late:.0f} forwards in the last half")


@finding("lhstar.controlled_load_factor", "lhstar", "LH* SIGMOD 1993 abstract",
         "Controlled splitting keeps the file's load factor, on average over its growth, in the "
         "range LH* states, 65 to 95% (uncontrolled splitting, for comparison, splits on every "
         "collision and stays lower). The journal version puts load control at 80-95%: with 50 "
         "records a bucket, the bucket that reports a collision is one of the fullest, so the "
         "coordinator's one-bucket estimate runs high and it splits early (minidb measured "
         "0.75 with 500 records a bucket).", "lhstar.algorithm")
def _lhstar_load(rows):
    a = _values(rows, "lhstar.algorithm", "load_factor")
    controlled, uncontrolled = _get(a, "controlled", "all"), _get(a, "uncontrolled", "all")
    low, high = CONTROLLED_LOAD_RANGE
    return low <= controlled <= high, (f"controlled {controlled:.3f}, uncontrolled "
                                       f"{uncontrolled:.3f}")


def findings(paper: str | None = None) -> list[Finding]:
    if paper is not None:
        check_paper(paper)
    return [f for f in FINDINGS if paper is None or f.paper == paper]


def check_findings(rows: list[dict], paper: str | None = None) -> list[FindingResult]:
    """Every finding (of ``paper``) checked on ``rows``."""
    out = []
    for f in findings(paper):
        try:
            ok, detail = f.check(rows)
            status = "pass" if ok else "fail"
        except Missing as missing:
            status, detail = "not checked", str(missing)
        except NotANumber as nan:
            status, detail = "fail", str(nan)
        out.append(FindingResult(f.name, f.paper, f.source, f.claim, status, detail))
    return out


# The Volcano and Distributed INGRES papers' findings live in their own modules; importing them
# registers them.
from minidb.experiments import ingres_findings, volcano_findings  # noqa: E402,F401
