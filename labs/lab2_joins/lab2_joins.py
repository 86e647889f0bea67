# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 2: Gamma's joins, memory and overflow
#
# Section 6 of the Gamma paper (DeWitt, Ghandeharizadeh and Schneider, 1988) compares two ways of
# joining on a parallel machine: Gamma's hash join, which builds an in-memory table on the smaller
# relation and probes it with the larger one, and the Teradata's sort-merge join. Hash joining is
# fast while the table fits; when it does not, Gamma's *Simple hash* overflow resolution makes the
# million-tuple joins of Table 3 several times slower than linear, and the paper ends (§7) by
# announcing the *Hybrid* hash join as the fix.
#
# In minidb each join algorithm is a plug-in (`minidb/exec/join/`, base class in `base.py`): the
# planner, the parallel nodes and the experiments run whichever one you name. You will
#
# 1. run one join with every algorithm and check the rows against DuckDB;
# 2. shrink the memory and predict, then measure, what each algorithm writes and reads;
# 3. run Gamma's Table 3 on the modeled machines and read which findings the model meets;
# 4. (assignment) write the Hybrid hash join yourself and run parts 2 and 3 on it.
#
# Read §6 of the paper (up to §6.2.2) first; the lecture notes are
# `lectures/lecture2_joins/lecture2_joins.md`.

# %% [markdown]
# ## Parameters
#
# `SCALE = 1.0` joins 60,000 tuples with 6,000 in Parts A and B and runs Part C at a tenth of
# the paper's sizes: a few minutes in all. The test suite runs it with `MINIDB_LAB_SCALE=0.1`.

# %% tags=["parameters"]
import os

SCALE = float(os.environ.get("MINIDB_LAB_SCALE", "1.0"))  # 1.0 = 60,000 x 6,000 tuples
BACKEND = os.environ.get("MINIDB_LAB_BACKEND", "inline")  # "inline" (one process) or "ray"
SEED = 1

# %%
# ruff: noqa: E402  (a notebook imports in more than one cell)
import duckdb
import hybrid_hash  # noqa: F401  (your assignment, labs/lab2_joins/hybrid_hash.py: registers student_hybrid)
import matplotlib.pyplot as plt

import minidb
from minidb.datagen import generate
from minidb.plugins import names

A_TUPLES = max(2_000, int(60_000 * SCALE))
B_TUPLES = A_TUPLES // 10
a = generate("wisconsin", A_TUPLES, seed=SEED)
bprime = generate("wisconsin", B_TUPLES, seed=SEED + 1)
print(f"A: {A_TUPLES:,} tuples, Bprime: {B_TUPLES:,} tuples")
print("join plug-ins:", ", ".join(names("join")))

# %% [markdown]
# ## Part A: one join, every algorithm
#
# `joinABprime` joins A with Bprime on `unique2` and keeps every column of both. The same
# statement runs once per algorithm, chosen by a hint; DuckDB gives the answer to check against.
# `explain()` shows which join ran, its memory, and what it counted.

# %%
JOIN = "SELECT * FROM a JOIN bprime b ON a.unique2 = b.unique2"
con = duckdb.connect()
con.register("a", a)
con.register("bprime", bprime)
expected = sorted(con.sql(JOIN).fetchall())

db = minidb.connect(memory_pages=400)
db.create_table("a", a)
db.create_table("bprime", bprime)
ALGORITHMS = ["hash_join", "simple_hash", "hybrid_hash", "grace_hash", "sort_merge"]
for algorithm in ALGORITHMS:
    result = db.sql(JOIN, hint=algorithm)
    rows = sorted(tuple(r.values()) for r in result.to_arrow().to_pylist())
    print(f"{algorithm:<12} {len(rows):>6} rows, equal to DuckDB's: {rows == expected}")
print()
plan = db.sql(JOIN, hint="hybrid_hash").explain()
print("\n".join(line for line in plan.splitlines() if "Join" in line or "join" in line))

# %% [markdown]
# ## Part B: less memory
#
# Now the join gets less and less memory, from enough for the whole build input down to a
# twelfth of it. Before you run the cell, predict for each of `simple_hash`, `hybrid_hash` and
# `grace_hash`: how do the pages written and read to temporary files grow as memory shrinks?
# Which one writes something even when everything fits? Which one reads the probe input again
# and again? (§6 describes Simple hash; `partitioned.py`'s docstring, Hybrid and GRACE.)

# %%
def spilled_pages(algorithm: str, memory: int) -> tuple[int, dict]:
    """Pages written and read to temporary files by one join with ``memory`` pages."""
    db.memory_pages = memory
    result = db.sql(JOIN, hint=algorithm)
    picked = {k.split(".")[-1]: v for k, v in result.counters.items()
              if k.split(".")[-1] in ("spill_pages_written", "spill_pages_read", "overflows",
                                      "partitions_spilled", "memory_load_passes")}
    return picked.get("spill_pages_written", 0) + picked.get("spill_pages_read", 0), picked


fits = db.sql(JOIN, hint="hash_join")
build_pages = next(v for k, v in fits.counters.items() if k.endswith(".build_pages"))
memories = sorted({max(6, round(build_pages * f) + 1) for f in (1.2, 1.0, 0.8, 0.6, 0.4, 0.3, 0.2, 0.1)},
                  reverse=True)
print(f"the build input fills {build_pages} pages; memory tried: {memories}")
curves = {}
for algorithm in ("simple_hash", "hybrid_hash", "grace_hash"):
    curves[algorithm] = [spilled_pages(algorithm, m)[0] for m in memories]
    print(f"{algorithm:<12}", curves[algorithm])
print("simple_hash at the least memory:", spilled_pages("simple_hash", memories[-1])[1])

fig, ax = plt.subplots(figsize=(6, 3.5))
for algorithm, pages in curves.items():
    ax.plot([build_pages / m for m in memories], pages, marker="o", label=algorithm)
ax.set_xlabel("build input / memory")
ax.set_ylabel("pages written + read")
ax.legend()
ax.set_title("Temporary-file I/O as memory shrinks")
plt.show()

# %% [markdown]
# **Question B1.** Where do the Simple hash curve and the Hybrid curve part, and why does Simple
# hash climb so much faster? Count what one more overflow costs it (the `overflows` counter,
# and what each pass reads again).
#
# **Question B2.** GRACE writes every partition even with plenty of memory. When would you
# still choose it over Hybrid?

# %% [markdown]
# ## Part C: Gamma's Table 3, on the modeled machines
#
# `gamma.joins` runs the paper's three join queries on Gamma (8 disk and 8 diskless processors,
# joins in Remote mode with Simple hash and 4.8 MB of hash-table memory) and on the Teradata
# (20 AMPs, sort-merge), at a tenth of the paper's sizes with memory and fixed costs scaled
# alike, and prices what minidb did on the two machines' hardware profiles. Compare its cells
# with the paper's, then read the findings: which does the model meet, and what is each failing
# one missing? (The model is a hypothesis: a failed finding names a mechanism to add.)

# %%
from minidb.experiments.findings import check_findings
from minidb.experiments.registry import run_experiment
from minidb.results.reference import load_reference

# a tenth of the paper's sizes; the million-tuple joins (the overflows) only at SCALE = 1
rows = run_experiment("gamma.joins", scale=0.1, backend=BACKEND,
                      sizes=[10_000, 100_000] if SCALE < 1 else [10_000, 100_000, 1_000_000])
paper = {(r["row"], r["column"]): r["value"] for r in load_reference("gamma").to_pylist()
         if r["reference"] == "Table 3"}
print(f"{'query':<22}{'column':<18}{'minidb':>9}{'paper':>9}")
for r in rows:
    if r["reference"] == "Table 3" and r["clock"] == "modeled":
        print(f"{r['row']:<22}{r['column']:<18}{r['value']:>9.1f}{paper[(r['row'], r['column'])]:>9.1f}")
for f in check_findings(rows):
    if f.name.startswith("gamma.join") or f.name.startswith("gamma.teradata"):
        print(f"{f.status.upper():<12} {f.name}: {f.detail[:110]}")

# %% [markdown]
# **Question C1.** Gamma's `joinAselB` reads twice as much as `joinABprime` (all of A and all of
# B) yet runs faster. Run `db.sql(...).explain()` on a parallel database for it: which line
# explains it? (Hint: §6.1, "selection propagation".)
#
# **Question C2.** On the key the Teradata moves only its result (compare `remote_bytes` and
# `spooled_tuples` of the key and non-key rows), and the model makes those joins 27-75% faster
# than on a non-key attribute (the paper measured 14-63%). What does §6 say a Teradata AMP does
# with each tuple it receives, which the key join skips? Which profile constant prices it, and
# why is the cell it comes from shown as "calibration" in `minidb report gamma`?

# %% [markdown]
# ## Part D: the assignment, a Hybrid hash join
#
# Write `run` and `_level` in `labs/lab2_joins/hybrid_hash.py` (the rules, exactly, are in
# `autograder/assignments/lab2/README.md`). The cell below runs the grader's public cases on
# your class, then your join in Part A's query and Part B's curve. Rerun it after each change.

# %%
import importlib

from autograder.local import check_part

importlib.reload(hybrid_hash)
check_part("lab2", "D", hybrid_hash.StudentHybridHashJoin)
db.memory_pages = 400
mine = sorted(tuple(r.values()) for r in db.sql(JOIN, hint="student_hybrid").to_arrow().to_pylist())
print("student_hybrid rows equal DuckDB's:", mine == expected)
print("student_hybrid I/O per memory:", [spilled_pages("student_hybrid", m)[0] for m in memories])
print("hybrid_hash    I/O per memory:", curves["hybrid_hash"])

# %% [markdown]
# **Question D1.** Your join decides which partition to spill only after a whole batch of build
# tuples has been distributed. What would change (rows? counters? memory?) if it checked after
# every tuple instead?

# %%
db.close()
