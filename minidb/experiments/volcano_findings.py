"""The Volcano paper's findings (Graefe and Thakkar 1992), as checks over experiment rows.

Every bar comes from the paper's own numbers (``datasets/reference/volcano_*.csv``), was set
before any Volcano experiment ran, and says where it comes from: the factor of 2 of ``minidb
report`` around a number the text gives (``FACTOR_2``), or the spread of the paper's own ratios
widened by ``SPREAD_MARGIN``. A claim whose cause the model leaves out is reported as not
checked, with the reason. ``tests/test_volcano_findings.py`` shows every finding that can be
checked fail on a deliberately broken model.
"""

from __future__ import annotations

from minidb.experiments.findings import (
    FACTOR_2,
    NEAR_LINEAR,
    SPREAD_MARGIN,
    Missing,
    _get,
    _values,
    finding,
    spread_bar,
)

# Figure 4 / §5: all buffer operations held the pool lock 150-180 s in the initial software.
LOCK_HOLD_RANGE = (150 * (1 - SPREAD_MARGIN), 180 * (1 + SPREAD_MARGIN))      # 135-198 s
# Table II, simple unfix: total wait 452 s at 8 disks, 2,062 s at 16 (x4.56).
WAIT_GROWTH_BAR = (2062 / 452) / FACTOR_2                                     # >= 2.28
# §3.3 and §7: 379 s at 8 disks; "above 5 minutes" at 16: a speedup under 379 / 300.
INITIAL_STALL_BAR = 379 / 300 * (1 + SPREAD_MARGIN)                           # <= 1.39
# Table II: simple / procedure [1] elapsed at 16 disks, 242.62 / 93.69 = 2.59.
GROUPING_GAIN_BAR = (242.62 / 93.69) / FACTOR_2                               # >= 1.29
# Table II: simple / procedure [1] total wait, 452 / 0.738 = 612 (8 disks), 2062 / 3.168 = 651.
WAIT_CUT_BAR = {8: (452 / 0.738) / FACTOR_2, 16: (2062 / 3.168) / FACTOR_2}  # >= 306, 325
# Table II: procedure [1] from 8 to 16 disks, 168.00 / 93.69 = 1.79.
GROUPED_SPEEDUP_BAR = (168.00 / 93.69) * (1 - SPREAD_MARGIN)                  # >= 1.61
# Table II: the four grouped schemes' largest over smallest time, 171.76 / 166.10 at 8 disks
# and 93.69 / 90.34 at 16.
VARIANT_SPREAD_BAR = max(171.76 / 166.10, 93.69 / 90.34) * (1 + SPREAD_MARGIN)  # <= 1.14
# Table III: two pools over one, 169.03 / 166.10 (8 disks) and 89.96 / 90.34 (16 disks).
TWO_POOLS_BAR = spread_bar((169.03 / 166.10, 89.96 / 90.34))                  # 0.90-1.12
# Table I: doubled memory over the original, 261.364 / 258.31 and 247.25 / 242.62.
BIGGER_BUFFER_BAR = spread_bar((261.364 / 258.31, 247.25 / 242.62))           # 0.91-1.12
# §4.2, Figure 3: at first the alignments made no "appreciable" difference; §6.3 calls the ~5%
# of Table V "significant". Bar: the slowest alignment at most half that, 2.5%, over the fastest.
ALIGN_FIRST_BAR = 1 + 5 / FACTOR_2 / 100                                      # <= 1.025
# §6.3, Table V: 4-byte alignment beats 16-byte by "close to 5 per cent" on average.
ALIGN_GAIN_BAR = (5 / FACTOR_2, 5 * FACTOR_2)                                 # 2.5-10 %
# §7, Figure 7: 3.6 times faster at 16 disks after tuning; "slightly more than 2" from 2 to 8
# disks (Figure 1 and Table V: 1346 / 623.42 = 2.16 at 2 disks, 379 / 158.12 = 2.40 at 8).
TUNING_GAIN_16_BAR = (3.6 / FACTOR_2, 3.6 * FACTOR_2)                         # 1.8-7.2
TUNING_GAIN_LOW_BAR = spread_bar((1346 / 623.42, 379 / 158.12))               # 1.94-2.64

# §6.1: "In the following experiments, we used 2 ms delays", and at such delays "bus contention
# was almost entirely removed": the flush's pool-lock wait at 2 ms is at most SPREAD_MARGIN of the
# unstaggered one (the paper prints no number for Figure 6).
STAGGER_CHOSEN_MS = 2
STAGGER_CONTENTION_BAR = SPREAD_MARGIN                                        # <= 10 %
# §6.1: the delays "have hardly any effect on the elapsed times". The one measured pair around the
# step: Table III's two pools (before §6.1) and Table IV's affinity off (the same software with
# the 2 ms delays, before §6.2 turned affinity on), 164.46 / 169.03 at 8 disks, 88.86 / 89.96 at 16.
STAGGER_ELAPSED_BAR = spread_bar((164.46 / 169.03, 88.86 / 89.96))            # 0.88-1.09

MODELS_UNEVEN_POOLS = False
"""Whether an uneven load over buffer pools is modeled. It is not: every pool gets the calls of
its devices and nothing else, so §5.1's slight loss with 16 pools has no cause in the model."""


def _disk(column: str) -> int:
    return int(column.split("_")[1])


def _by_disks(values: dict, row: str) -> dict[int, float]:
    out = {_disk(c): v for (r, c), v in values.items() if r == row and c.startswith("disks_")
           and c.split("_")[1].isdigit()}
    if not out:
        raise Missing(f"no rows for {row}")
    return out


@finding("volcano.pool_lock_is_the_barrier", "volcano", "§3.3, §5, Figures 1 and 4",
         "In the initial software all buffer calls together hold the pool lock for "
         f"{LOCK_HOLD_RANGE[0]:.0f}-{LOCK_HOLD_RANGE[1]:.0f} s (the paper: 150-180 s), which no "
         "number of disks can beat, and the wait for it grows sharply with parallelism (at "
         f"least x{WAIT_GROWTH_BAR:.2f} from 8 to 16 disks; Table II's simple scheme: x4.56)",
         "volcano.initial")
def _barrier(rows):
    hold = _by_disks(_values(rows, "volcano.initial", "lock_hold_time"), "sort_initial")
    wait = _by_disks(_values(rows, "volcano.initial", "lock_wait_time"), "sort_initial")
    elapsed = _by_disks(_values(rows, "volcano.initial", "elapsed"), "sort_initial")
    if 8 not in wait or 16 not in wait:
        raise Missing("needs 8 and 16 disks")
    growth = wait[16] / wait[8] if wait[8] else float("inf")
    ok = (LOCK_HOLD_RANGE[0] <= hold[16] <= LOCK_HOLD_RANGE[1] and elapsed[16] >= hold[16]
          and growth >= WAIT_GROWTH_BAR)
    return ok, (f"total hold {hold[16]:.0f} s at 16 disks, elapsed {elapsed[16]:.0f} s, wait "
                f"{wait[8]:.0f} -> {wait[16]:.0f} s (x{growth:.2f})")


@finding("volcano.initial_speedup_stalls", "volcano", "§3.3, §7, Figures 1 and 7",
         "The initial software gains little beyond 8 disks: 16 disks are at most "
         f"{INITIAL_STALL_BAR:.2f} times as fast as 8 (the paper: 379 s at 8 disks, above 300 s "
         "at 16)", "volcano.initial")
def _stall(rows):
    elapsed = _by_disks(_values(rows, "volcano.initial", "elapsed"), "sort_initial")
    if 8 not in elapsed or 16 not in elapsed:
        raise Missing("needs 8 and 16 disks")
    speedup = elapsed[8] / elapsed[16]
    return speedup <= INITIAL_STALL_BAR, f"8 -> 16 disks: speedup {speedup:.2f}"


@finding("volcano.larger_clusters_help", "volcano", "§4.1, Figure 2",
         "Larger clusters (the unit of I/O and buffering) make the sort faster at 8 and at 16 "
         "disks", "volcano.clusters")
def _clusters(rows):
    values = _values(rows, "volcano.clusters", "elapsed")
    sizes = sorted({int(r.split("_")[1][:-2]) for r, _ in values if r.startswith("cluster_")
                    and r.endswith("kb")})
    if len(sizes) < 2:
        raise Missing("needs two cluster sizes")
    small, large = f"cluster_{sizes[0]}kb", f"cluster_{sizes[-1]}kb"
    a, b = _by_disks(values, small), _by_disks(values, large)
    common = sorted(set(a) & set(b))
    if not common:
        raise Missing("no disk count run with both sizes")
    ok = all(b[d] < a[d] for d in common)
    return ok, ", ".join(f"{d} disks: {a[d]:.0f} s -> {b[d]:.0f} s" for d in common)


@finding("volcano.bigger_buffer_no_faster", "volcano", "§4.3, Table I",
         "Twice the memory does not make the sort faster, since one merge level suffices "
         "either way: the time changes by a factor within "
         f"{BIGGER_BUFFER_BAR[0]:.2f}-{BIGGER_BUFFER_BAR[1]:.2f} (the paper: 1-2% slower) and "
         "the merge levels stay the same", "volcano.buffer_size")
def _bigger_buffer(rows):
    elapsed = _values(rows, "volcano.buffer_size", "elapsed")
    levels = _values(rows, "volcano.buffer_size", "merge_levels")
    small, big = (_by_disks(elapsed, "sort12_io3_work15_mb"),
                  _by_disks(elapsed, "sort24_io6_work30_mb"))
    ratios = {d: big[d] / small[d] for d in small if d in big}
    if not ratios:
        raise Missing("no disk count run with both memory sizes")
    same_levels = all(_get(levels, "sort12_io3_work15_mb", f"disks_{d}")
                      == _get(levels, "sort24_io6_work30_mb", f"disks_{d}") for d in ratios)
    ok = same_levels and all(BIGGER_BUFFER_BAR[0] <= r <= BIGGER_BUFFER_BAR[1]
                             for r in ratios.values())
    return ok, ", ".join(f"{d} disks x{r:.3f}" for d, r in ratios.items()) + (
        "" if same_levels else "; merge levels differ")


def _table2(rows, metric: str) -> dict:
    return _values(rows, "volcano.unfix", metric)


@finding("volcano.grouped_unfix_breaks_barrier", "volcano", "§5.2, Table II",
         "Gathering unfix calls removes the bottleneck: at 16 disks the sort is at least "
         f"{GROUPING_GAIN_BAR:.2f} times faster than with one call per record (the paper: "
         f"2.59), the lock wait shrinks at least {WAIT_CUT_BAR[8]:.0f}-fold at 8 disks and "
         f"{WAIT_CUT_BAR[16]:.0f}-fold at 16 (the paper: 612 and 651), and from 8 to 16 disks "
         f"the grouped sort speeds up at least {GROUPED_SPEEDUP_BAR:.2f} times (the paper: 1.79)",
         "volcano.unfix")
def _grouping(rows):
    t, w = _table2(rows, "elapsed"), _table2(rows, "lock_wait_time")
    gain = _get(t, "simple", "disks_16_time") / _get(t, "procedure_1", "disks_16_time")
    cuts = {d: _get(w, "simple", f"disks_{d}_total_wait")
            / max(1e-12, _get(w, "procedure_1", f"disks_{d}_total_wait")) for d in (8, 16)}
    speedup = _get(t, "procedure_1", "disks_8_time") / _get(t, "procedure_1", "disks_16_time")
    ok = (gain >= GROUPING_GAIN_BAR and all(cuts[d] >= WAIT_CUT_BAR[d] for d in cuts)
          and speedup >= GROUPED_SPEEDUP_BAR)
    return ok, (f"gain x{gain:.2f} at 16 disks; wait cut x{cuts[8]:.0f} (8), x{cuts[16]:.0f} (16);"
                f" grouped speedup 8 -> 16 x{speedup:.2f}")


@finding("volcano.unfix_variants_alike", "volcano", "§5.2, Table II",
         "The four grouped schemes (procedure or macro, 1-16 entries) take about the same time "
         f"(largest over smallest at most {VARIANT_SPREAD_BAR:.2f}; the paper: 1.034 and 1.037), "
         "the macro a little less than the procedure", "volcano.unfix")
def _variants(rows):
    t = _table2(rows, "elapsed")
    details, ok = [], True
    for d in (8, 16):
        times = [_get(t, s, f"disks_{d}_time") for s in ("procedure_1", "macro_1", "macro_4",
                                                          "macro_16")]
        spread = max(times) / min(times)
        ok &= spread <= VARIANT_SPREAD_BAR and times[1] <= times[0]
        details.append(f"{d} disks: spread {spread:.3f}, macro {times[1]:.1f} s vs procedure "
                       f"{times[0]:.1f} s")
    return ok, "; ".join(details)


@finding("volcano.pools_cut_simple_wait", "volcano", "§5.1, Figure 5",
         "With one unfix call per record, more buffer pools cut the lock wait and the elapsed "
         "time while the total hold stays the same (within "
         f"{SPREAD_MARGIN:.0%})", "volcano.pools_simple")
def _pools_simple(rows):
    t = _values(rows, "volcano.pools_simple", "elapsed")
    w = _values(rows, "volcano.pools_simple", "lock_wait_time")
    h = _values(rows, "volcano.pools_simple", "lock_hold_time")
    counts = sorted({int(r.split("_")[1]) for r, _ in t})
    if len(counts) < 2:
        raise Missing("needs at least two pool counts")
    column = max({c for _, c in t}, key=_disk)
    times = [_get(t, f"pools_{k}", column) for k in counts]
    waits = [_get(w, f"pools_{k}", column) for k in counts]
    holds = [_get(h, f"pools_{k}", column) for k in counts]
    ok = (times[1] < times[0] and all(b < a for a, b in zip(waits, waits[1:], strict=False))
          and max(holds) / min(holds) <= 1 + SPREAD_MARGIN)
    return ok, ", ".join(f"{k} pools: {x:.0f} s, wait {y:.0f} s" for k, x, y in
                         zip(counts, times, waits, strict=False))


@finding("volcano.sixteen_pools_slightly_worse", "volcano", "§5.1, Figure 5",
         "Sixteen pools are slightly slower than eight (an uneven load over many pools)",
         "volcano.pools_simple")
def _sixteen(rows):
    t = _values(rows, "volcano.pools_simple", "elapsed")
    column = max({c for _, c in t}, key=_disk)
    seen = ", ".join(f"{r.replace('_', ' ')} {v:.1f} s" for (r, c), v in sorted(
        t.items(), key=lambda kv: int(kv[0][0].split("_")[1])) if c == column)
    if not MODELS_UNEVEN_POOLS:
        raise Missing(f"the model spreads calls evenly over the pools their devices map to, so "
                      f"the cause the paper gives is not in it; for information: {seen}")
    return _get(t, "pools_16", column) > _get(t, "pools_8", column), seen


@finding("volcano.two_pools_enough", "volcano", "§5.3, §7, Table III",
         "Once unfixes are grouped, a second pool changes the time by a factor within "
         f"{TWO_POOLS_BAR[0]:.2f}-{TWO_POOLS_BAR[1]:.2f} (the paper: 1.018 and 0.996) and "
         "lowers the lock wait", "volcano.pools")
def _two_pools(rows):
    t = _values(rows, "volcano.pools", "elapsed")
    w = _values(rows, "volcano.pools", "lock_wait_time")
    details, ok = [], True
    for d in (8, 16):
        ratio = _get(t, "pools_2", f"disks_{d}_time") / _get(t, "pools_1", f"disks_{d}_time")
        w1, w2 = (_get(w, "pools_1", f"disks_{d}_total_wait"),
                  _get(w, "pools_2", f"disks_{d}_total_wait"))
        ok &= TWO_POOLS_BAR[0] <= ratio <= TWO_POOLS_BAR[1] and w2 < w1
        details.append(f"{d} disks: x{ratio:.3f}, wait {w1:.2f} -> {w2:.2f} s")
    return ok, "; ".join(details)


def _cause_not_in_model(reason: str) -> tuple[bool, str]:
    """For a claim whose cause minidb's model leaves out: reported as not checked, with why."""
    raise Missing(reason)


@finding("volcano.alignment_cancels_at_first", "volcano", "§4.2, Figure 3",
         "Aligning records to 1, 4 or 16 bytes makes no appreciable difference at first (with "
         "32 KB clusters, one pool, one unfix call per record): at each disk count the slowest "
         f"alignment is at most {ALIGN_FIRST_BAR:.3f} times the fastest (half the ~5% §6.3 calls "
         "significant). The paper's reason is two effects cancelling, the padding's extra I/O "
         "and faster aligned access; the model prices no faster access to aligned records, so in "
         "it the padding alone must "
         "stay small beside the rest of the work", "volcano.alignment")
def _align_first(rows):
    t = _values(rows, "volcano.alignment", "elapsed")
    by_disks: dict[int, dict[str, float]] = {}
    for (r, c), v in t.items():
        by_disks.setdefault(_disk(c), {})[r] = v
    if not by_disks or any(len(v) < 2 for v in by_disks.values()):
        raise Missing("needs at least two alignments at a disk count")
    ok, details = True, []
    for d, times in sorted(by_disks.items()):
        spread = max(times.values()) / min(times.values())
        ok &= spread <= ALIGN_FIRST_BAR
        details.append(f"{d} disks: " + ", ".join(
            f"{r.split('_')[1]} B {v:.1f} s" for r, v in sorted(
                times.items(), key=lambda kv: int(kv[0].split("_")[1])))
            + f" (x{spread:.3f})")
    return ok, "; ".join(details)


def _by_delay(values: dict) -> dict[float, dict[int, float]]:
    """{delay in ms: {disks: value}} from the rows ``delay_<ms>ms`` x ``disks_<n>``."""
    out: dict[float, dict[int, float]] = {}
    for (r, c), v in values.items():
        if r.startswith("delay_") and r.endswith("ms"):
            out.setdefault(float(r[len("delay_"):-2]), {})[_disk(c)] = v
    return out


@finding("volcano.staggering_flushes_little_effect", "volcano", "§6.1, Figure 6",
         "Delaying each process's flush by its number times a few milliseconds removes the "
         "contention peak at the start of the flush (with the paper's 2 ms step the flush's "
         f"pool-lock wait is at most {STAGGER_CONTENTION_BAR:.0%} of the unstaggered one, and "
         "longer delays do not bring it back) and barely changes the elapsed time (every delay "
         f"within {STAGGER_ELAPSED_BAR[0]:.2f}-{STAGGER_ELAPSED_BAR[1]:.2f} of the unstaggered "
         "time; Table III to Table IV, where the 2 ms delays came in: 0.973 and 0.988)",
         "volcano.staggering")
def _stagger(rows):
    wait = _by_delay(_values(rows, "volcano.staggering", "flush_lock_wait_time"))
    elapsed = _by_delay(_values(rows, "volcano.staggering", "elapsed"))
    if 0 not in wait or STAGGER_CHOSEN_MS not in wait:
        raise Missing(f"needs the delays 0 and {STAGGER_CHOSEN_MS} ms")
    details, ok = [], True
    for d in sorted(set(wait[0]) & set(wait[STAGGER_CHOSEN_MS])):
        delays = sorted(k for k in wait if d in wait[k] and d in elapsed.get(k, {}))
        waits = [wait[k][d] for k in delays]
        ratios = [elapsed[k][d] / elapsed[0][d] for k in delays]
        removed = wait[0][d] > 0 and (wait[STAGGER_CHOSEN_MS][d]
                                      <= STAGGER_CONTENTION_BAR * wait[0][d])
        ok &= (removed and all(b <= a for a, b in zip(waits, waits[1:], strict=False))
               and all(STAGGER_ELAPSED_BAR[0] <= r <= STAGGER_ELAPSED_BAR[1] for r in ratios))
        details.append(f"{d} disks, delays " + "/".join(f"{k:g}" for k in delays)
                       + " ms: flush lock wait " + "/".join(f"{w * 1e3:.3g}" for w in waits)
                       + " ms, elapsed " + "/".join(f"x{r:.4f}" for r in ratios))
    return ok, "; ".join(details)


# Table IV: without affinity the sort took 164.46 / 163.34 = x1.0069 (8 disks) and
# 88.86 / 88.09 = x1.0087 (16 disks) as long as with it. "Hardly changes": binding never makes the
# sort slower, and what it saves is at most FACTOR_2 times the paper's larger saving. Chosen with
# the cache-refill mechanism, before the first run that had it.
AFFINITY_GAINS = (164.46 / 163.34 - 1, 88.86 / 88.09 - 1)
AFFINITY_BAR = (1.0, 1 + FACTOR_2 * max(AFFINITY_GAINS))                      # 1.000-1.0175


@finding("volcano.affinity_small_effect", "volcano", "§6.2, Table IV",
         "Binding processes to processors hardly changes the sort time: unbound over bound "
         f"within x{AFFINITY_BAR[0]:.3f}-x{AFFINITY_BAR[1]:.4f} at 8 and 16 disks (the paper: "
         "x1.0069 and x1.0087; most context switches come from I/O, and a process that wakes on "
         "another CPU refills its 64 KB cache over the bus)", "volcano.affinity")
def _affinity(rows):
    t = _values(rows, "volcano.affinity", "elapsed")
    off, on = _by_disks(t, "affinity_off"), _by_disks(t, "affinity_on")
    if 8 not in off or 16 not in off or 8 not in on or 16 not in on:
        raise Missing("volcano.affinity needs runs at 8 and 16 disks")
    ratios = {d: off[d] / on[d] for d in (8, 16)}
    if all(r == 1.0 for r in ratios.values()):
        raise Missing("unbound and bound sorts take the same time: the profile prices no cache "
                      "refill (cpu_cache_bytes is 0), so the model has no cause for a difference")
    ok = all(AFFINITY_BAR[0] <= r <= AFFINITY_BAR[1] for r in ratios.values())
    return ok, "; ".join(f"{d} disks: unbound {off[d]:.2f} s, bound {on[d]:.2f} s, "
                         f"x{ratios[d]:.4f}" for d in (8, 16))


def _final(rows) -> tuple[dict[int, float], dict[int, float]]:
    t = _values(rows, "volcano.final", "elapsed")
    return _by_disks(t, "align_16_bytes"), _by_disks(t, "align_4_bytes")


@finding("volcano.align_4_beats_16", "volcano", "§6.3, Table V",
         "At the end, 4-byte alignment beats 16-byte at every degree of parallelism, by "
         f"{ALIGN_GAIN_BAR[0]:.1f}-{ALIGN_GAIN_BAR[1]:.0f}% on average (the paper: close to 5%, "
         "short of the 12% the padding suggests)", "volcano.final")
def _align(rows):
    a16, a4 = _final(rows)
    common = sorted(set(a16) & set(a4))
    if not common:
        raise Missing("no disk count run with both alignments")
    gains = [100 * (a16[d] - a4[d]) / a16[d] for d in common]
    mean = sum(gains) / len(gains)
    ok = all(g > 0 for g in gains) and ALIGN_GAIN_BAR[0] <= mean <= ALIGN_GAIN_BAR[1]
    return ok, f"gain {mean:.1f}% on average (" + ", ".join(
        f"{d}: {g:.1f}%" for d, g in zip(common, gains, strict=False)) + ")"


@finding("volcano.final_speedup_near_linear", "volcano", "§7, Table V, Figure 7",
         f"The tuned sort speeds up near-linearly: parallel efficiency from 2 to 16 disks at "
         f"least {NEAR_LINEAR:.0%} (the paper: 93.15%), and faster at every step",
         "volcano.final")
def _final_speedup(rows):
    _, a4 = _final(rows)
    if 2 not in a4 or 16 not in a4:
        raise Missing("needs 2 and 16 disks")
    efficiency = 2 * a4[2] / (16 * a4[16])
    steps = sorted(a4)
    ok = efficiency >= NEAR_LINEAR and all(a4[b] < a4[a] for a, b in zip(steps, steps[1:], strict=False))
    return ok, f"efficiency {efficiency:.1%}"


@finding("volcano.tuning_gain_at_16", "volcano", "§7, Figure 7",
         f"At 16 disks the tuned software is {TUNING_GAIN_16_BAR[0]:.1f}-"
         f"{TUNING_GAIN_16_BAR[1]:.1f} times faster than the initial one (the paper: about 3.6)",
         "volcano.final")
def _gain16(rows):
    gains = _values(rows, "volcano.final", "improvement_factor")
    gain = _get(gains, "sort_final_vs_initial", "disks_16")
    return TUNING_GAIN_16_BAR[0] <= gain <= TUNING_GAIN_16_BAR[1], f"x{gain:.2f}"


@finding("volcano.tuning_gain_low_parallelism", "volcano", "§7, Figure 7",
         "From 2 to 8 disks tuning gains a little more than a factor of 2 (within "
         f"{TUNING_GAIN_LOW_BAR[0]:.2f}-{TUNING_GAIN_LOW_BAR[1]:.2f}; the paper: 2.16 at 2 "
         "disks, 2.40 at 8), mostly from larger clusters", "volcano.final")
def _gain_low(rows):
    gains = _values(rows, "volcano.final", "improvement_factor")
    low = {_disk(c): v for (r, c), v in gains.items() if r == "sort_final_vs_initial"
           and 2 <= _disk(c) <= 8}
    if not low:
        raise Missing("needs the initial software on 2-8 disks")
    ok = all(TUNING_GAIN_LOW_BAR[0] <= v <= TUNING_GAIN_LOW_BAR[1] for v in low.values())
    return ok, ", ".join(f"{_disk(c)} disks x{v:.2f}" for c, v in sorted(
        ((c, v) for (r, c), v in gains.items() if r == "sort_final_vs_initial"),
        key=lambda x: _disk(x[0])))
