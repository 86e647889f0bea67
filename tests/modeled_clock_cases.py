"""Representative statements and experiments whose counters and modeled times are pinned.

The modeled clock (every counter the cost model reads: pages read and written, sequential and
random I/Os, buffer hits and misses, tuples, batches, messages, and the modeled seconds computed
from them) must not change when the engine gets faster in wall time. ``measure()`` runs a few
statements on one node and on an inline cluster, and a few experiments, and returns every
number they count; ``tests/data/modeled_clock_pinned.json`` holds what the code gave when the
numbers were pinned (issue 17, before the scan path was made faster), and
``tests/test_modeled_clock_pinned.py`` compares. Regenerate the file only for a change that is
*meant* to change the modeled clock:

    PYTHONPATH=. .venv/bin/python tests/modeled_clock_cases.py > tests/data/modeled_clock_pinned.json
"""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import pyarrow as pa

import minidb
from minidb.datagen import wisconsin
from minidb.experiments import run_experiment

ROWS = 20_000

#: statements run on one node, in this order (later ones see what earlier ones changed)
SINGLE_NODE = [
    "SELECT * FROM wisc WHERE unique2 BETWEEN 0 AND 199",
    "SELECT onePercent, MIN(unique3) AS mn, SUM(unique3) AS sm, COUNT(*) AS c FROM wisc GROUP BY onePercent",
    "SELECT COUNT(*), MIN(unique1), MAX(stringu1), AVG(unique2) FROM wisc",
    "SELECT ten, MAX(stringu1), SUM(unique1) FROM wisc WHERE unique1 < 5000 GROUP BY ten",
    "SELECT unique1, stringu1 FROM wisc ORDER BY stringu1 LIMIT 10",
    "SELECT COUNT(*) FROM wisc a JOIN wisc2 b ON a.unique1 = b.unique1 WHERE b.unique2 < 2000",
    "SELECT * FROM wisc WHERE unique1 BETWEEN 100 AND 299",  # through the index on unique1
    "SELECT * FROM small WHERE unique2 < 50",  # fits the pool: kept, then hits
    "SELECT * FROM small WHERE unique2 < 50",
    "UPDATE wisc SET ten = 3 WHERE unique2 < 1000",
    "SELECT ten, COUNT(*) FROM wisc GROUP BY ten",
    "DELETE FROM wisc WHERE unique2 BETWEEN 5000 AND 5999",
    "SELECT COUNT(*), SUM(unique3) FROM wisc",
    "SELECT g, COUNT(*), SUM(v), MIN(v), MIN(s) FROM nulls GROUP BY g",
]

PARALLEL = [
    "SELECT * FROM wisc WHERE unique2 BETWEEN 0 AND 199",
    "SELECT onePercent, MIN(unique3), SUM(unique3), COUNT(*) FROM wisc GROUP BY onePercent",
    "SELECT COUNT(*) FROM wisc a JOIN wisc2 b ON a.unique1 = b.unique1 WHERE b.unique2 < 2000",
]

EXPERIMENTS = [
    ("gamma.selection", {"sizes": [1000, 10_000], "systems": ["gamma", "teradata"]}),
    ("gamma.selection_speedup", {"nodes": [1, 2]}),
]


def _nulls_table() -> pa.Table:
    rng = np.random.default_rng(3)
    n = 3000
    g = rng.integers(0, 40, n)
    v = rng.integers(-10**6, 10**6, n)
    s = np.array([f"s{x:05d}" for x in rng.integers(0, 10**5, n)])
    return pa.table({
        "g": pa.array(g, mask=rng.random(n) < 0.1),
        "v": pa.array(v, mask=rng.random(n) < 0.2),
        "s": pa.array(s, mask=rng.random(n) < 0.2),
    })


def _digest(result) -> str:
    """A fingerprint of the result tuples (in sorted order), so that the pinned runs also check
    that a faster path returns the same answers."""
    rows = sorted(result.to_pylist(), key=repr) if result.kind == "select" else []
    return hashlib.sha1(repr(rows).encode()).hexdigest()


def _counters(counters: dict) -> dict:
    return {k: (int(v) if isinstance(v, int | np.integer) else float(v)) for k, v in sorted(counters.items())}


def single_node() -> list[dict]:
    out = []
    with minidb.connect(page_size=4096, buffer_pages=64, memory_pages=48) as db:
        db.create_table("wisc", wisconsin(ROWS, seed=0))
        db.create_table("wisc2", wisconsin(ROWS, seed=1))
        db.create_table("small", wisconsin(300, seed=2))
        db.create_table("nulls", _nulls_table())
        db.create_index("wisc", "unique1")
        for sql in SINGLE_NODE:
            r = db.sql(sql)
            out.append({"sql": sql, "rows": int(r.rows), "digest": _digest(r),
                        "counters": _counters(r.counters)})
    return out


def parallel() -> list[dict]:
    out = []
    with minidb.connect(nodes=4, page_size=4096, profile="gamma") as db:
        db.create_table("wisc", wisconsin(ROWS, seed=0), partition="hash(unique1)")
        db.create_table("wisc2", wisconsin(ROWS, seed=1), partition="round_robin")
        for sql in PARALLEL:
            r = db.sql(sql)
            out.append({"sql": sql, "rows": int(r.rows), "digest": _digest(r),
                        "modeled_s": float(r.modeled_s),
                        "counters": _counters(r.counters)})
    return out


def experiments() -> list[dict]:
    out = []
    for name, params in EXPERIMENTS:
        for row in run_experiment(name, **params):
            if row.get("clock") != "modeled":  # wall-clock rows vary from run to run
                continue
            out.append({"experiment": name, "row": row["row"], "column": row["column"],
                        "metric": row["metric"], "value": float(row["value"])})
    return out


def measure() -> dict:
    return {"single_node": single_node(), "parallel": parallel(), "experiments": experiments()}


if __name__ == "__main__":
    json.dump(measure(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
