"""Gamma's selection, aggregate and update experiments (DeWitt, Ghandeharizadeh, Schneider 1988).

What is rebuilt, and from which section:

* ``gamma.selection``: Tables 1 and 2 (Section 5.1). Selections of 1% and 10% of a Wisconsin
  relation of 10,000 / 100,000 / 1,000,000 tuples without an index, through a non-clustered
  index on unique2 and through a clustered index on unique1, and a single-tuple select, on Gamma
  (8 disk nodes, 4 KB pages) and on the Teradata DBC/1012 (20 AMPs, hash-organized files with
  dense secondary indexes only, Section 3). Results are stored in a new relation spread
  round-robin over the disk nodes, as the paper did (Section 4); the single tuple goes to the
  host. Table 2 is derived from Table 1 exactly as the paper derived it: an insertion rate from
  the difference between the 10% and 1% nonindexed selections, averaged over the three sizes,
  then each query's time minus its result size times that rate.
* ``gamma.selection_speedup``: Figures 2-5 (Section 5.2.1). 0%, 1% and 10% selections on
  100,000 tuples without and with indexes on 1 to 8 disk nodes; response time and speedup.
* ``gamma.page_size``: Figures 6-9 (Section 5.2.2). The same selections on 8 nodes with disk
  pages of 2 to 32 KB.
* ``gamma.aggregates``: Table 7 (Section 7). MIN of a non-indexed attribute, and MIN and SUM
  over 100 partitions (GROUP BY onePercent).
* ``gamma.updates``: Table 8 (Section 8). Append, delete and modify a single tuple.

Every loaded relation is hash-partitioned on unique1, as in all of the paper's tests
(Section 2.2). Times are on the modeled clock of the ``gamma`` / ``teradata`` profiles,
computed from the work minidb really did (``minidb.cost``); the wall time of each statement is
kept in a second row with ``clock = "wall"``.
"""

from __future__ import annotations

from collections.abc import Iterator

from minidb.datagen import generate
from minidb.experiments.machines import build, measure
from minidb.experiments.registry import Params, Progress, experiment, make_row

#: the paper's machines, one entry each:
#:
#: * ``nodes``: nodes that hold data; ``profile``: the hardware profile that prices the work;
#: * ``organization``: how base relations are stored (Gamma heaps, Teradata hash files, §3);
#: * ``rid_fetch``: how a non-clustered index fetches records, one at a time in index order on
#:   both machines (Gamma §5.1 counts a page fault per qualifying tuple, §5.2.2 a data-page
#:   fetch per tuple; Teradata §5.1: "each access to the relation requires a random seek");
#: * ``buffer_bytes``: the memory a node has for pages. Gamma: 0.6 MB of its 2 MB, derived from
#:   §6.1 (the eight diskless processors that ran the joins had 4.8 MB in all for hash tables);
#:   Teradata: None, the profile's whole 2 MB (the paper gives no figure).
SYSTEMS = {
    "gamma": {"nodes": 8, "profile": "gamma", "organization": "heap", "rid_fetch": "index_order",
              "buffer_bytes": 4.8 * 2**20 / 8},
    "teradata": {"nodes": 20, "profile": "teradata", "organization": "hash",
                 "rid_fetch": "index_order", "buffer_bytes": None},
}
PAPER_SIZES = (10_000, 100_000, 1_000_000)
FIGURE_TUPLES = 100_000
FIGURE_NODES = 8
PAGE_SIZE = 4096

# query slug -> (relation, attribute, selectivity in percent); relation "heap" has no index,
# "indexed" has the clustered index on unique1 and the non-clustered one on unique2
SELECTIONS = {
    "select_0pct_nonindexed": ("heap", "unique2", 0),
    "select_1pct_nonindexed": ("heap", "unique2", 1),
    "select_10pct_nonindexed": ("heap", "unique2", 10),
    "select_100pct_nonindexed": ("heap", "unique2", 100),
    "select_0pct_nonclustered_index": ("indexed", "unique2", 0),
    "select_1pct_nonclustered_index": ("indexed", "unique2", 1),
    "select_10pct_nonclustered_index": ("indexed", "unique2", 10),
    "select_1pct_clustered_index": ("indexed", "unique1", 1),
    "select_10pct_clustered_index": ("indexed", "unique1", 10),
}
TABLE1_QUERIES = ("select_1pct_nonindexed", "select_10pct_nonindexed",
                  "select_1pct_nonclustered_index", "select_10pct_nonclustered_index",
                  "select_1pct_clustered_index", "select_10pct_clustered_index")
SINGLE_TUPLE = "select_single_tuple_clustered_index"
FIGURE_2_QUERIES = ("select_0pct_nonindexed", "select_1pct_nonindexed", "select_10pct_nonindexed")
FIGURE_4_QUERIES = ("select_1pct_clustered_index", "select_10pct_clustered_index",
                    "select_1pct_nonclustered_index", "select_0pct_nonclustered_index")
FIGURE_6_QUERIES = FIGURE_2_QUERIES + ("select_100pct_nonindexed",)
FIGURE_8_QUERIES = ("select_1pct_nonclustered_index", "select_1pct_clustered_index",
                    "select_10pct_clustered_index")


def selection_range(tuples: int, percent: int) -> tuple[int, int]:
    """The Wisconsin range for ``percent`` of ``tuples`` (docs/facts.md: 1% = 0..99 and 10% =
    792..1791 at 10,000 tuples, scaled with the relation); 0% is a range past the largest value."""
    if percent == 0:
        return tuples, tuples + max(1, tuples // 100) - 1
    width = max(1, tuples * percent // 100)
    low = 0 if percent in (1, 100) else tuples * 792 // 10_000
    return low, low + width - 1


def selected(tuples: int, percent: int) -> int:
    low, high = selection_range(tuples, percent)
    return max(0, min(high, tuples - 1) - low + 1)


def scaled(sizes: list[int], scale: float) -> list[int]:
    return [max(100, int(round(n * scale))) for n in sizes]


def load_wisconsin(db, tuples: int, seed: int, system: str, relations=("heap", "indexed"),
                   partitioner: str = "hash(unique1)") -> None:
    """The benchmark relations on ``db``: ``heap`` (no index) and ``indexed`` (Gamma: clustered
    index on unique1 and non-clustered on unique2; Teradata: hash file on unique1 with a dense
    index on unique2), both declustered by ``partitioner`` (the paper: hash on unique1)."""
    data = generate("wisconsin", tuples, seed=seed)
    organization = SYSTEMS[system]["organization"]
    key = "unique1" if organization == "hash" else None
    for name in relations:
        db.create_table(name, data, partition=partitioner, organization=organization, key=key)
    if "indexed" in relations:
        if system == "gamma":
            db.create_index("indexed", "unique1", clustered=True)
        db.create_index("indexed", "unique2")


def select_into(query: str, tuples: int, result: str = "result", hint: str | None = None) -> str:
    """The statement of ``query``, storing its result; ``hint`` forces an access path."""
    relation, attribute, percent = SELECTIONS[query]
    low, high = selection_range(tuples, percent)
    prefix = f"/*+ {hint} */ " if hint else ""
    return (f"{prefix}CREATE TABLE {result} AS SELECT * FROM {relation} "
            f"WHERE {attribute} BETWEEN {low} AND {high}")


def _machines(p: Params, progress: Progress) -> Iterator[tuple[str, int, Params]]:
    """Every (system, relation size) of a Table 1/7/8 experiment, with the parameters its rows
    carry; one progress step each. The caller builds the machine with ``_machine``."""
    sizes = scaled(p["sizes"], p["scale"])
    systems = _check_systems(p["systems"])
    progress.start(len(sizes) * len(systems))
    for system in systems:
        for tuples in sizes:
            yield system, tuples, {"system": system, "tuples": tuples,
                                   "nodes": SYSTEMS[system]["nodes"], "page_size": PAGE_SIZE,
                                   "profile": SYSTEMS[system]["profile"], "seed": p["seed"],
                                   "backend": p["backend"]}
            progress.advance(f"{system} {tuples:,} tuples")


def paper_machine(system: str, backend: str, nodes: int | None = None, page_size: int = PAGE_SIZE,
             profile: str | None = None, buffer_page_size: int | None = None,
             buffer_policy: str = "lru"):
    """The paper's machine for ``system`` (Gamma: 8 disk nodes; Teradata: 20 AMPs), or one of
    ``nodes`` nodes built the same way. The buffer pool holds the system's page memory in pages
    of ``buffer_page_size`` (the page size itself by default): the page-size experiments keep the
    number of buffer pages constant (§1), so they size it for their largest page. The pool is
    replaced by ``buffer_policy`` (a registered name; LRU unless a student's is chosen)."""
    spec = SYSTEMS[system]
    memory = spec["buffer_bytes"]
    frames = None if memory is None else int(memory // (buffer_page_size or page_size))
    return build(nodes or spec["nodes"], profile or spec["profile"], page_size, backend,
                 buffer_pages=frames, rid_fetch=spec["rid_fetch"], buffer_policy=buffer_policy)


def _time_rows(name: str, reference: str, row: str, column: str, params: Params, m) -> list[dict]:
    out = [make_row(name, reference, row, column, params, "response_time", m.modeled_s, "s"),
           make_row(name, "", row, column, params, "response_time", m.wall_s, "s", clock="wall")]
    return out


def _path_row(name: str, row: str, column: str, params: Params, m) -> dict:
    """1 when the node used an index for the selection, 0 when it scanned the file."""
    used = any(k != "heap_scan" for k in m.access_paths)
    return make_row(name, "", row, column, {**params, "access_paths": list(m.access_paths)},
                    "used_index", 1.0 if used else 0.0, "flag")


# ---------------------------------------------------------------------------------------------
@experiment("gamma.selection", title="Selections vs relation size, Gamma and Teradata",
            references=("Table 1", "Table 2"),
            defaults={"scale": 1.0, "sizes": list(PAPER_SIZES), "systems": ["gamma", "teradata"],
                      "seed": 1, "backend": "inline"},
            quick={"scale": 0.1})
def selection(p: Params, progress: Progress) -> list[dict]:
    name = "gamma.selection"
    rows: list[dict] = []
    times: dict[tuple[str, str, int], float] = {}
    for system, tuples, params in _machines(p, progress):
        column = f"{system}_{tuples}"
        ref = "Table 1" if tuples in PAPER_SIZES else ""
        with paper_machine(system, p["backend"]) as db:
            load_wisconsin(db, tuples, p["seed"], system)
            for query in TABLE1_QUERIES:
                if system == "teradata" and "_clustered_index" in query:
                    continue  # Teradata has no clustered indexes (Section 3)
                m = measure(db, select_into(query, tuples), drop="result")
                times[(system, query, tuples)] = m.modeled_s
                rows += _time_rows(name, ref, query, column, {**params, "query": query}, m)
                rows.append(_path_row(name, query, column, {**params, "query": query}, m))
            if system == "gamma":
                rows += _layout_rows(name, tuples, params)
            key = tuples // 2
            relation = "heap" if system == "teradata" else "indexed"  # Teradata: hash on key
            m = measure(db, f"SELECT * FROM {relation} WHERE unique1 = {key}")
            rows += _time_rows(name, ref, SINGLE_TUPLE, column,
                               {**params, "query": SINGLE_TUPLE}, m)
    sizes = scaled(p["sizes"], p["scale"])
    rows += _adjusted(name, times, sizes, p["systems"], p)
    return rows


def _layout_rows(name: str, tuples: int, params: Params) -> list[dict]:
    """minidb's heap page layout next to Gamma's (§5.1: 17 tuples per 4 KB page, 588 pages for
    10,000 tuples): tuples per page and the pages of the whole relation."""
    from minidb.exec.store import tuples_per_page
    from minidb.storage.schema import Schema

    sample = generate("wisconsin", 1, seed=0)
    per_page = tuples_per_page(PAGE_SIZE, Schema.from_arrow(sample.schema, sample))
    pages = -(-tuples // per_page)
    rows = [make_row(name, "", "heap_pages", f"gamma_{tuples}", params, "pages", pages, "count")]
    if tuples == 10_000:  # the size §5.1 counts the pages of
        rows = [make_row(name, "§5.1", "heap_tuples_per_page", "page_4kb", params,
                         "tuples_per_page", per_page, "count"),
                make_row(name, "§5.1", "heap_pages", "gamma_10000", params, "pages", pages,
                         "count")]
    return rows


def _adjusted(name: str, times: dict, sizes: list[int], systems: list[str], p: Params) -> list[dict]:
    """Table 2: each selection's time minus its result size times the insertion rate, the rate
    being the extra time of the 10% over the 1% nonindexed selection per extra tuple, averaged
    over the relation sizes (Section 5.1 and its footnote 4). The paper averaged over its own
    three sizes, so a run that has some of them (``--quick`` runs 10,000 and 100,000, plus 1,000)
    averages over those only; a run with none of them averages over all of its sizes."""
    rows = []
    rate_sizes = [n for n in sizes if n in PAPER_SIZES] or sizes
    for system in systems:
        rates = []
        for tuples in rate_sizes:
            extra = selected(tuples, 10) - selected(tuples, 1)
            t1 = times[(system, "select_1pct_nonindexed", tuples)]
            t10 = times[(system, "select_10pct_nonindexed", tuples)]
            rates.append((t10 - t1) / extra)
        rate = sum(rates) / len(rates)
        for tuples in sizes:
            for query in TABLE1_QUERIES:
                if (system, query, tuples) not in times:
                    continue
                percent = SELECTIONS[query][2]
                value = times[(system, query, tuples)] - selected(tuples, percent) * rate
                params = {"system": system, "tuples": tuples, "query": query,
                          "insert_rate_s_per_tuple": rate, "rate_sizes": rate_sizes,
                          "seed": p["seed"]}
                ref = "Table 2" if tuples in PAPER_SIZES else ""
                rows.append(make_row(name, ref, query, f"{system}_{tuples}", params,
                                     "adjusted_response_time", value, "s"))
    return rows


def _check_systems(systems: list[str]) -> list[str]:
    from minidb.experiments.registry import ExperimentError

    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ExperimentError(f"unknown system {unknown[0]!r}; choose from {', '.join(SYSTEMS)}")
    return systems


# ---------------------------------------------------------------------------------------------
@experiment("gamma.selection_speedup", title="Selection response time and speedup, 1-8 disk nodes",
            references=("Figure 2", "Figure 3", "Figure 4", "Figure 5"),
            defaults={"scale": 1.0, "nodes": [1, 2, 3, 4, 5, 6, 7, 8], "seed": 1,
                      "backend": "inline", "profile": "gamma", "partitioner": "hash(unique1)",
                      "buffer_policy": "lru"},
            quick={"nodes": [1, 2, 4, 8]})
def selection_speedup(p: Params, progress: Progress) -> list[dict]:
    name = "gamma.selection_speedup"
    tuples = scaled([FIGURE_TUPLES], p["scale"])[0]
    paper_config = (tuples == FIGURE_TUPLES and p["profile"] == "gamma"
                    and p["partitioner"] == "hash(unique1)" and p["buffer_policy"] == "lru")
    progress.start(len(p["nodes"]))
    rows, base = [], {}
    for nodes in sorted(p["nodes"]):
        with paper_machine("gamma", p["backend"], nodes, profile=p["profile"],
                           buffer_policy=p["buffer_policy"]) as db:
            load_wisconsin(db, tuples, p["seed"], "gamma", partitioner=p["partitioner"])
            for query in FIGURE_2_QUERIES + FIGURE_4_QUERIES:
                figure = 2 if query in FIGURE_2_QUERIES else 4
                # the 0% indexed selection appears only in Figure 5 (with its times in the text)
                time_figure = 5 if query == "select_0pct_nonclustered_index" else figure
                params = {"tuples": tuples, "nodes": nodes, "page_size": PAGE_SIZE,
                          "profile": p["profile"], "query": query, "seed": p["seed"],
                          "backend": p["backend"], "partitioner": p["partitioner"],
                          "buffer_policy": p["buffer_policy"]}
                m = measure(db, select_into(query, tuples), drop="result")
                column = f"nodes_{nodes}"
                ref = f"Figure {time_figure}" if paper_config else ""
                rows += _time_rows(name, ref, query, column, params, m)
                rows.append(make_row(name, "", query, column, params, "bottleneck_is_" +
                                     m.bottleneck, 1.0, "flag"))
                base.setdefault(query, (nodes, m.modeled_s))
                first_nodes, first = base[query]
                speedup = first / m.modeled_s * first_nodes
                sref = f"Figure {figure + 1}" if paper_config and first_nodes == 1 else ""
                rows.append(make_row(name, sref, query, column, params, "speedup", speedup,
                                     "ratio"))
        progress.advance(f"{nodes} node(s)")
    return rows


# ---------------------------------------------------------------------------------------------
@experiment("gamma.page_size", title="Selections with disk pages of 2 to 32 KB on 8 nodes",
            references=("Figure 6", "Figure 7", "Figure 8", "Figure 9"),
            defaults={"scale": 1.0, "page_sizes": [2048, 4096, 8192, 16384, 32768],
                      "nodes": FIGURE_NODES, "seed": 1, "backend": "inline", "profile": "gamma",
                      "partitioner": "hash(unique1)", "buffer_policy": "lru"},
            quick={})
def page_size(p: Params, progress: Progress) -> list[dict]:
    name = "gamma.page_size"
    tuples = scaled([FIGURE_TUPLES], p["scale"])[0]
    paper_config = (tuples == FIGURE_TUPLES and p["nodes"] == FIGURE_NODES
                    and p["profile"] == "gamma" and p["partitioner"] == "hash(unique1)"
                    and p["buffer_policy"] == "lru")
    progress.start(len(p["page_sizes"]))
    rows, base = [], {}
    for size in sorted(p["page_sizes"]):
        with paper_machine("gamma", p["backend"], p["nodes"], size, p["profile"],
                           buffer_page_size=max(p["page_sizes"]),
                           buffer_policy=p["buffer_policy"]) as db:
            load_wisconsin(db, tuples, p["seed"], "gamma", partitioner=p["partitioner"])
            for query in FIGURE_6_QUERIES + FIGURE_8_QUERIES:
                figure = 6 if query in FIGURE_6_QUERIES else 8
                params = {"tuples": tuples, "nodes": p["nodes"], "page_size": size,
                          "profile": p["profile"], "query": query, "seed": p["seed"],
                          "backend": p["backend"], "partitioner": p["partitioner"],
                          "buffer_policy": p["buffer_policy"]}
                # Figure 8 plots the selection *through* the non-clustered index at every page
                # size; minidb's planner would scan instead once the fragment has fewer pages
                # than matches (at 32 KB), so the index is forced
                hint = "index" if query == "select_1pct_nonclustered_index" else None
                m = measure(db, select_into(query, tuples, hint=hint), drop="result")
                column = f"page_{size // 1024}kb"
                ref = f"Figure {figure}" if paper_config else ""
                rows += _time_rows(name, ref, query, column, params, m)
                rows.append(make_row(name, "", query, column, params, "bottleneck_is_" +
                                     m.bottleneck, 1.0, "flag"))
                rows += _resource_rows(name, query, column, params, m)
                base.setdefault(query, m.modeled_s)
                rows.append(make_row(name, f"Figure {figure + 1}" if paper_config else "", query,
                                     column, params, "speedup", base[query] / m.modeled_s,
                                     "ratio"))
        progress.advance(f"{size // 1024} KB pages")
    return rows


def _resource_rows(name: str, query: str, column: str, params: Params, m) -> list[dict]:
    """CPU and disk seconds of the slowest node of the longest phase: why a query does or does
    not follow the page size (Figure 8's 1% clustered selection, §5.2.2)."""
    return [make_row(name, "", query, column, params, "cpu_s", m.slowest_cpu_s, "s"),
            make_row(name, "", query, column, params, "disk_s", m.slowest_disk_s, "s")]


# ---------------------------------------------------------------------------------------------
AGGREGATES = {
    "min_scalar": "SELECT MIN(unique2) AS m FROM heap",
    "min_100_partitions": "CREATE TABLE result AS SELECT onePercent, MIN(unique2) AS m "
                          "FROM heap GROUP BY onePercent",
    "sum_100_partitions": "CREATE TABLE result AS SELECT onePercent, SUM(unique2) AS s "
                          "FROM heap GROUP BY onePercent",
}


@experiment("gamma.aggregates", title="Scalar aggregate and aggregate functions",
            references=("Table 7",),
            defaults={"scale": 1.0, "sizes": list(PAPER_SIZES), "systems": ["gamma", "teradata"],
                      "seed": 1, "backend": "inline"},
            quick={"scale": 0.1})
def aggregates(p: Params, progress: Progress) -> list[dict]:
    name = "gamma.aggregates"
    rows = []
    for system, tuples, params in _machines(p, progress):
        with paper_machine(system, p["backend"]) as db:
            load_wisconsin(db, tuples, p["seed"], system, relations=("heap",))
            for query, text in AGGREGATES.items():
                m = measure(db, text, drop="result" if text.startswith("CREATE") else None)
                ref = "Table 7" if tuples in PAPER_SIZES else ""
                rows += _time_rows(name, ref, query, f"{system}_{tuples}",
                                   {**params, "query": query}, m)
    return rows


# ---------------------------------------------------------------------------------------------
def update_statements(tuples: int) -> dict[str, str]:
    """Table 8's six statements by row slug. ``plain`` has no index, ``keyed`` one (Gamma:
    clustered on unique1; Teradata: its hash organization on unique1 plus a dense index on
    unique2), ``indexed`` has the clustered index on unique1 and the non-clustered one on unique2
    (Section 8)."""
    key, new = tuples // 3, tuples + 7
    values = ", ".join(str(new) for _ in range(13)) + ", 'AAAAAAA', 'BBBBBBB', 'AAAA'"
    return {
        "append_1_tuple_no_index": f"INSERT INTO plain VALUES ({values})",
        "append_1_tuple_one_index": f"INSERT INTO keyed VALUES ({values})",
        "delete_1_tuple_by_key": f"DELETE FROM keyed WHERE unique1 = {key}",
        "modify_1_tuple_key_attribute": f"UPDATE indexed SET unique1 = {new} WHERE unique1 = {key}",
        "modify_1_tuple_nonindexed_attribute":
            f"UPDATE indexed SET oddOnePercent = 1 WHERE unique1 = {key + 1}",
        "modify_1_tuple_nonclustered_indexed_attribute":
            f"UPDATE indexed SET unique2 = {new} WHERE unique2 = {key + 2}",
    }


@experiment("gamma.updates", title="Single-tuple append, delete and modify",
            references=("Table 8",),
            defaults={"scale": 1.0, "sizes": list(PAPER_SIZES), "systems": ["gamma", "teradata"],
                      "seed": 1, "backend": "inline"},
            quick={"scale": 0.1})
def updates(p: Params, progress: Progress) -> list[dict]:
    name = "gamma.updates"
    rows = []
    for system, tuples, params in _machines(p, progress):
        column = f"{system}_{tuples}"
        with paper_machine(system, p["backend"]) as db:
            _load_update_relations(db, tuples, p["seed"], system)
            for query, text in update_statements(tuples).items():
                m = measure(db, text)
                ref = "Table 8" if tuples in PAPER_SIZES else ""
                rows += _time_rows(name, ref, query, column, {**params, "query": query}, m)
                rows.append(make_row(name, "", query, column, {**params, "query": query},
                                     "tuples_changed", float(m.rows), "count"))
    return rows


def _load_update_relations(db, tuples: int, seed: int, system: str) -> None:
    data = generate("wisconsin", tuples, seed=seed)
    hashed = system == "teradata"
    options = {"organization": "hash", "key": "unique1"} if hashed else {}
    for relation in ("plain", "keyed", "indexed"):
        db.create_table(relation, data, partition="hash(unique1)", **options)
    if hashed:
        db.create_index("keyed", "unique2")
    else:
        db.create_index("keyed", "unique1", clustered=True)
        db.create_index("indexed", "unique1", clustered=True)
    db.create_index("indexed", "unique2")
