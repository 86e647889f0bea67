"""Transfers under NonStop SQL's access modes: ``ingres.locking``.

NonStop SQL lets a query choose how it locks (Englert et al. 1989, Section 2): BROWSE (no locks,
dirty reads allowed), STABLE (a row is locked while it is read) or REPEATABLE (read locks and
scanned key ranges held to commit). This experiment runs ``threads`` threads, each doing
``transfers`` transfer transactions on one ``minidb`` database with the lock manager of
``minidb.txn.locks``: read the balances of two accounts, then write both back (one minus the
amount, the other plus). ``hot`` accounts of ``accounts`` receive every transfer at the
``high`` contention level; at ``low`` all accounts are used. A transaction that is a deadlock
victim, or times out, is retried.

Reported per access mode and contention level: commits, deadlocks, lock timeouts, lock waits,
lock requests, and ``money_lost``, the change of the sum of all balances (transfers keep it, so
anything but 0 is the work of lost updates: a read-then-write under BROWSE or STABLE may
overwrite another transaction's committed change), and wall time. No paper cell: the paper gives
no such measurement; these are counts of what the locking did. It is filed under ``ingres``,
beside ``ingres.commit_protocols``: the Distributed INGRES study opens (Stonebraker et al. 1983,
Section 1) by naming distributed concurrency control as an area with many proposed algorithms
and "little quantitative knowledge" of their performance, and the ``tandem`` listing is kept to
the NonStop SQL benchmark's own reproductions. The interleaving is decided by
the threads' scheduling, so the counts vary from run to run (the seed fixes only which accounts
each transfer picks).
"""

from __future__ import annotations

import random
import threading
import time

import pyarrow as pa

from minidb.errors import LockError
from minidb.experiments.registry import ExperimentError, Params, Progress, experiment, make_row

NAME = "ingres.locking"
ACCESS = ("browse", "stable", "repeatable")
LEVELS = ("low", "high")
JOIN_S = 60.0  # a worker slower than this is a bug, said so


def _transfers(db, access: str, pairs: list[tuple[int, int, int]], stats: dict, lock) -> None:
    for a, b, amount in pairs:
        while True:
            tx = db.begin(access, lock_timeout=5.0)
            try:
                (va,), = tx.sql(f"SELECT bal FROM acct WHERE id = {a}").to_pylist()
                (vb,), = tx.sql(f"SELECT bal FROM acct WHERE id = {b}").to_pylist()
                tx.sql(f"UPDATE acct SET bal = {va - amount} WHERE id = {a}")
                tx.sql(f"UPDATE acct SET bal = {vb + amount} WHERE id = {b}")
                tx.commit()
                with lock:
                    stats["commits"] += 1
                break
            except LockError as e:
                with lock:
                    stats["deadlocks" if "deadlock" in str(e) else "timeouts"] += 1


def run_mix(access: str, level: str, p: Params) -> dict[str, float]:
    """One run: a fresh database, the threads, their counts."""
    import minidb

    rng = random.Random(f"{p['seed']}-{level}")
    pool = list(range(1, p["accounts"] + 1))
    if level == "high":
        pool = pool[: p["hot"]]
    work = []
    for _ in range(p["threads"]):
        pairs = []
        for _ in range(p["transfers"]):
            a, b = rng.sample(pool, 2)
            pairs.append((a, b, rng.randint(1, 10)))
        work.append(pairs)
    db = minidb.connect()
    try:
        db.create_table("acct", pa.table({"id": pa.array(range(1, p["accounts"] + 1), pa.int32()),
                                          "bal": pa.array([1000] * p["accounts"], pa.int32())}))
        total = db.sql("SELECT SUM(bal) FROM acct").to_pylist()[0][0]
        stats = {"commits": 0, "deadlocks": 0, "timeouts": 0}
        lock = threading.Lock()
        start = time.perf_counter()
        threads = [threading.Thread(target=_transfers, args=(db, access, pairs, stats, lock),
                                    name=f"transfer-{i}", daemon=True) for i, pairs in enumerate(work)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(JOIN_S)
            if t.is_alive():
                raise ExperimentError(f"{NAME}: a transfer thread ({access}, {level}) ran longer "
                                      f"than {JOIN_S:g} s; the lock manager may be stuck")
        wall = time.perf_counter() - start
        after = db.sql("SELECT SUM(bal) FROM acct").to_pylist()[0][0]
        c = db.locks.counters
        return {**stats, "lock_waits": c.waits, "lock_requests": c.requests,
                "money_lost": total - after, "wall_s": wall}
    finally:
        db.close()


#: the range of each count: real threads run the transfers on one table, so a huge count would
#: run without end (or exhaust memory) instead of failing
LIMITS = {"threads": (1, 64), "transfers": (1, 100_000), "accounts": (2, 1_000_000),
          "hot": (2, 1_000_000)}


@experiment(NAME, title="Transfers under BROWSE, STABLE and REPEATABLE access, low and high contention",
            references=(),
            defaults={"threads": 4, "transfers": 20, "accounts": 100, "hot": 4, "seed": 0,
                      "access": list(ACCESS), "contention": list(LEVELS)},
            quick={"transfers": 8})
def access_modes(p: Params, progress: Progress) -> list[dict]:
    for name, (least, most) in LIMITS.items():
        if not isinstance(p[name], int) or not least <= p[name] <= most:
            raise ExperimentError(f"{NAME}: {name} must be a whole number (at least {least}, at "
                                  f"most {most:,}), not {p[name]!r}")
    if p["hot"] > p["accounts"]:
        raise ExperimentError(f"{NAME}: hot ({p['hot']}) may not exceed accounts ({p['accounts']})")
    modes = [m.lower() for m in p["access"]]
    levels = list(p["contention"])
    bad = [m for m in modes if m not in ACCESS] + [lv for lv in levels if lv not in LEVELS]
    if bad:
        raise ExperimentError(f"{NAME}: unknown {bad[0]!r}; access is some of {', '.join(ACCESS)}, "
                              f"contention some of {', '.join(LEVELS)}")
    progress.start(len(modes) * len(levels))
    rows = []
    for level in levels:
        for access in modes:
            out = run_mix(access, level, p)
            params = {k: p[k] for k in ("threads", "transfers", "accounts", "hot", "seed")}
            params.update(access=access, contention=level)
            for metric, value in out.items():
                wall = metric == "wall_s"
                rows.append(make_row(NAME, "", f"{access}_{level}", access, params, metric, value,
                                     "s" if wall else "count", clock="wall"))
            progress.advance(f"{access} {level}")
    return rows
