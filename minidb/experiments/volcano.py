"""Volcano's tuning study of parallel sorting on a shared-memory machine (Graefe and Thakkar 1992).

Each experiment is one step of the paper's story (§3-§7), run with minidb's parallel sort
(``minidb.volcano.psort``) and priced on the Sequent Symmetry profile
(``minidb.cost.volcano_model``):

``volcano.initial``      Figure 1 and Figure 4: the initial software (4 KB clusters, one pool,
                         one unfix call per record) on 2-16 disks, with the pool lock's total
                         hold and wait
``volcano.clusters``     Figure 2: larger units of I/O and buffering
``volcano.alignment``    Figure 3: records packed, or aligned to 4 or 16 bytes, with 32 KB clusters
``volcano.buffer_size``  Table I: twice the sort space, I/O buffer and work space
``volcano.unfix``        Table II: the five unfix schemes, lock hold and wait
``volcano.pools_simple`` Figure 5: 1-16 buffer pools, still one unfix call per record
``volcano.pools``        Table III: grouped unfixing with one and two pools
``volcano.staggering``   Figure 6: each process's flush delayed by its number times 0-4 ms;
                         the elapsed time and the pool-lock contention of the flush phase
``volcano.affinity``     Table IV: Figure 6's software with 2 ms delays, processes free to move
                         between CPUs or bound to one (from then on bound: Table V, Figure 7's
                         final software)
``volcano.final``        Table V, §7 and Figure 7: 16- and 4-byte alignment on 2-16 disks, beside
                         the initial software

``backend``: "inline" runs the machine's processes as threads here, "ray" runs the machine in
one Ray worker (its processes threads there); the counts, and so the modeled clock, are the
same. The paper's workload (§3.2): 1,000,000 records of 100 bytes (``scale`` multiplies the count and
the memory, so runs and merge levels stay the paper's); one process per disk (§3.3); 12 MB of
sort space (§3.2) shared by the processes. Every experiment reports the modeled elapsed time,
the total pool-lock hold and wait (sums over processes, as Table II), and the wall-clock time of
minidb's own run beside them. Cells compare with the paper only at ``scale`` 1.

Every step before §6.2 runs unbound, as the paper's did; a process that wakes after an I/O on
another CPU refills its cache over the bus (``minidb.cost.volcano_model``). Of record alignment
(Figure 3, Table V) the model has only the padding side, the bytes and clusters it adds; the
faster access to aligned data it buys is a cache effect, and not in the model.
"""

from __future__ import annotations

import functools

import numpy as np

from minidb.cost.profiles import get_profile
from minidb.cost.volcano_model import SortTime, flush_phase, price
from minidb.errors import MinidbError
from minidb.experiments.registry import ExperimentError, Params, Progress, experiment, make_row
from minidb.volcano.psort import MB, SortRun, SortSetup, parallel_sort
from minidb.volcano.records import sort_records

RECORDS = 1_000_000       # §3.2
SORT_SPACE = 12 * MB      # §3.2: 12 MB of sort space (within 15 MB of I/O buffer)
KB = 1024
INITIAL = {"cluster_bytes": 4 * KB, "alignment": 1, "pools": 1, "unfix": "simple"}
"""The initial software (§3.2-§3.3): 4 KB pages and clusters, packed records (the paper turns
16-byte alignment on only in §4.2), one buffer pool, one unfix call per record."""
TUNED_IO = {"cluster_bytes": 32 * KB, "alignment": 16, "pools": 1, "unfix": "simple"}
"""After §4: 32 KB clusters, 16-byte alignment; the buffer manager still as at first."""
STAGGER = {"cluster_bytes": 32 * KB, "alignment": 16, "pools": 2, "unfix": "macro_1"}
"""At §6.1: Table III's two pools with macro [1] grouped unfixing (§5.3: "in all runs reported
below"), still 16-byte alignment (§6.3 changes it last)."""
FINAL = {"cluster_bytes": 32 * KB, "alignment": 4, "pools": 2, "unfix": "macro_1"}
"""After §6: grouped unfixing (macro, one entry), two pools, 4-byte alignment."""

COMMON = {"scale": 1.0, "seed": 1, "profile": "sequent", "backend": "inline"}
RUNTIME = {"inline": "threads", "ray": "ray"}
"""How each backend runs a sort: inline, the machine's processes are threads of this Python
process; on Ray, the machine is one Ray worker and its processes threads there."""


def _records(p: Params) -> tuple[tuple[int, int, str], int]:
    """The input, named by (rows, seed, runtime): sorts are run, and remembered, by
    ``_sorted``."""
    if not 0 < p["scale"] <= 1:
        raise ExperimentError(f"scale must be above 0 and at most 1 (the paper's file of "
                              f"{RECORDS:,} records), not {p['scale']!r}")
    rows = max(1000, round(RECORDS * p["scale"]))
    return (rows, p["seed"], RUNTIME[p.get("backend", "inline")]), rows


@functools.lru_cache(maxsize=1)
def _input(rows: int, seed: int):
    return sort_records(rows, seed=seed)


@functools.lru_cache(maxsize=256)
def _sorted(data: tuple[int, int, str], setup: SortSetup) -> SortRun:
    """One parallel sort of the input ``data`` names, checked and kept without its output:
    the counts are all that pricing needs, and the same configuration recurs across the
    paper's steps (and across profiles), so each one is sorted once per process."""
    rows, seed, runtime = data
    records = _input(rows, seed)
    run = parallel_sort(records, setup, runtime=runtime)
    out = run.output()
    if (len(out) != len(records) or not run.buffer.balanced()
            or not bool(np.all(out["key"][1:] >= out["key"][:-1]))):
        raise ExperimentError(f"the parallel sort lost or misordered records ({setup})")
    return run.counts_only()


def _setup(p: Params, disks: int, memory: float = 1.0, **config) -> SortSetup:
    space = round(SORT_SPACE * memory * p["scale"])
    try:
        return SortSetup(processes=disks, sort_space_bytes=space, seed=p["seed"], **config)
    except MinidbError as error:  # a configuration the sort cannot run, said in the user's terms
        raise ExperimentError(f"{disks} disks: {error}") from None


def counted_sort(disks: int, scale: float = 1.0, seed: int = 1, memory: float = 1.0,
                 **config) -> SortRun:
    """The counts (no output) of one configuration's sort of the experiments' input, as the
    experiments make it: ``scale`` times the paper's records and sort space, ``memory`` times
    the sort space, ``config`` the rest of ``SortSetup`` (lectures and notebooks use it to look
    inside a step without sorting again)."""
    p = {"scale": scale, "seed": seed}
    data, _ = _records(p)
    return _sorted(data, _setup(p, disks, memory=memory, **config))


def _run(data: tuple[int, int, str], setup: SortSetup, profile: str, affinity: bool = False
         ) -> tuple[SortRun, SortTime]:
    """Sort (or recall) ``setup`` and price it; ``affinity``: processes bound to their CPUs, as
    from §6.2 on (Table IV's second row, Table V, Figure 7's final software)."""
    run = _sorted(data, setup)
    return run, price(run, get_profile(profile), affinity=affinity)


def _rows(name: str, p: Params, reference: str, row: str, disks: int, run: SortRun,
          time: SortTime, setup: SortSetup, columns: str = "plain") -> list[dict]:
    """The elapsed time (modeled and wall), lock hold and wait of one run.

    ``columns``: "plain" names the column ``disks_N`` for the time and ``disks_N_lock`` /
    ``disks_N_wait`` for the lock; "table2" uses Table II's ``disks_N_time`` /
    ``disks_N_total_lock`` / ``disks_N_total_wait``."""
    ref = reference if p["scale"] == 1.0 else ""
    params = {"disks": disks, "records": run.total().records_out,
              "cluster_bytes": setup.cluster_bytes, "alignment": setup.alignment,
              "pools": setup.pools, "unfix": setup.unfix,
              "sort_space_bytes": setup.sort_space_bytes, "scale": p["scale"],
              "seed": p["seed"], "profile": p["profile"], "backend": p["backend"]}
    if columns == "table2":
        time_col, lock_col, wait_col = (f"disks_{disks}_time", f"disks_{disks}_total_lock",
                                        f"disks_{disks}_total_wait")
        lock_ref = ref
    else:
        time_col, lock_col, wait_col = f"disks_{disks}", f"disks_{disks}", f"disks_{disks}"
        lock_ref = ""
    total = run.total()
    calls = run.buffer.counters
    return [
        make_row(name, ref, row, time_col, params, "elapsed", time.elapsed_s, "s"),
        make_row(name, "", row, time_col, params, "elapsed", run.wall_s, "s", clock="wall"),
        make_row(name, lock_ref, row, lock_col, params, "lock_hold_time", time.lock_hold_s, "s"),
        make_row(name, lock_ref, row, wait_col, params, "lock_wait_time", time.lock_wait_s, "s"),
        make_row(name, "", row, f"disks_{disks}", params, "lock_hold_share",
                 time.lock_hold_share, "ratio"),
        make_row(name, "", row, f"disks_{disks}", params, "lock_wait_share",
                 time.lock_wait_share, "ratio"),
        make_row(name, "", row, f"disks_{disks}", params, "unfix_calls",
                 calls.total("unfix"), "count"),
        make_row(name, "", row, f"disks_{disks}", params, "cluster_calls",
                 calls.total("fix") + calls.total("release"), "count"),
        make_row(name, "", row, f"disks_{disks}", params, "merge_levels",
                 max(w.merge_levels for w in run.work), "count"),
        make_row(name, "", row, f"disks_{disks}", params, "bus_bytes", total.bus_bytes, "bytes"),
    ]


def _disks(p: Params, key: str = "disks") -> list[int]:
    disks = sorted(set(p[key]))
    if any(d < 1 or d > 16 for d in disks):
        raise ExperimentError(f"the Sequent of the paper had 16 disks for the experiments; "
                              f"{key} must lie in 1-16, not {p[key]}")
    return disks


@experiment("volcano.initial", title="The initial parallel sort and its pool lock (Figures 1, 4)",
            references=("Figure 1", "Figure 4", "Section 5", "Section 7"),
            defaults={**COMMON, "disks": [2, 4, 8, 12, 16]}, quick={"disks": [2, 8, 16]})
def initial(p: Params, progress: Progress) -> list[dict]:
    name = "volcano.initial"
    disks = _disks(p)
    data, n = _records(p)
    progress.start(len(disks))
    rows, times = [], {}
    ref = "Figure 1" if p["scale"] == 1.0 else ""
    for d in disks:
        setup = _setup(p, d, **INITIAL)
        run, time = _run(data, setup, p["profile"])
        times[d] = time.elapsed_s
        rows += _rows(name, p, "Figure 1", "sort_initial", d, run, time, setup)
        if d == disks[-1]:
            params = rows[-1]["parameters"]
            full = p["scale"] == 1.0
            rows += [
                make_row(name, "Figure 4" if full else "", "buffer_pool_lock", "range_low",
                         params, "total_lock_hold_time", time.lock_hold_s, "s"),
                make_row(name, "Figure 4" if full else "", "buffer_pool_lock", "range_high",
                         params, "total_lock_hold_time", time.lock_hold_s, "s"),
                make_row(name, "Section 5" if full else "", "buffer_unfix_calls", "na", params,
                         "calls", run.buffer.counters.total("unfix"), "count"),
            ]
            if d == 16:
                rows += [
                    make_row(name, "Section 7" if full else "", "sort_initial", "disks_16",
                             params, "elapsed", time.elapsed_s, "s"),
                    make_row(name, "Section 7" if full else "", "sort_initial", "disks_16",
                             params, "throughput", n * 100 / time.elapsed_s / 1e3, "KB/s"),
                ]
        progress.advance(f"{d} disks")
    rows.append(make_row(name, ref, "sort_initial", "curve", {**p, "disks": disks},
                         "elapsed_floor", min(times.values()), "s"))
    if 2 in times and 8 in times:
        rows.append(make_row(name, ref, "sort_initial", "disks_2_to_8", {**p, "disks": disks},
                             "parallel_efficiency", 100 * 2 * times[2] / (8 * times[8]),
                             "percent"))
    return rows


@experiment("volcano.clusters", title="Larger clusters: the unit of I/O and buffering (Figure 2)",
            references=("Figure 2",),
            defaults={**COMMON, "disks": [8, 16], "cluster_kb": [4, 8, 16, 32, 64]},
            quick={"cluster_kb": [4, 32]})
def clusters(p: Params, progress: Progress) -> list[dict]:
    name = "volcano.clusters"
    disks = _disks(p)
    sizes = sorted(set(p["cluster_kb"]))
    if any(k < 4 or k % 4 for k in sizes):
        raise ExperimentError(f"a cluster is a whole number of 4 KB pages; cluster_kb "
                              f"{p['cluster_kb']} is not")
    data, _ = _records(p)
    progress.start(len(disks) * len(sizes))
    rows, at_most = [], {}
    for k in sizes:
        for d in disks:
            setup = _setup(p, d, **{**INITIAL, "cluster_bytes": k * KB})
            run, time = _run(data, setup, p["profile"])
            rows += _rows(name, p, "", f"cluster_{k}kb", d, run, time, setup)
            if d == disks[-1]:
                at_most[k] = (time.elapsed_s, rows[-1]["parameters"])
            progress.advance(f"{k} KB, {d} disks")
    ref = "Figure 2" if p["scale"] == 1.0 and disks[-1] == 16 else ""
    if 4 in at_most:
        rows.append(make_row(name, ref, "cluster_4kb", "curve", at_most[4][1], "elapsed_floor",
                             at_most[4][0], "s"))
    larger = {k: v for k, v in at_most.items() if k > 4}
    if larger:
        best = min(larger, key=lambda k: larger[k][0])
        rows.append(make_row(name, ref, "cluster_larger", "curve", larger[best][1],
                             "elapsed_floor", larger[best][0], "s"))
    return rows


ALIGNMENTS = [1, 4, 16]
"""§4.2: packed records, the machine's 32-bit word, and a 16-byte cache line."""


@experiment("volcano.alignment", title="Record alignment: 1, 4 or 16 bytes (Figure 3)",
            references=("Figure 3",),
            defaults={**COMMON, "disks": [8, 16], "alignments": ALIGNMENTS})
def alignment(p: Params, progress: Progress) -> list[dict]:
    """§4.2 tried the alignments on the software of that moment: 32 KB clusters (§4.1), one
    pool and one unfix call per record. A 100-byte record takes 100 bytes packed or 4-byte
    aligned and 112 bytes 16-byte aligned, so 16-byte alignment moves 12% more clusters; Figure 3
    prints no numbers, only that the differences were not appreciable."""
    name = "volcano.alignment"
    disks = _disks(p)
    aligns = sorted(set(p["alignments"]))
    if any(a not in ALIGNMENTS for a in aligns):
        raise ExperimentError(f"§4.2 tried alignments of {ALIGNMENTS} bytes; alignments "
                              f"{p['alignments']} is not among them")
    data, _ = _records(p)
    progress.start(len(aligns) * len(disks))
    rows = []
    for a in aligns:
        for d in disks:
            setup = _setup(p, d, **{**TUNED_IO, "alignment": a})
            run, time = _run(data, setup, p["profile"])
            rows += _rows(name, p, "", f"align_{a}_bytes", d, run, time, setup)
            progress.advance(f"{a}-byte alignment, {d} disks")
    return rows


@experiment("volcano.buffer_size", title="Twice the memory (Table I)", references=("Table I",),
            defaults={**COMMON, "disks": [8, 16]})
def buffer_size(p: Params, progress: Progress) -> list[dict]:
    name = "volcano.buffer_size"
    disks = _disks(p)
    data, _ = _records(p)
    progress.start(2 * len(disks))
    rows = []
    for row, memory in (("sort12_io3_work15_mb", 1.0), ("sort24_io6_work30_mb", 2.0)):
        for d in disks:
            setup = _setup(p, d, memory=memory, **TUNED_IO)
            run, time = _run(data, setup, p["profile"])
            rows += _rows(name, p, "Table I", row, d, run, time, setup)
            progress.advance(f"{memory:g}x memory, {d} disks")
    return rows


UNFIX_SCHEMES = ["simple", "procedure_1", "macro_1", "macro_4", "macro_16"]


@experiment("volcano.unfix", title="Unfixing records one by one or in groups (Table II)",
            references=("Table II",),
            defaults={**COMMON, "disks": [8, 16], "schemes": UNFIX_SCHEMES})
def unfix(p: Params, progress: Progress) -> list[dict]:
    name = "volcano.unfix"
    disks = _disks(p)
    data, _ = _records(p)
    progress.start(len(p["schemes"]) * len(disks))
    rows = []
    for scheme_name in p["schemes"]:
        for d in disks:
            setup = _setup(p, d, **{**TUNED_IO, "unfix": scheme_name})
            run, time = _run(data, setup, p["profile"])
            rows += _rows(name, p, "Table II", scheme_name, d, run, time, setup, "table2")
            progress.advance(f"{scheme_name}, {d} disks")
    return rows


@experiment("volcano.pools_simple", title="Several buffer pools, one unfix call per record "
            "(Figure 5)", references=("Figure 5",),
            defaults={**COMMON, "disks": [16], "pools": [1, 2, 4, 8, 16]})
def pools_simple(p: Params, progress: Progress) -> list[dict]:
    return _pools("volcano.pools_simple", p, progress, "simple", "")


@experiment("volcano.pools", title="Grouped unfixing with one and two pools (Table III)",
            references=("Table III",),
            defaults={**COMMON, "disks": [8, 16], "pools": [1, 2]})
def pools(p: Params, progress: Progress) -> list[dict]:
    return _pools("volcano.pools", p, progress, "macro_1", "Table III")


def _pools(name: str, p: Params, progress: Progress, unfix_scheme: str,
           reference: str) -> list[dict]:
    disks = _disks(p)
    counts = sorted(set(p["pools"]))
    if any(k < 1 or k > 16 for k in counts):
        raise ExperimentError(f"a device's clusters go to pool device mod pools, and the Sequent "
                              f"had 16 disks; pools must lie in 1-16, not {p['pools']}")
    data, _ = _records(p)
    progress.start(len(counts) * len(disks))
    rows = []
    for k in counts:
        for d in disks:
            setup = _setup(p, d, **{**TUNED_IO, "unfix": unfix_scheme, "pools": k})
            run, time = _run(data, setup, p["profile"])
            rows += _rows(name, p, reference, f"pools_{k}", d, run, time, setup,
                          "table2" if reference else "plain")
            progress.advance(f"{k} pools, {d} disks")
    return rows


@experiment("volcano.staggering", title="Staggering the buffer flushes (Figure 6)",
            references=("Figure 6",),
            defaults={**COMMON, "disks": [8, 16], "delays_ms": [0, 1, 2, 4]},
            quick={"disks": [16]})
def staggering(p: Params, progress: Progress) -> list[dict]:
    """§6.1: process ``p`` starts its flush ``p x delay`` after the processes end (the paper's
    delays reach 4 ms, 15 x 4 = 60 ms for the last process; 2 ms was kept). Each run is priced
    with the flush as its own phase (``flush_phase``): the elapsed time is the sort's plus the
    flush phase, and the flush's pool-lock wait, handoffs and peak of spinners show the
    contention at its start."""
    name = "volcano.staggering"
    disks = _disks(p)
    delays = sorted(set(p["delays_ms"]))
    if any(d < 0 for d in delays):
        raise ExperimentError(f"a flush can only be delayed: delays_ms must be 0 or more, not "
                              f"{p['delays_ms']}")
    data, _ = _records(p)
    profile = get_profile(p["profile"])
    progress.start(len(disks) * len(delays))
    rows = []
    for d in disks:
        for delay in delays:
            setup = _setup(p, d, **STAGGER, flush_stagger_ms=delay)
            run, time = _run(data, setup, p["profile"])
            flush = flush_phase(run, profile)
            params = {"disks": d, "delay_ms": delay, "records": run.total().records_out,
                      **STAGGER, "scale": p["scale"], "seed": p["seed"],
                      "profile": p["profile"], "backend": p["backend"]}
            row, column = f"delay_{delay:g}ms", f"disks_{d}"
            rows += [
                make_row(name, "", row, column, params, "elapsed",
                         time.elapsed_s + flush.length_s, "s"),
                make_row(name, "", row, column, params, "elapsed", run.wall_s, "s",
                         clock="wall"),
                make_row(name, "", row, column, params, "flush_phase_time", flush.length_s, "s"),
                make_row(name, "", row, column, params, "flush_lock_wait_time",
                         flush.lock_wait_s, "s"),
                make_row(name, "", row, column, params, "flush_handoff_time", flush.handoff_s,
                         "s"),
                make_row(name, "", row, column, params, "flush_peak_spinners",
                         flush.peak_spinners, "count"),
                make_row(name, "", row, column, params, "flush_calls",
                         run.buffer.counters.total("flush"), "count"),
                make_row(name, "", row, column, params, "last_flush_delay",
                         max(run.flush_start_ms), "ms"),
                make_row(name, "", row, column, params, "lock_wait_time", time.lock_wait_s, "s"),
            ]
            progress.advance(f"{delay:g} ms, {d} disks")
    return rows


@experiment("volcano.affinity", title="Processor affinity (Table IV)", references=("Table IV",),
            defaults={**COMMON, "disks": [8, 16]})
def affinity(p: Params, progress: Progress) -> list[dict]:
    """§6.2: the software of §6.1 (two pools, macro [1] unfixing, 16-byte alignment, flushes
    staggered by 2 ms) with the processes free to run on any CPU (row ``affinity_off``) and bound
    to one (``affinity_on``, Table V's 16-byte row). Beside the times: the wake-ups that landed
    on another CPU and refilled its cache (``cache_refills``)."""
    from minidb.cost.volcano_model import migrations

    name = "volcano.affinity"
    disks = _disks(p)
    data, _ = _records(p)
    progress.start(2 * len(disks))
    rows = []
    for d in disks:
        setup = _setup(p, d, **STAGGER, flush_stagger_ms=2.0)
        for bound in (False, True):
            run, time = _run(data, setup, p["profile"], affinity=bound)
            row = f"affinity_{'on' if bound else 'off'}"
            rows += _rows(name, p, "Table IV", row, d, run, time, setup)
            rows.append(make_row(name, "", row, f"disks_{d}", rows[-1]["parameters"],
                                 "cache_refills", float(migrations(run, bound).sum()), "count"))
            progress.advance(f"affinity {'on' if bound else 'off'}, {d} disks")
    return rows


@experiment("volcano.final", title="Final performance: alignment, speedup, tuning gain "
            "(Table V, Section 7, Figure 7)", references=("Table V", "Section 7", "Figure 7"),
            defaults={**COMMON, "disks": [2, 4, 8, 12, 16], "initial_disks": [2, 8, 16]})
def final(p: Params, progress: Progress) -> list[dict]:
    name = "volcano.final"
    disks = _disks(p)
    initial_disks = _disks(p, "initial_disks")
    data, n = _records(p)
    progress.start(2 * len(disks) + len(initial_disks))
    rows, times = [], {}
    full = p["scale"] == 1.0
    for alignment in (16, 4):
        for d in disks:
            setup = _setup(p, d, **{**FINAL, "alignment": alignment})
            run, time = _run(data, setup, p["profile"], affinity=True)
            times[(alignment, d)] = time.elapsed_s
            rows += _rows(name, p, "Table V", f"align_{alignment}_bytes", d, run, time, setup)
            progress.advance(f"{alignment}-byte alignment, {d} disks")
    # Figure 7 sets the initial software beside the final one.
    for d in initial_disks:
        setup = _setup(p, d, **INITIAL)
        run, time = _run(data, setup, p["profile"])
        rows += _rows(name, p, "", "sort_initial", d, run, time, setup)
        if (4, d) in times:
            rows.append(make_row(name, "Figure 7" if full and d == 16 else "",
                                 "sort_final_vs_initial", f"disks_{d}", rows[-1]["parameters"],
                                 "improvement_factor", time.elapsed_s / times[(4, d)], "ratio"))
        progress.advance(f"initial software, {d} disks")
    top = disks[-1]
    if (4, top) in times:
        t = times[(4, top)]
        params = {**p, "disks": top, "alignment": 4}
        ref = "Section 7" if full and top == 16 else ""
        data_mb = n * 100 / 1e6
        rows += [
            make_row(name, ref, "sort_final", f"disks_{top}", params, "elapsed", t, "s"),
            make_row(name, ref, "sort_final", f"disks_{top}", params, "throughput",
                     data_mb / t, "MB/s"),
            # §7's two utilizations, computed the way the paper computes them
            make_row(name, ref, "sort_final", f"disks_{top}", params,
                     "disk_bandwidth_utilization", 100 * 4 * data_mb / t / top / 1.8, "percent"),
            make_row(name, ref, "sort_final", f"disks_{top}", params,
                     "bus_bandwidth_utilization", 100 * 7 * data_mb / t / 53, "percent"),
        ]
        if (4, 2) in times:
            rows.append(make_row(name, ref, "sort_final", f"disks_2_to_{top}", params,
                                 "parallel_efficiency", 100 * 2 * times[(4, 2)] / (top * t),
                                 "percent"))
    both = [d for d in disks if (4, d) in times and (16, d) in times]
    if both:
        gains = [100 * (times[(16, d)] - times[(4, d)]) / times[(16, d)] for d in both]
        rows.append(make_row(name, "Table V" if full and len(both) == 5 else "",
                             "align_4_vs_16_bytes", "all_disks", {**p, "disks": both},
                             "improvement", sum(gains) / len(gains), "percent"))
    return rows
