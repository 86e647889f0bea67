"""NonStop SQL Release 2's audited speedup and batch-scaleup benchmark (Englert et al. 1989).

Rebuilds Table 2 of the paper (section "The SQL Release 2 Benchmark"): four queries over a
200-byte Wisconsin-like table, on VLX and CLX processors, each with its own discs:

* ``table_scan``: a scan whose predicate is always false (``hundpct > size``), no rows returned;
* ``select_1pct_insert``: a random 1% (``hundpct < size / 100``) inserted into a result table,
  each executor inserting into its local partition (``partition=local``);
* ``average``: ``AVG(onepct)``, partial sums and counts per partition combined by the application;
* ``update_1pct``: ``four = four + 117`` on a random 1% of the rows.

``tandem.speedup`` runs them on fixed-size F tables partitioned over 2, 4, 8 (and, on the VLX,
16) processors; speedup is the elapsed time on 2 partitions over the time on n, so 2 partitions
is 1.00, as in the paper's table. ``tandem.scaleup`` grows the G tables with the partitions
(a fixed number of rows per partition); batch scaleup is elapsed time on n over elapsed time on
2 (the paper's definition, good values near 1). Table sizes are Table 1's (F: 8,000,000 rows on
the VLX, 2,441,440 on the CLX; G: 1,000,000 and 420,000 rows per partition), times ``scale``.

Tables are range-partitioned on the primary key unique2 over 4 KB pages. Executors are started
one after the other (``startup="serial"`` in the cost model), as the paper reports for Release 2
("a second or two per process").

The join row of Table 2 (CLX speedup only: the paper ran no other join test) joins each F table
with a copy of itself on the primary key unique2, both restricted to 1% by ``hundpct``, and
stores the result partitioned where it is produced. The copy is loaded with the same rows and
partitioning, so the tables are partitioned exactly the same way and the planner picks NonStop
SQL's first strategy, the co-located join (``minidb/cluster/planner.py``, ``_join_strategy``):
"each pair of partitions is joined in parallel and the result of that mini-join is inserted
into the result table", and no row crosses between processors. The join is the chosen join
plug-in (the default in-memory hash join), where NonStop SQL would merge the two clustered
scans.

The profiles' scan rates: the VLX's is calibrated on one cell, the VLX table scan's speedup of
7.21 at 16 partitions (``minidb.cost.profiles.tandem_vlx_scan_rate``; ``minidb report`` shows that
cell as calibration), and the CLX's is half of it (the paper: a job runs about twice as fast on
a VLX). Every other cell of Table 2 is a prediction.

The update's transaction log (text under Figure 9) is modeled from counted work (``audit_log``):
each node counts one 200-byte record image for each row its UPDATE changed (the paper's "about
16MB of log data on the F16 table" for 80,000 rows), sends it in 4 KB blocks to the log process
on cpu 1 (node 1), which writes it in sequence through its own disc path. No constant is added.
What it does and does not explain: the update is not the least linear query in the model
(``tandem.update_least_linear`` fails): at 10% scale (``--quick``) it speeds up 7.40 at VLX F16
(paper 7.00) and the log on cpu 1 takes only about 2% of it. The insert's log (the paper: "the
block of inserts generate a single log record") is not modeled: the paper gives no volume for it.

The update changes each cluster's rows right after its scan read them, while the pages are in the
pool (``minidb.cluster.node.Node.update``): NonStop SQL's disc process updates the rows of the
blocks it reads, so each changed page is read once and written once. (Before, a node found every
match first and rewrote them by record id, so a partition larger than its pool read each changed
page twice, at random; that made the update superlinear on the CLX, 4.92 at F8 against 3.49.)

Below full size (``scale < 1``) the fixed costs and each processor's buffer pool are scaled with
the data (``similar=True``; ``minidb.experiments.machines.scaled_fixed_costs`` and
``similar_buffer_pages``): Table 2 holds only ratios, a 1% copy of the benchmark with full-size
startup costs would measure startup, not the benchmark, and with a full-size pool every partition
would fit in memory, which none does at full size. ``--quick`` runs at 10% scale: at 1% the
random 1% that the select and the update touch is only 40-70 rows per partition on 16
processors, and the slowest partition's share bounds the phase. The paper
itself notes that startup is what bends its curves when a job takes only minutes.
"""

from __future__ import annotations

import math

from minidb.cost.profiles import get_profile
from minidb.datagen import generate
from minidb.experiments.machines import MIN_BUFFER_PAGES, build, measure, scaled_fixed_costs
from minidb.experiments.registry import ExperimentError, Params, Progress, experiment, make_row

MACHINES = {"vlx": {"profile": "tandem_vlx", "f_rows": 8_000_000, "g_rows": 1_000_000,
                    "partitions": [2, 4, 8, 16]},
            "clx": {"profile": "tandem_clx", "f_rows": 2_441_440, "g_rows": 420_000,
                    "partitions": [2, 4, 8]}}
QUERIES = ("table_scan", "select_1pct_insert", "average", "update_1pct")
JOIN_MACHINES = ("clx",)  # the only machine the paper's join test ran on (Table 2, Figure 10)
MODELS_AUDIT_LOG = True
"""Whether the transaction log (audit trail) is modeled: it is, by ``audit_log`` (below)."""
LOG_CPU: int | str = 1
"""The processor that runs the log process and has the log disc: cpu 1, minidb's node 1 (the
paper: "the second processor had an extra disc to store the transaction log", "the log process
and disc (in cpu 1)"). Any other value names a processor of its own that holds no partition, the
paper's remedy ("the database discs could be moved from cpu 1"); the tests use it."""
PAGE_SIZE = 4096


def statements(rows: int) -> dict[str, str]:
    """The benchmark's four statements for a table of ``rows`` rows."""
    return {
        "table_scan": f"SELECT * FROM t WHERE hundpct > {rows}",
        "select_1pct_insert": "/*+ partition=local */ CREATE TABLE result AS "
                              f"SELECT * FROM t WHERE hundpct < {rows // 100}",
        "average": "SELECT AVG(onepct) AS a FROM t",
        "update_1pct": f"UPDATE t SET four = four + 117 WHERE hundpct < {rows // 100}",
    }


def join_statement(rows: int) -> str:
    """The paper's join query over a table and its copy of ``rows`` rows each: 1% of each
    (``hundpct <= rows / 100 - 1``), joined on unique2, stored where each pair of partitions
    joins (``partition=local``)."""
    cut = rows // 100 - 1
    return ("/*+ co_located partition=local */ CREATE TABLE result AS "
            "SELECT one.unique1, one.unique2, one.two, one.four, one.ten, one.twenty, "
            "one.onepct, one.tenpct, one.twenpct, one.fiftypct, one.hundpct, one.odd1pct, "
            "one.even1pct, one.stringu1, two.stringu2, two.stringu3 "
            f"FROM t one, t2 two WHERE one.unique2 = two.unique2 AND one.hundpct <= {cut} "
            f"AND two.hundpct <= {cut}")


def audit_log(phases: list[dict], packet_bytes: int, page_size: int,
              log_cpu: int | str | None = None) -> list[dict]:
    """``phases`` with the work of NonStop SQL's transaction log added (text under Figure 9).

    Every node counted ``audit_bytes`` for the rows its UPDATE changed: one record image
    (200 bytes) a row. The paper: "This query generated about 16MB of log data on the F16 table",
    16 MB / 80,000 rows updated = 200 bytes a row, the row size. In each phase:

    * each node sends its audit to the log process on ``log_cpu`` in blocks of ``packet_bytes``
      (4 KB, the sequential block buffering): over the bus from another processor (sender: packet
      CPU and bus time; ``log_cpu``: a packet received each), a memory copy on ``log_cpu`` itself;
    * ``log_cpu`` writes the audit to its log disc in sequence, ``ceil(audit / page_size)`` pages
      (written behind; the commit's one force writes the last, partly filled page) with one
      buffer call each. minidb prices a processor's discs as one path whose rate is calibrated
      on Table 2 (the disc process "never waits for disc", so that rate is the processor's, not a
      disc arm's); the log disc's pages go through the same path of cpu 1.

    Only the update is logged here. The 1% select & insert logs too in NonStop SQL ("the block
    of inserts generate a single log record"), but the paper gives no volume for it, and a
    record image a row (the update's) is a number it does not state: not modeled. Statements
    with no audit (scan, average, insert, join) get no log work. The phases given are not
    changed; new counter dicts are returned."""
    log_cpu = LOG_CPU if log_cpu is None else log_cpu
    out = []
    for phase in phases:
        phase = {node: dict(c) for node, c in phase.items()}
        total = sum(c.get("audit_bytes", 0) for c in phase.values())
        if total:
            log = phase.setdefault(log_cpu, {})
            for node, c in list(phase.items()):
                audit = c.get("audit_bytes", 0)
                blocks = math.ceil(audit / packet_bytes)
                if not blocks:
                    continue
                if node == log_cpu:
                    _add(c, packets_short_circuited=blocks, bytes_short_circuited=audit)
                else:
                    _add(c, packets_sent_remote=blocks, bytes_sent_remote=audit)
                    _add(log, packets_received=blocks)
            pages = math.ceil(total / page_size)
            _add(log, pages_written_seq=pages, buffer_calls=pages, log_pages=pages,
                 log_forces=1)
        out.append(phase)
    return out


def _add(counters: dict, **work: int) -> None:
    for key, n in work.items():
        counters[key] = counters.get(key, 0) + n


def _machines(p: Params) -> list[str]:
    unknown = [m for m in p["machines"] if m not in MACHINES]
    if unknown:
        raise ExperimentError(f"unknown Tandem machine {unknown[0]!r}; choose vlx or clx")
    return p["machines"]


def similar_buffer_pages(profile: str, scale: float) -> int:
    """Each processor's buffer pool under similarity scaling: its memory times ``scale``, so a
    partition is as many times the pool as at full size (at full size no F or G partition fits
    the 16 MB pool; at 1% of the rows every F partition would fit a full-size pool, and the
    update would find its pages in memory). At least ``MIN_BUFFER_PAGES``."""
    return max(MIN_BUFFER_PAGES, round(get_profile(profile).memory_bytes * min(1.0, scale)
                                       / PAGE_SIZE))


def _run_table(machine: str, partitions: int, rows: int, p: Params,
               join: bool = False) -> dict[str, object]:
    """Load a table of ``rows`` rows over ``partitions`` processors and time every query (and,
    with ``join``, the join of the table with a copy of itself)."""
    profile = MACHINES[machine]["profile"]
    buffer_pages = None                                   # the profile's memory per node
    if p["similar"]:
        profile = scaled_fixed_costs(profile, p["scale"])
        buffer_pages = similar_buffer_pages(profile, p["scale"])
    db = build(partitions, profile, PAGE_SIZE, p["backend"], buffer_pages=buffer_pages)
    packet_bytes = get_profile(profile).packet_bytes

    def log(phases: list[dict]) -> list[dict]:
        return audit_log(phases, packet_bytes, PAGE_SIZE) if MODELS_AUDIT_LOG else phases

    try:
        db.create_table("t", generate("tandem", rows, seed=p["seed"]),
                        partition="range_uniform(unique2)")
        out = {}
        for query, text in statements(rows).items():
            out[query] = measure(db, text, drop="result" if "CREATE" in text else None,
                                 startup="serial", extra_work=log)
        if join:
            db.create_table("t2", generate("tandem", rows, seed=p["seed"]),
                            partition="range_uniform(unique2)")
            out["join"] = measure(db, join_statement(rows), drop="result", startup="serial",
                                  extra_work=log)
        return out
    finally:
        db.close()


def _benchmark(name: str, kind: str, p: Params, progress: Progress) -> list[dict]:
    machines = _machines(p)
    # each machine runs the partition counts it has processors for (VLX up to 16, CLX up to 8)
    plan = [(m, n) for m in machines for n in sorted(p["partitions"])
            if n <= max(MACHINES[m]["partitions"])]
    if not plan:
        raise ExperimentError(f"{name}: no partition count of {p['partitions']} fits the machines "
                              "(VLX: up to 16, CLX: up to 8)")
    progress.start(len(plan))
    rows, first = [], {}
    metric = "speedup" if kind == "f" else "scaleup"
    for machine, n in plan:
        spec = MACHINES[machine]
        size = (max(100, round(spec["f_rows"] * p["scale"])) if kind == "f"
                else max(100, round(spec["g_rows"] * p["scale"])) * n)
        measured = _run_table(machine, n, size, p, join=kind == "f" and machine in JOIN_MACHINES)
        column = f"{machine}_{kind}{n}"
        for query, m in measured.items():
            params = {"machine": machine, "profile": spec["profile"], "partitions": n,
                      "rows": size, "query": query, "scale": p["scale"], "seed": p["seed"],
                      "backend": p["backend"], "similar": p["similar"]}
            rows.append(make_row(name, "", query, column, params, "elapsed", m.modeled_s, "s"))
            rows.append(make_row(name, "", query, column, params, "elapsed", m.wall_s, "s",
                                 clock="wall"))
            first.setdefault((machine, query), (n, m.modeled_s))
            n0, t0 = first[(machine, query)]
            ratio = t0 / m.modeled_s if kind == "f" else m.modeled_s / t0
            ref = "Table 2" if n0 == 2 else ""
            rows.append(make_row(name, ref, query, column, {**params, "baseline_partitions": n0},
                                 metric, ratio, "ratio"))
        progress.advance(f"{machine.upper()} {kind.upper()}{n}")
    return rows


@experiment("tandem.speedup", title="NonStop SQL speedup on fixed-size F tables",
            references=("Table 2",),
            defaults={"scale": 1.0, "machines": ["vlx", "clx"], "partitions": [2, 4, 8, 16],
                      "seed": 1, "backend": "inline", "similar": True},
            quick={"scale": 0.1})
def speedup(p: Params, progress: Progress) -> list[dict]:
    return _benchmark("tandem.speedup", "f", p, progress)


@experiment("tandem.scaleup", title="NonStop SQL batch scaleup on growing G tables",
            references=("Table 2",),
            defaults={"scale": 1.0, "machines": ["vlx", "clx"], "partitions": [2, 4, 8, 16],
                      "seed": 1, "backend": "inline", "similar": True},
            quick={"scale": 0.1})
def scaleup(p: Params, progress: Progress) -> list[dict]:
    return _benchmark("tandem.scaleup", "g", p, progress)
