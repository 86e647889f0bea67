"""The LH* paper's Section 5: an LH* file inside Monet on SGI O2 workstations (Karlsson and
Kersten 1997), and LH*'s own guarantees.

What is rebuilt, and from which section:

* ``lhstar.partition_size``: Section 5.1's two tables. The file ``big`` on the front node itself,
  from 1 to 11 M entries (8 to 88 MB on a 64 MB machine): the four queries, and the page faults,
  elapsed and user CPU time of ``select(1, 10)``; plus Section 5.4's partition-size limit.
* ``lhstar.remote_overhead``: Section 5.2's table. The same file on one remote node (1, 2, 4 and
  8 M entries, and 5 M for the 40 MB overhead the text quotes): remote against local.
* ``lhstar.scalability``: Section 5.3's three tables. A fixed 1 M-entry file over 1 to 16 nodes;
  8 nodes holding 1 to 32 M entries; 4 M entries per node on 1 to 8 nodes.
* ``lhstar.algorithm``: LH*'s properties (docs/facts.md): at most two forwards per request over
  a million operations of many stale clients while the file grows, messages per insert and
  lookup, fresh clients' images converging, and the load factor with and without load control.

The queries (Section 5): ``big`` holds (key, value) pairs of integers, the keys distinct and the
values distinct; ``t5`` holds 100,000 pairs at the front node. ``select(5)`` and ``select(1, 10)``
select on the value, scanning every entry; ``join(t5, big)`` joins t5's tail with big's key,
``join(big, t5)`` big's value with t5's head, each with t5 broadcast to every node, the paper's
strategy for its experiments (Section 5.1, "all other data is broadcasted to all nodes"). Both
joins find all 100,000 of t5's entries. Every query really runs on the LH* file
(``minidb.sdds.operators``); the work it did is counted per server machine from the file (entries
held, scanned, looked up, returned, pages touched) and priced on the ``sgi_o2`` profile by
``minidb.cost.sdds_model``, in milliseconds as the paper reports.

``addressing`` names the LH* rules the files run (plugin kind ``lhstar_addressing``): minidb's,
or a student's from Lab 4, which the lab's last part runs these experiments on.

Sizes: the paper's times ``scale``. A scaled run scales memory, ``t5``, the bucket capacity and
the fixed costs with the data, so its modeled milliseconds divided by ``scale`` are the time at
the paper's size; the rows report that (the ``scale`` is in their parameters). ``--quick`` runs
at 1% (10,000 to 320,000 entries).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from minidb.cost.profiles import get_profile
from minidb.cost.sdds_model import (
    ENTRY_BYTES,
    NodeWork,
    QueryTime,
    QueryWork,
    data_memory,
    price,
)
from minidb.experiments.registry import (
    MAX_NODES,
    ExperimentError,
    Params,
    Progress,
    experiment,
    make_row,
)
from minidb.hashing import hash_keys
from minidb.sdds import operators
from minidb.sdds.lhstar import LHStarFile
from minidb.sdds.servers import machine_of

PROFILE = "sgi_o2"
T5_ENTRIES = 100_000
"""Entries of ``t5`` (LH* paper §5: 'fixed to 100 000 entries')."""
KEY_RANGE = 1_000_000
"""``t5``'s join values are drawn from the first million keys and values of ``big``, so both
joins find every t5 entry at every file size (1 M entries is the paper's smallest file)."""
BUCKET_CAPACITY = 16_384
"""Entries per LH* bucket at the paper's size (128 KB of 8-byte entries). The paper does not give
Monet's bucket size; the choice only sets how many buckets a node holds (dozens to hundreds)."""
MILLION = 1_000_000
MAX_ENTRIES = 64 * MILLION
"""The largest file an experiment may build: twice the paper's largest (32 M entries)."""
SELECTS = {"select_5": (5, 5), "select_1_10": (1, 10)}


@dataclass
class Workload:
    """``big``'s entries (keys and values) and ``t5``, for one seed and scale."""

    keys: np.ndarray
    values: np.ndarray
    t5: np.ndarray
    scale: float


def workload(max_entries: int, scale: float, seed: int) -> Workload:
    """Keys ``offset + 0 .. max_entries - 1`` with distinct values (a seeded permutation), and
    ``t5``: heads drawn from the values and tails from the keys of the first ``KEY_RANGE x
    scale`` entries, so every t5 entry joins at every file size the experiments use."""
    if max_entries > MAX_ENTRIES:
        raise ExperimentError(f"an LH* file of {max_entries:,} entries is more than minidb "
                              f"simulates (at most {MAX_ENTRIES:,}); use smaller millions or "
                              f"a smaller scale")
    rng = np.random.default_rng(seed)
    offset = int(seed) * 10**9
    keys = np.arange(max_entries, dtype=np.int64) + offset
    values = rng.permutation(max_entries).astype(np.int64)
    first = min(max_entries, max(1, round(KEY_RANGE * scale)))
    t5_size = min(first, max(1, round(T5_ENTRIES * scale)))
    heads = values[rng.choice(first, size=t5_size, replace=False)]
    tails = keys[rng.choice(first, size=t5_size, replace=False)]
    return Workload(keys, values, operators.bat(heads, tails), scale)


def _entries(millions: float, scale: float) -> int:
    return max(1, round(millions * MILLION * scale))


def _capacity(scale: float) -> int:
    return max(16, round(BUCKET_CAPACITY * scale))


class GrowingFile:
    """An LH* file over ``machines`` that grows to the sizes asked for, by inserts through one
    client (the file splits as it grows; nothing is bulk-loaded)."""

    def __init__(self, data: Workload, machines: int, backend: str,
                 addressing: str = "lhstar") -> None:
        self.data = data
        self.file = LHStarFile(capacity=_capacity(data.scale), machines=machines,
                               backend=backend, addressing=addressing)
        self.size = 0

    def grow_to(self, entries: int) -> LHStarFile:
        if entries > len(self.data.keys):
            raise ExperimentError(f"the workload holds {len(self.data.keys):,} entries, not "
                                  f"{entries:,}")
        client = self.file.client("loader")
        for key, value in zip(self.data.keys[self.size:entries].tolist(),
                              self.data.values[self.size:entries].tolist(), strict=True):
            client.insert(key, value)
        self.size = entries
        return self.file

    def close(self) -> None:
        self.file.close()


@contextmanager
def growing_file(data: Workload, machines: int, backend: str,
                 addressing: str = "lhstar") -> Iterator[GrowingFile]:
    grower = GrowingFile(data, machines, backend, addressing)
    try:
        yield grower
    finally:
        grower.close()


def _pages(entries: int) -> int:
    page = get_profile(PROFILE).vm_page_bytes
    return math.ceil(entries * ENTRY_BYTES / page)


def count_queries(file: LHStarFile, t5: np.ndarray, remote: bool) -> dict[str, QueryWork]:
    """Run the four queries on ``file`` and count, per server machine, the work each did.

    The operators produce the results; the counts come from each machine's partition (its
    buckets laid out one after the other in address order, each in its keys' hash order, 8 bytes
    an entry), and each machine's result count is
    checked against the operator's result, so the priced work is the work the results came
    from."""
    page = get_profile(PROFILE).vm_page_bytes
    parts = []
    for m in range(file.machines):
        buckets = file._call_machine(m, "pairs")
        # a bucket is a hash table: an entry's place in it follows its key's hash, not the order
        # it arrived in (so which pages a look-up touches does not depend on the insert order)
        arrays = [b[np.argsort(hash_keys(b["head"]), kind="stable")]
                  for b in (buckets[a] for a in sorted(buckets))]
        parts.append(np.concatenate(arrays) if arrays
                     else np.empty(0, dtype=operators.PAIR))
    results = {name: operators.select(file, low, high, gather=False)
               for name, (low, high) in SELECTS.items()}
    results["join_t5_big"] = operators.join(t5, file, strategy="broadcast")
    results["join_big_t5"] = operators.join(file, t5, strategy="broadcast")
    per_machine = {name: _results_per_machine(r, file.machines) for name, r in results.items()}

    out: dict[str, QueryWork] = {}
    for name, (low, high) in SELECTS.items():
        nodes = []
        for m, p in enumerate(parts):
            found = int(((p["tail"] >= low) & (p["tail"] <= high)).sum())
            _agree(name, m, found, per_machine[name][m])
            nodes.append(NodeWork(len(p), scanned=len(p), results=found,
                                  pages_touched=_pages(len(p))))
        out[name] = QueryWork(tuple(nodes), remote, 0, sum(w.results for w in nodes))
    probe, scan = [], []
    for m, p in enumerate(parts):
        hit = np.nonzero(np.isin(p["head"], t5["tail"]))[0]
        _agree("join_t5_big", m, len(hit), per_machine["join_t5_big"][m])
        touched = len(np.unique(hit * ENTRY_BYTES // page))
        probe.append(NodeWork(len(p), probes=len(t5), results=len(hit), pages_touched=touched,
                              received=len(t5)))
        found = int(np.isin(p["tail"], t5["head"]).sum())
        _agree("join_big_t5", m, found, per_machine["join_big_t5"][m])
        scan.append(NodeWork(len(p), scanned=len(p), probes=len(p), built=len(t5),
                             results=found, pages_touched=_pages(len(p)), received=len(t5)))
    for name, nodes in (("join_t5_big", probe), ("join_big_t5", scan)):
        out[name] = QueryWork(tuple(nodes), remote, len(t5), sum(w.results for w in nodes))
    return out


def _results_per_machine(result: operators.Result, machines: int) -> list[int]:
    counts = [0] * machines
    for address, rows in result.fragments.items():
        counts[machine_of(address, machines)] += len(rows)
    return counts


def _agree(query: str, machine: int, counted: int, produced: int) -> None:
    if counted != produced:
        raise AssertionError(f"{query} on machine {machine}: counted {counted} results, the "
                             f"operator produced {produced}")


def _time(work: QueryWork, scale: float) -> QueryTime:
    return price(get_profile(PROFILE), work, scale)


def _millions_slug(millions: float) -> str:
    return f"{millions:g}m"


def _check_sizes(name: str, p: Params, *keys: str) -> None:
    for key in keys:
        values = p[key] if isinstance(p[key], list) else [p[key]]
        if not values or any(v <= 0 for v in values):
            raise ExperimentError(f"{name}: {key} must be positive numbers, not {p[key]!r}")


def _check_at_most(name: str, p: Params, most: int, *keys: str) -> None:
    for key in keys:
        values = p[key] if isinstance(p[key], list) else [p[key]]
        if max(values) > most:
            raise ExperimentError(f"{name}: {key} may be at most {most:,}, not {max(values)!r}")


def _base(p: Params) -> dict:
    return {"scale": p["scale"], "seed": p["seed"], "backend": p["backend"], "profile": PROFILE,
            "addressing": p["addressing"]}


# -- Section 5.1 ----------------------------------------------------------------------------------
TABLE_1 = "Section 5.1 (table 1 of 2)"
TABLE_2 = "Section 5.1 (table 2 of 2)"


@experiment("lhstar.partition_size", title="Partition size against a 64 MB node's memory (one node)",
            references=(TABLE_1, TABLE_2, "Section 5.4"),
            defaults={"scale": 1.0, "millions": list(range(1, 12)), "seed": 1,
                      "backend": "inline", "addressing": "lhstar"},
            quick={"scale": 0.01})
def partition_size(p: Params, progress: Progress) -> list[dict]:
    name = "lhstar.partition_size"
    _check_sizes(name, p, "millions")
    s = p["scale"]
    sizes = sorted(p["millions"])
    data = workload(_entries(max(sizes), s), s, p["seed"])
    rows: list[dict] = []
    progress.start(len(sizes))
    fitting = []
    with growing_file(data, 1, p["backend"], p["addressing"]) as grower:
        for millions in sizes:
            file = grower.grow_to(_entries(millions, s))
            row = f"entries_{_millions_slug(millions)}"
            params = {**_base(p), "entries": len(file), "nodes": 1, "where": "local",
                      "buckets": file.state.buckets}
            work = count_queries(file, data.t5, remote=False)
            megabytes = len(file) * ENTRY_BYTES / 1e6 / s
            rows.append(make_row(name, TABLE_1, row, "bytes", params, "file_size", megabytes,
                                 "MB"))
            rows.append(make_row(name, TABLE_2, row, "bytes", params, "file_size", megabytes,
                                 "MB"))
            for query, w in work.items():
                t = _time(w, s)
                rows.append(make_row(name, TABLE_1, row, query, {**params, "query": query},
                                     "elapsed", t.total_ms / s, "ms"))
                if query == "select_1_10":
                    q = {**params, "query": query}
                    rows.append(make_row(name, TABLE_2, row, "pagefaults", q, "page_faults",
                                         t.faults / s, "count"))
                    rows.append(make_row(name, TABLE_2, row, "elapsed", q, "elapsed",
                                         t.total_ms / s, "ms"))
                    rows.append(make_row(name, TABLE_2, row, "user", q, "user_cpu_time",
                                         t.cpu_ms / s, "ms"))
                    if t.faults == 0:
                        fitting.append(megabytes)
            progress.advance(f"{millions:g} M entries")
    if fitting:
        rows.append(make_row(name, "Section 5.4", "partition_size_limit", "na",
                             {**_base(p), "memory_for_data_mb":
                              data_memory(get_profile(PROFILE)) / 1e6},
                             "partition_size", max(fitting), "MB"))
    return rows


# -- Section 5.2 ----------------------------------------------------------------------------------
@experiment("lhstar.remote_overhead", title="The file on one remote node against the local one",
            references=("Section 5.2",),
            defaults={"scale": 1.0, "millions": [1, 2, 4, 5, 8], "seed": 1, "backend": "inline",
                      "addressing": "lhstar"},
            quick={"scale": 0.01})
def remote_overhead(p: Params, progress: Progress) -> list[dict]:
    name = "lhstar.remote_overhead"
    _check_sizes(name, p, "millions")
    s = p["scale"]
    sizes = sorted(p["millions"])
    data = workload(_entries(max(sizes), s), s, p["seed"])
    rows: list[dict] = []
    progress.start(len(sizes))
    with growing_file(data, 1, p["backend"], p["addressing"]) as grower:
        for millions in sizes:
            file = grower.grow_to(_entries(millions, s))
            row = f"entries_{_millions_slug(millions)}"
            params = {**_base(p), "entries": len(file), "nodes": 1, "where": "remote"}
            remote = count_queries(file, data.t5, remote=True)
            megabytes = len(file) * ENTRY_BYTES / 1e6 / s
            rows.append(make_row(name, "Section 5.2", row, "bytes", params, "file_size",
                                 megabytes, "MB"))
            for query, w in remote.items():
                there = _time(w, s).total_ms / s
                here = _time(QueryWork(w.nodes, False), s).total_ms / s
                q = {**params, "query": query}
                rows.append(make_row(name, "Section 5.2", row, query, q, "elapsed", there, "ms"))
                rows.append(make_row(name, "", row, f"local_{query}", {**q, "where": "local"},
                                     "elapsed", here, "ms"))
                rows.append(make_row(name, "", row, query, q, "overhead", there - here, "ms"))
                if query == "select_1_10" and round(megabytes) == 40:
                    rows.append(make_row(name, "Section 5.2", "select_1_10_overhead",
                                         "bytes_40mb", q, "overhead", there - here, "ms"))
            progress.advance(f"{millions:g} M entries")
    return rows


# -- Section 5.3 ----------------------------------------------------------------------------------
SCALABILITY_TABLES = {"fixed_size": "Section 5.3 (table 1 of 3)",
                      "fixed_nodes": "Section 5.3 (table 2 of 3)",
                      "constant_ratio": "Section 5.3 (table 3 of 3)"}


@experiment("lhstar.scalability", title="Scalability: nodes, file size, and both together",
            references=tuple(SCALABILITY_TABLES.values()) + ("Section 5.4",),
            defaults={"scale": 1.0, "nodes": [1, 2, 4, 8, 16], "millions": [1, 2, 4, 8, 32],
                      "fixed_nodes": 8, "per_node_millions": 4, "ratio_nodes": [1, 2, 4, 8],
                      "seed": 1, "backend": "inline", "addressing": "lhstar"},
            quick={"scale": 0.01})
def scalability(p: Params, progress: Progress) -> list[dict]:
    name = "lhstar.scalability"
    _check_sizes(name, p, "nodes", "millions", "fixed_nodes", "per_node_millions",
                 "ratio_nodes")
    _check_at_most(name, p, MAX_NODES, "nodes", "fixed_nodes", "ratio_nodes")
    s = p["scale"]
    per_node = p["per_node_millions"]
    largest = max(max(p["millions"]), per_node * max(p["ratio_nodes"]), 1)
    data = workload(_entries(largest, s), s, p["seed"])
    plan = ([("fixed_size", n, [1]) for n in sorted(p["nodes"])]
            + [("fixed_nodes", p["fixed_nodes"], sorted(p["millions"]))]
            + [("constant_ratio", n, [per_node * n]) for n in sorted(p["ratio_nodes"])])
    progress.start(sum(len(sizes) for _, _, sizes in plan))
    rows: list[dict] = []
    joins_on_fixed_nodes: dict[float, float] = {}
    for table, nodes, sizes in plan:
        with growing_file(data, nodes, p["backend"], p["addressing"]) as grower:
            for millions in sizes:
                file = grower.grow_to(_entries(millions, s))
                row = f"nodes_{nodes}_entries_{_millions_slug(millions)}"
                params = {**_base(p), "table": table, "entries": len(file), "nodes": nodes,
                          "where": "remote", "buckets": file.state.buckets}
                for query, w in count_queries(file, data.t5, remote=True).items():
                    t = _time(w, s)
                    rows.append(make_row(name, SCALABILITY_TABLES[table], row, query,
                                         {**params, "query": query}, "elapsed",
                                         t.total_ms / s, "ms"))
                    if table == "fixed_nodes" and query == "join_t5_big":
                        joins_on_fixed_nodes[millions] = t.total_ms / s
                progress.advance(f"{table}: {nodes} nodes, {millions:g} M")
    if 1 in joins_on_fixed_nodes and 8 in joins_on_fixed_nodes:
        growth = joins_on_fixed_nodes[8] / joins_on_fixed_nodes[1] - 1
        rows.append(make_row(name, "Section 5.4", "join_fixed_nodes", "entries_1m_to_8m",
                             {**_base(p), "table": "fixed_nodes", "query": "join_t5_big",
                              "nodes": p["fixed_nodes"]},
                             "cost_increase", 100 * growth, "percent"))
    return rows


# -- LH*'s own guarantees -------------------------------------------------------------------------
def _addressing_messages(op) -> int:
    """The messages LH* counts for an operation (docs/facts.md): the request, its forwards and a
    lookup's reply; image adjustments and the split traffic an insert may cause are not."""
    m = op.messages
    return m.requests + m.forwards + m.replies


@experiment("lhstar.algorithm", title="LH*: forwards, messages, image convergence, load factor",
            references=(),
            defaults={"operations": 1_000_000, "clients": 50, "servers": 8, "seed": 1,
                      "backend": "inline"},
            quick={"operations": 200_000})
def algorithm(p: Params, progress: Progress) -> list[dict]:
    name = "lhstar.algorithm"
    _check_sizes(name, p, "operations", "clients", "servers")
    _check_at_most(name, p, MAX_ENTRIES, "operations")
    _check_at_most(name, p, MAX_NODES, "clients", "servers")
    rng = np.random.default_rng(p["seed"])
    base = {"seed": p["seed"], "backend": p["backend"], "operations": p["operations"],
            "clients": p["clients"], "servers": p["servers"]}
    progress.start(3)
    rows = []

    # 1. Many clients, most of them stale, insert and look up while the file grows.
    with LHStarFile(capacity=50, machines=p["servers"], backend=p["backend"]) as file:
        clients = [file.client(f"c{i}") for i in range(p["clients"])]
        inserted: list[int] = []
        most, inserts, lookups = 0, [], []
        picks = rng.integers(0, p["clients"], size=p["operations"])
        kinds = rng.random(p["operations"])
        for step in range(p["operations"]):
            client = clients[picks[step]]
            if kinds[step] < 0.5 or not inserted:
                key = int(rng.integers(0, 2**40))
                op = client.request("insert", key, step)
                inserted.append(key)
                inserts.append(_addressing_messages(op))
            else:
                key = inserted[int(rng.integers(0, len(inserted)))]
                op = client.request("lookup", key)
                lookups.append(_addressing_messages(op))
            most = max(most, op.forwards)
        file.check()
        rows += [make_row(name, "", "max_forwards", "all", base, "forwards", most, "count"),
                 make_row(name, "", "operations", "all", base, "forwards", p["operations"],
                          "count"),
                 make_row(name, "", "per_insert", "all", base, "messages", np.mean(inserts),
                          "messages"),
                 make_row(name, "", "per_lookup", "all", base, "messages", np.mean(lookups),
                          "messages")]
    progress.advance("stale clients")

    # 2. Fresh clients of a file that has stopped growing: their images converge.
    with LHStarFile(capacity=50, machines=p["servers"], backend=p["backend"]) as file:
        keys = rng.choice(2**40, size=10_000, replace=False).tolist()
        file.insert_many((k, k) for k in keys)
        converged, late, iams = 0, 0, []
        fresh = 10
        lookups_each = 20 * file.state.buckets
        for i in range(fresh):
            client = file.client(f"fresh{i}")
            got = 0
            for j, k in enumerate(rng.choice(keys, size=lookups_each).tolist()):
                op = client.request("lookup", k)
                got += op.iam
                if j >= lookups_each // 2:
                    late += op.forwards
            iams.append(got)
            image = client.image
            converged += (image.level, image.split) == (file.state.level, file.state.split)
        conv = {**base, "fresh_clients": fresh, "lookups_each": lookups_each,
                "buckets": file.state.buckets}
        rows += [make_row(name, "", "clients_converged", "all", conv, "convergence",
                          converged / fresh, "share"),
                 make_row(name, "", "late_forwards", "all", conv, "convergence", late, "count"),
                 make_row(name, "", "max_iams", "all", conv, "convergence", max(iams), "count")]
    progress.advance("fresh clients")

    # 3. Load factor with and without load control: it swings as the split pointer sweeps a
    # level (a bucket that just split leaves two half-full ones), so the literature's figure is
    # a mean over the file's growth; sampled every 1,000 inserts over the second half of 50,000.
    for policy in ("uncontrolled", "controlled"):
        samples = []
        with LHStarFile(capacity=50, machines=p["servers"], split=policy, threshold=0.8,
                        backend=p["backend"]) as file:
            loader = file.client("loader")
            for i, k in enumerate(rng.choice(2**40, size=50_000, replace=False).tolist()):
                loader.insert(k, 0)
                if i >= 25_000 and (i + 1) % 1_000 == 0:
                    samples.append(file.load_factor())
        rows.append(make_row(name, "", policy, "all",
                             {**base, "records": 50_000, "threshold": 0.8,
                              "sampled": "every 1,000 inserts from 25,000 on"},
                             "load_factor", float(np.mean(samples)), "share"))
    progress.advance("load factor")
    return rows
