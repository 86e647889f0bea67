"""The minidb configurations a fuzz round runs on, and how the round's tables are loaded there.

A ``Config`` is one way of running minidb, sampled per round:

* ``single``: ``minidb.connect(page_size, buffer_pages, buffer_policy)``, one node, every table
  stored with the round's *design*: ``heap`` (no index), ``index`` (non-clustered B+ trees on
  some columns), ``clustered`` (``create_index(t, col, clustered=True)``: the file sorted on
  ``col`` under a B+ tree, plus a non-clustered index) or ``hash`` (``organization="hash"``,
  Teradata style, hashed on a key column);
* ``parallel``: ``minidb.connect(nodes=N, timeout=...)`` with N from 1 to 8 inline nodes (the
  ``timeout`` makes even one node the parallel engine), every table declustered with the round's
  partitioner: ``round_robin``, ``hash(col)``, ``range(col: b1, ...)`` or ``range_uniform(col)``
  (Gamma, Section 2.2), on a random column, sometimes with indexes on the fragments;
* ``ray``: the parallel engine on Ray actors (1 to 3 nodes), for a small sample.

The key column of a design or partitioning is chosen at random per table, so float and text keys
are exercised as well as integer ones. Half the rounds also pick the join plug-in
(``connect(join=...)``: grace, hybrid, sort-merge, nested loops ...) and a small ``memory_pages``
budget, so sorts, aggregates and joins spill and take their overflow paths.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import minidb
from minidb.plugins import names

from .grammar import ColumnSpec, TableSpec, sql_literal

PAGE_SIZES = [2048, 2560, 4096, 8192]
BUFFER_PAGES = [16, 24, 64, 1024]
# the smallest budget every join plug-in accepts is 6 pages (sort_merge_join's)
MEMORY_PAGES = [6, 8, 12]
# index_nested_loops is left out: it needs an index on the join column and refuses (by design)
# the exchanges of a parallel join of three tables; the planner's hints still reach it
JOINS = ["block_nested_loops", "grace_hash", "hash_join", "hybrid_hash", "simple_hash",
         "sort_merge", "teradata_merge"]
SINGLE_DESIGNS = ["heap", "index", "clustered", "hash"]
PARTITIONERS = ["round_robin", "hash", "range", "range_uniform"]
KINDS = ("single", "parallel", "ray")


@dataclass
class TableDesign:
    """How one table is stored: organization / key, indexes, clustered index, partitioning."""

    organization: str = "heap"
    key: str | None = None
    indexes: list[str] = field(default_factory=list)
    clustered: str | None = None
    partition: str | None = None  # parallel engine only

    def describe(self) -> str:
        parts = [self.organization + (f"({self.key})" if self.key else "")]
        parts += [f"clustered({self.clustered})"] if self.clustered else []
        parts += [f"index({c})" for c in self.indexes]
        parts += [f"partition={self.partition}"] if self.partition else []
        return " ".join(parts)


@dataclass
class Config:
    kind: str  # "single", "parallel" or "ray"
    label: str  # design (single) or partitioner (parallel, ray): the per-configuration count
    page_size: int
    buffer_pages: int
    buffer_policy: str
    nodes: int = 1
    designs: dict[str, TableDesign] = field(default_factory=dict)
    join: str | None = None  # connect(join=...): the default join plug-in
    memory_pages: int | None = None  # connect(memory_pages=...): per sort / join / aggregate

    def connect_kwargs(self) -> dict:
        kw = dict(page_size=self.page_size, buffer_pages=self.buffer_pages,
                  buffer_policy=self.buffer_policy)
        if self.join is not None:
            kw.update(join=self.join, memory_pages=self.memory_pages)
        if self.kind != "single":
            kw.update(nodes=self.nodes, timeout=60, backend="ray" if self.kind == "ray" else "inline")
        return kw

    def describe(self) -> str:
        kw = ", ".join(f"{k}={v!r}" for k, v in self.connect_kwargs().items())
        tables = "; ".join(f"{t}: {d.describe()}" for t, d in self.designs.items())
        return f"{self.kind}/{self.label} connect({kw}) [{tables}]"

    def open(self):
        return minidb.connect(**self.connect_kwargs())

    def load(self, db, table: TableSpec) -> None:
        """Create ``table`` in ``db`` with its design (raises whatever minidb raises)."""
        d = self.designs[table.name]
        kw = dict(organization=d.organization, key=d.key)
        if self.kind != "single":
            kw["partition"] = d.partition
        db.create_table(table.name, table.arrow(), **kw)
        if d.clustered:
            db.create_index(table.name, d.clustered, clustered=True)
        for col in d.indexes:
            db.create_index(table.name, col)

    def load_script(self, tables: list[TableSpec]) -> str:
        """Python lines that build this configuration with ``tables`` (for a reproduction)."""
        kw = ", ".join(f"{k}={v!r}" for k, v in self.connect_kwargs().items())
        lines = ["import pyarrow as pa", "import minidb", "", f"db = minidb.connect({kw})"]
        for t in tables:
            d = self.designs[t.name]
            fields = ", ".join(_field_text(c) for c in t.columns)
            data = ", ".join(f"{c.name!r}: {[r[j] for r in t.rows]!r}" for j, c in enumerate(t.columns))
            args = f"organization={d.organization!r}, key={d.key!r}"
            if self.kind != "single":
                args += f", partition={d.partition!r}"
            lines.append(f"db.create_table({t.name!r}, pa.table({{{data}}}, "
                         f"schema=pa.schema([{fields}])), {args})")
            if d.clustered:
                lines.append(f"db.create_index({t.name!r}, {d.clustered!r}, clustered=True)")
            lines += [f"db.create_index({t.name!r}, {c!r})" for c in d.indexes]
        return "\n".join(lines)


def _field_text(c: ColumnSpec) -> str:
    types = {"int32": "pa.int32()", "int64": "pa.int64()", "float64": "pa.float64()",
             "char": "pa.string()"}
    meta = f", metadata={{'minidb.width': '{c.width}'}}" if c.kind == "char" else ""
    return f"pa.field({c.name!r}, {types[c.kind]}{meta})"


# -- sampling -------------------------------------------------------------------------------------
def sample_config(rng: random.Random, kind: str, tables: list[TableSpec]) -> Config:
    """A random configuration of ``kind`` for ``tables``."""
    policy = rng.choice(names("buffer_policy"))
    page_size, buffer_pages = rng.choice(PAGE_SIZES), rng.choice(BUFFER_PAGES)
    join, memory = (rng.choice(JOINS), rng.choice(MEMORY_PAGES)) if rng.random() < 0.5 \
        else (None, None)
    if kind == "single":
        label = rng.choice(SINGLE_DESIGNS)
        designs = {t.name: _single_design(rng, label, t) for t in tables}
        return Config(kind, label, page_size, buffer_pages, policy, 1, designs, join, memory)
    nodes = rng.randint(1, 8) if kind == "parallel" else rng.randint(1, 3)
    label = rng.choice(PARTITIONERS)
    designs = {t.name: _parallel_design(rng, label, t, nodes) for t in tables}
    # at least 64 pages per node: the small pools are exercised on the single node, where a
    # hash join that does not fit is reported (MemoryBudgetError) rather than spread over nodes
    return Config(kind, label, page_size, max(buffer_pages, 64), policy, nodes, designs, join,
                  memory)


def _key(rng: random.Random, table: TableSpec) -> str:
    """A key column: the join key ``k`` half the time, else any column."""
    return "k" if rng.random() < 0.5 else rng.choice(table.columns).name


def _some_indexes(rng: random.Random, table: TableSpec, avoid: str | None = None) -> list[str]:
    cols = [c.name for c in table.columns if c.name != avoid]
    return rng.sample(cols, min(len(cols), rng.randint(1, 3)))


def _single_design(rng: random.Random, label: str, table: TableSpec) -> TableDesign:
    if label == "heap":
        return TableDesign()
    if label == "index":
        return TableDesign(indexes=_some_indexes(rng, table))
    key = _key(rng, table)
    if label == "clustered":
        return TableDesign(clustered=key, indexes=_some_indexes(rng, table, key)[:1])
    return TableDesign("hash", key, indexes=_some_indexes(rng, table, key)[:1]
                       if rng.random() < 0.5 else [])


def _parallel_design(rng: random.Random, label: str, table: TableSpec, nodes: int) -> TableDesign:
    col = table.column(_key(rng, table))
    if label == "round_robin":
        spec = "round_robin"
    elif label == "hash":
        spec = f"hash({col.name})"
    elif label == "range_uniform":
        spec = f"range_uniform({col.name})"
    else:
        spec = f"range({col.name}: {', '.join(sql_literal(b) for b in _bounds(rng, table, col, nodes))})" \
            if nodes > 1 else "round_robin"
    design = TableDesign(partition=spec)
    r = rng.random()
    if r < 0.25:
        design.indexes = _some_indexes(rng, table)[:2]
    elif r < 0.4:
        design.clustered = _key(rng, table)
    return design


def _bounds(rng: random.Random, table: TableSpec, col: ColumnSpec, nodes: int) -> list:
    """``nodes - 1`` strictly increasing range boundaries for ``col``: values from the data when
    there are enough distinct ones, else made up (non-integral for a float column)."""
    j = table.columns.index(col)
    seen = sorted({r[j] for r in table.rows if r[j] is not None})
    if len(seen) >= nodes - 1 and rng.random() < 0.6:
        return sorted(rng.sample(seen, nodes - 1))
    if col.kind == "char":
        return sorted(rng.sample("abcdefghijklmnopqrstuvwxyz", nodes - 1))
    cut = sorted(rng.sample(range(-20, 20), nodes - 1))
    return [c + 0.5 for c in cut] if col.kind == "float64" and rng.random() < 0.6 else cut
