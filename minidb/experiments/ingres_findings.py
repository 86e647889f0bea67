"""The Distributed INGRES paper's findings (Stonebraker et al. 1983, §3-§5), as checks over rows.

Every bar comes from the paper's own numbers (``datasets/reference/ingres_*.csv``): the report's
factor of 2 around a percentage or a ratio the text states (``FACTOR_2``), the spread of the paper's own
ratios widened by ``SPREAD_MARGIN``, or an ordering its tables show. ``tests/test_ingres.py``
shows each finding pass on the paper's numbers and fail on a deliberately broken profile (or
broken rows).
"""

from __future__ import annotations

from minidb.experiments.findings import FACTOR_2, Missing, _get, _values, finding, spread_bar

# §3: "Distributed INGRES is about 20 percent slower than normal INGRES when run on a local data
# base" (Table 1: 26:57 against 22:34).
LOCAL_SLOWDOWN_BAR = (0.20 / FACTOR_2, 0.20 * FACTOR_2)                       # 10-40 %
# §4 and §5: "about the same speed" on the retrieve and the join: the paper's own gaps are
# 2:05 / 2:03 and 10:34 / 9:37; the larger, widened, bounds the model's.
LOCAL_SAME_BAR = spread_bar((125 / 123, 634 / 577))[1]                        # <= 1.21
# §3: "the benchmark finishes respectively 25 and 40 percent faster" with 2 and 3 sites
# (Table 1: the slowest site, 16:46 and 13:34, against normal INGRES's 22:34).
SITES_FASTER_BAR = {2: (0.25 / FACTOR_2, 0.25 * FACTOR_2), 3: (0.40 / FACTOR_2, 0.40 * FACTOR_2)}
# §4: with two sites "the maximum improvement possible ... is about 25 percent"; the 2-site
# retrieve may not beat the local data base by more than that.
TWO_SITE_LIMIT = 1 - 0.25
# §3, §4: total CPU (the n*780 rows, user + system) stays constant from 2 to 3 sites: Table 1
# 15:39 / 15:29, Table 3 2:32 / 2:34, Table 4 10:59 / 10:28.
CPU_CONSTANT_BAR = spread_bar(((669 + 270) / (631 + 298), (126 + 26) / (126 + 28),
                               (594 + 65) / (568 + 60)))                      # 0.89-1.15
# §3: "Distributed INGRES on a one machine foreign data base is about 10 percent slower than on
# a local data base"; §4-§5: the foreign retrieve and join are slower too (2:54 > 2:05,
# 14:32 > 10:34).
FOREIGN_SLOWDOWN_BAR = (0.10 / FACTOR_2, 0.10 * FACTOR_2)                     # 5-20 %

# §5: forced to replicate EMP instead of DEPT, the 2- and 3-site joins ran "about 20 times
# slower" (the copy of EMP is a heap, so each DEPT tuple's query scans all of it).
MOVE_EMP_BAR = (20 / FACTOR_2, 20 * FACTOR_2)                                 # 10-40x

TABLES = {"ingres.updates": "Table 1", "ingres.retrieve": "Table 3", "ingres.join": "Table 4"}


def _elapsed(rows, experiment: str) -> dict:
    return _values(rows, experiment, "elapsed")


def _one(values: dict, row: str) -> float:
    return _get(values, row, "elapsed_time")


def _slowest(values: dict, config: str) -> float:
    mine = [v for (r, c), v in values.items() if r.startswith(config) and c == "elapsed_time"]
    if not mine:
        raise Missing(f"no elapsed time for {config}")
    return max(mine)


@finding("ingres.local_db_overhead", "ingres", "§3, §4, §5, Tables 1, 3, 4",
         "On a local data base Distributed INGRES is slower than normal INGRES on the update "
         f"benchmark by {LOCAL_SLOWDOWN_BAR[0]:.0%}-{LOCAL_SLOWDOWN_BAR[1]:.0%} of elapsed time "
         "(the paper: about 20%, from checking the distribution criteria at run time), while "
         f"the retrieve and the join take about the same time (at most x{LOCAL_SAME_BAR:.2f}; "
         "the overhead is amortized over much processing)", "ingres.updates")
def _local_overhead(rows):
    t1 = _elapsed(rows, "ingres.updates")
    slowdown = _one(t1, "dist_local_db_11_780") / _one(t1, "normal_ingres_11_780") - 1
    same = {}
    for exp in ("ingres.retrieve", "ingres.join"):
        t = _elapsed(rows, exp)
        same[exp] = _one(t, "dist_local_db_11_780") / _one(t, "normal_ingres_11_780")
    ok = (LOCAL_SLOWDOWN_BAR[0] <= slowdown <= LOCAL_SLOWDOWN_BAR[1]
          and all(1 / LOCAL_SAME_BAR <= r <= LOCAL_SAME_BAR for r in same.values()))
    return ok, (f"updates {slowdown:+.1%}; retrieve x{same['ingres.retrieve']:.3f}, "
                f"join x{same['ingres.join']:.3f}")


@finding("ingres.updates_finish_sooner_on_more_sites", "ingres", "§3, Table 1",
         "Spread over 2 and 3 sites, each running its own script, the update benchmark finishes "
         f"{SITES_FASTER_BAR[2][0]:.1%}-{SITES_FASTER_BAR[2][1]:.0%} and "
         f"{SITES_FASTER_BAR[3][0]:.0%}-{SITES_FASTER_BAR[3][1]:.0%} sooner than normal INGRES "
         "(the paper: 25 and 40%), and 3 sites sooner than 2", "ingres.updates")
def _sites_faster(rows):
    t1 = _elapsed(rows, "ingres.updates")
    base = _one(t1, "normal_ingres_11_780")
    cut = {n: 1 - _slowest(t1, f"dist_{n}_sites") / base for n in (2, 3)}
    ok = cut[3] > cut[2] and all(lo <= cut[n] <= hi for n, (lo, hi) in SITES_FASTER_BAR.items())
    return ok, f"2 sites {cut[2]:.1%} sooner, 3 sites {cut[3]:.1%} sooner"


@finding("ingres.three_sites_respond_faster", "ingres", "§4, §5, Tables 3 and 4",
         "The retrieve and the join respond faster on 3 sites than on 2; two sites (one of them "
         f"an 11/750) gain at most 25% over the local data base on the retrieve (at least "
         f"x{TWO_SITE_LIMIT:.2f} of its time), and three sites beat the local data base on the join",
         "ingres.retrieve")
def _three_sites(rows):
    t3, t4 = _elapsed(rows, "ingres.retrieve"), _elapsed(rows, "ingres.join")
    r2, r3 = _slowest(t3, "dist_2_sites"), _slowest(t3, "dist_3_sites")
    j2, j3 = _slowest(t4, "dist_2_sites"), _slowest(t4, "dist_3_sites")
    r_local, j_local = _one(t3, "dist_local_db_11_780"), _one(t4, "dist_local_db_11_780")
    ok = r3 < r2 and j3 < j2 and r2 / r_local >= TWO_SITE_LIMIT and j3 < j_local
    return ok, (f"retrieve local {r_local:.0f} s, 2 sites {r2:.0f} s, 3 sites {r3:.0f} s; join "
                f"local {j_local:.0f} s, 2 sites {j2:.0f} s, 3 sites {j3:.0f} s")


@finding("ingres.total_cpu_constant_with_sites", "ingres", "§3, §4, Tables 1, 3, 4",
         "The total CPU time (user + system, 11/750 time scaled by 0.629) stays about constant "
         f"from 2 to 3 sites: 3-site over 2-site within {CPU_CONSTANT_BAR[0]:.2f}-"
         f"{CPU_CONSTANT_BAR[1]:.2f} in all three benchmarks (the paper: 1.01, 0.99, 1.05)",
         "ingres.updates")
def _cpu_constant(rows):
    ratios = {}
    for exp in TABLES:
        u = _values(rows, exp, "user_cpu_time")
        s = _values(rows, exp, "system_cpu_time")
        total = {n: _get(u, f"dist_{n}_sites_total_780_equiv", "user_time")
                 + _get(s, f"dist_{n}_sites_total_780_equiv", "system_time") for n in (2, 3)}
        ratios[exp] = total[3] / total[2]
    lo, hi = CPU_CONSTANT_BAR
    return all(lo <= r <= hi for r in ratios.values()), ", ".join(
        f"{TABLES[e]} x{r:.3f}" for e, r in ratios.items())


@finding("ingres.foreign_db_slower_than_local", "ingres", "§3, §4, §5, Tables 1, 3, 4",
         "A foreign data base (master on an 11/750, data on the 11/780) is slower than a local "
         f"one: the update benchmark by {FOREIGN_SLOWDOWN_BAR[0]:.0%}-"
         f"{FOREIGN_SLOWDOWN_BAR[1]:.0%} of elapsed time (the paper: about 10%), and the "
         "retrieve and the join take longer too", "ingres.updates")
def _foreign_slower(rows):
    ratio = {}
    for exp in TABLES:
        t = _elapsed(rows, exp)
        ratio[exp] = _one(t, "dist_foreign_db_11_750") / _one(t, "dist_local_db_11_780")
    slowdown = ratio["ingres.updates"] - 1
    ok = (FOREIGN_SLOWDOWN_BAR[0] <= slowdown <= FOREIGN_SLOWDOWN_BAR[1]
          and ratio["ingres.retrieve"] > 1 and ratio["ingres.join"] > 1)
    return ok, ", ".join(f"{TABLES[e]} x{r:.3f}" for e, r in ratio.items())


@finding("ingres.moving_emp_is_an_order_slower", "ingres", "§5",
         "Replicating the large relation (EMP) instead of the small one (DEPT) makes the 2- and "
         "3-site joins an order of magnitude slower: EMP-moved over DEPT-moved elapsed time "
         f"within {MOVE_EMP_BAR[0]:.0f}-{MOVE_EMP_BAR[1]:.0f}x on both, a factor of 2 around "
         "the paper's 'about 20 times' (the copy of EMP is a heap, so each DEPT tuple's query "
         "scans all of EMP instead of one hash bucket)", "ingres.join")
def _move_emp(rows):
    v = _values(rows, "ingres.join", "slowdown_factor")
    ratio = {2: _get(v, "move_emp_instead_of_dept", "na"),  # the published cell: 2 sites
             3: _get(v, "move_emp_instead_of_dept", "dist_3_sites")}
    lo, hi = MOVE_EMP_BAR
    return (all(lo <= r <= hi for r in ratio.values()),
            f"2 sites x{ratio[2]:.1f}, 3 sites x{ratio[3]:.1f}")
