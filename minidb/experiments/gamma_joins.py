"""Gamma's join experiments: relation size on Gamma and the Teradata (§6.1), processors and
placement (§6.2.1), memory (§6.2.2), page size (§6.2.3) and the bit-vector filters of §2.

``gamma.joins`` rebuilds Tables 3 and 4: three join queries on Wisconsin relations of 10,000, 100,000
and 1,000,000 tuples, joined once on a non-key attribute (unique2, which neither machine
partitions on) and once on the key (unique1, the attribute every relation is hashed on):

* ``joinABprime``: A joined with Bprime, a relation a tenth of A's size;
* ``joinAselB``: A joined with B (A's size) restricted to a tenth by a selection on the join
  attribute; Gamma's optimizer propagates that selection to A ("joinselAselB", §6.1), minidb's
  translator does the same (``minidb/sql/translate.py``), so only a tenth of A is sent too. The
  Teradata's did not (§6.1: it sorts and merges "a 10,000 and a 100,000 tuple relation"), so its
  runs carry the hint ``no_propagation``;
* ``joinCselAselB``: A and B both restricted to a tenth, joined, and the result joined with C, a
  tenth of A's size.

Every result is stored in a new relation (``CREATE TABLE r AS SELECT *``), as the paper's
queries were. Table 4 is Table 3 less the time to store the result, each machine's insertion
rate measured as for Table 2 (the 10% nonindexed selection of A less the 1% one, per extra
tuple stored, averaged over the sizes).

The machines, as §6.1 ran them:

* **Gamma**: 8 processors with disks and 8 diskless ones; the joins run in **Remote** mode (hash
  tables on the diskless processors only), with Gamma's **Simple hash** join and its
  distributed overflow resolution (``minidb/exec/join/simple_hash.py``,
  ``minidb/cluster/overflow.py``: the probe producers keep the tuples above each cut at home,
  every pass is a new distributed join with a new hash function), 4 KB pages, and 4.8 MB of
  memory for hash tables over the 8 joining processors (§6.1): 153 pages of 4 KB each;
* **Teradata**: 20 AMPs with disks, hash-organized relations, joins on the AMPs themselves,
  redistributing both relations on the join attribute (every tuple stays on its AMP when that is
  the attribute the relation is hashed on) and sort-merging what each AMP received after spooling
  it to a temporary file (``teradata_merge``, ``minidb/exec/join/sort_merge.py``), with the
  profile's 2 MB of memory per AMP.

Sizes and scale. ``scale`` shrinks every relation, the memory for hash tables and sorts, the
buffer pools and the profile's fixed costs together (similarity scaling, as the LH* experiments
do): a run at ``scale`` 0.1 on 1,000 / 10,000 / 100,000 tuples overflows as often as the paper's
10,000 / 100,000 / 1,000,000-tuple runs did, and its modeled seconds divided by ``scale`` are
reported as the time at the paper's size (the row's parameters keep both sizes and the scale).
``--quick`` runs at 0.1.

Every join here is hinted ``repartition``: Gamma hashes both relations through split tables
for every join (§2), whatever their declustering, and the Teradata runs here the same way
(redistribution on the key attribute keeps each tuple on its AMP: every packet is
short-circuited). minidb's planner would otherwise pick NonStop SQL's co-located or broadcast
strategy (``minidb/cluster/planner.py``), which neither machine had in this form.

Every join stores its result as Gamma stores a query's result (§2.2): the join nodes send each
result tuple, round-robin, to the store operators of the disk nodes (the Teradata likewise
redistributes result tuples, §4), and the Teradata's insert code pays its I/Os per tuple stored.

Rows: ``response_time`` (Table 3's cells, modeled; and the wall clock), ``overflows`` (the most
overflow resolutions any joining node made; at 1,000,000 tuples the most of the two-way joins is
also the §6.1 cell ``joins_1000000`` / ``gamma_per_processor``, on which Gamma's
``hash_entry_bytes`` is calibrated), ``spill_pages`` (overflow and spool pages
written, all nodes), ``remote_bytes`` (bytes sent between nodes) and ``spooled_tuples`` (tuples
the Teradata's AMPs received from other AMPs into their hash-ordered temporary files).
"""

from __future__ import annotations

from minidb.datagen import generate
from minidb.experiments.machines import build, measure, scaled_fixed_costs
from minidb.experiments.registry import ExperimentError, Params, Progress, experiment, make_row

PAPER_SIZES = (10_000, 100_000, 1_000_000)
PAGE_SIZE = 4096

#: each machine as §6.1 ran its joins
MACHINES = {
    "gamma": {"nodes": 16, "disk_nodes": 8, "profile": "gamma", "placement": "remote",
              "join": "simple_hash", "organization": "heap",
              # §6.1: "the total memory available for hash tables (4.8 megabytes)" over the 8
              # diskless processors that ran the joins
              "memory_bytes": 4.8 * 2**20 / 8},
    "teradata": {"nodes": 20, "disk_nodes": None, "profile": "teradata", "placement": "local",
                 "join": "teradata_merge", "organization": "hash",
                 # §6.1: its joinAselB "will read two 100,000 tuple relations and then sort and
                 # merge a 10,000 and a 100,000 tuple relation": no selection propagation
                 "hints": "no_propagation",
                 # the profile's 2 MB per AMP (the paper gives no figure for sort memory)
                 "memory_bytes": 2 * 2**20},
}
QUERIES = ("joinabprime", "joinaselb", "joincselaselb")
ATTRIBUTES = {"nonkey": "unique2", "key": "unique1"}
MIN_JOIN_PAGES = 6


def statements(query: str, attribute: str, tuples: int) -> str:
    """The SELECT of ``query`` joining on ``attribute`` for relations of ``tuples`` tuples: a
    tenth is ``attribute < tuples / 10`` (Wisconsin's unique attributes run 0 .. n - 1)."""
    tenth = max(1, tuples // 10)
    a = attribute
    if query == "joinabprime":
        return f"SELECT * FROM A JOIN Bprime ON A.{a} = Bprime.{a}"
    if query == "joinaselb":
        return f"SELECT * FROM A JOIN B ON A.{a} = B.{a} WHERE B.{a} < {tenth}"
    if query == "joincselaselb":
        return (f"SELECT * FROM A JOIN B ON A.{a} = B.{a} JOIN C ON C.{a} = A.{a} "
                f"WHERE A.{a} < {tenth} AND B.{a} < {tenth}")
    raise ExperimentError(f"unknown join query {query!r}; choose from {', '.join(QUERIES)}")


def expected_rows(query: str, tuples: int) -> int:
    """Every query returns a tenth of the relation: each selected tuple joins exactly once."""
    return max(1, tuples // 10)


def machine(system: str, scale: float, backend: str):
    """The paper's machine for ``system`` at ``scale`` (see the module docstring)."""
    spec = MACHINES[system]
    pages = spec["memory_bytes"] * scale / PAGE_SIZE
    return build(spec["nodes"], scaled_fixed_costs(spec["profile"], scale), PAGE_SIZE, backend,
                 disk_nodes=spec["disk_nodes"], buffer_pages=int(pages),
                 memory_pages=max(MIN_JOIN_PAGES, int(pages)))


def load(db, system: str, tuples: int, seed: int) -> None:
    """A and B (``tuples`` each), Bprime and C (a tenth each), hashed on unique1."""
    organization = MACHINES[system]["organization"]
    key = "unique1" if organization == "hash" else None
    tenth = max(1, tuples // 10)
    for i, (name, n) in enumerate((("A", tuples), ("B", tuples), ("Bprime", tenth), ("C", tenth))):
        db.create_table(name, generate("wisconsin", n, seed=seed * 10 + i),
                        partition="hash(unique1)", organization=organization, key=key)


def _check(p: Params) -> None:
    unknown = [s for s in p["systems"] if s not in MACHINES]
    if unknown:
        raise ExperimentError(f"unknown system {unknown[0]!r}; choose from {', '.join(MACHINES)}")
    if not 0 < p["scale"] <= 1:
        raise ExperimentError(f"scale must be above 0 and at most 1, not {p['scale']!r}")


@experiment("gamma.joins", title="Join queries vs relation size, Gamma and Teradata",
            references=("Table 3", "Table 4"),
            defaults={"scale": 1.0, "sizes": list(PAPER_SIZES), "systems": ["gamma", "teradata"],
                      "seed": 1, "backend": "inline"},
            quick={"scale": 0.1})
def joins(p: Params, progress: Progress) -> list[dict]:
    _check(p)
    name, scale = "gamma.joins", p["scale"]
    rows: list[dict] = []
    store_rates: dict[tuple[str, int], float] = {}
    two_way: list[float] = []  # overflows of the two-way joins at 1,000,000 tuples (§6.1)
    progress.start(len(p["systems"]) * len(p["sizes"]))
    for system in p["systems"]:
        spec = MACHINES[system]
        for paper_tuples in p["sizes"]:
            tuples = max(100, round(paper_tuples * scale))
            column = f"{system}_{paper_tuples}"
            ref = "Table 3" if paper_tuples in PAPER_SIZES else ""
            with machine(system, scale, p["backend"]) as db:
                load(db, system, tuples, p["seed"])
                store_rates[(system, paper_tuples)] = insertion_rate(db, tuples)
                for variant, attribute in ATTRIBUTES.items():
                    for query in QUERIES:
                        sql = statements(query, attribute, tuples)
                        hint = (f"/*+ {spec['placement']} {spec['join']} repartition "
                                f"{spec.get('hints', '')} */ ")
                        m = measure(db, f"{hint}CREATE TABLE r AS {sql}", drop="r")
                        if m.rows != expected_rows(query, tuples):
                            raise ExperimentError(f"{query} on {system} stored {m.rows} tuples, "
                                                  f"not {expected_rows(query, tuples)}")
                        row = f"{query}_{variant}"
                        params = {"system": system, "tuples": tuples, "paper_tuples": paper_tuples,
                                  "scale": scale, "query": query, "attribute": attribute,
                                  "join": spec["join"], "placement": spec["placement"],
                                  "nodes": spec["nodes"], "seed": p["seed"],
                                  "backend": p["backend"], "bottleneck": m.bottleneck}
                        if (system, paper_tuples, query) in TWO_WAY_AT_1M:
                            two_way.append((_most(m, "overflows"), params))
                        rows += [
                            make_row(name, ref, row, column, params, "response_time",
                                     m.modeled_s / scale, "s"),
                            make_row(name, "", row, column, params, "response_time", m.wall_s,
                                     "s", clock="wall"),
                            make_row(name, "", row, column, params, "overflows",
                                     _most(m, "overflows"), "count"),
                            make_row(name, "", row, column, params, "spill_pages",
                                     _total(m, "spill_pages_written"), "pages"),
                            make_row(name, "", row, column, params, "remote_bytes",
                                     m.counters.get("bytes_sent_remote", 0), "bytes"),
                            make_row(name, "", row, column, params, "spooled_tuples",
                                     m.counters.get("tuples_spooled", 0), "count")]
            progress.advance(f"{system} {paper_tuples:,} tuples (run at {tuples:,})")
    if two_way:
        most, params = max(two_way, key=lambda x: x[0])  # the run that resolved the most
        rows.append(make_row(name, "§6.1", "joins_1000000", "gamma_per_processor",
                             {**params, "queries": sorted({q for _, _, q in TWO_WAY_AT_1M})},
                             "overflows", most, "count"))
    return rows + adjusted(rows, store_rates, p)


TWO_WAY_AT_1M = {("gamma", 1_000_000, q) for q in ("joinabprime", "joinaselb")}
"""The runs behind the §6.1 cell "six partition overflow resolutions on each of the diskless
processors": Gamma's two-way joins at 1,000,000 tuples, whose building relation is the 100,000
tuples the calibration of ``hash_entry_bytes`` assumes (``gamma_hash_entry_bytes``); the cell is
the most any of them resolved on a processor. The three-way joinCselAselB is left out: it runs
two joins of 100,000 building tuples each, and a processor's count adds up both. The cell is calibration:
``minidb report`` shows it but does not count it."""


def insertion_rate(db, tuples: int) -> float:
    """Seconds to store one more result tuple on this machine, measured as §5.1 measured it (the
    Table 2 adjustment): the 10% nonindexed selection of A minus the 1% one, over the extra
    tuples it stores. With similarity scaling the ratio is the paper-size rate as it is."""
    from minidb.experiments.gamma import selected, selection_range

    times = {}
    for percent in (1, 10):
        low, high = selection_range(tuples, percent)
        times[percent] = measure(db, f"CREATE TABLE r AS SELECT * FROM A WHERE unique2 BETWEEN "
                                     f"{low} AND {high}", drop="r").modeled_s
    return (times[10] - times[1]) / (selected(tuples, 10) - selected(tuples, 1))


def adjusted(rows: list[dict], rates: dict[tuple[str, int], float], p: Params) -> list[dict]:
    """Table 4: each join's time less the time to store its result (§6.1, "adjusted by the time
    to store the result relation"), with the insertion rate of each machine averaged over the
    relation sizes, as the paper derived Table 2 (§5.1 and its footnote 4)."""
    out = []
    for system in p["systems"]:
        mine = [r for (s, _), r in rates.items() if s == system]
        rate = sum(mine) / len(mine)
        for r in rows:
            params = r["parameters"]
            if (r["metric"] != "response_time" or r["clock"] != "modeled"
                    or params["system"] != system):
                continue
            stored = expected_rows(params["query"], params["paper_tuples"])
            ref = "Table 4" if params["paper_tuples"] in PAPER_SIZES else ""
            out.append(make_row("gamma.joins", ref, r["row"], r["column"],
                                {**params, "insert_rate_s_per_tuple": rate,
                                 "stored_tuples": stored}, "adjusted_response_time",
                                r["value"] - stored * rate, "s"))
    return out


def _most(m, key: str) -> int:
    return max((n.get("join", {}).get(key, 0) for n in (m.per_node or {}).values()), default=0)


def _total(m, key: str) -> int:
    return sum(n.get("join", {}).get(key, 0) for n in (m.per_node or {}).values())


# ---------------------------------------------------------------------------------------------
# §6.2.1: constant memory, constant page size, 1 to 8 processors with disks (Figures 10-13)

SPEEDUP_TUPLES = 100_000
PLACEMENTS = ("local", "remote", "allnodes")
SPEEDUP_BASE = 2
"""§6.2.1 plots speedup against the two-processor time, so short-circuiting at one processor
does not flatter the larger configurations."""
SPEEDUP_MEMORY_PAGES = 1024
"""Memory per joining processor for hash tables in §6.2.1: "large enough to insure that no
partition overflow would occur" (4 MB of 4 KB pages, more than a tenth of a 100,000-tuple
relation on one processor; the rows record that no processor overflowed)."""


@experiment("gamma.join_speedup", title="joinABprime on 1-8 processors with disks, Local / "
            "Remote / Allnodes", references=("Figure 10", "Figure 11", "Figure 12", "Figure 13"),
            defaults={"scale": 1.0, "nodes": list(range(1, 9)), "seed": 1, "backend": "inline"},
            quick={"scale": 0.1, "nodes": [1, 2, 4, 8]})
def join_speedup(p: Params, progress: Progress) -> list[dict]:
    """joinABprime on a 100,000-tuple A (times ``scale``) with the key and with a non-key join
    attribute, on ``n`` processors with disks and ``n`` without, in the three placements;
    response time (Figures 10, 11) and speedup over two processors (Figures 12, 13)."""
    if not 0 < p["scale"] <= 1:
        raise ExperimentError(f"scale must be above 0 and at most 1, not {p['scale']!r}")
    nodes = sorted(set(p["nodes"]))
    if not nodes or nodes[0] < 1 or SPEEDUP_BASE not in nodes:
        raise ExperimentError(f"nodes must be positive and include {SPEEDUP_BASE} (the paper's "
                              f"reference configuration), not {p['nodes']!r}")
    name, scale = "gamma.join_speedup", p["scale"]
    tuples = max(100, round(SPEEDUP_TUPLES * scale))
    rows: list[dict] = []
    times: dict[tuple[str, str, int], float] = {}
    progress.start(len(nodes))
    for n in nodes:
        db = build(2 * n, scaled_fixed_costs("gamma", scale), PAGE_SIZE, p["backend"],
                   disk_nodes=n, memory_pages=SPEEDUP_MEMORY_PAGES)
        with db:
            db.create_table("A", generate("wisconsin", tuples, seed=p["seed"] * 10),
                            partition="hash(unique1)")
            db.create_table("Bprime", generate("wisconsin", max(1, tuples // 10),
                                               seed=p["seed"] * 10 + 2),
                            partition="hash(unique1)")
            for variant, attribute in ATTRIBUTES.items():
                for placement in PLACEMENTS:
                    sql = statements("joinabprime", attribute, tuples)
                    m = measure(db, f"/*+ {placement} simple_hash repartition */ CREATE TABLE r AS {sql}",
                                drop="r")
                    if m.rows != expected_rows("joinabprime", tuples):
                        raise ExperimentError(f"joinABprime stored {m.rows} tuples on {n} nodes")
                    row = f"joinabprime_{variant}_{placement}"
                    params = {"nodes": n, "placement": placement, "attribute": attribute,
                              "tuples": tuples, "scale": scale, "seed": p["seed"],
                              "backend": p["backend"], "bottleneck": m.bottleneck}
                    times[(variant, placement, n)] = m.modeled_s / scale
                    figure = "Figure 10" if variant == "key" else "Figure 11"
                    rows += [make_row(name, figure, row, f"nodes_{n}", params,
                                      "response_time", m.modeled_s / scale, "s"),
                             make_row(name, "", row, f"nodes_{n}", params, "response_time",
                                      m.wall_s, "s", clock="wall"),
                             make_row(name, "", row, f"nodes_{n}", params, "overflows",
                                      _most(m, "overflows"), "count")]
        progress.advance(f"{n} + {n} processors")
    for (variant, placement, n), t in sorted(times.items()):
        base = times[(variant, placement, SPEEDUP_BASE)]
        figure = "Figure 12" if variant == "key" else "Figure 13"
        rows.append(make_row(name, figure, f"joinabprime_{variant}_{placement}", f"nodes_{n}",
                             {"nodes": n, "placement": placement, "baseline_nodes": SPEEDUP_BASE,
                              "scale": scale}, "speedup", base / t, "ratio"))
    if {4, 8} <= set(nodes):  # the one number §6.2.1 gives: Local, non-key, 4 to 8 processors
        rows.append(make_row(name, "Figure 13", "joinabprime_nonkey_local", "nodes_4_to_8",
                             {"scale": scale, "placement": "local"}, "speedup",
                             times[("nonkey", "local", 4)] / times[("nonkey", "local", 8)],
                             "ratio"))
    return rows


# ---------------------------------------------------------------------------------------------
# §6.2.2: join overflow as memory shrinks (Figure 14), with Hybrid and GRACE beside Simple hash

MEMORY_SHARES = (100, 80, 60, 45, 35, 25, 20)
"""Memory for hash tables as a percentage of what the build relation needs (§6.2.2 starts where
the 10,000 building tuples just fit and lowers memory evenly on every processor)."""
MEMORY_ALGORITHMS = ("simple_hash", "hybrid_hash", "grace_hash")


@experiment("gamma.join_memory", title="Join overflow as memory shrinks: Simple hash, Hybrid and "
            "GRACE, Local and Remote", references=("Figure 14",),
            defaults={"scale": 1.0, "shares": list(MEMORY_SHARES), "seed": 1,
                      "backend": "inline", "algorithms": list(MEMORY_ALGORITHMS)},
            quick={"scale": 0.25, "shares": [100, 60, 35, 20]})
def join_memory(p: Params, progress: Progress) -> list[dict]:
    """joinABprime on the key, 100,000 tuples (times ``scale``), 8 processors with disks and 8
    without, in Local and Remote mode, with memory for hash tables lowered from what the build
    relation needs to ``shares`` percent of it; response time and overflows per processor."""
    if not 0 < p["scale"] <= 1:
        raise ExperimentError(f"scale must be above 0 and at most 1, not {p['scale']!r}")
    if not p["shares"] or any(not 0 < s <= 100 for s in p["shares"]):
        raise ExperimentError(f"shares are percentages above 0 and at most 100, not {p['shares']!r}")
    from minidb.plugins import lookup

    for algorithm in p["algorithms"]:
        lookup("join", algorithm)  # one line naming the choices when it is unknown
    name, scale = "gamma.join_memory", p["scale"]
    tuples = max(100, round(SPEEDUP_TUPLES * scale))
    rows: list[dict] = []
    shares = sorted(set(p["shares"]), reverse=True)
    progress.start(len(shares))
    build_tuples = max(1, tuples // 10)
    a = generate("wisconsin", tuples, seed=p["seed"] * 10)
    bprime = generate("wisconsin", build_tuples, seed=p["seed"] * 10 + 2)
    for share in shares:
        pages = _memory_for(build_tuples, share)
        with build(16, scaled_fixed_costs("gamma", scale), PAGE_SIZE, p["backend"],
                   disk_nodes=8, memory_pages=pages) as db:
            db.create_table("A", a, partition="hash(unique1)")
            db.create_table("Bprime", bprime, partition="hash(unique1)")
            for algorithm in p["algorithms"]:
                for placement in ("local", "remote"):
                    sql = statements("joinabprime", "unique1", tuples)
                    m = measure(db, f"/*+ {placement} {algorithm} repartition */ CREATE TABLE r AS {sql}",
                                drop="r")
                    row = f"joinabprime_key_{algorithm}_{placement}"
                    params = {"share": share, "memory_pages": pages, "algorithm": algorithm,
                              "placement": placement, "tuples": tuples, "scale": scale,
                              "seed": p["seed"], "backend": p["backend"]}
                    column = f"memory_{share}"
                    ref = "Figure 14" if algorithm == "simple_hash" else ""
                    rows += [make_row(name, ref, row, column, params, "response_time",
                                      m.modeled_s / scale, "s"),
                             make_row(name, "", row, column, params, "response_time", m.wall_s,
                                      "s", clock="wall"),
                             make_row(name, "", row, column, params, "overflows",
                                      _most(m, "overflows"), "count"),
                             make_row(name, "", row, column, params, "spill_pages",
                                      _total(m, "spill_pages_written"), "pages")]
        progress.advance(f"{share}% of the memory")
    return rows


def _memory_for(build_tuples: int, share: int) -> int:
    """Pages per joining processor for hash tables: ``share`` percent of what a hash table of
    its eighth of the build relation (Wisconsin tuples, 4 KB pages, the Gamma profile's
    ``hash_entry_bytes`` per entry) needs, plus the page Simple hash keeps for its overflow
    file."""
    from minidb.cost.profiles import get_profile
    from minidb.datagen import generate as gen
    from minidb.exec.store import hash_table_capacity
    from minidb.storage.schema import Schema

    sample = gen("wisconsin", 1, seed=0)
    per_page = hash_table_capacity(PAGE_SIZE, Schema.from_arrow(sample.schema, sample),
                                   int(get_profile("gamma").hash_entry_bytes))
    needed = -(-round(build_tuples / 8 * HASH_SLACK) // per_page) + 1
    return max(3, round(needed * share / 100))


HASH_SLACK = 1.2
"""Hashing does not split the building relation into exactly equal eighths: "enough memory"
(100%) gives each processor a fifth more than its average share, so no processor overflows at
the first point, as in §6.2.2."""


# ---------------------------------------------------------------------------------------------
# §2: bit-vector filters on the split tables of the probe relation

BIT_FILTER_QUERIES = ("joinabprime", "joinaselb")


@experiment("gamma.bit_filters", title="Bit-vector filters: probe tuples sent with and without",
            references=(),
            defaults={"scale": 1.0, "seed": 1, "backend": "inline"}, quick={"scale": 0.1})
def bit_filters(p: Params, progress: Progress) -> list[dict]:
    """joinABprime and joinAselB on Gamma as §6.1 ran them (8 + 8 processors, Remote, Simple
    hash, 100,000-tuple A times ``scale``), once without and once with the bit-vector filters of
    §2 (``minidb.parallel.bitfilter``). The paper gives no numbers for them: the rows are the
    fraction of probe tuples the producers still send (the filters drop the others), the
    filters' fill (bits set / bits), the packets sent and the modeled time, each side by side.

    What to expect from the queries' definitions (§6.1): in joinABprime a tenth of A joins
    (Bprime holds a tenth of A's key values), so about a tenth of A should be sent, plus the
    false positives of the filters; in joinAselB the selection on B was already propagated to
    A, so every A tuple sent joins and the filters can drop nothing."""
    if not 0 < p["scale"] <= 1:
        raise ExperimentError(f"scale must be above 0 and at most 1, not {p['scale']!r}")
    name, scale = "gamma.bit_filters", p["scale"]
    spec = MACHINES["gamma"]
    tuples = max(100, round(SPEEDUP_TUPLES * scale))
    rows: list[dict] = []
    progress.start(len(BIT_FILTER_QUERIES) * len(ATTRIBUTES))
    with machine("gamma", scale, p["backend"]) as db:
        load(db, "gamma", tuples, p["seed"])
        for query in BIT_FILTER_QUERIES:
            for variant, attribute in ATTRIBUTES.items():
                sql = statements(query, attribute, tuples)
                row = f"{query}_{variant}"
                params = {"tuples": tuples, "scale": scale, "query": query,
                          "attribute": attribute, "join": spec["join"],
                          "placement": spec["placement"], "nodes": spec["nodes"],
                          "seed": p["seed"], "backend": p["backend"]}
                for filters in (False, True):
                    words = f"{spec['placement']} {spec['join']} repartition" + (
                        " bit_filters" if filters else "")
                    m = measure(db, f"/*+ {words} */ CREATE TABLE r AS {sql}", drop="r")
                    if m.rows != expected_rows(query, tuples):
                        raise ExperimentError(f"{query} with bit filters={filters} stored "
                                              f"{m.rows} tuples, not {expected_rows(query, tuples)}")
                    column = "with_filters" if filters else "without_filters"
                    rows += [make_row(name, "", row, column, params, "response_time",
                                      m.modeled_s / scale, "s"),
                             make_row(name, "", row, column, params, "packets_sent",
                                      m.counters.get("packets_sent_remote", 0)
                                      + m.counters.get("packets_short_circuited", 0), "count")]
                    if filters:
                        tested = m.counters.get("operators.apply_bit_filters", 0)
                        dropped = _total(m, "bit_filter_eliminated")
                        bits = _total(m, "bit_filter_bits")
                        rows += [make_row(name, "", row, column, params, "probe_sent_fraction",
                                          (tested - dropped) / tested if tested else 1.0, "ratio"),
                                 make_row(name, "", row, column, params, "filter_fill",
                                          _total(m, "bit_filter_bits_set") / bits if bits else 0.0,
                                          "ratio"),
                                 make_row(name, "", row, column, params, "probe_tuples_tested",
                                          tested, "count")]
                progress.advance(f"{query} on {attribute}")
    return rows


# ---------------------------------------------------------------------------------------------
# §6.2.3: the disk page size (Figures 15 and 16)

JOIN_PAGE_SIZES = (2048, 4096, 8192, 16384, 32768)
JOIN_PAGE_MEMORY_BYTES = 4 * 2**20
"""Hash-table memory per joining processor for the page-size runs: §6.2.3 says only that memory
"was also kept constant and large enough so that no hash-table overflows would occur"; 4 MB holds
a tenth of B's share at every scale here (the experiment checks that nothing overflowed)."""


@experiment("gamma.join_page_size", title="joinAselB with disk pages of 2 to 32 KB, Local / "
            "Remote / Allnodes", references=("Figure 15", "Figure 16"),
            defaults={"scale": 1.0, "page_sizes": list(JOIN_PAGE_SIZES), "seed": 1,
                      "backend": "inline"},
            quick={"scale": 0.1})
def join_page_size(p: Params, progress: Progress) -> list[dict]:
    """joinAselB on 8 processors with disks and 8 without (§6.2.3's configuration), A and B of
    100,000 tuples times ``scale``, joined on the key and on a non-key attribute in the three
    placements, with disk pages of 2 to 32 KB and memory constant and large enough that no hash
    table overflows; response time (Figure 15) and the speedup over 2 KB pages (Figure 16)."""
    if not 0 < p["scale"] <= 1:
        raise ExperimentError(f"scale must be above 0 and at most 1, not {p['scale']!r}")
    sizes = sorted(set(p["page_sizes"]))
    if not sizes or sizes[0] < 1024:
        raise ExperimentError(f"page_sizes must be at least 1024 bytes, not {p['page_sizes']!r}")
    name, scale = "gamma.join_page_size", p["scale"]
    tuples = max(100, round(SPEEDUP_TUPLES * scale))
    rows: list[dict] = []
    first: dict[str, float] = {}
    progress.start(len(sizes))
    for size in sizes:
        db = build(16, scaled_fixed_costs("gamma", scale), size, p["backend"], disk_nodes=8,
                   memory_pages=max(MIN_JOIN_PAGES, JOIN_PAGE_MEMORY_BYTES // size))
        with db:
            for i, relation in enumerate(("A", "B")):
                db.create_table(relation, generate("wisconsin", tuples, seed=p["seed"] * 10 + i),
                                partition="hash(unique1)")
            for variant, attribute in ATTRIBUTES.items():
                for placement in PLACEMENTS:
                    sql = statements("joinaselb", attribute, tuples)
                    m = measure(db, f"/*+ {placement} simple_hash repartition */ "
                                f"CREATE TABLE r AS {sql}", drop="r")
                    if m.rows != expected_rows("joinaselb", tuples):
                        raise ExperimentError(f"joinAselB stored {m.rows} tuples at {size} bytes")
                    if _most(m, "overflows"):
                        raise ExperimentError(f"joinAselB overflowed at {size}-byte pages: "
                                              "raise JOIN_PAGE_MEMORY_BYTES")
                    row = f"joinaselb_{variant}_{placement}"
                    column = f"page_{size // 1024}kb"
                    params = {"page_size": size, "placement": placement, "attribute": attribute,
                              "tuples": tuples, "scale": scale, "seed": p["seed"],
                              "backend": p["backend"], "bottleneck": m.bottleneck}
                    first.setdefault(row, m.modeled_s)
                    rows += [make_row(name, "Figure 15", row, column, params, "response_time",
                                      m.modeled_s / scale, "s"),
                             make_row(name, "", row, column, params, "response_time", m.wall_s,
                                      "s", clock="wall"),
                             make_row(name, "Figure 16", row, column,
                                      {**params, "baseline_page_size": sizes[0]}, "speedup",
                                      first[row] / m.modeled_s, "ratio")]
        progress.advance(f"{size // 1024} KB pages")
    return rows
